"""register_op with GE's rules (CANN GE ge.custom_op.register_op).

The decorated function's signature is the op's prototype (IR): positional
parameters are inputs (TensorDesc required, Optional[TensorDesc] optional,
List[TensorDesc] dynamic; no defaults), keyword-only parameters are
attributes (GE's twelve types, exact-type defaults), the return annotation
gives the outputs (None, TensorDesc, List[TensorDesc] or a Tuple of them),
named output<i> (a mutated input's own name for a ref output).
GE's verdicts are kept: the same exception types, with GE's prefix
"register_op op_type '<T>' failed: " and the op and parameter named.

Each prototype is also handed to pyop as an ordinary prototype
(GeOpProto), so libpyop's registry, pyop list/check/run and the C API see
it; names and enum values are translated by name (ge._convert).
"""

import dataclasses
import inspect
import math
import reprlib
import struct
import sys
import types
import typing

import pyop  # noqa: F401  (importable from here before _values.py)
from pyop import ext
from pyop.ext import AttrType, IoKind

from .. import _convert
from ..graph.types import DataType
from ..runtime import Tensor, TensorDesc, _Scope
from . import _state
from ._values import (_dt_from, attr_from_pyop, desc_from_pyop,  # noqa: F401
                      desc_to_pyop, f32, wrap_tensor)
from ._ir_types import InputType, OutputType

# No __all__, as in GE.

# Input kinds (GE's numbering): REQUIRED 0, OPTIONAL 1, DYNAMIC 2.
# Output kinds: REQUIRED 0, DYNAMIC 1.
REQUIRED, OPTIONAL, DYNAMIC = 0, 1, 2
OUT_REQUIRED, OUT_DYNAMIC = 0, 1

FLT_MAX = 3.4028234663852886e38

# IR type -> (python element type, is list, is list of lists)
IR_TYPES = {
    "VT_INT": (int, 0), "VT_FLOAT": (float, 0), "VT_BOOL": (bool, 0),
    "VT_STRING": (str, 0), "VT_DATA_TYPE": (DataType, 0), "VT_TENSOR": (Tensor, 0),
    "VT_LIST_INT": (int, 1), "VT_LIST_FLOAT": (float, 1), "VT_LIST_BOOL": (bool, 1),
    "VT_LIST_STRING": (str, 1), "VT_LIST_DATA_TYPE": (DataType, 1),
    "VT_LIST_LIST_INT": (int, 2),
}
# IR type -> pyop's AttrType: the one table between the two namings
# (IR_OF_PYOP is its inverse).
PYOP_ATTR = {
    "VT_INT": AttrType.INT, "VT_FLOAT": AttrType.FLOAT, "VT_BOOL": AttrType.BOOL,
    "VT_STRING": AttrType.STR, "VT_DATA_TYPE": AttrType.DTYPE, "VT_TENSOR": AttrType.TENSOR,
    "VT_LIST_INT": AttrType.LIST_INT, "VT_LIST_FLOAT": AttrType.LIST_FLOAT,
    "VT_LIST_BOOL": AttrType.LIST_BOOL, "VT_LIST_STRING": AttrType.LIST_STR,
    "VT_LIST_DATA_TYPE": AttrType.LIST_DTYPE, "VT_LIST_LIST_INT": AttrType.LIST_LIST_INT,
}
IR_OF_PYOP = {at: ir for ir, at in PYOP_ATTR.items()}
_NO_DEFAULT = object()
_NoneType = type(None)


def _fail(op_type, exc_type, msg):
    return exc_type("register_op op_type %r failed: %s" % (op_type, msg))


def _caller_where(depth):
    """' at file:line' of the plugin line `depth` frames up, or ''."""
    try:
        f = sys._getframe(depth + 1)
    except ValueError:
        return ""
    return " at %s:%d" % (f.f_code.co_filename, f.f_lineno)


def check_op_type(op_type, who="register_op", depth=2):
    """GE's TypeError for a non-str or empty op type; an op type libpyop
    cannot register (not ASCII, a space, ...) is a ValueError with pyop's
    reason (ext.op_type_problem, the one rule). Both name the plugin's
    file:line (the decorator's caller, `depth` frames up)."""
    if not isinstance(op_type, str) or not op_type:
        raise TypeError("%s op_type must be a non-empty string, got %r%s"
                        % (who, op_type, _caller_where(depth)))
    why = ext.op_type_problem(op_type)
    if why is not None:
        raise ValueError("%s: op_type %r%s is not an op type libpyop can register: %s"
                         % (who, op_type, _caller_where(depth), why))


