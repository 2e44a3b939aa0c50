#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into OUTDIR/<target>/, from the generated
library in MEDIA (media/out): small cuts of its files (libFuzzer mutates small inputs much
faster than whole tracks), ffmpeg remuxes of them (short M4A, fragmented MP4, MPEG-TS, HLS
playlists), and a few inputs built here for what the library lacks (APE and Lyrics3 tags,
HTTP requests, Range headers). Same media, same seeds.

usage: Fuzz/make-seeds.py MEDIA OUTDIR
"""
import hashlib
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

FF = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
BITEXACT = ["-fflags", "+bitexact", "-flags:a", "+bitexact", "-map_metadata", "-1"]


def write(out, target, data, name=None):
    """One seed file, named by its content hash unless a name is given."""
    folder = os.path.join(out, target)
    os.makedirs(folder, exist_ok=True)
    name = name or hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def media_files(media, *exts):
    found = []
    for root, dirs, files in os.walk(media):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [os.path.join(root, f) for f in sorted(files) if f.endswith(exts) and not f.startswith(".")]
    return found


def read(path):
    with open(path, "rb") as f:
        return f.read()


def id3v2_size(data):
    """Bytes of the ID3v2 tag at the start (0 when there is none)."""
    if data[:3] != b"ID3" or len(data) < 10:
        return 0
    size = (data[6] << 21) | (data[7] << 14) | (data[8] << 7) | data[9]
    return 10 + size + (10 if data[5] & 0x10 else 0)


def ffmpeg(args, suffix):
    """Runs ffmpeg writing one file; returns its bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "out" + suffix)
        subprocess.run(FF + args + [path], check=True)
        return read(path)


