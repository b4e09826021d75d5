"""Ops for the configuration pass (tests/integration/bridge_harness.c, case
configs): calls of one instance where a later call differs from the first
(an optional input absent after it was given), an op of many arguments
(more than the bridge's stack room and its first frame's tensor room),
views kept of several inputs and released one by one.

What they see goes to builtins._pyop_configs (the harness reads and
deletes it)."""
import builtins
from typing import Optional

import pyop
from pyop import TensorDesc, launch

R = builtins._pyop_configs = {"opt": [], "wide": [], "views": []}


@pyop.register_op(op_type="CfOpt")
def cf_opt(x: TensorDesc, y: Optional[TensorDesc]) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="CfOpt")
class CfOptImpl:
    """Records whether y came as None, and y's first element when given."""

    def execute(self, x, y):
        if y is None:
            R["opt"].append(None)
        else:
            with memoryview(y) as m:
                R["opt"].append(m[0])


@pyop.register_op(op_type="CfWide")
def cf_wide(x0: TensorDesc, x1: TensorDesc, x2: TensorDesc, x3: TensorDesc, x4: TensorDesc,
            x5: TensorDesc, x6: TensorDesc, x7: TensorDesc, x8: TensorDesc, x9: TensorDesc, *,
            a0: int = 0, a1: int = 0, a2: int = 0, a3: int = 0, a4: int = 0, a5: int = 0,
            a6: int = 0, a7: int = 0, a8: int = 0, a9: int = 0, a10: int = 0, a11: int = 0,
            a12: int = 0, a13: int = 0, a14: int = 0, a15: int = 0, a16: int = 0,
            a17: int = 0, a18: int = 0, a19: int = 0, a20: int = 0, a21: int = 0,
            a22: int = 0) -> TensorDesc:
    return x9


@pyop.register_op_impl(op_type="CfWide")
class CfWideImpl:
    """Ten inputs and 23 attributes: 33 arguments, one more than the
    bridge's stack room (PB_STACK_ARGS); ten tensors, two more than a
    frame's first room. Records each input's first element and the
    attributes in order."""

    def execute(self, x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, **attrs):
        firsts = []
        for x in (x0, x1, x2, x3, x4, x5, x6, x7, x8, x9):
            with memoryview(x) as m:
                firsts.append(m[0])
        R["wide"].append((firsts, [attrs["a%d" % i] for i in range(23)]))


@pyop.register_op(op_type="CfKeep")
def cf_keep(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="CfKeep")
class CfKeepImpl:
    """Keeps a memoryview of each input when R["keep"] is set; with
    R["keep_tensors"], the Tensors themselves (the inputs, then the output
    it makes last)."""

    def execute(self, x, y):
        if R.get("keep"):
            R["views"] += [memoryview(x), memoryview(y)]
        if R.get("keep_tensors"):
            out = pyop.get_execute_ctx().malloc_output_tensor(0, (2,), "float32")
            R["tensors"] = [x, y, out]


def _format_none(c, x):
    """format=None given: the default (ND), as when it is left out."""
    t = c.malloc_output_tensor(0, (2,), "float32", None)
    return (t.format, t.shape)


def _format_nhwc(c, x):
    """A format asked for: the output has it (the host is given it too)."""
    t = c.malloc_output_tensor(0, (2,), "float32", pyop.Format.NHWC)
    return t.format


def _lone_surrogate(c, x):
    """A message with a lone surrogate surrogateescape cannot encode."""
    raise ValueError("bad \ud800 text")


def _ws_zero(c, x):
    """An empty workspace: the host may give it no memory."""
    t = c.malloc_workspace(0)
    return (t.nbytes, t.shape, t.data_ptr)


def _out_past(c, x):
    """An output index past the last of two: the message's hint."""
    try:
        c.malloc_output_tensor(2, (2,), "float32")
    except IndexError as e:
        return str(e)
    return None


class _Interrupt(KeyboardInterrupt):
    """A KeyboardInterrupt of the plugin's own: an interrupt all the same."""


def _interrupt_sub(c, x):
    raise _Interrupt("interrupted by a subclass")


def _dims_max(c, x):
    """An output of the most dimensions a tensor has (8)."""
    return c.malloc_output_tensor(0, (1,) * 8, "float32").shape


def _shape_iter(c, x):
    """A shape given as an iterator (no sequence)."""
    return c.malloc_output_tensor(0, (d for d in (2, 3)), "float32").shape


