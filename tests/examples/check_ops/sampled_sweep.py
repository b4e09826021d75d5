"""An op wrong for float16 whose only sample is float32 (issue 25 item
10): the samples add to the sweep, they do not replace it."""

import ctypes

import pyop
from pyop import DataType, Tensor, TensorDesc


@pyop.register_op(op_type="Float32Sampled")
def float32_sampled(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)  # accepts every data type...


@pyop.register_op_impl(op_type="Float32Sampled")
class Float32SampledImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        if x.dtype == DataType.float16:  # ...and is wrong for float16
            raise RuntimeError("Float32Sampled: float16 is broken")
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)


@pyop.register_samples(op_type="Float32Sampled")
def float32_samples():
    return [{"inputs": {"x": ("float32", [3], [1, 2, 3])}}]
