#!/usr/bin/env bash
# run.sh SOURCE_DIR WORK_DIR CMAKE C_COMPILER [CMAKE_ARGS...]
#
# Interpreter lanes need CPython 3.12+ (issue 20; docs/host-guide.md "Python
# ops in parallel"), and the build's default Python is Debian's 3.11. For
# each pyenv CPython 3.12 or later with headers and a shared libpython, this
# builds libpyop with that Python as its default (-DPYOP_PYTHONS; the extra
# CMAKE_ARGS carry the sanitizer options of the calling build), compiles
# the test hosts against it and runs every case each lists (--list):
# tests/lanes/lanes_host.c and lanes_load.c (C hosts without Python:
# start_python starts that one), tests/lanes/lanes_embed.c (C hosts that link libpython and own
# it), tests/integration/bridge_harness.c's cases marked "lanes" (a C host
# driving the bridge directly), tests/lanes/ctypes_host.py (a Python program calling libpyop
# through ctypes, as the pyop command does) and tests/lanes/cli_host.py (the
# pyop command with --lanes). LANES_CASES="a b" runs only those cases. Exit
# 77 (skipped) when no such Python is installed.
#
# LANES_VALGRIND=/path/to/valgrind runs each case under memcheck instead (no
# error, no definite or indirect leak; PYTHONMALLOC=malloc; suppressions in
# bridge/valgrind-python.supp, tests/unit/valgrind-ld.supp and
# tests/lanes/valgrind-lanes.supp): the lanes.valgrind test.
set -euo pipefail
src=$1 work=$2 cmake=$3 cc=$4
shift 4
root=${PYENV_ROOT:-${HOME:-/root}/.pyenv}
pys=()
for exe in "$root"/versions/3.1[2-9]*/bin/python3.1[2-9]; do
  [ -x "$exe" ] || continue
  "$exe" -c 'import sys, sysconfig, os
ok = sys.version_info >= (3, 12) and not sysconfig.get_config_var("Py_GIL_DISABLED")
inc = os.path.join(sysconfig.get_paths()["include"], "Python.h")
lib = os.path.join(sysconfig.get_config_var("LIBDIR") or "", sysconfig.get_config_var("LDLIBRARY") or "")
sys.exit(0 if ok and os.path.exists(inc) and lib.endswith(".so") and os.path.exists(lib) else 1)' \
    2>/dev/null || continue
  pys+=("$exe")
