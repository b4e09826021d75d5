"""register_op_impl with GE's rules, the execute forms, and the adapter
that lets libpyop drive a GE implementation class.

libpyop instantiates an adapter class per op instance; the adapter makes
one instance of the plugin's class (cls(), no arguments) and translates
each call: pyop Tensors become ge.runtime.Tensors (host addr), attribute
values are read by IR index and given GE's types (float32-rounded floats,
GE DataTypes), and the call runs with its context bound.
"""

import inspect
import typing

import pyop
from pyop import _registry
from pyop._types import AttrType, CAP_EXECUTE, CAP_LAUNCH, IoKind

from ..graph.types import DataType
from ..runtime import Tensor, TensorDesc
from . import _state
from .context import (AnnotatedArgsContext, EagerOpExecutionContext, binding, wrap_tensor,
                      _EXEC, _DECLARE)
from .proto import (GeOpProto, attr_from_pyop, check_op_type, label, _optional_arg,
                    _is_list, _is_pep604, IR_TYPES)

__all__ = ["register_op_impl", "get_registered_op_impls", "get_registered_op_impl_dicts",
           "get_registered_op_impl_by_descriptor_key", "clear_registered_op_impls",
           "OpImplDescriptor", "GeOpImpl"]

_METHODS = (("execute", "eager_execute", CAP_EXECUTE),
            ("declare_launch_args", "annotated_args", CAP_LAUNCH))


class OpImplDescriptor:
    """A GE implementation: op_type, descriptor_key, impl_cls, capabilities."""

    __slots__ = ("op_type", "descriptor_key", "impl_cls", "capabilities")

    def __init__(self, op_type, key, cls, caps):
        self.op_type = op_type
        self.descriptor_key = key
        self.impl_cls = cls
        self.capabilities = caps

    def as_dict(self):
        return {"op_type": self.op_type, "descriptor_key": self.descriptor_key,
                "impl_cls": self.impl_cls, "capabilities": list(self.capabilities)}

    def __repr__(self):
        return "<ge OpImplDescriptor %s (%s)>" % (self.op_type, self.descriptor_key)


class _IR:
    """inputs ((name, kind)), attrs ((name, ir_type, default, has_default)),
    outputs ((name, kind)), func (the GE infer_meta or None) -- what
    validation and the contexts read."""

    __slots__ = ("inputs", "attrs", "outputs", "func", "alias")

    def __init__(self, inputs, attrs, outputs, func=None, alias=None):
        self.inputs, self.attrs, self.outputs, self.func = inputs, attrs, outputs, func
        self.alias = alias or {}  # output slot -> the input slot it is (ref outputs)


_IR_OF_PYOP = {
    AttrType.INT: "VT_INT", AttrType.FLOAT: "VT_FLOAT", AttrType.BOOL: "VT_BOOL",
    AttrType.STR: "VT_STRING", AttrType.DTYPE: "VT_DATA_TYPE",
    AttrType.LIST_INT: "VT_LIST_INT", AttrType.LIST_FLOAT: "VT_LIST_FLOAT",
    AttrType.LIST_BOOL: "VT_LIST_BOOL", AttrType.LIST_STR: "VT_LIST_STRING",
    AttrType.LIST_DTYPE: "VT_LIST_DATA_TYPE", AttrType.LIST_LIST_INT: "VT_LIST_LIST_INT",
}
if hasattr(AttrType, "TENSOR"):
    _IR_OF_PYOP[AttrType.TENSOR] = "VT_TENSOR"


def _ir_of(proto):
    """The GE IR of a pyop prototype of the same load."""
    if isinstance(proto, GeOpProto):
        g = proto.ge
        names = [n for n, _ in g.inputs]
        return _IR(g.inputs, g.attrs, g.outputs, g.func,
                   {o: names.index(i) for o, i in g.mutates.items()})
    kinds = getattr(proto, "output_kinds", None) or (0,) * len(proto.outputs)
    return _IR(tuple((n, int(k)) for n, k in proto.inputs),
               tuple((n, _IR_OF_PYOP.get(AttrType(t), "VT_NONE"), d, not req)
                     for n, t, req, d in proto.attrs),
               tuple((n, 1 if int(k) == int(IoKind.DYNAMIC) else 0)
                     for n, k in zip(proto.outputs, kinds)), None,
               {o: i for o, i in enumerate(getattr(proto, "output_alias", None) or ())
                if i >= 0})


