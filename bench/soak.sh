#!/usr/bin/env bash
# Soak: streamd under 500 churning listeners, 1,000 slowloris connections and a stream of hostile
# requests, while streamplay plays the library track after track through a fault proxy (cuts
# every 10-60 s, stalls of 1-8 s) and every decode is checked bit-exact against its reference
# (mpg123 -w for MP3, the file itself for WAV, a first clean streamplay decode for AAC).
# RSS, open descriptors and threads of both are sampled every 10 s into samples.csv.
# Loopback only; bounded by SOAK_MINUTES. Not part of `make bench` (bench/run.sh skips it).
#
#   SOAK_MINUTES=60        length of the loaded run (references and set-up come before it)
#   SOAK_OUT=DIR           where samples.csv, plays.jsonl, summary.txt go (default /tmp/soak-DATE)
#   SOAK_BIN=DIR           the streamd/streamplay to test (default: release build of this checkout)
#   SOAK_LISTENERS=500 SOAK_SLOWLORIS=1000 SOAK_WARMUP_MINUTES=5 SOAK_PROXY_KBYTES=256
#
# Exit 0 when nothing crashed, every track was bit-exact and streamd's descriptors came back
# to their baseline; summary.txt is rewritten every 10 s, so a cut-short run still has one.
set -euo pipefail
cd "$(dirname "$0")/.."
export SOAK_MINUTES="${SOAK_MINUTES:-60}"
export SOAK_OUT="${SOAK_OUT:-/tmp/soak-$(date -u +%Y%m%d-%H%M%S)}"
if [ -z "${SOAK_BIN:-}" ]; then
  scripts/deps.sh
  swift build -c release --product streamd >/dev/null
  swift build -c release --product streamplay >/dev/null
  SOAK_BIN="$(swift build -c release --show-bin-path)"
fi
export SOAK_BIN
[ -d media/out ] || make media
# 1,000 slowloris + 500 listeners + the proxy's pairs, on both ends of loopback.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 8192 ] || { echo "soak: need ulimit -n >= 8192 (have $(ulimit -n))" >&2; exit 1; }
mkdir -p "$SOAK_OUT"
echo "soak: $SOAK_MINUTES min, output in $SOAK_OUT"
exec python3 bench/soak.py
