"""FtGilLate for host_ft's gil_late case: its execute (not its import)
imports an extension module without Py_mod_gil
(tests/integration/gil_ext/gil_ext.c, path in $PYOP_TEST_GIL_EXT), which
turns the GIL of a free-threaded Python back on after the load."""
import importlib.util
import os
import sys

import pyop
from pyop import Tensor, TensorDesc


def _import_ext():
    if "_pyop_gil_ext" not in sys.modules:
        spec = importlib.util.spec_from_file_location("_pyop_gil_ext",
                                                      os.environ["PYOP_TEST_GIL_EXT"])
        sys.modules["_pyop_gil_ext"] = importlib.util.module_from_spec(spec)


@pyop.register_op(op_type="FtGilLate")
def ft_gil_late(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="FtGilLate")
class FtGilLate:
    def execute(self, x: Tensor) -> None:
        _import_ext()
