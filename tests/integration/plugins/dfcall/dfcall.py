"""Ops for the dataflow pass of the bridge's call path
(tests/integration/bridge_harness.c, case dfcall): each records what it
was given, whole, so that a value the bridge cut, dropped or took from its
neighbour shows.

What they see goes to builtins._pyop_dfcall (the harness reads and
deletes it)."""
import builtins

import pyop
from pyop import Tensor, TensorDesc, launch

R = builtins._pyop_dfcall = {}


@pyop.register_op(op_type="DfStr")
def df_str(x: TensorDesc, *, s: str = "") -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="DfStr")
class DfStrImpl:
    """Records the str attribute as it came."""

    def execute(self, x, *, s):
        R.setdefault("s", []).append(s)


@pyop.register_op(op_type="DfTable")
def df_table(x: TensorDesc, *, table: Tensor) -> TensorDesc:
    """Records every element of its Tensor attribute."""
    with memoryview(table) as m:
        R.setdefault("table", []).append((table.nbytes, m.tolist()))
    return x


@pyop.register_op(op_type="DfPast")
def df_past(x: TensorDesc) -> tuple[TensorDesc, list[TensorDesc]]:
    return x, [x]


@pyop.register_op_impl(op_type="DfPast")
class DfPastImpl:
    """Asks for an output one past its two: records the IndexError's text."""

    def execute(self, x):
        try:
            pyop.get_execute_ctx().malloc_output_tensor(2, (2,), "float32")
        except IndexError as e:
            R["past"] = str(e)


@pyop.register_op(op_type="DfLaunch")
def df_launch(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="DfLaunch")
class DfLaunchImpl:
    """An artifact holding NUL bytes; a launch of a one-character library
    name (relative to this file) and of a symbol holding a NUL."""

    def compile(self, x, out):
        pyop.get_compile_ctx().set_artifact(b"a\0b\0")

    def declare_launch_args(self, x, out):
        pyop.get_declare_launch_args_ctx().add_launch("k", "kern\0v2", [launch.input(0)])


@pyop.register_op(op_type="DfEight")
def df_eight(x0: TensorDesc, x1: TensorDesc, x2: TensorDesc, x3: TensorDesc, x4: TensorDesc,
             x5: TensorDesc, x6: TensorDesc, x7: TensorDesc) -> TensorDesc:
    return x0


@pyop.register_op_impl(op_type="DfEight")
class DfEightImpl:
    """Eight inputs fill a call's first room for tensors: the output made
    after them is the ninth tracked. Keeps a view of it (R["view"])."""

    def execute(self, x0, x1, x2, x3, x4, x5, x6, x7):
        out = pyop.get_execute_ctx().malloc_output_tensor(0, (2,), "float32")
        R["view"] = memoryview(out)


@pyop.register_op(op_type="DfNul")
def df_nul(x: TensorDesc, *, nuls: int = 1) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="DfNul")
class DfNulImpl:
    """Fails with a message holding nuls NULs in a row (a NUL-padded field
    of a binary record, say): the host's error must still hold what follows
    them (the rest of the message, the traceback)."""

    def execute(self, x, *, nuls):
        raise ValueError("bad" + "\0" * nuls + "tail of the message")
