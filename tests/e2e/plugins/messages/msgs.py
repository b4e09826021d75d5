"""Failures whose message must name the real cause (issue 17, item 15):
an exception whose __str__ raises; an op that recovers from a refused
workspace or output and then fails on its own."""
import pyop
from pyop import Tensor, TensorDesc


class BadStr(Exception):
    def __str__(self):
        raise RuntimeError("str is broken")


@pyop.register_op(op_type="Msg")
def msg(x: TensorDesc, *, mode: str = "badstr") -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Msg")
class MsgImpl:
    def execute(self, x: Tensor, *, mode: str) -> None:
        ctx = pyop.get_execute_ctx()
        if mode == "badstr":
            raise BadStr("payload")
        if mode in ("workspace_then_own", "workspace_chained", "workspace_uncaught"):
            try:
                ctx.malloc_workspace(64)
            except RuntimeError as e:
                if mode == "workspace_uncaught":
                    raise
                if mode == "workspace_chained":
                    raise ValueError("no workspace, so no result") from e
            raise ValueError("the op's own failure after the refusal")
        if mode == "output_then_own":
            try:
                ctx.malloc_output_tensor(0, x.shape, x.dtype)
            except RuntimeError:
                pass
            raise ValueError("the op's own failure after the refused output")
        if mode == "output_recovered":
            try:
                ctx.malloc_output_tensor(0, x.shape, x.dtype)
            except RuntimeError:
                pass
            out = ctx.malloc_output_tensor(0, x.shape, x.dtype)  # the host gives it now
            with memoryview(x) as xv, memoryview(out) as ov:
                ov[:] = xv