def is_tensor_type(t):
    """ge.runtime.TensorDesc / Tensor (never the ge.graph classes)."""
    return t is TensorDesc or t is Tensor


def _origin(ann):
    return typing.get_origin(ann)


def _optional_arg(ann):
    """X for typing.Optional[X] / Union[X, None]; None otherwise."""
    if _origin(ann) is typing.Union:
        args = typing.get_args(ann)
        if len(args) == 2 and _NoneType in args:
            return args[0] if args[1] is _NoneType else args[1]
    return None


def _is_pep604(ann):
    return hasattr(types, "UnionType") and isinstance(ann, types.UnionType)


def input_kind(ann, is_tensor=is_tensor_type):
    """GE input kind of an annotation (GE's numbers equal pyop's IoKind
    values), or None; pyop's parser (ext.classify_input) with GE's tensor
    classes."""
    k = ext.classify_input(ann, is_tensor)
    return None if k is None else int(k)


def output_kind(ann, is_tensor=is_tensor_type):
    """GE output kind (OUT_REQUIRED, OUT_DYNAMIC) of one output annotation,
    or None (ext.classify_output)."""
    k = ext.classify_output(ann, is_tensor)
    return None if k is None else OUT_DYNAMIC if k == IoKind.DYNAMIC else OUT_REQUIRED


def _is_ge_tensor(t):
    return t is Tensor


def attr_ir_type(ann):
    """IR type string of an attribute annotation, or None: pyop's parser
    (ext.classify_attr) with GE's DataType and Tensor."""
    at = ext.classify_attr(ann, DataType, _is_ge_tensor)
    return None if at is None else IR_OF_PYOP[at]


def _short(v):
    """The type and a bounded repr of a value, for a message."""
    return "%s %s" % (type(v).__name__, reprlib.repr(v))


def _check_default(name, ir, v):
    """None when v is a valid default of attribute `name` of IR type ir,
    else the TypeError's text (GE's words, then the value)."""
    elem, depth = IR_TYPES[ir]
    if ir == "VT_TENSOR":
        return ("Tensor attr %r does not support a default value (got %s; a Tensor "
                "attribute is given by the host)" % (name, _short(v)))
    what = "default value for attr %r" % name

    def scalar_bad(x, inside):
        if type(x) is not elem:
            if inside:
                return "%s contains %s, expected %s" % (what, _short(x), elem.__name__)
            return "%s must be %s, got %s" % (what, elem.__name__, _short(x))
        if elem is DataType and x == DataType.DT_MAX:
            return "%s must %s, got DataType.DT_MAX" % (
                what, "contain valid DataType values" if inside else "be a valid DataType")
        return None

    if depth == 0:
        return scalar_bad(v, False)
    if type(v) is not list:
        return "%s must be list, got %s" % (what, _short(v))
    for x in v:
        if depth == 2:
            if type(x) is not list:
                return "%s contains %s, expected list (a row of a List[List[int]])" \
                    % (what, _short(x))
            bad = next(filter(None, (scalar_bad(y, True) for y in x)), None)
        else:
            bad = scalar_bad(x, True)
        if bad:
            return bad
    return None


_INT64 = (-(1 << 63), (1 << 63) - 1)


def _int_overflow(ir, v):
    """The first value of an int attribute default outside int64, or None."""
    if ir == "VT_INT":
        vals = [v]
    elif ir == "VT_LIST_INT":
        vals = v
    elif ir == "VT_LIST_LIST_INT":
        vals = [x for row in v for x in row]
    else:
        return None
    for x in vals:
        if not _INT64[0] <= x <= _INT64[1]:
            return x
    return None


def _float_overflows(ir, v):
    vals = [v] if ir == "VT_FLOAT" else (v if ir == "VT_LIST_FLOAT" else [])
    return any(math.isfinite(x) and abs(x) > FLT_MAX for x in vals)


def _canon(v):
    """A comparable form of a default (NaN equals NaN)."""
    if isinstance(v, float):
        return ("f", struct.pack("<d", v) if not math.isnan(v) else b"nan")
    if isinstance(v, list):
        return ("l", tuple(_canon(x) for x in v))
    return (type(v).__name__, v)


