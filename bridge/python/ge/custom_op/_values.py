"""Values crossing between pyop and a GE plugin: attribute values as GE
delivers them (float32 rounding, GE's DataType), TensorDescs both ways,
and the ge.runtime.Tensor view of a pyop tensor.

Shared by proto.py (infer_meta) and context.py (execute, compile and
declare_launch_args), which both re-export these names; it imports neither,
so neither imports the other.
"""

import ctypes

import pyop

from .. import _convert
from ..graph.types import DataType
from ..runtime import Tensor, TensorDesc, TensorPlacement


def f32(x):
    """x rounded to float32, as GE's C++ side stores float attributes."""
    return ctypes.c_float(x).value


def attr_from_pyop(ir, v):
    """The value a GE plugin sees for a pyop attribute value."""
    if ir == "VT_FLOAT":
        return f32(v)
    if ir == "VT_LIST_FLOAT":
        return [f32(x) for x in v]
    if ir == "VT_DATA_TYPE":
        return _dt_from(v)
    if ir == "VT_LIST_DATA_TYPE":
        return [_dt_from(x) for x in v]
    if ir in ("VT_LIST_INT", "VT_LIST_BOOL", "VT_LIST_STRING"):
        return list(v)
    if ir == "VT_LIST_LIST_INT":
        return [list(r) for r in v]
    return v


def _dt_from(v):
    if isinstance(v, pyop.DataType):
        return _convert.dtype_from_pyop(v)
    return DataType(v)  # an int attribute holding GE's number


def desc_from_pyop(d):
    """ge.runtime.TensorDesc for a pyop TensorDesc (format dropped)."""
    return TensorDesc(list(d.shape), _convert.dtype_from_pyop(d.dtype))


def desc_to_pyop(d, what):
    """pyop.TensorDesc for a ge.runtime.TensorDesc infer_meta returned: its
    storage shape (the memory malloc_output_tensor makes for the output)
    and data type; TypeError naming what for anything else."""
    if not isinstance(d, TensorDesc):
        raise TypeError("%s: expected a ge.runtime.TensorDesc, got %s"
                        % (what, type(d).__name__))
    return pyop.TensorDesc(tuple(d._t), _convert.dtype_to_pyop(d._dt, what + " data_type"))


def wrap_tensor(scope, t, placement=TensorPlacement.ON_HOST):
    """A ge.runtime.Tensor for a pyop Tensor (execute) or TensorDesc
    (compile / declare_launch_args: addr 0), read on first use."""
    return Tensor._lazy(scope, t)
