"""BroadcastShape: an infer-only op (a prototype with no implementation).

A prototype alone is a valid op: the host can create it and call infer_meta
to plan shapes, but it has no execute, compile or launch -- the host (or a
later implementation bound to the same op type) has to provide the
computation. `pyop list` shows its capabilities as "infer_meta".

The output has the numpy broadcast shape of a and b (dimensions aligned from
the right; a dimension of 1 stretches) and the dtype of a.
"""

import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="BroadcastShape", outputs=("out",))
def broadcast_shape(a: TensorDesc, b: TensorDesc) -> TensorDesc:
    if a.dtype != b.dtype:
        raise TypeError("BroadcastShape: a is %s but b is %s" % (a.dtype, b.dtype))
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + a.shape
    sb = (1,) * (n - b.ndim) + b.shape
    shape = []
    for i, (da, db) in enumerate(zip(sa, sb)):
        if da == db or db == 1:
            shape.append(da)
        elif da == 1:
            shape.append(db)
        elif da == -1 or db == -1:  # -1: unknown dimension, stays unknown
            shape.append(-1)
        else:
            raise ValueError("BroadcastShape: shapes %s and %s do not broadcast (dimension %d: "
                             "%d vs %d)" % (list(a.shape), list(b.shape), i, da, db))
    return TensorDesc(shape=shape, dtype=a.dtype)
