import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="BadAttrType")
def bad_attr_type(x: TensorDesc, *, table: dict) -> TensorDesc:
    return x
