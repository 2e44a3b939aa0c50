#!/usr/bin/env bash
# Issue 23's figures for the lossless and Ogg formats, each against its reference decoder in the
# same run (it reports, it does not gate):
#   - decode CPU of `streamplay FILE --output null` against `flac -d`, `opusdec --float` and
#     `oggdec` (median of three interleaved pairs), for 16/44.1 and 24/96 FLAC, stereo Opus 128k
#     and Vorbis q5; streamplay's peak RSS for each against its own figure for an MP3 of the same
#     five minutes;
#   - correctness: FLAC bit-exact against `flac -d` and the STREAMINFO MD5 of streamplay's PCM,
#     Opus against `opusdec --rate 48000 --float`, Vorbis against `oggdec` (within 1 LSB of 16-bit),
#     ALAC bit-exact against ffmpeg;
#   - a seek to 50 minutes into a 1-hour FLAC served by streamd on loopback: the Range requests it
#     takes (streamd's access log) and seek_ms (first PCM after the seek);
#   - the catalog scan of a generated mixed library (FLAC, Opus, Vorbis, MP3, M4A; FORMATS_TRACKS,
#     default 20,000) against a mutagen scan of the same files, as CPU seconds per file (streamd
#     plus its workers against the Python process).
# usage: bench/formats.sh   (STREAMD_BIN=DIR with release streamd and streamplay; FORMATS_TRACKS=N)
#   FORMATS_ONLY=scan|decode|seek runs one part alone (default: all); FORMATS_DECODE="music.ogg" picks
#   the decode inputs (default all four), FORMATS_PAIRS=N the interleaved pairs per input (default 3);
#   FORMATS_LIBRARY=DIR scans an existing library (made by make-library.py --mix formats) instead of
#   generating one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
for p in flac opus-tools vorbis-tools sox lame ffmpeg time python3-mutagen python3-numpy; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || \
    { apt-get update -qq && apt-get install -y -qq "$p" >/dev/null; }
done
if [ -n "${STREAMD_BIN:-}" ]; then BIN=$STREAMD_BIN; else
  swift build -c release >/dev/null
  BIN=$(swift build -c release --show-bin-path)
fi
COMPARE=../shared/tools/pcm-compare; [ -x "$COMPARE" ] || COMPARE=/work/shared/tools/pcm-compare
TRACKS=${FORMATS_TRACKS:-20000}
ONLY=${FORMATS_ONLY:-all}
DECODE=${FORMATS_DECODE:-cd.flac hires.flac music.opus music.ogg}
PAIRS=${FORMATS_PAIRS:-3}
part() { [ "$ONLY" = all ] || [ "$ONLY" = "$1" ]; }
TMP=$(mktemp -d)
SERVER=
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$TMP"' EXIT

measure() { # label command... → user, system, peak RSS KiB, wall into $TMP/label.time
  # wait4's microseconds: /usr/bin/time prints hundredths, 3 % of a 0.34 s decode, as large as
  # the differences measured.
  local label=$1; shift
  python3 -c '
import os, subprocess, sys, time
start = time.monotonic()
p = subprocess.Popen(sys.argv[2:], stdout=open(sys.argv[1] + ".out", "wb"), stderr=open(sys.argv[1] + ".err", "wb"))
_, _, u = os.wait4(p.pid, 0)
open(sys.argv[1] + ".time", "w").write("%.6f %.6f %d %.3f\n" % (u.ru_utime, u.ru_stime, u.ru_maxrss, time.monotonic() - start))
' "$TMP/$label" "$@" || true
}
cpu() { awk '{printf "%.3f", $1 + $2}' "$TMP/$1.time"; }
rss() { awk '{printf "%.1f", $3 / 1024}' "$TMP/$1.time"; }
ratio() { python3 -c "print('%.3f' % ($1 / $2) if $2 >= 0.01 else 'n/a')"; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

if part decode; then
# Five minutes of music-like material (chords, a sweep and noise at -20 dB), at two rates.
echo "formats: generating inputs in $TMP"
sox -n -r 44100 -b 16 -c 2 "$TMP/src44.wav" synth 300 sine 220 sine 277 sine 330 sine 60-4000 pinknoise \
  remix 1,2,3v0.5,4v0.3,5v0.1 1,3,4v0.5,2v0.3,5v0.1 gain -n -3 2>/dev/null
sox -n -r 96000 -b 24 -c 2 "$TMP/src96.wav" synth 300 sine 220 sine 277 sine 330 sine 60-20000 pinknoise \
  remix 1,2,3v0.5,4v0.3,5v0.1 1,3,4v0.5,2v0.3,5v0.1 gain -n -3 2>/dev/null
flac -s -f -5 -o "$TMP/cd.flac" "$TMP/src44.wav"
flac -s -f -5 -o "$TMP/hires.flac" "$TMP/src96.wav"
opusenc --quiet --bitrate 128 "$TMP/src44.wav" "$TMP/music.opus"
oggenc -Q -q 5 -o "$TMP/music.ogg" "$TMP/src44.wav"
lame --silent -b 192 "$TMP/src44.wav" "$TMP/music.mp3"
ffmpeg -nostdin -v error -y -i "$TMP/src44.wav" -c:a alac "$TMP/music.m4a"


# Decode CPU: three interleaved pairs per format (the machine's load moves both alike).
for f in $DECODE; do
  for i in $(seq "$PAIRS"); do
    measure "ours_${f}_$i" "$BIN/streamplay" "$TMP/$f" --output null
    case $f in
      *.flac) measure "peer_${f}_$i" sh -c "flac -d -s -c '$TMP/$f' > /dev/null" ;;
      *.opus) measure "peer_${f}_$i" opusdec --quiet --float "$TMP/$f" /dev/null ;;
      *.ogg) measure "peer_${f}_$i" oggdec -Q -o /dev/null "$TMP/$f" ;;
    esac
  done
