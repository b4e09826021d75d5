"""Ops for the state carried from one call, input or output to the next
(tests/integration/bridge_harness.c, case state).

What they see goes to builtins._pyop_state (the harness reads it)."""
import builtins
import weakref

import pyop
from pyop import TensorDesc, _native, launch

R = builtins._pyop_state = {"keep": (), "views": [], "seen": [], "tensors": [], "bound": []}


class Marker:
    """What a package keeps in ctx._x for one call."""


@pyop.register_op(op_type="StKeep")
def st_keep(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="StKeep")
class StKeepImpl:
    """Keeps a memoryview of each input R["keep"] names ("x", "y") in
    R["views"] past the call (the harness releases them), the Tensor
    objects themselves in R["tensors"] when R["keep_tensors"], and its
    context (with a Marker in its _x) in R["ctx"] when R["keep_ctx"]."""

    def execute(self, x, y):
        R["seen"].append((tuple(memoryview(x).tolist()), tuple(memoryview(y).tolist())))
        R["view_call"] = (_native.view_call(0), _native.depth())
        for k in R["keep"]:
            R["views"].append((k, memoryview(x if k == "x" else y)))
        if R.get("keep_tensors"):
            R["tensors"].append((x, y))
        if R.get("keep_ctx"):
            ctx = pyop.get_execute_ctx()
            ctx._x = Marker()
            R["ctx"] = (ctx, weakref.ref(ctx._x))


@pyop.register_op(op_type="StMix")
def st_mix(x: TensorDesc, ys: list[TensorDesc]) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="StMix")
class StMixImpl:
    """Keeps a memoryview of ys[k] for each k in R["keep"] past the call;
    records what ctx._inputs holds."""

    def execute(self, x, ys):
        got = pyop.get_execute_ctx()._inputs
        R["ctx_inputs"] = (len(got), got[0] is x, got[1] is ys)
        R["mix_writable"] = (x.writable, [y.writable for y in ys])
        for k in R["keep"]:
            R["views"].append((k, memoryview(ys[k])))


@pyop.register_op(op_type="StFresh")
def st_fresh(x: TensorDesc) -> TensorDesc:
    """A result in a new shape tuple of rank 1."""
    return TensorDesc((len(x.shape) + 1,), x.dtype)


@pyop.register_op(op_type="StFlags", mutates_args=("x",), outputs=("x", "z"))
def st_flags(x: TensorDesc, y: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
    """x (input 0 of 2) mutated and output 0 of 2: the entries after the
    first are the defaults."""
    return TensorDesc(x.shape, x.dtype), TensorDesc(y.shape, y.dtype)


@pyop.register_op(op_type="StLists")
def st_lists(x: TensorDesc, *, n: int = 1, a: list[int] = [1], s: str = "s",
             b: list[float] = [0.5]) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="StLists")
class StListsImpl:
    """Records the type and value of each attribute, then changes the lists
    (each call must get its own)."""

    def execute(self, x, *, n, a, s, b):
        R["seen"].append((type(n).__name__, n, type(a).__name__, list(a), s,
                          type(b).__name__, list(b)))
        got = pyop.get_execute_ctx()._attrs
        R["ctx_attrs"] = (got["a"] is a, got["b"] is b, got["n"], got["s"])
        a.append(99)
        b.append(9.5)


class Helper:
    """An object whose bound method an instance of StBoundImpl takes as its
    execute."""

    def __init__(self, name):
        self.name = name

    def run(self, x, y):
        R["bound"].append(type(self).__name__ + ":" + self.name)


@pyop.register_op(op_type="StBound")
def st_bound(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="StBound")
class StBoundImpl:
    """Its instance's execute is another object's bound method: that
    object is its self."""

    def __init__(self):
        self.execute = Helper("helper").run

    def execute(self, x, y):
        R["bound"].append("class execute")


@pyop.register_op(op_type="StLaunch")
def st_launch(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="StLaunch")
class StLaunchImpl:
    """Declares input 0, output 0 and a uint8 scalar of value R["value"]
    (made directly: 300 is out of the type's range)."""

    def declare_launch_args(self, x, out):
        args = [launch.input(0), launch.output(0),
                launch.LaunchArg(launch.SCALAR, 0, launch.SCALAR_TYPES["uint8"], R["value"])]
        pyop.get_declare_launch_args_ctx().add_launch("/lib/libk.so", "k", args)


@pyop.register_op(op_type="StRef", mutates_args=("x",), outputs=("x",))
def st_ref(a: TensorDesc, x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="StRef")
class StRefImpl:
    """Output 0 is input 1's buffer; keeps a memoryview of it past the call
    when R["keep_ref"]."""

    def execute(self, a, x):
        t = pyop.get_execute_ctx().make_output_ref_input(0, 1)
        R["ref"] = tuple(memoryview(t).tolist())
        if R.get("keep_ref"):
            R["views"].append(("ref", memoryview(t)))


class View(_native.ViewBase):
    """A package's view class (as ge.runtime.Tensor is)."""


@pyop.register_op(op_type="StView")
def st_view(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="StView")
class StViewImpl:
    """A kernel on views: what view_call finds for it at depths 0 and 1."""

    __pyop_input_view__ = View

    def execute(self, x):
        c = _native.view_call(0)
        R["view_call"] = (c is not None and c is pyop.get_execute_ctx(), _native.view_call(1),
                          _native.depth())


@pyop.register_op(op_type="StWs")
def st_ws(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="StWs")
class StWsImpl:
    """Takes two workspaces (8 and 4 bytes); keeps a memoryview of
    workspace k past the call for each k in R["keep_ws"]."""

    def execute(self, x):
        ctx = pyop.get_execute_ctx()
        ws = [ctx.malloc_workspace(8), ctx.malloc_workspace(4)]
        R["ws"] = [w.nbytes for w in ws]
        for k in R.get("keep_ws", ()):
            R["views"].append(("ws", memoryview(ws[k])))


@pyop.register_op(op_type="StHost")
def st_host(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="StHost")
class StHostImpl:
    """Asks for output 0 twice: catches the host's first refusal, lets the
    second through."""

    def execute(self, x):
        ctx = pyop.get_execute_ctx()
        try:
            ctx.malloc_output_tensor(0, (2,), "float32")
        except RuntimeError:
            R["caught"] = R.get("caught", 0) + 1
        ctx.malloc_output_tensor(0, (2,), "float32")


@pyop.register_op(op_type="StTwoOut", outputs=("a", "b"))
def st_two_out(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
    return TensorDesc(x.shape, x.dtype), TensorDesc((1,), x.dtype)


@pyop.register_op_impl(op_type="StTwoOut")
class StTwoOutImpl:
    """Records the output descriptions compile gets."""

    def compile(self, x, a, b):
        R["compile_descs"] = (x.shape, a.shape, b.shape, b.dtype.name)
        pyop.get_compile_ctx().set_artifact(b"st")
