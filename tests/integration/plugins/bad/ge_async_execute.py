"""A GE-style implementation whose execute is async def: refused at GE's
register_op_impl (issue 17, item 9)."""

from ge.custom_op import register_op, register_op_impl
from ge.runtime import TensorDesc


@register_op(op_type="GeAsyncExecute")
def ge_async_execute(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="GeAsyncExecute")
class GeAsyncExecuteImpl:
    async def execute(self, ctx):
        pass
