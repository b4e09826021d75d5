"""REG_OP in Python: the C++ prototypes (GE's REG_OP in an op-proto library)
that an implementation-only GE plugin binds to, written down so a tool
without the engine -- `pyop list/check/run --proto FILE` -- can register
them with libpyop as host prototypes (pyop_register_host_prototype), which
is what a GE-style engine does from C. See docs/ge-plugins.md.

    # my_ops.reg_op (any file name; it is executed, not imported)
    REG_OP("AddCustom").INPUT("x1").INPUT("x2").OUTPUT("y") \\
        .ATTR("alpha", "Float", 1.0).OP_END_FACTORY_REG()

read(path) returns the declarations of a file; each one's info() is what
pyop_register_host_prototype takes: op_type, inputs/outputs as (name,
pyop IoKind), attrs as (name, pyop AttrType, required, default).
"""

from pyop.ext import AttrType, IoKind, check_name

from .. import _convert
from ..graph.types import DataType
from .proto import check_op_type

__all__ = ["REG_OP", "read"]

# REG_OP attribute types (GE's ATTR/REQUIRED_ATTR type names) -> pyop's.
_TYPES = {
    "Int": AttrType.INT, "Float": AttrType.FLOAT, "Bool": AttrType.BOOL,
    "String": AttrType.STR, "Type": AttrType.DTYPE, "ListInt": AttrType.LIST_INT,
    "ListFloat": AttrType.LIST_FLOAT, "ListBool": AttrType.LIST_BOOL,
    "ListString": AttrType.LIST_STR, "ListType": AttrType.LIST_DTYPE,
    "ListListInt": AttrType.LIST_LIST_INT, "Tensor": AttrType.TENSOR,
}


def _default(op_type, name, at, v):
    """pyop's default value of a REG_OP ATTR (TypeError naming the attr)."""
    where = "REG_OP(%r) ATTR(%r)" % (op_type, name)
    if at == AttrType.DTYPE:
        return _convert.dtype_to_pyop(v, where + " default")
    if at == AttrType.LIST_DTYPE:
        return [_convert.dtype_to_pyop(x, where + " default") for x in v]
    if at == AttrType.FLOAT:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError("%s: default %r is not a number" % (where, v))
        return float(v)
    if at == AttrType.LIST_FLOAT:
        return [float(x) for x in v]
    if at in (AttrType.LIST_INT, AttrType.LIST_BOOL, AttrType.LIST_STR):
        return list(v)
    if at == AttrType.LIST_LIST_INT:
        return [list(r) for r in v]
    return v


class REG_OP:
    """One prototype, declared like GE's REG_OP macro chain."""

    def __init__(self, op_type):
        check_op_type(op_type, "REG_OP")
        self.op_type = op_type
        self.inputs, self.outputs, self.attrs = [], [], []
        if _collecting:
            _collecting[-1].append(self)

    def _io(self, table, name, kind):
        if not isinstance(name, str) or not name:
            raise TypeError("REG_OP(%r): an input/output name must be a non-empty str, got %r"
                            % (self.op_type, name))
        check_name(name, "input" if table is self.inputs else "output", "REG_OP(%r)" % self.op_type)
        table.append((name, kind))
        return self

    def INPUT(self, name, types=None):
        return self._io(self.inputs, name, IoKind.REQUIRED)

    def OPTIONAL_INPUT(self, name, types=None):
        return self._io(self.inputs, name, IoKind.OPTIONAL)

    def DYNAMIC_INPUT(self, name, types=None):
        return self._io(self.inputs, name, IoKind.DYNAMIC)

    def OUTPUT(self, name, types=None):
        return self._io(self.outputs, name, IoKind.REQUIRED)

    def DYNAMIC_OUTPUT(self, name, types=None):
        return self._io(self.outputs, name, IoKind.DYNAMIC)

    def _type(self, name, t):
        check_name(name, "attribute", "REG_OP(%r)" % self.op_type)
        at = _TYPES.get(t)
        if at is None:
            raise ValueError("REG_OP(%r) attr %r: unsupported custom op runtime attr type: %r "
                             "(supported: %s)" % (self.op_type, name, t, ", ".join(_TYPES)))
        return at

    def ATTR(self, name, type, default):
        at = self._type(name, type)
        if at == AttrType.TENSOR:
            raise ValueError("REG_OP(%r) attr %r: a Tensor attribute takes no default (use "
                             "REQUIRED_ATTR)" % (self.op_type, name))
        self.attrs.append((name, at, False, _default(self.op_type, name, at, default)))
        return self

    def REQUIRED_ATTR(self, name, type):
        self.attrs.append((name, self._type(name, type), True, None))
        return self

    def OP_END_FACTORY_REG(self, *args):
        return self

    def info(self):
        """{op_type, inputs, outputs, attrs}: what pyop_register_host_prototype takes."""
        return {"op_type": self.op_type, "inputs": list(self.inputs),
                "outputs": list(self.outputs), "attrs": list(self.attrs)}

    def __repr__(self):
        return "REG_OP(%r)" % self.op_type


_collecting = []


def read(path):
    """The REG_OP declarations of the file at path (executed with REG_OP,
    DataType in scope). Errors name the file."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    found = []
    _collecting.append(found)
    try:
        exec(compile(src, path, "exec"), {"REG_OP": REG_OP, "DataType": DataType,
                                          "__name__": "__reg_op__", "__file__": path})
    finally:
        _collecting.pop()
    seen = set()
    for r in found:
        if r.op_type in seen:
            raise ValueError("%s: REG_OP(%r) is declared twice" % (path, r.op_type))
        seen.add(r.op_type)
    return found
