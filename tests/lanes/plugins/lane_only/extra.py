"""Everywhere(x) -> y, and LaneOnly(x) -> y in an interpreter lane only: a
plugin that decides what it registers by the interpreter it runs in, which
the bridge refuses (every lane must yield what the main interpreter does;
tests/lanes/lanes_host.c, main_differs)."""
import pyop
from pyop import TensorDesc

try:
    import _interpreters as _interp  # 3.13
except ImportError:
    import _xxsubinterpreters as _interp  # 3.12


@pyop.register_op(op_type="Everywhere")
def everywhere(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


if _interp.get_current() != _interp.get_main():

    @pyop.register_op(op_type="LaneOnly")
    def lane_only(x: TensorDesc) -> TensorDesc:
        return TensorDesc(shape=x.shape, dtype=x.dtype)
