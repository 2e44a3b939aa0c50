#!/usr/bin/env bash
# The library catalog at scale (issue 14): a generated library of N distinct small tracks
# (default 100,000; bench/make-library.py), then, in one run:
#   - first full scan with a warm page cache: tracks/s, against a mutagen-based Python scan of
#     the same files on as many processes as streamd has workers;
#   - restart with a warm database: exec → "listening" (ms, median of 5) and streamd's peak RSS;
#   - restart after 100 files changed: exec → catalog current (ms);
#   - inotify pick-up: a file copied in → listed (ms, median of 10).
# usage: bench/library.sh [TRACKS]   (LIBRARY=DIR reuses/creates the library there; STREAMD=binary)
set -euo pipefail
cd "$(dirname "$0")/.."
TRACKS=${1:-100000}
scripts/deps.sh
LIBRARY=${LIBRARY:-${TMPDIR:-/tmp}/streamd-library-$TRACKS}
if [ -n "${STREAMD:-}" ]; then BIN=$STREAMD; else
  swift build -c release --product streamd >/dev/null
  BIN="$(swift build -c release --show-bin-path)/streamd"
fi
[ -x "$BIN" ] || { echo "no streamd at $BIN" >&2; exit 1; }
if [ ! -f "$LIBRARY/.complete" ]; then
  rm -rf "$LIBRARY"
  start=$(date +%s%N)
  python3 bench/make-library.py "$LIBRARY" --tracks "$TRACKS"
  echo "generated in $(( ($(date +%s%N) - start) / 1000000 )) ms" && touch "$LIBRARY/.complete"
fi
# Debian's python3, which has python3-mutagen (a pyenv python on the PATH would not).
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
exec "$PY" bench/library_bench.py "$BIN" "$LIBRARY"
