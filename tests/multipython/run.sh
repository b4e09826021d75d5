#!/usr/bin/env bash
# run.sh SOURCE_DIR WORK_DIR CMAKE
#
# Builds libpyop with bridges for several Pythons side by side (docs/design.md §Versions,
# -DPYOP_PYTHONS): Debian's /usr/bin/python3.11 plus every pyenv CPython
# 3.10+ of another minor version found on the machine, then runs the ctypes
# end-to-end test under each interpreter: each process must pick the bridge
# built for exactly its Python from the same libpyop. Exit 77 (skipped) when
# no second CPython is installed.
set -euo pipefail
src=$1 work=$2 cmake=$3
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
echo "multipython: ${#pys[@]} Pythons, one libpyop, one bridge each: ok"
