"""Views held only by a garbage cycle when execute returns (not an escape),
and real escapes (a view on a module global, a cycle kept by a global) that
DropKept releases."""
import sys

import pyop
from pyop import Tensor, TensorDesc

KEPT = []


@pyop.register_op(op_type="CycleView")
def cycle_view(x: TensorDesc, *, mode: str = "closure") -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="CycleView")
class CycleViewImpl:
    def execute(self, x: Tensor, *, mode: str) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        xv = memoryview(x).cast("B").cast("f")
        ov = memoryview(out).cast("B").cast("f")

        def fill(i):  # recursive: its cell refers to itself, a cycle holding xv and ov
            if i < len(ov):
                ov[i] = 2 * xv[i]
                fill(i + 1)

        fill(0)
        if mode == "exc_info":
            del fill  # no closure cycle: the frame's own
            try:
                raise ValueError("kept in a local")
            except ValueError:
                err = sys.exc_info()  # frame -> err -> traceback -> frame
            assert err[0] is ValueError
        elif mode == "global":
            del fill
            KEPT.append(xv)  # a real escape
        elif mode == "global_cycle":
            KEPT.append(fill)  # a real escape, until DropKept: then only a cycle


@pyop.register_op(op_type="DropKept")
def drop_kept(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="DropKept")
class DropKeptImpl:
    def execute(self, x: Tensor) -> None:
        KEPT.clear()
