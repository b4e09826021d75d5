"""Turning Python signatures into operator prototypes, and checking
implementation methods against a prototype. Pure Python.

Rules (see pyop/__init__.py for the user-facing summary):
- positional parameters are inputs: ``TensorDesc``/``Tensor`` (or no
  annotation) is required, ``Optional[...]`` / ``... | None`` optional,
  ``list[...]`` / ``List[...]`` dynamic;
- keyword-only parameters are attributes and must be annotated with one of
  ``int float bool str DataType`` or ``list[...]`` of those, or
  ``list[list[int]]``; a default makes the attribute optional;
- keyword-only parameters annotated ``Tensor`` are Tensor attributes
  (constants the host gives at create; no default);
- the return annotation gives the outputs: ``None`` (no outputs),
  ``TensorDesc`` (one), ``list[TensorDesc]`` (one dynamic output: a list),
  or a ``tuple[...]`` of those (one output per item).
"""

import functools
import inspect
import re
import sys
import typing
import types

from ._errors import plural
from ._types import AttrType, DataType, IoKind, TensorDesc

__all__ = ["parse_prototype", "parse_outputs", "check_impl_method", "impl_input_kinds",
           "normalize_attr_value", "resolve_mutates", "where", "ATTR_TYPE_NAMES",
           "check_name", "op_type_problem", "check_sync_function", "check_sync_method",
           "unawaited_result", "classify_input", "classify_output", "classify_attr"]

# The names libpyop accepts (src/descriptor.c), checked here so that a bad
# one fails at the decorator with the plugin's file:line: inputs, outputs
# and attributes are ASCII identifiers, op types may also hold '.', ':' and
# '-'; at most MAX_NAME_LEN characters. Python accepts non-ASCII
# identifiers; libpyop and its C hosts do not. The C validation is the
# authority: both are tested against one table of names, tests/names.txt.
MAX_NAME_LEN = 256
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_OP_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*\Z")


def check_name(name, kind, what):
    """ValueError (starting with `what`) unless name is a valid input,
    output or attribute name (kind says which)."""
    if not isinstance(name, str) or len(name) > MAX_NAME_LEN or not _NAME.match(name):
        raise ValueError("%s: %s name %r is not valid: input, output and attribute names are "
                         "ASCII identifiers ([A-Za-z_][A-Za-z0-9_]*, at most %d characters)"
                         % (what, kind, name, MAX_NAME_LEN))


def op_type_problem(op_type):
    """Why op_type (a non-empty str) is not a valid op type, or None."""
    if len(op_type) > MAX_NAME_LEN or not _OP_TYPE.match(op_type):
        return ("op types are ASCII: a letter or '_', then letters, digits, '_', '.', ':' "
                "or '-' ([A-Za-z_][A-Za-z0-9_.:-]*, at most %d characters)" % MAX_NAME_LEN)
    return None

ATTR_TYPE_NAMES = {
    AttrType.INT: "int", AttrType.FLOAT: "float", AttrType.BOOL: "bool",
    AttrType.STR: "str", AttrType.DTYPE: "DataType",
    AttrType.LIST_INT: "list[int]", AttrType.LIST_FLOAT: "list[float]",
    AttrType.LIST_BOOL: "list[bool]", AttrType.LIST_STR: "list[str]",
    AttrType.LIST_DTYPE: "list[DataType]", AttrType.LIST_LIST_INT: "list[list[int]]",
    AttrType.TENSOR: "Tensor",
}

_SCALAR_ATTR = {int: AttrType.INT, float: AttrType.FLOAT, bool: AttrType.BOOL,
                str: AttrType.STR}
_LIST_ATTR = {int: AttrType.LIST_INT, float: AttrType.LIST_FLOAT,
              bool: AttrType.LIST_BOOL, str: AttrType.LIST_STR}

_NoneType = type(None)


def where(file, line):
    """'file:line' of a definition."""
    return "%s:%s" % (file, line)


# ------------------------------------------------ synchronous callbacks
#
# libpyop calls every callback (infer_meta, execute, compile,
# declare_launch_args, a samples function) synchronously and uses what it
# returns: a coroutine function, an async generator function or a
# generator function would return an object whose body never runs, and the
# call would "succeed" doing nothing. They are refused at the decorator
# (check_sync_function, check_sync_method; the ge package calls them too),
# and a call that still returns one (a method replaced after decoration)
# fails (unawaited_result here; the bridge does the same check in C,
# bridge/callbacks.c).

