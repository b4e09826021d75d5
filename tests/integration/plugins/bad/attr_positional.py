import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="BadPositional")
def bad_positional(x: TensorDesc, alpha: float) -> TensorDesc:
    return x
