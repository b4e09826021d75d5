"""GE's load-time signature check: execute's attributes must follow the
IR order; the load fails with a TypeError naming op, key and parameter."""

from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="GeBadSignature")
def proto(x: TensorDesc, *, a: int, b: int) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeBadSignature")
class Impl:
    def execute(self, x: Tensor, *, b: int, a: int):
        pass
