#!/usr/bin/env bash
# Issue 26's waveform figures, each against a named peer measured in the same run (it reports,
# it does not gate):
#   - the pyramid's build time per hour of audio: `streamd` computing `/api/waveform/<id>` for a
#     1-hour MP3 and a 1-hour FLAC (the decode worker's and the server's CPU, and the wall time
#     from the first request to `complete`), against `ffmpeg -i FILE -f null -` decoding the same
#     file (median of three interleaved pairs; goal <= 1.1x: the pyramid rides on the decode);
#   - `/api/waveform` latency under 64 connections (wrk, 2 threads, WRK_SECONDS each) at width
#     1000 over the cached hour: the whole track, and random zoom windows (bench/wrk/waveform.lua);
#     goal p99 <= 5 ms; the peer: nginx serving the whole-track answer's bytes as a static file.
# Each line carries the load average: the machine is shared.
# usage: bench/waveform.sh   (STREAMD_BIN=DIR with a release streamd; WAVEFORM_DIR=DIR keeps the inputs)
set -euo pipefail
cd "$(dirname "$0")/.."
for p in ffmpeg time wrk nginx-light curl python3; do
  command -v "${p%-light}" >/dev/null 2>&1 || dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || \
    { apt-get update -qq && apt-get install -y -qq "$p" >/dev/null; }
done
if [ -n "${STREAMD_BIN:-}" ]; then BIN=$STREAMD_BIN; else
  swift build -c release --product streamd >/dev/null
  BIN=$(swift build -c release --show-bin-path)
fi
SECONDS_EACH=${WRK_SECONDS:-10}
WORK=$(mktemp -d)
INPUTS=${WAVEFORM_DIR:-$WORK/inputs}
PID=
NGINX_PID=
trap '[ -z "$PID" ] || kill "$PID" 2>/dev/null || true; [ -z "$NGINX_PID" ] || kill "$NGINX_PID" 2>/dev/null || true; rm -rf "$WORK"' EXIT
HZ=$(getconf CLK_TCK)
load() { awk '{ print $1 }' /proc/loadavg; }

# One hour of music-like material: five minutes (chords, a sweep, noise at -20 dB) twelve times.
mkdir -p "$INPUTS/library"
if [ ! -s "$INPUTS/library/hour.mp3" ] || [ ! -s "$INPUTS/library/hour.flac" ]; then
  echo "waveform: generating one hour of MP3 and FLAC in $INPUTS"
  ffmpeg -nostdin -v error -y -f lavfi -i "sine=f=220:d=300,aformat=channel_layouts=stereo" -f lavfi -i "sine=f=277:d=300" \
    -f lavfi -i "anoisesrc=d=300:c=pink:a=0.1" -filter_complex "[0][1][2]amix=inputs=3,volume=1.5" -ar 44100 -ac 2 "$INPUTS/five.wav"
  ffmpeg -nostdin -v error -y -i "$INPUTS/five.wav" -c:a libmp3lame -b:a 192k "$INPUTS/five.mp3"
  ffmpeg -nostdin -v error -y -stream_loop 11 -i "$INPUTS/five.mp3" -c copy "$INPUTS/library/hour.mp3"
  ffmpeg -nostdin -v error -y -stream_loop 11 -i "$INPUTS/five.wav" -c:a flac "$INPUTS/library/hour.flac"
fi

# A fresh streamd (new database, so nothing is cached; no seek indexes built ahead, which would
# walk the hour files meanwhile) on the hour files; sets PID and BASE.
start() {
  [ -z "$PID" ] || { kill "$PID"; wait "$PID" 2>/dev/null || true; }
  rm -rf "$WORK/db" && mkdir -p "$WORK/db"
  "$BIN/streamd" "$INPUTS/library" --port 0 --index-ahead 0 --db "$WORK/db/catalog.db" >"$WORK/streamd.out" 2>"$WORK/streamd.err" &
  PID=$!
  for _ in $(seq 500); do grep -q '^listening' "$WORK/streamd.out" 2>/dev/null && break; sleep 0.02; done
  BASE=$(sed -n 's|^listening on \(http://[^/]*\)/.*|\1|p' "$WORK/streamd.out")
  for _ in $(seq 1500); do
    curl -sf "$BASE/api/status" | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if s["scans"] >= 1 and not s["scanning"] else 1)' && break
    sleep 0.02
  done
}
id_of() { curl -sf "$BASE/api/tracks" | python3 -c "import json,sys; print(next(t['id'] for t in json.load(sys.stdin) if t['path'] == '$1'))"; }
# utime+stime of the process, plus those of its reaped children (the decode workers).
ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat"; }
children() { cat /proc/"$1"/task/*/children 2>/dev/null | tr -d ' \n'; }

# streamd computing one file's waveform: appends "cpu wall load" (seconds) to FILE, from the
# first request to `complete` (and the worker reaped, so its CPU is counted). Not in a
# subshell: `start` sets PID and BASE for the rest of the script.
ours() { # file output
  start
  local id before t0 t1
  id=$(id_of "$1")
  before=$(ticks "$PID")
  t0=$(date +%s%N)
  curl -sf -o /dev/null "$BASE/api/waveform/$id"
  until curl -sf "$BASE/api/waveform/$id?width=1" | grep -q '"complete":true'; do sleep 0.05; done
  t1=$(date +%s%N)
  for _ in $(seq 100); do [ -z "$(children "$PID")" ] && break; sleep 0.01; done
  # The wall time as streamd measured it (the build thread, start to end: no polling in it);
  # the request-to-complete time seen by curl (at most 50 ms late) if the line is missing.
  local built
  built=$(sed -n 's/.*waveform: .*s of audio in \([0-9.]*\) s.*/\1/p' "$WORK/streamd.err" | tail -1)
  awk -v t="$(( $(ticks "$PID") - before ))" -v hz="$HZ" -v ns="$((t1 - t0))" -v built="$built" -v load="$(load)" \
    'BEGIN { printf "%.2f %.2f %s\n", t / hz, (built != "" ? built : ns / 1e9), load }' >>"$2"
}
peer() { # file output
  /usr/bin/time -f '%U %S %e' -o "$WORK/peer.time" ffmpeg -nostdin -v error -i "$INPUTS/library/$1" -f null - 2>/dev/null
  awk -v load="$(load)" '{ printf "%.2f %.2f %s\n", $1 + $2, $3, load }' "$WORK/peer.time" >>"$2"
}
median() { sort -n | sed -n 2p; }
ratio() { python3 -c "print('%.2f' % ($1 / $2) if $2 > 0 else 'n/a')"; }

