"""Twice(x) -> y = 2x: its prototype registered twice, the same function
both times (the same descriptor, which the registry takes once), then its
implementation: every lane yields the prototype twice too, and each of
the main interpreter's two pairs with its own (lanes_load.c, same_twice)."""
import pyop
from pyop import Tensor, TensorDesc


def twice(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


pyop.register_op(op_type="Twice")(twice)
pyop.register_op(op_type="Twice")(twice)


@pyop.register_op_impl(op_type="Twice")
class TwiceImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        a = memoryview(x).cast("B").cast("f")
        for i in range(len(a)):
            o[i] = 2 * a[i]
