"""Fails in the second interpreter that imports it (lane 1, lane 2, then
the main one: the bridge loads the lanes first) by a count kept in the
file PYOP_TEST_COUNTER_FILE names: a plugin that fails in one lane only."""
import os

import pyop
from pyop import TensorDesc

_path = os.environ.get("PYOP_TEST_COUNTER_FILE")
if _path:
    n = int(open(_path).read() or "0") + 1 if os.path.exists(_path) else 1
    with open(_path, "w") as f:
        f.write(str(n))
    if n == 2:
        raise RuntimeError("this plugin fails in its second interpreter (import %d)" % n)


@pyop.register_op(op_type="Counted")
def counted(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)
