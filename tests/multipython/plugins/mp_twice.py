"""MpTwice(x) -> y = 2 x: pure Python, so it runs in every lane of a Python
that has them (start_host.c)."""
import sys

import pyop
from pyop import DataType, Tensor, TensorDesc


@pyop.register_op(op_type="MpTwice")
def mp_twice(x: TensorDesc) -> TensorDesc:
    if x.dtype != DataType.float32:
        raise TypeError("MpTwice: float32 only, got %s" % x.dtype)
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="MpTwice")
class MpTwiceImpl:
    def execute(self, x: Tensor) -> None:
        y = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with pyop.elements(x) as xs, pyop.elements(y) as ys:
            for i in range(len(ys)):
                ys[i] = 2 * xs[i]
            if len(ys) > 1:  # which Python ran it, for the host to check
                ys[1] = sys.version_info[0] * 100 + sys.version_info[1]
