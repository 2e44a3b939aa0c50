#!/usr/bin/env python3
"""Subsonic getCoverArt?size= and embedded lyrics, checked with tools this project did not write.

  check_covers_lyrics.py make DIR
      Writes a small library into DIR: tracks made by ffmpeg, lyrics written by mutagen (ID3
      USLT and SYLT in an MP3, a FLAC LYRICS comment in LRC, an Ogg Opus UNSYNCEDLYRICS comment,
      an MP4 (c)lyr item), and album covers made by ffmpeg (640x480 PNG, 200x100 JPEG) plus a
      damaged JPEG.
  check_covers_lyrics.py check BASE_URL --digest-file F --library DIR
      getLyricsBySongId (validated against the OpenSubsonic schema, read back typed by
      py-opensonic) and getLyrics; getCoverArt sizes measured by ffprobe, the cache's second
      answer the same bytes, the damaged cover answered with the original while the server keeps
      serving. Writes the 300-pixel thumbnail's SHA-256 to F.
  check_covers_lyrics.py cached BASE_URL --digest-file F
      After a restart: the 300-pixel thumbnail comes from the disk cache, the same bytes.

Prints one line per check and "N passed, M failed"; exit 1 on any failure.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_subsonic as cs  # noqa: E402  (its packages, Spec, Raw and check)


def ensure_mutagen():
    try:
        import mutagen  # noqa: F401
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "mutagen"])


def ffmpeg(*args):
    subprocess.check_call(["ffmpeg", "-v", "error", "-y", *args])


def make(folder):
    ensure_mutagen()
    from mutagen.flac import FLAC
    from mutagen.id3 import ID3, SYLT, USLT
    from mutagen.mp4 import MP4
    from mutagen.oggopus import OggOpus

    def track(path, codec, title, artist, album):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=1", *codec,
               "-metadata", f"title={title}", "-metadata", f"artist={artist}", "-metadata", f"album={album}", path)

    big = os.path.join(folder, "Cover Artist", "Big Cover")
    mp3 = os.path.join(big, "01 Big.mp3")
    track(mp3, ["-c:a", "libmp3lame"], "Big", "Cover Artist", "Big Cover")
    tags = ID3(mp3)
    tags.add(USLT(encoding=1, lang="eng", desc="words", text="Plain one\nPlain two"))
    tags.add(SYLT(encoding=1, lang="deu", format=2, type=1, desc="timed", text=[("Synced one", 500), ("\nSynced two", 1500)]))
    tags.save(v2_version=3)
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=640x480", "-frames:v", "1", os.path.join(big, "cover.png"))

    small = os.path.join(folder, "Cover Artist", "Small Cover")
    track(os.path.join(small, "01 Small.mp3"), ["-c:a", "libmp3lame"], "Small", "Cover Artist", "Small Cover")
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=200x100", "-frames:v", "1", os.path.join(small, "cover.jpg"))

    broken = os.path.join(folder, "Cover Artist", "Broken Cover")
    track(os.path.join(broken, "01 Broken.mp3"), ["-c:a", "libmp3lame"], "Broken", "Cover Artist", "Broken Cover")
    with open(os.path.join(broken, "cover.jpg"), "wb") as f:
        f.write(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes((i * 37 + 11) % 256 for i in range(6000)))

    lyric = os.path.join(folder, "Lyric Artist", "Lyric Album")
    flac = os.path.join(lyric, "02 Flac.flac")
    track(flac, ["-c:a", "flac"], "Flac", "Lyric Artist", "Lyric Album")
    f = FLAC(flac)
    f["LYRICS"] = "[ar:Lyric Artist]\n[00:01.00]Flac one\n[00:02.50]Flac two\n"
    f.save()
    opus = os.path.join(lyric, "03 Opus.opus")
    track(opus, ["-c:a", "libopus"], "Opus", "Lyric Artist", "Lyric Album")
    o = OggOpus(opus)
    o["UNSYNCEDLYRICS"] = "Opus words\nsecond"
    o.save()
    m4a = os.path.join(lyric, "04 M4a.m4a")
    track(m4a, ["-c:a", "aac"], "M4a", "Lyric Artist", "Lyric Album")
    m = MP4(m4a)
    m["\xa9lyr"] = ["M4A line\r\nanother"]
    m.save()
    print("made", folder)
    return 0


def dimensions(data):
    with tempfile.NamedTemporaryFile(suffix=".jpg") as f:
        f.write(data)
        f.flush()
        out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height,codec_name",
                              "-of", "json", f.name], capture_output=True, text=True)
    streams = json.loads(out.stdout or "{}").get("streams", [])
    return (streams[0]["codec_name"], streams[0]["width"], streams[0]["height"]) if streams else None


def songs_by_title(raw):
    status, answer, _ = raw.json("search3", [("query", '""'), ("songCount", "100"), ("albumCount", "0"), ("artistCount", "0")])
    return {s["title"]: s for s in answer["searchResult3"].get("song", [])}


def cover(raw, cover_id, size):
    params = [("id", cover_id)] + ([("size", str(size))] if size else [])
    status, headers, body = raw.call("getCoverArt", params, fmt=None)
    return headers, body


def check_lyrics(raw, spec, host, port, songs):
    expected = {
        "Big": [("deu", True, [(500, "Synced one"), (1500, "Synced two")]), ("eng", False, [(None, "Plain one"), (None, "Plain two")])],
        "Flac": [("xxx", True, [(1000, "Flac one"), (2500, "Flac two")])],
        "Opus": [("xxx", False, [(None, "Opus words"), (None, "second")])],
        "M4a": [("xxx", False, [(None, "M4A line"), (None, "another")])],
        "Small": [],
    }
    connection = cs.libopensonic.Connection(host, port=port, app_name="check_covers_lyrics", username="anyone", password="anything")
    try:
        for title, wanted in expected.items():
            song = songs.get(title)
            cs.check(f"song {title} is listed", song is not None, list(songs))
            if song is None:
                continue
            status, answer, body = raw.json("getLyricsBySongId", [("id", song["id"])])
            errors = list(spec.validator("getLyricsBySongId").iter_errors(json.loads(body)))
            cs.check(f"schema: getLyricsBySongId {title}", status == 200 and answer["status"] == "ok" and not errors,
                     "; ".join(e.message[:200] for e in errors[:3]))
            got = [(s["lang"], s["synced"], [(line.get("start"), line.get("value", "")) for line in s.get("line", [])])
                   for s in answer["lyricsList"].get("structuredLyrics", [])]
            cs.check(f"getLyricsBySongId {title}: the tags' lyrics", got == wanted, got)
            typed = cs.attempt(f"py-opensonic get_lyrics_by_song_id {title} (typed)", lambda: connection.get_lyrics_by_song_id(song["id"]))
            if typed is not None and wanted:
                first = typed[0] if isinstance(typed, list) else typed
                lines = getattr(first, "line", None) or []
                cs.check(f"py-opensonic {title}: first set's lines", [getattr(l, "value", None) for l in lines] == [t for _, t in wanted[0][2]],
                         repr(first)[:300])
    finally:
        connection.cleanup()
    status, answer, body = raw.json("getLyrics", [("artist", "Lyric Artist"), ("title", "Flac")])
    errors = list(spec.validator("getLyrics").iter_errors(json.loads(body)))
    cs.check("schema: getLyrics", not errors, "; ".join(e.message[:200] for e in errors[:3]))
    cs.check("getLyrics: the FLAC comment's lines as text", answer.get("lyrics", {}).get("value") == "Flac one\nFlac two", answer)


def check_covers(raw, songs, digest_file, library):
    big, small, broken = songs.get("Big"), songs.get("Small"), songs.get("Broken")
    if not (big and small and broken):
        cs.check("covers: the songs are listed", False, list(songs))
        return
    headers, first = cover(raw, big["coverArt"], 300)
    cs.check("getCoverArt size=300: a JPEG of 300x225 (640x480 PNG, aspect kept)", dimensions(first) == ("mjpeg", 300, 225),
             (headers.get("Content-Type"), dimensions(first)))
    cs.check("getCoverArt size=300: resized now", headers.get("X-Cache") == "MISS", dict(headers))
    headers, again = cover(raw, big["coverArt"], 300)
    cs.check("getCoverArt size=300 again: from the cache, the same bytes", headers.get("X-Cache") == "HIT" and again == first,
             (headers.get("X-Cache"), len(again), len(first)))
    with open(digest_file, "w") as f:
        f.write(hashlib.sha256(first).hexdigest())
    headers, by_song = cover(raw, big["id"], 64)
    cs.check("getCoverArt of a song id, size=64: 64x48", dimensions(by_song) == ("mjpeg", 64, 48), dimensions(by_song))
    headers, original = cover(raw, big["coverArt"], None)
    cs.check("getCoverArt without size: the original PNG", original[:4] == b"\x89PNG" and dimensions(original)[1:] == (640, 480),
             dimensions(original))
    headers, kept = cover(raw, small["coverArt"], 300)
    cs.check("getCoverArt size=300 of a 200x100 cover: not enlarged", dimensions(kept) == ("mjpeg", 200, 100), dimensions(kept))
    headers, damaged = cover(raw, broken["coverArt"], 300)
    source = open(os.path.join(library, "Cover Artist", "Broken Cover", "cover.jpg"), "rb").read()
    cs.check("getCoverArt of a damaged JPEG: the original, marked", damaged == source and headers.get("X-Resize-Failed") == "1",
             (len(damaged), dict(headers)))
    status, answer, _ = raw.json("ping")
    cs.check("the server still answers after the damaged cover", answer["status"] == "ok", answer)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["make", "check", "cached"])
    parser.add_argument("target")
    parser.add_argument("--digest-file")
    parser.add_argument("--library", help="the folder made by `make` (check: the damaged cover's bytes)")
    options = parser.parse_args()
    if options.mode == "make":
        return make(options.target)
    import urllib.parse
    parsed = urllib.parse.urlparse(options.target)
    raw = cs.Raw(options.target, "anyone", "anything")
    cs.wait_for_library(raw)
    songs = songs_by_title(raw)
    if options.mode == "check":
        check_lyrics(raw, cs.Spec(cs.SPEC), f"{parsed.scheme}://{parsed.hostname}", parsed.port, songs)
        check_covers(raw, songs, options.digest_file, options.library)
    else:
        headers, body = cover(raw, songs["Big"]["coverArt"], 300)
        wanted = open(options.digest_file).read().strip()
        cs.check("after a restart: size=300 from the disk cache, the same bytes",
                 headers.get("X-Cache") == "HIT" and hashlib.sha256(body).hexdigest() == wanted, dict(headers))
    print(f"{cs.passed} passed, {cs.failed} failed")
    return 1 if cs.failed else 0


if __name__ == "__main__":
    sys.exit(main())