def _x_len(c, x):
    """The bytes a view of x has: its shape's, not the host's buffer size."""
    with memoryview(x) as m:
        return (m.nbytes, m.tolist(), x.nbytes)


def _other_thread(c, x):
    """The context used from a thread of the plugin's: refused there."""
    import threading
    seen = []

    def run():
        try:
            c.malloc_workspace(4)
            seen.append("allocated")
        except RuntimeError as e:
            seen.append(str(e))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return seen


def _ref_1_0(c, x):
    """Output 1 as input 0's buffer (the host refuses it)."""
    c.make_output_ref_input(1, 0)


CTX_CALLS = {
    "other_thread": _other_thread,
    "ref_1_0": _ref_1_0,
    "dims_max": _dims_max,
    "shape_iter": _shape_iter,
    "x_len": _x_len,
    "interrupt_sub": _interrupt_sub,
    "out_past": _out_past,
    "format_none": _format_none,
    "format_nhwc": _format_nhwc,
    "lone_surrogate": _lone_surrogate,
    "ws_zero": _ws_zero,
}


@pyop.register_op(op_type="CfCtx")
def cf_ctx(x: TensorDesc, *, what: str = "format_none") -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="CfCtx")
class CfCtxImpl:
    """Runs CTX_CALLS[what] on its execute context; records what it returns
    under R[what]."""

    def execute(self, x, *, what):
        R[what] = CTX_CALLS[what](pyop.get_execute_ctx(), x)


@pyop.register_op(op_type="CfLaunch")
def cf_launch(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="CfLaunch")
class CfLaunchImpl:
    """A launch of an empty library name (given as it is, never made a
    path) whose input index is the last one a launch argument takes."""

    def declare_launch_args(self, x, out):
        pyop.get_declare_launch_args_ctx().add_launch(
            "", "kern", [launch.input(2**32 - 1), launch.output(0)])


class Plain:
    """A result the bridge reads by getattr (no TensorDesc)."""

    def __init__(self, shape):
        self.shape, self.dtype, self.format = shape, 0, 0


@pyop.register_op(op_type="CfPlain")
def cf_plain(x: TensorDesc) -> TensorDesc:
    return Plain(tuple(x.shape) + (5,))


@pyop.register_op(op_type="CfMut", mutates_args=("x",))
def cf_mut(x: TensorDesc) -> TensorDesc:
    """x is mutated, no output is its buffer (the output is not named x)."""
    return x


class NameSeen(Plain):
    """A result that records whether each name the bridge reads it by is
    this interpreter's interned str (not one of an earlier interpreter)."""

    def __getattribute__(self, name):
        import builtins
        import sys
        builtins.__dict__.setdefault("_pyop_names", []).append(name is sys.intern(name))
        return object.__getattribute__(self, name)


@pyop.register_op(op_type="CfNamed")
def cf_named(x: TensorDesc) -> TensorDesc:
    return NameSeen(tuple(x.shape))


class BadDtype(Plain):
    """A result whose dtype is no DataType value."""

    def __init__(self, shape):
        super().__init__(shape)
        self.dtype = 99


@pyop.register_op(op_type="CfTrio")
def cf_trio(x: TensorDesc) -> tuple[TensorDesc, TensorDesc, TensorDesc]:
    """Three results, the last with a bad dtype."""
    return (Plain(x.shape), Plain(x.shape), BadDtype(x.shape))


@pyop.register_op(op_type="CfNone")
def cf_none(*, n: int = 2) -> TensorDesc:
    """No inputs: an output of n float32."""
    return TensorDesc((n,), pyop.DataType.float32)


@pyop.register_op_impl(op_type="CfNone")
class CfNoneImpl:
    """Records n, makes its output."""

    def execute(self, *, n):
        R["none"] = n
        pyop.get_execute_ctx().malloc_output_tensor(0, (n,), "float32")


@pyop.register_op(op_type="CfScribble")
def cf_scribble(x: TensorDesc) -> TensorDesc:
    """Records what x says, then assigns its shape (the bridge may reuse
    this TensorDesc for the next call: it must show that call's input)."""
    R.setdefault("seen", []).append((x.shape, x.dtype, x.format))
    out = TensorDesc(x.shape, x.dtype)
    x.shape = (9, 9)
    return out
