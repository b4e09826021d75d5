"""An op without outputs: a loader of ABI 1.0 cannot take it."""
import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="NoOutputs")
def no_outputs(x: TensorDesc) -> None:
    return None
