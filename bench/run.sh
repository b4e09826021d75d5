#!/bin/sh
# Runs every benchmark of bench/ and prints one table (bench/README.md).
#
#   bench/run.sh                 configure + build build/bench (Release) if
#                                needed, run everything timed, then count
#                                instructions under callgrind, print the table
#                                and a verdict line per missed target
#   PYOP_BENCH_BUILD=dir         use another build directory
#   PYOP_BENCH_REPS=N            repetitions per row (odd, default 7)
#   PYOP_BENCH_QUICK=1           tiny iteration counts (proves it runs); no
#                                instruction counts unless PYOP_BENCH_COUNT=1
#   PYOP_BENCH_COUNT=0           skip the instruction counts
#   PYOP_BENCH_RAW=1             also print each benchmark's own output
#   PYOP_BENCH_LANES=0           skip row 10 in lanes (bench/lanes.sh: builds a
#                                tree per pyenv CPython 3.12+ beside the build)
#   PYOP_BENCH_SAVE_REF=1        write this run's instruction figures to
#                                bench/instructions.ref (the reference the
#                                verdicts compare with)
#
# Exit status: 0 when every benchmark ran (whether or not targets are met:
# these are numbers, not tests), 1 when one failed to build or run.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build=${PYOP_BENCH_BUILD:-$root/build/bench}
ref=$root/bench/instructions.ref
quick=${PYOP_BENCH_QUICK:-}
[ "$quick" = 0 ] && quick=
if [ -n "$quick" ]; then count=${PYOP_BENCH_COUNT:-0}; else count=${PYOP_BENCH_COUNT:-1}; fi
[ -z "$count" ] && count=0

