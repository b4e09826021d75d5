"""ge.graph: GE's enums and the names of its graph-building classes.

DataType, Format and Placement are GE's (ge.graph.types). The graph classes
(Graph, Node, Operator, Tensor, TensorDesc, Shape, DumpFormat) are
importable but building graphs needs CANN GE: constructing one raises
NotImplementedError naming the class. They are not the ge.runtime classes
of the same names, and register_op rejects them.
"""

from .types import DataType, Format, Placement, AttrValueType

__all__ = ["DataType", "Format", "Placement", "AttrValueType", "Graph", "Node", "Operator",
           "Tensor", "TensorDesc", "Shape", "DumpFormat"]


class _GraphOnly:
    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError("ge.graph.%s: building GE graphs needs CANN GE; libpyop runs "
                                  "custom ops only (docs/ge-plugins.md)" % cls.__name__)


class Graph(_GraphOnly):
    __slots__ = ()


class Node(_GraphOnly):
    __slots__ = ()


class Operator(_GraphOnly):
    __slots__ = ()


class Tensor(_GraphOnly):
    """ge.graph.Tensor (graph building), not ge.runtime.Tensor."""
    __slots__ = ()


class TensorDesc(_GraphOnly):
    """ge.graph.TensorDesc (graph building), not ge.runtime.TensorDesc."""
    __slots__ = ()


class Shape(_GraphOnly):
    __slots__ = ()


class DumpFormat(_GraphOnly):
    __slots__ = ()
