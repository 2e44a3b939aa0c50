#!/usr/bin/env bash
# Issue 24's figures for transcoding on request (/media/<path>?format=opus|mp3), each against a
# peer measured in the same run (it reports, it does not gate):
#   - encode speed per core: seconds of audio per CPU second of streamd plus its decode worker,
#     against `ffmpeg -c:a libopus -b:a 128k` and `ffmpeg -c:a libmp3lame -b:a 192k` on the same
#     5-minute FLAC (goal >= 1.0x ffmpeg);
#   - time to first byte of a transcode (goal <= 50 ms; median of 5) and of `offset=1800` into a
#     1-hour FLAC whose seek index is built (goal <= 80 ms; median of 5), and the same into a
#     1-hour 128k MP3 (the decoder starts at its index point; the FLAC row is its peer);
#   - concurrent 128 kbit/s Opus encodes held at real time (each listener gets its 20 s track in
#     at most 20 s): N = 10, 20, 40, 60, the largest held is reported (goal >= 40);
#   - a cache hit against a plain file of the same size (throughput, median of 15; goal >= 0.9x);
#   - the loudness of a gain=track transcode (ebur128) against ReplayGain 2's -18 LUFS, the tag
#     written by loudgain (goal within 0.5 LU).
# usage: bench/transcode.sh   (STREAMD_BIN=DIR with a release streamd; SECTIONS="ttfb hit" runs only
#        those of: speed ttfb concurrent hit gain)
set -euo pipefail
SECTIONS=${SECTIONS:-all}
want() { [ "$SECTIONS" = all ] || [[ " $SECTIONS " == *" $1 "* ]]; }
cd "$(dirname "$0")/.."
scripts/deps.sh
if [ -n "${STREAMD_BIN:-}" ]; then BIN=$STREAMD_BIN; else
  swift build -c release --product streamd >/dev/null
  BIN=$(swift build -c release --show-bin-path)
fi
TMP=$(mktemp -d)
SERVER=
trap 'kill $SERVER 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$TMP"' EXIT
mkdir -p "$TMP/music" "$TMP/cache"
echo "transcode: generating inputs in $TMP"
# Five minutes of music-like material (chords, a sweep, noise), and an hour of the same kind.
sox -n -r 44100 -b 16 -c 2 "$TMP/src.wav" synth 300 sine 220 sine 277 sine 330 sine 60-4000 pinknoise \
  remix 1,2,3v0.5,4v0.3,5v0.1 1,3,4v0.5,2v0.3,5v0.1 gain -n -3 2>/dev/null
flac -s -f -5 -o "$TMP/music/cd.flac" "$TMP/src.wav"
for k in 1 2 3 4 5 6; do cp "$TMP/music/cd.flac" "$TMP/music/cd$k.flac"; done
sox -n -r 44100 -b 16 -c 2 "$TMP/long.wav" synth 3600 sine 220 sine 60-4000 pinknoise remix 1,2v0.5,3v0.1 1,2v0.3,3v0.1 \
  gain -n -3 2>/dev/null
flac -s -f -5 -o "$TMP/music/long.flac" "$TMP/long.wav"
ffmpeg -nostdin -v error -y -i "$TMP/long.wav" -c:a libmp3lame -b:a 128k "$TMP/music/long.mp3"; rm "$TMP/long.wav"
sox "$TMP/src.wav" "$TMP/short.wav" trim 0 20
flac -s -f -5 -o "$TMP/short.flac" "$TMP/short.wav"
for n in $(seq 1 60); do cp "$TMP/short.flac" "$TMP/music/short$n.flac"; done
cp "$TMP/music/cd.flac" "$TMP/music/loud.flac"
loudgain -q -s e "$TMP/music/loud.flac" >/dev/null 2>&1 || loudgain -s e "$TMP/music/loud.flac" >/dev/null

"$BIN/streamd" "$TMP/music" --host 127.0.0.1 --port 0 --quiet --transcode-cache "$TMP/cache" --transcode-jobs 64 \
  --index-ahead 600 --db "$TMP/db.sqlite" > "$TMP/listen" 2>"$TMP/server.log" &
