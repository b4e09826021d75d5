"""An int attribute default outside int64 (issue 17 item 15): refused at
registration naming the op, the attribute, the value and this file:line."""

from ge.custom_op import register_op
from ge.runtime import TensorDesc


@register_op(op_type="GeBadIntDefault")
def ge_bad_int_default(x: TensorDesc, *, k: int = 1 << 64) -> TensorDesc:
    return x