echo "waveform: pyramid build against ffmpeg -f null, one hour each, three interleaved pairs; $(uptime)"
for f in hour.mp3 hour.flac; do
  : >"$WORK/ours.$f"; : >"$WORK/peer.$f"
  for i in 1 2 3; do
    peer "$f" "$WORK/peer.$f"
    ours "$f" "$WORK/ours.$f"
  done
  oc=$(awk '{ print $1 }' "$WORK/ours.$f" | median); ow=$(awk '{ print $2 }' "$WORK/ours.$f" | median)
  pc=$(awk '{ print $1 }' "$WORK/peer.$f" | median); pw=$(awk '{ print $2 }' "$WORK/peer.$f" | median)
  printf '  %-10s streamd CPU %6.2f s, wall %6.2f s | ffmpeg CPU %6.2f s, wall %6.2f s | ratio CPU %sx, wall %sx (loads %s)\n' \
    "$f" "$oc" "$ow" "$pc" "$pw" "$(ratio "$oc" "$pc")" "$(ratio "$ow" "$pw")" \
    "$(awk '{ printf "%s ", $3 }' "$WORK/ours.$f" "$WORK/peer.$f")"
done

# Latency over the cached hour (its FLAC, computed by the last round).
ID=$(id_of hour.flac)
curl -sf -o "$WORK/whole.json" "$BASE/api/waveform/$ID?width=1000"
grep -q '"complete":true' "$WORK/whole.json" || { echo "the hour's waveform is not complete" >&2; exit 1; }
mkdir -p "$WORK/nginx/root" && cp "$WORK/whole.json" "$WORK/nginx/root/whole.json"
NGINX_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
user_line=""; [ "$(id -u)" = 0 ] && user_line="user root;"
cat >"$WORK/nginx/nginx.conf" <<CONF
$user_line
worker_processes 2;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off; sendfile on; keepalive_requests 1000000; default_type application/json;
    client_body_temp_path $WORK/nginx/body; proxy_temp_path $WORK/nginx/proxy; fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi; scgi_temp_path $WORK/nginx/scgi;
    server { listen 127.0.0.1:$NGINX_PORT; root $WORK/nginx/root; }
}
CONF
nginx -p "$WORK/nginx" -e "$WORK/nginx/error.log" -c "$WORK/nginx/nginx.conf" </dev/null >/dev/null 2>&1 &
NGINX_PID=$!
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$NGINX_PORT/whole.json" && break; sleep 0.05; done

run() { # name url [wrk options]: p50, p99, requests/s, errors, the load
  local name=$1 url=$2; shift 2
  local out
  out=$(wrk -t2 -c64 -d"${SECONDS_EACH}s" --latency "$@" "$url" 2>&1)
  printf '  %-48s p50 %-9s p99 %-9s %9s req/s %s (load %s)\n' "$name" \
    "$(awk '$1 == "50%" { print $2 }' <<<"$out")" "$(awk '$1 == "99%" { print $2 }' <<<"$out")" \
    "$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")" \
    "$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr '\n' ' ' || echo 'no errors')" "$(load)"
  awk '$1 == "99%" { v = $2; if (v ~ /us$/) m = v / 1000; else if (v ~ /ms$/) m = v + 0; else m = v * 1000; print m }' <<<"$out" >"$WORK/p99"
}
echo "waveform: /api/waveform, width 1000, 64 connections, 2 threads, ${SECONDS_EACH} s each; $(wc -c <"$WORK/whole.json") bytes"
run "streamd: the whole hour" "$BASE/api/waveform/$ID?width=1000"
ours_p99=$(cat "$WORK/p99")
WAVEFORM_ID=$ID WAVEFORM_SECONDS=3600 run "streamd: random zoom windows" "$BASE" -s bench/wrk/waveform.lua
zoom_p99=$(cat "$WORK/p99")
run "peer: nginx, the same bytes as a static file" "http://127.0.0.1:$NGINX_PORT/whole.json"
peer_p99=$(cat "$WORK/p99")
echo "  p99 ratio against nginx: whole $(ratio "$ours_p99" "$peer_p99")x, zoom $(ratio "$zoom_p99" "$peer_p99")x (goal: p99 <= 5 ms)"
