#!/usr/bin/env bash
# streamplay on a 20-track album over loopback HTTP against the same audio as one file: CPU and
# peak RSS of the whole play, the samples a join adds, and the time to first audio of a replay
# from the disk cache (MP3 and M4A). One continuous piece (a sweep over pink noise) is cut into
# 20 tracks of 30 s at points that are not frame boundaries, each encoded alone (LAME -V2 with its
# gapless tag; ffmpeg AAC in M4A); the one file is the whole piece encoded once.
# Prints the figures measured in this run; it reports, it does not gate.
set -euo pipefail
cd "$(dirname "$0")/.."
for p in sox lame ffmpeg; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || \
    { apt-get update -qq && apt-get install -y -qq "$p" >/dev/null; }
done
TRACKS=${TRACKS:-20}
SECONDS_PER_TRACK=${SECONDS_PER_TRACK:-30}
RUNS=${RUNS:-5}
swift build -c release --product streamplay >/dev/null
swift build -c release --product streamd >/dev/null
BIN=$(swift build -c release --show-bin-path)
TMP=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$TMP"' EXIT
mkdir -p "$TMP/lib/album" "$TMP/lib/one" "$TMP/parts"
TOTAL=$((TRACKS * SECONDS_PER_TRACK))
sox -n -r 44100 -c 2 -b 16 "$TMP/piece.wav" synth "$TOTAL" sine 200-3000 synth "$TOTAL" pinknoise mix gain -8
lame --quiet -V2 --tt "Piece" --tl "One" "$TMP/piece.wav" "$TMP/lib/one/piece.mp3"
ffmpeg -v error -y -i "$TMP/piece.wav" -c:a aac -b:a 160k -metadata album=One "$TMP/lib/one/piece.m4a"
for n in $(seq 1 "$TRACKS"); do
  # Cuts 1.337 s off the whole seconds, so no cut falls on an MP3 or AAC frame boundary.
  from=$(python3 -c "print(max(0, ($n - 1) * $SECONDS_PER_TRACK - 1.337 * ($n > 1)))")
  to=$(python3 -c "print($n * $SECONDS_PER_TRACK - 1.337 * ($n < $TRACKS))")
  name=$(printf '%02d' "$n")
  sox "$TMP/piece.wav" "$TMP/parts/$name.wav" trim "$from" "=$to"
  lame --quiet -V2 --tt "Part $n" --tl "Piece" --tn "$n" "$TMP/parts/$name.wav" "$TMP/lib/album/$name.mp3"
  ffmpeg -v error -y -i "$TMP/parts/$name.wav" -c:a aac -b:a 160k -metadata album=PieceAAC -metadata track="$n" \
    "$TMP/lib/album/$name.m4a"
