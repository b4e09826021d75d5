"""A deliberately inconsistent op for `pyop check`: infer_meta promises the
input's shape, execute allocates the transposed one (float32[2,3] in,
float32[3,2] out). `pyop check` must exit 1 and name the disagreement."""

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="BadTranspose")
def bad_transpose(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)  # wrong: should be reversed


@pyop.register_op_impl(op_type="BadTranspose")
class BadTransposeImpl:
    def execute(self, x: Tensor) -> None:
        shape = tuple(reversed(x.shape))
        pyop.get_execute_ctx().malloc_output_tensor(0, shape, x.dtype)
