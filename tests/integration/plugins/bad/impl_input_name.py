import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="BadInput")
def bad_input(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="BadInput")
class BadInputImpl:
    def execute(self, x, z):
        pass
