"""Optional(x) -> y, y[0] = 1.0 when the accelerated path runs (the
extension module imported), 0.0 for the fallback; y[1] the interpreter's id.
The optional-extension pattern: the plugin catches the ImportError of an
extension module that refuses sub-interpreters with their own GIL (_ctypes
on 3.12, the single-phase _testsinglephase on 3.13), which the main
interpreter imports: in a lane it would run the fallback
(tests/lanes/lanes_load.c, optional_ext)."""
import sys

try:
    if sys.version_info < (3, 13):
        import _ctypes as ext
    else:
        import _testsinglephase as ext
except ImportError:
    ext = None

import pyop
from pyop import Tensor, TensorDesc


def _interp_id():
    try:
        import _interpreters as i  # 3.13
    except ImportError:
        import _xxsubinterpreters as i  # 3.12
    cur = i.get_current()
    return int(cur[0] if isinstance(cur, tuple) else cur)


@pyop.register_op(op_type="Optional")
def optional(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Optional")
class OptionalImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        o[0] = 1.0 if ext is not None else 0.0
        o[1] = float(_interp_id())
