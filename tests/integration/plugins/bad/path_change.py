"""A valid plugin that changes sys.path (the loader restores it)."""
import sys

import pyop
from pyop import TensorDesc

sys.path.insert(0, "/nonexistent/added-by-plugin")


@pyop.register_op(op_type="PathChange")
def path_change(x: TensorDesc) -> TensorDesc:
    return x
