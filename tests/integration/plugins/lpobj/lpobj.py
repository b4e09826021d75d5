"""Objects the bridge lends to a plugin or takes from it, looked at after
the call, the instance or the load that made them (tests/integration/
bridge_harness.c, case lpobj: the lifetime pass, session 15).

What it sees goes to builtins._pyop_lpobj (the harness reads it). Only
weak references to the plugin's own classes and functions are kept there,
so a reset can free them."""
import builtins
import sys
import weakref

import pyop
from pyop import TensorDesc, _native, launch

R = builtins._pyop_lpobj = {"instances": []}


class LpView(_native.ViewBase):
    """The input view class of LpViewed."""


class LpBoom(Exception):
    """What LpKeepImpl() raises when R["boom"] (it can be weakly referred to)."""


@pyop.register_op(op_type="LpKeep")
def lp_keep(x: TensorDesc, *, lp_tag: str = "t") -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="LpKeep")
class LpKeepImpl:
    """Keeps its input, its output, its context and its tag attribute (with
    an equal str that is another object) in R past the call."""

    def __init__(self):
        if R.get("boom"):
            e = LpBoom("instance refused")
            R["boom_ref"] = weakref.ref(e)
            raise e
        R["instances"].append(weakref.ref(self))

    def execute(self, x, *, lp_tag):
        tag = lp_tag
        ctx = pyop.get_execute_ctx()
        R["same_ctx"] = ctx is pyop.get_execute_ctx()
        if R.get("twice"):
            # Two refusals of the host, caught: the bridge keeps the latest
            # (for the call's status) until the call ends, not the first.
            errs = R["host_errors"] = []
            for _ in range(2):
                try:
                    ctx.malloc_output_tensor(0, (1 << 29,), "float32")
                except RuntimeError as e:
                    errs.append(e)
            R["during"] = (sys.getrefcount(errs[0]), sys.getrefcount(errs[1]))
        shape = x.shape  # a new tuple: the bridge reads it as it is, keeps nothing
        rc = sys.getrefcount(shape)
        out = ctx.malloc_output_tensor(0, shape, x.dtype)
        R["shape_rc"] = (rc, sys.getrefcount(shape))
        R["kept"] = (x, out, ctx)
        R["tag"] = [tag]
        R["tag_copy"] = [tag.encode().decode()]
        assert R["tag_copy"][0] is not tag and R["tag_copy"][0] == tag

    def compile(self, x, out, *, lp_tag):
        """Its artefact from a bytearray: released by set_artifact (the
        bytearray can grow again), referred to no more than before."""
        art = bytearray(b"lp")
        before = sys.getrefcount(art)
        pyop.get_compile_ctx().set_artifact(art)
        art.extend(b"!")  # BufferError while an export of it is left
        R["artifact_rc"] = (before, sys.getrefcount(art))

    def declare_launch_args(self, x, out, *, lp_tag):
        """Its launch arguments as a tuple (read as it is) and as a list
        (read from a copy): the bridge keeps neither after add_launch."""
        ctx = pyop.get_declare_launch_args_ctx()
        args, largs = (launch.input(0), launch.output(0)), [launch.input(0)]
        before = (sys.getrefcount(args), sys.getrefcount(largs[0]))
        ctx.add_launch("/lib/liblp.so", "k", args)
        ctx.add_launch("/lib/liblp.so", "k", largs)
        R["launch_rc"] = (before, (sys.getrefcount(args), sys.getrefcount(largs[0])))


@pyop.register_op_impl(op_type="LpForeign")
class LpForeignImpl:
    """An implementation whose prototype is not this package's (a host's,
    or another plugin's, with two outputs): its holder knows no number of
    outputs. Makes both outputs, output 1 = x."""

    def execute(self, x):
        ctx = pyop.get_execute_ctx()
        ctx.malloc_output_tensor(0, x.shape, x.dtype)
        out = ctx.malloc_output_tensor(1, x.shape, x.dtype)
        memoryview(out).cast("B")[:] = memoryview(x).cast("B")


