#!/usr/bin/env bash
# Seek-index build time on the 4-hour MP3: streamd's analyzer (the code behind /api/index and
# `streamplay --info`) against ffprobe counting the same frames, measured in the same run.
# Target: under 2 s for 4 hours of audio.
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=media/long/long-4h-48k.mp3
[ -f "$FILE" ] || media/make-media.sh --long media/long >/dev/null
BIN=$(swift build -c release --show-bin-path)
cat "$FILE" >/dev/null     # both tools read from the page cache

best() { # command... → best wall time of 5 runs, in seconds
  local best=999 t0 t1 t
  for _ in 1 2 3 4 5; do
    t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
    t=$(echo "$t1 - $t0" | bc -l)
    if (( $(echo "$t < $best" | bc -l) )); then best=$t; fi
  done
  printf '%.3f' "$best"
}

ours=$(best "$BIN/streamplay" --info "$FILE")
peer=$(best ffprobe -v error -count_packets -show_entries stream=nb_read_packets "$FILE")
frames=$("$BIN/streamplay" --info "$FILE" | sed 's/.*"frames":\([0-9]*\).*/\1/')
printf '%-44s %10s %10s %8s\n' "4-hour MP3 ($frames frames), best of 5" "streamd" "ffprobe" "ratio"
printf '%-44s %9ss %9ss %7.2fx\n' "full frame scan + seek index" "$ours" "$peer" "$(echo "$peer / $ours" | bc -l)"
verdict=$( (( $(echo "$ours < 2" | bc -l) )) && echo PASS || echo MISS)
echo "index build: ${ours}s for 4 h of audio (target < 2 s: $verdict); ffprobe/streamd time ratio $(printf '%.2f' "$(echo "$peer / $ours" | bc -l)")"