if [ ! -f "$build/CMakeCache.txt" ]; then
  # A fresh clone has no build root yet: the configure log goes beside $build.
  mkdir -p "$(dirname "$build")"
  # No tests: a clone without their dependencies (cmocka) runs the benchmarks.
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    >"$build.configure.log" 2>&1 || {
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

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
out=$tmp/timed
: >"$out"
: >"$tmp/counts"
status=0
benches="bench_dispatch bench_scan bench_registry bench_load bench_parallel"

# 1. Timed runs, one program at a time (nothing else of ours on the CPUs).
t_start=$(date +%s)
for b in $benches; do
  exe=$build/bin/$b
  [ -x "$exe" ] || { echo "# $b: not built (no shared libpython?)" >>"$out"; continue; }
  if ! env -u PYOP_BENCH_COUNT "$exe" >>"$out" 2>"$tmp/$b.err"; then
    echo "bench/run.sh: $b failed:" >&2
    cat "$tmp/$b.err" >&2
    status=1
  fi
done

# 1b. Row 10 in lanes (bench/lanes.sh): lanes need CPython 3.12+, the build's
# default Python is older, so it builds a tree per pyenv 3.12+ beside $build
# (once) and adds its rows 10l, 10s and 10u. PYOP_BENCH_LANES=0 skips it; so
# does quick mode.
if [ "${PYOP_BENCH_LANES:-1}" != 0 ] && [ -z "$quick" ]; then
  lrc=0
  PYOP_LANES_TREE_ROOT=${PYOP_LANES_TREE_ROOT:-$build-lanes} "$root/bench/lanes.sh" \
    >"$tmp/lanes.out" 2>"$tmp/lanes.err" || lrc=$?
  grep '^ROW|' "$tmp/lanes.out" >>"$out" || true
  if [ "$lrc" = 77 ]; then
    echo "ROW|10l|lanes: elementwise 2 threads / 1 thread|0|x|n/a>=|1.6|not run: no CPython 3.12+ (GIL build, shared libpython) on this machine|" >>"$out"
  elif [ "$lrc" != 0 ]; then
    echo "bench/run.sh: bench/lanes.sh failed:" >&2
    cat "$tmp/lanes.out" "$tmp/lanes.err" >&2
    status=1
  fi
fi

# 2. Instruction counts (each program re-runs itself under callgrind, see
# bench_util.h). Deterministic, so they may share the CPUs: two lanes, the
# longest program (bench_load) alone in one.
count_lane() { # count_lane NAME PROGRAMS...: runs them in turn into $tmp/count.NAME
  lane=$1; shift
  lane_status=0
  for b in "$@"; do
    exe=$build/bin/$b
    [ -x "$exe" ] || continue
    if ! PYOP_BENCH_COUNT=1 "$exe" >>"$tmp/count.$lane" 2>"$tmp/$b.count.err"; then
      echo "bench/run.sh: $b (instruction count) failed:" >&2
      cat "$tmp/$b.count.err" >&2
      lane_status=1
    fi
  done
  return $lane_status
}
t_timed=$(date +%s)
if [ "$count" != 0 ]; then
  : >"$tmp/count.a"
  : >"$tmp/count.b"
  count_lane a bench_load &
  lane_a=$!
  count_lane b bench_dispatch bench_scan bench_registry || status=1
  wait $lane_a || status=1
  cat "$tmp/count.b" "$tmp/count.a" >"$tmp/counts"
else
  echo "ICOUNT|*|-|-|-|not run (PYOP_BENCH_COUNT=0${quick:+, quick mode})" >"$tmp/counts"
fi
t_counted=$(date +%s)

if [ "${PYOP_BENCH_RAW:-}" = 1 ]; then
  grep -v '^ROW|' "$out" || true
  grep -v '^ICOUNT|' "$tmp/counts" || true
fi

[ -f "$ref" ] || : >"$tmp/noref" # an absent reference file is not an error
awk -F'|' -v reffile="$( [ -f "$ref" ] && echo "$ref" || echo "$tmp/noref")" \
    -v savefile="$( [ "${PYOP_BENCH_SAVE_REF:-}" = 1 ] && echo "$ref" || true)" '
  # Instructions drifting more than this from the reference count as a change
  # of the code (bench/README.md: counts repeat to 0.1% in one checkout, 0.5%
  # between checkouts).
  BEGIN { tol = 0.01 }
  function fmt(v, u) { return u == "ns" ? sprintf("%.1f ns", v) : u == "MB" ? sprintf("%.1f MB", v) : sprintf("%.2fx", v) }
  function ins(v) { return v >= 1e6 ? sprintf("%.1fM", v / 1e6) : sprintf("%.0f", v) }
  function pct(x) { return sprintf("%+.1f%%", 100 * x) }
  # The instruction figure of a row: the ratio, or (ns rows) the count itself.
  function ifig(id) { return (id in iratio) ? iratio[id] : icand[id] }
  function ifmt(id, v) { return (id in iratio) ? sprintf("%.3fx", v) : ins(v) " instr" }
  FILENAME == reffile && /^[^#]/ && NF == 1 {
    split($0, f, " "); ref[f[1]] = f[4] != "-" ? f[4] + 0 : f[2] + 0; next
  }
  FILENAME == reffile { next }
  $1 == "ICOUNT" {
    if ($2 == "*") { inote_all = $6; next }
    if ($3 == "-") { inote[$2] = $6; next }
    icand[$2] = $3 + 0
    if ($4 != "-") { ibase[$2] = $4 + 0; iratio[$2] = $5 + 0 }
    next
  }
  $1 == "ROW" { rows[++nrows] = $0 }
  END {
    printf "%-4s %-60s %9s %9s %10s %-4s  %-22s %8s %8s   %s\n", "id", "target", "time:min",
      "median", "limit", "met?", "instr/iter cand / base", "instr", "ref", "times (median, min)"
    for (r = 1; r <= nrows; r++) {
      split(rows[r], c, "|")
      id = c[2]; what = c[3]; med = c[4] + 0; unit = c[5]; op = c[6]; lim = c[7] + 0; raw = c[8]
      hasmin = c[9] != ""
      v = hasmin ? c[9] + 0 : med
      if (op == "info") { limit = "-"; met = "info" }
      else if (op ~ /^n\/a/) {
        # A target that was not judged (bench/README.md, row 10): not run
        # here, or the machine was too busy for it; the last column says why.
        limit = substr(op, 4) " " fmt(lim, unit); met = "n/a"; unjudged++
        if (med == 0) med = ""
      } else {
        limit = op " " fmt(lim, unit)
        ok = (op == "<=" && v <= lim) || (op == "<" && v < lim) || (op == ">=" && v >= lim)
        met = ok ? "yes" : "NO"
        if (!ok) missed++
        n++
      }
      if (id in icand) {
        icol = (id in ibase) ? ins(icand[id]) " / " ins(ibase[id]) : ins(icand[id])
        iv = (id in iratio) ? sprintf("%.3fx", iratio[id]) : "-"
      } else {
        icol = "n/a"; iv = ""
      }
      rv = (id in ref) ? ((id in iratio) ? sprintf("%.3fx", ref[id]) : ins(ref[id])) : "-"
      if (!(id in icand)) rv = ""
      printf "%-4s %-60s %9s %9s %10s %-4s  %-22s %8s %8s   %s\n", id, what,
        hasmin ? fmt(v, unit) : "-", med == "" ? "-" : fmt(med, unit), limit, met, icol, iv, rv, raw

      # The verdict lines, printed under the table.
      # drift: relative change against the reference; worse: the part of it
      # that goes against the target (a ">=" row loses when its ratio falls:
      # its baseline, libpyop, then does more work).
      drift = ""
      if ((id in icand) && (id in ref) && ref[id] > 0) drift = ifig(id) / ref[id] - 1
      worse = drift == "" ? 0 : op == ">=" ? -drift : drift
      if (op != "info" && op !~ /^n\/a/ && !ok) {
        over = (op == ">=") ? 1 - v / lim : v / lim - 1
        line = sprintf("row %s NOT MET on time: %s %s against %s (%.1f%% %s the limit; median %s)",
          id, hasmin ? "min" : "median", fmt(v, unit), limit, 100 * over,
          op == ">=" ? "under" : "over", fmt(med, unit))
        if (!(id in icand))
          line = line "; no instruction count (" ((id in inote) ? inote[id] : inote_all != "" ? inote_all : "not counted") \
            "): rerun, a miss that does not repeat is noise"
        else if (drift == "")
          line = line sprintf("; instructions %s, no reference to compare with (PYOP_BENCH_SAVE_REF=1 on a good commit)", ifmt(id, ifig(id)))
        else if (worse > tol)
          line = line sprintf("; instructions %s vs reference %s (%s, against the target): REGRESSION, the code does more work", ifmt(id, ifig(id)), ifmt(id, ref[id]), pct(drift))
        else if (worse < -tol)
          line = line sprintf("; instructions %s vs reference %s (%s, in the target%ss favour): not more work; noise or memory/kernel time -- rerun", ifmt(id, ifig(id)), ifmt(id, ref[id]), pct(drift), "\047")
        else
          line = line sprintf("; instructions flat, %s vs reference %s (%s): NOISE (time up, work unchanged) -- rerun on a quieter machine", ifmt(id, ifig(id)), ifmt(id, ref[id]), pct(drift))
        verdicts[++nv] = line
      } else if (drift != "" && (drift > tol || drift < -tol)) {
        verdicts[++nv] = sprintf("row %s %s, but instructions %s vs reference %s (%s): %s", id,
          op == "info" ? "(info)" : "met on time", ifmt(id, ifig(id)), ifmt(id, ref[id]), pct(drift),
          op == "info" ? "the work changed (refresh bench/instructions.ref once explained)" : \
          worse > 0 ? "moved against the target: more work per iteration, a regression the time figure does not show" \
                    : "moved in the target\047s favour (refresh bench/instructions.ref)")
      }
      if (savefile != "" && (id in icand))
        saved[++ns] = sprintf("%s %.1f %s %s", id, icand[id], (id in ibase) ? sprintf("%.1f", ibase[id]) : "-",
          (id in iratio) ? sprintf("%.4f", iratio[id]) : "-")
    }
    printf "\n%d of %d targets met (judged on the min time figure; bench/README.md)%s\n", n - missed, n,
      unjudged ? sprintf("; %d not judged (n/a: see the row)", unjudged) : ""
    if (inote_all != "") print "instruction counts: " inote_all
    for (i = 1; i <= nv; i++) print verdicts[i]
    if (savefile != "") {
      if (ns == 0) { print "no instruction counts: " savefile " not written" > "/dev/stderr" }
      else {
        print "# Instruction reference of bench/run.sh (PYOP_BENCH_SAVE_REF=1): id, candidate and" > savefile
        print "# baseline instructions per iteration, their ratio. Recorded on one machine; another" > savefile
        print "# compiler or libpython moves the counts: record your own on a known-good commit." > savefile
        for (i = 1; i <= ns; i++) print saved[i] > savefile
        close(savefile)
        print "instruction reference written to " savefile
      }
    }
  }
' "$( [ -f "$ref" ] && echo "$ref" || echo "$tmp/noref")" "$tmp/counts" "$out"
grep '^# .*skipped' "$out" || true
echo "timed runs $((t_timed - t_start)) s, instruction counts $((t_counted - t_timed)) s" \
  "(load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'))"
exit $status
