#!/usr/bin/env python3
"""Generates a large music library of small, distinct, tagged tracks, fast.

    bench/make-library.py OUT --tracks 100000 [--seed 1] [--tracks-per-album 10] [--albums-per-artist 5]
    bench/make-library.py OUT --change 100        # rewrite 100 existing tracks with new tags (for rescans)

Layout: OUT/<artist>/<album>/<NN> <title>.<ext>, MP3 (ID3v2.4 + an MP3 with its Xing/LAME
frame), M4A (moov after mdat, an ilst written per file), ADTS (ID3v2.4 in front) and WAV
(RIFF LIST/INFO before the data), by album: 60 % MP3, 20 % M4A, 10 % ADTS, 10 % WAV. Every
track has distinct tags (title, artist, album, album artist, track/disc numbers, year, genre;
ReplayGain on the MP3s); one album in three embeds a cover (APIC / covr), one in three has a
cover.jpg beside its tracks instead, one in ten is a compilation ("Various Artists" album
artist, a different artist per track; a WAV compilation has no album-artist field, so it files
under each track's artist). The audio is a few pre-encoded payloads of about a
second (ffmpeg and lame make them once), so 100,000 tracks take well under a minute and
about 600 MB.
"""
import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

WORDS = ("amber blue cedar dawn echo falcon garden harbor island jasmine kestrel lantern meadow "
         "night orchid pepper quartz river silver thunder umber velvet willow xenon yellow zephyr "
         "anchor bridge canyon delta ember forest glacier horizon ivory juniper kindle lagoon "
         "marble nectar ocean prairie quiet raven summit tundra unity valley winter yonder zenith").split()
GENRES = ["Rock", "Jazz", "Pop", "Classical", "Electronic", "Folk", "Hip-Hop", "Blues", "Ambient", "Soul"]
FORMATS = ["mp3"] * 6 + ["m4a"] * 2 + ["aac", "wav"]
# --mix formats: a collection as people keep it (issue 23): mostly FLAC, some Opus and Vorbis,
# MP3 and M4A from elsewhere.
FORMATS_MIX = ["flac"] * 4 + ["opus"] * 2 + ["vorbis"] * 1 + ["mp3"] * 2 + ["m4a"]


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_payloads(tmp):
    """Pre-encoded audio: about a second each, small."""
    src = os.path.join(tmp, "src.wav")
    run("sox", "-n", "-r", "22050", "-c", "1", "-b", "16", src, "synth", "1.2", "sine", "440", "gain", "-6")
    mp3 = os.path.join(tmp, "p.mp3")
    run("lame", "--silent", "-b", "32", src, mp3)       # LAME writes its Xing/Info + LAME frame, no ID3
    aac = os.path.join(tmp, "p.aac")
    run("ffmpeg", "-nostdin", "-v", "error", "-y", "-i", src, "-c:a", "aac", "-b:a", "32k", "-map_metadata", "-1", "-f", "adts", aac)
    m4a = os.path.join(tmp, "p.m4a")
    run("ffmpeg", "-nostdin", "-v", "error", "-y", "-i", src, "-c:a", "aac", "-b:a", "32k", "-map_metadata", "-1", m4a)
    flac = os.path.join(tmp, "p.flac")
    run("flac", "-s", "-f", "--no-padding", "--no-seektable", "-o", flac, src)
    opus = os.path.join(tmp, "p.opus")
    run("opusenc", "--quiet", "--bitrate", "24", src, opus)
    ogg = os.path.join(tmp, "p.ogg")
    run("oggenc", "-Q", "-q", "0", "-o", ogg, src)
    jpg = os.path.join(tmp, "c.jpg")
    run("ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=teal:s=48x48", "-frames:v", "1", jpg)
    read = lambda p: open(p, "rb").read()
    pcm = read(src)
    return {"mp3": read(mp3), "aac": read(aac), "m4a": split_m4a(read(m4a)), "pcm": pcm[pcm.find(b"data") + 8:][:2756 * 2],
            "jpg": read(jpg), "flac": split_flac(read(flac)), "opus": split_ogg(read(opus), 2), "vorbis": split_ogg(read(ogg), 3)}


# --- FLAC and Ogg (Vorbis comments) ------------------------------------------------------------

