#!/usr/bin/env bash
# Builds libpyop and runs every test: the normal build (gcc, -Werror), the
# whole suite again under AddressSanitizer+UndefinedBehaviorSanitizer, the
# load/unload and execute tests under valgrind, the concurrency tests under
# ThreadSanitizer, and each libFuzzer target for a bounded time (clang).
#
#   tools/test-all.sh            everything (what CI runs)
#   PYOP_STAGES="build asan" tools/test-all.sh   a subset
#   PYOP_FUZZ_SECONDS=10 tools/test-all.sh       shorter fuzzing
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${PYOP_BUILD_ROOT:-$here/build}
stages=${PYOP_STAGES:-"build asan valgrind tsan fuzz"}
fuzz_seconds=${PYOP_FUZZ_SECONDS:-60}
jobs=${PYOP_JOBS:-$(nproc)}

"$here/tools/install-deps.sh"

passed=0; failed=0; failures=()
stage() { # stage NAME COMMAND...
  local name=$1; shift
  echo "=== stage: $name"
  if "$@"; then passed=$((passed + 1)); echo "=== stage $name: ok"
  else failed=$((failed + 1)); failures+=("$name"); echo "=== stage $name: FAILED"; fi
}

configure_build() { # DIR [cmake args...]
  local dir=$1; shift
  cmake -S "$here" -B "$dir" -DPYOP_WERROR=ON "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j"$jobs"
}

run_build() {
  configure_build "$out/release" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    (cd "$out/release" && ctest -j"$jobs" --output-on-failure --timeout 600 -LE valgrind)
}

run_asan() {
  # CPython keeps some allocations until exit by design; leaks are checked by
  # valgrind on our own code instead (tests labelled valgrind; suppressions in
  # tests/unit/valgrind-ld.supp and bridge/valgrind-python.supp).
  configure_build "$out/asan" -DCMAKE_BUILD_TYPE=Debug -DPYOP_SANITIZE=ON &&
    (cd "$out/asan" && ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
       UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
       ctest -j"$jobs" --output-on-failure --timeout 900 -LE no-asan)
}

run_valgrind() {
  [ -d "$out/release" ] || configure_build "$out/release"
  (cd "$out/release" && ctest --output-on-failure --timeout 1800 -L valgrind)
}

run_tsan() {
  CC=clang configure_build "$out/tsan" -DCMAKE_BUILD_TYPE=Debug -DPYOP_TSAN=ON &&
    (cd "$out/tsan" && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
       ctest -j"$jobs" --output-on-failure --timeout 900 -L threads)
}

run_fuzz() {
  CC=clang configure_build "$out/fuzz" -DCMAKE_BUILD_TYPE=Debug -DPYOP_FUZZ=ON -DBUILD_TESTING=ON || return 1
  local ok=0 t
  for t in "$out"/fuzz/bin/fuzz_*; do
    [ -x "$t" ] || continue
    local name; name=$(basename "$t")
    local corpus="$here/tests/fuzz/corpus/${name#fuzz_}"
    local work="$out/fuzz/corpus-$name"; mkdir -p "$work"
    echo "--- $name for ${fuzz_seconds}s"
    "$t" -max_total_time="$fuzz_seconds" -print_final_stats=1 "$work" "$corpus" \
      >"$out/fuzz/$name.log" 2>&1 || { tail -50 "$out/fuzz/$name.log"; ok=1; }
    grep -E 'stat::number_of_executed_units|Done' "$out/fuzz/$name.log" | tail -2 || true
  done
  return $ok
}

mkdir -p "$out"
for s in $stages; do
  case $s in
    build) stage build run_build ;;
    asan) stage asan run_asan ;;
    valgrind) stage valgrind run_valgrind ;;
    tsan) stage tsan run_tsan ;;
    fuzz) stage fuzz run_fuzz ;;
    *) echo "unknown stage $s"; exit 2 ;;
  esac
done
echo
echo "stages: $passed passed, $failed failed${failures:+ (${failures[*]})}"
[ "$failed" -eq 0 ]
