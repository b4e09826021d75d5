"""REG_OP files: the C++ prototypes (GE's REG_OP in an op-proto library)
that an implementation-only GE plugin binds to, read so a tool without the
engine -- `pyop list/check/run --proto FILE` -- can register them with
libpyop as host prototypes (pyop_register_host_prototype), which is what a
GE-style engine does from C. See docs/ge-plugins.md.

Two forms, chosen by the file's name:

- a C++ header (.h, .hpp, .hh, .hxx, .inc, .cc, .cpp, .cxx: CPP_SUFFIXES),
  read as GE's samples write it (REG_OP(AddCustom) .INPUT(x1,
  TensorType({DT_FLOAT})) ... .OP_END_FACTORY_REG(AddCustom);) by a reader
  of its own (_reg_op_cpp), nothing compiled or executed;
- any other name: Python statements, executed with REG_OP, TensorType,
  ListTensorType, Promote and DataType in scope:

    REG_OP("AddCustom").INPUT("x1", "T").INPUT("x2", "T").OUTPUT("y", "T") \\
        .DATATYPE("T", TensorType({DataType.DT_FLOAT})) \\
        .ATTR("alpha", "Float", 1.0).OP_END_FACTORY_REG()

read(path) returns the declarations of a file; each one's info() is what
pyop_register_host_prototype takes: op_type, line, inputs/outputs as (name,
pyop IoKind), attrs as (name, pyop AttrType, required, default),
input_dtypes/output_dtypes as (PYOP_DTYPE_BIT mask, symbol) per io (None:
that side unconstrained), and unusable: why libpyop cannot register it
(None: it can). A wrong declaration is a ReadError (a ValueError) naming the
line; a header REG_OP libpyop has no form for (a NamedAttrs attribute, a
subgraph, a type set of complex numbers only, a default that is not a
literal) is read but unusable, so the rest of a header stays usable.
"""

import math
import os
import re
import sys

from pyop.ext import AttrType, IoKind, check_name, op_type_problem

from .. import _convert
from ..graph.types import DataType
from .proto import check_op_type

__all__ = ["REG_OP", "TensorType", "ListTensorType", "Promote", "ReadError", "read",
           "CPP_SUFFIXES"]

# File names read as C++ headers; every other name is the Python form.
CPP_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".inc", ".cc", ".cpp", ".cxx")

# REG_OP attribute types (GE's ATTR/REQUIRED_ATTR type names) -> pyop's.
_TYPES = {
    "Int": AttrType.INT, "Float": AttrType.FLOAT, "Bool": AttrType.BOOL,
    "String": AttrType.STR, "AscendString": AttrType.STR, "Type": AttrType.DTYPE,
    "ListInt": AttrType.LIST_INT, "ListFloat": AttrType.LIST_FLOAT,
    "ListBool": AttrType.LIST_BOOL, "ListString": AttrType.LIST_STR,
    "ListAscendString": AttrType.LIST_STR, "ListType": AttrType.LIST_DTYPE,
    "ListListInt": AttrType.LIST_LIST_INT, "Tensor": AttrType.TENSOR,
}
# GE attribute types libpyop has no form for.
NO_FORM_TYPES = ("NamedAttrs", "ListNamedAttrs", "ListTensor", "Bytes")

_INT64 = (-(1 << 63), (1 << 63) - 1)
FLT_MAX = 3.4028234663852886e38

# GE's named type sets (TensorType::ALL() ...), as GE's graph/types.h
# defines their members (metadef inc/external/graph/types.h).
_NAMED = {
    "ALL": "BOOL COMPLEX128 COMPLEX64 DOUBLE FLOAT FLOAT16 INT16 INT32 INT64 INT8 QINT16 "
           "QINT32 QINT8 QUINT16 QUINT8 RESOURCE STRING UINT16 UINT32 UINT64 UINT8 BF16 "
           "COMPLEX32",
    "QuantifiedType": "QINT16 QINT32 QINT8 QUINT16 QUINT8",
    "OrdinaryType": "BOOL COMPLEX128 COMPLEX64 DOUBLE FLOAT FLOAT16 INT16 INT32 INT64 INT8 "
                    "UINT16 UINT32 UINT64 UINT8 BF16 COMPLEX32",
    "BasicType": "COMPLEX128 COMPLEX64 DOUBLE FLOAT FLOAT16 INT16 INT32 INT64 INT8 QINT16 "
                 "QINT32 QINT8 QUINT16 QUINT8 UINT16 UINT32 UINT64 UINT8 BF16 COMPLEX32",
    "NumberType": "COMPLEX128 COMPLEX64 DOUBLE FLOAT FLOAT16 INT16 INT32 INT64 INT8 QINT32 "
                  "QINT8 QUINT8 UINT16 UINT32 UINT64 UINT8 BF16 COMPLEX32",
    "RealNumberType": "DOUBLE FLOAT FLOAT16 INT16 INT32 INT64 INT8 UINT16 UINT32 UINT64 UINT8 "
                      "BF16",
    "ComplexDataType": "COMPLEX128 COMPLEX64 COMPLEX32",
    "IntegerDataType": "INT16 INT32 INT64 INT8 UINT16 UINT32 UINT64 UINT8",
    "SignedDataType": "INT16 INT32 INT64 INT8",
    "UnsignedDataType": "UINT16 UINT32 UINT64 UINT8",
    "FloatingDataType": "DOUBLE FLOAT FLOAT16",
    "IndexNumberType": "INT32 INT64",
    "UnaryDataType": "COMPLEX128 COMPLEX64 DOUBLE FLOAT FLOAT16 BF16 COMPLEX32",
    "FLOAT": "FLOAT FLOAT16 BF16",
}
NAMED_SETS = {k: frozenset(DataType["DT_" + n] for n in v.split()) for k, v in _NAMED.items()}