done
"$BIN/streamd" "$TMP/lib" --port 0 --quiet --db "$TMP/streamd.db" > "$TMP/streamd.out" &
SERVER=$!
for _ in $(seq 100); do grep -q listening "$TMP/streamd.out" 2>/dev/null && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on \(http[^ ]*\)\/$/\1/p' "$TMP/streamd.out")
cat "$TMP"/lib/*/* > /dev/null
urls() { for n in $(seq 1 "$TRACKS"); do printf '%s/media/album/%02d.%s\n' "$BASE" "$n" "$1"; done; }

measure() { # label command... → "user sys maxrss(KiB) wall" in $TMP/label.time (getrusage of the child: µs, not /usr/bin/time's 10 ms)
  local label=$1; shift
  python3 - "$TMP/$label" "$@" <<'PY' || true
import os, resource, subprocess, sys, time
out = sys.argv[1]
start = time.monotonic()
with open(out + ".out", "wb") as o, open(out + ".err", "wb") as e:
    subprocess.run(sys.argv[2:], stdout=o, stderr=e)
wall = time.monotonic() - start
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out + ".time", "w") as t:
    t.write(f"{r.ru_utime:.6f} {r.ru_stime:.6f} {r.ru_maxrss} {wall:.6f}\n")
PY
}
cpu() { awk '{printf "%.4f", $1 + $2}' "$TMP/$1.time"; }
rss() { awk '{printf "%.1f", $3 / 1024}' "$TMP/$1.time"; }
best() { sort -n | head -1; }
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }
ttfa() { tail -1 "$TMP/$1.out" | python3 -c "import json,sys; print(json.load(sys.stdin)['ttfa_ms'])"; }

for ext in mp3 m4a; do
  # Interleaved runs: album, one file, album, ... (the machine's load changes both alike).
  for i in $(seq "$RUNS"); do
    measure "album-$ext-$i" "$BIN/streamplay" $(urls "$ext") --output null --stats
    measure "one-$ext-$i" "$BIN/streamplay" "$BASE/media/one/piece.$ext" --output null --stats
  done
  album_cpu=$(for i in $(seq "$RUNS"); do cpu "album-$ext-$i"; echo; done | median)
  one_cpu=$(for i in $(seq "$RUNS"); do cpu "one-$ext-$i"; echo; done | median)
  album_rss=$(for i in $(seq "$RUNS"); do rss "album-$ext-$i"; echo; done | median)
  one_rss=$(for i in $(seq "$RUNS"); do rss "one-$ext-$i"; echo; done | median)
  # The join: the album into a WAV against each track decoded alone, concatenated.
  "$BIN/streamplay" $(urls "$ext") --output "wav:$TMP/album-$ext.wav" 2>/dev/null
  for n in $(seq 1 "$TRACKS"); do
    name=$(printf '%02d' "$n")
    "$BIN/streamplay" "$TMP/lib/album/$name.$ext" --output "wav:$TMP/alone-$name.wav" 2>/dev/null
  done
  joins=$(python3 - "$TMP/album-$ext.wav" "$TMP"/alone-*.wav <<'PY'
import sys, wave
def frames(path):
    with wave.open(path) as w:
        return w.readframes(w.getnframes()), w.getnframes()
album, n = frames(sys.argv[1])
parts = [frames(p) for p in sys.argv[2:]]
whole = b"".join(p[0] for p in parts)
total = sum(p[1] for p in parts)
# Samples added (or lost) over the joins, and whether the album is the concatenation bit for bit.
print(f"{n - total} {'identical' if album == whole else 'DIFFERENT'}")
PY
)
  # Fill the disk cache with the first track, for the replay below.
  rm -rf "$TMP/cache-$ext"
  "$BIN/streamplay" "$BASE/media/album/01.$ext" --output null --cache-dir "$TMP/cache-$ext" > /dev/null 2>&1
  printf '%s: %d tracks of %d s over loopback HTTP (median of %d, interleaved)\n' "$ext" "$TRACKS" "$SECONDS_PER_TRACK" "$RUNS"
  printf '  CPU, album %ss vs one file %ss: %s x (target <= 1.05)\n' "$album_cpu" "$one_cpu" \
    "$(python3 -c "print('%.3f' % ($album_cpu / $one_cpu))")"
  printf '  peak RSS, album %s MB vs one file %s MB: %+.1f MB (target <= +2 MB)\n' "$album_rss" "$one_rss" \
    "$(python3 -c "print($album_rss - $one_rss)")"
  printf '  joins: %s samples added over %d joins, album %s to the concatenated per-track decodes (target 0)\n' \
    "${joins% *}" $((TRACKS - 1)) "${joins#* }"
done
# Time to first audio of a replay from the disk cache (7 runs per format): LABEL names the runs,
# WHEN is printed.
replays() {
  local label=$1 when=$2
  for ext in mp3 m4a; do
    for i in $(seq 7); do
      measure "$label-$ext-$i" "$BIN/streamplay" "$BASE/media/album/01.$ext" --output null --duration 0.05 --stats \
        --cache-dir "$TMP/cache-$ext"
    done
    printf '%s: replay from the disk cache, %s: ttfa_ms best %s, median %s of 7 (target <= 5 ms)\n' "$ext" "$when" \
      "$(for i in $(seq 7); do ttfa "$label-$ext-$i"; done | best)" "$(for i in $(seq 7); do ttfa "$label-$ext-$i"; done | median)"
  done
}
# streamd running: the entry is checked first with one one-byte request (ETag and size).
replays cache-live "streamd running (one revalidation request)"
# streamd stopped: no byte may come from the network (the revalidation is refused at once).
kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
replays cache "streamd stopped"