class _ProtoIR:
    """libpyop's parsed GE prototype (the public descriptor is
    OpProtoDescriptor): op_type, descriptor_key, inputs ((name, kind), ...),
    attrs ((name, ir_type, default or None, has_default), ...), outputs
    ((name, kind), ...), mutates {output_index: input_name}, func."""

    __slots__ = ("op_type", "descriptor_key", "inputs", "attrs", "outputs", "mutates",
                 "func", "file", "line")

    def __init__(self, op_type, key, inputs, attrs, outputs, mutates, func, file, line):
        self.op_type = op_type
        self.descriptor_key = key
        self.inputs = inputs
        self.attrs = attrs
        self.outputs = outputs
        self.mutates = mutates
        self.func = func
        self.file = file
        self.line = line

    def content(self):
        return (self.op_type, self.inputs,
                tuple((n, t, _canon(d) if h else None, h) for n, t, d, h in self.attrs),
                self.outputs, tuple(sorted(self.mutates.items())))

    def __repr__(self):
        return "<ge prototype IR %s (%s)>" % (self.op_type, self.descriptor_key)


def _freeze(v):
    """A default as GE's descriptor keeps it: lists become tuples."""
    return tuple(_freeze(x) for x in v) if isinstance(v, list) else v


def _thaw(v):
    return [_thaw(x) for x in v] if isinstance(v, tuple) else v


@dataclasses.dataclass(frozen=True)
class OpInput:
    name: str
    index: int
    kind: InputType


@dataclasses.dataclass(frozen=True)
class OpAttr:
    name: str
    index: int
    type: str
    is_required: bool
    default: object = None

    def __post_init__(self):
        # a list default (also one given by hand) is kept as tuples, as GE does
        object.__setattr__(self, "default", _freeze(self.default))


@dataclasses.dataclass(frozen=True)
class OpOutput:
    name: str
    index: int
    kind: OutputType


@dataclasses.dataclass(frozen=True)
class OpProtoDescriptor:
    """GE's registered prototype (fn.__ge_op_proto_descriptor__)."""

    descriptor_key: str
    op_type: str
    module_name: str
    func_name: str
    inputs: tuple
    attrs: tuple
    outputs: tuple
    infer_func: object = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self):
        for f in ("inputs", "attrs", "outputs"):
            object.__setattr__(self, f, tuple(getattr(self, f)))

    def to_bridge_dict(self):
        return {"descriptor_key": self.descriptor_key, "op_type": self.op_type,
                "module_name": self.module_name, "func_name": self.func_name,
                "inputs": [{"name": i.name, "kind": int(i.kind)} for i in self.inputs],
                "attrs": [{"name": a.name, "type": a.type, "is_required": a.is_required,
                           "default": _thaw(a.default)} for a in self.attrs],
                "outputs": [{"name": o.name, "kind": int(o.kind)} for o in self.outputs]}


def _public(ir):
    fn = ir.func
    d = OpProtoDescriptor(
        ir.descriptor_key, ir.op_type, fn.__module__, fn.__qualname__,
        tuple(OpInput(n, i, InputType(k)) for i, (n, k) in enumerate(ir.inputs)),
        tuple(OpAttr(n, i, t, not h, _freeze(d) if h else None)
              for i, (n, t, d, h) in enumerate(ir.attrs)),
        tuple(OpOutput(n, i, OutputType(k)) for i, (n, k) in enumerate(ir.outputs)),
        fn)
    object.__setattr__(d, "_pyop_ir", ir)
    return d


def _hints(fn, op_type):
    try:
        return typing.get_type_hints(fn)
    except Exception as e:  # NameError, SyntaxError, TypeError...
        raise _fail(op_type, TypeError, "cannot resolve the annotations of %s: %s: %s"
                    % (getattr(fn, "__qualname__", fn), type(e).__name__, e)) from None


