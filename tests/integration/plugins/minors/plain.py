"""One prototype and one implementation (tests/integration/bridge_harness.c,
case minors): the views' sizes as each ABI minor of the loader reads them."""
import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="Plain")
def plain(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="Plain")
class PlainImpl:
    def execute(self, x):
        pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
