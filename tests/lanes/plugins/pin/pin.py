"""Pin(x) -> y = x, keeping its input Tensor in builtins, which outlives
the plugin and the pyop package: pyop_shutdown then cannot drop it, warns,
and keeps the bridge's image mapped (RTLD_NODELETE), so the next load runs
in that same image, with what its static state kept."""
import builtins

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="Pin")
def pin(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Pin")
class PinImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        memoryview(out).cast("B")[:] = memoryview(x).cast("B")
        builtins._pyop_lanes_test_kept = x
