"""An op type libpyop cannot register (a space; issue 17 item 15): refused at
the decorator naming the op type, the reason and this file:line."""

from ge.custom_op import register_op
from ge.runtime import TensorDesc


@register_op(op_type="Ge Bad Type")
def ge_bad_op_type(x: TensorDesc) -> TensorDesc:
    return x
