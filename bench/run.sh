#!/bin/sh
# Runs every benchmark of bench/ and prints one table (bench/README.md).
#
#   bench/run.sh                 configure + build build/bench (Release) if
#                                needed, run everything, print the table
#   PYOP_BENCH_BUILD=dir         use another build directory
#   PYOP_BENCH_REPS=N            repetitions per row (odd, default 7)
#   PYOP_BENCH_QUICK=1           tiny iteration counts (proves it runs)
#   PYOP_BENCH_RAW=1             also print each benchmark's own output
#
# Exit status: 0 when every benchmark ran (whether or not targets are met:
# these are numbers, not tests), 1 when one failed to build or run.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build=${PYOP_BENCH_BUILD:-$root/build/bench}

if [ ! -f "$build/CMakeCache.txt" ]; then
  # A fresh clone has no build root yet: the configure log goes beside $build.
  mkdir -p "$(dirname "$build")"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$build.configure.log" 2>&1 || {
    cat "$build.configure.log" >&2
    echo "bench/run.sh: configure failed" >&2
    exit 1
  }
fi
# Only what the benchmarks need: a broken test elsewhere does not stop them.
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target pyop_bench >"$build/bench-build.log" 2>&1 || {
  tail -n 40 "$build/bench-build.log" >&2
  echo "bench/run.sh: build failed (log: $build/bench-build.log)" >&2
  exit 1
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM
status=0
for b in bench_dispatch bench_scan bench_registry bench_load; do
  exe=$build/bin/$b
  [ -x "$exe" ] || { echo "# $b: not built (no shared libpython?)" >>"$out"; continue; }
  if ! "$exe" >>"$out" 2>"$out.err"; then
    echo "bench/run.sh: $b failed:" >&2
    cat "$out.err" >&2
    status=1
  fi
  rm -f "$out.err"
done

[ "${PYOP_BENCH_RAW:-}" = 1 ] && grep -v '^ROW|' "$out"

awk -F'|' '
  function fmt(v, u) { return u == "ns" ? sprintf("%.1f ns", v) : sprintf("%.2fx", v) }
  BEGIN {
    printf "%-4s %-62s %10s %10s %-5s %s\n", "id", "target", "measured", "limit", "met?", "raw medians"
  }
  $1 == "ROW" {
    id = $2; what = $3; v = $4 + 0; unit = $5; op = $6; lim = $7 + 0; raw = $8
    if (op == "info") { limit = "-"; met = "info" }
    else {
      limit = op " " fmt(lim, unit)
      ok = (op == "<=" && v <= lim) || (op == "<" && v < lim) || (op == ">=" && v >= lim)
      met = ok ? "yes" : "NO"
      if (!ok) missed++
      n++
    }
    printf "%-4s %-62s %10s %10s %-5s %s\n", id, what, fmt(v, unit), limit, met, raw
  }
  END { printf "\n%d of %d targets met\n", n - missed, n }
' "$out"
grep '^# .*skipped' "$out" || true
exit $status
