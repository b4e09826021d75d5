"""Ops that record what the bridge handed them (tests/integration/
bridge_harness.c, case outcome): the writability of each input per call,
the input numbers of the views they keep past a call, a Tensor attribute
past its instance, results the bridge reads through __index__ and
getattr, an execute that returns a value, an implementation naming no view
class, an implementation with declare_launch_args but no compile.

What they see goes to builtins._pyop_outcome (the harness reads and
deletes it)."""
import builtins
from typing import Optional

import pyop
from pyop import Tensor, TensorDesc, _native, launch

R = builtins._pyop_outcome = {"writable": [], "views": [], "keep": (), "tattr": [],
                              "view_types": [], "compiled": 0, "states": []}


@pyop.register_op(op_type="OutWrite")
def out_write(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="OutWrite")
class OutWriteImpl:
    """Records (x.writable, y.writable) and returns a value, which a
    pyop.Tensor execute may do (the result is ignored)."""

    def execute(self, x, y):
        R["writable"].append((x.writable, y.writable))
        return 42


@pyop.register_op(op_type="OutKeep")
def out_keep(xs: list[TensorDesc], o: Optional[TensorDesc], y: TensorDesc) -> TensorDesc:
    assert isinstance(xs, list) and o is None, (xs, o)
    return TensorDesc(y.shape, y.dtype)


@pyop.register_op_impl(op_type="OutKeep")
class OutKeepImpl:
    """Keeps a memoryview of each input R["keep"] names ("x0": xs[0], "y")
    in R["views"] past the call (the harness clears them); then raises when
    R["raise"]."""

    def execute(self, xs, o, y):
        assert isinstance(xs, list) and o is None, (xs, o)
        for k in R["keep"]:
            R["views"].append(memoryview(xs[0] if k == "x0" else y))
        if R.get("raise"):
            raise ValueError("failing after keeping views")

    def compile(self, xs, o, y, out):
        R["compiled"] += 1


class View(_native.ViewBase):
    """A view class of the plugin's own (as ge.runtime.Tensor is)."""


@pyop.register_op(op_type="OutView")
def out_view(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="OutView")
class OutViewImpl:
    """Records the state its view holds when the call begins, then sets it."""

    __pyop_input_view__ = View

    def execute(self, x):
        if R.get("keep_view"):
            R["kept_view"] = x
        R["states"].append((type(x).__name__, x._x, x._dims, x._nbytes, x._data, x._dtype,
                            x._format))
        x._x = "state of this call"


@pyop.register_op_impl(op_type="OutBadView")
class OutBadViewImpl:
    """Its view class is what the harness sets (an int, a class that is no
    ViewBase): no instance can be made."""

    __pyop_input_view__ = None

    def execute(self, x):
        pass


class Index:
    """An int only through __index__."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


class FailingIndex:
    """An int whose __index__ fails with the plugin's own error."""

    def __index__(self):
        raise ValueError("index failed on purpose")


class Desc:
    """What the bridge reads of a result by getattr: .shape, .dtype, .format."""

    def __init__(self, shape, dtype, format):
        self.shape, self.dtype, self.format = shape, dtype, format


@pyop.register_op(op_type="OutIndex")
def out_index(x: TensorDesc, *, dt: int = 0, fm: int = 0) -> TensorDesc:
    """dtype and format as ints only through __index__, in a plain object
    (dt -2: an __index__ that raises)."""
    return Desc((3,), FailingIndex() if dt == -2 else Index(dt), Index(fm))


@pyop.register_op(op_type="OutTable")
def out_table(x: TensorDesc, *, table: Tensor) -> TensorDesc:
    with memoryview(table) as m:
        R["tattr"].append((table, m.tolist()))
    return x


@pyop.register_op_impl(op_type="OutTable")
class OutTableImpl:
    """No view class of its own: pyop.Tensor inputs."""

    __pyop_input_view__ = None

    def execute(self, x, *, table):
        R["view_types"].append(type(x).__name__)


@pyop.register_op(op_type="OutDeclare")
def out_declare(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="OutDeclare")
class OutDeclareImpl:
    """declare_launch_args, no compile."""

    def declare_launch_args(self, x, out):
        pyop.get_declare_launch_args_ctx().add_launch("libkern.so", "kern",
                                                      [launch.input(0), launch.output(0)])
