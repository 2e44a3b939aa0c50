#!/usr/bin/env bash
# Prints what failed in a `swift test` log: failed tests, failed expectations and a crashed
# thread's frames. CI keeps only the tail of the output, and a crash otherwise ends it with
# register dumps and image lists instead of the test and the frames that matter.
set -uo pipefail
log=${1:?usage: test-failures.sh LOG}
echo
echo "==== what failed (full log: $log) ===="
grep -n -E "✘|error: |Test Case .* failed|with [0-9]+ failures?|failed after|recorded an issue|exceeded" "$log" | grep -v -E "^[0-9]+:.*passed|with 0 failures" | head -60
if grep -q -E "Program crashed|Fatal error|Signal [0-9]+:" "$log"; then
    echo "---- the crash ----"
    line=$(grep -n -m1 -E "Program crashed|Fatal error|Signal [0-9]+:" "$log" | cut -d: -f1)
    # The tests still running when it crashed (Swift Testing names each as it starts).
    head -n "$line" "$log" | grep -E "Test .* started|Test Case .* started" | tail -12
    sed -n "${line},$((line + 2))p" "$log"
    crashed=$(awk -v from="$line" 'NR > from && / crashed:$/ { print NR; exit }' "$log")
    [ -n "$crashed" ] && sed -n "${crashed},$((crashed + 30))p" "$log"
fi
echo "===="
