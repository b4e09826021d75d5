#!/usr/bin/env bash
# configure.sh SOURCE_DIR CMAKE
#
# A fresh clone on a machine without libcmocka-dev: pkg-config sees only
# libffi. `cmake -S . -B build` must fail naming the package and the way to
# build the library alone; -DBUILD_TESTING=OFF must then configure.
set -euo pipefail
src=$1 cmake=$2
work=$(mktemp -d /tmp/pyop-configure-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$work/pc"
ln -s "$(pkg-config --variable=pcfiledir libffi)/libffi.pc" "$work/pc/libffi.pc"
export PKG_CONFIG_LIBDIR=$work/pc PKG_CONFIG_PATH=
if "$cmake" -S "$src" -B "$work/b1" >"$work/b1.log" 2>&1; then
  fail "configured without cmocka"
fi
cat "$work/b1.log" | sed -n '/CMake Error/,$p' | head -20
grep -q "libcmocka-dev" "$work/b1.log" || fail "the message does not name libcmocka-dev"
grep -q -- "-DBUILD_TESTING=OFF" "$work/b1.log" || fail "the message does not name -DBUILD_TESTING=OFF"
"$cmake" -S "$src" -B "$work/b2" -DBUILD_TESTING=OFF >"$work/b2.log" 2>&1 ||
  { cat "$work/b2.log"; fail "-DBUILD_TESTING=OFF does not configure without cmocka"; }

# Without libffi either: the message names libffi-dev.
rm "$work/pc/libffi.pc"
if "$cmake" -S "$src" -B "$work/b3" -DBUILD_TESTING=OFF >"$work/b3.log" 2>&1; then
  fail "configured without libffi"
fi
grep -q "libffi-dev" "$work/b3.log" || { cat "$work/b3.log"; fail "the message does not name libffi-dev"; }
echo "configure test: ok"
