#!/usr/bin/env bash
# Issue 25's getCoverArt?size=300 figure, cold (resized now, in a `streamd cover-worker`) and
# cached (memory, then the disk cache after a restart), on COVERS (default 40) albums whose
# cover.jpg is a 1200x1200 JPEG (~230 KB, grainy like a photo) (the generated 100,000-track library's covers are
# 48x48: nothing to shrink). Peers in the same run, on the same pictures:
#   - cold: the vipsthumbnail command (libvips, the same library streamd's worker loads), one
#     process per picture as streamd starts one worker per resize;
#   - cached: nginx serving the same thumbnails as static files over one keep-alive connection.
# Each figure is a median over the albums, requests one at a time; ratios are streamd/peer.
# With EMBEDDED=1 each picture is in its MP3's tag (ID3v2 APIC) instead of a cover.jpg beside
# it: the cached figure then shows what a hit costs with the tag not read (issue 25's leftover).
# usage: bench/subsonic-covers.sh   (STREAMD=binary, COVERS=N, EMBEDDED=1)
set -euo pipefail
cd "$(dirname "$0")/.."
COVERS=${COVERS:-40}
EMBEDDED=${EMBEDDED:-0}
if [ -n "${STREAMD:-}" ]; then BIN=$STREAMD; else
  swift build -c release --product streamd >/dev/null
  BIN="$(swift build -c release --show-bin-path)/streamd"
fi
command -v vipsthumbnail >/dev/null || { echo "no vipsthumbnail (Debian libvips-tools)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/streamd-covers-bench.XXXXXX")
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
ffmpeg -nostdin -v error -y -f lavfi -i sine=frequency=440:duration=0.2 -c:a libmp3lame "$WORK/tone.mp3"
for i in $(seq 1 "$COVERS"); do
  album="$WORK/library/Cover Bench/Album $i"
  mkdir -p "$album"
  mkdir -p "$WORK/pictures"
  # A different picture per album (another hue, grain like a photo's): each resize is its own work.
  ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=1200x1200:rate=1" -vf "hue=h=$((i * 9)),noise=alls=12:allf=u" \
    -frames:v 1 -q:v 3 "$WORK/pictures/$i.jpg"
  if [ "$EMBEDDED" = 1 ]; then
    ffmpeg -nostdin -v error -y -i "$WORK/tone.mp3" -i "$WORK/pictures/$i.jpg" -map 0 -map 1 -c copy -id3v2_version 3 \
      -metadata:s:v comment="Cover (front)" -metadata title="Song $i" -metadata artist="Cover Bench" \
      -metadata album="Album $i" "$album/01 Song.mp3"
  else
    ffmpeg -nostdin -v error -y -i "$WORK/tone.mp3" -c copy -metadata title="Song $i" -metadata artist="Cover Bench" \
      -metadata album="Album $i" "$album/01 Song.mp3"
    cp "$WORK/pictures/$i.jpg" "$album/cover.jpg"
  fi
done

start_streamd() {
  "$BIN" "$WORK/library" --port 0 --quiet --db "$WORK/catalog.db" >"$WORK/stdout" 2>"$WORK/stderr" &
  PID=$!
  PIDS+=($PID)
  for _ in $(seq 1 100); do grep -q listening "$WORK/stdout" && break; sleep 0.1; done
  BASE=$(sed -n 's/^listening on \(http:[^ ]*\)\/$/\1/p' "$WORK/stdout")
  [ -n "$BASE" ] || { echo "streamd did not start: $(cat "$WORK/stderr")" >&2; exit 1; }
  for _ in $(seq 1 600); do
    curl -sf "$BASE/api/status" | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if s.get("scans",0)>=1 and not s.get("scanning") else 1)' && break
    sleep 0.2
  done
}

