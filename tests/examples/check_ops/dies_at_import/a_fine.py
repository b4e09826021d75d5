"""A good plugin beside one that ends the process when imported."""

import ctypes

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="BesideTheExit")
def beside(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="BesideTheExit")
class BesideImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
