"""GE ops whose results vary by design (issue 25 item 19): one declares it
with libpyop's ge register_op_impl(..., deterministic=False), one with the
class attribute a plugin CANN GE loads too can carry, one not at all."""

import ctypes
import os

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


def _noise(x):
    y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
    n = y.size
    if n:
        ctypes.memmove(y.addr, os.urandom(n), n)


@register_op(op_type="GeNoisyDeclared")
def noisy_declared(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeNoisyDeclared", deterministic=False)
class GeNoisyDeclared:
    def execute(self, x: Tensor) -> None:
        _noise(x)


@register_op(op_type="GeNoisyAttribute")
def noisy_attribute(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeNoisyAttribute")
class GeNoisyAttribute:
    __pyop_deterministic__ = False

    def execute(self, x: Tensor) -> None:
        _noise(x)


@register_op(op_type="GeNoisy")
def noisy(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeNoisy")
class GeNoisy:
    def execute(self, x: Tensor) -> None:
        _noise(x)
