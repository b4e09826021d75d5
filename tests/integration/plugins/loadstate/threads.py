"""Leaves two threads running, a non-daemon and a daemon one, each waiting
for sys._loadstate_stop (the start case: pyop_shutdown names the first)."""
import sys
import threading

import pyop
from pyop import TensorDesc

sys._loadstate_stop = threading.Event()
# daemon=False: a thread started from a host thread (a daemon dummy thread
# to threading) would otherwise be a daemon too.
threading.Thread(target=sys._loadstate_stop.wait, name="loadstate-worker", daemon=False).start()
threading.Thread(target=sys._loadstate_stop.wait, name="loadstate-daemon", daemon=True).start()


@pyop.register_op(op_type="OutThreads")
def out_threads(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


# Partial lines, left in Python's buffers: pyop_shutdown flushes them.
print("loadstate-stdout", end="")
print("loadstate-stderr", end="", file=sys.stderr)
