"""Replaces SIGUSR1 with a Python handler at import (the loadstate case:
the host's handler comes back only when no plugin is left)."""
import signal

import pyop
from pyop import TensorDesc

signal.signal(signal.SIGUSR1, lambda signum, frame: None)


@pyop.register_op(op_type="OutSig")
def out_sig(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)
