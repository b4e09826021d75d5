"""infer_meta results and execute inputs the lifetime case of the bridge
harness (tests/integration/bridge_harness.c, case lifetime) checks after the
call: every description a result held (and the format number it gave through
__index__) is released when the call returns, whatever the result's form (a
tuple or a list of outputs, one output, a dynamic output's list or tuple);
a result sharing the second input's shape has that input's dimensions; a
format below 0 given through __index__ is refused; a namedtuple of outputs is
read as a tuple; each input slot is
writable as the host marked it; what compile returns is released too. The harness makes the module
lpbc_probe before the load: the weak references and what execute saw go
there."""
import collections
import weakref

import lpbc_probe  # made by the harness before the load
import pyop
from pyop import TensorDesc


class Fmt:
    """A format number the bridge reads through __index__ (weakly referable)."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


class Desc:
    """What the bridge reads of a result by attribute (weakly referable)."""

    def __init__(self, shape, fmt):
        self.shape, self.dtype, self.format = shape, 0, Fmt(fmt)


def _made(*items):
    for d in items:
        lpbc_probe.refs.append(weakref.ref(d))
        lpbc_probe.refs.append(weakref.ref(d.format))
    return items


@pyop.register_op(op_type="LpPair", outputs=("a", "b"))
def lp_pair(x: TensorDesc, *, form: str = "tuple") -> tuple[TensorDesc, TensorDesc]:
    if form == "negfmt":  # a format below 0 through __index__: refused
        return _made(Desc((2,), 0), Desc((3, 4), -1))
    a, b = _made(Desc((2,), 0), Desc((3, 4), 1))
    if form == "named":  # a tuple subclass
        return collections.namedtuple("LpPairOut", "a b")(a, b)
    return [a, b] if form == "list" else (a, b)


@pyop.register_op(op_type="LpOne")
def lp_one(x: TensorDesc) -> TensorDesc:
    (d,) = _made(Desc((5,), 2))
    return d


@pyop.register_op(op_type="LpDyn")
def lp_dyn(x: TensorDesc, *, form: str = "list") -> list[TensorDesc]:
    items = list(_made(Desc((6,), 0), Desc((7, 8), 1)))
    return tuple(items) if form == "tuple" else items


@pyop.register_op(op_type="LpShare")
def lp_share(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return y  # the second input's description: its shape is the input slot's


@pyop.register_op(op_type="LpMut", mutates_args=("x", "y"))
def lp_mut(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="LpMut")
class LpMutImpl:
    def execute(self, x, y):
        lpbc_probe.seen.append((x.writable, y.writable))

    def compile(self, x, y, out):
        (d,) = _made(Desc((1,), 0))
        return d  # ignored: released when the call returns


@pyop.register_op(op_type="LpRange")
def lp_range(x: TensorDesc) -> TensorDesc:
    d = Desc(range(2, 5), 0)  # a shape that is a sequence, neither tuple nor list
    _made(d)
    return d


@pyop.register_op(op_type="LpList")
def lp_list(xs: list[TensorDesc]) -> TensorDesc:
    lpbc_probe.seen.append((type(xs).__name__, len(xs) if isinstance(xs, list) else -1))
    return TensorDesc((1,), "float32")


@pyop.register_op(op_type="LpNested")
def lp_nested(x: TensorDesc, *, n: int = 1, lli: list[list[int]] = [[1, 2], [3]]) -> TensorDesc:
    # What this call got (inner types and values), then changed in place:
    # the next call gets lists of its own again, as the host gave them.
    lpbc_probe.seen.append(([type(e).__name__ for e in lli], [list(e) for e in lli]))
    lli[0].append(9)
    lli.append([0])
    return x
