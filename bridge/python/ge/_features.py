"""What the pyop underneath supports of what GE plugins may declare.
Flipped on as libpyop's op contract grows (issue 10); until then a GE
prototype that needs a missing feature is refused at registration with an
error naming the op and the element, never run half-way."""

from pyop import _types

NO_OUTPUTS = False
DYNAMIC_OUTPUTS = False
MUTATES_ARGS = False


def tensor_attr_type():
    """pyop's AttrType for Tensor attributes, or None."""
    return getattr(_types.AttrType, "TENSOR", None)
