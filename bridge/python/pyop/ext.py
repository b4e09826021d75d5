"""pyop.ext: the extension point for a layer that registers ops through pyop
with decorators of its own (the ge package is one). Op authors never need
it; they use the names of the pyop package.

A layer turns its own descriptions into pyop descriptors (subclasses of
OpProto / OpImpl with the same members), adds them to the load in progress
with add_descriptor, and checks what it is given with pyop's rules, so that a
rule lives in one place: op types and names (op_type_problem, check_name,
tested against tests/names.txt), annotations (classify_input,
classify_output, classify_attr, given the layer's own tensor and dtype
classes) and synchronous callbacks (check_sync_function, check_sync_method,
unawaited_result). Every name and its contract: docs/design.md §Extension.
tests/python/test_ext.py holds this module to that list and the ge package
to importing nothing of pyop but `pyop` and `pyop.ext`.
"""

from . import _native as native  # the bridge's module, None without the bridge
from ._registry import OpImpl, OpProto
from ._registry import _active, _add, _class_location, _module_label
from ._signature import (check_name, check_sync_function, check_sync_method, classify_attr,
                         classify_input, classify_output, op_type_problem, unawaited_result)
from ._types import CAP_COMPILE, CAP_EXECUTE, CAP_LAUNCH, INPUT_MUTATED, AttrType, IoKind

__all__ = ["AttrType", "IoKind", "CAP_EXECUTE", "CAP_COMPILE", "CAP_LAUNCH", "INPUT_MUTATED",
           "OpProto", "OpImpl", "add_descriptor", "load_state", "discard_descriptors",
           "op_type_problem", "check_name", "classify_input", "classify_output",
           "classify_attr", "check_sync_function", "check_sync_method", "unawaited_result",
           "class_location", "module_label", "native"]


def add_descriptor(desc):
    """Adds desc (an OpProto or OpImpl) to the load in progress; outside a
    load (a plugin imported by hand, a unit test) it does nothing."""
    _add(desc)


def load_state(name, factory):
    """The layer's state of the load in progress, made by factory() on first
    use and dropped with the load (so nothing survives from one load to the
    next); None outside a load. name keeps layers apart."""
    if not _active:
        return None
    states = _active[-1].layer_states
    st = states.get(name)
    if st is None:
        st = states[name] = factory()
    return st


def discard_descriptors(predicate):
    """Removes from the load in progress every descriptor for which
    predicate(desc) is true (they are not handed to libpyop); nothing
    outside a load."""
    if _active:
        _active[-1].discard(predicate)


def class_location(cls):
    """(file, line) of a class statement, as pyop reports it for its own
    implementations ("<unknown>", 0 when unknown)."""
    return _class_location(cls)


def module_label(module_name):
    """The plugin's name ('plugin_a') of a module pyop imported under a
    unique name, the name itself otherwise: what descriptor keys use."""
    return _module_label(module_name)
