#!/usr/bin/env python3
"""OpenSubsonic's transcoding extension (getTranscodeDecision, getTranscodeStream) against a
running streamd (run by SubsonicTranscodingTests on an open server whose library holds
tone.flac, 3 s stereo 44.1 kHz, and marker.flac, 48 kHz mono: silence to 2.5 s, then 1 kHz):

- each decision validated with jsonschema against the OpenAPI description's TranscodeDecision
  (../shared/specs), and read typed by py-opensonic;
- direct play of FLAC to a FLAC client (the stream is the original's bytes); FLAC to an
  MP3-only client capped at 128 kbit/s (mpg123 and ffprobe measure the stream); Opus when the
  client lists it first (opusdec: 48 kHz, the whole length); an offset (exact: opusdec's length
  and the marker's onset); a malformed body is the error envelope;
- a forged, altered, other-user or other-song transcodeParams is refused (HTTP 400).
Prints one line per check and "N passed, M failed"; exits 1 on any failure.
"""

import argparse
import asyncio
import json
import os
import struct
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

# The tally (`check`), the packages it installs and the OpenAPI schemas are check_subsonic's.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_subsonic as tally  # noqa: E402
from check_subsonic import SPEC, Spec, check  # noqa: E402
import libopensonic  # noqa: E402


def http(url, data=None, content_type=None):
    request = urllib.request.Request(url, data=data)
    if content_type:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


class Client:
    def __init__(self, base, user, password="x"):
        self.base = base.rstrip("/")
        self.user, self.password = user, password

    def url(self, endpoint, params):
        pairs = [("u", self.user), ("p", self.password), ("v", "1.16.1"), ("c", "check_transcoding")] + list(params)
        return f"{self.base}/rest/{endpoint}?" + urllib.parse.urlencode(pairs)

    def decide(self, media_id, client_info, fmt="json", raw_body=None):
        body = raw_body if raw_body is not None else json.dumps(client_info).encode()
        status, _, answer = http(self.url("getTranscodeDecision", [("mediaId", media_id), ("mediaType", "song"), ("f", fmt)]),
                                 data=body, content_type="application/json")
        if fmt != "json":
            return status, answer
        return status, json.loads(answer)["subsonic-response"]

    def stream(self, media_id, params, offset=None):
        query = [("mediaId", media_id), ("mediaType", "song"), ("transcodeParams", params)]
        if offset is not None:
            query.append(("offset", str(offset)))
        return http(self.url("getTranscodeStream", query))


def wav_frames(path):
    """(rate, channels, frames, samples of channel 0 as floats or ints) of a PCM or float WAV."""
    with open(path, "rb") as f:
        data = f.read()
    pos, fmt, samples = 12, None, None
    while pos + 8 <= len(data):
        kind, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = data[pos + 8:pos + 8 + size]
        if kind == b"fmt ":
            tag, channels, rate = struct.unpack("<HHI", body[:8])
            bits = struct.unpack("<H", body[14:16])[0]
            fmt = (tag, channels, rate, bits)
        elif kind == b"data":
            samples = body
            break
        pos += 8 + size + (size & 1)
    tag, channels, rate, bits = fmt
    width = bits // 8
    frames = len(samples) // (width * channels)
    code = {(3, 4): "f", (1, 2): "h", (0xFFFE, 4): "f", (0xFFFE, 2): "h"}[(tag, width)]
    values = struct.unpack("<" + code * (frames * channels), samples[:frames * channels * width])
    scale = 1.0 if code == "f" else 32768.0
    first = [v / scale for v in values[0::channels]]
    return rate, channels, frames, first


def decode(data, ext, tool):
    with tempfile.TemporaryDirectory() as scratch:
        source = os.path.join(scratch, "stream." + ext)
        wav = os.path.join(scratch, "decoded.wav")
        with open(source, "wb") as f:
            f.write(data)
        if tool == "opusdec":
            subprocess.run(["opusdec", "--quiet", "--float", source, wav], check=True)
        else:
            subprocess.run(["mpg123", "-q", "-w", wav, source], check=True)
        probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries", "stream=bit_rate,codec_name",
                                "-of", "json", source], check=True, capture_output=True).stdout
        stream = json.loads(probe)["streams"][0]
        return wav_frames(wav) + (stream.get("codec_name"), int(stream.get("bit_rate", 0) or 0))


