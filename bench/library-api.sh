#!/usr/bin/env bash
# The library API and page at scale (issue 14): on a generated library of N tracks (default
# 100,000; bench/make-library.py), once streamd has scanned it:
#   - wrk, one connection alone (search and random pages: a quiet request's latency), then
#     WRK_CONNECTIONS (64) connections on 2 threads, WRK_SECONDS (20) each, latency p50/p99
#     and requests/s of:
#       /api/search with a new query every request (bench/wrk/search.lua: word prefixes, one or
#       two words, 100 rows) and one fixed query;
#       /api/tracks pages of 100 at random offsets (bench/wrk/tracks.lua), path order and all
#       sort orders, and the first page alone;
#   - the peer, in the same run with the same wrk settings: nginx-light (2 workers, as streamd has
#     2 event loops) serving a static file of the same bytes as one 100-row page: the ceiling of
#     a 57 KB answer on this machine (no database, no JSON, sendfile);
#   - for every run, the load average, streamd's CPU (utime+stime from /proc over the run: % of a
#     core and µs per request) and wrk's (GNU time), since wrk shares the cores with the server;
#   - open loop (bench/apiload.c, compiled here with cc -O2): wrk keeps 64 requests in flight, so
#     its latency is 64 / throughput; apiload sends requests due at a fixed rate (1/rate apart,
#     round-robin over the same 64 keep-alive connections, 2 threads as wrk -t2) and times each
#     from when it was due, so a request that waited for a busy connection or a stalled server
#     is charged that wait. Pages at random offsets at APILOAD_PAGE_RATES (1000 2000 4000 8000
#     req/s) against streamd and against nginx's static page, new searches at
#     APILOAD_SEARCH_RATES (250 500 1000 2000), each APILOAD_SECONDS (8) s (about 2 minutes in all): achieved rate, p50/p90/p99/p99.9/max, errors, the load, the
#     server's CPU per request, and how late apiload itself released requests (the machine's
#     scheduling, included in the latencies);
#   - the page in headless Chromium (Tests/browser/check_page.py): HTML size, the first matching
#     row after typing a query (budget 300 ms), an album played from track to track.
# usage: bench/library-api.sh [TRACKS]   (LIBRARY=DIR reuses/creates the library there; STREAMD=binary)
set -euo pipefail
cd "$(dirname "$0")/.."
TRACKS=${1:-100000}
CONNECTIONS=${WRK_CONNECTIONS:-64}
DURATION=${WRK_SECONDS:-20}
scripts/deps.sh
LIBRARY=${LIBRARY:-${TMPDIR:-/tmp}/streamd-library-$TRACKS}
if [ -n "${STREAMD:-}" ]; then BIN=$STREAMD; else
  swift build -c release --product streamd >/dev/null
  BIN="$(swift build -c release --show-bin-path)/streamd"
fi
[ -x "$BIN" ] || { echo "no streamd at $BIN" >&2; exit 1; }
if [ ! -f "$LIBRARY/.complete" ]; then
  rm -rf "$LIBRARY"
  python3 bench/make-library.py "$LIBRARY" --tracks "$TRACKS"
  touch "$LIBRARY/.complete"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/streamd-api-bench.XXXXXX")
"$BIN" "$LIBRARY" --port 0 --quiet --db "$WORK/catalog.db" >"$WORK/stdout" 2>"$WORK/stderr" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 1 100); do grep -q listening "$WORK/stdout" && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on \(http:[^ ]*\)\/$/\1/p' "$WORK/stdout")
[ -n "$BASE" ] || { echo "streamd did not start: $(cat "$WORK/stderr")" >&2; exit 1; }
start=$(date +%s%N)
# The first scan, in the background of a listening server: wait until it is done.
for _ in $(seq 1 3600); do
  status=$(curl -sf "$BASE/api/status" || true)
  if python3 -c 'import json,sys; s=json.loads(sys.argv[1]); sys.exit(0 if s.get("scans",0)>=1 and not s.get("scanning") else 1)' "$status" 2>/dev/null; then break; fi
  sleep 0.5
