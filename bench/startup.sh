#!/usr/bin/env bash
# Time from exec to "listening on ..." for streamd on a folder. Since issue 14 streamd listens
# before it scans (the catalog comes from its database), so this is the start-up cost alone; the
# first run starts from an empty database, the others from the warm one. bench/library.sh has
# the scan figures.
# usage: bench/startup.sh STREAMD_BINARY FOLDER [RUNS]   (prints each run's ms, then the median)
set -euo pipefail
bin=$1 folder=$2 runs=${3:-5}
db_dir=$(mktemp -d "${TMPDIR:-/tmp}/streamd-startup.XXXXXX")
trap 'rm -rf "$db_dir"' EXIT
times=()
for ((i = 0; i < runs; i++)); do
    start=$(date +%s%N)
    coproc SERVER { exec "$bin" "$folder" --host 127.0.0.1 --port 0 --quiet --db "$db_dir/catalog.db" 2>/dev/null; }
    read -r -t 600 line <&"${SERVER[0]}"
    end=$(date +%s%N)
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    [[ $line == listening* ]] || { echo "no listening line: $line" >&2; exit 1; }
    times+=($(( (end - start) / 1000000 )))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
echo "runs_ms: ${times[*]}  median_ms: ${sorted[$((runs / 2))]}  files: $(find "$folder" -type f | wc -l)"
