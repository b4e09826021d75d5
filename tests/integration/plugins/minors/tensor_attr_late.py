"""An op whose Tensor attribute comes after another attribute: a loader of
ABI 1.0 cannot take it either (every attribute is looked at, not the
first one only)."""
import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="TensorAttrLate")
def tensor_attr_late(x: TensorDesc, *, scale: float = 1.0, table: Tensor) -> TensorDesc:
    return x