def _guess_ir(args, kw):
    """IR of a legacy execute whose prototype is not a Python one (the host
    registered it): kinds and attribute types from the values."""
    inputs = tuple(("input%d" % i, 2 if isinstance(a, list) else 1 if a is None else 0)
                   for i, a in enumerate(args))
    attrs = []
    for n, v in kw.items():
        probe = v[0] if isinstance(v, list) and v else v
        base = ("VT_BOOL" if isinstance(probe, bool) else
                "VT_DATA_TYPE" if isinstance(probe, pyop.DataType) else
                "VT_INT" if isinstance(probe, int) else
                "VT_FLOAT" if isinstance(probe, float) else
                "VT_STRING" if isinstance(probe, str) else "VT_INT")
        if isinstance(v, list):
            if v and isinstance(v[0], list):
                base = "VT_LIST_LIST_INT"
            else:
                base = base.replace("VT_", "VT_LIST_", 1)
        attrs.append((n, base, None, False))
    return _IR(inputs, tuple(attrs), None)  # outputs: the host's, unknown here


# ------------------------------------------------------- execute forms

def _params(cls, name):
    """(function, parameters as called on an instance) of method `name`."""
    raw = inspect.getattr_static(cls, name)
    fn = getattr(cls, name)
    params = list(inspect.signature(fn).parameters.values())
    if not isinstance(raw, staticmethod) and not inspect.ismethod(fn):
        params = params[1:]  # self
    return fn, params


def is_legacy(params):
    """Legacy execute: exactly one positional parameter, named ctx."""
    return (len(params) == 1 and params[0].name == "ctx" and
            params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD))


def _bound_is_legacy(impl, m):
    """Whether the bound execute m is the legacy form; remembered on the
    implementation for the last function seen (no process-wide cache)."""
    f = getattr(m, "__func__", m)
    seen = impl.legacy_seen
    if seen is not None and seen[0] is f:
        return seen[1]
    try:
        ps = list(inspect.signature(m).parameters.values())
    except (TypeError, ValueError):
        ps = []
    r = is_legacy(ps)
    impl.legacy_seen = (f, r)
    return r


def _value_type_ok(ann, ir):
    elem, depth = IR_TYPES[ir]
    if depth == 0:
        return ann is elem
    if not _is_list(ann):
        return False
    inner = typing.get_args(ann)
    if len(inner) != 1:
        return False
    if depth == 1:
        return inner[0] is elem
    return _is_list(inner[0]) and typing.get_args(inner[0]) == (int,)


def _tensor_ann_ok(ann, kind, is_output):
    if ann is Tensor:
        return kind == 0
    if not is_output and kind == 1:
        if _optional_arg(ann) is Tensor:
            return True
        if _is_pep604(ann):
            a = typing.get_args(ann)
            return len(a) == 2 and Tensor in a and type(None) in a
        return False
    if kind == (1 if is_output else 2) and _is_list(ann):
        return typing.get_args(ann) == (Tensor,)
    return False


_KIND_TEXT = {0: "Tensor", 1: "Optional[Tensor]", 2: "list[Tensor]"}


def validate(cls, method, ir, op_type, key):
    """GE's load-time signature check of a schema-bound method (TypeError
    naming the op, the key, the method, what was expected and what was
    found)."""
    head = "register_op_impl op_type %r (%s): %s()" % (op_type, key, method)
    fn, params = _params(cls, method)
    try:
        hints = typing.get_type_hints(fn)
    except Exception as e:
        raise TypeError("%s: cannot resolve the annotations: %s: %s"
                        % (head, type(e).__name__, e)) from None
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError("%s: parameter %r: *args / **kwargs are not allowed" % (head, p.name))
    with_outputs = method == "declare_launch_args"
    slots = [(n, k, False) for n, k in ir.inputs]
    if with_outputs:
        slots += [(n, k, True) for n, k in ir.outputs]
    expected = len(slots) + len(ir.attrs)
    if len(params) != expected:
        raise TypeError("%s: expected %d parameters (%d inputs%s, %d attributes), got %d: %s"
                        % (head, expected, len(ir.inputs),
                           ", %d outputs" % len(ir.outputs) if with_outputs else "",
                           len(ir.attrs), len(params), [p.name for p in params]))
    for (sname, kind, is_out), p in zip(slots, params):
        what = "%s %r" % ("output" if is_out else "input", sname)
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError("%s: parameter %r must be positional (it takes %s)"
                            % (head, p.name, what))
        if p.name in hints:
            want = "list[Tensor]" if is_out and kind == 1 else _KIND_TEXT[kind]
            if not _tensor_ann_ok(hints[p.name], kind, is_out):
                raise TypeError("%s: parameter %r (%s): annotation must be %s (ge.runtime), "
                                "got %r" % (head, p.name, what, want, hints[p.name]))
    for (aname, ir_type, _, _), p in zip(ir.attrs, params[len(slots):]):
        if p.kind != p.KEYWORD_ONLY or p.name != aname:
            raise TypeError("%s: parameter %r: expected keyword-only attribute %r (attributes "
                            "keyword-only, in IR order: %s)"
                            % (head, p.name, aname, [a[0] for a in ir.attrs]))
        if p.name in hints and not _value_type_ok(hints[p.name], ir_type):
            raise TypeError("%s: attribute %r is %s: annotation %r does not match"
                            % (head, aname, ir_type, hints[p.name]))
    if with_outputs:
        if "return" not in hints:
            raise TypeError("%s: the return annotation must be None (missing)" % head)
        if hints["return"] is not type(None):
            raise TypeError("%s: the return annotation must be None, got %r"
                            % (head, hints["return"]))