_SYNC_CALL = "libpyop calls it synchronously, so its body would never run"
_SYNC_WHY = _SYNC_CALL + "; define it with def"


def _unwrap_callable(obj):
    """(innermost callable, description of the wrapping) of obj seen
    through staticmethod, classmethod, functools.partial / partialmethod
    and a callable object's __call__ (never through __wrapped__: a sync
    wrapper of an async function is an ordinary function)."""
    how = []
    for _ in range(32):  # a cycle of partials cannot loop forever
        if isinstance(obj, (staticmethod, classmethod)):
            how.append("a %s of " % type(obj).__name__)
            obj = obj.__func__
        elif isinstance(obj, (functools.partial, functools.partialmethod)):
            how.append("a functools.%s of " % type(obj).__name__)
            obj = obj.func
        elif inspect.ismethod(obj):
            obj = obj.__func__
        elif (not isinstance(obj, type) and not inspect.isfunction(obj) and
              not inspect.isbuiltin(obj) and callable(obj) and
              inspect.isfunction(getattr(type(obj), "__call__", None))):
            how.append("a callable %s object whose __call__ is " % type(obj).__name__)
            obj = type(obj).__call__
        else:
            break
    return obj, "".join(how)


def sync_problem(obj):
    """Why libpyop cannot use obj as a callback (see above), or None."""
    inner, how = _unwrap_callable(obj)
    if inspect.iscoroutinefunction(inner) or inspect.iscoroutinefunction(obj):
        what = "a coroutine function (async def)"
    elif inspect.isasyncgenfunction(inner):
        what = "an asynchronous generator function (async def with yield)"
    elif inspect.isgeneratorfunction(inner):
        what = "a generator function (it contains yield)"
    else:
        return None
    return "is %s%s: %s" % (how, what, _SYNC_WHY)


def _code_where(obj, default):
    code = getattr(_unwrap_callable(obj)[0], "__code__", None)
    return where(code.co_filename, code.co_firstlineno) if code is not None else default


def check_sync_function(fn, op_type, role, default_where):
    """TypeError naming the op, the role ("infer_meta", "samples"), why and
    the function's file:line (else default_where) when fn is not an
    ordinary synchronous callable."""
    why = sync_problem(fn)
    if why is not None:
        name = (getattr(fn, "__name__", None) or
                getattr(_unwrap_callable(fn)[0], "__qualname__", None) or type(fn).__name__)
        raise TypeError("op %r: %s function %s() at %s %s"
                        % (op_type, role, name, _code_where(fn, default_where), why))


def check_sync_method(cls, name, op_type, class_where):
    """TypeError naming the op, the method, why and its file:line (else the
    class's) unless method `name` of cls is a function libpyop can call on
    an instance and use the result of: a def (or a staticmethod /
    classmethod), not async, not a generator. A callable object that is not
    a descriptor (a partial, an instance with __call__) is refused too: it
    is not bound to the instance, so it would be called without self.
    Only the synchronous rule is checked here: another descriptor (a
    functools.partialmethod of a def) passes this check, and pyop's
    register_op_impl then refuses it in check_impl_method ("is not a
    method": its signature cannot be checked against the prototype),
    as docs/op-author-guide.md says (a method is a def, a staticmethod or
    a classmethod)."""
    try:
        raw = inspect.getattr_static(cls, name)
    except AttributeError:
        raw = getattr(cls, name)
    mw = "op %r: %s() of class %s at %s" % (op_type, name, cls.__name__,
                                              _code_where(raw, class_where))
    why = sync_problem(raw)
    if why is not None:
        raise TypeError("%s %s" % (mw, why))
    # functools.partial binds no instance before Python 3.14 (3.13 warns
    # that it will): refused on every version, for one rule.
    if (not inspect.isfunction(raw) and not isinstance(raw, (staticmethod, classmethod)) and
            (not hasattr(type(raw), "__get__") or isinstance(raw, functools.partial))):
        raise TypeError("%s is a %s object, not a function: it is not bound to the instance, "
                        "so it would be called without self (define it with def, or wrap it "
                        "in staticmethod)" % (mw, type(raw).__name__))


