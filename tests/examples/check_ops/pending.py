"""A prototype and an implementation whose op types differ by a typo: the
implementation waits for a prototype, the prototype has no implementation
(issue 25 items 3 and 16)."""

import ctypes

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="Scale2")
def scale2(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Scael2")
class Scale2Impl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
