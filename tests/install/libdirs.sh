#!/usr/bin/env bash
# libdirs.sh SOURCE_DIR CC CMAKE
#
# Installs libpyop with a libdir of more than one component (Debian's
# multiarch lib/x86_64-linux-gnu, and another triple) and with an absolute one, and checks that
# what a host gets from pkg-config and find_package(pyop) is right there:
# pyop.pc's --cflags/--libs/libdir point at the real directories, absolute
# and normalised (no ".." that a host would record as its RUNPATH), and the
# README's host snippet compiles, links and runs against each tree, through
# pkg-config (rpath from --variable=libdir) and through find_package; and
# the installed `pyop doctor` / `pyop list` find that libdir's libpyop.
set -euo pipefail
src=$1 cc=$2 cmake=$3
work=$(mktemp -d /tmp/pyop-libdirs-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# capture VAR CMD...: VAR gets CMD's stdout and stderr; on failure, a
# description of how it ended ("exit 3", "killed by SIGSEGV (139)") is
# appended, so a crash never reads as an empty message.
capture() {
  local __var=$1 __out __rc=0; shift
  __out=$("$@" 2>&1) || __rc=$?
  if [ "$__rc" -ne 0 ]; then
    if [ "$__rc" -gt 128 ] && __sig=$(kill -l $((__rc - 128)) 2>/dev/null); then
      __out="$__out${__out:+ }[killed by SIG$__sig ($__rc)]"
    else
      __out="$__out${__out:+ }[exit $__rc]"
    fi
  fi
  printf -v "$__var" '%s' "$__out"
  return "$__rc"
}
unset LD_LIBRARY_PATH PYOP_EXAMPLE_KERNELS PYOP_BRIDGE_DIR PKG_CONFIG_PATH

awk '/^## From a C host/ {sec=1; next}
     sec && /^```c$/ {code=1; next}
     code && /^```$/ {exit}
     code {print}' "$src/README.md" >"$work/snippet.c"
[ -s "$work/snippet.c" ] || fail "no C block under '## From a C host' in README.md"

# check LABEL LIBDIR_ARG PREFIX LIBDIR_ABS
check() {
  local label=$1 libdir_arg=$2 prefix=$3 libdir=$4
  local b=$work/build-$label log=$work/$label.log
  echo "== $label: CMAKE_INSTALL_LIBDIR=$libdir_arg, prefix $prefix"
  "$cmake" -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_INSTALL_LIBDIR="$libdir_arg" >"$log" 2>&1 || { cat "$log"; fail "$label: configure"; }
  "$cmake" --build "$b" -j2 >>"$log" 2>&1 || { tail -50 "$log"; fail "$label: build"; }
  "$cmake" --install "$b" >>"$log" 2>&1 || { tail -50 "$log"; fail "$label: install"; }
  [ -e "$libdir/libpyop.so.0" ] || fail "$label: no $libdir/libpyop.so.0"
  [ -d "$libdir/pyop/artifacts" ] || fail "$label: no $libdir/pyop/artifacts"
  [ -f "$libdir/pkgconfig/pyop.pc" ] || fail "$label: no $libdir/pkgconfig/pyop.pc"
  [ -f "$libdir/cmake/pyop/pyopConfig.cmake" ] || fail "$label: no $libdir/cmake/pyop"

  # pkg-config: the real directories, absolute and normalised.
  export PKG_CONFIG_PATH=$libdir/pkgconfig
  local cflags libs ld rpath
  pc() { pkg-config "$@" pyop | sed 's/[[:space:]]*$//'; } # pkgconf ends lines with a space
  cflags=$(pc --cflags) libs=$(pc --libs) ld=$(pc --variable=libdir)
  rpath=$(pc --variable=ldflags_rpath)
  [ "$cflags" = "-I$prefix/include" ] || fail "$label: --cflags is '$cflags', want '-I$prefix/include'"
  [ "$libs" = "-L$libdir -lpyop" ] || fail "$label: --libs is '$libs', want '-L$libdir -lpyop'"
  [ "$ld" = "$libdir" ] || fail "$label: libdir is '$ld', want '$libdir'"
  [ "$rpath" = "-Wl,-rpath,$libdir" ] || fail "$label: ldflags_rpath is '$rpath'"
  for v in "$cflags" "$libs" "$ld"; do
    case "$v" in *"/.."* | *"/./"* | *"//"*) fail "$label: un-normalised path from pkg-config: $v" ;; esac
  done
  [ -f "$prefix/include/pyop/pyop.h" ] || fail "$label: no $prefix/include/pyop/pyop.h"

  # The README host through pkg-config, run without LD_LIBRARY_PATH.
  export ASCEND_CUSTOM_OPP_PATH=$prefix/share/pyop/examples/ops
  "$cc" -std=c11 -Wall -Wextra -pedantic -Werror -o "$work/$label-pc" "$work/snippet.c" \
    $cflags $libs -Wl,-rpath,"$ld" || fail "$label: the README host does not build with pkg-config"
  local runpath
  runpath=$(readelf -d "$work/$label-pc" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p; s/.*(RPATH).*\[\(.*\)\]/\1/p')
  [ "$runpath" = "$libdir" ] || fail "$label: the host's RUNPATH is '$runpath', want '$libdir'"
  local out
  capture out "$work/$label-pc" || fail "$label: the README host (pkg-config) failed: $out"
  [ "$out" = "z = [3, 4, 5]" ] || fail "$label: the README host printed '$out'"

  # The installed command finds the libpyop of this libdir by itself (bin/pyop
  # has it filled in at configure time), whatever the layout.
  capture out env -u PYOP_LIBRARY -u PYOP_PYTHON "$prefix/bin/pyop" doctor ||
    fail "$label: the installed pyop doctor failed: $out"
  grep -qxF "artifacts: $libdir/pyop/artifacts" <<<"$out" ||
    fail "$label: pyop doctor does not use $libdir: $out"
  grep -q '^load: ok, [1-9][0-9]* ops registered$' <<<"$out" ||
    fail "$label: pyop doctor's trial load: $out"
  capture out env -u PYOP_LIBRARY -u PYOP_PYTHON "$prefix/bin/pyop" list ||
    fail "$label: the installed pyop list failed: $out"
  grep -q '^ScaledAdd(' <<<"$out" || fail "$label: pyop list has no ScaledAdd: $out"

  # The same host through find_package(pyop).
  mkdir -p "$work/$label-cm"
  cp "$work/snippet.c" "$work/$label-cm/host.c"
  cat >"$work/$label-cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(libdirs_host C)
find_package(pyop 0.1 REQUIRED)
add_executable(host host.c)
target_link_libraries(host PRIVATE pyop::pyop)
CM
  "$cmake" -S "$work/$label-cm" -B "$work/$label-cm/b" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$prefix" -Dpyop_DIR="$libdir/cmake/pyop" >>"$log" 2>&1 ||
    { tail -30 "$log"; fail "$label: find_package(pyop)"; }
  "$cmake" --build "$work/$label-cm/b" >>"$log" 2>&1 || { tail -30 "$log"; fail "$label: build with pyop::pyop"; }
  capture out "$work/$label-cm/b/host" || fail "$label: the README host (find_package) failed: $out"
  [ "$out" = "z = [3, 4, 5]" ] || fail "$label: the README host (find_package) printed '$out'"
  echo "$label: ok"
}

check multiarch lib/x86_64-linux-gnu "$work/usr" "$work/usr/lib/x86_64-linux-gnu"
check absolute "$work/abs/lib" "$work/usr2" "$work/abs/lib"
# Another multiarch triple than the machine's: nothing may assume one.
check other-multiarch lib/aarch64-linux-gnu "$work/usr3" "$work/usr3/lib/aarch64-linux-gnu"
echo "libdirs test: ok"