def _parse_outputs(ret, op_type):
    """GE output kinds of the return annotation ret (_NO_DEFAULT: none)."""
    expected = "expected None, TensorDesc, List[TensorDesc] or a Tuple of them"
    if ret is _NO_DEFAULT:
        raise _fail(op_type, TypeError, "register_op return type annotation is required: add a "
                    "return annotation (%s)" % expected[len("expected "):])
    if ret is None or ret is _NoneType:
        return []

    one = output_kind
    k = one(ret)
    if k is not None:
        return [k]
    if _origin(ret) is tuple:
        args = typing.get_args(ret)
        if not args or args == ((),):
            raise _fail(op_type, TypeError, "unsupported return annotation: %r (an empty Tuple; "
                        "%s)" % (ret, expected))
        kinds = []
        for i, a in enumerate(args):
            if a is Ellipsis:
                raise _fail(op_type, TypeError, "unsupported return annotation: %r (Tuple[X, "
                            "...] is not accepted: list each output)" % (ret,))
            k = one(a)
            if k is None:
                raise _fail(op_type, TypeError, "unsupported return annotation at output index "
                            "%d: %r (expected TensorDesc or List[TensorDesc])" % (i, a))
            kinds.append(k)
        return kinds
    raise _fail(op_type, TypeError, "unsupported return annotation: %r (%s)" % (ret, expected))


def _parse_mutates(mutates_args, input_names, n_outputs, op_type):
    """{output_index: input_name} from either form of mutates_args."""
    if isinstance(mutates_args, (str, bytes)) or not isinstance(mutates_args, (list, tuple)):
        raise _fail(op_type, TypeError, "mutates_args must be a list or tuple of input names "
                    "or of (input_name, output_index) pairs, got %r" % (mutates_args,))
    entries = list(mutates_args)
    if not entries:
        return {}
    explicit = [isinstance(e, (list, tuple)) for e in entries]
    if any(explicit) and not all(explicit):
        raise _fail(op_type, TypeError, "mutates_args mixes input names and "
                    "(input_name, output_index) pairs: %r" % (mutates_args,))
    pairs = []
    if all(explicit):
        for e in entries:
            if len(e) != 2 or not isinstance(e[0], str) or type(e[1]) is not int:
                raise _fail(op_type, TypeError, "mutates_args entry %r: expected a "
                            "(input_name: str, output_index: int) pair" % (e,))
            if not 0 <= e[1] < n_outputs:
                raise _fail(op_type, ValueError, "mutates_args entry %r: output index %d out of "
                            "range (the op has %d outputs)" % (e, e[1], n_outputs))
            pairs.append((e[0], e[1]))
    else:
        for i, e in enumerate(entries):
            if not isinstance(e, str):
                raise _fail(op_type, TypeError, "mutates_args entry %r is not an input name"
                            % (e,))
        if len(entries) > n_outputs:
            raise _fail(op_type, ValueError, "mutates_args names %d inputs but the op has %d "
                        "outputs (entry i binds output i)" % (len(entries), n_outputs))
        pairs = [(name, i) for i, name in enumerate(entries)]
    out = {}
    bound = set()
    for name, idx in pairs:
        if name not in input_names:
            raise _fail(op_type, ValueError, "mutates_args: %r is not an input (inputs: %s)"
                        % (name, ", ".join(input_names) or "none"))
        if name in bound:
            raise _fail(op_type, ValueError, "mutates_args: input %r is bound twice" % name)
        if idx in out:
            raise _fail(op_type, ValueError, "mutates_args: output %d is bound twice" % idx)
        bound.add(name)
        out[idx] = name
    return out


def _output_names(input_names, kinds, mutates):
    taken = set(input_names)
    names = []
    for i, _ in enumerate(kinds):
        if i in mutates:
            name = mutates[i]
        else:
            base = name = "output%d" % i
            k = 0
            while name in taken:
                k += 1
                name = "%s_%d" % (base, k)
        taken.add(name)
        names.append(name)
    return names


_ATTR_TYPES_TEXT = ("int, float, bool, str, DataType, Tensor, List[int], List[float], "
                    "List[bool], List[str], List[DataType] or List[List[int]]")


