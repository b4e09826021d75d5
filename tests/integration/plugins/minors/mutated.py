"""An op that writes into its input: a loader of ABI 1.0 cannot take it."""
import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="Mutated", mutates_args=("x",))
def mutated(x: TensorDesc) -> TensorDesc:
    return x
