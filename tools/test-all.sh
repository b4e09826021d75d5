#!/usr/bin/env bash
# Builds libpyop and runs every test: the normal build (gcc, -Werror), the
# whole suite again under AddressSanitizer+UndefinedBehaviorSanitizer, the
# load/unload and execute tests under valgrind, the concurrency tests under
# ThreadSanitizer, and each libFuzzer target for a bounded time (clang).
#
#   tools/test-all.sh            everything (what CI runs)
#   PYOP_STAGES="build asan" tools/test-all.sh   a subset
#   PYOP_FUZZ_SECONDS=10 tools/test-all.sh       shorter fuzzing
#
# Not in the default set (CI's time): the stage `freethreaded`
#   PYOP_STAGES=freethreaded tools/test-all.sh
# builds a free-threaded CPython 3.13t from Debian trixie's python3.13
# source package once (~10 minutes on 2 cores; cached in $PYOP_FT_PREFIX,
# default ~/.cache/pyop/py313t), builds libpyop with that Python as its
# default (its bridge, and the tests and benchmarks linking its libpython),
# runs the threaded tests (label threads) and the parallel benchmark
# (bench/README.md, row 10) there; with PYOP_FT_TSAN=1 also the threaded
# tests in a ThreadSanitizer build for it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${PYOP_BUILD_ROOT:-$here/build}
stages=${PYOP_STAGES:-"build asan valgrind tsan fuzz"}
fuzz_seconds=${PYOP_FUZZ_SECONDS:-60}
jobs=${PYOP_JOBS:-$(nproc)}
ft_prefix=${PYOP_FT_PREFIX:-${HOME:-/root}/.cache/pyop/py313t}

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

# intercept_tls_get_addr=0: clang 14's ThreadSanitizer guesses the extent of
# a dynamic TLS block (a dlopen'd libpython's or bridge's, first touched by a
# thread) from a "glibc 2.19 header" it reads just before any block that
# starts 16 bytes into a page; glibc 2.36 has no such header, so on that heap
# layout it reads bytes of some other allocation as a range of ~247 TB and
# dies ("ThreadSanitizer failed to allocate 0xf6c7ffffe000 bytes", seen in
# lanes.real). Without the interceptor, those blocks are ordinary malloc
# chunks to TSan, whose allocator already resets their shadow.
tsan_options=halt_on_error=1:second_deadlock_stack=1:intercept_tls_get_addr=0

run_tsan() {
  CC=clang configure_build "$out/tsan" -DCMAKE_BUILD_TYPE=Debug -DPYOP_TSAN=ON &&
    (cd "$out/tsan" && TSAN_OPTIONS=$tsan_options \
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

# The free-threaded CPython of stage freethreaded, built once into
# $ft_prefix: the upstream tarball of Debian trixie's python3.13 source
# package, fetched with a private APT configuration (one deb-src line, its
# own lists, cache and state: the system's are not touched and nothing is
# installed), configured --disable-gil --enable-shared.
ft_python_build() {
  local py=$ft_prefix/bin/python3.13t
  if [ -x "$py" ] && "$py" -c 'import sys; sys.exit(sys._is_gil_enabled())' 2>/dev/null; then
    echo "free-threaded Python: $py (cached)"
    return 0
  fi
  local work apt
  work=$(mktemp -d "${TMPDIR:-/tmp}/pyop-py313t.XXXXXX")
  apt=$work/apt
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/state"
  : >"$apt/state/status"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
    "http://deb.debian.org/debian trixie main" >"$apt/sources.list"
  printf '%s\n' "Dir::Etc::SourceList \"$apt/sources.list\";" \
    "Dir::Etc::SourceParts \"$apt/none\";" "Dir::State \"$apt/state\";" \
    "Dir::State::Lists \"$apt/lists\";" "Dir::Cache \"$apt/cache\";" \
    "Debug::NoLocking \"1\";" >"$apt/apt.conf"
  echo "building a free-threaded CPython 3.13 into $ft_prefix (log: $work/build.log)"
  (
    set -e
    export APT_CONFIG=$apt/apt.conf
    apt-get update -q
    cd "$work"
    apt-get source --download-only python3.13
    tar xf python3.13_*.orig.tar.xz
    mkdir build
    cd build
    ../Python-3.13*/configure --disable-gil --enable-shared --with-ensurepip=no \
      --prefix="$ft_prefix" LDFLAGS="-Wl,-rpath,$ft_prefix/lib"
    make -j"$jobs"
    make install
  ) >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; return 1; }
  "$py" -c 'import sys; sys.exit(sys._is_gil_enabled())' ||
    { echo "$py is not free-threaded"; return 1; }
  rm -rf "$work"
}

run_freethreaded() {
  ft_python_build || return 1
  local dir=$out/freethreaded
  configure_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPYOP_PYTHONS="$ft_prefix/bin/python3.13t" || return 1
  # The threaded tests, and the Python package's (the loader's free-threaded case).
  (cd "$dir" && ctest -j"$jobs" --output-on-failure --timeout 600 -L threads &&
     ctest --output-on-failure --timeout 600 -R '^python\.pyop$') || return 1
  # Numbers, not a test (bench/README.md, row 10): printed, never failing.
  cmake --build "$dir" -j"$jobs" --target bench_parallel >/dev/null &&
    "$dir/bin/bench_parallel" || return 1
  # PYOP_FT_TSAN=1: the threaded tests again in a ThreadSanitizer build for
  # that Python (its libpython is not instrumented: tests/tsan-free-threaded.supp).
  if [ "${PYOP_FT_TSAN:-}" = 1 ]; then
    CC=clang configure_build "$out/freethreaded-tsan" -DCMAKE_BUILD_TYPE=Debug -DPYOP_TSAN=ON \
      -DPYOP_PYTHONS="$ft_prefix/bin/python3.13t" &&
      (cd "$out/freethreaded-tsan" &&
         TSAN_OPTIONS=$tsan_options:suppressions=$here/tests/tsan-free-threaded.supp \
         ctest -j"$jobs" --output-on-failure --timeout 900 -L threads)
  fi
}

mkdir -p "$out"
for s in $stages; do
  case $s in
    build) stage build run_build ;;
    asan) stage asan run_asan ;;
    valgrind) stage valgrind run_valgrind ;;
    tsan) stage tsan run_tsan ;;
    fuzz) stage fuzz run_fuzz ;;
    freethreaded) stage freethreaded run_freethreaded ;;
    *) echo "unknown stage $s"; exit 2 ;;
  esac
done
echo
echo "stages: $passed passed, $failed failed${failures:+ (${failures[*]})}"
[ "$failed" -eq 0 ]