class NotAView:
    """Not a ViewBase subclass: LpBadView's instances are refused."""


@pyop.register_op(op_type="LpBadView")
def lp_bad_view(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="LpBadView")
class LpBadViewImpl:
    __pyop_input_view__ = NotAView

    def execute(self, x):
        raise AssertionError("never made")


class _ViewRaisesMeta(type):
    """Reading __pyop_input_view__ of its classes raises (not AttributeError)."""

    @property
    def __pyop_input_view__(cls):
        raise RuntimeError("LpViewRaises: no view class today")


@pyop.register_op(op_type="LpViewRaises")
def lp_view_raises(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="LpViewRaises")
class LpViewRaisesImpl(metaclass=_ViewRaisesMeta):
    """Its view class cannot be read: each instance is refused with that
    error (only an AttributeError means "no view class")."""

    def execute(self, x):
        raise AssertionError("never made")


@pyop.register_op(op_type="LpViewed")
def lp_viewed(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="LpViewed")
class LpViewedImpl:
    """Its inputs are LpView objects: keeps the one it got in R (or a weak
    reference to it when R["weak"]; with R["stale"], looks at that one)."""

    __pyop_input_view__ = LpView

    def execute(self, x):
        assert type(x) is LpView and x.valid
        stale = R.get("stale")
        if stale is not None:
            # A view of an earlier call the plugin holds (R["stale"]): not
            # this call's input, and refusing its fields while this call runs.
            try:
                stale._dims
            except RuntimeError as e:
                dims = str(e)
            else:
                dims = "read"
            R["stale_seen"] = (x is stale, stale.valid, dims)
        elif R.get("weak"):
            # Only a weak reference (the bridge may keep the view for its
            # next call: R["view_ref"] is how the harness reaches it).
            R["view_ref"] = weakref.ref(x)
        else:
            R["view"] = x
        pyop.get_execute_ctx().malloc_output_tensor(0, x._dims, x._dtype)


# Strings made here (not interned constants), given to the registration:
# what converting the descriptor keeps of them is dropped when the
# registrar call returns, all of it at the reset (tag_rc0: counts before).
TAGS = R["tags"] = ["".join(["al", "pha"]), "".join(["be", "ta"])]
OPT = R["opt"] = ["".join(["Lp", "Tagged"])]
R["tag_rc0"] = (sys.getrefcount(TAGS[0]), sys.getrefcount(TAGS[1]), sys.getrefcount(OPT[0]))


@pyop.register_op(op_type=OPT[0])
def lp_tagged(x: TensorDesc, *, names: list[str] = TAGS) -> TensorDesc:
    return x


R["refs"] = {"impl": weakref.ref(LpKeepImpl), "view_impl": weakref.ref(LpViewedImpl),
             "view": weakref.ref(LpView), "infer": weakref.ref(lp_keep),
             "not_a_view": weakref.ref(NotAView)}


def counts():
    """Reference counts of what a holder refers to: the implementation's
    execute function, the view class, the prototype's infer function, and
    TensorDesc (each of its instances refers to it: the TensorDescs a
    prototype's holder made for its inputs), the refused view class of
    LpBadView, and the attribute name lp_tag (interned: the holders'
    keyword names; immortal from Python 3.12, so compared on 3.11 only)."""
    refs = R["refs"]
    return (sys.getrefcount(refs["impl"]().__dict__["execute"]),
            sys.getrefcount(refs["view"]()),
            sys.getrefcount(refs["infer"]()),
            sys.getrefcount(TensorDesc),
            sys.getrefcount(refs["not_a_view"]()),
            sys.getrefcount(sys.intern("lp_tag")))


R["counts"] = counts


def tensors():
    """References to pyop.Tensor: one per Tensor alive (each refers to its
    type), what the harness compares before and after an instance."""
    return sys.getrefcount(_native.Tensor)


R["tensors"] = tensors
