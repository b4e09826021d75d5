"""An ordinary op written the way authors do, used to check that nothing of
the bridge outlives shutdown: typing subscriptions of pyop.Tensor (which
typing memoizes process-wide), pyop names imported as module globals, enum
attributes, an exception handled inside execute and one that escapes it.
Nothing here keeps a Tensor or a context on purpose."""
import typing
from typing import List, Optional, Union

import pyop
from pyop import DataType, Tensor, TensorDesc, get_execute_ctx

# Annotations only evaluated when asked (typing.get_type_hints): typing then
# caches ForwardRef objects whose value is the Tensor type.
def _hinted(x: "Optional[Tensor]", ys: "List[Tensor]") -> "Union[Tensor, None]":
    return x


@pyop.register_op(op_type="Typed")
def typed(x: TensorDesc, bias: Optional[TensorDesc], rest: List[TensorDesc], *,
          mode: str = "ok", out_dtype: DataType = DataType.float32) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=out_dtype)


@pyop.register_op_impl(op_type="Typed")
class TypedImpl:
    def execute(self, x: Tensor, bias: Optional[Tensor], rest: typing.List[Tensor], *,
                mode: str, out_dtype: DataType) -> None:
        hints = typing.get_type_hints(_hinted)
        assert hints["x"] == Optional[Tensor], hints
        ctx = get_execute_ctx()
        out = ctx.malloc_output_tensor(0, x.shape, out_dtype)
        try:
            raise LookupError("handled inside execute", x, out, ctx)
        except LookupError:
            pass
        n = min(out.nbytes, x.nbytes)  # out_dtype may be narrower than x's
        if n:  # memoryview cannot cast a view with a 0 in its shape
            with memoryview(out) as dst, memoryview(x) as src:
                dst.cast("B")[:n] = src.cast("B")[:n]
        for t in rest:
            assert isinstance(t, Tensor) and t.valid
        if mode == "raise":
            raise ValueError("typed: failing on purpose with %r" % (x,))
