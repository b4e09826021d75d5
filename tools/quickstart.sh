#!/usr/bin/env bash
# The README's first command: installs what is missing, builds libpyop,
# installs it into build/quick/install and runs the example ops there with
# the installed tools -- the example graph engine and the `pyop` command.
#
#   tools/quickstart.sh
#   PYOP_JOBS=4 tools/quickstart.sh        parallel build jobs (default: nproc)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build/quick
prefix=$build/install
jobs=${PYOP_JOBS:-$(nproc)}

step() { printf '\n==> %s\n' "$*"; }
show() { printf '    $ %s\n' "$*"; "$@"; }

step "Installing the Debian packages that are missing (tools/install-deps.sh)"
"$here/tools/install-deps.sh"

step "Configuring into build/quick"
mkdir -p "$build"
echo "    \$ cmake -S $here -B $build -DCMAKE_INSTALL_PREFIX=$prefix -DBUILD_TESTING=OFF"
cmake -S "$here" -B "$build" -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_TESTING=OFF \
  >"$build/quickstart-configure.log" 2>&1 ||
  { cat "$build/quickstart-configure.log"; exit 1; }

step "Building"
show cmake --build "$build" -j"$jobs"

step "Installing into build/quick/install"
echo "    \$ cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$build/quickstart-install.log" 2>&1 ||
  { cat "$build/quickstart-install.log"; exit 1; }

ops=$prefix/share/pyop/examples/ops
graph=$prefix/share/pyop/examples/mini_engine/example.graph
export ASCEND_CUSTOM_OPP_PATH=$ops
# The example ops' C kernels are found next to the installed libpyop; make
# sure a value from the caller's environment does not point elsewhere.
unset PYOP_EXAMPLE_KERNELS

step "Running the example graph with the installed engine (bin/pyop-mini-engine)"
echo "    ASCEND_CUSTOM_OPP_PATH=$ops"
echo "    graph: $graph"
show "$prefix/bin/pyop-mini-engine" -v "$graph"

step "Listing the example ops with the installed pyop command"
show "$prefix/bin/pyop" list

step "Running one op with pyop run"
show "$prefix/bin/pyop" run ScaledAdd --input 'x=float32[2,3]:1,2,3,4,5,6' \
  --input 'y=float32[2,3]:10,20,30,40,50,60' --attr alpha=2

step "Done"
cat <<MSG
    Installed into $prefix.
    Try:  export ASCEND_CUSTOM_OPP_PATH=$ops
          $prefix/bin/pyop check
          $prefix/bin/pyop run Clip --input 'x=float32[4]:-2,0.5,3,9' --attr min=0 --attr max=6
    Write your own op: docs/op-author-guide.md. Run every test: tools/test-all.sh
MSG
