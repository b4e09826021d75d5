"""A package plugin: relative imports must work."""
import pyop
from pyop import TensorDesc

from .helpers import double_into
from . import helpers as _h


@pyop.register_op(op_type="PkgDouble")
def pkg_double(x: TensorDesc) -> TensorDesc:
    assert _h.__name__.endswith(".helpers")
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="PkgDouble")
class PkgDoubleImpl:
    def execute(self, x):
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        double_into(x, out)
