"""Raises in the callback named by the `where` attribute."""
import sys

import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="Raise")
def raise_infer(x: TensorDesc, *, where: str = "none") -> TensorDesc:
    if where == "infer":
        raise ValueError("boom-infer")
    if where == "keyboard":
        raise KeyboardInterrupt("boom-keyboard")
    if where == "infer_type":
        return 42
    if where == "ctx_in_infer":
        try:
            pyop.get_execute_ctx()
        except RuntimeError as e:
            assert "no execute callback" in str(e), e
        else:
            raise AssertionError("get_execute_ctx() worked inside infer_meta")
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Raise")
class RaiseImpl:
    def execute(self, x, *, where):
        ctx = pyop.get_execute_ctx()
        if where == "execute":
            raise ValueError("boom-execute")
        if where == "exit":
            sys.exit(5)
        if where == "badindex":
            ctx.malloc_output_tensor(3, (1,), "float32")
        if where == "hostfail":
            ctx.malloc_output_tensor(0, (1 << 40,), "float32")
        ctx.malloc_output_tensor(0, x.shape, x.dtype)

    def compile(self, x, y, *, where):
        if where == "compile":
            raise ValueError("boom-compile")
        pyop.get_compile_ctx().set_artifact(b"ok")

    def declare_launch_args(self, x, y, *, where):
        if where == "declare":
            raise ValueError("boom-declare")


@pyop.register_op(op_type="RaiseInit")
def raise_init(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="RaiseInit")
class RaiseInitImpl:
    def __init__(self):
        raise RuntimeError("boom-init")

    def execute(self, x):
        pass
