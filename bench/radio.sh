#!/usr/bin/env bash
# Radio load: streamd against icecast2, one 128 kbit/s MP3 source fed by ffmpeg to each, at
# LEVELS listeners held by bench/radioload.c (one epoll process, loopback, spread over 8 source
# addresses). Per level and server: share of listeners receiving >= 0.99x the stream rate over
# MEASURE seconds, p99 time to the first audio byte, server CPU per 1,000 listeners, server RSS
# per listener. Bounded: LEVELS (default "1000 5000 10000 19500"), SETTLE (15 s), MEASURE (60 s).
# SERVERS (default "streamd icecast2 floor"): `floor` is bench/radiofloor.c, a trivial C epoll
# server (head and 4 KiB at once, then one send per listener per 250 ms, no source): its figures
# in the same run are the load generator's and the kernel's share, the floor under any server's.
# CONNECT_BATCH (16): radioload handles ready events after every so many connects (0: connects
# all first, so the first connections' times include the load generator's connect phase).
# Results: one JSON line per run in $OUT/results.jsonl and a table on stdout.
# The descriptor limit of this machine's processes (ulimit -Hn) bounds the highest level.
set -euo pipefail
cd "$(dirname "$0")/.."
LEVELS=${LEVELS:-"1000 5000 10000 19500"}
SETTLE=${SETTLE:-15}
MEASURE=${MEASURE:-60}
SERVERS=${SERVERS:-"streamd icecast2 floor"}
CONNECT_BATCH=${CONNECT_BATCH:-16}
TRACK=${TRACK:-media/out/cbr-128k-44k.mp3}
RATE=16000            # bytes per second of a 128 kbit/s stream
PASSWORD=benchsource
OUT=${OUT:-$(mktemp -d /tmp/radio-bench.XXXXXX)}
STREAMD=${STREAMD:-.build/release/streamd}
mkdir -p "$OUT"
[[ -x $STREAMD ]] || swift build -c release --product streamd >&2
[[ -f $TRACK ]] || { echo "radio.sh: $TRACK missing (make media)" >&2; exit 1; }
command -v icecast2 >/dev/null || { echo "radio.sh: icecast2 missing (scripts/deps.sh)" >&2; exit 1; }
cc -O2 -Wall -o "$OUT/radioload" bench/radioload.c
cc -O2 -Wall -o "$OUT/radiofloor" bench/radiofloor.c
ulimit -n "$(ulimit -Hn)"
echo "radio.sh: results in $OUT (fd limit $(ulimit -n))" >&2

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
rss_kb() { awk '/VmRSS/{print $2}' "/proc/$1/status"; }
# Bytes the channel itself has published (streamd's /api/channels stream_bytes; -1 for the
# others): over the window, the source's own rate, so a source that stalled (ffmpeg reopening
# the looped file on a loaded machine) is told apart from listeners that fell short.
stream_bytes() {
    [[ $1 == streamd ]] || { echo -1; return; }
    curl -s --max-time 2 "http://127.0.0.1:$2/api/channels" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stream_bytes"])' 2>/dev/null || echo -1
}

start_streamd() {   # prints "PID PORT MOUNT"
    local log=$OUT/streamd-$1.log lib=$OUT/lib
    mkdir -p "$lib"
    "$STREAMD" "$lib" --port 0 --quiet --max-connections 100000 --source-password "$PASSWORD" >"$log" 2>&1 &
    local pid=$!
    for _ in $(seq 50); do grep -q listening "$log" && break; sleep 0.1; done
    local port; port=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$log" | head -1)
    echo "$pid $port /radio/bench"
}

start_icecast() {
    local port; port=$(free_port)
    local dir=$OUT/icecast-$1; mkdir -p "$dir/log"; chmod 777 "$dir/log"
    cat >"$dir/icecast.xml" <<XML
<icecast>
  <limits><clients>100000</clients><sources>2</sources><queue-size>524288</queue-size>
    <client-timeout>30</client-timeout><header-timeout>15</header-timeout><source-timeout>10</source-timeout>
    <burst-on-connect>1</burst-on-connect><burst-size>65536</burst-size></limits>
  <authentication><source-password>$PASSWORD</source-password><admin-user>admin</admin-user>
    <admin-password>$PASSWORD</admin-password></authentication>
  <hostname>127.0.0.1</hostname>
  <listen-socket><port>$port</port><bind-address>127.0.0.1</bind-address></listen-socket>
  <paths><basedir>/usr/share/icecast2</basedir><logdir>$dir/log</logdir><webroot>/usr/share/icecast2/web</webroot>
    <adminroot>/usr/share/icecast2/admin</adminroot></paths>
  <logging><accesslog>-</accesslog><errorlog>error.log</errorlog><loglevel>1</loglevel></logging>
  <security><chroot>0</chroot><changeowner><user>nobody</user><group>nogroup</group></changeowner></security>
</icecast>
XML
    icecast2 -c "$dir/icecast.xml" >"$dir/stdout.log" 2>&1 &
    local pid=$!
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    echo "$pid $port /bench"
}

