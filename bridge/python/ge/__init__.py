"""libpyop's host-only compatibility layer for CANN GE's Python API.

GE-style custom-op plugins import ge.custom_op, ge.runtime, ge.graph and
ge.graph.types; inside libpyop this package provides them on top of pyop,
so the plugins load and run unchanged on a host without an NPU. Anything
that needs an NPU fails where it is used, naming the element, the op and
the reason (see docs/ge-plugins.md).

The bridge makes this package importable as `ge` (nothing is added to
sys.path) unless a real CANN `ge` package is already imported, which is
then left alone.
"""

__all__ = ["custom_op", "runtime", "graph"]

# Marks libpyop's package (a real CANN ge has no such attribute).
__pyop_ge__ = True
