#!/usr/bin/env bash
# Runs fuzz targets for FUZZ_SECONDS each (default 60), FUZZ_JOBS at a time (default 2), at
# nice FUZZ_NICE (default 10). Targets: the arguments, or all of them. Each target's corpus grows
# in .build-fuzz/corpus/<target> (seeded from .build-fuzz/seeds/<target>); a crash, timeout or
# out-of-memory input is saved in .build-fuzz/crashes/<target>/ and makes the run fail.
# Prints one summary line per target: seconds, exec/s, cov, ft, new units, result.
# FUZZ_KEEP_GOING=1 (for long hunts): libFuzzer's fork mode, which records every crash and goes on.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${FUZZ_BUILD_DIR:-.build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-2}
NICE=${FUZZ_NICE:-10}
MEDIA=${STREAM_MEDIA_DIR:-media/out}
ALL=(analyze decode encode mpeg tags adts wav mp4 ts m3u8 playlist http range icy icystream response url api flac ogg oggdecode aiff alac flacdecode waveform subsonic rendition credentials lyrics)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${ALL[@]}")

Fuzz/build.sh
# Seeds are regenerated when the media changes (its .stamp) or the script does.
stamp="$OUT/seeds/.stamp"
want="$(cat "$MEDIA/.stamp" 2>/dev/null) $(sha1sum Fuzz/make-seeds.py | cut -c1-40)"
if [[ ! -f $stamp || "$(cat "$stamp")" != "$want" ]]; then
    rm -rf "$OUT/seeds"
    python3 Fuzz/make-seeds.py "$MEDIA" "$OUT/seeds"
    echo "$want" >"$stamp"
fi

run_one() {
    local target=$1 log="$OUT/logs/$1.log"
    mkdir -p "$OUT/corpus/$target" "$OUT/crashes/$target" "$OUT/logs"
    local args=(-max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
                -print_final_stats=1 -artifact_prefix="$OUT/crashes/$target/")
    [[ -f Fuzz/dict/$target.dict ]] && args+=(-dict="Fuzz/dict/$target.dict")
    [[ ${FUZZ_KEEP_GOING:-0} == 1 ]] && args+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    local status=0
    touch "$log.start"
    FUZZ_TARGET=$target nice -n "$NICE" "$OUT/streamfuzz" "${args[@]}" \
        "$OUT/corpus/$target" "$OUT/seeds/$target" >"$log" 2>&1 || status=$?
    # The last status line carries cov/ft; the final stats carry exec/s.
    local last cov ft execs units result
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
    execs=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$log" | tail -1)
    [[ -n $execs ]] || execs=$(sed -nE 's/.* exec\/s:? ([0-9]+).*/\1/p' <<<"$last")
    units=$(sed -nE 's/^stat::new_units_added: *([0-9]+).*/\1/p' "$log" | tail -1)
    local found
    found=$(find "$OUT/crashes/$target" -type f -newer "$log.start" | wc -l)
    if [[ $status -eq 0 && $found -eq 0 ]]; then result=ok; else
        status=${status/#0/1}
        result="FAILED (exit $status, $found new in $OUT/crashes/$target; $(grep -m1 -oE '(ERROR|==[0-9]+== ?ERROR|Fatal error|invariant failed|deadly signal|timeout|out-of-memory)[^\n]{0,120}' "$log" || echo see log); log $log)"
    fi
    printf '%-8s %4ss  exec/s %-7s cov %-6s ft %-7s new %-5s %s\n' \
        "$target" "$SECONDS_EACH" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${units:-?}" "$result"
    [[ $status -eq 0 ]]
}

failed=0
running=0
for target in "${targets[@]}"; do
    if [[ ! " ${ALL[*]} " == *" $target "* ]]; then echo "fuzz: unknown target $target (${ALL[*]})" >&2; exit 2; fi
    run_one "$target" &
    running=$((running + 1))
    if ((running >= JOBS)); then wait -n || failed=1; running=$((running - 1)); fi
done
while ((running > 0)); do wait -n || failed=1; running=$((running - 1)); done
exit $failed
