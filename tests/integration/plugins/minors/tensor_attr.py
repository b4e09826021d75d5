"""An op with a Tensor attribute: a loader of ABI 1.0 cannot take it."""
import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="TensorAttr")
def tensor_attr(x: TensorDesc, *, table: Tensor) -> TensorDesc:
    return x