class ReadError(ValueError):
    """A wrong declaration. line: where (None: the Python form's traceback
    says)."""

    def __init__(self, message, line=None):
        super().__init__(message)
        self.line = line


class NoForm(ReadError):
    """A declaration libpyop has no form for (not a mistake of the file)."""


def check_op_type_at(op_type, line):
    """The op type rule (pyop.ext.op_type_problem) for a header's REG_OP
    (a non-empty identifier), as a ReadError at line."""
    why = op_type_problem(op_type)
    if why is not None:
        raise ReadError("REG_OP: op_type %r is not an op type libpyop can register: %s"
                        % (op_type, why), line)


class TensorType:
    """A set of GE DataTypes, as REG_OP's TensorType: TensorType({DT_FLOAT,
    DT_FLOAT16}), TensorType(DT_FLOAT), TensorType.ALL(), NumberType(), ...
    (NAMED_SETS)."""

    def __init__(self, types):
        if isinstance(types, (TensorType, DataType)):
            types = [types]
        if isinstance(types, (str, bytes)) or not hasattr(types, "__iter__"):
            raise TypeError("TensorType takes GE DataTypes (DataType.DT_FLOAT, ...) or a set "
                            "of them, got %r" % (types,))
        members = set()
        for t in types:
            if isinstance(t, TensorType):
                members |= t.types
            elif isinstance(t, DataType) and t != DataType.DT_MAX:
                members.add(t)
            else:
                raise TypeError("TensorType: %r is not a GE DataType (DataType.DT_FLOAT, ...)"
                                % (t,))
        self.types = frozenset(members)

    def pyop_mask(self):
        """(PYOP_DTYPE_BIT mask of the members libpyop can pass, [names of
        those it cannot], sorted)."""
        mask = 0
        for t in self.types:
            if t in _convert.HOST_DTYPES:
                mask |= 1 << int(_convert.dtype_to_pyop(t))
        return mask, sorted(t.name for t in self.types if t not in _convert.HOST_DTYPES)

    def __repr__(self):
        return "TensorType({%s})" % ", ".join(sorted(t.name for t in self.types))


for _name, _members in NAMED_SETS.items():
    setattr(TensorType, _name,
            staticmethod(lambda _m=_members: TensorType(_m)))


class ListTensorType:
    """DATATYPE(T, ListTensorType(TensorType(...))): the tensors of a
    dynamic io of type T each take a type of the set (not one for all)."""

    def __init__(self, tensor_type):
        if not isinstance(tensor_type, TensorType):
            raise TypeError("ListTensorType takes a TensorType, got %r" % (tensor_type,))
        self.tensor_type = tensor_type


class Promote:
    """DATATYPE(T, Promote({"T1", "T2"})): T is the promotion of other
    types; libpyop does not constrain it."""

    def __init__(self, syms):
        if isinstance(syms, str) or not all(isinstance(s, str) for s in syms):
            raise TypeError("Promote takes type names ({\"T1\", \"T2\"}), got %r" % (syms,))
        self.syms = tuple(syms)


