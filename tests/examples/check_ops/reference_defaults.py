"""The reference gets the prototype's attribute defaults (issue 25 item
15): a reference without a Python default of its own runs, one whose
default differs from the prototype's does not make a correct op fail, and
an op that ignores its attribute fails (the sweep sets it off its
default)."""

import ctypes

import pyop
from pyop import DataType, Tensor, TensorDesc


def _float32(x):
    if x.dtype != DataType.float32:
        raise TypeError("float32 only")
    return TensorDesc(x.shape, x.dtype)


def _scaled(x, alpha):
    out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
    n = x.nbytes // 4
    a = (ctypes.c_float * n).from_address(x.data_ptr)
    o = (ctypes.c_float * n).from_address(out.data_ptr)
    for i in range(n):
        o[i] = a[i] * alpha


@pyop.register_op(op_type="Scaled")
def scaled(x: TensorDesc, *, alpha: float = 2.0) -> TensorDesc:
    return _float32(x)


@pyop.register_op_impl(op_type="Scaled")
class ScaledImpl:
    def execute(self, x: Tensor, *, alpha: float) -> None:
        _scaled(x, alpha)


@pyop.register_reference(op_type="Scaled", rtol=1e-6, atol=0)
def scaled_reference(x, *, alpha=1.0):  # its own default is not the prototype's
    return x * alpha


@pyop.register_op(op_type="IgnoresAlpha")
def ignores_alpha(x: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    return _float32(x)


@pyop.register_op_impl(op_type="IgnoresAlpha")
class IgnoresAlphaImpl:
    def execute(self, x: Tensor, *, alpha: float) -> None:
        _scaled(x, 1.0)  # alpha ignored: right at the default only


@pyop.register_reference(op_type="IgnoresAlpha", rtol=1e-6, atol=0)
def ignores_alpha_reference(x, *, alpha):
    return x * alpha
