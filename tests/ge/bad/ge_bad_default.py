"""GE rejects an int default for a float attribute (exact-type defaults):
the whole load fails, naming the op and the parameter."""

from ge.custom_op import register_op
from ge.runtime import TensorDesc


@register_op(op_type="GeBadDefault")
def bad(x: TensorDesc, *, alpha: float = 1) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)
