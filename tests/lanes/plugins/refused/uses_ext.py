"""Refused(x) -> y = x: its plugin imports an extension module that refuses
sub-interpreters with their own GIL (_ctypes on 3.12, the single-phase
_testsinglephase on 3.13), so it stays serial in the main interpreter."""
import sys

if sys.version_info < (3, 13):
    import _ctypes  # noqa: F401
else:
    import _testsinglephase  # noqa: F401

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="Refused")
def refused(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Refused")
class RefusedImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        memoryview(out).cast("B")[:] = memoryview(x).cast("B")
