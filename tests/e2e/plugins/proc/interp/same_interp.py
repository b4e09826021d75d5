"""SameInterp(x) -> y: y[0] is 1.0 when execute runs in the interpreter that
imported this plugin (the one whose sys module it saw), 0.0 otherwise (the
bridge attached a thread state of another interpreter: issue 20)."""
import sys as _sys_at_import

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="SameInterp")
def same_interp(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="SameInterp")
class SameInterpImpl:
    def execute(self, x: Tensor) -> None:
        import sys  # looked up in the running interpreter's sys.modules
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        memoryview(out).cast("B").cast("f")[0] = 1.0 if sys is _sys_at_import else 0.0
