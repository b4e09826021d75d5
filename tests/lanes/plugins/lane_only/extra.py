"""Everywhere(x) -> y, and LaneOnly(x) -> y in an interpreter lane only: a
plugin that decides what it registers by the interpreter it runs in, which
the bridge refuses (every lane must yield what the main interpreter does;
tests/lanes/lanes_host.c, main_differs). Its import fails while a previous
load's copy of it is still in the interpreter's sys.modules (in the lanes
and in the main interpreter: a failed load drops every module it imported),
or, in the main interpreter, the import finder it adds to sys.meta_path is
still there (a failed load puts back the import system it changed)."""
import os
import sys

import pyop
from pyop import TensorDesc

try:
    import _interpreters as _interp  # 3.13
except ImportError:
    import _xxsubinterpreters as _interp  # 3.12

_left = sorted(n for n, m in list(sys.modules.items())
               if n != __name__ and isinstance(getattr(m, "__file__", None), str)
               and os.path.realpath(m.__file__) == os.path.realpath(__file__))
if _left:
    raise RuntimeError("a failed load left its plugin modules in sys.modules: %s"
                       % ", ".join(_left))
# In the main interpreter only: a lane's load of this file succeeded, and a
# lane forgets a load libpyop refuses as pyop_unload does (docs/host-guide.md).
_finders = [f for f in sys.meta_path if type(f).__name__ == "LaneOnlyFinder"]
if _finders and _interp.get_current() == _interp.get_main():
    raise RuntimeError("a failed load left its finder in sys.meta_path (%d)" % len(_finders))


# A finder that finds nothing (only its presence is looked at), made in a
# namespace of its own: what stays in a lane's sys.meta_path must not keep
# this module, and what it registered, alive.
_ns = {}
exec("class LaneOnlyFinder:\n"
     "    @staticmethod\n"
     "    def find_spec(name, path=None, target=None):\n"
     "        return None\n", _ns)
sys.meta_path.append(_ns["LaneOnlyFinder"]())


@pyop.register_op(op_type="Everywhere")
def everywhere(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


if _interp.get_current() != _interp.get_main():

    @pyop.register_op(op_type="LaneOnly")
    def lane_only(x: TensorDesc) -> TensorDesc:
        return TensorDesc(shape=x.shape, dtype=x.dtype)