def hls(source, extra):
    """The playlist ffmpeg's HLS muxer writes for 6 s of `source`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "index.m3u8")
        subprocess.run(FF + ["-i", source, "-t", "6", "-c", "copy"] + BITEXACT
                       + ["-f", "hls", "-hls_time", "2", "-hls_list_size", "0"] + extra + [path], check=True)
        return read(path)


def ape_tag(items):
    """An APEv2 tag with header and footer."""
    body = b"".join(struct.pack("<II", len(v), 0) + k + b"\0" + v for k, v in items)
    size = len(body) + 32
    def block(flags):
        return b"APETAGEX" + struct.pack("<IIII", 2000, size, len(items), flags) + b"\0" * 8
    return block(0xA0000000) + body + block(0x80000000)


def lyrics3v2(text):
    body = b"LYRICSBEGIN" + b"IND00002" + b"10" + b"LYR" + b"%05d" % len(text) + text
    return body + b"%06d" % len(body) + b"LYRICS200"


def id3v1(title):
    return b"TAG" + title.ljust(30, b"\0") + b"Artist".ljust(30, b"\0") + b"Album".ljust(30, b"\0") \
        + b"2026" + b"Comment".ljust(28, b"\0") + b"\0\x07" + b"\x0c"


def main():
    media, out = sys.argv[1], sys.argv[2]
    mp3s, aacs = media_files(media, ".mp3"), media_files(media, ".aac")
    m4as, wavs = media_files(media, ".m4a"), media_files(media, ".wav")
    if not (mp3s and aacs and m4as and wavs):
        sys.exit(f"make-seeds: no media in {media} (run make media)")

    for path in mp3s:
        data = read(path)
        tag = id3v2_size(data)
        audio = data[tag:]
        # Whole-file analysis: the head (ID3v2, Xing/LAME, first frames) and the tail (ID3v1).
        write(out, "analyze", data[:min(len(data), max(tag, 0) + 6000)] + data[-512:])
        write(out, "mpeg", audio[:6000])
        write(out, "tags", data[:min(tag, 8192)] if tag else data[:128])
        write(out, "tags", data[-600:])
        write(out, "tags", audio[:1000] + ape_tag([(b"Title", b"APE title"), (b"Artist", b"Someone")])
              + lyrics3v2(b"[00:01]la la") + id3v1(b"Title"))
        write(out, "analyze", audio[:4000] + ape_tag([(b"Album", b"APE")]) + id3v1(b"T"))
        # The same audio in MPEG-TS, as HLS carries it.
        write(out, "ts", ffmpeg(["-i", path, "-t", "0.5", "-c", "copy"] + BITEXACT + ["-f", "mpegts"], ".ts"))

    for path in aacs:
        data = read(path)
        write(out, "analyze", data[:6000])
        write(out, "adts", data[:3000])
        write(out, "ts", ffmpeg(["-i", path, "-t", "0.5", "-c", "copy"] + BITEXACT + ["-f", "mpegts"], ".ts"))
    # AudioSpecificConfigs: AAC-LC 44.1 kHz stereo, HE-AAC (explicit SBR), HE-AACv2 (PS), 8 kHz mono.
    for asc in [b"\x12\x10", b"\x2b\x92\x08\x00", b"\xeb\x09\x88\x00", b"\x15\x88", b"\x13\x90\x56\xe5\x00"]:
        write(out, "adts", asc)

    for path in wavs:
        data = read(path)
        write(out, "wav", data[:2048])
        write(out, "analyze", data[:3000])
    # The WAV variants the parser reads: RF64 (ds64), G.711 mu-law and A-law, big-endian RIFX.
    for args in [["-rf64", "always"], ["-c:a", "pcm_mulaw"], ["-c:a", "pcm_alaw"], ["-c:a", "pcm_s24le"]]:
        cut = ffmpeg(["-i", wavs[0], "-t", "0.02"] + BITEXACT + args, ".wav")
        write(out, "wav", cut)
        write(out, "analyze", cut)
    with tempfile.TemporaryDirectory() as tmp:
        rifx = os.path.join(tmp, "rifx.wav")
        subprocess.run(["sox", "-q", "-R", wavs[0], "-B", rifx, "trim", "0", "0.02"], check=True)
        write(out, "wav", read(rifx))
        write(out, "analyze", read(rifx))

    for path in m4as:
        # A short remux keeps every box kind with small sample tables; the fragmented cut keeps
        # mvex, moof/traf/trun/tfdt and the mfra table ffmpeg writes at the end.
        short = ffmpeg(["-i", path, "-t", "0.5", "-c", "copy"] + BITEXACT + ["-movflags", "+faststart"], ".m4a")
        write(out, "mp4", short)
        write(out, "analyze", short)
        frag = ffmpeg(["-i", path, "-t", "1", "-c", "copy"] + BITEXACT
                      + ["-movflags", "+frag_keyframe+empty_moov+default_base_moof", "-frag_duration", "300000"], ".m4a")
        write(out, "mp4", frag)
        write(out, "analyze", frag)
        edit = ffmpeg(["-i", path, "-t", "0.5", "-c", "copy", "-fflags", "+bitexact", "-use_editlist", "1"], ".m4a")
        write(out, "mp4", edit)
        break   # the other M4As are remuxes of the same track

    write(out, "m3u8", hls(mp3s[0], []))
    write(out, "m3u8", hls(aacs[0], ["-hls_flags", "single_file"]))
    write(out, "m3u8", hls(m4as[0], ["-hls_segment_type", "fmp4"]))
    write(out, "m3u8", b"#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-INDEPENDENT-SEGMENTS\n"
          b'#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="en",DEFAULT=YES,LANGUAGE="en",URI="a/index.m3u8"\n'
          b'#EXT-X-STREAM-INF:BANDWIDTH=140000,AVERAGE-BANDWIDTH=128000,CODECS="mp4a.40.2",AUDIO="aud"\n'
          b"v1/index.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=70000,CODECS=\"mp4a.40.34\"\nv2/index.m3u8\n")
    write(out, "m3u8", b"#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:120\n"
          b"#EXT-X-DISCONTINUITY-SEQUENCE:3\n#EXTINF:6.0,\nseg-120.aac\n#EXT-X-DISCONTINUITY\n"
          b"#EXTINF:5.5,\nseg-121.aac\n#EXT-X-BYTERANGE:1000@0\n#EXTINF:6,\nall.aac\n")

    # Subsonic: .lrc lyrics (synced, repeated times, header tags, plain) and form bodies.
    write(out, "subsonic", b"[ar:Someone]\n[ti:Song]\n[offset:+250]\n[00:01.50][00:10.00]Chorus\n[00:05.1]Verse\r\n[00:07:250]x\n")
    write(out, "subsonic", "\ufeffJust words\nCaf\u00e9 \u2013 No\u00ebl\n\n".encode())
    write(out, "subsonic", b"u=ann&t=26719a1196d2a940705a59634eb18eab&s=c19b2d&v=1.16.1&c=x&f=json&id=tr-1&id=tr-2&query=two+words%21")
    write(out, "subsonic", b'{"name":"Play:1","platform":"Sonos","maxAudioBitrate":512000,"maxTranscodingAudioBitrate":256000,'
          b'"directPlayProfiles":[{"containers":["mp3"],"audioCodecs":["mp3"],"protocols":["http"],"maxAudioChannels":2},'
          b'{"container":"mp4","audioCodec":"flac,aac,alac","protocol":"*"}],'
          b'"transcodingProfiles":[{"container":"ogg","audioCodec":"opus","protocol":"http","maxAudioChannels":2}],'
          b'"codecProfiles":[{"type":"AudioCodec","name":"mp3","limitations":[{"name":"audioBitrate","comparison":"LessThanEqual",'
          b'"values":["320000"],"required":true}]}]}')
    # credentials: the first byte picks the cookie name (0: streamd_session), then a netrc or Cookie text.
    write(out, "credentials", b"\x00machine music.example.org\n  login alice\n  password s3cret\nmacdef init\nmachine x login y password z\n\n"
                              b"machine 127.0.0.1 login bob password \"pw\"\ndefault login anyone password everywhere\n")
    write(out, "credentials", b"\x00theme=dark; streamd_session=\"0123456789abcdef\" ;a=b\nstreamd_session=second")
    # Track playlists: extended M3U with relative, absolute and URL entries, Windows line ends,
    # a UTF-8 BOM, Windows-1252 text, UTF-16 with a BOM, IPTV attributes, PLS; and an HLS one.
    tracks = [os.path.relpath(p, media) for p in mp3s[:2] + m4as[:1] + wavs[:1]]
    ext = "#EXTM3U\n#PLAYLIST:Seeds\n" + "".join(f"#EXTINF:{30 + i},Artist {i} - Title {i}\n{t}\n" for i, t in enumerate(tracks))
    write(out, "playlist", ext.encode())
    write(out, "playlist", b"\xef\xbb\xbf" + ext.replace("\n", "\r\n").encode())
    write(out, "playlist", "\n".join(["/music/" + t for t in tracks] + ["http://radio.example/live", "file:///m/A%20B.mp3",
                                      "..\\Other\\x.mp3", "C:\\Music\\y.mp3", "# comment", ""]).encode())
    write(out, "playlist", "#EXTINF:-1,Caf\u00e9 \u2013 No\u00ebl\nCaf\u00e9.mp3\n".encode("cp1252"))
    write(out, "playlist", "\ufeff#EXTM3U\r\n#EXTINF:5,\u00dcn\u00efc\u00f6d\u00e9 \U0001f3b5\r\n\u00fc.mp3\r\n".encode("utf-16-le"))
    write(out, "playlist", b'#EXTM3U\n#EXTINF:-1 tvg-id="r.1" group-title="News, Talk",Radio One\nhttp://r.example/1\n'
          b"#EXTINF:abc,Bad\nb\n#EXTINF:1e999,\nc\n")
    write(out, "playlist", ("[playlist]\r\n" + "".join(f"File{i + 1}={t}\r\nTitle{i + 1}=T{i}\r\nLength{i + 1}={i * 10 - 1}\r\n"
                                                       for i, t in enumerate(tracks))
                            + f"NumberOfEntries={len(tracks)}\r\nVersion=2\r\n").encode())
    write(out, "playlist", b"#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\nseg0.mp3\n#EXT-X-ENDLIST\n")

    names = [os.path.relpath(p, media).replace(" ", "%20") for p in mp3s[:3] + m4as[:1]]
    for name in names:
        write(out, "http", f"GET /media/{name} HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nRange: bytes=0-99,200-\r\n"
              f"If-None-Match: \"abc\"\r\nConnection: keep-alive\r\n\r\n".encode())
    write(out, "http", b"GET /api/tracks HTTP/1.1\r\nHost: h\r\n\r\nHEAD /media/a.mp3?kbps=128 HTTP/1.1\r\n"
          b"Host: h\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n"
          b"GET /hls/a.mp3/index.m3u8 HTTP/1.0\r\nContent-Length: 0\r\n\r\n")
    write(out, "http", b"\r\nGET http://h/api/index/a.mp3?t=10 HTTP/1.1\nHost: h\nRange: bytes=-500\n\n")
    size = struct.pack(">Q", 1000 << 16)
    for header in [b"bytes=0-99", b"bytes=-500", b"bytes=100-", b"bytes=0-0, 5-9 ,-1", b"bytes=999-2000",
                   b"BYTES=1-2,3-4,5-6,7-8,9-10,11-12,13-14,15-16,17-18"]:
        write(out, "range", size + header)

    # icy: metaint byte, then a listener stream; and frames as the splitter sees them.
    block = b"StreamTitle='Artist - Title';"
    block += b"\0" * (-len(block) % 16)
    write(out, "icy", bytes([15]) + bytes(range(16)) + bytes([len(block) // 16]) + block + bytes(range(16)) + b"\0" + b"x" * 20)
    write(out, "icy", b"\x00StreamTitle='a';StreamUrl='http://h/';")
    for path in mp3s[:2] + aacs[:1]:
        write(out, "icy", b"\x7f" + read(path)[:6000])
    write(out, "icy", b"\x02c291cmNlOmhhY2ttZQ==")
    write(out, "icy", b"\x03" + b"5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n")

    # icystream: metaint - 1, cut point / 8, then a listener stream (titles, empty blocks, Latin-1, audio).
    latin = b"StreamTitle='Caf\xe9';StreamUrl='';"
    latin += b"\0" * (-len(latin) % 16)
    write(out, "icystream", bytes([15, 3]) + bytes(range(16)) + bytes([len(block) // 16]) + block + bytes(range(16)) + b"\0"
          + bytes(range(16)) + bytes([len(latin) // 16]) + latin + b"y" * 20)
    for path in mp3s[:1]:
        audio = read(path)[:4000]
        stream = b"".join(audio[i:i + 256] + (bytes([len(block) // 16]) + block if i % 512 == 0 else b"\0")
                          for i in range(0, len(audio), 256))
        write(out, "icystream", bytes([255, 40]) + stream)
    # response: what streamplay's HTTP client reads (heads one after another, each with its body).
    write(out, "response", b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-4/100\r\nContent-Length: 5\r\n"
          b"ETag: \"e1\"\r\nConnection: keep-alive\r\n\r\nhello"
          b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext=1\r\nA\r\n0\r\nT: x\r\n\r\n"
          b"HTTP/1.0 302 Found\nLocation: /next\nContent-Length: 0\n\n")
    write(out, "response", b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */42\r\n"
          b"Content-Length: 0\r\n\r\n")
    write(out, "response", b"ICY 200 OK\r\nicy-name: Test\r\nicy-metaint: 16000\r\nicy-br: 128\r\n"
          b"Content-Type: audio/mpeg\r\n\r\n" + (read(mp3s[0])[:2000] if mp3s else b""))

    # response, field lines alone: obs-fold, bare LF, OWS around values.
    write(out, "response", b"X-A:  one \r\n\tfolded\r\nX-B:two\nX-C:\r\n\r\n")
    # url: a URL, then optionally a newline and a Location to resolve against it.
    for url in [b"http://[::1]:8000/radio/main", b"http://127.0.0.1:8080/a%20b?q=1#f\n../c?d",
                b"http://[::ffff:192.0.2.1]/x\n//other:81/y", b"http://Example.org:/p\nhttps://h/",
                b"http://[fe80::1%25eth0]/", b"http://[v1.x]/", b"[::1]:80", b"example.org:8080", b"h%41st"]:
        write(out, "url", url)

    # aiff: AIFF and every AIFF-C compression type ffmpeg writes (sowt is pcm_s16le), cut short.
    for codec in ["pcm_s16be", "pcm_s8", "pcm_s24be", "pcm_s32be", "pcm_f32be", "pcm_f64be", "pcm_alaw", "pcm_mulaw",
                  "pcm_s16le"]:
        write(out, "aiff", ffmpeg(["-i", wavs[0], "-t", "0.01", "-c:a", codec] + BITEXACT + ["-write_id3v2", "1", "-f", "aiff"],
                                  ".aiff"))

    # alac: the cookie ffmpeg's ALAC encoder writes (stereo 16-bit and mono 24-bit), bare, as its
    # 'alac' atom, and behind a 'frma' atom as QuickTime's 'wave' holds it.
    alac_files = []
    for args in [["-ac", "2", "-sample_fmt", "s16p"], ["-ac", "1", "-sample_fmt", "s32p"]]:
        m4a = ffmpeg(["-i", wavs[0], "-t", "0.1", "-c:a", "alac"] + args + BITEXACT, ".m4a")
        alac_files.append(m4a)
        at = m4a.find(b"alac\0\0\0\0", m4a.find(b"stsd"))
        at = m4a.find(b"alac", at + 4) - 4
        size = struct.unpack(">I", m4a[at:at + 4])[0]
        atom = m4a[at:at + size]
        write(out, "alac", atom[12:])
        write(out, "alac", atom)
        write(out, "alac", struct.pack(">I", 12) + b"frmaalac" + atom)
        # The decoder's input: the bare cookie, then the first packet (stco's first chunk offset,
        # stsz's first size).
        stsz, stco = m4a.find(b"stsz"), m4a.find(b"stco")
        size = struct.unpack(">I", m4a[stsz + 8:stsz + 12])[0] or struct.unpack(">I", m4a[stsz + 16:stsz + 20])[0]
        offset = struct.unpack(">I", m4a[stco + 12:stco + 16])[0]
        write(out, "alac", atom[12:] + m4a[offset:offset + size])

    # api: streamd's API documents as streamplay reads them (a seek index, a track list, a status).
    write(out, "api", b'{"path":"a/b \\"c\\".mp3","duration_s":184.033,"first_frame_offset":4096,"audio_end_offset":2950000,'
          b'"encoder_delay":576,"encoder_padding":1152,"sample_rate":44100,"etag":"\\"1a-2d-17\\"",'
          b'"points":[{"t":0,"byte":4096},{"t":0.522449,"byte":12456},{"t":1e-05,"byte":21000}]}\n')
    track = (b'{"path":"Q/01 \\u00e9.mp3","url":"/media/Q/01%20%C3%A9.mp3","title":"T\\n","artist":null,"album":"A",'
             b'"duration_s":1234.56789,"codec":"mp3","container":"mp3","sample_rate":44100,"channels":2,"bitrate":320000,'
             b'"size":4242424,"etag":"\\"ff-40-0\\"","id":17,"album_id":3,"artist_id":null,"album_artist":null,'
             b'"track":1,"disc":null,"year":1999,"genre":"Rock","derived":["title","album","track"]}')
    write(out, "api", track)
    write(out, "api", b"[" + track + b",\n" + track.replace(b'"id":17', b'"id":18') + b"]\n")
    # A lossless track (bit depth, ReplayGain) and an Ogg index (points with sample and link).
    write(out, "api", track.replace(b'"bitrate":320000,', b'"bitrate":320000,"bits_per_sample":24,')
          .replace(b'"genre":"Rock",', b'"genre":"Rock","rg_track_gain":3,"rg_track_peak":0.98,"rg_album_gain":-1.25,"rg_album_peak":null,'))
    write(out, "api", b'{"path":"o.opus","duration_s":2.5,"first_frame_offset":0,"audio_end_offset":34913,"encoder_delay":312,'
          b'"encoder_padding":0,"sample_rate":48000,"etag":"\\"1-2-3\\"","points":[{"t":0,"byte":0,"sample":0,"link":0},'
          b'{"t":1.02,"byte":17000,"sample":48960,"link":0},{"t":2.5,"byte":30000,"sample":0,"link":1}]}\n')
    write(out, "api", b'{"tracks":120,"skipped_count":3,"ignored_count":1,"quarantined_count":1,"scans":2,"last_scan_ms":850,'
          b'"scanning":false,"scan_found":124,"scan_to_read":0,"scan_read":124,"analyzer_workers":2,"analyze_timeout_s":10,'
          b'"db":"/tmp/catalog.db","seek_indexes_cached":40,"seek_indexes_built_ahead":38,"seek_indexes_built_on_play":2,'
          b'"index_ahead_s":600,"watch":"inotify","watched_folders":12,"rescan_interval_s":3600,"connections":3,'
          b'"connections_per_loop":[1,2],"skipped":[{"path":"cover.jpg","reason":"not audio","quarantined":false}]}\n')

    # flac, ogg: short encodes of the first WAV (FLAC with a seek table and a picture, the same
    # behind an ID3v2 tag and before APE + ID3v1 tags, FLAC without a sample count; Ogg Opus,
    # Vorbis and FLAC, and a chain of two Opus links with distinct serials).
    cover = b"\x89PNG\r\n\x1a\n" + b"\0" * 24
    flac = ffmpeg(["-i", wavs[0], "-t", "0.1", "-c:a", "flac", "-frame_size", "512"] + BITEXACT
                  + ["-metadata", "title=Seed", "-metadata", "REPLAYGAIN_TRACK_GAIN=-3.2 dB"], ".flac")
    write(out, "flac", flac)
    write(out, "flac", b"ID3\x04\0\0\0\0\0\x0a" + b"\0" * 10 + flac
          + ape_tag([(b"Title", b"APE")]) + id3v1(b"T"))
    if len(flac) > 26 and flac[:4] == b"fLaC":
        # total_samples 0: the low 36 bits of STREAMINFO's bytes 13..17 (after the 4-byte marker
        # and 4-byte block header: bytes 21..26 of the file, the count in the last 4.5 bytes).
        no_count = bytearray(flac)
        no_count[21] &= 0xF0
        no_count[22:26] = b"\0\0\0\0"
        write(out, "flac", bytes(no_count))
    # flacdecode: the first byte is where the bytes are cut in two; whole files otherwise. 16-bit
    # with small frames, 24-bit mono, 6 channels (each coding libFLAC handles differently).
    write(out, "flacdecode", b"\x80" + flac)
    write(out, "flacdecode", b"\x10" + ffmpeg(["-i", wavs[0], "-t", "0.05", "-ac", "1", "-c:a", "flac", "-sample_fmt", "s32",
                                                 "-frame_size", "256"] + BITEXACT, ".flac"))
    write(out, "flacdecode", b"\xf0" + ffmpeg(["-i", wavs[0], "-t", "0.03", "-af", "pan=5.1|c0=c0|c1=c1|c2=c0|c3=c1|c4=c0|c5=c1",
                                                 "-c:a", "flac"] + BITEXACT, ".flac"))
    # waveform: a disk file of 3 base pairs (rate 44100, 600 frames), the worker's messages,
    # and pairs for the pyramid driver (8 control bytes, then 2-byte values).
    pairs = struct.pack("<6h", -100, 200, -32768, 32767, 0, 0)
    write(out, "waveform", b"SDWF" + bytes([1, 0, 0, 0]) + struct.pack("<IQQI", 44100, 0x1234, 600, 3) + pairs)
    write(out, "waveform", b"\x03" + struct.pack("<I", 48000) + pairs)
    write(out, "waveform", b"\x04" + struct.pack("<IQ", 48000, 600) + struct.pack("<2h", -7, 9))
    write(out, "waveform", bytes([7, 3, 9, 10, 200, 250, 31, 255]) + bytes(range(256)) * 8)
    picture = struct.pack(">I", 3) + struct.pack(">I", 9) + b"image/png" + struct.pack(">I", 0) \
        + struct.pack(">IIIII", 1, 1, 24, 0, len(cover)) + cover
    write(out, "flac", picture)
    comment = struct.pack("<I", 6) + b"vendor" + struct.pack("<I", 3)
    for field in [b"TITLE=x", b"R128_TRACK_GAIN=-512", b"METADATA_BLOCK_PICTURE=" + __import__("base64").b64encode(picture)]:
        comment += struct.pack("<I", len(field)) + field
    write(out, "flac", comment)
    for codec, args in [("opus", ["-c:a", "libopus", "-b:a", "32k"]), ("vorbis", ["-c:a", "libvorbis", "-q:a", "0"]),
                        ("flac", ["-c:a", "flac"])]:
        encoded = ffmpeg(["-i", wavs[0], "-t", "0.3"] + args + BITEXACT + ["-f", "ogg"], ".ogg")
        write(out, "ogg", encoded)
        # oggdecode: piece-size and seek-target bytes, then the file.
        if codec != "flac":
            write(out, "oggdecode", bytes([3, 7]) + encoded)
        if codec == "opus":
            write(out, "rendition", encoded)
    # rendition: what an HLS ladder variant is cut from (MP3 at 48 kHz with an Info frame, Ogg Opus).
    write(out, "rendition", ffmpeg(["-i", wavs[0], "-t", "0.5", "-ar", "48000", "-c:a", "libmp3lame", "-b:a", "64k"] + BITEXACT
                                   + ["-f", "mp3"], ".mp3"))
    chain = b"".join(ffmpeg(["-i", wavs[0], "-t", "0.2", "-c:a", "libopus", "-b:a", "24k"] + BITEXACT
                            + ["-serial_offset", str(serial), "-f", "ogg"], ".opus") for serial in (1, 2))
    write(out, "ogg", chain)
    # icy: a live source's chained Ogg Opus, split into pages (header pages kept per link).
    write(out, "icy", b"\x7f" + chain[:6000])
    write(out, "oggdecode", bytes([0, 200]) + chain)
    surround = ffmpeg(["-i", wavs[0], "-t", "0.2", "-ac", "6", "-c:a", "libopus", "-b:a", "96k"] + BITEXACT + ["-f", "ogg"], ".opus")
    write(out, "oggdecode", bytes([1, 1]) + surround)
    write(out, "ogg", comment)
    # lyrics: an ID3v2.3 tag with USLT (UTF-16) and SYLT (milliseconds), a Vorbis comment with
    # LYRICS in LRC, and the tagged FLAC and Ogg files above.
    def frame(name, body):
        return name + struct.pack(">I", len(body)) + b"\0\0" + body
    uslt = frame(b"USLT", b"\x01eng\xff\xfe\0\0" + "Line one\nLine two".encode("utf-16-le"))
    sylt = frame(b"SYLT", b"\x00deu\x02\x01desc\0" + b"Synced one\0" + struct.pack(">I", 500) + b"\nSynced two\0" + struct.pack(">I", 1500))
    body = uslt + sylt
    tag = b"ID3\x03\0\0" + bytes([(len(body) >> 21) & 127, (len(body) >> 14) & 127, (len(body) >> 7) & 127, len(body) & 127]) + body
    write(out, "lyrics", tag)
    write(out, "lyrics", tag + flac)
    lyric_comment = struct.pack("<I", 6) + b"vendor" + struct.pack("<I", 2)
    for field in [b"LYRICS=[00:01.00]Flac one\n[00:02.50]Flac two", b"UNSYNCEDLYRICS=plain words"]:
        lyric_comment += struct.pack("<I", len(field)) + field
    write(out, "lyrics", lyric_comment)
    write(out, "lyrics", ffmpeg(["-i", wavs[0], "-t", "0.1", "-c:a", "aac", "-metadata", "lyrics=M4A line\nanother",
                                 "-fflags", "+bitexact", "-movflags", "+faststart"], ".m4a"))
    for name in sorted(os.listdir(os.path.join(out, "ogg")))[:2]:
        write(out, "lyrics", read(os.path.join(out, "ogg", name)))

    # decode: a transcoding channel reads the same whole files the analyzer does.
    shutil.copytree(os.path.join(out, "analyze"), os.path.join(out, "decode"))

    # analyze and decode: the whole FLAC, Ogg, AIFF and ALAC files above reach the analyzer's
    # paths for them (its frame and page indexes, covers, gains) and TrackDecoder's (a channel
    # transcodes them).
    for target in ["flac", "ogg", "aiff"]:
        folder = os.path.join(out, target)
        for name in sorted(os.listdir(folder)):
            data = read(os.path.join(folder, name))
            if data[:4] in (b"fLaC", b"OggS", b"FORM") or data[:3] == b"ID3":
                write(out, "analyze", data)
                write(out, "decode", data)
    for m4a in alac_files:
        write(out, "analyze", m4a)
        write(out, "decode", m4a)
    # encode: input rate, channels and format indexes, then float samples (a tone; a tone with
    # NaN, infinities and 1e30 among them, as a float WAV may hold).
    tone = [0.5 * math.sin(2 * math.pi * 440 * i / 48000) for i in range(2048)]
    wild = [v if i % 97 else [float("nan"), float("inf"), -float("inf"), 1e30][i // 97 % 4] for i, v in enumerate(tone)]
    for head, samples in [(bytes([5, 1, 0]), tone), (bytes([2, 0, 3]), tone[:512]), (bytes([7, 1, 1]), wild),
                          (bytes([0, 0, 2]), tone[:256])]:
        write(out, "encode", head + struct.pack(f"<{len(samples)}f", *samples))


if __name__ == "__main__":
    main()