done
if ((${#pys[@]} == 0)); then
  echo "skip: no CPython 3.12+ (GIL build) with headers and a shared libpython"
  exit 77
fi
mkdir -p "$work"
vg=()
if [ -n "${LANES_VALGRIND:-}" ]; then
  vg=("$LANES_VALGRIND" --error-exitcode=99 --leak-check=full
      --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
      --suppressions="$src/bridge/valgrind-python.supp"
      --suppressions="$src/tests/unit/valgrind-ld.supp"
      --suppressions="$src/tests/lanes/valgrind-lanes.supp")
  export PYTHONMALLOC=malloc
fi
# What the uninstrumented libpython orders itself (tests/lanes/tsan-lanes.supp).
if [[ " $* " == *" -DPYOP_TSAN=ON "* ]]; then
  export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$src/tests/lanes/tsan-lanes.supp"
fi
for exe in "${pys[@]}"; do
  ver=$("$exe" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  tree=$work/py$ver
  echo "--- $exe: building libpyop with it as the default Python in $tree"
  "$cmake" -S "$src" -B "$tree" -DPYOP_PYTHONS="$exe" -DBUILD_TESTING=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="$cc" "$@" >"$tree.log" 2>&1 ||
    { cat "$tree.log"; exit 1; }
  "$cmake" --build "$tree" -j2 --target pyop pyop_bridges >>"$tree.log" 2>&1 ||
    { tail -50 "$tree.log"; exit 1; }
  flags=()
  for a in "$@"; do
    case $a in
      -DPYOP_SANITIZE=ON) flags+=(-fsanitize=address,undefined) ;;
      -DPYOP_TSAN=ON) flags+=(-fsanitize=thread) ;;
    esac
  done
  pyinc=$("$exe" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  pylib=$("$exe" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')
  common=(-std=c11 -g -O1 "${flags[@]}" -I"$src/include" -I"$tree/include"
    -DLANES_PLUGINS="\"$src/tests/lanes/plugins\"" -DLANES_GE_PLUGINS="\"$src/tests/ge/plugins\""
    -DPy_VERSION_FOR_TEST="\"$ver\"")
  # lanes_host and lanes_load: C hosts without Python; lanes_embed: one
  # that links libpython and initialises it itself.
  for h in lanes_host lanes_load; do
    "$cc" "${common[@]}" "$src/tests/lanes/$h.c" -o "$tree/$h" \
      -L"$tree/lib" -lpyop -Wl,-rpath,"$tree/lib" -lpthread
  done
  "$cc" "${common[@]}" -I"$pyinc" "$src/tests/lanes/lanes_embed.c" -o "$tree/lanes_embed" \
    -L"$tree/lib" -lpyop -Wl,-rpath,"$tree/lib" -L"$pylib" -lpython"$ver" -Wl,-rpath,"$pylib" \
    -lpthread
  # The bridge harness (tests/integration/bridge_harness.c: a C host that
  # drives the bridge directly) for its cases marked "lanes".
  "$cc" "${common[@]}" "$src/tests/integration/bridge_harness.c" -o "$tree/bridge_harness" \
    -L"$pylib" -lpython"$ver" -Wl,-rpath,"$pylib" -ldl -lpthread
  # A single-phase extension whose init takes its time (lanes_load's ext_gate).
  "$cc" -shared -fPIC -g -O1 "${flags[@]}" -I"$pyinc" "$src/tests/lanes/slow_init.c" \
    -o "$tree/_pyop_slowinit.so"
  export LANES_SLOWINIT=$tree/_pyop_slowinit.so
  # Each host lists its own cases (--list); LANES_CASES picks some of them.
  # ctypes_host.py and cli_host.py are Python programs driving libpyop
  # through ctypes (an ASan/TSan libpyop cannot be loaded into an
  # uninstrumented Python).
  hosts=(lanes_host lanes_load lanes_embed bridge_harness)
  ((${#flags[@]} == 0)) && hosts+=(ctypes_host cli_host)
  for host in "${hosts[@]}"; do
    case $host in
      ctypes_host | cli_host) cmd=("$exe" "$src/tests/lanes/$host.py") ;;
      *) cmd=("$tree/$host") ;;
    esac
    cases=$("${cmd[@]}" --list)
    [ "$host" = bridge_harness ] && cases=$(grep -o 'X([a-z_0-9]*, "[^"]*", [0-9]*, "lanes")' \
      "$src/tests/integration/bridge_harness.c" | sed 's/X(\([a-z_0-9]*\),.*/\1/')
    for c in $cases; do
      if [ -n "${LANES_CASES:-}" ] && [[ " $LANES_CASES " != *" $c "* ]]; then continue; fi
      case $host in
        ctypes_host)
          args=("$tree/lib/libpyop.so.0" "$tree/share/pyop" "$src/tests/lanes/plugins" "$c") ;;
        cli_host) args=("$tree/bin/pyop" "$src/tests/lanes/plugins" "$c") ;;
        bridge_harness)
          args=("$(dirname "$(ls "$tree"/lib/pyop/artifacts/*/libpyop_bridge.so | head -1)")"
                "$src/tests/integration/plugins" "$c") ;;
        *) args=("$c") ;;
      esac
      echo "--- Python $ver: $host $c${vg:+ (valgrind)}"
      PYTHONDONTWRITEBYTECODE=1 timeout 300 "${vg[@]}" "${cmd[@]}" "${args[@]}" \
        2>"$tree/$c.err" || { cat "$tree/$c.err"; exit 1; }
      # A lane ended badly says so on stderr only (CPython's "Exception ignored").
      if grep -E "Exception ignored|Fatal Python error" "$tree/$c.err"; then
        echo "FAIL: $host $c: CPython complained on stderr"; exit 1
      fi
      grep -v "^==[0-9]\|^  \|^Traceback\|^ImportError\|^while importing" "$tree/$c.err" || true
    done
  done
  # `pyop --lanes 2 doctor --json` (the CLI under this Python, a Python host of
  # the tree's libpyop through ctypes) says what memory a lane adds, or why
  # it did not measure it (lanes off on 3.12.0-3.12.3). Not under a sanitizer
  # or valgrind (the CLI's python is not instrumented).
  if [ ${#flags[@]} = 0 ] && [ ${#vg[@]} = 0 ] &&
     { [ -z "${LANES_CASES:-}" ] || [[ " $LANES_CASES " == *" doctor "* ]]; }; then
    echo "--- Python $ver: pyop --lanes 2 doctor --json"
    PYOP_LIBRARY="$tree/lib/libpyop.so.0" ASCEND_CUSTOM_OPP_PATH="$src/tests/lanes/plugins/pure" \
      timeout 300 "$exe" "$src/tools/pyop_cli" --lanes 2 doctor --json >"$tree/doctor.json" \
      2>"$tree/doctor.err" || { cat "$tree/doctor.err"; exit 1; }
    "$exe" - "$tree/doctor.json" <<'PY' || exit 1
import json, sys
rep = json.load(open(sys.argv[1]))
mem, ops = rep["lane_memory"], {o["op_type"]: o for o in rep["lanes"]}
if ops["Scale"]["lanes"]:
    ok = mem["why"] is None and 1 << 20 < mem["bytes_per_lane"] < 64 << 20
else:
    ok = mem == {"bytes_per_lane": None, "why": "no op runs in lanes"}
print("doctor: lane_memory %s (Scale: %d lanes)%s" % (mem, ops["Scale"]["lanes"], "" if ok else ": FAIL"))
sys.exit(0 if ok else 1)
PY
  fi
done
echo "lanes: ${#pys[@]} Pythons: ok"
