"""A plugin that clears every atexit callback at import (as some libraries'
test helpers do) and registers Twice."""
import atexit

import pyop
from pyop import Tensor, TensorDesc

atexit._clear()


@pyop.register_op(op_type="Twice")
def twice(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Twice")
class TwiceImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as xv, memoryview(out) as ov:
            fx, fo = xv.cast("B").cast("f"), ov.cast("B").cast("f")
            for i in range(len(fo)):
                fo[i] = 2 * fx[i]
            fx.release()
            fo.release()
