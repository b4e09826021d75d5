"""Plugins at the limits (host_e2e case "limits", issue 17 items 1, 6, 11).

PlanSym    declares one launch of `symbol` in the kernel library named by
           $E2E_NOT_KERNELS (tests/unit/not_kernels): a data object, libc's
           exit reached through it, or its one real kernel.
PlanNumber declares one launch whose argument `field` (kind, index,
           scalar_type, or a scalar type's value) is set to `value`, past
           what pyop.launch checks: what crosses into C must be range-checked.
Empty      allocates an output of `dims` (empty, with huge other dims) and
           checks what it sees: shape, numel, nbytes, memoryview strides.
Numbers    execute passes `value` where `field` (a context method argument)
           expects a number.
"""
import os

import pyop
from pyop import DataType, Tensor, TensorDesc, launch

NOT_KERNELS = os.environ.get("E2E_NOT_KERNELS", "/nonexistent/libpyop_test_not_kernels.so")


@pyop.register_op(op_type="PlanSym")
def plan_sym(x: TensorDesc, *, symbol: str) -> TensorDesc:
    return TensorDesc(shape=(1,), dtype=DataType.int32)


@pyop.register_op_impl(op_type="PlanSym")
class PlanSymImpl:
    def declare_launch_args(self, x, out, *, symbol):
        pyop.get_declare_launch_args_ctx().add_launch(
            NOT_KERNELS, symbol, [launch.output(0), launch.scalar("int32", 0)])


@pyop.register_op(op_type="PlanNumber")
def plan_number(x: TensorDesc, y: TensorDesc, *, field: str, value: str) -> TensorDesc:
    return TensorDesc(shape=(1,), dtype=DataType.int32)


@pyop.register_op_impl(op_type="PlanNumber")
class PlanNumberImpl:
    def declare_launch_args(self, x, y, out, *, field, value):
        ctx = pyop.get_declare_launch_args_ctx()
        v = int(value)
        if field == "add_workspace":
            ctx.add_workspace(v)
            return
        if field in ("kind", "index", "scalar_type"):
            arg = launch.input(0)
            setattr(arg, field, v)
        else:  # a scalar type's name: its value
            # scalar() takes its own type's kind (bool: False); the value
            # set after is what the bridge's range check sees.
            arg = launch.scalar(field, False if field == "bool" else 0)
            arg.value = v
        ctx.add_launch(NOT_KERNELS, "not_kernels_store", [arg, launch.scalar("int32", 0)])


def _check_empty(t, dims):
    """What a plugin sees of an empty output: sane, or an AssertionError."""
    assert tuple(t.shape) == tuple(dims), t.shape
    assert t.numel == 0 and t.nbytes == 0, (t.numel, t.nbytes)
    m = memoryview(t)
    assert m.shape == tuple(dims), m.shape
    assert m.nbytes == 0 and len(m.tobytes()) == 0
    assert all(s >= 0 for s in m.strides), m.strides
    assert m.strides[-1] == 4, m.strides
    assert list(m.strides) == sorted(m.strides, reverse=True), m.strides
    m.release()


@pyop.register_op(op_type="Empty")
def empty(x: TensorDesc, *, dims: list[int]) -> TensorDesc:
    return TensorDesc(shape=tuple(dims), dtype=DataType.float32)


@pyop.register_op_impl(op_type="Empty")
class EmptyImpl:
    def execute(self, x: Tensor, *, dims):
        _check_empty(pyop.get_execute_ctx().malloc_output_tensor(0, tuple(dims), x.dtype), dims)


@pyop.register_op(op_type="Numbers")
def numbers(x: TensorDesc, *, field: str, value: str) -> TensorDesc:
    return TensorDesc(shape=(1,), dtype=DataType.float32)


@pyop.register_op_impl(op_type="Numbers")
class NumbersImpl:
    def execute(self, x: Tensor, *, field, value):
        ctx = pyop.get_execute_ctx()
        v = int(value)
        if field == "malloc_output_tensor index":
            ctx.malloc_output_tensor(v, (1,), x.dtype)
        elif field == "shape dimension":
            ctx.malloc_output_tensor(0, (1, v), x.dtype)
        elif field == "format value":
            ctx.malloc_output_tensor(0, (1,), x.dtype, v)
        elif field == "data type value":
            ctx.malloc_output_tensor(0, (1,), v)
        elif field == "malloc_workspace nbytes":
            ctx.malloc_workspace(v)
        elif field == "make_output_ref_input":
            ctx.make_output_ref_input(0, v)
