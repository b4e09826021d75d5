"""A plugin that loads (the cfstate case) and, after declaring its op,
replaces sys.modules["pyop"] and a host module's entry: the load puts the
package's entry back and keeps the host module's as the plugin left it."""
import sys
import types

import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="CfGuard")
def cf_guard(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


sys.modules["pyop"] = types.ModuleType("pyop")
sys.modules["_cf_host_module"] = types.ModuleType("_cf_host_module_by_plugin")
