#!/usr/bin/env bash
# run.sh SOURCE_DIR WORK_DIR CMAKE [CC]
#
# Builds libpyop with bridges for several Pythons side by side (docs/design.md §Versions,
# -DPYOP_PYTHONS): Debian's /usr/bin/python3.11 plus every pyenv CPython
# 3.10+ of another minor version found on the machine, then runs the ctypes
# end-to-end test under each interpreter: each process must pick the bridge
# built for exactly its Python from the same libpyop. Then a C host without
# Python (start_host.c) asks start_python for lanes, with and without
# pyop_options.start_python_key: which Python starts, whether its ops run in
# lanes and what the log says (the lanes cases are skipped, saying why,
# without a CPython 3.12+ with a shared libpython). Exit 77 (skipped) when
# no second CPython is installed.
set -euo pipefail
src=$1 work=$2 cmake=$3 cc=${4:-cc}
pys=(/usr/bin/python3.11)
seen=" 3.11 "
root=${PYENV_ROOT:-${HOME:-/root}/.pyenv}
for exe in "$root"/versions/3.1[0-9]*/bin/python3.1[0-9]; do
  [ -x "$exe" ] || continue
  ver=$("$exe" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
  case $seen in *" $ver "*) continue ;; esac
  inc=$("$exe" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null) || continue
  [ -f "$inc/Python.h" ] || continue
  seen="$seen$ver "
  pys+=("$exe")
