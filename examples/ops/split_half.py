"""SplitHalf: an op with two outputs.

Splits x along its first axis into two halves of equal size. The return
annotation tuple[TensorDesc, TensorDesc] declares two outputs; outputs=
names them (the defaults would be "y0" and "y1"). infer_meta returns one
TensorDesc per output and execute allocates each by its index.

    pyop run SplitHalf --input x=float32[4]:1,2,3,4
    first: float32[2] = [1, 2]
    second: float32[2] = [3, 4]
"""

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="SplitHalf", outputs=("first", "second"))
def split_half(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
    if x.ndim == 0 or x.shape[0] % 2 != 0:
        raise ValueError("SplitHalf: the first dimension of x%s must be even" % list(x.shape))
    half = (x.shape[0] // 2,) + x.shape[1:]
    return TensorDesc(shape=half, dtype=x.dtype), TensorDesc(shape=half, dtype=x.dtype)


@pyop.register_op_impl(op_type="SplitHalf")
class SplitHalfImpl:
    def execute(self, x: Tensor) -> None:
        ctx = pyop.get_execute_ctx()
        half = (x.shape[0] // 2,) + tuple(x.shape[1:])
        first = ctx.malloc_output_tensor(0, half, x.dtype)
        second = ctx.malloc_output_tensor(1, half, x.dtype)
        # Works for every dtype and shape: pyop.elements sees the elements in
        # C order, so the first half of them is the first output; a slice
        # assignment copies between two views of one dtype.
        with pyop.elements(x) as xs, pyop.elements(first) as fs, \
                pyop.elements(second) as ss:
            cut = len(fs)
            fs[:] = xs[:cut]
            ss[:] = xs[cut:]
