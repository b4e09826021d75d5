"""A plugin that starts a non-daemon thread which never ends (it waits on an
event nobody sets), and registers Twice so the load has an op."""
import threading

import pyop
from pyop import Tensor, TensorDesc

_forever = threading.Event()
_worker = threading.Thread(target=_forever.wait, name="stubborn-worker", daemon=False)
_worker.start()


@pyop.register_op(op_type="Stubborn")
def stubborn(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)