def _parse_input(p, ann, op_type):
    """The GE input kind of positional parameter p (annotation ann, or
    _NO_DEFAULT when it has none), in GE's order of checks."""
    if ann is _NO_DEFAULT:
        raise _fail(op_type, TypeError, "input %r must have a type annotation (TensorDesc, "
                    "Optional[TensorDesc] or List[TensorDesc])" % p.name)
    if p.default is not p.empty:
        raise _fail(op_type, TypeError, "input %r must not have a default value (got %s); "
                    "an optional input is Optional[TensorDesc]" % (p.name, _short(p.default)))
    if _is_pep604(ann):
        raise _fail(op_type, TypeError, "unsupported input annotation for %r: 'TensorDesc | "
                    "None' is not accepted, write Optional[TensorDesc]" % p.name)
    kind = input_kind(ann)
    if kind is None:
        raise _fail(op_type, TypeError, "unsupported input annotation for %r: %r (expected "
                    "TensorDesc, Optional[TensorDesc] or List[TensorDesc], ge.runtime's, not "
                    "ge.graph's; attributes are keyword-only)" % (p.name, ann))
    return kind


def _parse_attr(p, ann, op_type):
    """(name, ir_type, default, has_default) of keyword-only parameter p."""
    if ann is _NO_DEFAULT:
        raise _fail(op_type, TypeError, "attr %r must have a type annotation (%s)"
                    % (p.name, _ATTR_TYPES_TEXT))
    if p.default is None:
        inner = _optional_arg(ann)
        if inner is not None:
            ann = inner
    ir = attr_ir_type(ann)
    if ir is None:
        raise _fail(op_type, TypeError, "unsupported attr annotation for %r: %r (expected %s)"
                    % (p.name, ann, _ATTR_TYPES_TEXT))
    if p.default is p.empty:
        return (p.name, ir, None, False)
    why = _check_default(p.name, ir, p.default)
    if why:
        raise _fail(op_type, TypeError, why)
    big = _int_overflow(ir, p.default)
    if big is not None:
        raise _fail(op_type, ValueError, "default value for attr %r does not fit in int64: %d "
                    "(GE stores int attributes as int64)" % (p.name, big))
    if _float_overflows(ir, p.default):
        raise _fail(op_type, ValueError, "default value for attr %r does not fit in float32: %s"
                    % (p.name, reprlib.repr(p.default)))
    return (p.name, ir, p.default, True)


def parse(fn, op_type, mutates_args=()):
    """The _ProtoIR of fn under GE's rules (GE's exception types, with GE's
    words first in each message, then what libpyop knows)."""
    if not inspect.isfunction(fn):
        raise _fail(op_type, TypeError, "register_op expects a Python function (a def), got %s"
                    % _short(fn))
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise _fail(op_type, TypeError, "cannot read the signature: %s" % e) from None
    hints = _hints(fn, op_type)
    inputs, attrs = [], []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise _fail(op_type, TypeError, "register_op does not support variadic parameter "
                        "%r (inputs are positional parameters, attributes keyword-only)"
                        % p.name)
        ext.check_name(p.name, "attribute" if p.kind == p.KEYWORD_ONLY else "input",
                       "register_op op_type %r failed" % op_type)
        ann = hints.get(p.name, _NO_DEFAULT)
        if p.kind == p.KEYWORD_ONLY:
            attrs.append(_parse_attr(p, ann, op_type))
        else:
            inputs.append((p.name, _parse_input(p, ann, op_type)))
    kinds = _parse_outputs(hints.get("return", _NO_DEFAULT), op_type)
    input_names = [n for n, _ in inputs]
    mutates = _parse_mutates(mutates_args, input_names, len(kinds), op_type)
    names = _output_names(input_names, kinds, mutates)
    code = fn.__code__
    key = "%s:%s:%s" % (fn.__module__, fn.__qualname__, op_type)
    return _ProtoIR(op_type, key, tuple(inputs), tuple(attrs),
                    tuple(zip(names, kinds)), mutates, fn,
                    code.co_filename, code.co_firstlineno)


def _source(label, ir):
    fn = ir.func
    return "%s source: module_name.func_name '%s.%s', descriptor_key '%s'" % (
        label, fn.__module__, fn.__qualname__, ir.descriptor_key)


def _sources(old, new):
    """GE's two "existing source" / "current source" clauses of a
    conflict, and where the existing one was declared."""
    return "%s; %s (the existing one at %s:%d)" % (
        _source("existing", old), _source("current", new), old.file, old.line)