start_floor() {
    local file=$OUT/floor-$1.port
    rm -f "$file"
    "$OUT/radiofloor" "$file" 4096 "$RATE" 250 >"$OUT/floor-$1.log" 2>&1 &
    local pid=$!
    for _ in $(seq 50); do [[ -s $file ]] && break; sleep 0.1; done
    echo "$pid $(cat "$file") /floor"
}

printf '%-9s %7s %8s %9s %9s %9s %10s %12s %10s\n' server listeners held share_at ttfb_p99 req_p99 cpu/1k_% rss/listener mean_B/s
for level in $LEVELS; do
    for server in $SERVERS; do
        case $server in
            streamd) read -r pid port mount < <(start_streamd "$level") ;;
            icecast2) read -r pid port mount < <(start_icecast "$level") ;;
            floor) read -r pid port mount < <(start_floor "$level") ;;
            *) echo "radio.sh: unknown server $server" >&2; exit 2 ;;
        esac
        pids+=("$pid")
        if [[ $server == floor ]]; then
            sleep 1
            feeder=""   # no source: the floor sends filler bytes
        else
            ffmpeg -nostdin -v error -re -stream_loop -1 -i "$TRACK" -c copy -f mp3 -content_type audio/mpeg \
                -ice_name bench "icecast://source:$PASSWORD@127.0.0.1:$port$mount" >"$OUT/ffmpeg-$server-$level.log" 2>&1 &
            feeder=$!
            pids+=("$feeder")
            sleep 5   # the source connects and fills a burst
        fi
        rss0=$(rss_kb "$pid")
        "$OUT/radioload" 127.0.0.1 "$port" "$mount" "$level" "$RATE" "$SETTLE" "$MEASURE" 8 "$CONNECT_BATCH" >"$OUT/load.json" &
        load=$!
        sleep "$SETTLE"
        cpu0=$(cpu_ticks "$pid"); t0=$(date +%s.%N); sb0=$(stream_bytes "$server" "$port")
        rss_peak=0
        while kill -0 "$load" 2>/dev/null; do
            r=$(rss_kb "$pid" 2>/dev/null || echo 0); (( r > rss_peak )) && rss_peak=$r
            sleep 2
        done
        cpu1=$(cpu_ticks "$pid" 2>/dev/null || echo "$cpu0"); t1=$(date +%s.%N); sb1=$(stream_bytes "$server" "$port")
        hz=$(getconf CLK_TCK)
        line=$(cat "$OUT/load.json")
        kill ${feeder:+"$feeder"} "$pid" 2>/dev/null || true
        wait ${feeder:+"$feeder"} "$pid" 2>/dev/null || true
        python3 - "$server" "$level" "$line" "$cpu0" "$cpu1" "$t0" "$t1" "$hz" "$rss0" "$rss_peak" "$CONNECT_BATCH" "$sb0" "$sb1" >>"$OUT/results.jsonl" <<'PY'
import json, sys
server, level, line, cpu0, cpu1, t0, t1, hz, rss0, rss, batch, sb0, sb1 = sys.argv[1:]
r = json.loads(line)
seconds = float(t1) - float(t0)
cpu = (int(cpu1) - int(cpu0)) / int(hz) / seconds          # cores busy
r.update(server=server, connect_batch=int(batch), cpu_cores=round(cpu, 3),
         cpu_percent_per_1000=round(100 * cpu / (int(level) / 1000), 2),
         rss_base_kb=int(rss0), rss_peak_kb=int(rss),
         rss_per_listener_bytes=round((int(rss) - int(rss0)) * 1024 / int(level)),
         source_rate=round((int(sb1) - int(sb0)) / seconds) if int(sb0) >= 0 and int(sb1) >= 0 else None)
print(json.dumps(r))
PY
        tail -1 "$OUT/results.jsonl" | python3 -c '
import json,sys; r=json.loads(sys.stdin.read())
print("%-9s %7d %8d %8.1f%% %7.1fms %7.1fms %9.2f%% %10dB %10d" % (r["server"], r["listeners"], r["with_audio"], 100*r["share_at_rate"],
      r["ttfb_p99_ms"], r.get("request_to_audio_p99_ms", -1), r["cpu_percent_per_1000"], r["rss_per_listener_bytes"], r["mean_rate"]))'
        sleep 3
    done
done
