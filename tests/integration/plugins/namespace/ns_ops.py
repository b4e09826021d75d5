"""A pyop plugin importing a sibling namespace package (common/ has no
__init__.py), by both import forms (issue 17, item 16)."""

import common.sub.scale
from common.utils import twice

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="NsTwice")
def ns_twice(x: TensorDesc) -> TensorDesc:
    if x.dtype != pyop.DataType.float32:  # twice() works on float32 views
        raise TypeError("NsTwice supports float32 only, got %s" % x.dtype)
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="NsTwice")
class NsTwiceImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        if 0 in x.shape:  # an empty view cannot be cast; nothing to compute
            return
        twice(memoryview(x).cast("B").cast("f"), memoryview(out).cast("B").cast("f"),
              common.sub.scale.FACTOR)