done
total=$(curl -sI "$BASE/api/tracks?limit=1" | tr -d '\r' | sed -n 's/^X-Total-Count: //Ip')
echo "library: $total tracks in $LIBRARY, scanned in $(( ($(date +%s%N) - start) / 1000000 )) ms; streamd $BIN, $(nproc) cores"

# The peer: nginx serving one page's bytes as a static file (the same size and content type).
NGINX_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
mkdir -p "$WORK/nginx/root"
curl -sf "$BASE/api/tracks?offset=$((total / 2))&limit=100" -o "$WORK/nginx/root/page.json"
user_line=""; [ "$(id -u)" = 0 ] && user_line="user root;"
cat >"$WORK/nginx/nginx.conf" <<CONF
$user_line
worker_processes 2;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 1024; }
http {
    types { application/json json; }
    access_log off; sendfile on; tcp_nodelay on; keepalive_requests 1000000;
    client_body_temp_path $WORK/nginx/body; proxy_temp_path $WORK/nginx/proxy; fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi; scgi_temp_path $WORK/nginx/scgi;
    server { listen 127.0.0.1:$NGINX_PORT; root $WORK/nginx/root; }
}
CONF
nginx -p "$WORK/nginx" -e "$WORK/nginx/error.log" -c "$WORK/nginx/nginx.conf" </dev/null >/dev/null 2>&1 &
NGINX=$!
trap 'kill $PID $NGINX 2>/dev/null; wait $PID $NGINX 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$NGINX_PORT/page.json" && break; sleep 0.1; done
curl -sf -o /dev/null "http://127.0.0.1:$NGINX_PORT/page.json" || { echo "nginx did not start: $(tail -3 "$WORK/nginx/error.log")" >&2; exit 1; }

# CPU ticks (utime+stime) of a process and its threads; for nginx, of its workers too.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
nginx_ticks() {
  local sum=0 p
  for p in $NGINX $(pgrep -P "$NGINX" || true); do sum=$((sum + $(ticks "$p"))); done
  echo "$sum"
}
HZ=$(getconf CLK_TCK)

# One wrk run: prints "name  p50  p99  req/s  errors", then the load and the CPU of the server
# (streamd, or nginx with SERVER=nginx) and of wrk.
run() {
  local name=$1; shift
  local out load before after elapsed
  load=$(awk '{ print $1 }' /proc/loadavg)
  if [ "${SERVER:-streamd}" = nginx ]; then before=$(nginx_ticks); else before=$(ticks "$PID"); fi
  elapsed=$(date +%s%N)
  out=$(/usr/bin/time -f 'wrkcpu %U %S' wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@" 2>&1)
  elapsed=$(( $(date +%s%N) - elapsed ))
  if [ "${SERVER:-streamd}" = nginx ]; then after=$(nginx_ticks); else after=$(ticks "$PID"); fi
  local p50 p99 rps errors requests
  p50=$(awk '$1 == "50%" { print $2 }' <<<"$out")
  p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
  rps=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
  requests=$(awk '/requests in/ { print $1 }' <<<"$out")
  errors=$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr '\n' ' ' || true)
  printf '%-44s p50 %-9s p99 %-9s %9s req/s %s\n' "$name" "$p50" "$p99" "$rps" "${errors:-no errors}"
  awk -v load="$load" -v server="${SERVER:-streamd}" -v ticks=$((after - before)) -v hz="$HZ" -v ns="$elapsed" \
      -v requests="${requests:-0}" -v wrk="$(awk '/^wrkcpu/ { print $2 + $3 }' <<<"$out")" 'BEGIN {
    s = ns / 1e9; cpu = ticks / hz
    printf "    load %s; %s CPU %.0f %% of a core, %.0f us/request; wrk CPU %.0f %% of a core\n",
      load, server, 100 * cpu / s, (requests > 0 ? 1e6 * cpu / requests : 0), 100 * wrk / s }'
}

