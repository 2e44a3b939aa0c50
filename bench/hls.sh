#!/usr/bin/env bash
# Server CPU per HLS segment: streamd generating each segment on the fly (--hls-cache-mb 0, so every
# request cuts the frames from the file and writes the ID3 tag or moof), against the same segments
# packaged by `streamd package` and served as static files -- by streamd itself (the named peer:
# same HTTP stack, so the difference is the segment generation) and by nginx (for scale). A third
# streamd row serves from its segment cache (every segment requested twice, the second pass timed).
# Tracks: the 4-hour 48 kHz MP3 (packed .mp3, ~2,600 distinct segments), the library's ADTS (packed
# .aac) and M4A (fMP4 .m4s), each fetched in passes over one keep-alive connection by curl.
# CPU is utime+stime of the server process(es) from /proc, before and after. It reports, it does not gate.
# Environment: STREAMD=path/to/streamd (default: the release build), BENCH_REQUESTS (at least this many
# segment requests per track and row, default 3000; short tracks are fetched in more passes).
set -uo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${BENCH_REQUESTS:-3000}
PASSES=1
LONG_SRC=media/long/long-4h-48k.mp3
log() { echo "hls.sh: $*" >&2; }
die() { log "$*"; exit 1; }

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
installed nginx-light || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null; }
for tool in nginx curl python3; do command -v "$tool" >/dev/null || die "missing tool: $tool"; done
[ -f media/out/track.m4a ] || media/make-media.sh media/out >/dev/null
[ -f "$LONG_SRC" ] || media/make-media.sh --long media/long >/dev/null
if [ -n "${STREAMD:-}" ]; then BIN=$STREAMD; else BIN="$(swift build -c release --show-bin-path 2>/dev/null)/streamd"; fi
[ -x "$BIN" ] || die "no streamd binary at $BIN (run: swift build -c release)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/streamd-hls-bench.XXXXXX") || die "mktemp failed"
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT

LIB=$TMP/lib
mkdir -p "$LIB"
for f in "$LONG_SRC" media/out/adts.aac media/out/track.m4a; do
  ln "$f" "$LIB/$(basename "$f")" 2>/dev/null || cp "$f" "$LIB/" || die "cannot copy $f"
done
"$BIN" package "$LIB" --out "$TMP/pkg" --quiet >/dev/null || die "streamd package failed"

TICK=$(getconf CLK_TCK)
cpu_ticks() { # pids...: utime+stime summed
  local total=0 pid
  for pid in "$@"; do
    read -r -a f < <(sed 's/^.*) //' "/proc/$pid/stat")
    total=$((total + f[11] + f[12]))
  done
  echo "$total"
}
start_streamd() { # folder extra-args... → sets SPORT, SPID
  "$BIN" "$@" --host 127.0.0.1 --port 0 --quiet </dev/null >"$TMP/s.out" 2>"$TMP/s.err" &
  SPID=$!
  PIDS+=("$SPID")
  SPORT=""
  for _ in $(seq 600); do
    if [[ $(head -n 1 "$TMP/s.out" 2>/dev/null) =~ :([0-9]+)/$ ]]; then SPORT=${BASH_REMATCH[1]}; return 0; fi
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.1
  done
  die "streamd did not start: $(tail -3 "$TMP/s.err")"
}
stop() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
NPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
user_line=""; [ "$(id -u)" = 0 ] && user_line="user root;"
mkdir -p "$TMP/nginx"
cat >"$TMP/nginx/nginx.conf" <<CONF
$user_line
worker_processes 1;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 256; }
http {
    types { application/vnd.apple.mpegurl m3u8; audio/mpeg mp3; audio/aac aac; audio/mp4 m4s mp4; }
    access_log off; sendfile on; tcp_nodelay on; keepalive_requests 1000000;
    client_body_temp_path $TMP/nginx/body; proxy_temp_path $TMP/nginx/proxy; fastcgi_temp_path $TMP/nginx/fastcgi;
    uwsgi_temp_path $TMP/nginx/uwsgi; scgi_temp_path $TMP/nginx/scgi;
    server { listen 127.0.0.1:$NPORT; root $TMP/pkg; }
}
CONF
nginx -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" </dev/null >/dev/null 2>&1 &
NPID=$!
PIDS+=("$NPID")
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$NPORT/index.html" && break; sleep 0.1; done
curl -sf -o /dev/null "http://127.0.0.1:$NPORT/index.html" || die "nginx did not start: $(tail -3 "$TMP/nginx/error.log")"

