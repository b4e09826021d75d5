"""Logs(x) -> y = x, y[1] the interpreter's id: logs through the bridge's
log service (pyop._native.log, which pyop's GE link uses) when imported,
one line at INFO and one at DEBUG, and at each execute one at INFO, each
naming the interpreter (tests/lanes/lanes_load.c, lane_log: a lane's lines
reach the host with their own levels, every lane's)."""
import sys

import pyop
from pyop import Tensor, TensorDesc


def _interp_id():
    try:
        import _interpreters as i  # 3.13
    except ImportError:
        import _xxsubinterpreters as i  # 3.12
    cur = i.get_current()
    return int(cur[0] if isinstance(cur, tuple) else cur)


_log = sys.modules["pyop._native"].log
_id = _interp_id()
_log(2, "logs-import info in %d" % _id)
_log(3, "logs-import debug in %d" % _id)


@pyop.register_op(op_type="Logs")
def logs(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Logs")
class LogsImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        o[0] = memoryview(x).cast("B").cast("f")[0]
        o[1] = float(_id)
        _log(2, "logs-exec info in %d" % _id)