def unawaited_result(result, op_type, method):
    """result, unless it is a coroutine, an async generator or a generator
    (a callback that is async or a generator after all, e.g. replaced after
    decoration): that one is closed unrun and TypeError raised."""
    if inspect.iscoroutine(result) or inspect.isgenerator(result):
        result.close()  # unstarted: nothing runs, and no "never awaited" warning
    elif not inspect.isasyncgen(result):  # an unstarted one needs no closing
        return result
    kind = type(result).__name__
    raise TypeError("%s of op %r returned %s %s instead of running: %s (async def and generator "
                    "callbacks are refused at registration; this one was set after it)"
                    % (method, op_type, "an" if kind[:1] in "aeiou" else "a", kind,
                       _SYNC_CALL))


def _tensor_types():
    """The classes accepted as tensor annotations."""
    kinds = [TensorDesc]
    pkg = sys.modules.get(__package__)
    for name in ("Tensor",):
        t = getattr(pkg, name, None) if pkg is not None else None
        if isinstance(t, type):
            kinds.append(t)
    from . import _types  # the placeholder Tensor, if any
    t = getattr(_types, "Tensor", None)
    if isinstance(t, type):
        kinds.append(t)
    return tuple(kinds)


def _is_tensor_annotation(ann):
    if isinstance(ann, type):
        return ann in _tensor_types() or ann.__name__ in ("Tensor", "TensorDesc")
    return False


def _resolve(ann, fn, what):
    """Evaluates a string annotation in the function's globals."""
    if not isinstance(ann, str):
        return ann
    from . import _types
    pkg = sys.modules.get(__package__)
    ns = {"TensorDesc": TensorDesc, "DataType": DataType,
          "Tensor": getattr(pkg, "Tensor", None) or getattr(_types, "Tensor", TensorDesc),
          "Optional": typing.Optional, "List": typing.List, "Tuple": typing.Tuple,
          "Union": typing.Union, "pyop": pkg}
    try:
        return eval(ann, getattr(fn, "__globals__", {}), ns)
    except Exception as e:
        raise TypeError("%s: cannot evaluate annotation %r: %s" % (what, ann, e)) from None


def _union_args(ann):
    origin = typing.get_origin(ann)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return typing.get_args(ann)
    return None


def classify_input(ann, is_tensor):
    """IoKind of an input annotation, or None when it is not one: a class
    for which is_tensor(cls) is true is REQUIRED, Optional[X] / X | None
    (X such a class) OPTIONAL, list[X] / List[X] DYNAMIC. The one parser of
    input annotations: pyop's signatures and the ge package's (with their
    own tensor classes) both use it."""
    args = _union_args(ann)
    if args is not None:
        rest = [a for a in args if a is not _NoneType]
        if len(rest) == 1 and len(args) == 2 and _is_class(rest[0], is_tensor):
            return IoKind.OPTIONAL
        return None
    return _list_kind(ann, is_tensor) or (IoKind.REQUIRED if _is_class(ann, is_tensor) else None)


def classify_output(ann, is_tensor):
    """IoKind of one output annotation (REQUIRED for a tensor class,
    DYNAMIC for list[X]), or None; as classify_input."""
    return _list_kind(ann, is_tensor) or (IoKind.REQUIRED if _is_class(ann, is_tensor) else None)


def _is_class(ann, is_tensor):
    """A tensor class (never list[X], which is a type on Python 3.9/3.10)."""
    return (isinstance(ann, type) and typing.get_origin(ann) is None and
            bool(is_tensor(ann)))


def _list_kind(ann, is_tensor):
    if typing.get_origin(ann) in (list, typing.List):
        inner = typing.get_args(ann)
        if len(inner) == 1 and _is_class(inner[0], is_tensor):
            return IoKind.DYNAMIC
    return None


def _input_kind(ann):
    """IoKind for an input annotation, or None when it is not a tensor type."""
    if ann is inspect.Parameter.empty:
        return IoKind.REQUIRED
    return classify_input(ann, _is_tensor_annotation)


def _is_tensor_attr_annotation(ann):
    """Tensor (not TensorDesc): a Tensor attribute."""
    return (isinstance(ann, type) and ann is not TensorDesc and
            _is_tensor_annotation(ann) and ann.__name__ == "Tensor")


