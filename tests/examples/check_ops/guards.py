"""Writes outside the buffers the host gave, whose bytes an earlier check
could not see (issue 25 items 7 and 8): an off-by-one copy y[n] = x[n]
(it copies input x's guard bytes into output y's), a memmove with the
element size of float64 for float32 data, and an underrun y[-1]."""

import ctypes

import pyop
from pyop import DataType, Tensor, TensorDesc


def _float32_only(x):
    if x.dtype != DataType.float32:
        raise TypeError("float32 only, got %s" % x.dtype)
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op(op_type="OffByOne")
def off_by_one(x: TensorDesc) -> TensorDesc:
    return _float32_only(x)


@pyop.register_op_impl(op_type="OffByOne")
class OffByOneImpl:
    def execute(self, x: Tensor) -> None:
        y = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        n = x.nbytes // 4
        src = (ctypes.c_float * (n + 1)).from_address(x.data_ptr)
        dst = (ctypes.c_float * (n + 1)).from_address(y.data_ptr)
        for i in range(n + 1):  # one too many: y[n] = x[n]
            dst[i] = src[i]


@pyop.register_op(op_type="WideMemmove")
def wide_memmove(x: TensorDesc) -> TensorDesc:
    return _float32_only(x)


@pyop.register_op_impl(op_type="WideMemmove")
class WideMemmoveImpl:
    def execute(self, x: Tensor) -> None:
        y = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        n = x.nbytes // 4
        ctypes.memmove(y.data_ptr, x.data_ptr, n * 8)  # the size of a float64


@pyop.register_op(op_type="Underrun")
def underrun(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Underrun")
class UnderrunImpl:
    def execute(self, x: Tensor) -> None:
        y = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(y.data_ptr, x.data_ptr, x.nbytes)
        size = x.dtype.itemsize
        ctypes.memset(y.data_ptr - size, 0, size)  # y[-1] = 0
