#!/usr/bin/env bash
# hosts.sh BUILD_DIR SOURCE_DIR CC CXX CMAKE
#
# The host guide's steps, as a C or C++ engine without Python takes them,
# against an installed tree (the real bridge, the example ops):
#  1. the README's host snippet ("From a C host"), extracted as written,
#     compiles as C11 and as C++17 (-Wall -Wextra -pedantic -Werror), links
#     with `pkg-config --libs pyop` plus the documented rpath recipe, and
#     runs without LD_LIBRARY_PATH;
#  2. the C++17 example host (share/pyop/examples/cpp_host) builds with
#     find_package(pyop) and runs;
#  3. the exported CMake target lists its include directory once, and
#     pyop_version is exported;
#  and pyop.h's value helpers (helpers.c) are right in C and in C++.
set -euo pipefail
build=$1 src=$2 cc=$3 cxx=$4 cmake=$5
work=$(mktemp -d /tmp/pyop-hosts-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$cmake" --install "$build" --prefix "$work/prefix" >/dev/null
prefix=$work/prefix
libdir=$(dirname "$(ls "$prefix"/lib*/libpyop.so.0)")
ops=$prefix/share/pyop/examples/ops
unset LD_LIBRARY_PATH PYOP_EXAMPLE_KERNELS PYOP_BRIDGE_DIR
export ASCEND_CUSTOM_OPP_PATH=$ops

# 1. The README snippet: the first ```c block after "## From a C host".
awk '/^## From a C host/ {sec=1; next}
     sec && /^```c$/ {code=1; next}
     code && /^```$/ {exit}
     code {print}' "$src/README.md" >"$work/snippet.c"
[ -s "$work/snippet.c" ] || fail "no C block under '## From a C host' in README.md"
export PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs pyop)
rpath="-Wl,-rpath,$(pkg-config --variable=libdir pyop)"
"$cc" -std=c11 -Wall -Wextra -pedantic -Werror -o "$work/snippet_c" "$work/snippet.c" \
  $flags $rpath || fail "the README snippet does not compile as C11"
"$cxx" -std=c++17 -Wall -Wextra -pedantic -Werror -x c++ -o "$work/snippet_cxx" \
  "$work/snippet.c" -x none $flags $rpath || fail "the README snippet does not compile as C++17"
for exe in snippet_c snippet_cxx; do
  out=$("$work/$exe") || fail "$exe (the README snippet) failed: $out"
  [ "$out" = "z = [3, 4, 5]" ] || fail "$exe printed '$out', want 'z = [3, 4, 5]'"
done
# The value helpers, field by field, as C and as C++.
here=$(cd "$(dirname "$0")" && pwd)
"$cc" -std=c11 -Wall -Wextra -pedantic -Werror -o "$work/helpers_c" "$here/helpers.c" $flags $rpath
"$cxx" -std=c++17 -Wall -Wextra -pedantic -Werror -x c++ -o "$work/helpers_cxx" \
  "$here/helpers.c" -x none $flags $rpath
"$work/helpers_c" && "$work/helpers_cxx" || fail "pyop.h value helpers"
# The variable pyop.pc offers gives the same rpath.
[ "$(pkg-config --variable=ldflags_rpath pyop)" = "$rpath" ] ||
  fail "pyop.pc ldflags_rpath is '$(pkg-config --variable=ldflags_rpath pyop)', want '$rpath'"
# Without an rpath the loader cannot find libpyop: what the guide warns about.
"$cc" -std=c11 -o "$work/no_rpath" "$work/snippet.c" $flags
if "$work/no_rpath" 2>"$work/no_rpath.err"; then fail "no_rpath ran without libpyop on the path"; fi
grep -q "libpyop.so.0: cannot open shared object file" "$work/no_rpath.err" ||
  fail "unexpected error without rpath: $(cat "$work/no_rpath.err")"

# 2. The C++17 example host through find_package(pyop).
"$cmake" -S "$prefix/share/pyop/examples/cpp_host" -B "$work/cpp" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS=-Werror >"$work/cpp.log" 2>&1 || { cat "$work/cpp.log"; fail "configure cpp_host"; }
"$cmake" --build "$work/cpp" >>"$work/cpp.log" 2>&1 || { cat "$work/cpp.log"; fail "build cpp_host"; }
out=$("$work/cpp/pyop-cpp-host") || fail "pyop-cpp-host failed: $out"
echo "$out"
grep -qx "z = \[21, 42, 63\]" <<<"$out" || fail "pyop-cpp-host did not print z = [21, 42, 63]"
grep -q "^ops:.* ScaledAdd" <<<"$out" || fail "pyop-cpp-host did not list ScaledAdd"
version=$(sed -n 's/^project(pyop VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
grep -qx "libpyop $version (header $version)" <<<"$out" || fail "pyop_version: $out"

# 3. The exported target and the exports.
targets=$(ls "$libdir"/cmake/pyop/pyopTargets.cmake)
line=$(grep 'INTERFACE_INCLUDE_DIRECTORIES' "$targets")
n=$(grep -o '_IMPORT_PREFIX}/include' <<<"$line" | wc -l)
[ "$n" -eq 1 ] || fail "pyop::pyop lists its include directory $n times: $line"
nm -D --defined-only "$libdir/libpyop.so.0" | grep -qw pyop_version || fail "pyop_version not exported"
echo "hosts test: ok"
