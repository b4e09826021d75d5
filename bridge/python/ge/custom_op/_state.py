"""Per-load state of the GE layer: the GE registries live with pyop's load
in progress (pyop.ext.load_state), so nothing survives from one load to the
next. Outside a load (a plugin imported by hand, unit tests) they live in a
module-level fallback."""

from pyop import ext

__all__ = ["current", "State"]


class State:
    __slots__ = ("protos", "impls", "proto_types", "impl_types")

    def __init__(self):
        self.protos = {}       # descriptor_key -> OpProtoDescriptor
        self.impls = {}        # descriptor_key -> OpImplDescriptor
        self.proto_types = {}  # op_type -> descriptor_key
        self.impl_types = {}


_fallback = State()


def current():
    """The state of the load in progress, or the fallback."""
    st = ext.load_state("ge", State)
    return _fallback if st is None else st
