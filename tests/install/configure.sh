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
"$cmake" -S "$src" -B "$work/b2" -G "Unix Makefiles" -DBUILD_TESTING=OFF >"$work/b2.log" 2>&1 ||
  { cat "$work/b2.log"; fail "-DBUILD_TESTING=OFF does not configure without cmocka"; }
# With the tests off, a plain build (tools/quickstart.sh's) builds no
# benchmark: the directories the Makefile generator's "all" builds (b2 uses
# it, the default) are not bench/ or the fake bridges'. The benchmarks'
# target still has the fake bridge it needs.
all=$work/b2/CMakeFiles/Makefile2
grep -q "^all: src/all" "$all" || fail "unexpected $all (no 'all: src/all')"
! grep -q "^all: \(bench\|tests/fake_bridge\)/all" "$all" ||
  fail "a build with -DBUILD_TESTING=OFF builds the benchmarks or the fake bridges"
"$cmake" --build "$work/b2" --target pyop_fake_bridge_MANY_OPS >"$work/b2.fb" 2>&1 ||
  { cat "$work/b2.fb"; fail "no fake bridge MANY_OPS for bench_registry with the tests off"; }

# bench/run.sh configures its build without the tests (it used to fail on
# cmocka here). A cmake in front of the real one configures for real and
# stops at the build, which this test does not need.
mkdir "$work/bin"
printf '#!/bin/sh\ncase "$1" in --build) echo "$*" >"%s/bench.build"; exit 3 ;; esac\nexec "%s" "$@"\n' \
  "$work" "$(command -v "$cmake")" >"$work/bin/cmake"
chmod +x "$work/bin/cmake"
if PATH=$work/bin:$PATH PYOP_BENCH_BUILD=$work/bench "$src/bench/run.sh" >"$work/bench.out" 2>&1; then
  fail "bench/run.sh went on after its build was stopped"
fi
! grep -q "configure failed" "$work/bench.out" ||
  { cat "$work/bench.out"; fail "bench/run.sh cannot configure without cmocka"; }
grep -q "build failed" "$work/bench.out" || { cat "$work/bench.out"; fail "bench/run.sh did not reach its build"; }
grep -q -- "--target pyop_bench" "$work/bench.build" || fail "bench/run.sh built: $(cat "$work/bench.build")"

# Without libffi either: the message names libffi-dev.
rm "$work/pc/libffi.pc"
if "$cmake" -S "$src" -B "$work/b3" -DBUILD_TESTING=OFF >"$work/b3.log" 2>&1; then
  fail "configured without libffi"
fi
grep -q "libffi-dev" "$work/b3.log" || { cat "$work/b3.log"; fail "the message does not name libffi-dev"; }
echo "configure test: ok"
