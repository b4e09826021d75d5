from ge.custom_op import register_op, register_op_impl
from ge.graph.types import DataType
from ge.runtime import Tensor, TensorDesc

import ge_pkg.scale_ops as scale_ops   # a sibling by absolute name
from ge_pkg import scale_ops as again
from _ge_shared import unary

assert scale_ops is again


@register_op(op_type="GePkgShift")
def shift(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GePkgShift")
class Shift:
    def execute(self, x: Tensor):
        from ge.custom_op import get_execute_ctx
        unary(get_execute_ctx(), lambda v: v + scale_ops.FACTOR)
