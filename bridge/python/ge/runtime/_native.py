"""ge.runtime._native: where GE's ge.runtime takes its types from (GE's
compiled module). libpyop's types are pure Python and live in ge.runtime;
this module names the same objects, so code that imports them from here
gets them."""

from . import (ExpandDimsType, Shape, StorageFormat, StorageShape, Tensor, TensorDesc,
               TensorPlacement)

__all__ = ["ExpandDimsType", "Shape", "StorageFormat", "StorageShape", "Tensor", "TensorDesc",
           "TensorPlacement"]
