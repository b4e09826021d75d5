"""An implementation-only GE plugin whose execute does not match the host's
REG_OP of GeAddCustom (attribute beta, the prototype says alpha): refused,
naming the op, the method, the mismatch and this file:line."""

from ge.custom_op import register_op_impl
from ge.runtime import Tensor


@register_op_impl(op_type="GeAddCustom")
class AddMismatch:
    def execute(self, a: Tensor, b: Tensor, *, beta: float) -> None:
        pass
