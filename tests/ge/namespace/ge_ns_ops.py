"""A GE-style plugin importing a sibling namespace package, as it can under
CANN GE and plain Python (issue 17, item 16)."""

import common.utils
from common.utils import negate
from ge.custom_op import register_op, register_op_impl
from ge.graph.types import DataType
from ge.runtime import TensorDesc


@register_op(op_type="GeNsNeg")
def ge_ns_neg(x: TensorDesc) -> TensorDesc:
    assert common.utils.negate is negate
    if x.data_type != DataType.DT_FLOAT:  # negate() reads float32
        raise TypeError("GeNsNeg supports float32 only, got %s" % x.data_type)
    return x


@register_op_impl(op_type="GeNsNeg")
class GeNsNegImpl:
    def execute(self, ctx):
        x = ctx.get_input_tensor(0)
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        negate(x, z)
