#!/bin/sh
# Rows 10l, 10s, 10u, 10t, 10m (bench/README.md): interpreter lanes need CPython
# 3.12+, the build's default Python is 3.11. For each pyenv 3.12+ (GIL build,
# shared libpython) this builds libpyop with it as the default Python in
# PYOP_LANES_TREE_ROOT/py<ver> (configured once, rebuilt incrementally every
# run), builds bench/bench_lanes.c and prints, as lines and as run.sh ROW lines:
#   10l   2 threads, one instance each, in 2 lanes / 1 thread   target >= 1.6x
#         judged on pairs of repetitions (op 1 thread, op 2, C control 2,
#         C 1), each run's time less its threads' run-queue delay (the
#         kernel's schedstat): a pair counts when the op's threads had a
#         core >= 80% of their time and the C control reads >= 1.8x; the
#         median ratio of up to 9 such pairs out of at most 27, at least 3
#         (else: machine busy). bench_lanes.c's head says why and how.
#   10s   the same with one shared GIL (no lanes)               info
#   10u   1 thread in a lane / 1 thread without lanes           target <= 1.1x
#         (CPU time per call, best of 5 alternating processes each)
#   10t   pyop_load with 2 lanes / with 1 (a process per load)  target <= 1.3x
#         judged on the pairs of loads whose C control reads >= 1.8x
#         (wall times: the loads' start-up threads are libpyop's)
#   10m   the memory a lane adds (RSS of a load with 2 lanes minus with 1)   info
# Only an optimized build (Release or RelWithDebInfo, no sanitizer) is judged:
# any other tree (PYOP_LANES_TREE_ROOT pointing at a Debug build) prints its
# figures as "not judged". PYOP_BENCH_LANES_BROKEN=serial measures 10l with both
# instances in one lane (the op forced serial): the gate must say NOT MET.
# Where lanes are off (libpyop keeps them off on CPython 3.12.0-3.12.3) the
# rows that need them say so, n/a, and 10s still runs.
# Every bench_lanes process keeps its two workers to two cores and asks for
# niceness PYOP_BENCH_LANES_NICE (default -10; 0: none) in a session of its
# own (bench/README.md, "How 10l is judged").
# Numbers, not pass/fail; exit 0 when everything ran, 77 when no such Python.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
trees=${PYOP_LANES_TREE_ROOT:-$root/build/bench-lanes}
pyroot=${PYENV_ROOT:-${HOME:-/root}/.pyenv}
mode10l=lanes
# The niceness bench_lanes asks for in a session of its own (claim_cores in
# bench_lanes.c), so that other sessions' builds leave its two workers their
# cores; 10l's witness judges what it got.
PYOP_BENCH_LANES_NICE=${PYOP_BENCH_LANES_NICE:--10}
export PYOP_BENCH_LANES_NICE
[ "${PYOP_BENCH_LANES_BROKEN:-}" = serial ] && mode10l=serial
found=0

# judge FIGURE OP LIMIT COUNTED PAIRS WHY: the verdict of a paired row (WHY:
# what a pair that counts had, for "machine busy").
judge() {
  awk -v f="$1" -v op="$2" -v lim="$3" -v n="$4" -v of="$5" -v why="$6" -v opt="$optimized" -v bt="$btype" 'BEGIN {
    if (!opt) printf "not judged: a %s build (only Release or RelWithDebInfo without sanitizers is)", bt;
    else if (n < 3) printf "machine busy (%d of %d pairs had %s)", n, of, why;
    else if ((op == ">=" && f >= lim) || (op == "<=" && f <= lim)) print "met";
    else print "NOT MET" }'
}

