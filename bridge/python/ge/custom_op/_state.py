"""Per-load state of the GE layer: the GE registries live on pyop's
collection of the load in progress (pyop._registry.collecting), so nothing
survives from one load to the next. Outside a load (a plugin imported by
hand, unit tests) they live in a module-level fallback."""

from pyop import _registry

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
    if _registry._active:
        coll = _registry._active[-1]
        st = getattr(coll, "ge_state", None)
        if st is None:
            st = coll.ge_state = State()
        return st
    return _fallback
