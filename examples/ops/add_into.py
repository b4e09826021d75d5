"""AddInto: an in-place op. execute writes x + y into x (declared with
mutates_args) and returns x itself as the output (an alias: the output "x"
is input x's buffer, which the host sees in pyop_op_info)."""

import pyop
from pyop import DataType, Tensor, TensorDesc


@pyop.register_op(op_type="AddInto", mutates_args=("x",), outputs=("x",))
def add_into(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    if x.shape != y.shape or x.dtype != y.dtype:
        raise ValueError("AddInto: x and y must have the same shape and dtype")
    if x.dtype in (DataType.float16, DataType.bfloat16):
        # memoryview has no float16 arithmetic ('e' cannot be cast to) and
        # bfloat16 arrives as raw bits ('H'): adding those would be wrong.
        raise TypeError("AddInto: %s is not supported" % x.dtype)
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="AddInto")
class AddIntoImpl:
    def execute(self, x: Tensor, y: Tensor) -> None:
        # x is writable (mutates_args); y is read-only. An empty x has
        # nothing to add (and memoryview cannot cast a view with a 0 in
        # its shape).
        if x.nbytes == 0:
            pyop.get_execute_ctx().make_output_ref_input(0, 0)
            return
        with memoryview(x) as xb, memoryview(y) as yb:
            xv, yv = xb.cast("B").cast(xb.format), yb.cast("B").cast(yb.format)
            for i in range(len(xv)):
                xv[i] = xv[i] + yv[i]
            del xv, yv
        # Output 0 is input 0's buffer: bind it instead of allocating.
        pyop.get_execute_ctx().make_output_ref_input(0, 0)
