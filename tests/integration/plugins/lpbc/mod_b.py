"""Plugin module b of a load of three files (the lifetime case of the bridge
harness: reset removes every one of them from sys.modules, not only the
first; its function, in a cycle with its globals, is collected by reset)."""

import weakref

import lpbc_probe
import pyop
from pyop import TensorDesc

lpbc_probe.names.append(__name__)


@pyop.register_op(op_type="LpMod_b")
def lp_mod_b(x: TensorDesc) -> TensorDesc:
    return x


# Its function and module globals form a cycle: reset collects it.
lpbc_probe.refs.append(weakref.ref(lp_mod_b))
