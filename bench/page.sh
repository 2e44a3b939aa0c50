#!/usr/bin/env bash
# The page's figures (issue 26) in headless Chromium against streamd on loopback: the gap at each
# join of MP3, AAC and FLAC albums cut from one 210 Hz sine (samples, from the sine's phase; goal
# 0) against the peer, the page's former player (one <audio> per track, the next one started at
# `ended`) on the same albums in the same run; the time from the album click to the first sound
# (goal <= 300 ms); p95 frame interval while four waveforms zoom for 10 s at 1,000 and 10,000
# visible pairs (goal <= 16.7 ms). The same join figures for WAV, Vorbis and MP3-WAV-FLAC albums,
# which play through Web Audio. Prints the figures measured in this run and `uptime`.
set -euo pipefail
cd "$(dirname "$0")/.."
# BIN_DIR=.build/debug to measure a build at hand instead of building the release one.
if [ -z "${BIN_DIR:-}" ]; then
  swift build -c release --product streamd >/dev/null
  BIN_DIR=$(swift build -c release --show-bin-path)
fi
BIN=$BIN_DIR
TMP=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$TMP"' EXIT
mkdir -p "$TMP/lib/mp3" "$TMP/lib/aac" "$TMP/lib/flac" "$TMP/lib/wav" "$TMP/lib/ogg" "$TMP/lib/mixed"
sox -R -n -r 44100 -c 2 -b 16 "$TMP/tone.wav" synth 4.3 sine 210 gain -6
start=0; n=0
for frames in 57331 66157 61111; do
  n=$((n + 1))
  sox "$TMP/tone.wav" "$TMP/cut.wav" trim "${start}s" "${frames}s"
  start=$((start + frames))
  lame --silent -b 192 --tt "Tone $n" --ta "Tone Artist" --tl "MP3 Tone" --tn "$n" "$TMP/cut.wav" "$TMP/lib/mp3/0$n.mp3"
  ffmpeg -nostdin -loglevel error -y -i "$TMP/cut.wav" -c:a aac -b:a 160k -movie_timescale 44100 -metadata title="Tone $n" \
    -metadata artist="Tone Artist" -metadata album="AAC Tone" -metadata track="$n" "$TMP/lib/aac/0$n.m4a"
  flac --silent -f -T "TITLE=Tone $n" -T "ARTIST=Tone Artist" -T "ALBUM=FLAC Tone" -T "TRACKNUMBER=$n" \
    -o "$TMP/lib/flac/0$n.flac" "$TMP/cut.wav"
  # Web Audio albums: WAV, Vorbis, and MP3-WAV-FLAC (one path for a queue with any such track).
  for kind in wav ogg; do
    album=$([ $kind = wav ] && echo "WAV Tone" || echo "Vorbis Tone")
    codec=$([ $kind = wav ] && echo pcm_s16le || echo libvorbis)
    ffmpeg -nostdin -loglevel error -y -i "$TMP/cut.wav" -c:a $codec -metadata title="Tone $n" -metadata artist="Tone Artist" \
      -metadata album="$album" -metadata track="$n" "$TMP/lib/$kind/0$n.$kind"
  done
  case $n in
    1) lame --silent -b 192 --tt "Tone $n" --ta "Tone Artist" --tl "Mixed Tone" --tn "$n" "$TMP/cut.wav" "$TMP/lib/mixed/0$n.mp3" ;;
    2) ffmpeg -nostdin -loglevel error -y -i "$TMP/cut.wav" -c:a pcm_s16le -metadata title="Tone $n" -metadata artist="Tone Artist" \
         -metadata album="Mixed Tone" -metadata track="$n" "$TMP/lib/mixed/0$n.wav" ;;
    3) flac --silent -f -T "TITLE=Tone $n" -T "ARTIST=Tone Artist" -T "ALBUM=Mixed Tone" -T "TRACKNUMBER=$n" \
         -o "$TMP/lib/mixed/0$n.flac" "$TMP/cut.wav" ;;
  esac
done
"$BIN/streamd" "$TMP/lib" --port 0 --quiet --db "$TMP/streamd.db" > "$TMP/streamd.out" &
SERVER=$!
for _ in $(seq 100); do grep -q listening "$TMP/streamd.out" 2>/dev/null && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on \(http[^ ]*\)\/$/\1/p' "$TMP/streamd.out")
for _ in $(seq 100); do
  [ "$(curl -s "$BASE/api/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tracks"])')" = 18 ] && break; sleep 0.1
done
python3 Tests/browser/check_player.py "$BASE" --gapless "MP3 Tone,AAC Tone,FLAC Tone" --library "$TMP/lib" \
  --peer "MP3 Tone,AAC Tone,FLAC Tone" --frames 1000,10000 --frame-seconds 10 --strict-frames | grep -E '^(figure|FAIL|[0-9]+ passed)' || true
python3 Tests/browser/check_player.py "$BASE" --gapless "WAV Tone,Vorbis Tone,Mixed Tone" --library "$TMP/lib" --web-audio \
  --peer "WAV Tone,Vorbis Tone" | grep -E '^(figure|FAIL|[0-9]+ passed)' || true
uptime