def vorbis_comments(t, opus, cover=None):
    """The fields of a Vorbis comment block: the tags, the gain (R128 in Q7.8 dB against -23 LUFS
    for Opus, ReplayGain otherwise) and, for Ogg, a cover as METADATA_BLOCK_PICTURE."""
    fields = ["TITLE=" + t["title"], "ARTIST=" + t["artist"], "ALBUM=" + t["album"], "ALBUMARTIST=" + t["album_artist"],
              "TRACKNUMBER=%d" % t["track"], "TRACKTOTAL=%d" % t["tracks"], "DISCNUMBER=%d" % t["disc"],
              "DATE=%d" % t["year"], "GENRE=" + t["genre"]]
    if opus:
        fields.append("R128_TRACK_GAIN=%d" % round((t["gain"] - 5) * 256))
    else:
        fields += ["REPLAYGAIN_TRACK_GAIN=%.2f dB" % t["gain"], "REPLAYGAIN_TRACK_PEAK=%.6f" % t["peak"]]
    if cover is not None:
        import base64
        fields.append("METADATA_BLOCK_PICTURE=" + base64.b64encode(flac_picture(cover)).decode())
    body = struct.pack("<I", 9) + b"streamd-b" + struct.pack("<I", len(fields))
    for field in fields:
        data = field.encode("utf-8")
        body += struct.pack("<I", len(data)) + data
    return body


def flac_picture(jpg):
    mime = b"image/jpeg"
    return (struct.pack(">II", 3, len(mime)) + mime + struct.pack(">I", 0) + struct.pack(">IIIII", 48, 48, 24, 0, len(jpg)) + jpg)


def split_flac(data):
    """(STREAMINFO block body, the frames) of a FLAC file flac wrote without padding or seek table."""
    i, info = 4, None
    while True:
        header, size = data[i], int.from_bytes(data[i + 1:i + 4], "big")
        if header & 0x7F == 0:
            info = data[i + 4:i + 4 + size]
        i += 4 + size
        if header & 0x80:
            return info, data[i:]


def flac_file(payload, t, cover=None):
    info, frames = payload
    blocks = [(0, info), (4, vorbis_comments(t, opus=False))]
    if cover is not None:
        blocks.append((6, flac_picture(cover)))
    out = b"fLaC"
    for n, (kind, body) in enumerate(blocks):
        out += bytes([kind | (0x80 if n == len(blocks) - 1 else 0)]) + len(body).to_bytes(3, "big") + body
    return out + frames


OGG_CRC = []
for _n in range(256):
    _r = _n << 24
    for _ in range(8):
        _r = ((_r << 1) ^ 0x04C11DB7) if _r & 0x80000000 else _r << 1
    OGG_CRC.append(_r & 0xFFFFFFFF)


def ogg_crc(page):
    crc = 0
    for b in page:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ OGG_CRC[((crc >> 24) & 0xFF) ^ b]
    return crc


def ogg_pages(data):
    """Yields (header fields, segment table, body) of each page."""
    i = 0
    while i + 27 <= len(data) and data[i:i + 4] == b"OggS":
        count = data[i + 26]
        table = data[i + 27:i + 27 + count]
        start = i + 27 + count
        yield data[i:i + 27], table, data[start:start + sum(table)]
        i = start + sum(table)


def ogg_page(template, flags, granule, sequence, packets_segments, body):
    header = bytearray(template)
    header[5] = flags
    header[6:14] = struct.pack("<q", granule)
    header[18:22] = struct.pack("<I", sequence)
    header[22:26] = b"\0\0\0\0"
    header[26] = len(packets_segments)
    page = bytes(header) + bytes(packets_segments) + body
    return page[:22] + struct.pack("<I", ogg_crc(page)) + page[26:]


def split_ogg(data, header_packets):
    """(first page's header template, the header packets, the pages after them) of a single-link
    Ogg stream whose encoder put the header packets on pages of their own (opusenc and oggenc do)."""
    packets, current, rest, template = [], b"", [], None
    for head, table, body in ogg_pages(data):
        if template is None:
            template = head
        if len(packets) >= header_packets:
            rest.append((head, table, body))
            continue
        offset = 0
        for lace in table:
            current += body[offset:offset + lace]
            offset += lace
            if lace < 255:
                packets.append(current)
                current = b""
    return template, packets, rest


def ogg_file(payload, t, codec, cover=None):
    template, packets, rest = payload
    comments = vorbis_comments(t, opus=codec == "opus", cover=cover)
    packets = list(packets)
    packets[1] = (b"OpusTags" + comments) if codec == "opus" else (b"\x03vorbis" + comments + b"\x01")
    out, sequence = [], 0
    # Page 0: the identification header alone (BOS); then the other headers, 255 segments a page.
    out.append(ogg_page(template, 0x02, 0, 0, lacing(packets[0]), packets[0]))
    sequence = 1
    segments, body, flags = [], b"", 0
    for packet in packets[1:]:
        for lace, chunk in laced(packet):
            if len(segments) == 255:
                out.append(ogg_page(template, flags, 0, sequence, segments, body))
                # The next page continues a packet when this one ended inside it (last lacing 255).
                flags = 0x01 if segments[-1] == 255 else 0
                sequence += 1
                segments, body = [], b""
            segments.append(lace)
            body += chunk
    out.append(ogg_page(template, flags, 0, sequence, segments, body))
    sequence += 1
    for head, table, page_body in rest:
        granule = struct.unpack("<q", head[6:14])[0]
        out.append(ogg_page(head, head[5], granule, sequence, table, page_body))
        sequence += 1
    return b"".join(out)