# row ID WHAT MEDIAN OP LIMIT RAW FIGURE VERDICT: the run.sh ROW line.
row() {
  case $8 in
    met | "NOT MET") echo "ROW|$1|$2|$3|x|$4|$5|$6|$7" ;;
    *) echo "ROW|$1|$2|$3|x|n/a$4|$5|not judged, $8; measured $7x ($6)|$7" ;;
  esac
}

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
  btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$tree/CMakeCache.txt")
  optimized=0
  case $btype in Release | RelWithDebInfo) optimized=1 ;; esac
  grep -Eq '^PYOP_(SANITIZE|TSAN):BOOL=(ON|1|TRUE)' "$tree/CMakeCache.txt" && optimized=0
  cc -std=c11 -O2 -I"$root/include" -I"$tree/include" "$root/bench/bench_lanes.c" \
    -o "$tree/bench_lanes" -L"$tree/lib" -lpyop -Wl,-rpath,"$tree/lib" -lpthread
  b=$tree/bench_lanes plugins=$root/tests/lanes/plugins/pure

  # 10s needs no lanes; the others are not run where lanes are off.
  set -- $(echo "$("$b" shared "$plugins")" | grep '^ratio ')
  echo "Python $ver row 10s (one GIL): best $2x median $3x (C control best $5x median $6x): info"
  echo "ROW|10s|Python $ver, one shared GIL: elementwise 2 threads / 1 thread|$3|x|info|0|C control best $5x median $6x|$2"
  probe=$("$b" probe "$plugins")
  if [ "$probe" != "lanes on" ]; then
    why=$(echo "$probe" | sed 's/^lanes off: //; s/|/:/g')
    echo "Python $ver rows 10l 10u 10t 10m: not run: lanes are off here ($why)"
    for r in "10l|Python $ver, 2 lanes: elementwise 2 threads / 1 thread|0|x|n/a>=|1.6" \
             "10u|Python $ver: 1 thread in a lane / 1 thread without lanes (time per call)|0|x|n/a<=|1.1" \
             "10t|Python $ver: pyop_load with 2 lanes / with 1 (a process per load)|0|x|n/a<=|1.3"; do
      echo "ROW|$r|not run: lanes are off on this Python ($why)|"
    done
    continue
  fi

  out=$("$b" "$mode10l" "$plugins")
  set -- $(echo "$out" | grep '^ratio ')
  best=$2 med=$3 ctl_best=$5 ctl_med=$6
  prio=$(echo "$out" | sed -n 's/^priority //p')
  set -- $(echo "$out" | grep '^judged ')
  fig=$2 counted=$3 pairs=$4 witness=$5
  verdict=$(judge "$fig" ">=" 1.6 "$counted" "$pairs" "the op's threads on a core >= 80% of their time and the C control >= 1.8x")
  [ "$witness" = schedstat ] || [ "$optimized" = 0 ] ||
    verdict="not judged: the kernel does not give a thread's run-queue delay (/proc/thread-self/schedstat)"
  what="2 lanes: elementwise 2 threads / 1 thread"
  [ "$mode10l" = serial ] && what="$what (BROKEN on purpose: both instances in lane 1)"
  echo "Python $ver row 10l$([ "$mode10l" = serial ] && echo " (both instances in lane 1)"): judged ${fig}x over $counted of $pairs pairs (their median, run-queue delay subtracted; wall time of all pairs: best ${best}x median ${med}x, C control best ${ctl_best}x median ${ctl_med}x; $prio), >= 1.6x: $verdict"
  row 10l "Python $ver, $what" "$med" ">=" 1.6 \
    "$counted of $pairs pairs with two cores (run-queue delay <= 20%) and the C control >= 1.8x; wall: op best ${best}x, C control best ${ctl_best}x median ${ctl_med}x" \
    "$fig" "$verdict"

  # 10u: the two single-thread processes alternate, five of each; judged on
  # the best CPU time per call of each side (a neighbour taking the core does
  # not inflate it), the wall times beside.
  in_lane= plain= in_cpu= plain_cpu=
  for k in 1 2 3 4 5; do
    set -- $("$b" single "$plugins" lanes); in_lane="$in_lane $2" in_cpu="$in_cpu $5"
    set -- $("$b" single "$plugins"); plain="$plain $2" plain_cpu="$plain_cpu $5"
  done
  best() { echo $* | tr ' ' '\n' | sort -n | head -1; }
  in_lane=$(best $in_lane) plain=$(best $plain) in_cpu=$(best $in_cpu) plain_cpu=$(best $plain_cpu)
  v10u=$(awk -v a="$in_cpu" -v b="$plain_cpu" 'BEGIN { printf "%s", (a / b <= 1.1 ? "met" : "NOT MET") }')
  [ "$optimized" = 1 ] || v10u="not judged: a $btype build (only Release or RelWithDebInfo without sanitizers is)"
  awk -v a="$in_cpu" -v b="$plain_cpu" -v wa="$in_lane" -v wb="$plain" -v v="$ver" -v verdict="$v10u" 'BEGIN {
    r = a / b; w = wa / wb
    printf "Python %s row 10u: %s ns CPU/call in a lane / %s ns CPU/call without lanes = %.3fx (wall %s / %s ns = %.3fx), <= 1.1x: %s\n", v, a, b, r, wa, wb, w, verdict
    op = (verdict == "met" || verdict == "NOT MET") ? "<=" : "n/a<="
    printf "ROW|10u|Python %s: 1 thread in a lane / 1 thread without lanes (CPU time per call)|%.3f|x|%s|1.1|%s / %s ns CPU per call; wall %s / %s ns (%.3fx)|%.3f\n", v, r, op, a, b, wa, wb, w, r }'

  # 10t, 10m: pairs of loads, each in a process of its own, the order
  # reversed every other pair, a C control beside each pair.
  pairs=9 k=0 lines=""
  while [ $k -lt $pairs ]; do
    if [ $((k % 2)) = 0 ]; then
      set -- $("$b" load 1 "$plugins"); t1=$2 m1=$3
      set -- $("$b" load 2 "$plugins"); t2=$2 m2=$3
      set -- $("$b" control "$plugins"); c=$2
    else
      set -- $("$b" control "$plugins"); c=$2
      set -- $("$b" load 2 "$plugins"); t2=$2 m2=$3
      set -- $("$b" load 1 "$plugins"); t1=$2 m1=$3
    fi
    lines="$lines$t1 $t2 $c $m1 $m2