SERVER=$!
for _ in $(seq 1 100); do grep -q listening "$TMP/listen" 2>/dev/null && break; sleep 0.1; done
URL=$(sed -n 's/^listening on \(.*\)\/$/\1/p' "$TMP/listen")
for _ in $(seq 1 600); do
  n=$(curl -s "$URL/api/status" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("tracks",0))' 2>/dev/null || echo 0)
  [ "$n" -ge 70 ] && break; sleep 0.2
done

ratio() { python3 -c "print('%.2f' % ($1 / $2) if $2 > 0 else 'n/a')"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
proc_cpu() { # CPU seconds of streamd and its reaped children (the decode workers)
  awk '{printf "%.3f", ($14 + $15 + $16 + $17) / 100}' "/proc/$SERVER/stat"
}

# The hour's seek index first (as a client's first seek would have had it built), so no
# analysis runs during the measurements.
curl -s -o /dev/null "$URL/api/index/long.flac"
curl -s -o /dev/null "$URL/api/index/long.mp3"

# Encode speed per core.
if want speed; then
/usr/bin/time -f "%U %S" -o "$TMP/ff_opus.time" ffmpeg -nostdin -v error -y -i "$TMP/music/cd.flac" -c:a libopus -b:a 128k "$TMP/ff.opus"
/usr/bin/time -f "%U %S" -o "$TMP/ff_mp3.time" ffmpeg -nostdin -v error -y -i "$TMP/music/cd.flac" -c:a libmp3lame -b:a 192k "$TMP/ff.mp3"
ff_opus=$(awk '{print $1 + $2}' "$TMP/ff_opus.time"); ff_mp3=$(awk '{print $1 + $2}' "$TMP/ff_mp3.time")
before=$(proc_cpu); curl -s -o /dev/null "$URL/media/cd1.flac?format=opus&bitrate=128"; sleep 0.3; after=$(proc_cpu)
our_opus=$(python3 -c "print($after - $before)")
before=$(proc_cpu); curl -s -o /dev/null "$URL/media/cd2.flac?format=mp3&bitrate=192"; sleep 0.3; after=$(proc_cpu)
our_mp3=$(python3 -c "print($after - $before)")
echo "encode opus 128k: streamd $(python3 -c "print('%.0f' % (300 / $our_opus))")x real time per core, ffmpeg $(python3 -c "print('%.0f' % (300 / $ff_opus))")x: ratio $(ratio "$ff_opus" "$our_opus") (goal >= 1.0)"
echo "encode mp3 192k: streamd $(python3 -c "print('%.0f' % (300 / $our_mp3))")x real time per core, ffmpeg $(python3 -c "print('%.0f' % (300 / $ff_mp3))")x: ratio $(ratio "$ff_mp3" "$our_mp3") (goal >= 1.0)"
fi

# Time to first byte: a fresh encode each time (another bitrate, so neither cache nor join).
if want ttfb; then
for b in 96 100 104 108 112; do
  curl -s -o /dev/null -w '%{time_starttransfer}\n' --max-time 3 "$URL/media/cd3.flac?format=opus&bitrate=$b" || true
done | median > "$TMP/ttfb"
echo "ttfb opus: $(python3 -c "print('%.1f' % (1000 * $(cat "$TMP/ttfb")))") ms (goal <= 50)"
for b in 96 100 104 108 112; do
  curl -s -o /dev/null -w '%{time_starttransfer}\n' --max-time 5 "$URL/media/long.flac?format=opus&bitrate=$b&offset=1800" || true
done | median > "$TMP/seek"
echo "ttfb offset=1800 of 1 h: $(python3 -c "print('%.1f' % (1000 * $(cat "$TMP/seek")))") ms (goal <= 80)"
for b in 96 100 104 108 112; do
  curl -s -o /dev/null -w '%{time_starttransfer}\n' --max-time 5 "$URL/media/long.mp3?format=opus&bitrate=$b&offset=1800" || true
done | median > "$TMP/seek_mp3"
echo "ttfb offset=1800 of a 1 h MP3: $(python3 -c "print('%.1f' % (1000 * $(cat "$TMP/seek_mp3")))") ms, $(ratio "$(cat "$TMP/seek_mp3")" "$(cat "$TMP/seek")")x the FLAC's (goal <= 80 ms)"
# The first byte above is the response head; the first audio (4 KiB past the head: the header
# pages and the first audio page) shows where the decoder started.
first_audio() { python3 - "$URL" "$1" <<'PY'
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); s = socket.create_connection((u.hostname, u.port)); t = time.perf_counter()
s.sendall(("GET %s HTTP/1.0\r\nHost: x\r\n\r\n" % sys.argv[2]).encode()); data = b""
while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < 4096:
    chunk = s.recv(65536)
    if not chunk: break
    data += chunk
print(time.perf_counter() - t)
PY
}
for src in long.flac long.mp3; do
  for b in 97 101 105 109 113; do first_audio "/media/$src?format=opus&bitrate=$b&offset=1800"; done | median > "$TMP/audio_$src"
