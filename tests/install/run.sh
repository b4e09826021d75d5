#!/usr/bin/env bash
# run.sh BUILD_DIR CONSUMER_SRC FAKE_BRIDGE_DIR CC CMAKE PY_INCLUDE PY_LIB
set -euo pipefail
build=$1 consumer=$2 fake=$3 cc=$4 cmake=$5 pyinc=$6 pylib=$7
work=$(mktemp -d /tmp/pyop-install-XXXXXX)
trap 'rm -rf "$work"' EXIT

"$cmake" --install "$build" --prefix "$work/prefix" >/dev/null
# Relocatable: nothing may refer to the first prefix or to the build tree.
mv "$work/prefix" "$work/moved"
prefix=$work/moved
# pyop.pc alone records the prefix (absolute, normalised paths), on its
# prefix= line only; a moved tree passes --define-variable=prefix=.
if grep -rIl -e "$work/prefix" -e "$build" "$prefix" 2>/dev/null | grep -v '/pkgconfig/pyop\.pc$'; then
  echo "FAIL: installed files refer to the build tree or the install prefix"; exit 1
fi
pcfile=$(ls "$prefix"/lib*/pkgconfig/pyop.pc)
[ "$(grep -c -e "$work/prefix" "$pcfile")" = 1 ] && grep -qx "prefix=$work/prefix" "$pcfile" ||
  { echo "FAIL: pyop.pc names the install prefix elsewhere than its prefix= line"; cat "$pcfile"; exit 1; }

# Exported symbols: only pyop_* and the four GE-style entry points.
lib=$(ls "$prefix"/lib*/libpyop.so.* | head -1)
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' |
  grep -v -E '^(pyop_[a-z_0-9]+|CheckNeedLoadPythonCustomOps|LoadPythonCustomOps|UnloadPythonCustomOps|ShutdownPythonCustomOpsForProcess)$' || true)
[ -z "$bad" ] || { echo "FAIL: unexpected exported symbols: $bad"; exit 1; }
nm -D --defined-only "$lib" | awk '{print $3}' | grep -qx pyop_version ||
  { echo "FAIL: pyop_version is not exported"; exit 1; }
readelf -d "$lib" | grep -q 'SONAME.*libpyop.so.0' || { echo "FAIL: soname is not libpyop.so.0"; exit 1; }
# No TLS descriptors: glibc's x86-64 resolver before 2.40 loses the caller's
# vector registers on a thread's first access in a dlopen'ed libpyop, and the
# installed pyop command died of it (src/CMakeLists.txt says why).
tlsdesc=$(readelf -rW "$lib" | grep -c 'TLSDESC' || true)
[ "$tlsdesc" = 0 ] || { echo "FAIL: $lib has $tlsdesc TLSDESC relocations (built with -mtls-dialect=gnu2?)"; exit 1; }

# Put the fake bridge where an installed real bridge would be, alone.
libdir=$(dirname "$lib")
rm -rf "$libdir/pyop/artifacts"
mkdir -p "$libdir/pyop/artifacts"
cp -r "$fake" "$libdir/pyop/artifacts/$(basename "$fake")"
chmod -R go-w "$libdir/pyop"
opp=$work/opp; mkdir -p "$opp"; echo "# a plugin the fake bridge pretends to import" > "$opp/plugin.py"

# 1. find_package
"$cmake" -S "$consumer" -B "$work/c1" -DCMAKE_PREFIX_PATH="$prefix" \
  -DPY_INCLUDE="$pyinc" -DPY_LIB="$pylib" -DCMAKE_C_COMPILER="$cc" >/dev/null
"$cmake" --build "$work/c1" >/dev/null
ASCEND_CUSTOM_OPP_PATH=$opp LD_LIBRARY_PATH=$libdir "$work/c1/host"

# 2. pkg-config
pc=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --define-variable=prefix="$prefix" --cflags --libs pyop)
case "$pc" in *"$prefix/include"*"-L$libdir "*) ;; *) echo "FAIL: pkg-config on the moved tree: $pc"; exit 1 ;; esac
"$cc" -std=c11 -o "$work/host2" "$consumer/host.c" $pc -I"$pyinc" "$pylib"
ASCEND_CUSTOM_OPP_PATH=$opp LD_LIBRARY_PATH=$libdir "$work/host2"
echo "install test: ok"
