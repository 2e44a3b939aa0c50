#!/usr/bin/env bash
# streamplay's AAC path (libfaad2) against faad (the same library's own front end) and ffmpeg
# (its own AAC decoder) on one hour of AAC-LC 128k 48 kHz, as raw ADTS and as M4A, served by
# streamd on loopback; and peak memory of the hour-long M4A against the 4-hour MP3.
# Prints ratios measured in this run; it reports, it does not gate.
set -euo pipefail
cd "$(dirname "$0")/.."
for p in time faad ffmpeg; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || \
    { apt-get update -qq && apt-get install -y -qq "$p" >/dev/null; }
done
LONG=media/long
[ -f "$LONG/long-1h-48k.m4a" ] && [ -f "$LONG/long-4h-48k.mp3" ] || media/make-media.sh --long "$LONG" >/dev/null
swift build -c release >/dev/null
BIN=$(swift build -c release --show-bin-path)
TMP=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$TMP"' EXIT
"$BIN/streamd" "$LONG" --port 0 --quiet > "$TMP/streamd.out" &
SERVER=$!
for _ in $(seq 50); do grep -q listening "$TMP/streamd.out" 2>/dev/null && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on \(http[^ ]*\)\/$/\1/p' "$TMP/streamd.out")
cat "$LONG"/* > /dev/null

measure() { # label command... → "user sys maxrss wall" in $TMP/label.time
  local label=$1; shift
  /usr/bin/time -f "%U %S %M %e" -o "$TMP/$label.time" "$@" > "$TMP/$label.out" 2>"$TMP/$label.err" || true
}
cpu() { awk '{printf "%.2f", $1 + $2}' "$TMP/$1.time"; }
rss() { awk '{printf "%.1f", $3 / 1024}' "$TMP/$1.time"; }
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }
frames() { tail -1 "$TMP/$1.out" | python3 -c "import json,sys; print(json.load(sys.stdin)['frames_out'])"; }

measure ours_m4a "$BIN/streamplay" "$BASE/media/long-1h-48k.m4a" --output null --stats
measure ours_adts "$BIN/streamplay" "$BASE/media/long-1h-48k.aac" --output null --stats
measure ours_mp3 "$BIN/streamplay" "$BASE/media/long-4h-48k.mp3" --output null --stats
# faad cannot read a URL: it decodes the same files from disk (page cache), writing WAV to stdout.
measure faad_adts faad -w "$LONG/long-1h-48k.aac"
measure faad_m4a faad -w "$LONG/long-1h-48k.m4a"
measure ffmpeg_m4a ffmpeg -v error -i "$BASE/media/long-1h-48k.m4a" -f null -
measure ffmpeg_adts ffmpeg -v error -i "$BASE/media/long-1h-48k.aac" -f null -

printf '%-58s %11s %11s %8s\n' "metric (1 hour of AAC-LC 128k, 48 kHz stereo)" "streamplay" "peer" "ratio"
for form in m4a adts; do
  printf '%-58s %10ss %10ss %8s\n' "decode CPU ($form over HTTP, --output null) vs faad -w" "$(cpu ours_$form)" "$(cpu faad_$form)" \
    "$(ratio "$(cpu ours_$form)" "$(cpu faad_$form)")"
  printf '%-58s %10ss %10ss %8s\n' "decode CPU ($form over HTTP, --output null) vs ffmpeg -f null" "$(cpu ours_$form)" \
    "$(cpu ffmpeg_$form)" "$(ratio "$(cpu ours_$form)" "$(cpu ffmpeg_$form)")"
done
printf '%-58s %9sMB %9sMB %8s  %s\n' "peak RSS: 1-hour M4A vs 4-hour MP3 (both streamplay)" "$(rss ours_m4a)" "$(rss ours_mp3)" \
  "" "(difference $(python3 -c "print('%+.1f' % ($(rss ours_m4a) - $(rss ours_mp3)))") MB; target within 2 MB)"
printf '%-58s %9sMB %9sMB\n' "peak RSS: 1-hour M4A, streamplay vs ffmpeg" "$(rss ours_m4a)" "$(rss ffmpeg_m4a)"
echo "PCM frames out: m4a $(frames ours_m4a), adts $(frames ours_adts)"
python3 - "$LONG/long-1h-48k.m4a" <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read(4 << 20)
def count(box, skip):
    i = data.find(box)
    return struct.unpack('>I', data[i + skip:i + skip + 4])[0] if i >= 0 else 0
samples, chunks = count(b'stsz', 12), count(b'stco', 8)
print(f"the M4A's sample tables held in memory: stsz {samples} samples x 4 B = {samples * 4 / 1024:.0f} KiB, "
      f"stco {chunks} chunks x 8 B; no per-sample table is built (a cursor walks them)")
PY
