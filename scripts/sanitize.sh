#!/usr/bin/env bash
# `make sanitize`: the whole test suite under AddressSanitizer, then under ThreadSanitizer, each
# in its own build folder (.build-asan, .build-tsan). The end-to-end tests start the streamd and
# streamplay of that build, so the servers and players they drive are sanitized too. Every
# process writes its reports to its own file under $SANITIZE_LOGS/<sanitizer>/ (log_path), which
# is how reports of child processes are caught whether or not a test looks at their stderr.
# Fails when a suite fails or when any report was written. SANITIZERS="thread" runs just one.
set -uo pipefail
cd "$(dirname "$0")/.."
SANITIZERS="${SANITIZERS:-address thread}"
LOGS="${SANITIZE_LOGS:-$PWD/.build-sanitize-logs}"
MEDIA_DIR="$PWD/media/out"
status=0
summary=()
for sanitizer in $SANITIZERS; do
  case "$sanitizer" in
    address) scratch=.build-asan; scale=4 ;;
    thread)  scratch=.build-tsan; scale=15 ;;
    *) echo "sanitize: unknown sanitizer '$sanitizer'" >&2; exit 2 ;;
  esac
  dir="$LOGS/$sanitizer"
  rm -rf "$dir"
  mkdir -p "$dir"
  started=$(date +%s)
  echo "== $sanitizer: building in $scratch"
  if ! swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch"; then
    summary+=("$sanitizer: build failed")
    status=1
    continue
  fi
  echo "== $sanitizer: testing (reports go to $dir)"
  # The test process (and only it: %b is the binary's name) reads lsan.supp plus
  # lsan-test-process.supp, for leaks inside the Foundation it uses to drive the servers.
  cat scripts/lsan.supp scripts/lsan-test-process.supp > "$dir/lsan-test-process.supp"
  echo "suppressions=$dir/lsan-test-process.supp" > "$dir/lsan-streamdPackageTests.xctest.options"
  # Timing bounds in the tests are multiplied by STREAM_TEST_TIME_SCALE: sanitized code runs
  # several times slower, which is not what those tests measure. STREAM_TEST_SANITIZER turns off
  # the peak-RSS bounds (a sanitizer's shadow memory and quarantine are not the program's).
  # Swift's crash handler is off: left on, it reads a crashed thread's stack to print its
  # backtrace, which AddressSanitizer reports as a stack overflow of the handler (a report that
  # names no frame of the crash). A trap still prints Swift's "Fatal error" line, and a fault
  # drill's worker still dies of its signal, which is what those tests check.
  STREAM_MEDIA_DIR="$MEDIA_DIR" STREAM_TEST_TIME_SCALE="$scale" STREAM_TEST_SANITIZER="$sanitizer" \
  SWIFT_BACKTRACE=enable=no \
  ASAN_OPTIONS="log_path=$dir/report:detect_leaks=1:abort_on_error=0:suppressions=$PWD/scripts/asan.supp" \
  LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0:include_if_exists=$dir/lsan-%b.options" \
  TSAN_OPTIONS="log_path=$dir/report:halt_on_error=0:second_deadlock_stack=1" \
    swift test --skip-build --sanitize="$sanitizer" --scratch-path "$scratch" 2>&1 | tee "$dir/test.log"
  tests=${PIPESTATUS[0]}
  shopt -s nullglob
  reports=("$dir"/report.*)
  shopt -u nullglob
  seconds=$(( $(date +%s) - started ))
  count=0
  for r in "${reports[@]}"; do
    n=$(grep -c '^WARNING: ThreadSanitizer\|^==[0-9]*==ERROR: \(AddressSanitizer\|LeakSanitizer\)' "$r")
    count=$(( count + (n > 0 ? n : 1) ))
  done
  summary+=("$sanitizer: tests exit $tests, $count report(s) in ${#reports[@]} file(s), ${seconds} s")
  if [ "$tests" -ne 0 ] || [ ${#reports[@]} -gt 0 ]; then
    status=1
    for r in "${reports[@]}"; do echo "---- $r"; head -60 "$r"; done
  fi
done
echo "== sanitize summary"
printf '%s\n' "${summary[@]}"
exit $status
