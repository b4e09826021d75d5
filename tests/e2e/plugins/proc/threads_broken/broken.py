"""A plugin that leaves a non-daemon thread running and breaks
threading.enumerate, so that listing Python's threads at shutdown fails."""
import threading

import pyop
from pyop import TensorDesc

_forever = threading.Event()
threading.Thread(target=_forever.wait, name="broken-worker", daemon=False).start()


def _broken():
    raise RuntimeError("threading.enumerate broken by a plugin")


threading.enumerate = _broken


@pyop.register_op(op_type="Broken")
def broken(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)