def register_op(*, op_type, mutates_args=()):
    """Decorator: GE's register_op. Both arguments are keyword-only."""
    check_op_type(op_type)
    loc = _caller_where(1)

    def decorate(fn):
        ext.check_sync_function(fn, op_type, "infer_meta", loc[len(" at "):] or "<unknown>")
        code = getattr(fn, "__code__", None)
        at = (" at %s:%d" % (code.co_filename, code.co_firstlineno)) if code else loc
        try:
            ir = parse(fn, op_type, mutates_args)
            st = _state.current()
            old = st.protos.get(ir.descriptor_key)
            if old is not None:
                if old._pyop_ir.content() != ir.content():
                    raise _fail(op_type, ValueError, "python op proto descriptor content "
                                "changed for descriptor_key %r; %s" % (
                                    ir.descriptor_key, _sources(old._pyop_ir, ir)))
                fn.__ge_op_proto_descriptor__ = old
                return fn
            other = st.proto_types.get(op_type)
            if other is not None:
                old = st.protos[other]._pyop_ir
                raise _fail(op_type, ValueError, "python op proto op type %r already registered "
                            "by %r; %s" % (op_type, other, _sources(old, ir)))
            pdesc = to_pyop(ir)  # may refuse what this libpyop cannot run
        except (TypeError, ValueError, NotImplementedError) as e:
            raise type(e)("%s (%s)" % (e, at[len(" at "):])) from None
        desc = _public(ir)
        st.protos[ir.descriptor_key] = desc
        st.proto_types[op_type] = ir.descriptor_key
        ext.add_descriptor(pdesc)
        fn.__ge_op_proto_descriptor__ = desc
        return fn

    return decorate


def get_registered_op_protos():
    """The prototypes registered in the load in progress (or by hand),
    sorted by op type, as GE returns them."""
    return sorted(_state.current().protos.values(), key=lambda d: d.op_type)


def get_registered_op_proto_dicts():
    return [d.to_bridge_dict() for d in get_registered_op_protos()]


def get_registered_op_proto_by_descriptor_key(descriptor_key):
    return _state.current().protos.get(descriptor_key)


def get_registered_op_proto_by_op_type(op_type):
    st = _state.current()
    key = st.proto_types.get(op_type)
    return st.protos.get(key) if key is not None else None


def clear_registered_op_protos():
    """Forgets the GE prototypes registered so far (in a load: they are
    not handed to libpyop either, as clear_registered_op_impls does for
    the implementations; an op type registered again after it is then
    the only definition, not a conflict with the cleared one)."""
    st = _state.current()
    keys = set(st.protos)
    st.protos.clear()
    st.proto_types.clear()
    ext.discard_descriptors(lambda d: isinstance(d, GeOpProto) and d.ge.descriptor_key in keys)


# ------------------------------------------------------------ to pyop


def pyop_attr(name, ir, default, has_default, op_type):
    """(pyop AttrType, pyop default) of a GE attribute.

    A DataType attribute is pyop's DataType when its default (if any) has a
    host form; otherwise it travels as pyop int holding GE's number (the
    host then passes GE numbers), so every GE DataType stays a valid value.
    """
    at = PYOP_ATTR[ir]
    if ir == "VT_TENSOR":
        return at, None
    if not has_default:
        return at, None
    if ir == "VT_DATA_TYPE":
        if default in _convert.HOST_DTYPES:
            return at, _convert.dtype_to_pyop(default)
        return AttrType.INT, int(default)
    if ir == "VT_LIST_DATA_TYPE":
        if all(d in _convert.HOST_DTYPES for d in default):
            return at, [_convert.dtype_to_pyop(d) for d in default]
        return AttrType.LIST_INT, [int(d) for d in default]
    if ir in ("VT_LIST_INT", "VT_LIST_FLOAT", "VT_LIST_BOOL", "VT_LIST_STRING"):
        return at, list(default)
    if ir == "VT_LIST_LIST_INT":
        return at, [list(r) for r in default]
    return at, default


class GeOpProto(ext.OpProto):
    """pyop's view of a GE prototype; .ge is the OpProtoDescriptor."""

    __slots__ = ("ge",)


