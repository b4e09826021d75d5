"""Plugins and hosts doing odd things at the bridge's edges
(tests/integration/bridge_harness.c, cases edges and probe): infer_meta
results whose shape is a list, a number or holds odd dimensions, results
missing a field, a single result where a tuple is due, dynamic outputs;
and an execute that reports what it sees of the host's tensors (ndim,
writable, repr, the buffer refusals), for tensors libpyop itself would
never pass."""
import pyop
from pyop import Tensor, TensorDesc


class Desc:
    """What the bridge reads of a result: .shape, .dtype, .format."""

    def __init__(self, shape, dtype=0, format=0):
        self.shape, self.dtype, self.format = shape, dtype, format


class NoFormat:
    def __init__(self):
        self.shape, self.dtype = (2,), 0


class Index:
    """An int only through __index__."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


SHAPES = {
    "list": lambda: Desc([2, 3]),
    "number": lambda: Desc(5),
    "str_dim": lambda: Desc((2, "a")),
    "index_dim": lambda: Desc((Index(4), 5)),
    "min_dim": lambda: Desc((-(2**63),)),
    "below_min": lambda: Desc((-(2**63) - 1,)),
    "max_dim": lambda: Desc((2**63 - 1,)),
    "above_max": lambda: Desc((1, 2**63)),
    "no_format": lambda: NoFormat(),
    "members": lambda: Desc((2,), pyop.DataType.int64, pyop.Format.NCHW),
    "float_dtype": lambda: Desc((2,), 1.5),
}


@pyop.register_op(op_type="EdgeShape")
def edge_shape(x: TensorDesc, *, form: str = "list") -> TensorDesc:
    return SHAPES[form]()


@pyop.register_op(op_type="EdgePair", outputs=("a", "b"))
def edge_pair(x: TensorDesc, *, form: str = "ok") -> tuple[TensorDesc, TensorDesc]:
    d = TensorDesc(x.shape, x.dtype)
    if form == "single":
        return d
    if form == "bad_second":
        return d, 5
    return d, d


@pyop.register_op(op_type="EdgeDyn")
def edge_dyn(x: TensorDesc, *, n: int = 2, form: str = "list") -> list[TensorDesc]:
    items = [TensorDesc((k + 1,), x.dtype) for k in range(n)]
    if form == "tuple":
        return tuple(items)
    if form == "single":
        return items[0]
    return items


@pyop.register_op(op_type="EdgeHeadTail", outputs=("head", "tail"))
def edge_head_tail(x: TensorDesc, *, n: int = 2) -> tuple[TensorDesc, list[TensorDesc]]:
    return TensorDesc((1,), x.dtype), [TensorDesc((k + 7,), x.dtype) for k in range(n)]


def _buffer(t):
    try:
        with memoryview(t) as m:
            return "%d:%s" % (m.nbytes, m.format)
    except Exception as e:  # what the bridge refused, by type and message
        return "%s: %s" % (type(e).__name__, e)


@pyop.register_op(op_type="EdgeProbe")
def edge_probe(x: TensorDesc) -> TensorDesc:
    return TensorDesc((1,), "uint8")


@pyop.register_op_impl(op_type="EdgeProbe")
class EdgeProbeImpl:
    kept = None

    def execute(self, x):
        ctx = pyop.get_execute_ctx()
        o = ctx.malloc_output_tensor(0, (256,), "uint8")
        text = "ndim=%d writable=%s out_writable=%s dtype=%s format=%s numel=%d nbytes=%d " \
               "repr=%r out=%r buffer=%s" % (
                   x.ndim, x.writable, o.writable, x.dtype, x.format, x.numel, x.nbytes,
                   x, o, _buffer(x))
        data = text.encode()[:256].ljust(256, b"\0")
        with memoryview(o) as m:
            m[:] = data
        EdgeProbeImpl.kept = x


@pyop.register_op(op_type="EdgeMany")
def edge_many(xs: list[TensorDesc], *, keep: int = -1) -> TensorDesc:
    return TensorDesc((1,), "float32")


@pyop.register_op_impl(op_type="EdgeMany")
class EdgeManyImpl:
    """Sums the first element of every tensor of its dynamic input; with
    keep >= 0, keeps a memoryview of xs[keep] past the call (the next call
    releases it)."""

    kept = []
    views = []

    def execute(self, xs, *, keep):
        EdgeManyImpl.views.clear()
        if keep >= 0:
            EdgeManyImpl.views.append(memoryview(xs[keep]))
        total = 0.0
        for t in xs:
            with memoryview(t) as m:
                total += m.cast("B").cast("f")[0]
        EdgeManyImpl.kept = list(xs)
        o = pyop.get_execute_ctx().malloc_output_tensor(0, (1,), "float32")
        with memoryview(o) as m:
            m.cast("B").cast("f")[0] = total


@pyop.register_op(op_type="EdgeKept")
def edge_kept(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="EdgeKept")
class EdgeKeptImpl:
    """Reads what EdgeProbe and EdgeMany kept from their calls: each raises."""

    def execute(self, x):
        seen = []
        for t in [EdgeProbeImpl.kept] + EdgeManyImpl.kept:
            for name in ("ndim", "writable", "shape", "dtype", "format", "nbytes"):
                try:
                    getattr(t, name)
                except RuntimeError as e:
                    seen.append(str(e) == "tensor used outside its callback")
                else:
                    seen.append(False)
            seen.append(t.valid is False)
        EdgeProbeImpl.kept, EdgeManyImpl.kept = None, []
        if not all(seen) or len(seen) < 7:
            raise AssertionError(seen)
        pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)


def _empty_output(t):
    """An empty output: shape (0,), no bytes (the host may give it no memory)."""
    if (t.shape, t.nbytes, t.ndim) != ((0,), 0, 1):
        raise AssertionError((t.shape, t.nbytes, t.ndim))


CTX_CALLS = {
    "alloc": lambda c, x: c.malloc_output_tensor(0, (2,), "float32"),
    "alloc_last": lambda c, x: c.malloc_output_tensor(0, (2,), "bool"),
    "alloc_empty": lambda c, x: _empty_output(c.malloc_output_tensor(0, (0,), "float32")),
    "format_last": lambda c, x: c.malloc_output_tensor(0, (2,), "float32", max(pyop.Format)),
    "format_past": lambda c, x: c.malloc_output_tensor(0, (2,), "float32", max(pyop.Format) + 1),
    "dtype_name": lambda c, x: c.malloc_output_tensor(0, (2,), "float33"),
    "dtype_prefix": lambda c, x: c.malloc_output_tensor(0, (2,), "float"),
    "shape_int": lambda c, x: c.malloc_output_tensor(0, 5, "float32"),
    "shape_neg": lambda c, x: c.malloc_output_tensor(0, (2, -1), "float32"),
    "overflow": lambda c, x: c.malloc_output_tensor(0, (2**62, 2**62), "float32"),
    "out_past": lambda c, x: c.malloc_output_tensor(1, (2,), "float32"),
    "out_neg": lambda c, x: c.malloc_output_tensor(-1, (2,), "float32"),
    "ref": lambda c, x: c.make_output_ref_input(0, 0),
    "ref_out_past": lambda c, x: c.make_output_ref_input(1, 0),
    "ref_out_neg": lambda c, x: c.make_output_ref_input(-1, 0),
    "ref_in_neg": lambda c, x: c.make_output_ref_input(0, -1),
    "ws": lambda c, x: c.malloc_workspace(16),
    "ws_zero": lambda c, x: c.malloc_workspace(0),
    "mws_max": lambda c, x: c.malloc_workspace(2**63 - 1),
    "mws_past": lambda c, x: c.malloc_workspace(2**63),
}

DECLARE_WS = {"ws_max": 2**64 - 1, "ws_past": 2**64, "ws_neg": -1}


@pyop.register_op(op_type="EdgeCtx")
def edge_ctx(x: TensorDesc, *, what: str = "alloc") -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="EdgeCtx")
class EdgeCtxImpl:
    """One call of the execute context (what), then the output (when the
    call did not make it)."""

    def execute(self, x, *, what):
        ctx = pyop.get_execute_ctx()
        CTX_CALLS[what](ctx, x)
        if what.startswith("ws"):
            ctx.malloc_output_tensor(0, (2,), "float32")

    def declare_launch_args(self, x, y, *, what):
        pyop.get_declare_launch_args_ctx().add_workspace(DECLARE_WS[what])


@pyop.register_op(op_type="EdgeLists")
def edge_lists(x: TensorDesc, *, li: list[int] = [1], ls: list[str] = ["a"]) -> TensorDesc:
    return x


_kept_descs = []


@pyop.register_op(op_type="EdgeEcho")
def edge_echo(x: TensorDesc, *, keep: bool = False) -> TensorDesc:
    """Returns its input's description; with keep, keeps the first one it
    got and fails once that one has changed (the bridge reuses an input's
    TensorDesc only when nobody else holds it)."""
    if keep:
        if not _kept_descs:
            _kept_descs.append((x, x.shape, x.dtype, x.format))
        k, shape, dtype, format = _kept_descs[0]
        if (k.shape, k.dtype, k.format) != (shape, dtype, format):
            raise ValueError("a kept TensorDesc changed: %r" % (k,))
    return x


@pyop.register_op(op_type="EdgeLaunch")
def edge_launch(x: TensorDesc, *, st: int = 1, value: str = "0") -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="EdgeLaunch")
class EdgeLaunchImpl:
    """One scalar launch argument of type st (its number) and value (an int,
    else a float), made directly: the bridge checks its range itself. st -1:
    an argument that is not a LaunchArg."""

    def declare_launch_args(self, x, y, *, st, value):
        try:
            v = int(value)
        except ValueError:
            v = float(value)
        arg = object() if st == -1 else pyop.launch.LaunchArg(pyop.launch.SCALAR, 0, st, v)
        pyop.get_declare_launch_args_ctx().add_launch("libk.so", "k", [arg])
