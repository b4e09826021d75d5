#!/usr/bin/env bash
# pytest_guide.sh BUILD_DIR SOURCE_DIR CMAKE PYTHON
#
# The op author guide's "From a test", as a reader takes it: the test file
# of its ```python block (import pyop.testing ... opcheck) beside a copy of
# the example ops, run with the guide's command line
#   PYTHONPATH=<prefix>/lib/pyop/artifacts/<key>/python PYTHON -m pytest
# against an installed tree, <key> as `pyop doctor` prints it. pytest must
# be there: tools/install-deps.sh installs it (python3-pytest), which is
# checked too.
set -euo pipefail
build=$1 src=$2 cmake=$3 py=$4
work=$(mktemp -d /tmp/pyop-pytest-guide-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

grep -q '\bpython3-pytest\b' "$src/tools/install-deps.sh" ||
  fail "tools/install-deps.sh does not install python3-pytest, which the guide runs"
"$py" -c 'import pytest' 2>/dev/null ||
  fail "$py has no pytest: tools/install-deps.sh installs python3-pytest"

"$cmake" --install "$build" --prefix "$work/prefix" >/dev/null
unset ASCEND_CUSTOM_OPP_PATH PYOP_CLI PYOP_LIBRARY PYOP_BRIDGE_DIR PYTHONPATH
key=$("$work/prefix/bin/pyop" doctor --json | "$py" -c 'import json, sys; print(json.load(sys.stdin)["runtime_key"])')
[ -d "$work/prefix/lib/pyop/artifacts/$key/python" ] || fail "no artifact for $key"

# The guide's block: the first ```python block after "**From a test**".
awk '/\*\*From a test\*\*/ {sec=1; next}
     sec && /^ *```python$/ {code=1; next}
     code && /^ *```$/ {exit}
     code {sub(/^  /, ""); print}' "$src/docs/op-author-guide.md" >"$work/test_ops.py"
grep -q "pyop.testing.opcheck" "$work/test_ops.py" || fail "no opcheck test in the guide"
cp -r "$work/prefix/share/pyop/examples/ops" "$work/prefix/share/pyop/examples/ge_ops" "$work/"
cd "$work"
out=$(PYTHONPATH="$work/prefix/lib/pyop/artifacts/$key/python" "$py" -m pytest -q -p no:cacheprovider test_ops.py 2>&1) ||
  { echo "$out"; fail "the guide's pytest command failed"; }
echo "$out" | tail -3
grep -q "1 passed" <<<"$out" || fail "pytest did not pass the guide's one test: $out"
echo "pytest guide test: ok"
