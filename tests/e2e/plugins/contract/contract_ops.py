"""Ops of the op contract (issue 10), run end to end by test_contract.py:
in-place ops, ops without outputs, dynamic outputs, Tensor attributes, and
ops that break their contract on purpose."""

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="AddInto", mutates_args=("x",), outputs=("x",))
def add_into(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="AddInto")
class AddInto:
    def execute(self, x: Tensor, y: Tensor) -> None:
        xv, yv = memoryview(x), memoryview(y)
        for i in range(len(xv)):
            xv[i] += yv[i]
        del xv, yv
        pyop.get_execute_ctx().make_output_ref_input(0, 0)


@pyop.register_op(op_type="Zero", mutates_args=("x",))
def zero(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="Zero")
class Zero:
    def execute(self, x: Tensor) -> None:
        with memoryview(x) as v:
            v.cast("B")[:] = bytes(x.nbytes)


@pyop.register_op(op_type="Split")
def split(x: TensorDesc, *, n: int = 2) -> list[TensorDesc]:
    return [TensorDesc((x.shape[0] // n,), x.dtype) for _ in range(n)]


@pyop.register_op_impl(op_type="Split")
class Split:
    def execute(self, x: Tensor, *, n: int) -> None:
        ctx = pyop.get_execute_ctx()
        part = x.shape[0] // n
        with memoryview(x) as xv:
            for k in range(n):
                out = ctx.malloc_output_tensor(0, (part,), x.dtype)
                with memoryview(out) as ov:
                    ov[:] = xv[k * part:(k + 1) * part]


@pyop.register_op(op_type="HeadTail", outputs=("head", "tail"))
def head_tail(x: TensorDesc) -> tuple[TensorDesc, list[TensorDesc]]:
    n = x.shape[0]
    return TensorDesc((1,), x.dtype), [TensorDesc((1,), x.dtype) for _ in range(n - 1)]


@pyop.register_op_impl(op_type="HeadTail")
class HeadTail:
    def execute(self, x: Tensor) -> None:
        ctx = pyop.get_execute_ctx()
        with memoryview(x) as xv:
            for k in range(x.shape[0]):
                out = ctx.malloc_output_tensor(0 if k == 0 else 1, (1,), x.dtype)
                with memoryview(out) as ov:
                    ov[0] = xv[k]


@pyop.register_op(op_type="Scale")
def scale(x: TensorDesc, *, w: Tensor) -> TensorDesc:
    if w.shape != x.shape:
        raise ValueError("w must have x's shape")
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Scale")
class Scale:
    def execute(self, x: Tensor, *, w: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as xv, memoryview(w) as wv, memoryview(out) as ov:
            for i in range(len(xv)):
                ov[i] = xv[i] * wv[i]
        try:
            memoryview(w).cast("B")[0] = 0
        except (TypeError, BufferError):
            pass
        else:
            raise AssertionError("a Tensor attribute must be read-only")


@pyop.register_op(op_type="Lazy")
def lazy(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Lazy")
class Lazy:
    def execute(self, x: Tensor) -> None:
        pass  # produces nothing: the contract is broken


@pyop.register_op(op_type="Wrong")
def wrong(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Wrong")
class Wrong:
    def execute(self, x: Tensor) -> None:
        pyop.get_execute_ctx().malloc_output_tensor(0, (6,), "float16")


@pyop.register_op(op_type="Sneaky")
def sneaky(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Sneaky")
class Sneaky:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(out) as ov:
            ov[0] = 1.0
        with memoryview(x) as xv:
            xv[0] = 5.0  # x is read-only: raises


# Views of Tensor attributes kept past the call and past the instance: the
# bridge's copy of the bytes lives as long as a view of it.
_kept_w = []


@pyop.register_op(op_type="KeepW")
def keep_w(x: TensorDesc, *, w: Tensor) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="KeepW")
class KeepW:
    def execute(self, x: Tensor, *, w: Tensor) -> None:
        _kept_w.append(memoryview(w))
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(out) as ov:
            for i in range(len(ov)):
                ov[i] = sum(v[i] for v in _kept_w)
