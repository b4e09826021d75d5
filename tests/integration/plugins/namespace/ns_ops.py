"""A pyop plugin importing a sibling namespace package (common/ has no
__init__.py), by both import forms (issue 17, item 16)."""

import common.sub.scale
from common.utils import twice

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="NsTwice")
def ns_twice(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="NsTwice")
class NsTwiceImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        twice(memoryview(x).cast("B").cast("f"), memoryview(out).cast("B").cast("f"),
              common.sub.scale.FACTOR)
