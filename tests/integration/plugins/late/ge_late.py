"""A GE-style legacy execute replaced by an async def after decoration
(issue 17, item 9). The GE layer binds the kernel when the class is
registered, as GE does, so the registered (synchronous) execute is what
runs: no coroutine is made, and none is dropped unrun."""

from ge.custom_op import register_op, register_op_impl
from ge.runtime import TensorDesc


@register_op(op_type="GeLate")
def ge_late(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="GeLate")
class GeLateImpl:
    def execute(self, ctx):
        pass


async def _execute(self, ctx):
    raise AssertionError("the coroutine must never run")


GeLateImpl.execute = _execute
