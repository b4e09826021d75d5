"""Clip: y = min(max(x, min), max) on float32, with two float attributes.

Both attributes are optional (infinite defaults), so Clip with no attributes
copies x. A host may pass ints for float attributes: libpyop converts them.

    pyop run Clip --input x=float32[4]:-2,0.5,3,9 --attr min=0 --attr max=6
    y: float32[4] = [0, 0.5, 3, 6]
"""

import math

import pyop
from pyop import DataType, Tensor, TensorDesc


@pyop.register_op(op_type="Clip")
def clip(x: TensorDesc, *, min: float = -math.inf, max: float = math.inf) -> TensorDesc:
    if x.dtype != DataType.float32:
        raise TypeError("Clip supports float32 only, got %s" % x.dtype)
    if min > max:
        raise ValueError("Clip: min (%g) is greater than max (%g)" % (min, max))
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Clip")
class ClipImpl:
    def execute(self, x: Tensor, *, min: float, max: float) -> None:
        lo, hi = min, max  # the attribute names shadow the builtins here
        y = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with pyop.elements(x) as xf, pyop.elements(y) as yf:
            for i in range(len(xf)):
                v = xf[i]
                yf[i] = lo if v < lo else hi if v > hi else v