def classify_attr(ann, dtype, is_tensor):
    """AttrType of an attribute annotation, or None when unsupported: int,
    float, bool, str, the class `dtype` (a DataType enum), list[...] of
    those, list[list[int]], and a class for which is_tensor(cls) is true
    (a Tensor attribute). The one parser of attribute annotations (pyop's,
    and the ge package's with GE's DataType and Tensor)."""
    if typing.get_origin(ann) in (list, typing.List):
        inner = typing.get_args(ann)
        if len(inner) != 1:
            return None
        if inner[0] is dtype:
            return AttrType.LIST_DTYPE
        if isinstance(inner[0], type) and inner[0] in _LIST_ATTR:
            return _LIST_ATTR[inner[0]]
        if typing.get_origin(inner[0]) in (list, typing.List) and typing.get_args(inner[0]) == (int,):
            return AttrType.LIST_LIST_INT
        return None
    if not isinstance(ann, type) or typing.get_origin(ann) is not None:
        return None
    if ann is dtype:
        return AttrType.DTYPE
    if ann in _SCALAR_ATTR:
        return _SCALAR_ATTR[ann]
    return AttrType.TENSOR if _is_class(ann, is_tensor) else None


def _attr_type(ann):
    """AttrType for an attribute annotation of a pyop signature, or None."""
    return classify_attr(ann, DataType, _is_tensor_attr_annotation)


def _check_str(v):
    if not isinstance(v, str):
        raise TypeError("expected str, got %s" % type(v).__name__)
    if "\0" in v:
        raise ValueError("strings must not contain NUL characters")
    return v


