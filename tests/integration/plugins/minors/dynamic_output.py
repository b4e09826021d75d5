"""An op with a dynamic (list) output: a loader of ABI 1.0 cannot take it."""
import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="DynOut")
def dyn_out(x: TensorDesc) -> list[TensorDesc]:
    return [x]
