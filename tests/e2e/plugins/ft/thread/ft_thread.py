"""A plugin whose thread outlives its unload and then uses the module's
globals (host_ft's reload_thread case): libpyop must not clear the module
while such a thread runs. Starting the thread also makes a free-threaded
CPython immortalize every new module, as two threads running Python do."""
import sys
import threading
import time

import pyop
from pyop import Tensor, TensorDesc

_me = __name__
_state = {"n": 0}


def _worker():
    try:
        while _me in sys.modules:  # until pyop_unload dropped this module
            time.sleep(0.002)
        for _ in range(10):
            _state["n"] += 1
        sys._pyop_ft_thread = "ok %d" % _state["n"]
    except BaseException as e:
        sys._pyop_ft_thread = "failed: %r" % (e,)


threading.Thread(target=_worker, name="ft-after-unload", daemon=True).start()


@pyop.register_op(op_type="FtThreadNoop")
def ft_thread_noop(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="FtThreadNoop")
class FtThreadNoop:
    def execute(self, x: Tensor) -> None:
        pass