# --------------------------------------------------------- the adapter

def _attr_values(ir, kw, scope):
    vals = []
    for n, t, d, has in ir.attrs:
        v = kw[n] if n in kw else d
        if t == "VT_TENSOR":
            vals.append(wrap_tensor(scope, v) if v is not None else None)
        else:
            vals.append(attr_from_pyop(t, v))
    return vals


def _ge_slots(ir_inputs, args, scope_slots):
    """The schema-bound positional arguments: a Tensor, None or a list."""
    out = []
    for (name, kind), ts in zip(ir_inputs, scope_slots):
        out.append(ts if kind == 2 else (ts[0] if ts else None))
    return out


def _run_execute(impl, inst, args, kw):
    ir = impl.ir if impl.ir is not None else _guess_ir(args, kw)
    pctx = pyop.get_execute_ctx()
    ctx = EagerOpExecutionContext._make(pctx, impl.op_type, ir, args, None)
    try:
        ctx._vals = _attr_values(ir, kw, ctx._s)
        m = inst.execute
        if _bound_is_legacy(impl, m):
            with binding(_EXEC, None, impl.op_type):
                _registry.unawaited_result(m(ctx), impl.op_type, "execute")
        else:
            ge_args = _ge_slots(ir.inputs, args, ctx._slots)
            ge_kw = {a[0]: v for a, v in zip(ir.attrs, ctx._vals)}
            with binding(_EXEC, ctx, impl.op_type):
                _registry.unawaited_result(m(*ge_args, **ge_kw), impl.op_type, "execute")
    finally:
        ctx._close()
    return None


def _run_declare(impl, inst, args, kw):
    ir = impl.ir
    n_in = len(ir.inputs)
    ctx = AnnotatedArgsContext._make(impl.op_type, 0, 0)
    try:
        s = ctx._s
        ins, flat_in = [], 0
        for (name, kind), a in zip(ir.inputs, args[:n_in]):
            if kind == 2:
                ins.append([wrap_tensor(s, x) for x in a])
                flat_in += len(a)
            else:
                ins.append(None if a is None else wrap_tensor(s, a))
                flat_in += a is not None
        outs = []
        for (name, kind), a in zip(ir.outputs, args[n_in:]):
            outs.append([wrap_tensor(s, x) for x in a] if isinstance(a, list)
                        else wrap_tensor(s, a))
        ctx._n_in = flat_in
        ctx._n_out = sum(len(o) if isinstance(o, list) else 1 for o in outs)
        vals = _attr_values(ir, kw, s)
        ge_kw = {a[0]: v for a, v in zip(ir.attrs, vals)}
        with binding(_DECLARE, ctx, impl.op_type):
            r = _registry.unawaited_result(inst.declare_launch_args(*ins, *outs, **ge_kw),
                                           impl.op_type, "declare_launch_args")
        if r is not None:
            raise TypeError("op %r: declare_launch_args returned %r; it must return None"
                            % (impl.op_type, r))
    finally:
        ctx._close()
    raise NotImplementedError(
        "op %r: declare_launch_args describes NPU kernel launches (GE AnnotatedArgs); they "
        "need an NPU and libpyop runs on the host (docs/ge-plugins.md)" % impl.op_type)


def _make_adapter(user_cls, impl, methods):
    def __init__(self):
        self._inst = user_cls()

    ns = {"__slots__": ("_inst",), "__init__": __init__, "__module__": user_cls.__module__,
          "__qualname__": user_cls.__qualname__, "__doc__": user_cls.__doc__}
    if "execute" in methods:
        def execute(self, *args, **kw):
            return _run_execute(impl, self._inst, args, kw)
        ns["execute"] = execute
    if "declare_launch_args" in methods:
        def declare_launch_args(self, *args, **kw):
            return _run_declare(impl, self._inst, args, kw)
        ns["declare_launch_args"] = declare_launch_args
    return type(user_cls.__name__, (), ns)