echo "wrk: one connection alone (a quiet request's latency), then $CONNECTIONS connections, 2 threads, $DURATION s each; $(uptime)"
WRK_LIMIT=100 run "/api/search, a new query each request, 1 conn" -t1 -c1 -s bench/wrk/search.lua "$BASE"
WRK_TOTAL=$total WRK_LIMIT=100 run "/api/tracks, 100 rows, random offsets, 1 conn" -t1 -c1 -s bench/wrk/tracks.lua "$BASE"
WRK_LIMIT=100 run "/api/search, a new query each request" -s bench/wrk/search.lua "$BASE"
run "/api/search?q=river (one query)" "$BASE/api/search?q=river&limit=100"
WRK_TOTAL=$total WRK_LIMIT=100 run "/api/tracks, 100 rows, random offsets" -s bench/wrk/tracks.lua "$BASE"
WRK_TOTAL=$total WRK_LIMIT=100 WRK_SORTS=path,title,artist,album,duration,year \
  run "/api/tracks, 100 rows, random offsets+sorts" -s bench/wrk/tracks.lua "$BASE"
run "/api/tracks?limit=100 (first page)" "$BASE/api/tracks?offset=0&limit=100"
run "/api/albums?limit=48 (the page's grid)" "$BASE/api/albums?offset=0&limit=48"
SERVER=nginx run "peer: nginx, a static page of $(wc -c <"$WORK/nginx/root/page.json") bytes" "http://127.0.0.1:$NGINX_PORT/page.json"
echo "streamd peak RSS: $(awk '/^VmHWM/ { print $2 / 1024 " MB" }' "/proc/$PID/status")"

# Open loop (bench/apiload.c): requests due at a fixed rate, whatever the server does, over
# CONNECTIONS keep-alive connections; latency counted from when each request was due. Pages at
# random offsets and new searches (the generators of bench/wrk/*.lua, as target lists), and
# nginx's static page at the pages' rates.
cc -O2 -Wall -pthread -o "$WORK/apiload" bench/apiload.c
python3 - "$WORK" "$total" <<'PY'
import random, sys
work, total = sys.argv[1], int(sys.argv[2])
r = random.Random(1)
words = ("amber blue cedar dawn echo falcon garden harbor island jasmine kestrel lantern meadow "
         "night orchid pepper quartz river silver thunder umber velvet willow xenon yellow zephyr "
         "anchor bridge canyon delta ember forest glacier horizon ivory juniper kindle lagoon "
         "marble nectar ocean prairie quiet raven summit tundra unity valley winter yonder zenith").split()
def prefix():
    w = r.choice(words)
    return w[:r.randint(2, len(w))]
with open(f"{work}/pages.txt", "w") as f:
    for _ in range(100000):
        f.write(f"/api/tracks?offset={r.randint(0, max(0, total - 100))}&limit=100&sort=path\n")
with open(f"{work}/searches.txt", "w") as f:
    for _ in range(100000):
        q = prefix() + ("+" + prefix() if r.random() < 0.5 else "")
        f.write(f"/api/search?q={q}&limit=100\n")
with open(f"{work}/static.txt", "w") as f:
    f.write("/page.json\n")
PY
cat >"$WORK/apiload-line.py" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
name, load, server = sys.argv[2:5]
cpu, seconds = int(sys.argv[5]) / int(sys.argv[6]), int(sys.argv[7]) / 1e9
done = r["achieved_rate"] * r["duration_s"]
def ms(key):
    v = r[key]
    return f"{v * 1000:.0f} us" if v < 1 else f"{v:.1f} ms" if v < 1000 else f"{v / 1000:.2f} s"
print(f"{name:<30} {r['rate']:>5.0f}/s: {r['achieved_rate']:6.0f} req/s  p50 {ms('p50_ms'):>8}  p90 {ms('p90_ms'):>8}  "
      f"p99 {ms('p99_ms'):>8}  p99.9 {ms('p999_ms'):>8}  max {ms('max_ms'):>8}  "
      f"errors {r['errors']}, non-2xx {r['non_2xx']}, unfinished {r['unfinished']}")
print(f"    load {load}; {server} CPU {100 * cpu / seconds:.0f} % of a core, {1e6 * cpu / max(done, 1):.0f} us/request; "
      f"timed from the send (as wrk does) p50 {ms('service_p50_ms')} p99 {ms('service_p99_ms')}")
