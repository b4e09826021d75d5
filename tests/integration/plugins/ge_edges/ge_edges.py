"""GE's refusals at their edges, through libpyop's ge package and the real
bridge (tests/integration/test_ge_edges.py runs `pyop run` on these): checks
that can only be made inside a call are assertions there, so a refusal that
went missing fails the call."""

import ctypes
from typing import List, Optional

from ge.custom_op import register_op, register_op_impl, get_execute_ctx
from ge.graph.types import DataType
from ge.runtime import Tensor, TensorDesc


def raises(exc, fn, *args):
    try:
        fn(*args)
    except exc as e:
        return str(e)
    raise AssertionError("%s%r did not raise %s" % (getattr(fn, "__name__", fn), args,
                                                    exc.__name__))


def copy(ctx, x):
    z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
    ctypes.memmove(z.addr, x.addr, x.shape_size * 4)


@register_op(op_type="GeEdges")
def edges(x: TensorDesc, bias: Optional[TensorDesc], xs: List[TensorDesc]) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeEdges")
class Edges:
    def execute(self, x: Tensor, bias: Optional[Tensor], xs: List[Tensor]):
        ctx = get_execute_ctx()
        # -1 is no index (not Python's last item)
        assert "must be >= 0" in raises(TypeError, ctx.get_input_tensor, -1)
        assert "must be >= 0" in raises(TypeError, ctx.get_dynamic_input_tensor, 2, -1)
        # the dynamic input is not an optional one
        assert "is dynamic" in raises(RuntimeError, ctx.get_optional_input_tensor, 2)
        assert ctx.get_optional_input_tensor(1) is None
        # a bool is no DataType (True would be DT_FLOAT16)
        assert "must be a ge DataType, got bool" in raises(
            TypeError, ctx.malloc_output_tensor, 0, x.shape, x.format, True)
        copy(ctx, x)


# GE's execute returns None: a value is the plugin's mistake. With only
# required inputs the bridge calls the kernel itself (and refuses the value);
# with an optional one the ge package's adapter does.
@register_op(op_type="GeReturns")
def returns(x: TensorDesc, bias: Optional[TensorDesc]) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeReturns")
class Returns:
    def execute(self, x: Tensor, bias: Optional[Tensor]):
        copy(get_execute_ctx(), x)
        return 5


@register_op(op_type="GeReturnsDirect")
def returns_direct(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeReturnsDirect")
class ReturnsDirect:
    def execute(self, x: Tensor):
        copy(get_execute_ctx(), x)
        return 5
