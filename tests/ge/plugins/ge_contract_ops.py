"""GE ops that need libpyop's op contract: in-place inputs with ref outputs
(both forms of mutates_args), an op without outputs, dynamic outputs (last
and not last, instances named output00, output01, ...) and a Tensor
attribute."""

import ctypes
from typing import List, Tuple

from ge.custom_op import register_op, register_op_impl, get_execute_ctx
from ge.graph.types import DataType
from ge.runtime import Tensor, TensorDesc, StorageShape, StorageFormat

import _ge_shared  # a neighbour, by absolute name (also under `pyop check`)

assert _ge_shared.LOADS == 1


def fview(t):
    return (ctypes.c_float * t.shape_size).from_address(t.addr)


def raises(exc, fn, *args):
    try:
        fn(*args)
    except exc as e:
        return str(e)
    raise AssertionError("%s did not raise %s" % (fn.__name__, exc.__name__))


# In place, sequential form: output 0 is input x ("x"), x += y.
@register_op(op_type="GeAddInto", mutates_args=["x"])
def add_into(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeAddInto")
class AddInto:
    def execute(self, x: Tensor, y: Tensor):
        ctx = get_execute_ctx()
        out = ctx.make_output_ref_input(0, 0)
        assert out.addr == x.addr and ctx.get_output_tensor(0).addr == x.addr
        xs, ys = fview(x), fview(y)
        for i in range(len(xs)):
            xs[i] += ys[i]


# Explicit form: (input, output index) pairs; output 1 is "acc".
@register_op(op_type="GeAccumulate", mutates_args=[("acc", 1)])
def accumulate(acc: TensorDesc, x: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
    return TensorDesc(x.shape, x.data_type), TensorDesc(acc.shape, acc.data_type)


@register_op_impl(op_type="GeAccumulate")
class Accumulate:
    def execute(self, ctx):
        acc, x = ctx.get_input_tensor(0), ctx.get_input_tensor(1)
        msg = raises(RuntimeError, ctx.make_output_ref_input, 0, 0)  # output 0 is no ref
        assert "GeAccumulate" in msg, msg
        ctx.make_output_ref_input(1, 0)
        sq = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        a, xs, s = fview(acc), fview(x), fview(sq)
        for i in range(len(xs)):
            s[i] = xs[i] * xs[i]
            a[i] += xs[i]


# No outputs: a side effect only (counts its calls on the instance).
_calls = []


@register_op(op_type="GeNoOutputs")
def no_outputs(x: TensorDesc) -> None:
    return None


@register_op_impl(op_type="GeNoOutputs")
class NoOutputs:
    def execute(self, x: Tensor):
        ctx = get_execute_ctx()
        raises(RuntimeError, ctx.malloc_output_tensor, 0, x.shape, x.format, x.data_type)
        _calls.append(x.shape_size)


# A dynamic output last: n parts of x.
@register_op(op_type="GeSplit")
def split(x: TensorDesc, *, n: int = 2) -> List[TensorDesc]:
    size = x.shape.storage_shape.size
    return [TensorDesc([size // n], x.data_type) for _ in range(n)]


@register_op_impl(op_type="GeSplit")
class Split:
    def execute(self, x: Tensor, *, n: int):
        ctx = get_execute_ctx()
        part = x.shape_size // n
        xs = fview(x)
        for k in range(n):
            o = ctx.malloc_output_tensor(k, StorageShape([part], [part]), x.format, x.data_type)
            os_ = fview(o)
            for i in range(part):
                os_[i] = xs[k * part + i]


# A dynamic output before a required one: flattened indices 0..n-1 are the
# parts, n is the total (counts from infer_meta, as GE).
@register_op(op_type="GeSplitSum")
def split_sum(x: TensorDesc, *, n: int = 2) -> Tuple[List[TensorDesc], TensorDesc]:
    size = x.shape.storage_shape.size
    return [TensorDesc([size // n], x.data_type) for _ in range(n)], \
        TensorDesc([1], x.data_type)


@register_op_impl(op_type="GeSplitSum")
class SplitSum:
    def execute(self, x: Tensor, *, n: int):
        ctx = get_execute_ctx()
        part = x.shape_size // n
        xs = fview(x)
        # out of order: the second instance before the first
        raises(RuntimeError, ctx.malloc_output_tensor, 1, StorageShape([part], [part]),
               x.format, x.data_type)
        total = ctx.malloc_output_tensor(n, StorageShape([1], [1]), StorageFormat(),
                                         x.data_type)
        raises(RuntimeError, ctx.malloc_output_tensor, n + 1, StorageShape([1], [1]),
               StorageFormat(), x.data_type)
        t = fview(total)
        t[0] = 0
        for k in range(n):
            o = ctx.malloc_output_tensor(k, StorageShape([part], [part]), x.format, x.data_type)
            # an instance that already has memory is returned again (GE)
            assert ctx.malloc_output_tensor(k, StorageShape([part], [part]), x.format,
                                            x.data_type) is o
            os_ = fview(o)
            for i in range(part):
                os_[i] = xs[k * part + i]
                t[0] += os_[i]


# A Tensor attribute: a constant added to x.
@register_op(op_type="GeAddTable")
def add_table(x: TensorDesc, *, table: Tensor) -> TensorDesc:
    assert isinstance(table, Tensor) and table.data_type == DataType.DT_FLOAT
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeAddTable")
class AddTable:
    def execute(self, x: Tensor, *, table: Tensor):
        ctx = get_execute_ctx()
        assert ctx.get_attrs().get_tensor(0).addr == table.addr
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        xs, ts, zs = fview(x), fview(table), fview(z)
        for i in range(len(zs)):
            zs[i] = xs[i] + ts[i % len(ts)]
