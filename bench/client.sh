#!/usr/bin/env bash
# streamplay against mpg123 and ffmpeg on the 4-hour 48 kHz MP3 served by streamd on loopback:
# decode CPU, peak memory (6-minute vs 4-hour file), time to first audio, and seek time.
# Prints ratios measured in this run; it reports, it does not gate.
set -euo pipefail
cd "$(dirname "$0")/.."
for p in time mpg123 ffmpeg heaptrack; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || \
    { apt-get update -qq && apt-get install -y -qq "$p" >/dev/null; }
done
LONG=media/long/long-4h-48k.mp3
[ -f "$LONG" ] || media/make-media.sh --long media/long >/dev/null
BIN=$(swift build -c release --show-bin-path)
TMP=$(mktemp -d)
trap 'kill $SERVER $COLD 2>/dev/null || true; rm -rf "$TMP"' EXIT
COLD=
# The served folder holds the tracks only (the measurements' files stay out of its catalog).
mkdir "$TMP/lib" "$TMP/db"
ln "$LONG" "$TMP/lib/long.mp3" 2>/dev/null || cp "$LONG" "$TMP/lib/long.mp3"
# Six minutes: the first 15,000 frames of the raw CBR stream (384 bytes each) are a valid MP3.
head -c $((15000 * 384)) "$LONG" > "$TMP/lib/six.mp3"
head -c $((1500 * 384)) "$LONG" > "$TMP/lib/short.mp3"
ln "$TMP/lib/six.mp3" "$TMP/lib/six-b.mp3"
"$BIN/streamd" "$TMP/lib" --port 0 --quiet --db "$TMP/db/catalog.db" > "$TMP/streamd.out" &
SERVER=$!
for _ in $(seq 50); do grep -q listening "$TMP/streamd.out" 2>/dev/null && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on \(http[^ ]*\)\/$/\1/p' "$TMP/streamd.out")
cat "$LONG" > /dev/null

measure() { # label command... → user, system, peak RSS KiB, wall, voluntary switches into $TMP/label.time
  local label=$1; shift
  /usr/bin/time -f "%U %S %M %e %w" -o "$TMP/$label.time" "$@" > "$TMP/$label.out" 2>"$TMP/$label.err" || true
}
switches() { awk '{print $5}' "$TMP/$1.time"; }
sys() { awk '{printf "%.2f", $2}' "$TMP/$1.time"; }
cpu() { awk '{printf "%.2f", $1 + $2}' "$TMP/$1.time"; }
rss() { awk '{printf "%.1f", $3 / 1024}' "$TMP/$1.time"; }
wall() { awk '{printf "%.3f", $4}' "$TMP/$1.time"; }
stat() { tail -1 "$TMP/$1.out" | python3 -c "import json,sys; v=json.load(sys.stdin)['$2']; print('%.1f' % v if v is not None else 'null')"; }
ratio() { python3 -c "print('%.2f' % ($1 / $2) if $2 >= 0.01 else 'n/a (peer < 10 ms)')"; }

for i in 1 2 3; do measure "ours_help$i" "$BIN/streamplay" --help; done
# Decode CPU: three interleaved pairs (the machine's load moves both alike); the median ratio counts.
for i in 1 2 3; do
  measure "ours_long$i" "$BIN/streamplay" "$BASE/media/long.mp3" --output null --stats
  measure "mpg123_long$i" mpg123 -q -t "$BASE/media/long.mp3"