# URL list of every segment of one track (the playlist's URIs, made absolute), written as a curl config.
urls() { # base-url track playlist-text-file → curl config on stdout
  local base=$1 track=$2 list=$3 pass
  for pass in $(seq "$PASSES"); do
    grep -v '^#' "$list" | sed "s|^|url = \"$base/$track/|; s|\$|\"\noutput = /dev/null|"
  done
}
measure() { # label base pids... → µs of server CPU per segment, over $PASSES passes of every segment of $TRACK
  local base=$1; shift
  urls "$base" "$TRACK" "$TMP/list" >"$TMP/curl.cfg"
  local n; n=$(grep -c '^url' "$TMP/curl.cfg")
  local before; before=$(cpu_ticks "$@")
  local t0; t0=$(date +%s%N)
  curl -s -K "$TMP/curl.cfg" || log "warning: curl failed on $base"
  local t1; t1=$(date +%s%N)
  local after; after=$(cpu_ticks "$@")
  python3 -c "print(f'{($after-$before)*1e6/$TICK/$n:.1f} {($t1-$t0)/1e3/$n:.1f}')"
}

printf '%-34s %6s %26s %26s %26s %22s %9s %9s\n' "track (segment type)" "segs" "streamd on the fly" \
  "streamd cached" "streamd static (peer)" "nginx static" "fly/peer" "fly/nginx"
printf '%-34s %6s %26s %26s %26s %22s %9s %9s\n' "" "" "cpu µs/seg (wall µs)" "cpu µs/seg (wall µs)" \
  "cpu µs/seg (wall µs)" "cpu µs/seg (wall µs)" "" ""
start_streamd "$LIB" --hls-cache-mb 0; FLY_PID=$SPID; FLY=http://127.0.0.1:$SPORT
start_streamd "$LIB" --hls-cache-mb 2048; CACHE_PID=$SPID; CACHED=http://127.0.0.1:$SPORT
start_streamd "$TMP/pkg"; STATIC_PID=$SPID; STATIC=http://127.0.0.1:$SPORT/media
NGINX_WORKERS=$(pgrep -P "$NPID" | tr '\n' ' ')
for spec in "long-4h-48k.mp3|packed MP3, 4 h 48 kHz" "adts.aac|packed AAC (ADTS)" "track.m4a|fMP4 (M4A)"; do
  TRACK=hls/${spec%%|*}
  label="${spec#*|}"
  cp "$TMP/pkg/$TRACK/index.m3u8" "$TMP/list"
  segs=$(grep -vc '^#' "$TMP/list")
  PASSES=$(( (REQUESTS + segs - 1) / segs ))
  # Same bytes everywhere (spot check on segment 1), and the static files in the page cache.
  a=$(curl -s "$FLY/$TRACK/seg-1.${spec##*.}" | sha1sum); b=$(curl -s "$STATIC/$TRACK/seg-1.${spec##*.}" | sha1sum)
  [ "$a" = "$b" ] || log "warning: $TRACK seg-1 differs between on-the-fly and packaged"
  [[ $TRACK == *.m4a ]] && { a=$(curl -s "$FLY/$TRACK/seg-1.m4s" | sha1sum); b=$(curl -s "$STATIC/$TRACK/seg-1.m4s" | sha1sum); [ "$a" = "$b" ] || log "warning: m4s differs"; }
  cat "$TMP/pkg/$TRACK"/* >/dev/null
  fly=$(measure "$FLY" "$FLY_PID")
  measure "$CACHED" "$CACHE_PID" >/dev/null      # fill the cache
  cached=$(measure "$CACHED" "$CACHE_PID")
  static=$(measure "$STATIC" "$STATIC_PID")
  ngx=$(measure "http://127.0.0.1:$NPORT" "$NPID" $NGINX_WORKERS)
  read -r fc fw <<<"$fly"; read -r cc cw <<<"$cached"; read -r sc sw <<<"$static"; read -r nc nw <<<"$ngx"
  ratio() { python3 -c "a,b=$1,$2; print('n/a' if b < 1 else f'{a/b:.2f}')"; }
  printf '%-34s %6s %26s %26s %26s %22s %9s %9s\n' "$label" "$segs" "$fc ($fw)" "$cc ($cw)" "$sc ($sw)" "$nc ($nw)" \
    "$(ratio "$fc" "$sc")" "$(ratio "$fc" "$nc")"
done
echo "cpu: server utime+stime per segment request, at least $REQUESTS requests per cell (clock tick $((1000 / TICK)) ms); wall: curl's time per request;"
echo "peer: streamd serving the packaged segment as a static file (/media/ of the package folder); nginx for scale."
