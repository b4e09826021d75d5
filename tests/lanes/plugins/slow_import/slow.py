"""Slow(x) -> y = x, a plugin whose import takes 0.5 s (in every lane and in
the main interpreter): the window in which lanes_host's sigint case sends
the process SIGINT."""
import time

import pyop
from pyop import Tensor, TensorDesc

time.sleep(0.5)


@pyop.register_op(op_type="Slow")
def slow(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Slow")
class SlowImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        memoryview(out).cast("B")[:] = memoryview(x).cast("B")
