#!/usr/bin/env bash
# Time from exec to "listening on ..." for streamd on a folder: the catalog's start-up scan.
# usage: bench/startup.sh STREAMD_BINARY FOLDER [RUNS]   (prints each run's ms, then the median)
set -euo pipefail
bin=$1 folder=$2 runs=${3:-5}
times=()
for ((i = 0; i < runs; i++)); do
    start=$(date +%s%N)
    coproc SERVER { exec "$bin" "$folder" --host 127.0.0.1 --port 0 --quiet 2>/dev/null; }
    read -r -t 600 line <&"${SERVER[0]}"
    end=$(date +%s%N)
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    [[ $line == listening* ]] || { echo "no listening line: $line" >&2; exit 1; }
    times+=($(( (end - start) / 1000000 )))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
echo "runs_ms: ${times[*]}  median_ms: ${sorted[$((runs / 2))]}  files: $(find "$folder" -type f | wc -l)"