def lacing(packet):
    return [lace for lace, _ in laced(packet)]


def laced(packet):
    """A packet's lacing values with the bytes each covers (a final 0 when its size is a multiple of 255)."""
    pieces = [(255, packet[i:i + 255]) for i in range(0, len(packet) - len(packet) % 255, 255)]
    pieces.append((len(packet) % 255, packet[len(packet) - len(packet) % 255:]))
    return pieces



# --- ID3v2.4 -----------------------------------------------------------------------------------

def syncsafe(n):
    return bytes([(n >> 21) & 0x7F, (n >> 14) & 0x7F, (n >> 7) & 0x7F, n & 0x7F])


def id3_frame(fid, body):
    return fid.encode() + syncsafe(len(body)) + b"\0\0" + body


def id3_text(fid, text):
    return id3_frame(fid, b"\x03" + text.encode("utf-8"))


def id3_tag(t, cover=None, replaygain=True):
    frames = [id3_text("TIT2", t["title"]), id3_text("TPE1", t["artist"]), id3_text("TALB", t["album"]),
              id3_text("TPE2", t["album_artist"]), id3_text("TRCK", "%d/%d" % (t["track"], t["tracks"])),
              id3_text("TPOS", "%d/%d" % (t["disc"], t["discs"])), id3_text("TDRC", str(t["year"])),
              id3_text("TCON", t["genre"])]
    if replaygain:
        frames.append(id3_frame("TXXX", b"\x03REPLAYGAIN_TRACK_GAIN\x00" + ("%.2f dB" % t["gain"]).encode()))
        frames.append(id3_frame("TXXX", b"\x03REPLAYGAIN_TRACK_PEAK\x00" + ("%.6f" % t["peak"]).encode()))
    if cover is not None:
        frames.append(id3_frame("APIC", b"\x00image/jpeg\x00\x03\x00" + cover))
    body = b"".join(frames)
    return b"ID3\x04\x00\x00" + syncsafe(len(body)) + body


# --- MP4 -----------------------------------------------------------------------------------------

def box(kind, payload):
    return struct.pack(">I", 8 + len(payload)) + kind + payload


def split_m4a(data):
    """(bytes before moov, moov children without udta); the moov must come after the mdat so its
    size can change without moving a sample."""
    at, head, moov = 0, None, None
    while at + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"moov":
            head, moov = data[:at], data[at + 8:at + size]
        elif kind == b"mdat" and moov is not None:
            sys.exit("make-library: the M4A payload has its moov before the mdat")
        at += size
    if head is None or b"mdat" not in head:
        sys.exit("make-library: unexpected M4A payload layout")
    children, at = [], 0
    while at + 8 <= len(moov):
        size, kind = struct.unpack(">I4s", moov[at:at + 8])
        if kind != b"udta":
            children.append(moov[at:at + size])
        at += size
    return head, b"".join(children)


def ilst_item(kind, value, data_type):
    return box(kind, box(b"data", struct.pack(">II", data_type, 0) + value))


def m4a_file(payload, t, cover=None):
    head, moov = payload
    items = [ilst_item(b"\xa9nam", t["title"].encode(), 1), ilst_item(b"\xa9ART", t["artist"].encode(), 1),
             ilst_item(b"\xa9alb", t["album"].encode(), 1), ilst_item(b"aART", t["album_artist"].encode(), 1),
             ilst_item(b"trkn", struct.pack(">HHHH", 0, t["track"], t["tracks"], 0), 0),
             ilst_item(b"disk", struct.pack(">HHH", 0, t["disc"], t["discs"]), 0),
             ilst_item(b"\xa9day", str(t["year"]).encode(), 1), ilst_item(b"\xa9gen", t["genre"].encode(), 1)]
    if cover is not None:
        items.append(ilst_item(b"covr", cover, 13))
    hdlr = box(b"hdlr", b"\0" * 8 + b"mdirappl" + b"\0" * 9)
    meta = box(b"meta", b"\0\0\0\0" + hdlr + box(b"ilst", b"".join(items)))
    return head + box(b"moov", moov + box(b"udta", meta))


# --- WAV -----------------------------------------------------------------------------------------