done
cp "$TMP/ours_long2.time" "$TMP/ours_long.time"; cp "$TMP/mpg123_long2.time" "$TMP/mpg123_long.time"
measure ours_six "$BIN/streamplay" "$BASE/media/six.mp3" --output null --stats
measure mpg123_six mpg123 -q -t "$BASE/media/six.mp3"
for i in 1 2 3; do measure "ours_first$i" "$BIN/streamplay" "$BASE/media/long.mp3" --output null --duration 0.05 --stats; done
measure mpg123_first mpg123 -q -n 1 -w /dev/null "$BASE/media/long.mp3"
measure ffmpeg_first ffmpeg -v error -i "$BASE/media/long.mp3" -frames:a 1 -f null -
# Seek: streamd builds a long track's exact index in the background after its scan; wait for it,
# then the first and the second seek. Then a second streamd with --index-ahead 0 and a fresh
# database: the first seek pays for the walk of the whole file (first need).
for _ in $(seq 300); do
  curl -s "$BASE/api/status" | grep -q '"seek_indexes_built_ahead":[1-9]' && break; sleep 0.1
done
measure ours_seek "$BIN/streamplay" "$BASE/media/long.mp3" --output null --start 7200 --duration 0.05 --stats
measure ours_seek2 "$BIN/streamplay" "$BASE/media/long.mp3" --output null --start 7200 --duration 0.05 --stats
mkdir "$TMP/colddb"
"$BIN/streamd" "$TMP/lib" --port 0 --quiet --index-ahead 0 --db "$TMP/colddb/catalog.db" > "$TMP/cold.out" &
COLD=$!
for _ in $(seq 50); do grep -q listening "$TMP/cold.out" 2>/dev/null && break; sleep 0.1; done
COLDBASE=$(sed -n 's/^listening on \(http[^ ]*\)\/$/\1/p' "$TMP/cold.out")
for _ in $(seq 100); do curl -s "$COLDBASE/api/status" | grep -q '"scans":[1-9]' && break; sleep 0.1; done
measure ours_seek_cold "$BIN/streamplay" "$COLDBASE/media/long.mp3" --output null --start 7200 --duration 0.05 --stats
# A song on that streamd: --start at once (the walk starts at the probe's first request), and
# a seek into a song whose first bytes a client read half a second before (its index is built
# when a client starts reading a track).
measure ours_seek_song "$BIN/streamplay" "$COLDBASE/media/six.mp3" --output null --start 300 --duration 0.05 --stats
curl -s -r 0-65535 -o /dev/null "$COLDBASE/media/six-b.mp3"; sleep 0.5
measure ours_seek_song_played "$BIN/streamplay" "$COLDBASE/media/six-b.mp3" --output null --start 300 --duration 0.05 --stats
kill $COLD 2>/dev/null || true
measure mpg123_seek mpg123 -q -k 300000 -n 1 -w /dev/null "$BASE/media/long.mp3"
measure ffmpeg_seek ffmpeg -v error -ss 7200 -i "$BASE/media/long.mp3" -frames:a 1 -f null -

# Heap allocations per decoded frame: the 6-minute file against its first 1,500 frames, so the
# fixed cost of starting up cancels out and only what grows with the stream is left.
allocations() { # file → calls to allocation functions in a whole run
  heaptrack -o "$TMP/heap-$1" "$BIN/streamplay" "$BASE/media/$1.mp3" --output null > /dev/null 2>&1 || true
  heaptrack_print -f "$TMP/heap-$1".* 2>/dev/null | sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' || true
}
allocs_short=$(allocations short)
allocs_six=$(allocations six)

best_ttfa=$(for i in 1 2 3; do stat "ours_first$i" ttfa_ms; done | sort -n | head -1)
printf '%-52s %12s %12s %8s\n' "metric (4-hour 48 kHz CBR MP3 over loopback HTTP)" "streamplay" "peer" "ratio"
for i in 1 2 3; do
  printf '%-52s %11ss %11ss %8s  %s\n' "decode CPU, whole file, --output null vs mpg123 -t ($i)" "$(cpu ours_long$i)" "$(cpu mpg123_long$i)" \
    "$(ratio "$(cpu ours_long$i)" "$(cpu mpg123_long$i)")" "(system $(sys ours_long$i) s vs $(sys mpg123_long$i) s; voluntary switches $(switches ours_long$i) vs $(switches mpg123_long$i))"
