"""Ops that make the usual mistakes with the execution context, run by
host_e2e's case "refusals": what the op reads in the exception libpyop's
refusal becomes (issue 19, first hour)."""

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="Pieces", outputs=("pieces",))
def pieces(x: TensorDesc, *, n: int = 3, mode: str = "repeat") -> list[TensorDesc]:
    return [TensorDesc((1,), x.dtype) for _ in range(n)]


@pyop.register_op_impl(op_type="Pieces")
class Pieces:
    """mode "repeat": malloc_output_tensor(0, ...) once per tensor (right);
    "flat": malloc_output_tensor(k, ...) for tensor k (GE's flattened index,
    wrong here)."""

    def execute(self, x: Tensor, *, n: int, mode: str) -> None:
        ctx = pyop.get_execute_ctx()
        for k in range(n):
            ctx.malloc_output_tensor(0 if mode == "repeat" else k, (1,), x.dtype)


@pyop.register_op(op_type="WrongAlias", mutates_args=("x",), outputs=("x",))
def wrong_alias(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="WrongAlias")
class WrongAlias:
    def execute(self, x: Tensor, y: Tensor) -> None:
        pyop.get_execute_ctx().make_output_ref_input(0, 1)  # input 1 is y, not x