done
if ((${#pys[@]} < 2)); then
  echo "skip: no CPython other than 3.11 with headers on this machine"
  exit 77
fi
list=$(IFS=';'; echo "${pys[*]}")
echo "building bridges for: ${pys[*]}"
rm -rf "$work"
"$cmake" -S "$src" -B "$work" -DPYOP_PYTHONS="$list" -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=Release >"$work.log" 2>&1 || { cat "$work.log"; exit 1; }
"$cmake" --build "$work" -j"$(nproc)" --target pyop pyop_bridges >>"$work.log" 2>&1 ||
  { tail -50 "$work.log"; exit 1; }
echo "artifacts: $(ls "$work/lib/pyop/artifacts" | tr '\n' ' ')"
n=$(ls "$work/lib/pyop/artifacts" | wc -l)
[ "$n" -eq "${#pys[@]}" ] || { echo "FAIL: $n artifact dirs for ${#pys[@]} Pythons"; exit 1; }
for exe in "${pys[@]}"; do
  echo "--- $exe"
  PYOP_TEST_ANY_PYTHON=1 PYTHONDONTWRITEBYTECODE=1 \
    "$exe" -B "$src/tests/e2e/test_ctypes.py" "$work/lib/libpyop.so.0" \
    "$src/tests/integration/plugins/basic"
done

# --- start_python's choice (pyop_options.start_python_key, lanes).
fail() { echo "FAIL: $*"; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
"$cc" -std=c11 -Wall -Wextra -Werror -I"$src/include" -I"$work/include" \
  "$here/start_host.c" -L"$work/lib" -lpyop -Wl,-rpath,"$work/lib" -o "$work/start_host"
host() {  # start_host ARGS..., with the plugins and nothing of this environment
  env -i PATH=/usr/bin:/bin ASCEND_CUSTOM_OPP_PATH="$here/plugins" "$work/start_host" "$@"
}
host_env() { host "$@" 2>&1; }
keyof() {  # the runtime key of Python $1, whether it can run lanes (1), or
           # cannot end them safely (2: CPython 3.12.0-3.12.3, src/lanes_floor.h)
  "$1" -c 'import platform, sys, sysconfig
v = sys.version_info
ft = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
shared = bool(sysconfig.get_config_var("Py_ENABLE_SHARED"))
fit = v >= (3, 12) and not ft and shared
print("cp%d%d%s-%s" % (v[0], v[1], "t" if ft else "", platform.machine()),
      2 if fit and (3, 12) <= v[:3] < (3, 12, 4) else int(fit))'
}
default_key=$(keyof "${pys[0]}" | cut -d' ' -f1)
capable=() unsafe=()
for exe in "${pys[@]}"; do
  read -r k c < <(keyof "$exe")
  [ "$c" = 1 ] && capable+=("$k")
  [ "$c" = 2 ] && unsafe+=("$k")
done
# A Python that cannot end lanes safely is started when asked for by key,
# serial, with the floor named, and passed over otherwise.
for k in "${unsafe[@]}"; do
  out=$(host_env 2 "$k") || fail "start_host 2 $k: $out"
  grep -qx "key=$k" <<<"$out" || fail "start_python_key $k not started: $out"
  grep -qx "lanes=0" <<<"$out" || fail "$k ran lanes: $out"
  grep -q "lanes need CPython 3.12.4 or later" <<<"$out" || fail "$k: no floor named: $out"
done
out=$(host 0) || fail "start_host 0: $out"
grep -qx "key=$default_key" <<<"$out" || fail "without lanes start_python did not start the default $default_key: $out"
grep -qx "lanes=0" <<<"$out" || fail "lanes without asking: $out"
! grep -q "start_python: lanes" <<<"$out" || fail "a lanes note without lanes: $out"
if out=$(host 0 cp399-x86_64 2>&1); then fail "an unknown start_python_key loaded: $out"; fi
grep -q "start_python_key cp399-x86_64 is not among this libpyop's bridges" <<<"$out" ||
  fail "unknown key: $out"
grep -q "$default_key (" <<<"$out" || fail "the refusal does not list the bridges: $out"
if ((${#capable[@]} == 0)); then
  echo "skip lanes choice: no CPython 3.12+ (not free-threaded, shared libpython) among ${pys[*]}"
  out=$(host 2) || fail "start_host 2: $out"
  grep -q "lanes: 2 asked for, but start_python starts $default_key, the build's default" <<<"$out" ||
    fail "no warning naming the default: $out"
  grep -q -- "-DPYOP_PYTHONS=" <<<"$out" || fail "the warning gives no fix: $out"
else
  first=${capable[0]}
  out=$(host 2) || fail "start_host 2: $out"
  echo "$out"
  grep -qx "key=$first" <<<"$out" || fail "lanes asked for: start_python did not start $first: $out"
  grep -qx "lanes=2" <<<"$out" || fail "lanes asked for: MpTwice not in 2 lanes: $out"
  grep -q "start_python: lanes asked for (2): starting $first instead of the build's default $default_key" <<<"$out" ||
    fail "no info line for the choice: $out"
  ran=$(sed -n 's/^ran=//p' <<<"$out")
  want=${first%%-*}
  [ "$ran" = "${want#cp}" ] || fail "execute ran in Python $ran (major*100+minor), not $first"
  for k in "${capable[@]}"; do
    out=$(host 2 "$k") || fail "start_host 2 $k: $out"
    grep -qx "key=$k" <<<"$out" || fail "start_python_key $k not started: $out"
    grep -qx "lanes=2" <<<"$out" || fail "start_python_key $k: not in lanes: $out"
  done
  out=$(host 2 "$default_key") || fail "start_host 2 $default_key: $out"
  grep -qx "key=$default_key" <<<"$out" || fail "start_python_key $default_key not started: $out"
  grep -qx "lanes=0" <<<"$out" || fail "$default_key ran lanes: $out"
  grep -q "lanes: 2 asked for, but start_python_key $default_key cannot run them" <<<"$out" ||
    fail "no warning for a key that cannot run lanes: $out"
  grep -q "set pyop_options.start_python_key = \"$first\" to run lanes" <<<"$out" ||
    fail "the warning does not name the key to set: $out"
fi
# pyop doctor says the choice libpyop makes (tools/pyop_cli/start_choice.py).
doctor_pick() {  # what `pyop --lanes N doctor` says start_python starts: $1 artifact or note
  ASCEND_CUSTOM_OPP_PATH="$here/plugins" "$work/bin/pyop" --lanes "$2" doctor --json 2>/dev/null |
    "${pys[0]}" -c 'import json, sys; print(json.load(sys.stdin)["start_python"][sys.argv[1]] or "")' "$1"
}
for lanes in 0 2; do
  out=$(host "$lanes") || fail "start_host $lanes: $out"
  started=$(sed -n 's/^key=//p' <<<"$out")
  said=$(doctor_pick artifact "$lanes")
  [ -n "$started" ] && [ "$said" = "$started" ] ||
    fail "pyop --lanes $lanes doctor says start_python starts '$said'; libpyop started '$started'"
  note=$(doctor_pick note "$lanes")
  [ -z "$note" ] || grep -qF -- "$note" <<<"$out" ||
    fail "pyop --lanes $lanes doctor's note '$note' is not libpyop's: $out"
  [ "$lanes" = 0 ] || [ -n "$note" ] || [ "$started" = "$default_key" ] ||
    fail "pyop --lanes $lanes doctor says nothing of starting $started: $out"
done
echo "pyop doctor: start_python's choice as libpyop makes it: ok"
echo "start_python: the key asked for, or one that runs the lanes asked for: ok"
echo "multipython: ${#pys[@]} Pythons, one libpyop, one bridge each: ok"
