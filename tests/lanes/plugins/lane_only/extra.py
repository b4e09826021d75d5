"""Everywhere(x) -> y, and LaneOnly(x) -> y in an interpreter lane only: a
plugin that decides what it registers by the interpreter it runs in, which
the bridge refuses (every lane must yield what the main interpreter does;
tests/lanes/lanes_host.c, main_differs). Its import fails while a previous
load's copy of it is still in the interpreter's sys.modules: a failed load
must drop every module it imported, in the lanes and in the main
interpreter."""
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


@pyop.register_op(op_type="Everywhere")
def everywhere(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


if _interp.get_current() != _interp.get_main():

    @pyop.register_op(op_type="LaneOnly")
    def lane_only(x: TensorDesc) -> TensorDesc:
        return TensorDesc(shape=x.shape, dtype=x.dtype)
