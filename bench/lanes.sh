#!/bin/sh
# Rows 10l, 10s, 10u (bench/README.md): interpreter lanes need CPython 3.12+, the
# build's default Python is 3.11. For each pyenv 3.12+ (GIL build, shared
# libpython) this builds libpyop with it as the default Python in
# PYOP_LANES_TREE_ROOT/py<ver> (configured once, rebuilt incrementally every
# run), builds bench/bench_lanes.c and prints, as lines and as run.sh ROW lines:
#   10l   2 threads, one instance each, in 2 lanes / 1 thread   target >= 1.6x
#         while the C control reaches >= 1.8x (else: machine busy)
#   10s   the same with one shared GIL (no lanes)               info
#   10u   1 thread in a lane / 1 thread without lanes           target <= 1.1x
# Numbers, not pass/fail; exit 0 when everything ran, 77 when no such Python.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
trees=${PYOP_LANES_TREE_ROOT:-$root/build/bench-lanes}
pyroot=${PYENV_ROOT:-${HOME:-/root}/.pyenv}
found=0
for exe in "$pyroot"/versions/3.1[2-9]*/bin/python3.1[2-9]; do
  [ -x "$exe" ] || continue
  "$exe" -c 'import sys, sysconfig; sys.exit(0 if sys.version_info >= (3, 12) and not sysconfig.get_config_var("Py_GIL_DISABLED") and (sysconfig.get_config_var("LDLIBRARY") or "").endswith(".so") else 1)' 2>/dev/null || continue
  found=1
  ver=$("$exe" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  tree=$trees/py$ver
  # Configured once; built every time (incremental), so the figures are the
  # checkout's and never a stale tree's.
  if [ ! -f "$tree/CMakeCache.txt" ]; then
    mkdir -p "$trees"
    cmake -S "$root" -B "$tree" -DPYOP_PYTHONS="$exe" -DBUILD_TESTING=OFF \
      -DCMAKE_BUILD_TYPE=Release >"$tree.log" 2>&1 || { tail -30 "$tree.log"; exit 1; }
  fi
  cmake --build "$tree" -j2 --target pyop pyop_bridges >>"$tree.log" 2>&1 ||
    { tail -30 "$tree.log"; exit 1; }
  cc -std=c11 -O2 -I"$root/include" -I"$tree/include" "$root/bench/bench_lanes.c" \
    -o "$tree/bench_lanes" -L"$tree/lib" -lpyop -Wl,-rpath,"$tree/lib" -lpthread
  b=$tree/bench_lanes plugins=$root/tests/lanes/plugins/pure
  set -- $("$b" lanes "$plugins")
  lanes_min=$2 lanes_med=$3 ctl_min=$5 ctl_med=$6 # best, median
  verdict=$(awk -v r="$lanes_min" -v c="$ctl_min" 'BEGIN {
    if (c < 1.8) printf "machine busy (C control %.2fx < 1.8x)", c;
    else if (r >= 1.6) print "met"; else print "NOT MET" }')
  echo "Python $ver row 10l: best ${lanes_min}x median ${lanes_med}x (C control best ${ctl_min}x median ${ctl_med}x), >= 1.6x: $verdict"
  # The same as rows of run.sh's table (bench_util.c's ROW format).
  case $verdict in
    met | "NOT MET") op=">=" raw="C control best ${ctl_min}x median ${ctl_med}x" ;;
    *) op="n/a>=" raw="not judged, $verdict; measured ${lanes_min}x (median ${lanes_med}x)" ;;
  esac
  echo "ROW|10l|Python $ver, 2 lanes: elementwise 2 threads / 1 thread|$lanes_med|x|$op|1.6|$raw|$lanes_min"
  set -- $("$b" shared "$plugins")
  echo "Python $ver row 10s (one GIL): best $2x median $3x (C control best $5x median $6x): info"
  echo "ROW|10s|Python $ver, one shared GIL: elementwise 2 threads / 1 thread|$3|x|info|0|C control best $5x median $6x|$2"
  set -- $("$b" single "$plugins" lanes); in_lane=$2
  set -- $("$b" single "$plugins"); plain=$2
  awk -v a="$in_lane" -v b="$plain" -v v="$ver" 'BEGIN {
    r = a / b; printf "Python %s row 10u: %s ns/call in a lane / %s ns/call without lanes = %.3fx, <= 1.1x: %s\n", v, a, b, r, (r <= 1.1 ? "met" : "NOT MET")
    printf "ROW|10u|Python %s: 1 thread in a lane / 1 thread without lanes (time per call)|%.3f|x|<=|1.1|%s ns / %s ns per call|%.3f\n", v, r, a, b, r }'
done
[ "$found" = 1 ] || { echo "skip: no CPython 3.12+ (GIL build) with a shared libpython"; exit 77; }
