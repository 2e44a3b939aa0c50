#!/usr/bin/env bash
# Benchmark: streamd against nginx (the peer), both serving the same folder on 127.0.0.1, measured by wrk
# with identical settings, one server after the other:
#   a. 64 KB Range GETs on a small mp3 at 64 connections (fixed offset 0, then random 64 KB-aligned offsets): req/s
#   b. a whole ~230 MB file at 16 connections: transfer rate (GB/s)
#   c. streamd's RSS while it holds 1,000 idle keep-alive connections
# Prints a table with ratios (streamd/nginx) and PASS/MISS against the targets. It reports, it doesn't gate:
# exits 0 on a MISS, non-zero only when a tool is missing or a server fails to start.
# Environment: STREAMD=path/to/streamd (default: the release build), BENCH_SECONDS (a, default 10),
# BENCH_BIG_SECONDS (b, default 15), BENCH_WARMUP (default 2), BENCH_KEEP=1 keeps the temp dir (wrk outputs).
set -uo pipefail
cd "$(dirname "$0")/.."

SECONDS_A=${BENCH_SECONDS:-10}
SECONDS_B=${BENCH_BIG_SECONDS:-15}
WARMUP=${BENCH_WARMUP:-2}
CORES=$(nproc 2>/dev/null || echo 2)
BLOCK=65536
IDLE_CONNS=1000
RSS_TARGET_MB=64
RATIO_TARGET=0.9
SMALL_SRC=media/out/cbr-128k-44k.mp3
LONG_SRC=media/long/long-4h-48k.mp3

log() { echo "server.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# --- 0. file descriptors: 1,000 idle connections need more than the usual 1024 with everything else.
if [ "$(ulimit -Sn)" != unlimited ] && [ "$(ulimit -Sn)" -lt 4096 ]; then
  ulimit -Sn 4096 2>/dev/null || ulimit -n 4096 2>/dev/null || ulimit -Sn "$(ulimit -Hn)" 2>/dev/null || true
fi
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 2048 ] || log "warning: ulimit -n is only $(ulimit -n)"

# --- 1. tools
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
if ! installed nginx-light || ! installed wrk; then
  if command -v apt-get >/dev/null; then
    log "installing nginx-light and wrk"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light wrk; } >&2 \
      || log "warning: apt-get install failed"
  fi
fi
for tool in nginx wrk python3 curl; do
  command -v "$tool" >/dev/null || die "missing tool: $tool"
done

# --- the streamd binary
if [ -n "${STREAMD:-}" ]; then
  BIN=$STREAMD
else
  BIN="$(swift build -c release --show-bin-path 2>/dev/null)/streamd"
  [ -x "$BIN" ] || BIN=.build/release/streamd
fi
[ -x "$BIN" ] || die "no streamd binary at $BIN (run: swift build -c release)"
[ -f "$SMALL_SRC" ] || die "missing $SMALL_SRC (run: make media)"