before = dict(x.split(":") for x in sys.argv[8].split())
after = dict(x.split(":") for x in sys.argv[9].split())
used = sorted((int(v) - int(before.get(k, v)) for k, v in after.items()), reverse=True)
split = " / ".join(f"{100 * u / max(sum(used), 1):.0f} %" for u in used[:2])
print(f"    the work of its two busiest {'workers' if server == 'nginx' else 'threads (the event loops)'}: {split}")
print(f"    apiload CPU {100 * r['cpu_s'] / seconds:.0f} % of a core; it released requests late by p50 "
      f"{ms('release_lag_p50_ms')} p99 {ms('release_lag_p99_ms')} max {ms('release_lag_max_ms')} (counted in the latencies)")
PY
# "tid:ticks" of each streamd thread, or of each nginx worker: how the work split between the
# two event loops (a connection stays on the loop that accepted it).
thread_ticks() {
  local t
  if [ "${SERVER:-streamd}" = nginx ]; then
    for t in $(pgrep -P "$NGINX" || true); do echo -n "$t:$(ticks "$t") "; done
  else
    for t in /proc/"$PID"/task/*; do echo -n "${t##*/}:$(awk '{ print $14 + $15 }' "$t/stat" 2>/dev/null || echo 0) "; done
  fi
}
APILOAD_SECONDS=${APILOAD_SECONDS:-8}
PAGE_RATES=${APILOAD_PAGE_RATES:-1000 2000 4000 8000}
SEARCH_RATES=${APILOAD_SEARCH_RATES:-250 500 1000 2000}
SEED=0
# One apiload run: "name  rate: achieved, p50 p90 p99 p99.9 max, errors", then the load, the
# server's CPU (SERVER=nginx: nginx's) per request, the latencies timed from the send instead of
# the due time, and apiload's own lateness and CPU.
open_run() {
  local name=$1 port=$2 targets=$3 rate=$4
  local load before after elapsed out
  load=$(awk '{ print $1 }' /proc/loadavg)
  if [ "${SERVER:-streamd}" = nginx ]; then before=$(nginx_ticks); else before=$(ticks "$PID"); fi
  local threads_before threads_after
  threads_before=$(thread_ticks)
  elapsed=$(date +%s%N)
  SEED=$((SEED + 1))    # another draw of targets each run: no answer left cached by the run before
  out=$("$WORK/apiload" 127.0.0.1 "$port" "$targets" "$rate" "$APILOAD_SECONDS" "$CONNECTIONS" "$SEED" 1 2)
  elapsed=$(( $(date +%s%N) - elapsed ))
  if [ "${SERVER:-streamd}" = nginx ]; then after=$(nginx_ticks); else after=$(ticks "$PID"); fi
  threads_after=$(thread_ticks)
  python3 "$WORK/apiload-line.py" "$out" "$name" "$load" "${SERVER:-streamd}" $((after - before)) "$HZ" "$elapsed" \
    "$threads_before" "$threads_after"
}
echo "apiload (open loop): fixed rates over $CONNECTIONS connections, 2 threads, $APILOAD_SECONDS s each (+ up to 1 s to drain); latency from each request's due time; $(uptime)"
for rate in $PAGE_RATES; do
  open_run "/api/tracks, random offsets" "${BASE##*:}" "$WORK/pages.txt" "$rate"
  SERVER=nginx open_run "peer: nginx, the static page" "$NGINX_PORT" "$WORK/static.txt" "$rate"
done
for rate in $SEARCH_RATES; do
  open_run "/api/search, a new query each" "${BASE##*:}" "$WORK/searches.txt" "$rate"
done

echo "page: $(curl -s "$BASE/" | wc -c) bytes of HTML"
query=$(curl -s "$BASE/api/tracks?offset=$((total / 2))&limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["title"])')
python3 Tests/browser/check_page.py "$BASE" --query "$query" --budget-ms 300 --advances 3 ${SCREENSHOT:+--screenshot "$SCREENSHOT"}
