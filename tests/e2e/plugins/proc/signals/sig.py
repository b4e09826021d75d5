"""A plugin that installs signal handlers at import: a Python handler for
SIGUSR1 and SIG_IGN for SIGTERM (both replace what the host had)."""
import signal

import pyop
from pyop import TensorDesc

seen = []
signal.signal(signal.SIGUSR1, lambda signum, frame: seen.append(signum))
signal.signal(signal.SIGTERM, signal.SIG_IGN)


@pyop.register_op(op_type="Sig")
def sig(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)
