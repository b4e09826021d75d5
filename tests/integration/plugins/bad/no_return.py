import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="NoReturn")
def no_return(x: TensorDesc):
    return x
