"""Ops for the bounds pass of the bridge (tests/integration/
bridge_harness.c, case bounds): each asks the bridge for something at a
limit (exactly at it, one below, one above) and records what came back,
whole, so that a bound checked one off, a buffer cut short or a number
wrapped into its C type shows.

What they see goes to builtins._pyop_bounds (the harness reads and
deletes it)."""
import builtins

import pyop
from pyop import TensorDesc
from pyop.launch import LaunchArg

R = builtins._pyop_bounds = {}


def _outcome(fn):
    """('ok', result) or (exception type name, its text)."""
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the type is what is recorded
        return (type(e).__name__, str(e))


@pyop.register_op(op_type="BdRepr")
def bd_repr(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="BdRepr")
class BdReprImpl:
    """Records its input's repr (the harness gives it eight wide
    dimensions)."""

    def execute(self, x):
        R.setdefault("repr", []).append(repr(x))


@pyop.register_op(op_type="BdPast")
def bd_past(x: TensorDesc) -> list[TensorDesc]:
    return [x]


@pyop.register_op_impl(op_type="BdPast")
class BdPastImpl:
    """Asks for the output one past the call's last (R["past_index"]):
    records the IndexError's text."""

    def execute(self, x):
        ctx = pyop.get_execute_ctx()
        R["past"] = _outcome(lambda: ctx.malloc_output_tensor(R["past_index"], (1,), "float32"))


@pyop.register_op(op_type="BdNumbers")
def bd_numbers(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="BdNumbers")
class BdNumbersImpl:
    """Numbers at the edge of their C types, given to the context: each
    outcome recorded in R["numbers"] (the host's allocations are counted by
    the harness)."""

    def execute(self, x):
        ctx = pyop.get_execute_ctx()
        R["numbers"] = [
            _outcome(lambda: ctx.malloc_workspace(1 << 63)),
            _outcome(lambda: ctx.malloc_output_tensor(1 << 63, (1,), "float32")),
            _outcome(lambda: ctx.malloc_output_tensor(-(1 << 63) - 1, (1,), "float32")),
        ]
        # the largest workspace a plugin may ask for reaches the host
        R["numbers"].append(_outcome(lambda: ctx.malloc_workspace((1 << 63) - 1)))

    def compile(self, x, out):
        R["compiled"] = True

    def declare_launch_args(self, x, out):
        """One add_launch per argument, each LaunchArg(kind, index,
        scalar_type, value) made directly (pyop.launch's helpers check
        their ranges in Python; the bridge must check them again)."""
        ctx = pyop.get_declare_launch_args_ctx()
        args = R["launch_args"]
        R["launch"] = [_outcome(lambda a=a: ctx.add_launch("/lib/libbd.so", "k", [LaunchArg(*a)]))
                       for a in args]
        # the eleventh argument out of range: named by its two-digit number
        wide = [LaunchArg(4, 0, 3, 0)] * 10 + [LaunchArg(4, 0, 3, 1 << 31)]
        R["wide"] = _outcome(lambda: ctx.add_launch("/lib/libbd.so", "k", wide))
        R["nbytes"] = [_outcome(lambda: ctx.add_workspace(1 << 64)),
                       _outcome(lambda: ctx.add_workspace((1 << 64) - 1))]


@pyop.register_op(op_type="BdExtra")
def bd_extra(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="BdExtra")
class BdExtraImpl:
    """Takes whatever slots the host gives: records what each was."""

    def execute(self, *slots):
        R.setdefault("extra", []).append([
            [t.shape for t in s] if isinstance(s, list) else
            None if s is None else s.shape for s in slots])

    def compile(self, *descs):
        """Its inputs as TensorDescs, then its output's."""
        R.setdefault("extra_descs", []).append([d.shape for d in descs])


@pyop.register_op(op_type="BdStr")
def bd_str(x: TensorDesc, *, s: str = "b\u00e9") -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="BdStr")
class BdStrImpl:
    """Records its str attribute as it came."""

    def execute(self, x, *, s):
        R.setdefault("str", []).append(s)