class GeOpImpl(_registry.OpImpl):
    """pyop's view of a GE implementation (cls is the adapter)."""

    __slots__ = ("ge", "user_cls", "ir", "legacy_seen")

    def bind(self, proto):
        ir = _ir_of(proto)
        self._validate(ir)
        self.ir = ir
        self.input_kinds = tuple(int(k) for _, k in ir.inputs)
        self.n_outputs = len(ir.outputs)
        self.proto_known = True

    def _validate(self, ir):
        for m in self.methods:
            if m == "execute":
                _, params = _params(self.user_cls, m)
                if is_legacy(params):
                    continue
            validate(self.user_cls, m, ir, self.op_type, self.ge.descriptor_key)

    def unbound(self):
        """No prototype in this load: only a legacy execute can run."""
        for m in self.methods:
            if m == "execute" and is_legacy(_params(self.user_cls, m)[1]):
                continue
            raise RuntimeError("register_op_impl op_type %r (%s): %s() is schema-bound but "
                               "the canonical IR of %r was not found (register its prototype "
                               "with ge.custom_op.register_op in the same load)"
                               % (self.op_type, self.ge.descriptor_key, m, self.op_type))
        self.ir = None
        self.input_kinds = None

    def check_attrs(self, names):
        return None  # legacy execute takes whatever attributes the host gives


def register_op_impl(*, op_type):
    """Class decorator: GE's register_op_impl (keyword-only op_type)."""
    check_op_type(op_type, "register_op_impl")

    def decorate(cls):
        head = "register_op_impl op_type %r" % (op_type,)
        if not isinstance(cls, type):
            raise TypeError("%s: decorates a class, got %r" % (head, cls))
        if inspect.isabstract(cls):
            raise TypeError("%s: class %s is abstract (%s not implemented)"
                            % (head, cls.__name__,
                               ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))))
        methods, caps, bits = [], [], 0
        for m, cap, bit in _METHODS:
            if callable(getattr(cls, m, None)):
                methods.append(m)
                caps.append(cap)
                bits |= bit
        if not methods:
            raise TypeError("%s: class %s defines neither execute nor declare_launch_args"
                            % (head, cls.__name__))
        key = "%s:%s:%s" % (cls.__module__, cls.__name__, op_type)
        st = _state.current()
        if key in st.impls:
            raise ValueError("%s: descriptor %r is already registered" % (head, key))
        if op_type in st.impl_types:
            raise ValueError("%s: op type %r already has an implementation (%s)"
                             % (head, op_type, st.impl_types[op_type]))
        desc = OpImplDescriptor(op_type, key, cls, tuple(caps))
        file, line = _registry._class_location(cls)
        for m in methods:
            _registry.check_sync_method(cls, m, op_type, "%s:%s" % (file, line))
        pkey = "ge:%s:%s:%s" % (label(cls.__module__), cls.__qualname__, op_type)
        impl = GeOpImpl(op_type, pkey, file, line, None, bits, tuple(methods))
        impl.ge = desc
        impl.user_cls = cls
        impl.ir = None
        impl.legacy_seen = None
        impl.cls = _make_adapter(cls, impl, methods)
        st.impls[key] = desc
        st.impl_types[op_type] = key
        _registry._add(impl)
        cls.__ge_op_impl_descriptor__ = desc
        return cls

    return decorate


def get_registered_op_impls():
    return list(_state.current().impls.values())


def get_registered_op_impl_dicts():
    return [d.as_dict() for d in _state.current().impls.values()]


def get_registered_op_impl_by_descriptor_key(descriptor_key):
    return _state.current().impls.get(descriptor_key)


def clear_registered_op_impls():
    """Forgets the GE implementations registered so far (in a load: they are
    not handed to libpyop either)."""
    st = _state.current()
    keys = set(st.impls)
    st.impls.clear()
    st.impl_types.clear()
    if _registry._active:
        coll = _registry._active[-1]
        for t, d in list(coll.impls.items()):
            if isinstance(d, GeOpImpl) and d.ge.descriptor_key in keys:
                del coll.impls[t]
        coll.extra[:] = [d for d in coll.extra
                         if not (isinstance(d, GeOpImpl) and d.ge.descriptor_key in keys)]
