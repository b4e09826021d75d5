"""What the pyop underneath supports of what GE plugins may declare: in-place
inputs (mutates_args) with ref outputs, ops without outputs, dynamic outputs
(libpyop's op contract) and Tensor attributes. Read from pyop itself, so a
GE prototype that needs a missing feature is refused at registration with an
error naming the op and the element, never run half-way."""

from pyop import _registry, _types

_CONTRACT = "output_kinds" in getattr(_registry.OpProto, "__slots__", ())
NO_OUTPUTS = _CONTRACT
DYNAMIC_OUTPUTS = _CONTRACT
MUTATES_ARGS = _CONTRACT and hasattr(_types, "INPUT_MUTATED")


def tensor_attr_type():
    """pyop's AttrType for Tensor attributes, or None."""
    return getattr(_types.AttrType, "TENSOR", None)
