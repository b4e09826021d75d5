"""AddInto: an in-place op. execute writes x + y into x (declared with
mutates_args) and returns x itself as the output (an alias: the output "x"
is input x's buffer, which the host sees in pyop_op_info)."""

import pyop
from pyop import DataType, Tensor, TensorDesc


@pyop.register_op(op_type="AddInto", mutates_args=("x",), outputs=("x",))
def add_into(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    if x.shape != y.shape or x.dtype != y.dtype:
        raise ValueError("AddInto: x and y must have the same shape and dtype")
    if x.dtype == DataType.bool:
        # True + True is 2: no bool. (An integer sum that leaves its type
        # is refused when written: pyop.elements never wraps.)
        raise TypeError("AddInto: %s is not supported" % x.dtype)
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="AddInto")
class AddIntoImpl:
    def execute(self, x: Tensor, y: Tensor) -> None:
        # x is writable (mutates_args); y is read-only.
        with pyop.elements(x) as xs, pyop.elements(y) as ys:
            for i in range(len(xs)):
                xs[i] = xs[i] + ys[i]
        # Output 0 is input 0's buffer: bind it instead of allocating.
        pyop.get_execute_ctx().make_output_ref_input(0, 0)