"
    k=$((k + 1))
  done
  set -- $(printf '%s' "$lines" | awk '
    function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
                                    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    { all[NR] = $2 / $1; mem[NR] = ($5 - $4) / 1048576; t1[NR] = $1; t2[NR] = $2
      if ($3 >= 1.8 && $3 <= 2.1) ok[++n] = $2 / $1 }
    END { printf "%.3f %d %d %.3f %.1f %.0f %.0f\n", n ? med(ok, n) : 0, n, NR, med(all, NR), med(mem, NR), med(t1, NR) * 1e3, med(t2, NR) * 1e3 }')
  fig=$1 counted=$2 of=$3 allmed=$4 mb=$5 ms1=$6 ms2=$7
  verdict=$(judge "$fig" "<=" 1.3 "$counted" "$of" "the C control >= 1.8x")
  echo "Python $ver row 10t: pyop_load with 2 lanes / with 1 judged ${fig}x over $counted of $of pairs (median of all pairs ${allmed}x; median ${ms2} ms / ${ms1} ms), <= 1.3x: $verdict"
  row 10t "Python $ver: pyop_load with 2 lanes / with 1 (a process per load)" "$allmed" "<=" 1.3 \
    "$counted of $of pairs with the C control >= 1.8x; median ${ms2} ms / ${ms1} ms" "$fig" "$verdict"
  echo "Python $ver row 10m: a lane adds ${mb} MB (RSS after a load with 2 lanes minus with 1, median of $of): info"
  echo "ROW|10m|Python $ver: memory a lane adds (RSS of pyop_load with 2 lanes - with 1), MB|$mb|MB|info|0|median of $of pairs of loads|$mb"
done
[ "$found" = 1 ] || { echo "skip: no CPython 3.12+ (GIL build) with a shared libpython"; exit 77; }