def _check_int(v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("expected int, got %s" % type(v).__name__)
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError("%d does not fit in int64" % v)
    return v


def _check_float(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("expected float, got %s" % type(v).__name__)
    return float(v)


def _check_bool(v):
    if not isinstance(v, bool):
        raise TypeError("expected bool, got %s" % type(v).__name__)
    return v


def _check_dtype(v):
    if isinstance(v, DataType):
        return v
    if isinstance(v, str):
        return DataType.from_name(v)
    raise TypeError("expected DataType, got %s" % type(v).__name__)


def _list_of(check):
    def checker(v):
        if not isinstance(v, (list, tuple)):
            raise TypeError("expected a list, got %s" % type(v).__name__)
        return [check(x) for x in v]
    return checker


_CHECKERS = {
    AttrType.INT: _check_int, AttrType.FLOAT: _check_float,
    AttrType.BOOL: _check_bool, AttrType.STR: _check_str,
    AttrType.DTYPE: _check_dtype,
    AttrType.LIST_INT: _list_of(_check_int),
    AttrType.LIST_FLOAT: _list_of(_check_float),
    AttrType.LIST_BOOL: _list_of(_check_bool),
    AttrType.LIST_STR: _list_of(_check_str),
    AttrType.LIST_DTYPE: _list_of(_check_dtype),
    AttrType.LIST_LIST_INT: _list_of(_list_of(_check_int)),
}


def normalize_attr_value(attr_type, value):
    """The value converted to the canonical Python type of attr_type
    (float for FLOAT, list for lists, DataType for DTYPE). TypeError or
    ValueError when it does not fit (a Tensor attribute takes no default)."""
    if AttrType(attr_type) == AttrType.TENSOR:
        raise TypeError("a Tensor attribute cannot have a default (the host gives it)")
    return _CHECKERS[AttrType(attr_type)](value)


def _default_output_names(n):
    return () if n == 0 else ("y",) if n == 1 else tuple("y%d" % i for i in range(n))


def _output_kind(ann):
    """IoKind of one output annotation (TensorDesc, list[TensorDesc]) or None."""
    return classify_output(ann, _is_tensor_annotation)


def parse_outputs(ann, fn, what):
    """Output kinds the return annotation declares: () for None, a tuple of
    IoKind, -1 for 'any number of required outputs' (tuple[TensorDesc,
    ...]), or None when there is no annotation."""
    if ann is inspect.Signature.empty:
        return None
    ann = _resolve(ann, fn, what + ": return annotation")
    if ann is None or ann is _NoneType:
        return ()
    kind = _output_kind(ann)
    if kind is not None:
        return (kind,)
    if typing.get_origin(ann) in (tuple, typing.Tuple):
        args = typing.get_args(ann)
        if len(args) == 2 and args[1] is Ellipsis and _is_tensor_annotation(args[0]):
            return -1
        kinds = tuple(_output_kind(a) for a in args)
        if args and all(k is not None for k in kinds):
            return kinds
    raise TypeError("%s: return annotation %r: expected None, TensorDesc, list[TensorDesc] "
                    "or a tuple of those" % (what, ann))


def resolve_mutates(mutates_args, inputs, outputs, output_kinds, what):
    """(input_flags, output_alias) for mutates_args (input names): each named
    input is mutated (flag INPUT_MUTATED); an output with the name of a
    mutated input is that input's buffer (alias = the input's index, -1
    otherwise). Both None when nothing is mutated."""
    from ._types import INPUT_MUTATED
    if mutates_args is None or mutates_args == ():
        return None, None
    if isinstance(mutates_args, str) or not isinstance(mutates_args, (tuple, list)):
        raise TypeError("%s: mutates_args must be a tuple of input names, got %r"
                        % (what, mutates_args))
    names = [n for n, _ in inputs]
    flags = [0] * len(inputs)
    for m in mutates_args:
        if not isinstance(m, str):
            raise TypeError("%s: mutates_args: %r is not an input name" % (what, m))
        if m not in names:
            raise ValueError("%s: mutates_args: %r is not an input (inputs: %s)"
                             % (what, m, names))
        i = names.index(m)
        if flags[i]:
            raise ValueError("%s: mutates_args: input %r given twice" % (what, m))
        flags[i] = INPUT_MUTATED
    alias = [-1] * len(outputs)
    for k, o in enumerate(outputs):
        if o in names and flags[names.index(o)]:
            i = names.index(o)
            if output_kinds[k] != IoKind.REQUIRED or inputs[i][1] != IoKind.REQUIRED:
                raise TypeError("%s: output %r aliases mutated input %r: both must be single "
                                "tensors (not Optional or list)" % (what, o, o))
            alias[k] = i
    return tuple(flags), (tuple(alias) if any(a >= 0 for a in alias) else None)


def dtype_mask(types, what):
    """The PYOP_DTYPE_BIT mask of types: a DataType, a numpy-style name, or
    a non-empty list/tuple/set of those (TypeError/ValueError naming
    what)."""
    if isinstance(types, (DataType, str)):
        types = (types,)
    if not isinstance(types, (list, tuple, set, frozenset)) or not types:
        raise TypeError("%s: expected a DataType, a data type name or a non-empty list of "
                        "them, got %r" % (what, types))
    mask = 0
    for t in types:
        if isinstance(t, str):
            try:
                t = DataType.from_name(t)
            except ValueError as e:
                raise ValueError("%s: %s" % (what, e)) from None
        elif not isinstance(t, DataType):
            raise TypeError("%s: %r is not a DataType or a data type name" % (what, t))
        mask |= 1 << int(t)
    return mask


def resolve_dtypes(dtypes, inputs, outputs, what):
    """(input_dtypes, output_dtypes) of register_op's dtypes= (a dict of
    input or output name -> allowed data types): per io (mask, "") with
    mask 0 for one not named, a side None when none of it is named; both
    None for no dtypes. A name that is an input's names that input only: an
    output named like an input (the default "y" beside an input "y") cannot
    be named here. See docs/op-author-guide.md, "Allowed data types"."""
    if dtypes is None or dtypes == {}:
        return None, None
    if not isinstance(dtypes, dict):
        raise TypeError("%s: dtypes must be a dict of input or output name -> data types, "
                        "got %r" % (what, dtypes))
    in_names = [n for n, _ in inputs]
    masks_in, masks_out = [0] * len(inputs), [0] * len(outputs)
    for name, types in dtypes.items():
        if not isinstance(name, str) or (name not in in_names and name not in outputs):
            raise ValueError("%s: dtypes: %r is not an input or output (inputs: %s; outputs: "
                             "%s)" % (what, name, in_names, list(outputs)))
        mask = dtype_mask(types, "%s: dtypes[%r]" % (what, name))
        if name in in_names:
            masks_in[in_names.index(name)] = mask
        else:
            masks_out[list(outputs).index(name)] = mask
    side = lambda masks: tuple((m, "") for m in masks) if any(masks) else None
    return side(masks_in), side(masks_out)


def parse_prototype(fn, op_type, outputs=None, what=None, with_kinds=False):
    """Parses fn's signature into (inputs, output_names, attrs) where inputs is
    a tuple of (name, IoKind), output_names a tuple of str and attrs a tuple of
    (name, AttrType, required, default); with_kinds, also the output kinds
    (a tuple of IoKind) as a fourth item. Raises TypeError/ValueError whose
    message starts with `what` (op and file:line)."""
    what = what or "op %r" % op_type
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise TypeError("%s: cannot read the signature: %s" % (what, e)) from None
    inputs = []
    attrs = []
    for p in sig.parameters.values():
        pw = "%s: parameter %r" % (what, p.name)
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            check_name(p.name, "input" if p.kind != p.KEYWORD_ONLY else "attribute", what)
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            ann = _resolve(p.annotation, fn, pw)
            kind = _input_kind(ann)
            if kind is None:
                raise TypeError("%s: an input must be annotated TensorDesc, Optional[TensorDesc] "
                                "or list[TensorDesc], not %r (attributes are keyword-only: "
                                "put them after '*')" % (pw, ann))
            if p.default is not p.empty and not (kind == IoKind.OPTIONAL and p.default is None):
                raise TypeError("%s: an input cannot have a default (only None for an "
                                "Optional input)" % pw)
            inputs.append((p.name, kind))
        elif p.kind == p.KEYWORD_ONLY:
            if p.annotation is p.empty:
                raise TypeError("%s: attribute has no type annotation (one of %s)"
                                % (pw, ", ".join(ATTR_TYPE_NAMES.values())))
            ann = _resolve(p.annotation, fn, pw)
            at = _attr_type(ann)
            if at is None:
                raise TypeError("%s: unsupported attribute type %r (supported: %s)"
                                % (pw, ann, ", ".join(ATTR_TYPE_NAMES.values())))
            if p.default is p.empty or at == AttrType.TENSOR:
                if p.default is not p.empty:
                    raise TypeError("%s: a Tensor attribute cannot have a default (the host "
                                    "gives it when it creates the op)" % pw)
                attrs.append((p.name, at, True, None))
            else:
                try:
                    default = normalize_attr_value(at, p.default)
                except (TypeError, ValueError) as e:
                    raise type(e)("%s: default %r does not match type %s: %s"
                                  % (pw, p.default, ATTR_TYPE_NAMES[at], e)) from None
                attrs.append((p.name, at, False, default))
        elif p.kind == p.VAR_POSITIONAL:
            raise TypeError("%s: *args is not allowed in a prototype "
                            "(use a list[TensorDesc] input for a dynamic input)" % pw)
        else:
            raise TypeError("%s: **kwargs is not allowed in a prototype "
                            "(declare each attribute as a keyword-only parameter)" % pw)
    kinds = parse_outputs(sig.return_annotation, fn, what)
    if outputs is not None:
        if isinstance(outputs, str) or not all(isinstance(o, str) for o in outputs):
            raise TypeError("%s: outputs= must be a tuple of names" % what)
        outputs = tuple(outputs)
        if kinds is None or kinds == -1:
            kinds = (IoKind.REQUIRED,) * len(outputs)
        elif len(kinds) != len(outputs):
            raise TypeError("%s: outputs=%r names %s but the return annotation "
                            "declares %d" % (what, outputs, plural(len(outputs), "output"),
                                             len(kinds)))
    else:
        if kinds is None:
            raise TypeError("%s: missing return annotation (None, TensorDesc, "
                            "list[TensorDesc], or tuple[TensorDesc, TensorDesc] for two "
                            "outputs)" % what)
        if kinds == -1:
            raise TypeError("%s: tuple[TensorDesc, ...] needs outputs=(names...) to give "
                            "the number of outputs" % what)
        outputs = _default_output_names(len(kinds))
    for o in outputs:
        check_name(o, "output", what)
    if len(set(outputs)) != len(outputs):
        raise ValueError("%s: duplicate output names %r" % (what, outputs))
    if with_kinds:
        return tuple(inputs), outputs, tuple(attrs), tuple(IoKind(k) for k in kinds)
    return tuple(inputs), outputs, tuple(attrs)


def _method_params(cls, name, what):
    """(positional params, keyword-only names, has *args, has **kwargs) of a
    method as called on an instance (self dropped)."""
    raw = inspect.getattr_static(cls, name)
    fn = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    if not callable(fn):
        raise TypeError("%s: %s is not a method" % (what, name))
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError) as e:
        raise TypeError("%s: cannot read the signature: %s" % (what, e)) from None
    if not isinstance(raw, staticmethod):
        if not params or params[0].kind not in (params[0].POSITIONAL_ONLY,
                                                params[0].POSITIONAL_OR_KEYWORD):
            raise TypeError("%s: the first parameter must be self" % what)
        params = params[1:]
    pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    kw = [p for p in params if p.kind == p.KEYWORD_ONLY]
    var_pos = any(p.kind == p.VAR_POSITIONAL for p in params)
    var_kw = any(p.kind == p.VAR_KEYWORD for p in params)
    return fn, pos, kw, var_pos, var_kw


def impl_input_kinds(cls, methods):
    """Input kinds read from the annotations of the first of `methods` the
    class defines (used when the prototype is not a Python one)."""
    for name in methods:
        if name == "execute":
            fn, pos, _, _, _ = _method_params(cls, name, name)
            kinds = []
            for p in pos:
                try:
                    ann = _resolve(p.annotation, fn, name)
                except TypeError:
                    ann = inspect.Parameter.empty
                kinds.append(_input_kind(ann) or IoKind.REQUIRED)
            return tuple(kinds)
    return None


def check_impl_method(cls, name, op_type, class_where, input_names=None,
                      n_outputs=None, attr_names=None):
    """Checks method `name` of an implementation class. With a prototype
    (input_names, n_outputs, attr_names known) the positional parameters must
    be the inputs in order (then n_outputs outputs for compile and
    declare_launch_args) and the keyword-only ones the attributes. Raises
    TypeError naming the op, the method, the parameter and the file:line."""
    mw = "op %r: %s() of class at %s" % (op_type, name, class_where)
    fn, pos, kw, var_pos, var_kw = _method_params(cls, name, mw)
    code = getattr(fn, "__code__", None)
    if code is not None:
        mw = "op %r: %s() at %s" % (op_type, name, where(code.co_filename, code.co_firstlineno))
    for p in pos:
        if p.default is not p.empty and p.default is not None:
            raise TypeError("%s: parameter %r: inputs take no default" % (mw, p.name))
    if input_names is None:
        return
    with_outputs = name != "execute"
    expected = list(input_names)
    if not var_pos:
        got = [p.name for p in pos]
        if with_outputs and n_outputs is not None:
            if len(got) != len(expected) + n_outputs:
                raise TypeError("%s: expected %d positional parameters (inputs %s, then %d "
                                "output(s)), got %d: %s"
                                % (mw, len(expected) + n_outputs, expected, n_outputs,
                                   len(got), got))
            got = got[:len(expected)]
        for i, (e, g) in enumerate(zip(expected, got)):
            if e != g:
                raise TypeError("%s: parameter %r: positional parameter %d must be input %r "
                                "(inputs in prototype order: %s)" % (mw, g, i, e, expected))
        if len(got) != len(expected):
            if len(got) > len(expected):
                raise TypeError("%s: parameter %r: not an input of the prototype (inputs: %s; "
                                "attributes must be keyword-only)"
                                % (mw, got[len(expected)], expected))
            raise TypeError("%s: parameter %r: input missing from the signature"
                            % (mw, expected[len(got)]))
    if attr_names is not None:
        check_impl_attrs(kw, var_kw, attr_names, mw)


def check_impl_attrs(kw, var_kw, attr_names, mw):
    """Keyword-only parameters kw (inspect.Parameter list) against the
    attribute names of the prototype."""
    names = set(attr_names)
    for p in kw:
        if p.name not in names:
            raise TypeError("%s: parameter %r: not an attribute of the prototype "
                            "(attributes: %s)" % (mw, p.name, sorted(names)))
    if not var_kw:
        have = {p.name for p in kw}
        for a in attr_names:
            if a not in have:
                raise TypeError("%s: parameter %r: attribute missing (declare it "
                                "keyword-only after '*', or accept **kwargs)" % (mw, a))
