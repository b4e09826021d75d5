"""A plugin that imports subprocess (hence signal), as many real plugins do:
in a C host with start_python the host's SIGINT must stay the host's."""
import subprocess  # noqa: F401

import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="UsesSubprocess")
def uses_subprocess(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)
