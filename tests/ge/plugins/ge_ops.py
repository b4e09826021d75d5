"""GE-style ops written to GE's Python API (docs/ge-plugins.md),
run by libpyop's ge package: both execute forms, every attribute type,
optional and dynamic inputs, several outputs, output naming, workspaces,
the context's getters and its lifetime. Checks that can only be made inside
a call are assertions there: a failed one fails the call (and the test)."""

import ctypes
import os
import sys
from typing import List, Optional, Tuple

from ge.custom_op import (register_op, register_op_impl, get_execute_ctx,
                          EagerOpExecutionContext, EagerExecuteOp)
from ge.graph.types import DataType, Format
from ge.runtime import (Tensor, TensorDesc, StorageShape, StorageFormat, ExpandDimsType,
                        TensorPlacement)

_CT = {DataType.DT_FLOAT: ctypes.c_float, DataType.DT_INT32: ctypes.c_int32,
       DataType.DT_INT64: ctypes.c_int64, DataType.DT_DOUBLE: ctypes.c_double}


def view(t):
    """The elements of t as a ctypes array over its host memory."""
    return (_CT[t.data_type] * t.shape_size).from_address(t.addr)


def raises(exc, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        return str(e)
    raise AssertionError("%s did not raise %s" % (getattr(fn, "__name__", fn), exc.__name__))


# ---------------------------------------------------------- schema-bound

@register_op(op_type="GeScaledAdd")
def scaled_add(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    if x.data_type != DataType.DT_FLOAT:  # a refusal (pyop check: TypeError or ValueError)
        raise TypeError("GeScaledAdd: float32 only, got %s" % x.data_type)
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeScaledAdd")
class ScaledAdd(EagerExecuteOp):
    def execute(self, x: Tensor, y: Tensor, *, alpha: float):
        ctx = get_execute_ctx()
        assert isinstance(ctx, EagerOpExecutionContext)
        assert x.placement == TensorPlacement.ON_HOST and not isinstance(x.placement, int)
        # float attributes arrive float32-rounded, as in GE
        assert alpha == ctypes.c_float(alpha).value
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        xs, ys, zs = view(x), view(y), view(z)
        for i in range(len(zs)):
            zs[i] = xs[i] + alpha * ys[i]


# ----------------------------------------------------------------- legacy

@register_op(op_type="GeLegacyNeg")
def legacy_neg(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeLegacyNeg")
class LegacyNeg:
    def execute(self, ctx):
        # legacy form: the context is the argument; get_execute_ctx() raises
        raises(RuntimeError, get_execute_ctx)
        x = ctx.get_input_tensor(0)
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        xs, zs = view(x), view(z)
        for i in range(len(zs)):
            zs[i] = -xs[i]


# ------------------------------------------------------ every attr type

@register_op(op_type="GeAllAttrs")
def all_attrs(x: TensorDesc, *, i: int = 7, f: float = 0.1, b: bool = True,
              s: str = "abc", dt: DataType = DataType.DT_FLOAT16,
              li: List[int] = [1, 2, 3], lf: List[float] = [0.5, 0.25],
              lb: List[bool] = [True, False, True], ls: List[str] = ["p", "qq"],
              ldt: List[DataType] = [DataType.DT_INT8, DataType.DT_BOOL],
              lli: List[List[int]] = [[1, 2], [3]]) -> TensorDesc:
    return TensorDesc([12], DataType.DT_DOUBLE)


_GETTERS = ["get_int", "get_float", "get_bool", "get_str", "get_data_type", "get_list_int",
            "get_list_float", "get_list_bool", "get_list_str", "get_list_data_type",
            "get_list_list_int"]


@register_op_impl(op_type="GeAllAttrs")
class AllAttrs:
    def execute(self, x: Tensor, *, i: int, f: float, b: bool, s: str, dt: DataType,
                li: List[int], lf: List[float], lb: List[bool], ls: List[str],
                ldt: List[DataType], lli: List[List[int]]):
        ctx = get_execute_ctx()
        attrs = ctx.get_attrs()
        values = [i, f, b, s, dt, li, lf, lb, ls, ldt, lli]
        assert attrs.get_attr_num() == 11
        for idx, (getter, v) in enumerate(zip(_GETTERS, values)):
            assert getattr(attrs, getter)(idx) == v, (getter, v)
        # the getter must match the attribute's type; a bad index fails
        raises(TypeError, attrs.get_int, 1)
        raises(TypeError, attrs.get_float, 0)
        raises(RuntimeError, attrs.get_int, 11)
        assert type(i) is int and type(f) is float and type(b) is bool and type(s) is str
        assert type(dt) is DataType and all(type(d) is DataType for d in ldt)
        assert f == ctypes.c_float(f).value and all(v == ctypes.c_float(v).value for v in lf)
        out = ctx.malloc_output_tensor(0, StorageShape([12], [12]), StorageFormat(),
                                       DataType.DT_DOUBLE)
        o = view(out)
        o[0] = i
        o[1] = f
        o[2] = b
        o[3] = len(s) * 100 + ord(s[0])
        o[4] = int(dt)
        o[5] = sum(li) * 10 + len(li)
        o[6] = sum(lf)
        o[7] = sum(1 << k for k, v in enumerate(lb) if v)
        o[8] = sum(len(v) for v in ls)
        o[9] = sum(int(d) for d in ldt)
        o[10] = sum(sum(r) for r in lli) * 10 + len(lli)
        o[11] = ord(s[-1])


# A DataType attribute whose default has no host form (DT_UNDEFINED)
# travels through pyop as GE's number.
@register_op(op_type="GeDtypeSentinel")
def dtype_sentinel(x: TensorDesc, *, dt: DataType = DataType.DT_UNDEFINED) -> TensorDesc:
    return TensorDesc([1], DataType.DT_INT32)


@register_op_impl(op_type="GeDtypeSentinel")
class DtypeSentinel:
    def execute(self, x: Tensor, *, dt: DataType):
        assert type(dt) is DataType
        out = get_execute_ctx().malloc_output_tensor(0, StorageShape([1], [1]),
                                                     StorageFormat(), DataType.DT_INT32)
        view(out)[0] = int(dt)


# ------------------------------------- optional, dynamic, several outputs

@register_op(op_type="GeIoKinds")
def io_kinds(x: TensorDesc, bias: Optional[TensorDesc], xs: List[TensorDesc]
             ) -> Tuple[TensorDesc, TensorDesc]:
    assert bias is None or isinstance(bias, TensorDesc)
    assert isinstance(xs, list)
    return TensorDesc(x.shape, x.data_type), TensorDesc([4], DataType.DT_INT32)


@register_op_impl(op_type="GeIoKinds")
class IoKinds:
    def execute(self, x: Tensor, bias: Optional[Tensor], xs: List[Tensor]):
        ctx = get_execute_ctx()
        n_dyn = ctx.get_dynamic_input_num(2)
        assert n_dyn == len(xs)
        assert ctx.get_dynamic_input_num(0) == 1
        assert ctx.get_dynamic_input_num(1) == (0 if bias is None else 1)
        assert ctx.get_input_num() == 1 + (bias is not None) + n_dyn
        assert ctx.get_required_input_tensor(0).addr == x.addr
        opt = ctx.get_optional_input_tensor(1)
        assert (opt is None) == (bias is None)
        flat = 1 + (bias is not None)
        for k in range(n_dyn):
            assert ctx.get_dynamic_input_tensor(2, k).addr == xs[k].addr
            assert ctx.get_input_tensor(flat + k).addr == xs[k].addr
        raises(RuntimeError, ctx.get_dynamic_input_tensor, 2, n_dyn)
        raises(RuntimeError, ctx.get_input_tensor, flat + n_dyn)
        raises(RuntimeError, ctx.get_dynamic_input_num, 3)
        raises(RuntimeError, ctx.get_output_tensor, 0)
        # output 0 is not declared as a ref of input 0 (mutates_args)
        raises(RuntimeError, ctx.make_output_ref_input, 0, 0)
        raises(RuntimeError, ctx.make_output_ref_input, 0, 9)
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        assert ctx.get_output_tensor(0).addr == z.addr
        zs, xv = view(z), view(x)
        for i in range(len(zs)):
            acc = xv[i]
            if bias is not None:
                acc += view(bias)[i]
            for t in xs:
                acc += view(t)[i]
            zs[i] = acc
        c = ctx.malloc_output_tensor(1, StorageShape([4], [4]), StorageFormat(),
                                     DataType.DT_INT32)
        cv = view(c)
        cv[0] = n_dyn
        cv[1] = bias is not None
        cv[2] = ctx.get_input_num()
        cv[3] = len(zs)
        raises(RuntimeError, ctx.malloc_output_tensor, 2, x.shape, x.format, x.data_type)


# Output naming: an input called output0 pushes the first output to output0_1.
@register_op(op_type="GeOutputNames")
def output_names(output0: TensorDesc, other: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
    return TensorDesc(output0.shape, output0.data_type), TensorDesc(other.shape,
                                                                    other.data_type)


@register_op_impl(op_type="GeOutputNames")
class OutputNames:
    def execute(self, ctx):
        for k in range(2):
            x = ctx.get_input_tensor(k)
            out = ctx.malloc_output_tensor(k, x.shape, x.format, x.data_type)
            ctypes.memmove(out.addr, x.addr, x.size)


# ------------------------------------------ context, views and lifetime

_kept = []


@register_op(op_type="GeCtxProbe")
def ctx_probe(x: TensorDesc) -> TensorDesc:
    return TensorDesc(StorageShape(x.shape.origin_shape, [6]), DataType.DT_INT64)


@register_op_impl(op_type="GeCtxProbe")
class CtxProbe:
    calls = 0

    def __init__(self):
        self.instance_calls = 0

    def execute(self, x: Tensor):
        ctx = get_execute_ctx()
        self.instance_calls += 1
        results = [0] * 6
        # objects kept by the previous call are dead now
        if _kept:
            results[0] = sum(1 for o in _kept if _expired(o))
            _kept.clear()
        ws = ctx.malloc_workspace(64)
        assert isinstance(ws, int) and ws != 0
        ctypes.memset(ws, 0x5A, 64)  # real host memory
        assert ctx.get_stream() == 0
        raises(RuntimeError, ctx.malloc_output_tensor, 0, [6], StorageFormat(),
               DataType.DT_INT64)
        raises(RuntimeError, ctx.malloc_output_tensor, 0, StorageShape([6], [6]), Format.FORMAT_ND,
               DataType.DT_INT64)
        msg = raises(TypeError, ctx.malloc_output_tensor, 0, StorageShape([6], [6]),
                     StorageFormat(), DataType.DT_COMPLEX64)
        assert "DT_COMPLEX64" in msg, msg
        shp = x.storage_shape
        assert shp.dims == list(x.shape.storage_shape.dims) and shp.dim_num == len(shp.dims)
        assert x.origin_format == x.storage_format == Format.FORMAT_ND
        assert x.format.get_storage_format() == Format.FORMAT_ND
        assert x.size == x.shape_size * 4
        out = ctx.malloc_output_tensor(0, StorageShape([2, 3], [6]),
                                       StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_ND,
                                                     ExpandDimsType("1100")),
                                       DataType.DT_INT64)
        assert out.origin_shape.dims == [2, 3] and out.storage_shape.dims == [6]
        assert out.origin_format == Format.FORMAT_NCHW and out.storage_format == Format.FORMAT_ND
        assert out.expand_dims_type.is_expand_index(0) and not out.expand_dims_type.is_expand_index(2)
        assert out.size == 48
        results[1] = self.instance_calls
        results[2] = x.shape_size
        results[3] = int(out.data_type)
        results[4] = ctypes.c_uint8.from_address(ws + 63).value
        results[5] = 1
        _kept.extend([x, ctx, out, x.shape, x.storage_shape, x.format, ctx.get_attrs()])
        o = view(out)
        for k, v in enumerate(results):
            o[k] = v


# GeDirectProbe: the bridge calls a schema-bound kernel directly (no GE
# Python frame between the host and the kernel, issue 21 item 6); the
# context hands back the very input views; what a call changes in a view's
# description is gone in the next call, which may reuse the view object.
@register_op(op_type="GeDirectProbe")
def direct_probe(x: TensorDesc) -> TensorDesc:
    return TensorDesc([4], DataType.DT_INT64)


def _ge_frames():
    """Python frames of the ge package (or code it generated) between the
    caller of this function's caller and the first frame that is not."""
    ge_dir = os.path.dirname(sys.modules["ge"].__file__)
    n, f = 0, sys._getframe(1).f_back
    while f is not None and (f.f_code.co_filename.startswith("<ge ") or
                             f.f_code.co_filename.startswith(ge_dir + os.sep)):
        n += 1
        f = f.f_back
    return n


@register_op_impl(op_type="GeDirectProbe")
class DirectProbe:
    def execute(self, x: Tensor) -> None:
        frames = _ge_frames()
        ctx = get_execute_ctx()
        same = ctx.get_input_tensor(0) is x and ctx._get_required_input_tensor(0) is x
        dims = x.storage_shape.dims
        nd = x.storage_format == Format.FORMAT_ND and x.format.get_origin_format() == \
            Format.FORMAT_ND
        x.storage_shape.append_dim(99)  # the description only; the next call starts afresh
        x.format.set_storage_format(Format.FORMAT_NCHW)
        assert x.storage_shape.dims == dims + [99] and x.storage_format == Format.FORMAT_NCHW
        out = ctx.malloc_output_tensor(0, StorageShape([4], [4]), StorageFormat(),
                                       DataType.DT_INT64)
        o = view(out)
        o[0], o[1], o[2], o[3] = frames, int(same), 1000 * len(dims) + sum(dims), int(nd)


def _expired(o):
    try:
        if isinstance(o, EagerOpExecutionContext):
            o.get_input_num()
        elif isinstance(o, Tensor):
            o.addr
        elif isinstance(o, StorageShape):
            o.storage_shape
        elif isinstance(o, StorageFormat):
            o.get_origin_format()
        elif hasattr(o, "get_attr_num"):
            o.get_attr_num()
        else:
            o.dims
    except RuntimeError:
        return True
    return False
