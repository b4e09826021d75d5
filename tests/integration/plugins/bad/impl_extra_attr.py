import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="BadExtraAttr")
def bad_extra(x: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="BadExtraAttr")
class BadExtraImpl:
    def execute(self, x, *, alpha, beta):
        pass
