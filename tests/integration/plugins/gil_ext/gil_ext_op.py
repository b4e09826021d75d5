"""A plugin that imports an extension module without Py_mod_gil
(tests/integration/gil_ext/gil_ext.c, its path in $PYOP_TEST_GIL_EXT): in a
free-threaded Python the import turns the GIL back on, which libpyop's
bridge reports as a warning naming the module."""

import importlib.machinery
import importlib.util
import os
import sys

import pyop
from pyop import Tensor, TensorDesc

_path = os.environ["PYOP_TEST_GIL_EXT"]
_loader = importlib.machinery.ExtensionFileLoader("_pyop_gil_ext", _path)
_spec = importlib.util.spec_from_file_location("_pyop_gil_ext", _path, loader=_loader)
_ext = importlib.util.module_from_spec(_spec)
sys.modules["_pyop_gil_ext"] = _ext
_loader.exec_module(_ext)


@pyop.register_op(op_type="GilExtNoop")
def gil_ext_noop(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="GilExtNoop")
class GilExtNoopImpl:
    def execute(self, x: Tensor) -> None:
        pass