done
measure ours_mp3 "$BIN/streamplay" "$TMP/music.mp3" --output null
measure ours_m4a "$BIN/streamplay" "$TMP/music.m4a" --output null

# Correctness: streamplay's WAV against each reference decoder's.
"$BIN/streamplay" "$TMP/cd.flac" --output "wav:$TMP/cd.ours.wav" 2>/dev/null
"$BIN/streamplay" "$TMP/hires.flac" --output "wav:$TMP/hires.ours.wav" 2>/dev/null
"$BIN/streamplay" "$TMP/music.opus" --output "wav:$TMP/opus.ours.wav" 2>/dev/null
"$BIN/streamplay" "$TMP/music.ogg" --output "wav:$TMP/ogg.ours.wav" 2>/dev/null
"$BIN/streamplay" "$TMP/music.m4a" --output "wav:$TMP/alac.ours.wav" 2>/dev/null
flac -d -s -f -o "$TMP/cd.ref.wav" "$TMP/cd.flac"
flac -d -s -f -o "$TMP/hires.ref.wav" "$TMP/hires.flac"
opusdec --quiet --rate 48000 --float "$TMP/music.opus" "$TMP/opus.ref.wav"
oggdec -Q -o "$TMP/ogg.ref.wav" "$TMP/music.ogg"
ffmpeg -nostdin -v error -y -i "$TMP/music.m4a" "$TMP/alac.ref.wav"
verdict() { "$COMPARE" "$@" 2>&1 | tail -1 || true; }
# The MD5 STREAMINFO holds is of the signed little-endian samples at the stream's bit depth.
md5check() { # flac ours.wav → "MD5 matches" or what differs
  python3 - "$1" "$2" <<'EOF'
import hashlib, struct, subprocess, sys
import numpy as np
flac, wav = sys.argv[1], sys.argv[2]
want = subprocess.run(["metaflac", "--show-md5sum", flac], capture_output=True, text=True).stdout.strip()
bits = int(subprocess.run(["metaflac", "--show-bps", flac], capture_output=True, text=True).stdout)
d = open(wav, "rb").read()
i, fmt, data = 12, None, None
while i + 8 <= len(d):
    cid, size = d[i:i + 4], struct.unpack("<I", d[i + 4:i + 8])[0]
    if cid == b"fmt ": fmt = d[i + 8:i + 8 + size]
    if cid == b"data": data = d[i + 8:i + 8 + size]; break
    i += 8 + size + (size & 1)
tag, wbits = struct.unpack("<H", fmt[:2])[0], struct.unpack("<H", fmt[14:16])[0]
if tag == 0xFFFE: tag = struct.unpack("<H", fmt[24:26])[0]
if tag == 1 and wbits == bits:
    pcm = data
else:  # float or another width: back to integers at the stream's depth
    x = np.frombuffer(data, "<f4") if tag == 3 else None
    if x is None: print("streamplay wrote %d-bit integers for a %d-bit stream" % (wbits, bits)); sys.exit()
    v = np.round(x.astype(np.float64) * (1 << (bits - 1))).astype(np.int64)
    pcm = b"".join(int(s).to_bytes(bits // 8, "little", signed=True) for s in v) if bits != 16 else v.astype("<i2").tobytes()
got = hashlib.md5(pcm).hexdigest()
print("MD5 matches STREAMINFO" if got == want else "MD5 %s, STREAMINFO says %s" % (got, want))
EOF
}

fi

if part seek; then
# Seek: 50 minutes into a 1-hour FLAC served by streamd.
echo "formats: generating the 1-hour FLAC"
mkdir -p "$TMP/lib" "$TMP/db"
sox -n -r 44100 -b 16 -c 2 "$TMP/hour.wav" synth 3600 sine 220 sine 330 remix 1,2v0.5 2,1v0.5 gain -n -3 2>/dev/null
# flac's default seek table (a point every 10 s), and the same audio without one (a seek bisects).
flac -s -f -3 -o "$TMP/lib/hour.flac" "$TMP/hour.wav"
flac -s -f -3 --no-seektable -o "$TMP/lib/hour-notable.flac" "$TMP/hour.wav"
rm -f "$TMP/hour.wav"
"$BIN/streamd" "$TMP/lib" --port 0 --db "$TMP/db/catalog.db" > "$TMP/streamd.out" 2> "$TMP/streamd.err" &
SERVER=$!
for _ in $(seq 100); do grep -q listening "$TMP/streamd.out" 2>/dev/null && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on \(http[^ ]*\)\/$/\1/p' "$TMP/streamd.out")
for _ in $(seq 300); do curl -s "$BASE/api/status" | grep -q '"scans":[1-9]' && break; sleep 0.1; done
cat "$TMP/lib/hour.flac" > /dev/null
seek_run() { # label file → seek_ms and the /media/ requests it made (streamd's access log)
  local before; before=$(grep -c "GET /media/$2 " "$TMP/streamd.err" || true)
  measure "$1" "$BIN/streamplay" "$BASE/media/$2" --output null --start 3000 --duration 0.05 --stats
  sleep 0.5
  local after; after=$(grep -c "GET /media/$2 " "$TMP/streamd.err" || true)
  echo "$(( after - before ))" > "$TMP/$1.requests"
}
seek_run seek1 hour.flac; seek_run seek2 hour.flac; seek_run seek3 hour.flac
seek_run notable1 hour-notable.flac; seek_run notable2 hour-notable.flac
seek_ms() { tail -1 "$TMP/$1.out" | python3 -c "import json,sys; v=json.load(sys.stdin).get('seek_ms'); print('%.1f' % v if v is not None else 'null')" 2>/dev/null || echo "n/a"; }
kill $SERVER 2>/dev/null || true; SERVER=

fi

if part scan; then
# The catalog scan against mutagen, CPU seconds per file.
[ -n "${FORMATS_LIBRARY:-}" ] || echo "formats: generating a $TRACKS-track mixed library"
if [ -n "${FORMATS_LIBRARY:-}" ]; then ln -s "$(realpath "$FORMATS_LIBRARY")" "$TMP/mixed"
else python3 bench/make-library.py "$TMP/mixed" --tracks "$TRACKS" --mix formats > /dev/null; fi
mkdir -p "$TMP/scandb"
/usr/bin/time -f "%U %S %M %e" -o "$TMP/scan.time" python3 - "$BIN/streamd" "$TMP/mixed" "$TMP/scandb/catalog.db" "$TMP/scan.result" <<'EOF'
import json, os, subprocess, sys, time, urllib.request
streamd, folder, db, result = sys.argv[1:5]
p = subprocess.Popen([streamd, folder, "--port", "0", "--quiet", "--index-ahead", "0", "--db", db],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
base = None
for line in p.stdout:
    if line.startswith("listening on "): base = line.split()[2].rstrip("/"); break
start = time.time()
while True:
    status = json.load(urllib.request.urlopen(base + "/api/status"))
    if status.get("scans", 0) >= 1: break
    time.sleep(0.2)
seconds = time.time() - start
p.terminate()
# streamd's own CPU and that of the workers it reaped (wait4 counts a child's waited-for children).
_, _, usage = os.wait4(p.pid, 0)
open(result, "w").write(json.dumps({"tracks": status.get("tracks"), "seconds": seconds,
                                    "cpu": usage.ru_utime + usage.ru_stime}))
EOF
/usr/bin/python3 - "$TMP/mixed" "$TMP/mutagen.result" <<'EOF'
import json, os, resource, sys
import mutagen
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(sys.argv[1]) for f in fs
               if f.rsplit(".", 1)[-1] in ("flac", "opus", "ogg", "mp3", "m4a"))
ok = 0
for path in files:
    try:
        f = mutagen.File(path, easy=True)
        if f is not None and f.info.length > 0:
            _ = (f.get("title"), f.get("artist"), f.get("album"), f.get("tracknumber"))
            ok += 1
    except Exception:
        pass
usage = resource.getrusage(resource.RUSAGE_SELF)
json.dump({"files": len(files), "ok": ok, "cpu": usage.ru_utime + usage.ru_stime}, open(sys.argv[2], "w"))
EOF

fi

printf '%-58s %10s %10s %8s  %s\n' "metric (5-minute inputs, local files)" "streamplay" "peer" "ratio" ""
if part decode; then
for f in $DECODE; do
  peer=$(case $f in *.flac) echo "flac -d";; *.opus) echo "opusdec --float";; *.ogg) echo "oggdec";; esac)
  ratios=$(for i in $(seq "$PAIRS"); do ratio "$(cpu "ours_${f}_$i")" "$(cpu "peer_${f}_$i")"; done)
  r=$(echo "$ratios" | median)
  printf '%-58s %9ss %9ss %8s  %s\n' "decode CPU $f vs $peer (median of $PAIRS pairs)" "$(cpu "ours_${f}_1")" "$(cpu "peer_${f}_1")" "$r" \
    "(target <= 1.0; pairs: $(echo $ratios))"