def wav_file(pcm, t):
    def info(kind, text):
        raw = text.encode("utf-8") + b"\0"
        return kind + struct.pack("<I", len(raw)) + raw + (b"\0" if len(raw) & 1 else b"")
    fields = (info(b"INAM", t["title"]) + info(b"IART", t["artist"]) + info(b"IPRD", t["album"])
              + info(b"ITRK", str(t["track"])) + info(b"IGNR", t["genre"]) + info(b"ICRD", str(t["year"])))
    fmt = struct.pack("<HHIIHH", 1, 1, 22050, 44100, 2, 16)
    chunks = (b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"LIST" + struct.pack("<I", 4 + len(fields)) + b"INFO" + fields
              + b"data" + struct.pack("<I", len(pcm)) + pcm)
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks


# --- the library ---------------------------------------------------------------------------------

def name_words(rng, n):
    return " ".join(rng.choice(WORDS).capitalize() for _ in range(n))


def plan(tracks, seed, per_album, per_artist, formats=FORMATS):
    """Yields (relative path, tags, format, cover kind) for every track, deterministically."""
    rng = random.Random(seed)
    albums = (tracks + per_album - 1) // per_album
    n = 0
    for a in range(albums):
        artist_index = a // per_artist
        artist = "%s %05d" % (name_words(random.Random(seed * 1_000_003 + artist_index), 2), artist_index)
        compilation = a % 10 == 9
        album = "%s %06d" % (name_words(rng, 2), a)
        fmt = formats[(a * 3 + a // 10) % len(formats)]   # a stride that does not line up with the compilations
        cover = ("embedded", "folder", None)[a % 3]
        year = 1960 + a % 64
        genre = GENRES[a % len(GENRES)]
        count = min(per_album, tracks - n)
        discs = 2 if count >= 8 and a % 4 == 0 else 1
        folder = "%s/%s" % ("Various Artists" if compilation else artist, album)
        for i in range(count):
            disc = 1 + (i * discs) // count
            title = "%s %07d" % (name_words(rng, 3), n)
            track_artist = "%s %05d" % (name_words(rng, 2), 50_000 + n) if compilation else artist
            tags = {"title": title, "artist": track_artist, "album": album,
                    "album_artist": "Various Artists" if compilation else artist,
                    "track": i + 1, "tracks": count, "disc": disc, "discs": discs, "year": year, "genre": genre,
                    "gain": -12 + (n % 1200) / 100.0, "peak": 0.5 + (n % 500) / 1000.0}
            ext = {"mp3": "mp3", "m4a": "m4a", "aac": "aac", "wav": "wav", "flac": "flac", "opus": "opus", "vorbis": "ogg"}[fmt]
            yield "%s/%02d %s.%s" % (folder, i + 1, title, ext), tags, fmt, cover, i == 0
            n += 1


def track_bytes(payloads, tags, fmt, cover):
    art = payloads["jpg"] if cover == "embedded" else None
    if fmt == "mp3":
        return id3_tag(tags, art) + payloads["mp3"]
    if fmt == "aac":
        return id3_tag(tags, art, replaygain=False) + payloads["aac"]
    if fmt == "m4a":
        return m4a_file(payloads["m4a"], tags, art)
    if fmt == "flac":
        return flac_file(payloads["flac"], tags, art)
    if fmt in ("opus", "vorbis"):
        return ogg_file(payloads[fmt], tags, fmt, art)
    return wav_file(payloads["pcm"], tags)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--tracks", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tracks-per-album", type=int, default=10)
    parser.add_argument("--albums-per-artist", type=int, default=5)
    parser.add_argument("--change", type=int, default=0,
                        help="rewrite this many existing tracks (spread over the library) with new titles, then stop")
    parser.add_argument("--mix", choices=("default", "formats"), default="default",
                        help="formats: FLAC, Opus, Vorbis, MP3 and M4A (issue 23) instead of MP3, M4A, ADTS and WAV")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="make-library-")
    try:
        payloads = make_payloads(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    entries = plan(args.tracks, args.seed, args.tracks_per_album, args.albums_per_artist,
                   FORMATS_MIX if args.mix == "formats" else FORMATS)
    if args.change:
        every = max(1, args.tracks // args.change)
        changed = 0
        for index, (path, tags, fmt, cover, _) in enumerate(entries):
            if index % every or changed >= args.change:
                continue
            tags["title"] += " (changed)"
            with open(os.path.join(args.out, path), "wb") as f:
                f.write(track_bytes(payloads, tags, fmt, cover))
            changed += 1
        print("changed %d tracks" % changed)
        return
    written = 0
    for path, tags, fmt, cover, first in entries:
        full = os.path.join(args.out, path)
        if first:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            if cover == "folder":
                with open(os.path.join(os.path.dirname(full), "cover.jpg"), "wb") as f:
                    f.write(payloads["jpg"])
        with open(full, "wb") as f:
            f.write(track_bytes(payloads, tags, fmt, cover))
        written += 1
    print("wrote %d tracks under %s" % (written, args.out))


if __name__ == "__main__":
    main()
