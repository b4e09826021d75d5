"""Plugin code attacking what the bridge lends it: a context handed to
another Python thread, sequences emptied while the bridge reads them.

Results of the worker threads go to builtins._pyop_hostile (the harness
reads and deletes it)."""
import builtins
import threading
import time

import pyop
from pyop import TensorDesc, launch

RESULTS = builtins._pyop_hostile = {"threads": []}


class Slow:
    """An index that lets the callback return while it is being read."""

    def __init__(self, entered, value=1):
        self.entered = entered
        self.value = value

    def __index__(self):
        self.entered.set()
        time.sleep(0.3)
        return self.value


class Clearer:
    """An index that empties the sequences it is read from."""

    def __init__(self, victims, value):
        self.victims = victims
        self.value = value

    def __index__(self):
        for v in self.victims:
            v.clear()
        return self.value


def _worker(key, fn, entered):
    try:
        fn()
        RESULTS[key] = "ok"
    except BaseException as e:  # noqa: B036 - recorded for the harness
        RESULTS[key] = "%s: %s" % (type(e).__name__, e)
    finally:
        entered.set()


def _in_thread(key, fn):
    """Runs fn on a new thread and returns once it is inside the bridge (or
    done): the callback then returns while the thread may still be in it."""
    entered = threading.Event()
    t = threading.Thread(target=_worker, args=(key, lambda: fn(entered), entered))
    RESULTS["threads"].append(t)
    t.start()
    entered.wait(10)


@pyop.register_op(op_type="Hostile")
def hostile(x: TensorDesc, *, mode: str = "none") -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="Hostile")
class HostileImpl:
    def execute(self, x, *, mode):
        ctx = pyop.get_execute_ctx()
        if mode == "thread_output":
            _in_thread(mode, lambda ev: ctx.malloc_output_tensor(0, [Slow(ev)], "float32"))
        elif mode == "thread_stream":
            _in_thread(mode, lambda ev: ctx.stream)
        elif mode == "shape_cleared":
            shape = []
            shape.extend([Clearer([shape], 1), 2, 3])
            out = ctx.malloc_output_tensor(0, shape, "float32")
            assert out.shape == (1, 2, 3), out.shape

    def compile(self, x, y, *, mode):
        ctx = pyop.get_compile_ctx()
        if mode == "thread_artifact":
            _in_thread(mode, lambda ev: ctx.set_artifact(b"from another thread"))

    def declare_launch_args(self, x, y, *, mode):
        ctx = pyop.get_declare_launch_args_ctx()
        if mode == "thread_launch":
            _in_thread(mode, lambda ev: ctx.add_launch(
                "libk.so", "k", [launch.LaunchArg(launch.INPUT, Slow(ev))]))
        elif mode == "thread_workspace":
            _in_thread(mode, lambda ev: ctx.add_workspace(16))
        elif mode == "args_cleared":
            args = []
            args.extend([launch.LaunchArg(launch.INPUT, Clearer([args], 0)), launch.output(0),
                         launch.stream()])
            ctx.add_launch("libk.so", "k", args)
