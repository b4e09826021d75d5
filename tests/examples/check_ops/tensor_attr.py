"""A Tensor attribute (read-only for the op) written in place (issue 25
item 11): reported as a write into the attribute, never as
nondeterminism, and declaring the op nondeterministic does not hide it."""

import ctypes

import pyop
from pyop import Tensor, TensorDesc


def _add_and_bump(x, w):
    out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
    n = x.nbytes // 4
    a = (ctypes.c_float * n).from_address(x.data_ptr)
    b = (ctypes.c_float * n).from_address(w.data_ptr)
    o = (ctypes.c_float * n).from_address(out.data_ptr)
    for i in range(n):
        o[i] = a[i] + b[i]
        b[i] += 1.0  # the attribute, written in place


@pyop.register_op(op_type="BumpsAttr")
def bumps_attr(x: TensorDesc, *, w: Tensor) -> TensorDesc:
    if x.dtype != pyop.DataType.float32 or list(x.shape) != [2, 3]:
        raise TypeError("BumpsAttr: float32[2,3] only")
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="BumpsAttr")
class BumpsAttrImpl:
    def execute(self, x: Tensor, *, w: Tensor) -> None:
        _add_and_bump(x, w)


@pyop.register_op(op_type="BumpsAttrNondet")
def bumps_attr_nondet(x: TensorDesc, *, w: Tensor) -> TensorDesc:
    return bumps_attr(x, w=w)


@pyop.register_op_impl(op_type="BumpsAttrNondet", deterministic=False)
class BumpsAttrNondetImpl:
    def execute(self, x: Tensor, *, w: Tensor) -> None:
        _add_and_bump(x, w)
