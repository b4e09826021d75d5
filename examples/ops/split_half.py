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
        if x.nbytes == 0:
            return  # nothing to copy (and memoryview cannot cast an empty view)
        # Works for every dtype: copy raw bytes. A flat request of the buffer
        # ("B" cast) sees the bytes in C order; the first half of them is the
        # first output.
        with memoryview(x) as xm, xm.cast("B") as xb, \
                memoryview(first) as fm, fm.cast("B") as fb, \
                memoryview(second) as sm, sm.cast("B") as sb:
            cut = len(fb)
            fb[:] = xb[:cut]
            sb[:] = xb[cut:]
