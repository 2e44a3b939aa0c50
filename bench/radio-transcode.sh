#!/usr/bin/env bash
# CPU of one transcoding radio channel: streamd playing a folder of four tracks of different
# formats (MP3 44.1 kHz stereo, MP3 22.05 kHz mono, AAC in M4A 48 kHz, WAV 96 kHz; pink noise,
# TRACK_SECONDS each), which it decodes, resamples (libsoxr) and encodes to MP3 128 kbit/s
# (libmp3lame) in real time, against ffmpeg doing the same per track in the same run
# (`ffmpeg -re -i TRACK -af aresample=resampler=soxr -ac 2 -ar 44100 -c:a libmp3lame -b:a 128k
# -compression_level 3 -f mp3`; LAME's quality 3, its default, on both sides), and a second streamd whose channel of four same-format MP3s passes frames through.
# Each streamd has one listener (curl). CPU from /proc/PID/stat (streamd and its decode
# workers, over the same wall time as the four ffmpeg runs) and getrusage of the children (ffmpeg).
set -euo pipefail
cd "$(dirname "$0")/.."
TRACK_SECONDS=${TRACK_SECONDS:-15}
OUT=${OUT:-$(mktemp -d /tmp/radio-transcode.XXXXXX)}
STREAMD=${STREAMD:-.build/release/streamd}
[[ -x $STREAMD ]] || swift build -c release --product streamd >&2
mkdir -p "$OUT/mix/mix" "$OUT/same/same"

noise() {   # noise NAME SECONDS ffmpeg-output-options...: stereo pink noise (two independent channels)
    local path=$1 seconds=$2; shift 2
    ffmpeg -v error -y -filter_complex \
        "anoisesrc=c=pink:r=96000:a=0.3:d=$seconds:seed=1[l];anoisesrc=c=pink:r=96000:a=0.3:d=$seconds:seed=2[r];[l][r]amerge=inputs=2" \
        "$@" "$path"
}
noise "$OUT/mix/mix/1.mp3" "$TRACK_SECONDS" -ac 2 -ar 44100 -c:a libmp3lame -b:a 192k
noise "$OUT/mix/mix/2.mp3" "$TRACK_SECONDS" -ac 1 -ar 22050 -c:a libmp3lame -b:a 64k
noise "$OUT/mix/mix/3.m4a" "$TRACK_SECONDS" -ac 2 -ar 48000 -c:a aac -b:a 160k
noise "$OUT/mix/mix/4.wav" "$TRACK_SECONDS" -ac 2 -ar 96000 -c:a pcm_s16le
for i in 1 2 3 4; do
    noise "$OUT/same/same/$i.mp3" "$TRACK_SECONDS" -ac 2 -ar 44100 -c:a libmp3lame -b:a 128k
done

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

start() {   # start NAME: a streamd on folder $OUT/NAME with channel NAME, one listener; prints "PID PORT"
    local log=$OUT/streamd-$1.log
    "$STREAMD" "$OUT/$1" --port 0 --quiet --db "$OUT/$1.db" --channel "$1=$1" >"$log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    for _ in $(seq 100); do grep -q listening "$log" && break; sleep 0.1; done
    local port; port=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$log" | head -1)
    echo "$pid $port"
}
read -r mix_pid mix_port < <(start mix)
pids+=("$mix_pid")
read -r same_pid same_port < <(start same)
pids+=("$same_pid")
curl -s "http://127.0.0.1:$mix_port/radio/mix" -o "$OUT/mix.mp3" & pids+=($!)
curl -s "http://127.0.0.1:$same_port/radio/same" -o /dev/null & pids+=($!)
sleep 3   # past the start-up pre-roll (a burst's worth encoded at once)
grep -q "transcoded to MP3" "$OUT/streamd-mix.log" || { echo "radio-transcode.sh: the mix channel does not transcode" >&2; cat "$OUT/streamd-mix.log" >&2; exit 1; }

# CPU ticks of a streamd and its decode workers: its own, its reaped children's (a track's
# worker ends with the track), and those of the children still running.
cpu_ticks() {
    local own children
    own=$(awk '{print $14+$15+$16+$17}' "/proc/$1/stat")
    # Field 4 is the parent's pid (the names of these processes have no spaces).
    children=$({ cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v p="$1" '$4 == p {s += $14 + $15} END {print s + 0}')
    echo $((own + children))
}
load=$(cut -d' ' -f1-3 /proc/loadavg)
mix0=$(cpu_ticks "$mix_pid"); same0=$(cpu_ticks "$same_pid"); bytes0=$(stat -c %s "$OUT/mix.mp3")
# The peer in the same wall time: the four tracks one after the other, each at its own pace.
result=$(python3 - "$OUT/mix/mix" <<'PY'
import os, resource, subprocess, sys, time
folder = sys.argv[1]
start = time.monotonic()
before = resource.getrusage(resource.RUSAGE_CHILDREN)
for name in sorted(os.listdir(folder)):
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-re", "-i", os.path.join(folder, name),
                    "-af", "aresample=resampler=soxr", "-ac", "2", "-ar", "44100",
                    "-c:a", "libmp3lame", "-b:a", "128k", "-compression_level", "3", "-f", "mp3", "-y", "/dev/null"],
                   check=True)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
wall = time.monotonic() - start
# What four ffmpeg starts cost on their own (10 ms of input each), to tell it from the work.
before = resource.getrusage(resource.RUSAGE_CHILDREN)
for _ in range(4):
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "anullsrc=r=44100:cl=stereo", "-t", "0.01",
                    "-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3", "-y", "/dev/null"], check=True)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
starts = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
print(f"{cpu:.3f} {wall:.3f} {starts:.3f}")
PY
)
mix1=$(cpu_ticks "$mix_pid"); same1=$(cpu_ticks "$same_pid"); bytes1=$(stat -c %s "$OUT/mix.mp3")
read -r ffmpeg_cpu wall ffmpeg_starts <<<"$result"
hz=$(getconf CLK_TCK)
python3 - "$mix0" "$mix1" "$same0" "$same1" "$hz" "$ffmpeg_cpu" "$wall" "$bytes0" "$bytes1" "$load" "$ffmpeg_starts" <<'PY'
import sys
mix0, mix1, same0, same1, hz = (int(x) for x in sys.argv[1:6])
ffmpeg_cpu, wall = float(sys.argv[6]), float(sys.argv[7])
bytes0, bytes1 = int(sys.argv[8]), int(sys.argv[9])
load = sys.argv[10]
starts = float(sys.argv[11])
mix = (mix1 - mix0) / hz
same = (same1 - same0) / hz
print(f"audio played: {wall:.1f} s (4 tracks), load before: {load}")
print(f"streamd transcoding channel: {mix:.2f} s CPU = {100 * mix / wall:.2f} % of a core")
print(f"ffmpeg -re, same tracks:     {ffmpeg_cpu:.2f} s CPU = {100 * ffmpeg_cpu / wall:.2f} % of a core")
print(f"streamd passing channel:     {same:.2f} s CPU = {100 * same / wall:.2f} % of a core")
print(f"  of which 4 ffmpeg starts:   {starts:.2f} s CPU (10 ms of input each, measured after)")
print(f"ratio streamd/ffmpeg: {mix / ffmpeg_cpu:.2f}x, {mix / max(0.01, ffmpeg_cpu - starts):.2f}x without ffmpeg's starts")
print(f"listener received {(bytes1 - bytes0) / wall:.0f} bytes/s (128 kbit/s = 16,000)")
PY