def _make_infer(desc):
    inputs = desc.inputs
    attrs = desc.attrs
    outputs = desc.outputs
    fn = desc.func
    op_type = desc.op_type

    def infer_meta(*args, **kw):
        ge_args = []
        for (name, kind), a in zip(inputs, args):
            if kind == DYNAMIC:
                ge_args.append([desc_from_pyop(x) for x in a])
            else:
                ge_args.append(None if a is None else desc_from_pyop(a))
        scope = None
        ge_kw = {}
        for n, t, _, _ in attrs:
            if n not in kw:
                continue
            if t == "VT_TENSOR":
                if scope is None:
                    scope = _Scope("op %r: a Tensor attribute given to infer_meta" % op_type)
                ge_kw[n] = wrap_tensor(scope, kw[n])
            else:
                ge_kw[n] = attr_from_pyop(t, kw[n])
        try:
            r = fn(*ge_args, **ge_kw)
        finally:
            if scope is not None:
                scope.valid = False
        what = "op %r: infer_meta (%s)" % (op_type, fn.__qualname__)
        if not outputs:
            if r is not None:
                raise TypeError("%s: the op has no outputs, it returned %r" % (what, r))
            return None
        if len(outputs) == 1:
            if outputs[0][1] == OUT_DYNAMIC and not isinstance(r, (list, tuple)):
                raise TypeError("infer_meta output[0] is dynamic, must return list, got %s "
                                "(%s)" % (type(r).__name__, what))
            r = (r,)
        elif not isinstance(r, (tuple, list)):
            raise TypeError("infer_meta must return list/tuple for multiple outputs, got %s "
                            "(%s)" % (type(r).__name__, what))
        elif len(r) != len(outputs):
            raise TypeError("infer_meta return count %d != output count %d (%s)"
                            % (len(r), len(outputs), what))
        out = []
        for i, ((name, kind), d) in enumerate(zip(outputs, r)):
            if kind == OUT_DYNAMIC:
                if not isinstance(d, (list, tuple)):
                    raise TypeError("infer_meta output[%d] is dynamic, must return list (%s: "
                                    "output %r, got %s)" % (i, what, name, type(d).__name__))
                for x in d:
                    if not isinstance(x, TensorDesc):
                        raise TypeError("infer_meta output[%d] must be TensorDesc, got %s (%s: "
                                        "output %r)" % (i, type(x).__name__, what, name))
                out.append([desc_to_pyop(x, "%s: output %r" % (what, name)) for x in d])
            else:
                if not isinstance(d, TensorDesc):
                    raise TypeError("infer_meta output[%d] must be TensorDesc, got %s (%s: "
                                    "output %r)" % (i, type(d).__name__, what, name))
                out.append(desc_to_pyop(d, "%s: output %r" % (what, name)))
        return out[0] if len(out) == 1 else tuple(out)

    infer_meta.__qualname__ = fn.__qualname__
    infer_meta.__module__ = fn.__module__
    infer_meta.__wrapped__ = fn
    return infer_meta


def label(module):
    return ext.module_label(module)


def to_pyop(desc):
    """The GeOpProto of desc; refuses, naming op and element, what this
    libpyop cannot represent."""
    op_type = desc.op_type
    inputs = tuple((n, IoKind(k)) for n, k in desc.inputs)
    attrs = []
    for n, ir, d, has in desc.attrs:
        at, pd = pyop_attr(n, ir, d, has, op_type)
        attrs.append((n, at, not has, pd))
    outputs = tuple(n for n, _ in desc.outputs)
    key = "ge:%s:%s:%s" % (label(desc.func.__module__), desc.func.__qualname__, op_type)
    extra = {}
    kinds = tuple(IoKind.DYNAMIC if k == OUT_DYNAMIC else IoKind.REQUIRED
                  for _, k in desc.outputs)
    extra["output_kinds"] = kinds if any(k == IoKind.DYNAMIC for k in kinds) else None
    if desc.mutates:
        names = [n for n, _ in desc.inputs]
        mutated = set(desc.mutates.values())
        alias = []
        for i, (oname, okind) in enumerate(desc.outputs):
            src = desc.mutates.get(i)
            if src is None:
                alias.append(-1)
                continue
            k = names.index(src)
            if okind != OUT_REQUIRED or desc.inputs[k][1] != REQUIRED:
                raise _fail(op_type, NotImplementedError, "mutates_args binds output %d to "
                            "input %r: libpyop aliases only a required input to a required "
                            "(not dynamic) output" % (i, src))
            alias.append(k)
        extra["input_flags"] = tuple(ext.INPUT_MUTATED if n in mutated else 0 for n in names)
        extra["output_alias"] = tuple(alias)
    p = GeOpProto(op_type, key, desc.file, desc.line, inputs, outputs, tuple(attrs),
                  _make_infer(desc), **extra)
    p.ge = desc
    return p
