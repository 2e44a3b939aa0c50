#!/usr/bin/env bash
# `make demo`: describes every track with `streamplay --info`, starts streamd on the library,
# and plays the first track with streamplay: to the sound card when ALSA opens one, otherwise
# to a WAV file (it says which). Then streamd keeps serving until Ctrl-C.
# DEMO_SECONDS=N stops the server N seconds after the track (used to check the demo itself).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(swift build -c release --show-bin-path)
MEDIA=${MEDIA_DIR:-media/out}
PORT=${DEMO_PORT:-8080}

echo "== streamplay --info on every track of $MEDIA"
find "$MEDIA" -type f ! -name '.*' | sort | while read -r f; do
  printf '%-40s ' "${f#$MEDIA/}"
  "$BIN/streamplay" --info "$f" || true
done

echo
echo "== streamd $MEDIA"
"$BIN/streamd" "$MEDIA" --port "$PORT" --quiet > /tmp/streamd-demo.out &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 50); do grep -q listening /tmp/streamd-demo.out 2>/dev/null && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on \(http[^ ]*\)\/$/\1/p' /tmp/streamd-demo.out)
echo "library page: $BASE/   catalog: $BASE/api/tracks"

FIRST=$(curl -s "$BASE/api/tracks" | python3 -c 'import json,sys; t=[x for x in json.load(sys.stdin) if x["codec"]=="mp3"]; print(t[0]["url"])')
echo
echo "== streamplay $BASE$FIRST"
if "$BIN/streamplay" "$BASE$FIRST" --output alsa --duration "${DEMO_PLAY_SECONDS:-10}" --stats 2>/tmp/streamplay-demo.err; then
  echo "(played on the sound card through ALSA)"
else
  echo "(no ALSA device opened: $(tail -1 /tmp/streamplay-demo.err); writing a WAV file instead)"
  "$BIN/streamplay" "$BASE$FIRST" --output wav:/tmp/streamplay-demo.wav --stats
  echo "(decoded to /tmp/streamplay-demo.wav)"
fi
echo
echo "streamd keeps serving $BASE/ — Ctrl-C stops it"
if [ -n "${DEMO_SECONDS:-}" ]; then sleep "$DEMO_SECONDS"; else wait $SERVER; fi
