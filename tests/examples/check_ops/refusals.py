"""Which infer_meta exceptions refuse a generated case (issue 25 item 12):
a TypeError or ValueError raised by the plugin's own code refuses it (the
reason shown, text and JSON); anything else fails infer_meta, with its
traceback -- an IndexError on rank-0, a typo's AttributeError, a TypeError
raised inside pyop."""

import ctypes

import pyop
from pyop import DataType, Tensor, TensorDesc


def _copy(x):
    out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
    ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)


@pyop.register_op(op_type="RefusesFloat16")
def refuses_float16(x: TensorDesc) -> TensorDesc:
    if x.dtype == DataType.float16:
        raise TypeError("RefusesFloat16: no float16")
    if x.ndim == 0:
        raise ValueError("RefusesFloat16: rank-0 is not taken")
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="RefusesFloat16")
class RefusesFloat16Impl:
    def execute(self, x: Tensor) -> None:
        _copy(x)


@pyop.register_op(op_type="FirstDim")
def first_dim(x: TensorDesc) -> TensorDesc:
    return TensorDesc([x.shape[0]], x.dtype)  # IndexError on rank-0


@pyop.register_op_impl(op_type="FirstDim")
class FirstDimImpl:
    def execute(self, x: Tensor) -> None:
        pyop.get_execute_ctx().malloc_output_tensor(0, [x.shape[0]], x.dtype)


@pyop.register_op(op_type="Typo")
def typo(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shapee, x.dtype)  # AttributeError: a typo


@pyop.register_op_impl(op_type="Typo")
class TypoImpl:
    def execute(self, x: Tensor) -> None:
        _copy(x)


@pyop.register_op(op_type="BadDesc")
def bad_desc(x: TensorDesc) -> TensorDesc:
    return TensorDesc("2,3", x.dtype)  # pyop's TensorDesc raises TypeError: not a refusal


@pyop.register_op_impl(op_type="BadDesc")
class BadDescImpl:
    def execute(self, x: Tensor) -> None:
        _copy(x)
