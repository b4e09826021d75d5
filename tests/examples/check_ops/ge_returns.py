"""GE executes that return a value (issue 25 item 17): the fast path
(required inputs: the bridge calls the kernel itself) and the adapter path
(an optional input) say "execute must return None" the same way, and the
adapter's traceback shows the plugin's execute."""

from typing import Optional

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="GeReturnsFast")
def infer_fast(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeReturnsFast")
class GeReturnsFast:
    def execute(self, x: Tensor) -> None:
        get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        return 1


@register_op(op_type="GeReturnsAdapted")
def infer_adapted(x: TensorDesc, b: Optional[TensorDesc]) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeReturnsAdapted")
class GeReturnsAdapted:
    def execute(self, x: Tensor, b: Optional[Tensor]) -> None:
        get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        return 1