# --- temp dir and cleanup
TMP=$(mktemp -d "${TMPDIR:-/tmp}/streamd-bench.XXXXXX") || die "mktemp failed"
NGINX_PID=""
STREAMD_PID=""
stop_pid() { # pid: TERM, wait up to ~3 s, then KILL
  local pid=$1 i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
cleanup() {
  local workers=""
  [ -n "$NGINX_PID" ] && workers=$(pgrep -P "$NGINX_PID" 2>/dev/null)
  stop_pid "$STREAMD_PID"
  stop_pid "$NGINX_PID"
  for w in $workers; do kill -KILL "$w" 2>/dev/null; done
  if [ -n "${BENCH_KEEP:-}" ]; then log "kept $TMP (wrk outputs, logs)"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 2. data folder (hard links when possible: streamd refuses symlinks pointing outside its folder)
DATA=$TMP/data
mkdir -p "$DATA"
SMALL=$(basename "$SMALL_SRC")
ln "$SMALL_SRC" "$DATA/$SMALL" 2>/dev/null || cp "$SMALL_SRC" "$DATA/$SMALL" || die "cannot copy $SMALL_SRC"
if [ -f "$LONG_SRC" ]; then
  BIG=$(basename "$LONG_SRC")
  ln "$LONG_SRC" "$DATA/$BIG" 2>/dev/null || cp "$LONG_SRC" "$DATA/$BIG" || die "cannot copy $LONG_SRC"
else
  BIG=big-230m.bin
  log "no $LONG_SRC (make media-long): using $((3510 * BLOCK)) random bytes"
  head -c $((3510 * BLOCK)) /dev/urandom >"$DATA/$BIG" || die "cannot create $DATA/$BIG"
fi
SMALL_SIZE=$(stat -c %s "$DATA/$SMALL")
BIG_SIZE=$(stat -c %s "$DATA/$BIG")
SMALL_BLOCKS=$((SMALL_SIZE / BLOCK))
[ "$SMALL_BLOCKS" -ge 1 ] || die "$SMALL is smaller than 64 KB"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" 2>/dev/null; }

# --- 3. nginx
start_nginx() {
  local port=$1 user_line=""
  [ "$(id -u)" = 0 ] && user_line="user root;"
  mkdir -p "$TMP/nginx-temp"
  cat >"$TMP/nginx.conf" <<EOF
$user_line
worker_processes $CORES;
worker_rlimit_nofile $(ulimit -n);
daemon off;
pid $TMP/nginx.pid;
error_log $TMP/nginx-error.log warn;
events { worker_connections 4096; }
http {
    types { audio/mpeg mp3; }
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 100000;
    keepalive_timeout 120s;
    client_body_temp_path $TMP/nginx-temp/body;
    proxy_temp_path $TMP/nginx-temp/proxy;
    fastcgi_temp_path $TMP/nginx-temp/fastcgi;
    uwsgi_temp_path $TMP/nginx-temp/uwsgi;
    scgi_temp_path $TMP/nginx-temp/scgi;
    server {
        listen 127.0.0.1:$port;
        root $DATA;
        location / { }
    }
}
EOF
  nginx -c "$TMP/nginx.conf" -p "$TMP/" </dev/null >>"$TMP/nginx-stdout.log" 2>&1 &
  NGINX_PID=$!
  local i
  for i in $(seq 50); do
    kill -0 "$NGINX_PID" 2>/dev/null || { wait "$NGINX_PID" 2>/dev/null; NGINX_PID=""; return 1; }
    [ "$(http_code "http://127.0.0.1:$port/$SMALL")" = 200 ] && return 0
    sleep 0.1
  done
  stop_pid "$NGINX_PID"; NGINX_PID=""
  return 1
}
NGINX_PORT=""
for attempt in 1 2 3 4 5; do
  port=$(free_port) || die "cannot pick a free port"
  if start_nginx "$port"; then NGINX_PORT=$port; break; fi
done
if [ -z "$NGINX_PORT" ]; then
  log "nginx failed to start; its log:"
  cat "$TMP/nginx-stdout.log" "$TMP/nginx-error.log" 2>/dev/null | tail -20 >&2
  exit 2
fi

# --- 4. streamd
"$BIN" "$DATA" --host 127.0.0.1 --port 0 --quiet </dev/null >"$TMP/streamd.out" 2>"$TMP/streamd.err" &
STREAMD_PID=$!
STREAMD_PORT=""
for i in $(seq 300); do
  line=$(head -n 1 "$TMP/streamd.out" 2>/dev/null)
  if [[ $line =~ ^listening\ on\ http://127\.0\.0\.1:([0-9]+)/$ ]]; then STREAMD_PORT=${BASH_REMATCH[1]}; break; fi
  kill -0 "$STREAMD_PID" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$STREAMD_PORT" ] || ! kill -0 "$STREAMD_PID" 2>/dev/null; then
  log "streamd failed to start (first stdout line: '${line:-}'); stderr:"
  tail -20 "$TMP/streamd.err" >&2
  exit 3
fi
RSS_START_KB=$(awk '/^VmRSS:/ {print $2}' "/proc/$STREAMD_PID/status")

S_BASE="http://127.0.0.1:$STREAMD_PORT/media"
N_BASE="http://127.0.0.1:$NGINX_PORT"

# Sanity: both answer the 64 KB range with 206 and exactly 65536 bytes, and the whole big file in full
# (this also pulls it into the page cache).
check_range() {
  local got
  got=$(curl -s -o /dev/null --max-time 10 -H "Range: bytes=0-$((BLOCK - 1))" -w '%{http_code} %{size_download}' "$1")
  [ "$got" = "206 $BLOCK" ] || log "warning: $1 with Range: got '$got', expected '206 $BLOCK'"
}
check_whole() {
  local got
  got=$(curl -s -o /dev/null --max-time 120 -w '%{http_code} %{size_download}' "$1")
  [ "$got" = "200 $BIG_SIZE" ] || log "warning: $1: got '$got', expected '200 $BIG_SIZE'"
}
check_range "$S_BASE/$SMALL"; check_range "$N_BASE/$SMALL"
check_whole "$S_BASE/$BIG"; check_whole "$N_BASE/$BIG"

# --- 5. wrk
cat >"$TMP/range-fixed.lua" <<EOF
wrk.method = "GET"
wrk.headers["Range"] = "bytes=0-$((BLOCK - 1))"
EOF
cat >"$TMP/range-random.lua" <<EOF
-- random 64 KB-aligned ranges that lie wholly inside the file; seeded per thread, same for both servers
local blocks = $SMALL_BLOCKS
local counter = 0
function setup(thread) counter = counter + 1; thread:set("seed", counter) end
function init(args) math.randomseed(seed or 1) end
function request()
  local offset = math.random(0, blocks - 1) * $BLOCK
  return wrk.format("GET", nil, { ["Range"] = "bytes=" .. offset .. "-" .. (offset + $BLOCK - 1) })
end
EOF

NOTES=()
# run_wrk NAME OUTFILE ARGS... : runs wrk, keeps its output, records errors / non-2xx in NOTES
run_wrk() {
  local name=$1 out=$2; shift 2
  timeout --foreground $((SECONDS_B + 90)) wrk "$@" >"$out" 2>&1
  local rc=$?
  [ $rc = 0 ] || NOTES+=("$name: wrk exited $rc")
  local extra
  extra=$(grep -E 'Non-2xx or 3xx responses|Socket errors' "$out" | sed 's/^ *//' | paste -sd ';' -)
  [ -n "$extra" ] && NOTES+=("$name: $extra")
  return 0
}
req_per_sec() { awk '/^Requests\/sec:/ {print $2}' "$1"; }
# Transfer/sec in bytes/s; wrk prints binary units: 12.34B, 12.34KB, 12.34MB, 12.34GB, 12.34TB
bytes_per_sec() {
  awk '/^Transfer\/sec:/ {
         v = $2; n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
         m = 1
         if (u == "KB") m = 1024; else if (u == "MB") m = 1024^2; else if (u == "GB") m = 1024^3; else if (u == "TB") m = 1024^4
         printf "%.0f\n", n * m }' "$1"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "streamd on :$STREAMD_PORT, nginx on :$NGINX_PORT, $CORES cores; big file $BIG ($BIG_SIZE bytes)"

# a. 64 KB ranges at 64 connections
for kind in fixed random; do
  for srv in streamd nginx; do
    if [ $srv = streamd ]; then url="$S_BASE/$SMALL"; else url="$N_BASE/$SMALL"; fi
    log "a ($kind) $srv: warm-up ${WARMUP}s, then ${SECONDS_A}s"
    run_wrk "a-$kind warm-up $srv" "$TMP/wrk-a-$kind-warm-$srv.txt" -t2 -c64 -d"${WARMUP}s" -s "$TMP/range-$kind.lua" "$url"
    run_wrk "a-$kind $srv" "$TMP/wrk-a-$kind-$srv.txt" -t2 -c64 -d"${SECONDS_A}s" -s "$TMP/range-$kind.lua" "$url"
  done
done

# b. the whole big file at 16 connections (a response takes seconds: long timeout)
for srv in streamd nginx; do
  if [ $srv = streamd ]; then url="$S_BASE/$BIG"; else url="$N_BASE/$BIG"; fi
  log "b $srv: warm-up ${WARMUP}s, then ${SECONDS_B}s"
  run_wrk "b warm-up $srv" "$TMP/wrk-b-warm-$srv.txt" -t2 -c16 -d"${WARMUP}s" --timeout 120s "$url"
  run_wrk "b $srv" "$TMP/wrk-b-$srv.txt" -t2 -c16 -d"${SECONDS_B}s" --timeout 120s "$url"
done

# c. RSS with 1,000 idle keep-alive connections
cat >"$TMP/idle.py" <<'EOF'
# usage: idle.py PORT PATH COUNT PID... ; prints "<alive connections> <sum of VmRSS kB over PIDs>"
import socket, sys, select
port, path, count, pids = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4:]
request = ("GET %s HTTP/1.1\r\nHost: x\r\nRange: bytes=0-0\r\n\r\n" % path).encode()

def read_response(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk: raise IOError("closed before the headers")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    if b" 206 " not in lines[0] + b" ": raise IOError("status: %r" % lines[0])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length": length = int(value)
    while len(body) < length:
        chunk = s.recv(4096)
        if not chunk: raise IOError("closed in the body")
        body += chunk

def rss_kb():
    total = 0
    for pid in pids:
        try:
            with open("/proc/%s/status" % pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"): total += int(line.split()[1])
        except OSError:
            pass
    return total

socks, failures = [], 0
try:
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        socks.append(s)
        try:
            s.sendall(request); read_response(s)
        except (OSError, ValueError) as e:
            failures += 1
            if failures <= 3: print("idle.py: %s" % e, file=sys.stderr)
    # a connection the server has closed reads as readable (EOF): count only the quiet ones
    alive = 0
    for s in socks:
        r, _, _ = select.select([s], [], [], 0)
        if not r: alive += 1
    print(alive, rss_kb())
finally:
    for s in socks: s.close()
EOF
RSS_BEFORE_KB=$(awk '/^VmRSS:/ {print $2}' "/proc/$STREAMD_PID/status")
NGINX_PIDS="$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')"
NGINX_RSS_BEFORE_KB=$(for p in $NGINX_PIDS; do awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null; done | awk '{s+=$1} END {print s+0}')
log "c: $IDLE_CONNS idle keep-alive connections to each server"
read -r S_ALIVE S_RSS_KB < <(timeout --foreground 120 python3 "$TMP/idle.py" "$STREAMD_PORT" "/media/$SMALL" "$IDLE_CONNS" "$STREAMD_PID")
read -r N_ALIVE N_RSS_KB < <(timeout --foreground 120 python3 "$TMP/idle.py" "$NGINX_PORT" "/$SMALL" "$IDLE_CONNS" $NGINX_PIDS)
[ "${S_ALIVE:-0}" = "$IDLE_CONNS" ] || NOTES+=("c streamd: only ${S_ALIVE:-0} of $IDLE_CONNS connections stayed open")
[ "${N_ALIVE:-0}" = "$IDLE_CONNS" ] || NOTES+=("c nginx: only ${N_ALIVE:-0} of $IDLE_CONNS connections stayed open")
kill -0 "$STREAMD_PID" 2>/dev/null || NOTES+=("streamd died during the benchmark")
kill -0 "$NGINX_PID" 2>/dev/null || NOTES+=("nginx died during the benchmark")

# --- 6. report
PASSES=0; MISSES=0
ROWS=()
SHORT=()
add_row() { ROWS+=("$(printf '%-36s %12s %12s %7s %9s  %s' "$@")"); }
ratio_row() { # label short-label streamd nginx (numbers, may be empty) format
  local label=$1 short=$2 s=$3 n=$4 fmt=$5 r verdict
  if [ -n "$s" ] && [ -n "$n" ] && awk -v n="$n" 'BEGIN {exit !(n > 0)}'; then
    r=$(awk -v s="$s" -v n="$n" 'BEGIN {printf "%.2f", s / n}')
    if awk -v r="$r" -v t="$RATIO_TARGET" 'BEGIN {exit !(r >= t)}'; then verdict=PASS; PASSES=$((PASSES + 1)); else verdict=MISS; MISSES=$((MISSES + 1)); fi
    add_row "$label" "$(printf "$fmt" "$s")" "$(printf "$fmt" "$n")" "$r" ">= $RATIO_TARGET" "$verdict"
    SHORT+=("$short $r $verdict")
  else
    SHORT+=("$short n/a MISS")
    MISSES=$((MISSES + 1))
    add_row "$label" "${s:-n/a}" "${n:-n/a}" "n/a" ">= $RATIO_TARGET" "MISS (no result)"
  fi
}
gbps() { [ -n "$1" ] && awk -v b="$1" 'BEGIN {printf "%.3f", b / 1e9}'; }
mb() { [ -n "$1" ] && awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }

ratio_row "a. 64KB range @0, c64 (req/s)" "a@0" "$(req_per_sec "$TMP/wrk-a-fixed-streamd.txt")" "$(req_per_sec "$TMP/wrk-a-fixed-nginx.txt")" '%.0f'
ratio_row "a. 64KB range random, c64 (req/s)" "a-random" "$(req_per_sec "$TMP/wrk-a-random-streamd.txt")" "$(req_per_sec "$TMP/wrk-a-random-nginx.txt")" '%.0f'
ratio_row "b. whole $((BIG_SIZE / 1000000))MB file, c16 (GB/s)" "b" "$(gbps "$(bytes_per_sec "$TMP/wrk-b-streamd.txt")")" "$(gbps "$(bytes_per_sec "$TMP/wrk-b-nginx.txt")")" '%.3f'
add_row "c. RSS at start (MB)" "$(mb "$RSS_START_KB")" "" "" "" ""
add_row "c. RSS before idle conns (MB)" "$(mb "$RSS_BEFORE_KB")" "$(mb "$NGINX_RSS_BEFORE_KB")" "" "" ""
if [ -n "${S_RSS_KB:-}" ] && [ "${S_ALIVE:-0}" = "$IDLE_CONNS" ]; then
  ratio=""
  [ -n "${N_RSS_KB:-}" ] && [ "${N_RSS_KB:-0}" -gt 0 ] && ratio=$(awk -v s="$S_RSS_KB" -v n="$N_RSS_KB" 'BEGIN {printf "%.2f", s / n}')
  if [ "$S_RSS_KB" -le $((RSS_TARGET_MB * 1024)) ]; then verdict=PASS; PASSES=$((PASSES + 1)); else verdict=MISS; MISSES=$((MISSES + 1)); fi
  add_row "c. RSS with $IDLE_CONNS idle conns (MB)" "$(mb "$S_RSS_KB")" "$(mb "${N_RSS_KB:-}")" "${ratio:-n/a}" "<= $RSS_TARGET_MB MB" "$verdict"
  SHORT+=("c $(mb "$S_RSS_KB")MB $verdict")
else
  MISSES=$((MISSES + 1))
  add_row "c. RSS with $IDLE_CONNS idle conns (MB)" "$(mb "${S_RSS_KB:-}")" "$(mb "${N_RSS_KB:-}")" "n/a" "<= $RSS_TARGET_MB MB" "MISS (${S_ALIVE:-0} conns open)"
  SHORT+=("c n/a MISS")
fi

echo
printf '%-36s %12s %12s %7s %9s  %s\n' metric streamd nginx ratio target result
printf '%s\n' "$(printf '%.0s-' $(seq 88))"
printf '%s\n' "${ROWS[@]}"
echo "(ratio = streamd/nginx; wrk -t2 on loopback, $CORES cores, nginx worker_processes $CORES;"
echo " GB = 10^9 bytes; MB = 1024 kB of VmRSS; nginx RSS = master + workers, for reference;"
echo " load average before/after: $LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg) — other work on the machine skews the numbers)"
if [ ${#NOTES[@]} -gt 0 ]; then
  echo "notes:"
  printf '  %s\n' "${NOTES[@]}"
fi
summary=$(printf '%s, ' "${SHORT[@]}")
echo "summary: streamd vs nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'): $PASSES PASS, $MISSES MISS — ${summary%, }"
exit 0