# streamd: each album's cover at size 300, the first request cold, the second from memory.
# Then a restart: the first request again, from the disk cache.
measure() {
  python3 - "$BASE" "$WORK" "$1" <<'PY'
import http.client, json, os, statistics, sys, time, urllib.parse
base, work, mode = sys.argv[1], sys.argv[2], sys.argv[3]
url = urllib.parse.urlparse(base)
connection = http.client.HTTPConnection(url.hostname, url.port)
auth = "u=bench&p=bench&v=1.16.1&c=bench&f=json"
connection.request("GET", f"/rest/getAlbumList2?{auth}&type=alphabeticalByName&size=500")
albums = json.loads(connection.getresponse().read())["subsonic-response"]["albumList2"]["album"]
def fetch(album_id):
    started = time.monotonic()
    connection.request("GET", f"/rest/getCoverArt?{auth}&id={album_id}&size=300")
    response = connection.getresponse()
    body = response.read()
    return (time.monotonic() - started) * 1000, response.getheader("X-Cache"), body
times = {"MISS": [], "HIT": [], "other": []}
os.makedirs(os.path.join(work, "thumbs"), exist_ok=True)
for album in albums:
    for _ in range(1 if mode == "restart" else 2):
        ms, cache, body = fetch(album["id"])
        times.get(cache or "other", times["other"]).append(ms)
        if mode == "first" and cache == "MISS":
            with open(os.path.join(work, "thumbs", album["id"] + ".jpg"), "wb") as f:
                f.write(body)
def median(values):
    return f"{statistics.median(values):.2f} ms" if values else "none"
if mode == "first":
    print(f"streamd cold (resized in a worker): {len(times['MISS'])} covers, median {median(times['MISS'])}, "
          f"p90 {sorted(times['MISS'])[int(len(times['MISS']) * 0.9)]:.2f} ms" if times["MISS"] else "streamd cold: nothing resized")
    print(f"streamd cached (memory): {len(times['HIT'])} covers, median {median(times['HIT'])}")
    with open(os.path.join(work, "cold.txt"), "w") as f: f.write(str(statistics.median(times["MISS"]) if times["MISS"] else 0))
    with open(os.path.join(work, "hit.txt"), "w") as f: f.write(str(statistics.median(times["HIT"]) if times["HIT"] else 0))
else:
    print(f"streamd cached after a restart (disk): {len(times['HIT'])} covers, median {median(times['HIT'])}")
if times["other"]:
    print(f"  {len(times['other'])} answers were not resized (originals)")
PY
}

echo "covers: $COVERS albums, 1200x1200 JPEG each ($([ "$EMBEDDED" = 1 ] && echo "embedded in the MP3s" || echo "cover.jpg files")); $(nproc) cores; $(uptime)"
start_streamd
measure first
sample=$(ls "$WORK/thumbs" | head -1)
[ -n "$sample" ] && echo "thumbnail: $(ffprobe -v error -show_entries stream=codec_name,width,height -of csv=p=0 "$WORK/thumbs/$sample") (ffprobe)"
kill "$PID"; wait "$PID" 2>/dev/null || true
start_streamd
measure restart

# Peer, cold: vipsthumbnail per picture (a process each, as streamd's worker).
python3 - "$WORK" <<'PY'
import glob, os, statistics, subprocess, sys, time
work = sys.argv[1]
times = []
for index, cover in enumerate(sorted(glob.glob(os.path.join(work, "pictures", "*.jpg")))):
    started = time.monotonic()
    subprocess.run(["vipsthumbnail", cover, "--size", "300x300>", "-o", os.path.join(work, f"peer-{index}.jpg[Q=85,strip]")], check=True)
    times.append((time.monotonic() - started) * 1000)
cold = float(open(os.path.join(work, "cold.txt")).read())
peer = statistics.median(times)
print(f"peer vipsthumbnail (a process per picture): median {peer:.2f} ms; streamd cold / peer = {cold / peer:.2f}x")
PY

# Peer, cached: nginx serving the thumbnails streamd made, one keep-alive connection.
NGINX=/usr/sbin/nginx
NPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$WORK/nginx"
chmod 755 "$WORK" "$WORK/thumbs"; chmod 644 "$WORK/thumbs/"*
cat >"$WORK/nginx/nginx.conf" <<CONF
daemon off; pid $WORK/nginx/nginx.pid; error_log $WORK/nginx/error.log; worker_processes 1;
events { worker_connections 64; }
http { access_log off; client_body_temp_path $WORK/nginx/b; proxy_temp_path $WORK/nginx/p; fastcgi_temp_path $WORK/nginx/f;
  uwsgi_temp_path $WORK/nginx/u; scgi_temp_path $WORK/nginx/s;
  server { listen 127.0.0.1:$NPORT; root $WORK/thumbs; } }
CONF
"$NGINX" -p "$WORK/nginx" -e "$WORK/nginx/error.log" -c "$WORK/nginx/nginx.conf" &
PIDS+=($!)
for _ in $(seq 1 50); do curl -s "http://127.0.0.1:$NPORT/" -o /dev/null && break; sleep 0.1; done
python3 - "$WORK" "$NPORT" <<'PY'
import http.client, os, statistics, sys, time
work, port = sys.argv[1], int(sys.argv[2])
connection = http.client.HTTPConnection("127.0.0.1", port)
times = []
for name in sorted(os.listdir(os.path.join(work, "thumbs"))):
    for _ in range(2):
        started = time.monotonic()
        connection.request("GET", "/" + name)
        response = connection.getresponse()
        response.read()
        assert response.status == 200, response.status
        times.append((time.monotonic() - started) * 1000)
hit = float(open(os.path.join(work, "hit.txt")).read())
peer = statistics.median(times)
print(f"peer nginx (the thumbnails as static files): median {peer:.2f} ms; streamd cached / peer = {hit / peer:.2f}x")
PY
echo "load after: $(uptime)"