done
printf '%-52s %12s %12s %8s  %s\n' "decode CPU ratio, median of the 3 pairs" "" "" \
  "$(for i in 1 2 3; do ratio "$(cpu ours_long$i)" "$(cpu mpg123_long$i)"; done | sort -n | sed -n 2p)" "(target <= 1.05)"
printf '%-52s %10sMB %10sMB %8s  %s\n' "peak RSS, 6-minute file (peer: mpg123)" "$(rss ours_six)" "$(rss mpg123_six)" "" "(target <= 20 MB)"
printf '%-52s %10sMB %10sMB %8s  %s\n' "peak RSS, 4-hour file (peer: mpg123)" "$(rss ours_long)" "$(rss mpg123_long)" "" \
  "(4 h - 6 min: $(python3 -c "print('%.1f' % ($(rss ours_long) - $(rss ours_six)))") MB; target <= 1 MB)"
printf '%-52s %10sMB %12s %8s  %s\n' "peak RSS, streamplay --help (median of 3)" \
  "$(for i in 1 2 3; do rss "ours_help$i"; echo; done | sort -n | sed -n 2p)" "" "" "(target <= 12 MB)"
printf '%-52s %10sms %12s %8s  %s\n' "time to first audio (ttfa_ms, best of 3)" "$best_ttfa" "" "" "(target <= 20 ms)"
printf '%-52s %11ss %11ss %8s\n' "first audio, whole process: vs mpg123 -n 1" "$(wall ours_first1)" "$(wall mpg123_first)" \
  "$(ratio "$(wall ours_first1)" "$(wall mpg123_first)")"
printf '%-52s %11ss %11ss %8s\n' "first audio, whole process: vs ffmpeg -frames:a 1" "$(wall ours_first1)" "$(wall ffmpeg_first)" \
  "$(ratio "$(wall ours_first1)" "$(wall ffmpeg_first)")"
printf '%-52s %10sms %12s %8s  %s\n' "--start 7200: seek_ms to first PCM, index built ahead" "$(stat ours_seek seek_ms)" "" "" "(target <= 30 ms)"
printf '%-52s %10sms %12s %8s\n' "--start 7200: seek_ms, the second seek" "$(stat ours_seek2 seek_ms)" "" ""
printf '%-52s %10sms %12s %8s  %s\n' "--start 7200: seek_ms, first need (--index-ahead 0)" "$(stat ours_seek_cold seek_ms)" "" "" "(streamd walks the whole file first)"
printf '%-52s %10sms %12s %8s  %s\n' "6-minute song, --start 300: seek_ms, first need" "$(stat ours_seek_song seek_ms)" "" "" "(an analyzer worker starts)"
printf '%-52s %10sms %12s %8s  %s\n' "6-minute song read 0.5 s before: seek_ms" "$(stat ours_seek_song_played seek_ms)" "" "" "(index built on play)"
printf '%-52s %11ss %11ss %8s\n' "seek to 2 h, whole process: vs mpg123 -k" "$(wall ours_seek)" "$(wall mpg123_seek)" \
  "$(ratio "$(wall ours_seek)" "$(wall mpg123_seek)")"
printf '%-52s %11ss %11ss %8s\n' "seek to 2 h, whole process: vs ffmpeg -ss" "$(wall ours_seek)" "$(wall ffmpeg_seek)" \
  "$(ratio "$(wall ours_seek)" "$(wall ffmpeg_seek)")"
printf '%-52s %12s %12s %8s  %s\n' "heap allocations per decoded frame (heaptrack)" \
  "$(python3 -c "print('%.3f' % (($allocs_six - $allocs_short) / 13500))" 2>/dev/null || echo n/a)" "" "" \
  "(6 min vs 36 s: $allocs_six vs $allocs_short calls)"
echo "where streamplay's memory goes: binary + Swift runtime + libmpg123/libfaad/libsoxr mappings at start (libcurl and libasound only when https:// or ALSA is used), plus the 1 MiB throttle, a 64,512-sample output ring (252 KiB) and mpg123's decoder state; the 4-hour file adds only its seek table when seeking"
