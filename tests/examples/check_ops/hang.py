"""An op that never returns (issue 25 item 5): the per-case limit names
the op and the case, and the rest of the report is still printed."""

import ctypes
import threading

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="Hang")
def hang(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Hang")
class HangImpl:
    def execute(self, x: Tensor) -> None:
        if x.dtype == pyop.DataType.int8:
            threading.Event().wait()  # forever
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)


@pyop.register_op(op_type="AfterHang")
def after_hang(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="AfterHang")
class AfterHangImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
