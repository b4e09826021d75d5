"""Replaces SIGHUP, SIGUSR2 and SIGRTMAX (the first signal, one in the middle
and the last) with Python handlers at import (the bcstate case: reset puts
the host's handler back for each of them)."""
import signal

import pyop
from pyop import TensorDesc

for _s in (signal.SIGHUP, signal.SIGUSR2, signal.SIGRTMAX):
    signal.signal(_s, lambda signum, frame: None)


@pyop.register_op(op_type="StSigMany")
def st_sig_many(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)
