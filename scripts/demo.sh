#!/usr/bin/env bash
# `make demo`: describes every track of the library with `streamplay --info`, then serves
# the library with streamd (open the printed URL in a browser; Ctrl-C stops it).
# DEMO_SECONDS=N stops the server after N seconds (used to check the demo itself).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(swift build -c release --show-bin-path)
MEDIA=${MEDIA_DIR:-media/out}
echo "== streamplay --info on every track of $MEDIA"
find "$MEDIA" -type f ! -name '.*' | sort | while read -r f; do
  printf '%-40s ' "${f#$MEDIA/}"
  "$BIN/streamplay" --info "$f" || true
done
echo
echo "== streamd $MEDIA"
"$BIN/streamd" "$MEDIA" --port "${DEMO_PORT:-8080}" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null' EXIT INT TERM
sleep 1
echo "library page: http://127.0.0.1:${DEMO_PORT:-8080}/   catalog: /api/tracks   Ctrl-C stops"
if [ -n "${DEMO_SECONDS:-}" ]; then sleep "$DEMO_SECONDS"; else wait $SERVER; fi
