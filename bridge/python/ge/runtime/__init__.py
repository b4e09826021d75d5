"""ge.runtime: the runtime value types a GE plugin sees (host-only copies
provided by libpyop).

Tensor is a view handed to execute / declare_launch_args: addr is the host
address of the data, and the Tensor and every view reached through it are
valid only during that call (RuntimeError afterwards). There is no buffer
protocol, as in GE: read and write through addr (ctypes).

The types live in one module each and are re-exported here, which is the
only place plugins and the rest of the ge package import them from:
  _scope   validity (_Scope, _OwnerScope) and argument checks
  _shape   Shape, StorageShape (MAX_DIM_NUM)
  _format  ExpandDimsType, StorageFormat, TensorPlacement
  _tensor  TensorDesc, Tensor and the bridge's input view _View
Their __module__ stays "ge.runtime" (repr, pickle, GE's own layout).
"""

import reprlib  # noqa: F401  (importable from here before the split)

from pyop import ext  # noqa: F401  (idem)

from ..graph.types import DataType, Format  # noqa: F401  (idem)
from .. import _convert  # noqa: F401  (idem)
from ._scope import (_OwnerScope, _Scope, _check, _exact_int, _index, _owner_del,  # noqa: F401
                     _writable)
from ._shape import (MAX_DIM_NUM, Shape, StorageShape, _INT64_MIN, _SHAPE_KINDS,  # noqa: F401
                     _dims_from, _dims_seq)
from ._format import ExpandDimsType, StorageFormat, TensorPlacement
from ._tensor import (Tensor, TensorDesc, _View, _ViewBase, _desc_dtype,  # noqa: F401
                      _desc_shape, _new)

__all__ = ["Tensor", "TensorDesc", "Shape", "StorageShape", "StorageFormat",
           "ExpandDimsType", "TensorPlacement"]

for _cls in (_Scope, _OwnerScope, Shape, StorageShape, ExpandDimsType, StorageFormat,
             TensorPlacement, TensorDesc, Tensor, _View):
    _cls.__module__ = __name__
del _cls
