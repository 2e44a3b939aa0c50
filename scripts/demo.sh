#!/usr/bin/env bash
# `make demo`: what the project can show today. For now: streamplay --info on every
# track of the generated library (the server and the player replace this as they land).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(swift build -c release --show-bin-path)
MEDIA=${MEDIA_DIR:-media/out}
echo "streamplay --info on the media library ($MEDIA):"
find "$MEDIA" -type f ! -name '.*' | sort | while read -r f; do
  printf '\n%s\n' "${f#$MEDIA/}"
  "$BIN/streamplay" --info "$f" || true
done
