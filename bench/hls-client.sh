#!/usr/bin/env bash
# streamplay's time to first audio on HLS VOD against plain HTTP on the same track (the peer),
# both served by streamd on loopback: the library's CBR MP3 and the 4-hour 48 kHz MP3, each as
# the file itself and as ffmpeg's HLS (MPEG-TS and fMP4 segments, 6 s). ttfa_ms is best of 5.
# Prints ratios measured in this run; it reports, it does not gate.
set -euo pipefail
cd "$(dirname "$0")/.."
for p in time ffmpeg curl; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || \
    { apt-get update -qq && apt-get install -y -qq "$p" >/dev/null; }
done
SHORT=media/out/cbr-128k-44k.mp3
AAC=media/out/track.m4a
LONG=media/long/long-4h-48k.mp3
[ -f "$SHORT" ] || media/make-media.sh media/out >/dev/null
[ -f "$LONG" ] || media/make-media.sh --long media/long >/dev/null
BIN=$(swift build -c release --show-bin-path)
TMP=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$TMP"' EXIT
NAMES=(short aac long)
declare -A SRC=([short]=$SHORT [aac]=$AAC [long]=$LONG)
declare -A EXT=([short]=mp3 [aac]=m4a [long]=mp3)
declare -A LABEL=([short]="library 34 s 128k MP3" [aac]="library 52 s AAC M4A" [long]="4-hour 48 kHz MP3")
for name in "${NAMES[@]}"; do
  src=${SRC[$name]}
  ln "$src" "$TMP/$name.${EXT[$name]}" 2>/dev/null || cp "$src" "$TMP/$name.${EXT[$name]}"
  mkdir -p "$TMP/$name-ts" "$TMP/$name-fmp4"
  ffmpeg -nostdin -v error -i "$src" -map 0:a -c copy -f hls -hls_time 6 -hls_playlist_type vod "$TMP/$name-ts/index.m3u8"
  ffmpeg -nostdin -v error -i "$src" -map 0:a -c copy -f hls -hls_time 6 -hls_playlist_type vod \
    -hls_segment_type fmp4 "$TMP/$name-fmp4/index.m3u8"
done
"$BIN/streamd" "$TMP" --port 0 --quiet > "$TMP/streamd.out" 2>/dev/null &
SERVER=$!
for _ in $(seq 100); do grep -q listening "$TMP/streamd.out" 2>/dev/null && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on \(http[^ ]*\)\/$/\1/p' "$TMP/streamd.out")
cat "$TMP"/*/* "$TMP"/*.mp3 "$TMP"/*.m4a > /dev/null

# best of 5 ttfa_ms, and the wall time of that run, for one URL
ttfa() {
  local url=$1 best="" wall="" i line t w
  for i in 1 2 3 4 5; do
    line=$( { /usr/bin/time -f "%e" "$BIN/streamplay" "$url" --output null --duration 0.05 --stats 2> "$TMP/err" | tail -1; } )
    t=$(python3 -c "import json,sys; v=json.loads(sys.argv[1]).get('ttfa_ms'); print(v if v is not None else 'nan')" "$line" 2>/dev/null || echo nan)
    w=$(tail -1 "$TMP/err")
    if [ "$t" != nan ] && { [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$t" "$best"; }; then
      best=$t; wall=$w
    fi
  done
  echo "${best:-nan} ${wall:-nan}"
}
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print('%.2f' % (a / b) if b >= 0.01 else 'n/a')" "$1" "$2" 2>/dev/null || echo n/a; }

printf '%-58s %12s %12s %8s\n' "time to first audio, best of 5 (streamd on loopback)" "HLS" "plain HTTP" "ratio"
for name in "${NAMES[@]}"; do
  read -r plain plain_wall <<< "$(ttfa "$BASE/media/$name.${EXT[$name]}")"
  for kind in ts fmp4; do
    read -r hls hls_wall <<< "$(ttfa "$BASE/media/$name-$kind/index.m3u8")"
    printf '%-58s %10sms %10sms %8s\n' "ttfa_ms, ${LABEL[$name]}, ffmpeg HLS ($kind)" "$hls" "$plain" "$(ratio "$hls" "$plain")"
    printf '%-58s %11ss %11ss %8s\n' "  whole process (start to exit after 50 ms of audio)" "$hls_wall" "$plain_wall" "$(ratio "$hls_wall" "$plain_wall")"
  done
  # streamd's own HLS (segments cut on the fly from the seek index), when this streamd has it.
  own="$BASE/hls/$name.${EXT[$name]}/index.m3u8"
  if curl -sf -o /dev/null "$own"; then
    curl -sf -o /dev/null "$own"
    read -r hls hls_wall <<< "$(ttfa "$own")"
    printf '%-58s %10sms %10sms %8s\n' "ttfa_ms, ${LABEL[$name]}, streamd /hls/ (on the fly)" "$hls" "$plain" "$(ratio "$hls" "$plain")"
    printf '%-58s %11ss %11ss %8s\n' "  whole process (start to exit after 50 ms of audio)" "$hls_wall" "$plain_wall" "$(ratio "$hls_wall" "$plain_wall")"
  fi
done
segments=$(grep -c '^#EXTINF' "$TMP/long-ts/index.m3u8")
echo "HLS's first audio needs the playlist (the 4-hour one lists $segments segments), then a whole first segment (6 s of audio), where plain HTTP starts decoding from the first bytes of one response."