def _check_number(where, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ReadError("%s: default %r is not a number" % (where, v))
    if math.isfinite(v) and abs(v) > FLT_MAX:
        raise ReadError("%s: default %r does not fit in float32 (GE stores float attributes "
                        "as float32)" % (where, v))
    return float(v)


def _check_int(where, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise ReadError("%s: default %r is not an int" % (where, v))
    if not _INT64[0] <= v <= _INT64[1]:
        raise ReadError("%s: default %d is outside int64" % (where, v))
    return v


def _check_bool(where, v):
    if not isinstance(v, bool):
        raise ReadError("%s: default %r is not a bool" % (where, v))
    return v


def _check_str(where, v):
    if not isinstance(v, str):
        raise ReadError("%s: default %r is not a str" % (where, v))
    if "\0" in v:
        raise ReadError("%s: default %r holds a NUL character" % (where, v))
    return v


def _list(where, v, one):
    if not isinstance(v, (list, tuple)):
        raise ReadError("%s: default %r is not a list" % (where, v))
    return [one(where, x) for x in v]


def _dtype(where, v):
    if isinstance(v, DataType) and v not in _convert.HOST_DTYPES:
        raise NoForm("default DataType.%s has no pyop form" % v.name)
    try:
        return _convert.dtype_to_pyop(v, where + " default")
    except (TypeError, ValueError) as e:
        raise ReadError(str(e)) from None


def _default(where, at, v):
    """pyop's default value of a REG_OP ATTR, checked as register_op checks
    GE's: an Int within int64, a Float within float32 (inf and nan
    allowed), a Bool a bool, a String without NUL (ReadError naming
    where)."""
    if at == AttrType.INT:
        return _check_int(where, v)
    if at == AttrType.FLOAT:
        return _check_number(where, v)
    if at == AttrType.BOOL:
        return _check_bool(where, v)
    if at == AttrType.STR:
        return _check_str(where, v)
    if at == AttrType.DTYPE:
        return _dtype(where, v)
    if at == AttrType.LIST_INT:
        return _list(where, v, _check_int)
    if at == AttrType.LIST_FLOAT:
        return _list(where, v, _check_number)
    if at == AttrType.LIST_BOOL:
        return _list(where, v, _check_bool)
    if at == AttrType.LIST_STR:
        return _list(where, v, _check_str)
    if at == AttrType.LIST_DTYPE:
        return _list(where, v, _dtype)
    if at == AttrType.LIST_LIST_INT:
        return [_list(where, r, _check_int) for r in _list(where, v, lambda w, x: x)]
    raise ReadError("%s: a Tensor attribute takes no default (use REQUIRED_ATTR)" % where)


class Proto:
    """One prototype being declared, shared by both forms: every check of
    a declaration lives here. Each method takes the line it is declared on
    (None in the Python form: the traceback says) and raises ReadError; a
    thing libpyop has no form for is an error too, unless lenient (a
    header): then the prototype is kept but unusable, with why."""

    def __init__(self, op_type, line=None, lenient=False):
        self.op_type = op_type
        self.line = line
        self.lenient = lenient
        self.where = "REG_OP(%r)" % op_type
        self.inputs, self.outputs, self.attrs = [], [], []
        self._io_types = {}  # (is_output, index) -> str symbol or TensorType
        self._symbols = {}   # name -> (TensorType, ListTensorType or Promote, line)
        self._uses = []      # (is_output, index, symbol, line)
        self.unusable = []

    def _no_form(self, line, why):
        if not self.lenient:
            raise ReadError("%s: %s" % (self.where, why), line)
        self.unusable.append("%s%s" % ("line %d: " % line if line else "", why))

    def _name(self, name, kind, line):
        try:
            check_name(name, kind, self.where)
        except ValueError as e:
            raise ReadError(str(e), line) from None
        # libpyop's rule: inputs and attributes share one namespace (the
        # parameters of one signature), outputs have their own.
        if kind == "output":
            taken = {n: "output" for n, _ in self.outputs}
        else:
            taken = {n: "input" for n, _ in self.inputs}
            taken.update({a[0]: "attribute" for a in self.attrs})
        if name in taken:
            raise ReadError("%s: %s %r is declared twice%s" % (
                self.where, kind, name, "" if taken[name] == kind else
                " (it is an %s already: inputs and attributes share their names)"
                % taken[name]), line)

    def io(self, output, name, kind, types=None, line=None):
        """An input (output False) or output; types: None (any), a type
        name declared with datatype(), a TensorType."""
        what = "output" if output else "input"
        self._name(name, what, line)
        table = self.outputs if output else self.inputs
        index = len(table)
        table.append((name, kind))
        if isinstance(types, str):
            try:
                check_name(types, "data type", "%s %s %r" % (self.where, what, name))
            except ValueError as e:
                raise ReadError(str(e), line) from None
            self._uses.append((output, index, types, line))
        elif isinstance(types, TensorType):
            self._io_types[(output, index)] = (types, line)
        elif types is not None:
            raise ReadError("%s %s %r: the type must be a TensorType or a type name declared "
                            "with DATATYPE, got %r" % (self.where, what, name, types), line)

    def datatype(self, symbol, types, line=None):
        """DATATYPE(symbol, TensorType | ListTensorType | Promote)."""
        try:
            check_name(symbol, "data type", self.where + " DATATYPE")
        except ValueError as e:
            raise ReadError(str(e), line) from None
        if symbol in self._symbols:
            raise ReadError("%s: DATATYPE(%s, ...) is declared twice" % (self.where, symbol),
                            line)
        if not isinstance(types, (TensorType, ListTensorType, Promote)):
            raise ReadError("%s: DATATYPE(%s, ...) takes a TensorType, ListTensorType or "
                            "Promote, got %r" % (self.where, symbol, types), line)
        self._symbols[symbol] = (types, line)

    def attr(self, name, type_name, required, default=None, line=None):
        self._name(name, "attribute", line)
        where = "%s ATTR(%r)" % (self.where, name)
        if type_name in NO_FORM_TYPES:
            self._no_form(line, "attr %r: unsupported custom op runtime attr type: %r (GE's %s "
                          "has no pyop form)" % (name, type_name, type_name))
            return
        at = _TYPES.get(type_name)
        if at is None:
            raise ReadError("%s attr %r: unsupported custom op runtime attr type: %r "
                            "(supported: %s)" % (self.where, name, type_name,
                                                 ", ".join(_TYPES)), line)
        if at == AttrType.TENSOR and not required:
            self._no_form(line, "attribute %r: a Tensor attribute with a default has no pyop "
                          "form (use REQUIRED_ATTR)" % name)
            return
        try:
            value = None if required else _default(where, at, default)
        except NoForm as e:
            self._no_form(line, "attribute %r: %s" % (name, e))
            return
        except ReadError as e:
            raise ReadError(str(e), line) from None
        self.attrs.append((name, at, required, value))

    def _mask(self, tt, what, line):
        mask, dropped = tt.pyop_mask()
        if not mask:
            self._no_form(line, "%s: %r allows no data type libpyop can pass (%s: no pyop "
                          "form)" % (what, tt, ", ".join(dropped)))
        return mask

    def _resolve(self):
        """Each io's (mask, symbol), from its own set or its type name."""
        sets = {}
        for (output, i), (tt, line) in self._io_types.items():
            name = (self.outputs if output else self.inputs)[i][0]
            what = "%s %r" % ("output" if output else "input", name)
            sets[(output, i)] = (self._mask(tt, what, line), "")
        for output, i, sym, line in self._uses:
            decl = self._symbols.get(sym)
            name = (self.outputs if output else self.inputs)[i][0]
            if decl is None:
                raise ReadError("%s: %s %r is of type %r, which no .DATATYPE(%s, ...) of this "
                                "REG_OP declares" % (self.where, "output" if output else
                                                     "input", name, sym, sym), line)
            types, dline = decl
            if isinstance(types, Promote):
                sets[(output, i)] = (0, "")
            elif isinstance(types, ListTensorType):
                sets[(output, i)] = (self._mask(types.tensor_type, "DATATYPE(%s)" % sym,
                                                dline), "")
            else:
                sets[(output, i)] = (self._mask(types, "DATATYPE(%s)" % sym, dline), sym)
        return sets

    def finish(self):
        """Resolves the type names once the declaration is complete
        (ReadError at the line of an io whose type name no DATATYPE
        declares)."""
        self._sets = self._resolve()

    def info(self):
        """What pyop_register_host_prototype takes (see the module's doc)."""
        sets = getattr(self, "_sets", None)
        if sets is None:
            sets = self._resolve()

        def side(output, table):
            got = [sets.get((output, i), (0, "")) for i in range(len(table))]
            return got if any(m or s for m, s in got) else None

        return {"op_type": self.op_type, "line": self.line, "inputs": list(self.inputs),
                "outputs": list(self.outputs), "attrs": list(self.attrs),
                "input_dtypes": side(False, self.inputs),
                "output_dtypes": side(True, self.outputs),
                "unusable": "; ".join(self.unusable) or None}


# ------------------------------------------------------ the Python form

_collecting = []  # the declarations of the file being executed
_reading = []     # its path


def _caller_line():
    """The line of the file being executed that is calling (None outside a
    read): every declaration of the Python form knows its line."""
    if not _reading:
        return None
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename != _reading[-1]:
        f = f.f_back
    return f.f_lineno if f is not None else None


def _types_arg(types):
    """The Python form's io type: a type name, a TensorType, a GE DataType
    or a list/set of them (a TensorType), or None."""
    if types is None or isinstance(types, (str, TensorType)):
        return types
    if isinstance(types, DataType) or isinstance(types, (list, tuple, set, frozenset)):
        return TensorType(types)
    return types


class REG_OP:
    """One prototype, declared like GE's REG_OP macro chain (names quoted)."""

    def __init__(self, op_type):
        check_op_type(op_type, "REG_OP")
        self.op_type = op_type
        self.line = _caller_line()
        self._proto = Proto(op_type, self.line)
        if _collecting:
            _collecting[-1].append(self)

    def _io(self, output, name, kind, types):
        if not isinstance(name, str) or not name:
            raise TypeError("REG_OP(%r): an input/output name must be a non-empty str, got %r"
                            % (self.op_type, name))
        self._proto.io(output, name, kind, _types_arg(types), _caller_line())
        return self

    def INPUT(self, name, types=None):
        return self._io(False, name, IoKind.REQUIRED, types)

    def OPTIONAL_INPUT(self, name, types=None):
        return self._io(False, name, IoKind.OPTIONAL, types)

    def DYNAMIC_INPUT(self, name, types=None):
        return self._io(False, name, IoKind.DYNAMIC, types)

    def OUTPUT(self, name, types=None):
        return self._io(True, name, IoKind.REQUIRED, types)

    def DYNAMIC_OUTPUT(self, name, types=None):
        return self._io(True, name, IoKind.DYNAMIC, types)

    def DATATYPE(self, name, types):
        if not isinstance(types, (ListTensorType, Promote)):
            types = _types_arg(types)
        self._proto.datatype(name, types, _caller_line())
        return self

    def ATTR(self, name, type, default):
        self._proto.attr(name, type, False, default, _caller_line())
        return self

    def REQUIRED_ATTR(self, name, type):
        self._proto.attr(name, type, True, None, _caller_line())
        return self

    def OP_END_FACTORY_REG(self, *args):
        return self

    def info(self):
        """{op_type, inputs, outputs, attrs, ...}: see the module's doc."""
        return self._proto.info()

    def __repr__(self):
        return "REG_OP(%r)" % self.op_type


# Lines of the Python form that are C++ REG_OP syntax (for the message).
_CPP_HINTS = ("#include", "#ifndef", "#define", "#pragma", "namespace ", "//", "/*")


def _looks_like_cpp(src):
    """The first line number of src that only a C++ header has, or None."""
    for n, line in enumerate(src.splitlines(), 1):
        s = line.strip()
        if s.startswith(_CPP_HINTS) or re.match(r"REG_OP\s*\(\s*[A-Za-z_]", s) or \
                re.match(r"\.\s*OP_END_FACTORY_REG\s*\(\s*[A-Za-z_]", s):
            return n
    return None


def _read_python(path, src):
    found = []
    _collecting.append(found)
    _reading.append(path)
    scope = {"REG_OP": REG_OP, "DataType": DataType, "TensorType": TensorType,
             "ListTensorType": ListTensorType, "Promote": Promote,
             "__name__": "__reg_op__", "__file__": path}
    try:
        exec(compile(src, path, "exec"), scope)
    except (SyntaxError, NameError) as e:
        n = _looks_like_cpp(src)
        if n is None:
            raise
        raise ReadError("line %d is C++ REG_OP syntax, but a file named %s is read as the "
                        "Python form (REG_OP(\"Name\").INPUT(\"x\") ..., names quoted): give "
                        "a C++ header a name ending in %s (%s: %s)"
                        % (n, os.path.basename(path), " or ".join(CPP_SUFFIXES[:3]),
                           type(e).__name__, e), n) from None
    finally:
        _collecting.pop()
        _reading.pop()
    for r in found:
        r._proto.finish()
    return found


def read(path):
    """The REG_OP declarations of the file at path, in order (a C++ header
    by its suffix, else the Python form). A UTF-8 BOM is skipped. Errors
    name the file; a ReadError gives the line, or the Python form's
    traceback does. A REG_OP declared twice is refused."""
    with open(path, encoding="utf-8-sig") as f:
        src = f.read()
    if path.lower().endswith(CPP_SUFFIXES):
        from . import _reg_op_cpp
        found = _reg_op_cpp.read(path, src)
    else:
        found = _read_python(path, src)
    seen = {}
    for r in found:
        line = r.line
        if r.op_type in seen:
            first = seen[r.op_type]
            raise ReadError("REG_OP(%r) is declared twice%s" % (
                r.op_type, " (first at line %d)" % first if first else ""), line)
        seen[r.op_type] = line
    return found
