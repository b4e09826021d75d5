"""An in-place op whose execute is async def: refused at the decorator
(issue 17, item 9), never an execute that "succeeds" doing nothing."""

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="AsyncExecute", mutates_args=("x",))
def async_execute(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="AsyncExecute")
class AsyncExecuteImpl:
    async def execute(self, x: Tensor) -> None:
        memoryview(x).cast("B")[0] = 1
