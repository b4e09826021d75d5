"""Leaves two entries of the pyop package in sys.modules that are not
modules: None (blocking a submodule) and another object (a namespace). The
lifetime case of the bridge harness checks that the import guard removes
both after the load, not only the None."""
import sys
import types

import pyop
from pyop import TensorDesc

sys.modules["pyop.lp_guard_none"] = None
sys.modules["pyop.lp_guard_object"] = types.SimpleNamespace(owner="plugin")


@pyop.register_op(op_type="LpGuardForms")
def lp_guard_forms(x: TensorDesc) -> TensorDesc:
    return x
