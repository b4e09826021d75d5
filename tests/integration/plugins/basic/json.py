"""Named like a stdlib module: imported under a unique name only."""
import sys

import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="ShadowJson")
def shadow(x: TensorDesc) -> TensorDesc:
    import json  # must be the standard library's
    assert hasattr(json, "dumps"), json
    assert __name__ != "json" and __name__.startswith("_pyop_plugin_")
    assert sys.modules["json"] is json
    return TensorDesc(x.shape, x.dtype)
