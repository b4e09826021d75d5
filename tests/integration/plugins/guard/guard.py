"""A plugin that loads fine but changes the pyop package's entries in
sys.modules (tests/integration/bridge_harness.c, case bad): the bridge puts
them back after the load."""
import sys

import pyop
import pyop.launch
from pyop import TensorDesc

sys.modules["pyop.launch"] = "not the module"  # replaced
sys.modules["pyop._guard_added"] = None  # added, not a module


@pyop.register_op(op_type="Guarded")
def guarded(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)
