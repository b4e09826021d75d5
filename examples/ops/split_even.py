"""SplitEven: a dynamic output. x (1-D) is cut into `parts` equal pieces;
the output is a list whose length infer_meta decides (list[TensorDesc]), and
execute allocates one output tensor per piece. Also registers samples for
`pyop check` (an odd length would be refused by infer_meta, so the
generated float32[2,3] inputs do not fit this op)."""

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="SplitEven", outputs=("pieces",))
def split_even(x: TensorDesc, *, parts: int = 2) -> list[TensorDesc]:
    if len(x.shape) != 1 or parts < 1 or x.shape[0] % parts:
        raise ValueError("SplitEven: x must be 1-D with a length divisible by parts=%d"
                         % parts)
    return [TensorDesc((x.shape[0] // parts,), x.dtype) for _ in range(parts)]


@pyop.register_op_impl(op_type="SplitEven")
class SplitEvenImpl:
    def execute(self, x: Tensor, *, parts: int) -> None:
        ctx = pyop.get_execute_ctx()
        n = x.shape[0] // parts
        with pyop.elements(x) as xs:
            for k in range(parts):
                out = ctx.malloc_output_tensor(0, (n,), x.dtype)  # the next piece
                with pyop.elements(out) as piece:
                    piece[:] = xs[k * n:(k + 1) * n]


@pyop.register_samples(op_type="SplitEven")
def split_even_samples():
    return [
        {"inputs": {"x": ("float32", [6], [1, 2, 3, 4, 5, 6])}, "attrs": {"parts": 3}},
        {"inputs": {"x": ("int32", [4], [7, 8, 9, 10])}, "label": "int32, default parts"},
    ]
