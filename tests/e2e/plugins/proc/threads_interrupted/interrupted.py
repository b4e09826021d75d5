"""A plugin that leaves a non-daemon thread running and makes the first
threading.enumerate() after it was armed raise KeyboardInterrupt, as a
pending interrupt surfacing in the middle of shutdown's thread listing
would."""
import threading

import pyop
from pyop import TensorDesc

_forever = threading.Event()
threading.Thread(target=_forever.wait, name="interrupted-worker", daemon=False).start()
_real_enumerate = threading.enumerate
_armed = [True]


def _enumerate():
    if _armed[0]:
        _armed[0] = False
        raise KeyboardInterrupt("a pending interrupt")
    return _real_enumerate()


threading.enumerate = _enumerate


@pyop.register_op(op_type="Interrupted")
def interrupted(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)
