"""Ops whose execute shares its tensors and its context with Python threads
of its own (in a free-threaded CPython they run at once), for host_ft's
views cases. Every worker is joined before execute returns, except the view
FtKeep keeps on purpose."""
import threading

import pyop
from pyop import Tensor, TensorDesc
from pyop.ext import native

ROUNDS = 400


def _together(*targets):
    """Runs each target on a thread of its own, all at once; re-raises the
    first exception one raised."""
    errors = []
    go = threading.Barrier(len(targets))

    def run(fn):
        try:
            go.wait()
            fn()
        except BaseException as e:  # reported by the call
            errors.append(e)

    threads = [threading.Thread(target=run, args=(fn,)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pyop.register_op(op_type="FtSplit")
def ft_split(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="FtSplit")
class FtSplit:
    """out = x, each half copied by a thread of its own through views of x
    and out taken and released ROUNDS times."""

    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        n = x.numel
        half = n // 2

        def copy(lo, hi):
            for _ in range(ROUNDS):
                with memoryview(x) as a, memoryview(out) as o:
                    o[lo:hi] = a[lo:hi]

        _together(lambda: copy(0, half), lambda: copy(half, n))


_kept = []


@pyop.register_op(op_type="FtKeep")
def ft_keep(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="FtKeep")
class FtKeep:
    """One thread keeps a view of x past the call (an escape the bridge must
    see every time) while another takes and releases views of x."""

    def execute(self, x: Tensor) -> None:
        def churn():
            for _ in range(ROUNDS):
                memoryview(x).release()

        def keep():
            for i in range(ROUNDS):
                m = memoryview(x)
                if i == ROUNDS // 2:
                    _kept.append(m)
                else:
                    m.release()

        _together(churn, keep)


@pyop.register_op(op_type="FtRelease")
def ft_release(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="FtRelease")
class FtRelease:
    """Releases what FtKeep kept."""

    def execute(self, x: Tensor) -> None:
        for m in _kept:
            m.release()
        _kept.clear()


class FtView(native.ViewBase):
    __slots__ = ()


@pyop.register_op(op_type="FtViewX")
def ft_view_x(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="FtViewX")
class FtViewX:
    """One thread sets the state field (_x) of the input view and of the
    call's context while two read them, at once (ge's views read and set it
    on every field access); each value set is a new object, so a read that
    is not ordered with the set that frees its value uses freed memory."""

    __pyop_input_view__ = FtView

    def execute(self, x) -> None:
        ctx = pyop.get_execute_ctx()

        def setter(k):
            for i in range(ROUNDS * 30):
                x._x = [k, i]
                ctx._x = [k, i]

        def getter():
            for i in range(ROUNDS * 30):
                v = x._x
                c = ctx._x
                if not (isinstance(v, list) and isinstance(c, list)):
                    raise AssertionError("_x read back %r and %r" % (v, c))

        x._x = []
        ctx._x = []
        _together(lambda: setter(0), getter, getter)
