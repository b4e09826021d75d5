"""Failures of different inputs and outputs are different failures (issue
25 item 14): x1 written for float16, x2 for int8; output y1 overrun for
float64, output y2 for int16 -- four lines, none merged into "the same
failure"."""

import ctypes

import pyop
from pyop import DataType, Tensor, TensorDesc


@pyop.register_op(op_type="TwoWays", outputs=("y1", "y2"))
def two_ways(x1: TensorDesc, x2: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
    return TensorDesc(x1.shape, x1.dtype), TensorDesc(x1.shape, x1.dtype)


@pyop.register_op_impl(op_type="TwoWays")
class TwoWaysImpl:
    def execute(self, x1: Tensor, x2: Tensor) -> None:
        ctx = pyop.get_execute_ctx()
        y1 = ctx.malloc_output_tensor(0, x1.shape, x1.dtype)
        y2 = ctx.malloc_output_tensor(1, x1.shape, x1.dtype)
        if x1.dtype == DataType.float16 and x1.nbytes:
            ctypes.memset(x1.data_ptr, 0x55, 1)
        if x1.dtype == DataType.int8 and x2.nbytes:
            ctypes.memset(x2.data_ptr, 0x55, 1)
        if x1.dtype == DataType.float64:
            ctypes.memset(y1.data_ptr + y1.nbytes, 1, 4)
        if x1.dtype == DataType.int16:
            ctypes.memset(y2.data_ptr + y2.nbytes, 1, 4)