done
echo "first audio of a fresh encode (4 KiB past the head, through the spool reads): $(for b in 98 102 106 110 114; do first_audio "/media/cd3.flac?format=opus&bitrate=$b"; done | median | python3 -c "import sys; print('%.1f' % (1000 * float(sys.stdin.read())))") ms"
echo "first audio offset=1800 of 1 h: FLAC $(python3 -c "print('%.1f' % (1000 * $(cat "$TMP/audio_long.flac")))") ms, MP3 $(python3 -c "print('%.1f' % (1000 * $(cat "$TMP/audio_long.mp3")))") ms: $(ratio "$(cat "$TMP/audio_long.mp3")" "$(cat "$TMP/audio_long.flac")")x the FLAC's"

fi

# Concurrent encodes held at real time: each listener must have its 20 s within 20 s.
if want concurrent; then
held=0; b=127
for n in 10 20 40 60; do
  rm -f "$TMP"/conc.*
  b=$((b + 1))    # 128, 129, 130, 131: another key each round, so no cache hit
  for i in $(seq 1 "$n"); do
    ( curl -s -o /dev/null --max-time 60 -w '%{time_total}\n' "$URL/media/short$i.flac?format=opus&bitrate=$b" > "$TMP/conc.$i" || true ) &
  done
  wait $(jobs -p | grep -v "^$SERVER$") 2>/dev/null || true
  worst=$(cat "$TMP"/conc.* | sort -n | tail -1)
  ok=$(python3 -c "print(1 if $worst <= 20.0 else 0)")
  echo "concurrent $n opus 128k encodes: slowest listener got 20 s of audio in ${worst} s ($(python3 -c "print('%.2f' % (20 / $worst))")x real time)"
  [ "$ok" = 1 ] && held=$n || break
done
echo "concurrent encodes held at real time: $held (goal >= 40)"
fi

# Cache hit against a plain file of the same size.
if want hit; then
curl -s -o "$TMP/music/plain.opus" "$URL/media/cd4.flac?format=opus"
sleep 0.5
curl -s -o /dev/null "$URL/media/cd4.flac?format=opus"
for i in $(seq 1 15); do curl -s -o /dev/null -w '%{speed_download}\n' "$URL/media/cd4.flac?format=opus"; done | median > "$TMP/hit"
sleep 1   # the copy in the folder is scanned in
for i in $(seq 1 15); do curl -s -o /dev/null -w '%{speed_download}\n' "$URL/media/plain.opus"; done | median > "$TMP/plain"
echo "cache hit: $(python3 -c "print('%.0f' % ($(cat "$TMP/hit") / 1e6))") MB/s, plain file $(python3 -c "print('%.0f' % ($(cat "$TMP/plain") / 1e6))") MB/s: ratio $(ratio "$(cat "$TMP/hit")" "$(cat "$TMP/plain")") (goal >= 0.9)"
fi

# Loudness with the ReplayGain baked in (loudgain's tag: -18 LUFS).
if want gain; then
sleep 1
curl -s -o "$TMP/gain.opus" "$URL/media/loud.flac?format=opus&gain=track"
lufs=$(ffmpeg -nostdin -v info -i "$TMP/gain.opus" -af ebur128 -f null - 2>&1 | sed -n 's/^ *I: *\(-*[0-9.]*\) LUFS/\1/p' | tail -1)
echo "gain=track loudness: $lufs LUFS against -18: $(python3 -c "print('%.2f' % abs($lufs + 18))") LU off (goal <= 0.5)"
fi
echo "load: $(uptime)"
