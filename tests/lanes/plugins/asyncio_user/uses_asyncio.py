"""AsyncioUser(x) -> y = x, from a plugin that imports asyncio (and with it
threading): on 3.12 a sub-interpreter that imported it must be ended by the
thread state threading took for its main thread (lanes.c)."""
import asyncio  # noqa: F401

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="AsyncioUser")
def asyncio_user(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="AsyncioUser")
class AsyncioUserImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        memoryview(out).cast("B")[:] = memoryview(x).cast("B")
