#!/usr/bin/env bash
# `streamd package` over the real-world corpus (../shared/corpus/realworld-xiph), then ffmpeg
# decodes every packaged FLAC and Ogg Opus fMP4 rendition and the original file, and compares
# them sample by sample: IDENTICAL, IDENTICAL+TAIL (Opus: the same samples, plus the end trim
# ffmpeg's HLS reader does not apply from the edit list), or DIFF. Files streamd refuses or
# cannot cut are counted as skipped. Prints the tally; it reports, it does not gate.
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/corpus/realworld-xiph}
swift build --product streamd >/dev/null
BIN=$(swift build --show-bin-path)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$BIN/streamd" package "$CORPUS" --out "$TMP/pkg" 2>"$TMP/package.log" | tail -1
identical=0 tail=0 diff=0
while IFS= read -r init; do
  dir=$(dirname "$init"); rel=${dir#"$TMP/pkg/hls/"}
  ffmpeg -nostdin -v quiet -y -i "$CORPUS/$rel" -map 0:a:0 -f f32le "$TMP/a.f32" || true
  ffmpeg -nostdin -v quiet -y -i "$dir/index.m3u8" -f f32le "$TMP/b.f32" || true
  verdict=$(python3 - "$TMP/a.f32" "$TMP/b.f32" <<'PY'
import sys, numpy as np
a = np.fromfile(sys.argv[1], '<f4'); b = np.fromfile(sys.argv[2], '<f4')
if len(a) == 0 or len(b) < len(a): print("DIFF"); sys.exit()
same = np.array_equal(a, b[:len(a)])
print("IDENTICAL" if same and len(b) == len(a) else ("IDENTICAL+TAIL" if same else "DIFF"))
PY
)
  case $verdict in IDENTICAL) identical=$((identical + 1));; IDENTICAL+TAIL) tail=$((tail + 1));; *) diff=$((diff + 1)); echo "DIFF $rel";; esac
done < <(find "$TMP/pkg/hls" -name init.mp4 | sort)
echo "fMP4 renditions vs ffmpeg's decode of the original: $identical identical, $tail identical but for the end trim, $diff differ"
echo "skipped by package: $(grep -c '^streamd: skipping' "$TMP/package.log" || true)"
