"""Pin(x) -> y = x, keeping its input Tensor in builtins, which outlives
the plugin and the pyop package: pyop_shutdown then cannot drop it, warns,
and keeps the bridge's image mapped (RTLD_NODELETE), so the next load runs
in that same image, with what its static state kept. It imports an
extension module a lane refuses (as tests/lanes/plugins/refused does), so
with lanes too it stays serial in the main interpreter, where the Tensor it
keeps holds the main bridge image."""
import builtins
import sys

if sys.version_info < (3, 13):
    import _ctypes  # noqa: F401
else:
    import _testsinglephase  # noqa: F401

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
