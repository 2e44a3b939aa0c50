#!/usr/bin/env bash
# HLS renditions (issue 24 item 4): time to the master playlist and to the first segment of a
# transcoded variant for a 5-minute FLAC, cold (nothing encoded: the variant's first request starts
# the whole-track encode and is answered, with an EVENT playlist, once its first segment is
# encoded; a segment not encoded yet is parked until it is) and cached (a restarted streamd on the
# same transcode cache). Cold is timed twice: to the first playlist, and to the first segment.
# Named peer, same run: ffmpeg packaging the same FLAC as Opus 128k fMP4 HLS and as MP3 128k HLS
# (`-f hls`, 6 s segments): its time to the first segment on disk and to the whole rendition.
# It reports, it does not gate. STREAMD=path (default: the release build).
set -uo pipefail
cd "$(dirname "$0")/.."
log() { echo "hls-ladder.sh: $*" >&2; }
die() { log "$*"; exit 1; }
for tool in sox flac ffmpeg python3; do command -v "$tool" >/dev/null || die "missing tool: $tool"; done
if [ -n "${STREAMD:-}" ]; then BIN=$STREAMD; else BIN="$(swift build -c release --show-bin-path 2>/dev/null)/streamd"; fi
[ -x "$BIN" ] || die "no streamd binary at $BIN (run: swift build -c release --product streamd)"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/streamd-hls-ladder.XXXXXX") || die "mktemp failed"
SPID=""
cleanup() { [ -n "$SPID" ] && { kill -TERM "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }; rm -rf "$TMP"; }
trap cleanup EXIT
mkdir -p "$TMP/music" "$TMP/cache"
sox -q -R -n -r 44100 -c 2 -b 16 "$TMP/src.wav" synth 300 sine 100-5000 pinknoise gain -6 || die "sox failed"
flac --silent --force -5 -o "$TMP/music/five.flac" "$TMP/src.wav" || die "flac failed"
rm -f "$TMP/src.wav"

start() {
  "$BIN" "$TMP/music" --host 127.0.0.1 --port 0 --quiet --db "$TMP/db.sqlite" --transcode-cache "$TMP/cache" \
    --hls-ladder 64,128,192 </dev/null >"$TMP/s.out" 2>"$TMP/s.err" &
  SPID=$!
  SPORT=""
  for _ in $(seq 600); do
    if [[ $(head -n 1 "$TMP/s.out" 2>/dev/null) =~ :([0-9]+)/$ ]]; then SPORT=${BASH_REMATCH[1]}; break; fi
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$SPORT" ] || die "streamd did not start: $(tail -3 "$TMP/s.err")"
  # The catalog scan of one file: wait until the track is listed.
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$SPORT/api/tracks" | grep -q five.flac && return 0; sleep 0.1; done
  die "the track was not catalogued"
}
stop() { kill -TERM "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=""; }

measure() { # label
  python3 - "$SPORT" "$1" "$TMP/figs" <<'PY'
import sys, time, urllib.request, urllib.error
port, label = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}/hls/five.flac/"
def get(path):
    while True:
        t = time.monotonic()
        try:
            with urllib.request.urlopen(base + path) as r:
                return r.read(), time.monotonic() - t
        except urllib.error.HTTPError as e:
            if e.code != 503: raise
            time.sleep(0.05)
t0 = time.monotonic(); get("master.m3u8"); master = time.monotonic() - t0
print(f"{label}: master.m3u8 {master * 1000:.1f} ms")
figs = open(sys.argv[3], "a")
for v in ("opus-128", "mp3-128"):
    t0 = time.monotonic()
    text, _ = get(v + "/index.m3u8")
    index = time.monotonic() - t0
    kind = "EVENT" if b"PLAYLIST-TYPE:EVENT" in text else "VOD"
    ext = "m4s" if v.startswith("opus") else "mp3"
    if v.startswith("opus"): get(v + "/init.mp4")
    get(v + "/seg-0." + ext)
    first = time.monotonic() - t0
    print(f"{label}: {v} index.m3u8 {index * 1000:.1f} ms ({kind}), first segment {first * 1000:.1f} ms")
    figs.write(f"{label}-{v.split('-')[0]} {first * 1000:.1f}\n")
    figs.write(f"{label}-playlist-{v.split('-')[0]} {index * 1000:.1f}\n")
if label == "cold":
    # Let both encodes end (the whole encode parks until then; 503 past the wait is retried), so
    # the restarted server finds them cached.
    for v in ("opus-128", "mp3-128"):
        get(v + "/rendition." + v.split("-")[0])
PY
}

start
measure cold
stop
start
measure cached
stop

for codec in opus mp3; do
  mkdir -p "$TMP/ff-$codec"
  if [ $codec = opus ]; then args=(-c:a libopus -b:a 128k -ar 48000 -hls_segment_type fmp4); ext=m4s; else args=(-c:a libmp3lame -b:a 128k -ar 48000); ext=ts; fi
  start_ns=$(date +%s%N)
  ffmpeg -nostdin -v error -y -i "$TMP/music/five.flac" "${args[@]}" -f hls -hls_time 6 -hls_playlist_type vod \
    "$TMP/ff-$codec/index.m3u8" &
  FPID=$!
  first=""
  while kill -0 $FPID 2>/dev/null; do
    if [ -z "$first" ] && [ -n "$(ls "$TMP/ff-$codec" | grep -E "index1\.$ext|index0\.$ext" | sed -n 2p)" ]; then first=$(( ($(date +%s%N) - start_ns) / 1000000 )); fi
    sleep 0.02
  done
  wait $FPID
  whole=$(( ($(date +%s%N) - start_ns) / 1000000 ))
  echo "peer ffmpeg -f hls $codec 128k: first segment complete ${first:-n/a} ms (the second one appears), whole rendition $whole ms"
  echo "peer-first-$codec ${first:-0}" >>"$TMP/figs"
  echo "peer-whole-$codec $whole" >>"$TMP/figs"
done
python3 - "$TMP/figs" <<'PY'
import sys
f = dict(l.split() for l in open(sys.argv[1]))
f = {k: float(v) for k, v in f.items()}
for c in ("opus", "mp3"):
    cold, cached = f[f"cold-{c}"], f[f"cached-{c}"]
    playlist = f[f"cold-playlist-{c}"]
    print(f"ratio {c}: streamd cold first playlist / ffmpeg's first segment = {playlist / max(f[f'peer-first-{c}'], 1):.2f}x "
          f"({playlist:.0f} ms against {f[f'peer-first-{c}']:.0f} ms)")
    print(f"ratio {c}: streamd cold first segment / ffmpeg's first segment = {cold / max(f[f'peer-first-{c}'], 1):.2f}x "
          f"({cold:.0f} ms); "
          f"/ ffmpeg's whole rendition = {cold / max(f[f'peer-whole-{c}'], 1):.2f}x; "
          f"streamd cached first segment / ffmpeg's first segment = {cached / max(f[f'peer-first-{c}'], 1):.3f}x")
PY
echo "load: $(uptime)"
