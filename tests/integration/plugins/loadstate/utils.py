"""Replaces sys.modules['pyop_utils'] (a module of its own, no part of the
pyop package) at import, and sys.modules['pyop\\x00utils'] (a name that
holds a NUL: no pyop name either); the loadstate case checks both are kept."""
import sys
import types

import pyop
from pyop import TensorDesc

_mine = types.ModuleType("pyop_utils")
_mine.owner = "plugin"
sys.modules["pyop_utils"] = _mine
_nul = types.ModuleType("pyop_nul_utils")
_nul.owner = "plugin"
sys.modules["pyop\x00utils"] = _nul


@pyop.register_op(op_type="OutUtils")
def out_utils(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)