done
for f in $DECODE; do
  printf '%-58s %8sMB %8sMB %8s  %s\n' "peak RSS $f (peer: the same music as MP3)" "$(rss "ours_${f}_1")" "$(rss ours_mp3)" \
    "$(python3 -c "print('%+.1f MB' % ($(rss "ours_${f}_1") - $(rss ours_mp3)))")" "(target within 2 MB)"
done
printf '%-58s %8sMB %10s %8s\n' "peak RSS music.m4a (ALAC)" "$(rss ours_m4a)" "" ""
echo "correctness (exact=yes: every sample equal, same length, no offset):"
echo "  FLAC 16/44.1 vs flac -d:           $(verdict "$TMP/cd.ref.wav" "$TMP/cd.ours.wav" --min-snr 90); $(md5check "$TMP/cd.flac" "$TMP/cd.ours.wav")"
echo "  FLAC 24/96 vs flac -d:             $(verdict "$TMP/hires.ref.wav" "$TMP/hires.ours.wav" --min-snr 90); $(md5check "$TMP/hires.flac" "$TMP/hires.ours.wav")"
echo "  Opus vs opusdec --rate 48000 --float: $(verdict "$TMP/opus.ref.wav" "$TMP/opus.ours.wav" --min-snr 90)"
echo "  Vorbis vs oggdec (1 LSB = 90 dB):  $(verdict "$TMP/ogg.ref.wav" "$TMP/ogg.ours.wav" --min-snr 60)"
echo "  ALAC vs ffmpeg:                    $(verdict "$TMP/alac.ref.wav" "$TMP/alac.ours.wav" --min-snr 90)"
fi
if part seek; then
for s in seek1 seek2 seek3 notable1 notable2; do
  what=$(case $s in seek*) echo "with a seek table";; *) echo "no seek table";; esac)
  printf '%-58s %8sms %10s %8s  %s\n' "seek to 50 min, 1-hour FLAC, $what ($s)" "$(seek_ms $s)" "" "" \
    "($(cat "$TMP/$s.requests") GET /media/ requests by the whole run; target: first PCM <= 30 ms, one Range request for the seek)"
done
fi
if part scan; then
python3 - "$TMP/scan.result" "$TMP/scan.time" "$TMP/mutagen.result" <<'EOF'
import json, sys
scan = json.load(open(sys.argv[1])); user, system = map(float, open(sys.argv[2]).read().split()[:2])
mut = json.load(open(sys.argv[3]))
# streamd from start to exit with the workers it reaped (wait4), against the Python process
# from start to exit (getrusage); with the driver's own Python (scan.time) as a second figure.
files = max(1, scan["tracks"] or 1)
ours = scan["cpu"] / files; driven = (user + system) / files; theirs = mut["cpu"] / max(1, mut["ok"])
print("%-58s %8.3fms %8.3fms %8s  %s" % ("catalog scan CPU per file (streamd+workers vs mutagen)", ours * 1000, theirs * 1000,
      "%.1fx" % (theirs / ours), "(%s tracks listed in %.1f s; mutagen read %d of %d; target >= 4x)"
      % (scan["tracks"], scan["seconds"], mut["ok"], mut["files"])))
print("%-58s %8.3fms %8.3fms %8s  %s" % ("  the same with the bench's Python driver counted too", driven * 1000, theirs * 1000,
      "%.1fx" % (theirs / driven), ""))
EOF
fi