FLAC_CLIENT = {"name": "flac-box", "platform": "test",
               "directPlayProfiles": [{"containers": ["flac"], "audioCodecs": ["flac"], "protocols": ["http"], "maxAudioChannels": 2}],
               "transcodingProfiles": [{"container": "mp3", "audioCodec": "mp3", "protocol": "http"}]}
MP3_CLIENT = {"name": "mp3-only", "platform": "test", "maxAudioBitrate": 128000,
              "directPlayProfiles": [{"containers": ["mp3"], "audioCodecs": ["mp3"], "protocols": []}],
              "transcodingProfiles": [{"container": "mp3", "audioCodec": "mp3", "protocol": "http", "maxAudioChannels": 2}],
              "codecProfiles": [{"type": "AudioCodec", "name": "mp3", "limitations": [
                  {"name": "audioBitrate", "comparison": "LessThanEqual", "values": ["320000"], "required": True}]}]}
OPUS_CLIENT = {"name": "opus-first", "platform": "test",
               "directPlayProfiles": [{"containers": ["mp3"], "audioCodecs": ["mp3"], "protocols": ["http"]}],
               "transcodingProfiles": [{"container": "aac", "audioCodec": "aac", "protocol": "http"},
                                       {"container": "ogg", "audioCodec": "opus", "protocol": "http"},
                                       {"container": "mp3", "audioCodec": "mp3", "protocol": "http"}]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("--tone", required=True, help="the id of tone.flac")
    parser.add_argument("--marker", required=True, help="the id of marker.flac")
    parser.add_argument("--tone-file", required=True, help="tone.flac's path, to compare direct play's bytes")
    parser.add_argument("--accounts", nargs=4, metavar=("USER", "PASSWORD", "OTHER", "OTHER_PASSWORD"),
                        help="a server with accounts: only the checks of who may use a token")
    options = parser.parse_args()
    if options.accounts:
        return accounts_checks(options)
    alice, bob = Client(options.base, "alice"), Client(options.base, "bob")
    decision_schema = Spec(SPEC).schema("TranscodeDecision")

    def decided(name, answer):
        ok = answer.get("status") == "ok" and "transcodeDecision" in answer
        errors = [] if not ok else [e.message for e in decision_schema.iter_errors(answer["transcodeDecision"])]
        check(f"{name}: ok and valid against TranscodeDecision", ok and not errors, json.dumps(answer)[:400] + " " + "; ".join(errors))
        return answer.get("transcodeDecision", {})

    # The extension is advertised with the spec's name and version.
    _, _, body = http(options.base.rstrip("/") + "/rest/getOpenSubsonicExtensions?f=json")
    extensions = {e["name"]: e["versions"] for e in json.loads(body)["subsonic-response"]["openSubsonicExtensions"]}
    check("extensions: transcoding version 1", extensions.get("transcoding") == [1], str(extensions))

    # 1. Direct play: FLAC to a FLAC client; the stream is the original file.
    status, answer = alice.decide(options.tone, FLAC_CLIENT)
    d = decided("flac client", answer)
    check("flac client: direct play", d.get("canDirectPlay") is True and d.get("canTranscode") is False and d.get("transcodeParams"), str(d))
    source = d.get("sourceStream", {})
    check("flac client: source details", (source.get("container"), source.get("codec"), source.get("audioChannels"),
                                          source.get("audioSamplerate"), source.get("audioBitdepth")) == ("flac", "flac", 2, 44100, 16), str(source))
    status, headers, data = alice.stream(options.tone, d.get("transcodeParams", ""))
    with open(options.tone_file, "rb") as f:
        original = f.read()
    check("flac client: stream is the original's bytes", status == 200 and data == original, f"{status} {len(data)} of {len(original)}")

    # 2. FLAC to an MP3-only client capped at 128 kbit/s: MP3 at 128 kbit/s.
    status, answer = alice.decide(options.tone, MP3_CLIENT)
    d = decided("mp3 client", answer)
    t = d.get("transcodeStream", {})
    check("mp3 client: transcode to mp3 at 128000", d.get("canDirectPlay") is False and d.get("canTranscode") is True
          and (t.get("container"), t.get("codec"), t.get("audioBitrate"), t.get("audioChannels"), t.get("audioSamplerate"))
          == ("mp3", "mp3", 128000, 2, 44100), str(d))
    check("mp3 client: reason per direct play profile", d.get("transcodeReason") == ["ContainerNotSupported"], str(d.get("transcodeReason")))
    mp3_params = d.get("transcodeParams", "")
    status, headers, data = alice.stream(options.tone, mp3_params)
    check("mp3 stream: 200 audio/mpeg", status == 200 and headers.get("Content-Type") == "audio/mpeg", f"{status} {headers}")
    if status == 200:
        rate, channels, frames, _, codec, bitrate = decode(data, "mp3", "mpg123")
        # A stream carries no LAME frame: mpg123 keeps the encoder's delay and the last frame's padding.
        check("mp3 stream: mpg123 44.1 kHz stereo, 3 s", rate == 44100 and channels == 2 and 132300 <= frames <= 132300 + 2304,
              f"{rate} Hz {channels} ch {frames} frames")
        check("mp3 stream: ffprobe mp3 at 128 kbit/s", codec == "mp3" and bitrate == 128000, f"{codec} {bitrate}")

    # 3. Opus when the client lists it before MP3 (AAC first: streamd does not make it).
    status, answer = alice.decide(options.tone, OPUS_CLIENT)
    d = decided("opus client", answer)
    t = d.get("transcodeStream", {})
    check("opus client: opus in ogg at the default 128 kbit/s, 48 kHz",
          (t.get("container"), t.get("codec"), t.get("audioBitrate"), t.get("audioSamplerate")) == ("ogg", "opus", 128000, 48000), str(d))
    opus_params = d.get("transcodeParams", "")
    status, headers, data = alice.stream(options.tone, opus_params)
    check("opus stream: 200 Ogg Opus", status == 200 and headers.get("Content-Type", "").startswith("audio/ogg"), f"{status} {headers}")
    if status == 200:
        rate, channels, frames, _, codec, _ = decode(data, "opus", "opusdec")
        check("opus stream: opusdec 48 kHz stereo, exactly 3 s", (rate, channels, frames, codec) == (48000, 2, 144000, "opus"),
              f"{rate} Hz {channels} ch {frames} frames {codec}")
    # 4. An offset: from 1 s, exactly 2 s left.
    status, headers, data = alice.stream(options.tone, opus_params, offset=1)
    if status == 200:
        rate, channels, frames, _, _, _ = decode(data, "opus", "opusdec")
        check("opus stream offset=1: exactly 2 s", frames == 96000, f"{frames} frames")
    else:
        check("opus stream offset=1: 200", False, str(status))
    # ...and where the sound is: the marker's 1 kHz starts at 2.5 s, so at 1.5 s from offset 1.
    status, answer = alice.decide(options.marker, OPUS_CLIENT)
    marker_params = decided("marker opus", answer).get("transcodeParams", "")
    status, headers, data = alice.stream(options.marker, marker_params, offset=1)
    if status == 200:
        _, _, frames, first, _, _ = decode(data, "opus", "opusdec")
        onset = next((i for i, v in enumerate(first) if abs(v) > 0.25), None)
        check("marker offset=1: 2.5 s long, the tone at 1.5 s", frames == 120000 and onset is not None and abs(onset - 72000) <= 48,
              f"{frames} frames, onset {onset}")
    else:
        check("marker offset=1: 200", False, str(status))
    # Direct play with an offset: the decision's transcode (MP3 here) from there.
    status, answer = alice.decide(options.tone, FLAC_CLIENT)
    direct = decided("flac client again", answer).get("transcodeParams", "")
    status, headers, data = alice.stream(options.tone, direct, offset=2)
    check("direct play offset=2: the listed transcode (mp3) from 2 s", status == 200 and headers.get("Content-Type") == "audio/mpeg"
          and headers.get("X-Content-Duration") == "1.000", f"{status} {headers}")

    # 5. Malformed bodies: the error envelope (code 10), in JSON and XML.
    for name, raw in [("not json", b"{name: 1"), ("not an object", b"[1,2]"), ("wrong types", b'{"name":"x","platform":"y","directPlayProfiles":{}}'),
                      ("too deep", b"[" * 200 + b"]" * 200), ("empty", b"")]:
        status, answer = alice.decide(options.tone, None, raw_body=raw)
        check(f"malformed body ({name}): error 10", status == 200 and answer.get("status") == "failed"
              and answer.get("error", {}).get("code") == 10, json.dumps(answer)[:300])
    status, xml = alice.decide(options.tone, None, fmt="xml", raw_body=b"nope")
    root = ET.fromstring(xml)
    error = root.find("{http://subsonic.org/restapi}error")
    check("malformed body (xml): failed, code 10", root.get("status") == "failed" and error is not None and error.get("code") == "10", xml[:300])
    status, xml = alice.decide(options.tone, MP3_CLIENT, fmt="xml")
    node = ET.fromstring(xml).find("{http://subsonic.org/restapi}transcodeDecision")
    check("xml decision: attributes and children", node is not None and node.get("canTranscode") == "true"
          and node.find("{http://subsonic.org/restapi}transcodeStream").get("codec") == "mp3", xml[:400])
    # A GET (no body) is refused the same way.
    status, _, body = http(alice.url("getTranscodeDecision", [("mediaId", options.tone), ("mediaType", "song"), ("f", "json")]))
    check("GET decision: error 10", json.loads(body)["subsonic-response"].get("error", {}).get("code") == 10, body[:200])

    # 6. Tokens that are not this user's and this song's: 400, never a stream.
    forged = "st1" + "0" * 32
    altered = mp3_params[:-1] + ("0" if mp3_params[-1] != "0" else "1")
    for name, client, media, params in [("forged", alice, options.tone, forged), ("altered", alice, options.tone, altered),
                                        ("another user's", bob, options.tone, mp3_params),
                                        ("another song", alice, options.marker, mp3_params), ("empty", alice, options.tone, "")]:
        status, headers, data = client.stream(media, params)
        check(f"{name} transcodeParams: 400", status == 400 and not headers.get("Content-Type", "").startswith("audio/"),
              f"{status} {headers.get('Content-Type')} {data[:200]}")
    status, _, _ = bob.stream(options.tone, mp3_params, offset=1)
    check("another user's transcodeParams with an offset: 400", status == 400, str(status))

    # 7. py-opensonic reads the decision typed and fetches the stream.
    parsed = urllib.parse.urlparse(options.base)
    connection = libopensonic.Connection(f"{parsed.scheme}://{parsed.hostname}", "alice", "x", port=parsed.port, app_name="check_transcoding")
    try:
        typed = connection.get_transcode_decision(options.tone, "song", MP3_CLIENT)
        check("py-opensonic: typed decision", typed.can_transcode and not typed.can_direct_play
              and typed.transcode_stream.codec == "mp3" and typed.transcode_stream.audio_bitrate == 128000, str(typed))
        response = connection.get_transcode_stream(options.tone, "song", typed.transcode_params)
        # The sync Connection hands back aiohttp's response: its body is read on the connection's loop.
        content = asyncio.run_coroutine_threadsafe(response.read(), connection._loop).result(timeout=60)
        check("py-opensonic: stream is the MP3", response.status == 200 and response.headers.get("Content-Type") == "audio/mpeg"
              and len(content) > 10000, f"{response.status} {len(content)}")
        connection.cleanup()
    except Exception as error:  # noqa: BLE001 - any client error is the finding
        check("py-opensonic", False, f"{type(error).__name__}: {error}")

    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed else 0


def accounts_checks(options):
    """With accounts: a token streams for the user it was given to, not for another account, nor
    without credentials or with a wrong password (401)."""
    user, password, other, other_password = options.accounts
    owner, stranger = Client(options.base, user, password), Client(options.base, other, other_password)
    status, answer = owner.decide(options.tone, MP3_CLIENT)
    params = answer.get("transcodeDecision", {}).get("transcodeParams", "")
    check("accounts: decision with a token", answer.get("status") == "ok" and params, json.dumps(answer)[:300])
    status, headers, data = owner.stream(options.tone, params)
    check("accounts: the owner streams it", status == 200 and headers.get("Content-Type") == "audio/mpeg", f"{status} {headers}")
    status, headers, data = stranger.stream(options.tone, params)
    check("accounts: another account's token: 400", status == 400 and not headers.get("Content-Type", "").startswith("audio/"), f"{status}")
    status, headers, _ = http(options.base.rstrip("/") + "/rest/getTranscodeStream?" + urllib.parse.urlencode(
        [("mediaId", options.tone), ("mediaType", "song"), ("transcodeParams", params)]))
    check("accounts: no credentials: 401 with a challenge", status == 401 and "WWW-Authenticate" in headers, f"{status} {headers}")
    status, _, _ = Client(options.base, user, password + "x").stream(options.tone, params)
    check("accounts: wrong password: 401", status == 401, str(status))
    status, answer = stranger.decide(options.tone, None, raw_body=json.dumps(MP3_CLIENT).encode())
    check("accounts: the other account gets its own decision", answer.get("status") == "ok", json.dumps(answer)[:200])
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
