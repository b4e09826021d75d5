"""Replaces sys.modules['pyop_utils'] (a module of its own, no part of the
pyop package) at import; the loadstate case checks it is kept."""
import sys
import types

import pyop
from pyop import TensorDesc

_mine = types.ModuleType("pyop_utils")
_mine.owner = "plugin"
sys.modules["pyop_utils"] = _mine


@pyop.register_op(op_type="OutUtils")
def out_utils(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)
