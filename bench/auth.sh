#!/usr/bin/env bash
# Failed-login back-off (issue 25): an attacker guessing a password as fast as it can, from one
# address, against a valid user logging in meanwhile from their own address.
#   - streamd with two accounts (alice, the attacked admin; bob); the attacker (127.0.0.1) sends
#     `GET /api/tracks` with Basic alice:<guess>, one request after another (curl keep-alive
#     batches), for SECONDS (60); the valid user (alice, from 127.0.0.2, where she logged in
#     before) logs in every 2 s (`POST /api/login`) and reads a page;
#   - counted: the attacker's guesses the server judged (401: the password was checked) per
#     minute (the issue's bound: <= 10), the ones refused unjudged in the back-off (429), and
#     the valid user's logins (all must succeed) with their latency (p50/max);
#   - the peer, in the same run with the same loop: nginx-light's auth_basic (htpasswd, apr1),
#     which has no back-off: the guesses per minute it judges.
# usage: bench/auth.sh [SECONDS]   (STREAMD=binary)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_RUN=${1:-60}
scripts/deps.sh
if [ -n "${STREAMD:-}" ]; then BIN=$STREAMD; else
  swift build -c release --product streamd >/dev/null
  BIN="$(swift build -c release --show-bin-path)/streamd"
fi
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
mkdir -p "$WORK/music"
cp media/out/cbr-128k-44k.mp3 "$WORK/music/" 2>/dev/null || cp /work/main/media/out/cbr-128k-44k.mp3 "$WORK/music/"
DB="$WORK/catalog.db"
echo "alice-password" | "$BIN" user add alice --admin --folder "$WORK/music" --db "$DB" >/dev/null
echo "bob-password" | "$BIN" user add bob --folder "$WORK/music" --db "$DB" >/dev/null
"$BIN" "$WORK/music" --db "$DB" --host 127.0.0.1 --port 0 >"$WORK/streamd.out" 2>"$WORK/streamd.err" &
PIDS+=($!)
for _ in $(seq 100); do grep -q listening "$WORK/streamd.out" && break; sleep 0.1; done
PORT=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/streamd.out" | head -1)
URL="http://127.0.0.1:$PORT"
# alice has logged in from her address before the attack (her known address).
curl -s -o /dev/null --interface 127.0.0.2 -X POST -u alice:alice-password "$URL/api/login"

# The attacker: batches of 20 guesses on one keep-alive connection (curl --next), until time is up.
attack() {  # $1 = base URL, $2 = output file
  local end=$(( $(date +%s) + SECONDS_RUN )) n=0
  while [ "$(date +%s)" -lt "$end" ]; do
    local args=()
    for _ in $(seq 20); do n=$((n + 1)); args+=(-s -o /dev/null -w '%{http_code}\n' -u "alice:guess$n" "$1/api/tracks" --next); done
    curl "${args[@]}" -s -o /dev/null -w '%{http_code}\n' -u "alice:guess$((n + 1))" "$1/api/tracks" >>"$2" 2>/dev/null || true
  done
}
# The valid user: a login and a page every 2 s from 127.0.0.2; latency of the login in ms.
valid_user() {
  local end=$(( $(date +%s) + SECONDS_RUN ))
  while [ "$(date +%s)" -lt "$end" ]; do
    curl -s -o /dev/null --interface 127.0.0.2 -X POST -u alice:alice-password -w '%{http_code} %{time_total}\n' "$URL/api/login" >>"$WORK/valid.txt"
    curl -s -o /dev/null --interface 127.0.0.2 -u alice:alice-password -w '%{http_code}\n' "$URL/api/tracks" >>"$WORK/valid-page.txt"
    sleep 2
  done
}
echo "load before: $(uptime)"
attack "$URL" "$WORK/attack.txt" &
A=$!
valid_user &
V=$!
wait $A $V
judged=$(grep -c '^401' "$WORK/attack.txt" || true)
refused=$(grep -c '^429' "$WORK/attack.txt" || true)
total=$(wc -l <"$WORK/attack.txt")
minutes=$(echo "scale=3; $SECONDS_RUN / 60" | bc)
per_minute=$(echo "scale=1; $judged / $minutes" | bc)
logins=$(wc -l <"$WORK/valid.txt"); ok=$(grep -c '^200' "$WORK/valid.txt" || true)
pages_ok=$(grep -c '^200' "$WORK/valid-page.txt" || true); pages=$(wc -l <"$WORK/valid-page.txt")
p50=$(awk '{print $2 * 1000}' "$WORK/valid.txt" | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')
max=$(awk '{print $2 * 1000}' "$WORK/valid.txt" | sort -n | tail -1)
echo "streamd: attacker sent $total guesses in ${SECONDS_RUN} s; judged (401) $judged = $per_minute a minute (bound <= 10); refused in back-off (429) $refused"
echo "streamd: valid user from her own address: $ok/$logins logins OK, $pages_ok/$pages pages OK, login p50 ${p50} ms, max ${max} ms"
echo "streamd: back-off log lines: $(grep -c 'failed login' "$WORK/streamd.err" || true) failures logged, $(grep -c 'refused: back-off' "$WORK/streamd.err" || true) refusals logged"

# The peer: nginx auth_basic, the same attack for the same time.
NGINX=/usr/sbin/nginx
NPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$WORK/nginx/www"; echo ok >"$WORK/nginx/www/index.html"
printf 'alice:%s\n' "$(openssl passwd -apr1 alice-password)" >"$WORK/nginx/htpasswd"
# nginx's workers run as nobody when started as root: they must read the password file.
chmod 755 "$WORK" "$WORK/nginx" "$WORK/nginx/www"; chmod 644 "$WORK/nginx/htpasswd" "$WORK/nginx/www/index.html"
cat >"$WORK/nginx/nginx.conf" <<EOF
daemon off; pid $WORK/nginx/nginx.pid; error_log $WORK/nginx/error.log; worker_processes 2;
events { worker_connections 256; }
http { access_log off; client_body_temp_path $WORK/nginx/b; proxy_temp_path $WORK/nginx/p; fastcgi_temp_path $WORK/nginx/f;
  uwsgi_temp_path $WORK/nginx/u; scgi_temp_path $WORK/nginx/s;
  server { listen 127.0.0.1:$NPORT; root $WORK/nginx/www; location / { auth_basic "bench"; auth_basic_user_file $WORK/nginx/htpasswd; } } }
EOF
"$NGINX" -p "$WORK/nginx" -e "$WORK/nginx/error.log" -c "$WORK/nginx/nginx.conf" &
PIDS+=($!)
sleep 0.5
attack "http://127.0.0.1:$NPORT" "$WORK/attack-nginx.txt"
peer_judged=$(grep -c '^401' "$WORK/attack-nginx.txt" || true)
peer_per_minute=$(echo "scale=1; $peer_judged / $minutes" | bc)
echo "peer nginx auth_basic (no back-off): judged $peer_judged guesses = $peer_per_minute a minute (answers: $(sort "$WORK/attack-nginx.txt" | uniq -c | tr -s ' \n' ' '))"
if [ "$judged" -gt 0 ]; then
  echo "ratio: nginx judges $(echo "scale=0; $peer_judged / $judged" | bc)x the guesses streamd does"
fi
echo "load after: $(uptime)"
