"""register_op_impl and register_kernel with GE's rules, the execute forms,
and the adapter that lets libpyop drive a GE implementation class.

Instances: as in GE (one cls() per op type per registry, so compile can
leave a kernel on self for declare_launch_args), a GE implementation has
ONE instance per op type per load, made at the first pyop_op_create and
shared by every op instance of that type. (A pyop-native implementation
gets one instance per pyop_op_create.)

A call translates: pyop Tensors become ge.runtime.Tensors (host addr,
read on first use), attribute values are given GE's types (float32-rounded
floats, GE DataTypes), and the call runs with its context bound. What does
not depend on the call (which kernel runs, legacy or schema-bound, the
attribute conversions) is decided once, when the implementation is bound to
its prototype. The common schema-bound form (required inputs, attributes
pyop already gives as GE does) needs no translation: the bridge calls the
kernel itself with ge.runtime.Tensor views it makes (_make_execute).
"""

import dataclasses
import enum
import inspect
import linecache
import sys
import threading
import types
import typing

import pyop
from pyop import ext
from pyop.ext import AttrType, CAP_COMPILE, CAP_EXECUTE, CAP_LAUNCH, IoKind

from ..graph.types import DataType
from ..runtime import Tensor, TensorDesc, _Scope, _View
from . import _state
from .context import (AnnotatedArgsContext, EagerOpExecutionContext, HostCpuOpExecutionContext,
                      OpCompileContext, binding, wrap_tensor, _attr_values, _Call,
                      enter, leave, _EXEC, _DECLARE, _COMPILE)
from .proto import (GeOpProto, attr_from_pyop, attr_ir_type, check_op_type, input_kind, label,
                    output_kind, IR_OF_PYOP)

__all__ = ["register_op_impl", "register_kernel", "OpBackend", "get_registered_op_impls",
           "get_registered_op_impl_dicts", "get_registered_op_impl_by_descriptor_key",
           "clear_registered_op_impls", "OpImplDescriptor", "KernelBinding", "GeOpImpl"]


class OpBackend(enum.Enum):
    """Which backend an execute implements (GE 7cf2b9bd+): a plain Enum
    with string values."""
    DEVICE = "device"
    HOST = "host"


@dataclasses.dataclass(frozen=True)
class KernelBinding:
    backend: OpBackend
    function: object = dataclasses.field(compare=False)

    @property
    def source_location(self):
        code = getattr(_unwrap(self.function), "__code__", None)
        if code is None:
            return "<unknown>:0"
        return "%s:%d" % (code.co_filename, code.co_firstlineno)


@dataclasses.dataclass(frozen=True)
class OpImplDescriptor:
    """GE's registered implementation (cls.__ge_op_impl_descriptor__)."""

    descriptor_key: str
    op_type: str
    module_name: str
    class_name: str
    interfaces: list
    cls: type = dataclasses.field(compare=False, repr=False)
    kernel_bindings: typing.Mapping = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}), compare=False, repr=False)

    def to_bridge_dict(self):
        return {"descriptor_key": self.descriptor_key, "op_type": self.op_type,
                "module_name": self.module_name, "class_name": self.class_name,
                "interfaces": list(self.interfaces)}


_PENDING = "__ge_pending_custom_op_kernels__"


def _unwrap(f):
    return f.__func__ if isinstance(f, (staticmethod, classmethod)) else f


def _src(f):
    code = getattr(_unwrap(f), "__code__", None)
    return "%s:%d" % (code.co_filename, code.co_firstlineno) if code else "<unknown>:0"


def register_kernel(*, backend):
    """Declares which backend the decorated execute implements; used in the
    class body of a register_op_impl class. Returns the function unchanged."""
    if not isinstance(backend, OpBackend):
        raise TypeError("backend must be an OpBackend member, got %r" % (backend,))

    def decorate(fn):
        inner = _unwrap(fn)
        if not inspect.isfunction(inner):
            raise TypeError("register_kernel decorates a function (or a staticmethod / "
                            "classmethod of one), got %r" % (fn,))
        if inner.__name__ != "execute":
            raise TypeError("register_kernel can only decorate execute, got %r at %s"
                            % (inner.__name__, _src(fn)))
        frame = sys._getframe(1)
        ns = frame.f_locals
        if "__module__" not in ns or "__qualname__" not in ns:
            raise TypeError("register_kernel must be used in a class body (%s)" % _src(fn))
        pending = ns.get(_PENDING)
        if pending is None:
            pending = {}
            ns[_PENDING] = pending
        earlier = ns.get("execute")
        if earlier is not None and not any(b.function is earlier for b in pending.values()):
            raise TypeError("an earlier execute implementation is not decorated with "
                            "register_kernel (class %s, %s)" % (ns["__qualname__"], _src(fn)))
        if backend in pending:
            raise TypeError("execute backend %r is declared twice: at %s and at %s"
                            % (backend.value, pending[backend].source_location, _src(fn)))
        pending[backend] = KernelBinding(backend, fn)
        return fn

    return decorate


def _collect_bindings(cls):
    """(bindings {OpBackend: KernelBinding}, legacy_callable) under GE's rules
    (GE_API_NEXT §A.2)."""
    pending = cls.__dict__.get(_PENDING)
    if pending is not None:
        delattr(cls, _PENDING)
        final = cls.__dict__.get("execute")
        if not any(b.function is final for b in pending.values()):
            if isinstance(final, (staticmethod, classmethod)) and any(
                    b.function is final.__func__ for b in pending.values()):
                raise TypeError("register_kernel must be the outermost decorator of execute "
                                "(class %s: staticmethod/classmethod is applied over it)"
                                % cls.__qualname__)
            raise TypeError("every execute implementation must declare a backend with "
                            "register_kernel (class %s)" % cls.__qualname__)
        return dict(pending), False
    own = cls.__dict__.get("execute")
    if own is not None:
        if inspect.isfunction(_unwrap(own)):
            return {OpBackend.DEVICE: KernelBinding(OpBackend.DEVICE, own)}, False
        return {}, callable(getattr(cls, "execute", None))
    for base in cls.__mro__[1:]:
        d = base.__dict__.get("__ge_op_impl_descriptor__")
        if isinstance(d, OpImplDescriptor):
            return dict(d.kernel_bindings), not d.kernel_bindings and callable(
                getattr(cls, "execute", None))
        f = base.__dict__.get("execute")
        if f is not None and inspect.isfunction(_unwrap(f)):
            return {OpBackend.DEVICE: KernelBinding(OpBackend.DEVICE, f)}, False
    return {}, callable(getattr(cls, "execute", None))


class _IR:
    """inputs ((name, kind)), attrs ((name, ir_type, default, has_default)),
    outputs ((name, kind)), func (the GE infer_meta or None) -- what
    validation and the contexts read."""

    __slots__ = ("inputs", "attrs", "outputs", "func", "alias")

    def __init__(self, inputs, attrs, outputs, func=None, alias=None):
        self.inputs, self.attrs, self.outputs, self.func = inputs, attrs, outputs, func
        self.alias = alias or {}  # output slot -> the input slot it is (ref outputs)


def _ir_of(proto):
    """The GE IR of a pyop prototype of the same load."""
    if isinstance(proto, GeOpProto):
        g = proto.ge
        names = [n for n, _ in g.inputs]
        return _IR(g.inputs, g.attrs, g.outputs, g.func,
                   {o: names.index(i) for o, i in g.mutates.items()})
    kinds = getattr(proto, "output_kinds", None) or (0,) * len(proto.outputs)
    return _IR(tuple((n, int(k)) for n, k in proto.inputs),
               tuple((n, IR_OF_PYOP.get(AttrType(t), "VT_NONE"), d, not req)
                     for n, t, req, d in proto.attrs),
               tuple((n, 1 if int(k) == int(IoKind.DYNAMIC) else 0)
                     for n, k in zip(proto.outputs, kinds)), None,
               {o: i for o, i in enumerate(getattr(proto, "output_alias", None) or ())
                if i >= 0})


def _thaw(v):
    return [_thaw(x) for x in v] if isinstance(v, tuple) else v


def host_ir(op_type):
    """The GE IR (GE_API_NEXT §D) of the prototype libpyop has registered
    for op_type -- the C equivalent of GE's REG_OP, a host's
    pyop_register_host_prototype -- or None (none, or a libpyop older than
    bridge ABI 1.2). Input kinds are GE's (0 required, 1 optional, 2
    dynamic), output kinds GE's (0 required, 1 dynamic), attribute types
    the VT_* names, defaults applied by libpyop at create."""
    find = getattr(ext.native, "registered_proto", None)
    d = find(op_type) if find is not None else None
    if d is None:
        return None
    attrs = tuple((n, IR_OF_PYOP.get(AttrType(t), "VT_NONE"), None if req else _thaw(dv),
                   not req) for n, t, req, dv in d["attrs"])
    alias = {o: i for o, i in enumerate(d["output_alias"] or ()) if i >= 0}
    return _IR(tuple((n, int(k)) for n, k in d["inputs"]), attrs,
               tuple((n, 1 if int(k) == int(IoKind.DYNAMIC) else 0) for n, k in d["outputs"]),
               None, alias)


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

def _raw_params(raw):
    """(function whose annotations count, parameters as called) of a class
    attribute: a function (self dropped), staticmethod, classmethod (cls
    dropped) or another callable."""
    if isinstance(raw, staticmethod):
        fn = raw.__func__
        return fn, list(inspect.signature(fn).parameters.values())
    if isinstance(raw, classmethod) or inspect.isfunction(raw):
        fn = _unwrap(raw)
        return fn, list(inspect.signature(fn).parameters.values())[1:]
    return raw, list(inspect.signature(raw).parameters.values())


def _params(cls, name):
    """(function, parameters as called on an instance) of method `name`."""
    return _raw_params(inspect.getattr_static(cls, name))


def is_legacy(params):
    """Legacy execute: exactly one positional parameter, named ctx."""
    return (len(params) == 1 and params[0].name == "ctx" and
            params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD))


def uses_legacy_execute(desc):
    """Whether the execute that runs for GE descriptor desc (an
    OpImplDescriptor) is the legacy execute(self, ctx), which newer GE
    rejects: the host kernel binding's (else any binding's) function, or
    without bindings the class's execute. libpyop's own helper for its tools
    (pyop doctor), not GE API."""
    bindings = getattr(desc, "kernel_bindings", None) or {}
    kernel = bindings.get(OpBackend.HOST) or next(iter(bindings.values()), None)
    try:
        if kernel is not None:
            return is_legacy(_raw_params(kernel.function)[1])
        if callable(getattr(desc.cls, "execute", None)):
            return is_legacy(_params(desc.cls, "execute")[1])
    except (TypeError, ValueError):
        pass  # no signature to read: not the legacy form GE matches
    return False


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
    """Whether an attribute annotation of a method is IR type ir (the
    parser of register_op's attributes, proto.attr_ir_type)."""
    return attr_ir_type(ann) == ir


def _is_ge_tensor(t):
    return t is Tensor


def _tensor_ann_ok(ann, kind, is_output):
    """Whether a method's tensor annotation (ge.runtime.Tensor, Optional of
    it or Tensor | None, list of it) is GE kind `kind` of an input or an
    output: pyop's annotation parser with GE's Tensor (proto.input_kind,
    proto.output_kind)."""
    return (output_kind if is_output else input_kind)(ann, _is_ge_tensor) == kind


_KIND_TEXT = {0: "Tensor", 1: "Optional[Tensor]", 2: "list[Tensor]"}
_VALUE_TEXT = {"VT_INT": "int", "VT_FLOAT": "float", "VT_BOOL": "bool", "VT_STRING": "str",
               "VT_DATA_TYPE": "DataType", "VT_TENSOR": "Tensor", "VT_LIST_INT": "list[int]",
               "VT_LIST_FLOAT": "list[float]", "VT_LIST_BOOL": "list[bool]",
               "VT_LIST_STRING": "list[str]", "VT_LIST_DATA_TYPE": "list[DataType]",
               "VT_LIST_LIST_INT": "list[list[int]]"}


def validate(cls, method, ir, op_type, key, raw=None, suffix=""):
    """GE's load-time signature check of a schema-bound method: TypeError
    "invalid <method> signature for op type <op>, descriptor key <key>,
    method <method>: expected <X>, actual <Y>" (GE's wording), with the
    method's file:line."""
    if raw is None:
        raw = inspect.getattr_static(cls, method)
    fn, params = _raw_params(raw)

    def fail(expected, actual):
        raise TypeError("invalid %s signature for op type %s, descriptor key %s, method %s: "
                        "expected %s, actual %s (%s)%s"
                        % (method, op_type, key, method, expected, actual, _src(raw), suffix))

    try:
        hints = typing.get_type_hints(fn)
    except Exception as e:
        fail("resolvable annotations", "%s: %s" % (type(e).__name__, e))
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            fail("no variadic parameters", "variadic parameter %r" % p.name)
    with_outputs = method != "execute"
    slots = [(n, k, False) for n, k in ir.inputs]
    if with_outputs:
        slots += [(n, k, True) for n, k in ir.outputs]
    pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    kwo = [p for p in params if p.kind == p.KEYWORD_ONLY]
    names = [a[0] for a in ir.attrs]
    if len(pos) != len(slots):
        # GE's words: "<n> positional ... parameters followed by <m> keyword-only attrs"
        stray = [p.name for p in pos[len(slots):] if p.name in names]
        fail("%d positional parameters (%d inputs%s) followed by %d keyword-only attrs %s"
             % (len(slots), len(ir.inputs),
                ", %d outputs" % len(ir.outputs) if with_outputs else "", len(names), names),
             "%d positional parameters %s%s"
             % (len(pos), [p.name for p in pos],
                "; attr %s must be keyword-only (after '*')" % ", ".join(map(repr, stray))
                if stray else ""))
    for i, ((sname, kind, is_out), p) in enumerate(zip(slots, pos)):
        if p.name in hints and not _tensor_ann_ok(hints[p.name], kind, is_out):
            want = "list[Tensor]" if is_out and kind == 1 else _KIND_TEXT[kind]
            idx = i - len(ir.inputs) if is_out else i
            fail("%s parameter at index %d annotation %s (%s %r)"
                 % ("output" if is_out else "input", idx, want,
                    "output" if is_out else "input", sname),
                 "%s parameter at index %d annotation %r"
                 % ("output" if is_out else "input", idx, hints[p.name]))
    for i, (aname, ir_type, _, _) in enumerate(ir.attrs):
        if i >= len(kwo):
            fail("keyword-only attr name %r at index %d (attrs in IR order: %s)"
                 % (aname, i, names), "no keyword-only parameter at index %d" % i)
        p = kwo[i]
        if p.name != aname:
            fail("attr name %r at keyword-only index %d (attrs in IR order: %s)"
                 % (aname, i, names), "attr name %r" % p.name)
        if p.name in hints and not _value_type_ok(hints[p.name], ir_type):
            fail("attr %r annotation %s (%s)" % (aname, _VALUE_TEXT.get(ir_type, ir_type),
                                                  ir_type),
                 "attr %r annotation %r" % (aname, hints[p.name]))
    if len(kwo) > len(ir.attrs):
        fail("%d keyword-only attrs %s" % (len(ir.attrs), names),
             "%d keyword-only parameters %s" % (len(kwo), [p.name for p in kwo]))
    if "return" not in hints:
        if with_outputs:  # execute: GE master ignores it, e11185d6+ requires it
            fail("None return annotation", "missing return annotation")
    elif hints["return"] is not type(None):
        fail("None return annotation", "return annotation %r" % (hints["return"],))


# --------------------------------------------------------- the adapter

def _attr_plan(ir):
    """A function kw -> GE's keyword values, or None when pyop's values are
    GE's (ints, bools, strings, no attributes)."""
    if all(t in ("VT_INT", "VT_BOOL", "VT_STRING") for _, t, _, _ in ir.attrs):
        return None

    def convert(kw, scope):
        return {a[0]: v for a, v in zip(ir.attrs, _attr_values(ir, kw, scope))}
    return convert


def _make_execute(impl):
    """The adapter's execute for impl's chosen kernel, decided once (which
    kernel, legacy or schema-bound, the conversions): a function of the
    adapter that translates each call, or, for the common schema-bound form,
    the per-op class of the input views the bridge makes when it calls the
    kernel directly (_install)."""
    op = impl.op_type
    Ctx = HostCpuOpExecutionContext if impl.backend is OpBackend.HOST else EagerOpExecutionContext
    what = "op %r: the execute context (or a Tensor or view from it)" % op

    if impl.kernel is None:  # no binding: a callable execute, form decided per call
        def execute(self, *args, **kw):
            m = self._inst.execute
            ir = impl.ir if impl.ir is not None else _guess_ir(args, kw)
            if _bound_is_legacy(impl, m):
                return _run_legacy(m, Ctx, op, ir, what, args, kw)
            return _run_schema(m, Ctx, op, ir, what, args, kw, _attr_plan(ir), None)
        return execute

    if impl.legacy:
        def execute(self, *args, **kw):
            ir = impl.ir if impl.ir is not None else _guess_ir(args, kw)
            return _run_legacy(self._kernel, Ctx, op, ir, what, args, kw)
        return execute

    ir = impl.ir
    conv = _attr_plan(ir)
    if conv is not None or any(k != 0 for _, k in ir.inputs):
        def execute(self, *args, **kw):
            return _run_schema(self._kernel, Ctx, op, ir, what, args, kw, conv, None)
        return execute

    # The common case: required inputs, attributes as pyop gives them. The
    # bridge calls the kernel itself (the adapter's execute is the kernel
    # bound to the op type's instance), with input views it makes of a
    # per-op ge.runtime.Tensor class (__pyop_input_view__), and refuses a
    # result other than None; the context is made only when the kernel asks
    # (context._bound). No Python runs around the kernel.
    return _view_class(op, ir, Ctx, what)


def _view_class(op, ir, Ctx, what):
    """The per-op class of a directly called execute's input views."""
    return type("Tensor", (_View,), {"__slots__": (), "__module__": "ge.runtime",
                                     "__qualname__": "Tensor", "what": what, "op": op,
                                     "ir": ir, "Ctx": Ctx})


def _run_legacy(m, Ctx, op, ir, what, args, kw):
    """execute(ctx): the context as the argument, get_execute_ctx() unbound
    inside, the result ignored (GE master / develop)."""
    ctx = Ctx._make(_Scope(what), op, ir, args, kw)
    prev = enter(_Call(_EXEC, None, op))
    try:
        r = m(ctx)
    finally:
        leave(prev)
        ctx._close()
    if r is not None:  # ignored, unless it is an unrun coroutine or generator
        ext.unawaited_result(r, op, "execute")


def _run_schema(m, Ctx, op, ir, what, args, kw, conv, _):
    scope = _Scope(what)
    ctx = Ctx._make(scope, op, ir, args, kw)
    slots = ctx._in()[0]
    ge_args = [ts if kind == 2 else (ts[0] if ts else None)
               for (_n, kind), ts in zip(ir.inputs, slots)]
    ge_kw = conv(kw, scope) if conv is not None else kw
    prev = enter(_Call(_EXEC, ctx, op))
    try:
        r = m(*ge_args, **ge_kw)
    finally:
        leave(prev)
        ctx._close()
    if r is not None:
        ext.unawaited_result(r, op, "execute")
        _refuse_result(m, op, r)


def _refuse_result(m, op, r):
    """Raises the fast path's TypeError (bridge/callbacks.c: refuse_result)
    for an execute m that returned r, from a frame at m's own definition, so
    the traceback shows the plugin's execute rather than this module."""
    err = TypeError("execute must return None (op %r returned %s)" % (op, type(r).__name__))
    code = getattr(getattr(m, "__func__", m), "__code__", None)
    line = linecache.getline(code.co_filename, code.co_firstlineno) if code else ""
    indent = len(line) - len(line.lstrip())
    if code is None or not indent or code.co_firstlineno < 2:
        raise err
    # "raise (err  )" as wide as that line, so a traceback marks all of it.
    stmt = "raise (err%s)" % (" " * max(0, len(line.strip()) - len("raise (err)")))
    at = compile("\n" * (code.co_firstlineno - 2) + "if 1:\n" + " " * indent + stmt,
                 code.co_filename, "exec")
    exec(at.replace(co_name=code.co_name), {"err": err})


def _descs(scope, ir_slots, args):
    out = []
    for (name, kind), a in zip(ir_slots, args):
        if isinstance(a, list):
            out.append([wrap_tensor(scope, x) for x in a])
        else:
            out.append(None if a is None else wrap_tensor(scope, a))
    return out


def _run_declare(impl, m, args, kw):
    ir = impl.ir
    if ir is None:
        raise impl._missing_ir("declare_launch_args")
    n_in = len(ir.inputs)
    ctx = AnnotatedArgsContext._make(impl.op_type, 0, 0)
    try:
        s = ctx._s
        ins = _descs(s, ir.inputs, args[:n_in])
        outs = _descs(s, ir.outputs, args[n_in:])
        ctx._n_in = sum(len(x) if isinstance(x, list) else x is not None for x in ins)
        ctx._n_out = sum(len(o) if isinstance(o, list) else 1 for o in outs)
        vals = _attr_values(ir, kw, s)
        ge_kw = {a[0]: v for a, v in zip(ir.attrs, vals)}
        with binding(_DECLARE, ctx, impl.op_type):
            r = m(*ins, *outs, **ge_kw)
        if r is not None:
            ext.unawaited_result(r, impl.op_type, "declare_launch_args")
            raise TypeError("declare_launch_args must return None (op %r returned %s)"
                            % (impl.op_type, type(r).__name__))
    finally:
        ctx._close()
    raise NotImplementedError(
        "op %r: declare_launch_args describes NPU kernel launches (GE AnnotatedArgs); they "
        "need an NPU and libpyop runs on the host (docs/ge-plugins.md)" % impl.op_type)


def _run_compile(impl, m, args, kw):
    """GE's compile(self, *inputs, *outputs, **attrs) on read-only
    descriptions (addr 0), re-validated at each call as GE does."""
    ir = impl.ir
    if ir is None:
        raise impl._missing_ir("compile")
    validate(impl.user_cls, "compile", ir, impl.op_type, impl.ge.descriptor_key)
    n_in = len(ir.inputs)
    scope = _Scope("op %r: a compile-time Tensor" % impl.op_type, ro=True)
    ins = _descs(scope, ir.inputs, args[:n_in])
    outs = _descs(scope, ir.outputs, args[n_in:])
    vals = _attr_values(ir, kw, scope)
    ctx = OpCompileContext._make(scope, impl.op_type, ir, ins, outs, vals)
    try:
        ge_kw = {a[0]: v for a, v in zip(ir.attrs, vals)}
        with binding(_COMPILE, ctx, impl.op_type):
            r = m(*ins, *outs, **ge_kw)
        if r is not None:
            ext.unawaited_result(r, impl.op_type, "compile")
            raise TypeError("compile must return None (op %r returned %s)"
                            % (impl.op_type, type(r).__name__))
    finally:
        scope.valid = False


def _kernel_of(adapter):
    return adapter._kernel


def _make_adapter(user_cls, impl, methods):
    def __init__(self):
        self._inst = inst = impl.instance()
        k = impl.kernel
        self._kernel = k.__get__(inst, user_cls) if k is not None else None

    # __pyop_shared__: the object the adapters of this op type share; the
    # bridge serialises their calls on it in a free-threaded Python.
    ns = {"__slots__": ("_inst", "_kernel"), "__init__": __init__,
          "__pyop_shared__": property(lambda self: self._inst),
          "__module__": user_cls.__module__, "__qualname__": user_cls.__qualname__,
          "__doc__": user_cls.__doc__}
    if "execute" in methods:
        def execute(self, *args, **kw):  # replaced by _make_execute at bind
            raise RuntimeError("op %r: execute before the implementation was bound"
                               % impl.op_type)
        ns["execute"] = execute
    if "compile" in methods:
        def compile(self, *args, **kw):
            return _run_compile(impl, self._inst.compile, args, kw)
        ns["compile"] = compile
    if "declare_launch_args" in methods:
        def declare_launch_args(self, *args, **kw):
            return _run_declare(impl, self._inst.declare_launch_args, args, kw)
        ns["declare_launch_args"] = declare_launch_args
    return type(user_cls.__name__, (), ns)


class GeOpImpl(ext.OpImpl):
    """pyop's view of a GE implementation (cls is the adapter)."""

    __slots__ = ("ge", "user_cls", "ir", "legacy_seen", "kernel", "backend", "legacy",
                 "shared", "lock")

    def _choose(self):
        """The kernel that runs on a host: HOST when the op has one, else
        DEVICE (run on the host), else a callable execute (no binding)."""
        b = self.ge.kernel_bindings
        k = b.get(OpBackend.HOST) or b.get(OpBackend.DEVICE)
        self.kernel = k.function if k is not None else None
        self.backend = k.backend if k is not None else OpBackend.DEVICE
        self.legacy = False
        if self.kernel is not None:
            self.legacy = is_legacy(_raw_params(self.kernel)[1])

    def _install(self):
        """Sets the adapter's execute: a function of the adapter, or (a
        per-op view class from _make_execute) the kernel itself, bound to
        the op type's instance, which the bridge calls with input views of
        that class (__pyop_input_view__)."""
        if "execute" not in self.methods:
            return
        view = None
        if self.ir is None and "execute" in self._needs_ir():
            impl = self

            def execute(adapter, *args, **kw):  # never bound: the registry refuses first
                raise impl._missing_ir("execute")
        else:
            execute = _make_execute(self)
            if isinstance(execute, type):
                view, execute = execute, property(_kernel_of, doc="the kernel, called directly")
        self.cls.__pyop_input_view__ = view
        self.cls.execute = execute

    def bind(self, proto):
        ir = _ir_of(proto)
        self._validate(ir)
        self.ir = ir
        self.input_kinds = tuple(int(k) for _, k in ir.inputs)
        self.n_outputs = len(ir.outputs)
        self.proto_known = True
        self._install()

    def _validate(self, ir):
        key = self.ge.descriptor_key
        for backend, b in self.ge.kernel_bindings.items():
            if is_legacy(_raw_params(b.function)[1]):
                continue
            validate(self.user_cls, "execute", ir, self.op_type, key, raw=b.function,
                     suffix="; backend %r, source %s" % (backend.value, b.source_location))
        for m in self.methods:
            if m == "execute":
                if self.ge.kernel_bindings or is_legacy(_params(self.user_cls, m)[1]):
                    continue
            validate(self.user_cls, m, ir, self.op_type, key)

    def _needs_ir(self):
        """The methods that are schema-bound (everything but a legacy execute)."""
        out = []
        for m in self.methods:
            if m == "execute" and (self.legacy or (self.kernel is None and is_legacy(
                    _params(self.user_cls, m)[1]))):
                continue
            out.append(m)
        return out

    def _missing_ir(self, m):
        what = ("canonical IR not found for schema-bound execute: %s" % self.op_type
                if m == "execute" else "canonical IR not found for schema-bound %s" % m)
        return RuntimeError("%s (op %r, class at %s, descriptor key %s: no prototype of %r is "
                            "registered: the host registers it with pyop_register_host_"
                            "prototype, or a plugin with ge.custom_op.register_op)"
                            % (what, self.op_type, self.where, self.ge.descriptor_key,
                               self.op_type))

    def unbound(self):
        """No Python prototype in this load. A prototype the host registered
        before the load (GE's REG_OP) is the canonical IR: validated now, a
        mismatch fails the load as in GE. Without one the implementation is
        kept: libpyop lists it as waiting for a prototype, and check_attrs
        binds it at the first pyop_op_create after the host registers one."""
        ir = host_ir(self.op_type)
        if ir is not None:
            self._validate(ir)
            self.ir = ir
            self.input_kinds = tuple(int(k) for _, k in ir.inputs)
            self.n_outputs = len(ir.outputs)
            self.proto_known = True
        else:
            self.ir = None
            self.input_kinds = None
        self._install()

    def check_attrs(self, names):
        """Called by the bridge when an op instance is made against a
        prototype this load did not bring (a host prototype registered after
        the load): validates the methods against it and binds them (a
        TypeError names the op, the method and the mismatch). A legacy
        execute takes whatever the host gives."""
        if self.proto_known:
            return None
        with self.lock:
            if self.proto_known:
                return None
            ir = host_ir(self.op_type)
            if ir is None:
                need = self._needs_ir()
                if need:
                    raise self._missing_ir(need[0])
                return None
            self._validate(ir)
            self.ir = ir
            self.input_kinds = tuple(int(k) for _, k in ir.inputs)
            self.n_outputs = len(ir.outputs)
            self.proto_known = True
            self._install()
        return None

    def instance(self):
        """The one instance of the class for this op type (GE's model),
        made at the first op instance; a failing cls() is retried next time."""
        inst = self.shared
        if inst is None:
            with self.lock:
                inst = self.shared
                if inst is None:
                    inst = self.shared = self.user_cls()
        return inst


def _location(cls):
    file, line = ext.class_location(cls)
    return "%s:%d" % (file, line)


def register_op_impl(*, op_type, deterministic=True):
    """Class decorator: GE's register_op_impl (keyword-only op_type).
    deterministic=False is libpyop's (CANN GE has no such parameter): the
    same inputs may give different outputs by design, so `pyop check`
    compares shapes, not bytes (__pyop_deterministic__ on the class, which a
    plugin CANN GE loads too can set itself)."""
    check_op_type(op_type, "register_op_impl")
    if not isinstance(deterministic, bool):
        raise TypeError("register_op_impl op_type %r: deterministic is True or False, got %r"
                        % (op_type, deterministic))

    def decorate(cls):
        head = "register_op_impl op_type %r" % (op_type,)
        if not isinstance(cls, type):
            raise TypeError("%s: register_op_impl expects a class, got %r" % (head, cls))
        if inspect.isabstract(cls):
            raise TypeError("%s: register_op_impl expects a concrete class: class %s is "
                            "abstract (%s not implemented)" % (head, cls.__name__,
                               ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))))
        bindings, legacy_callable = _collect_bindings(cls)
        if "compile" in dir(cls) and not callable(getattr(cls, "compile")):
            raise TypeError("compile must be callable (%s, class %s at %s)"
                            % (head, cls.__qualname__, _location(cls)))
        interfaces, methods, bits = [], [], 0
        if OpBackend.DEVICE in bindings or (not bindings and legacy_callable):
            interfaces.append("eager_execute")
        if OpBackend.HOST in bindings:
            interfaces.append("host_cpu_execute")
        if bindings or legacy_callable:
            methods.append("execute")
            bits |= CAP_EXECUTE
        if callable(getattr(cls, "compile", None)):
            interfaces.append("compilable")
            methods.append("compile")
            bits |= CAP_COMPILE
        if callable(getattr(cls, "declare_launch_args", None)):
            interfaces.append("annotated_args")
            methods.append("declare_launch_args")
            bits |= CAP_LAUNCH
        if not methods:
            name = "%s.%s" % (cls.__module__, cls.__qualname__)
            raise TypeError("python op impl class '%s' must implement at least one supported "
                            "method: execute, compile, declare_launch_args (%s, %s); GE master "
                            "and develop, which have no compile, say: '%s' must implement at "
                            "least one supported method: execute, declare_launch_args"
                            % (name, head, _location(cls), name))
        key = "%s:%s:%s" % (cls.__module__, cls.__name__, op_type)
        st = _state.current()
        if key in st.impls:
            raise ValueError("python op impl descriptor_key already exists: %s (%s)"
                             % (key, _location(cls)))
        if op_type in st.impl_types:
            raise ValueError("python op impl type already exists: %s (%s; registered by %s)"
                             % (op_type, _location(cls), st.impl_types[op_type]))
        desc = OpImplDescriptor(key, op_type, cls.__module__, cls.__name__, interfaces, cls,
                                types.MappingProxyType(bindings))
        file, line = ext.class_location(cls)
        for m in methods:
            ext.check_sync_method(cls, m, op_type, "%s:%s" % (file, line))
        pkey = "ge:%s:%s:%s" % (label(cls.__module__), cls.__qualname__, op_type)
        impl = GeOpImpl(op_type, pkey, file, line, None, bits, tuple(methods))
        impl.ge = desc
        impl.user_cls = cls
        impl.ir = None
        impl.legacy_seen = None
        impl.shared = None
        impl.lock = threading.Lock()
        impl._choose()
        impl.cls = _make_adapter(cls, impl, methods)
        st.impls[key] = desc
        st.impl_types[op_type] = key
        ext.add_descriptor(impl)
        cls.__ge_op_impl_descriptor__ = desc
        # Every registration of the class, one per op type (GE's attribute
        # above keeps the last): what pyop list and check read.
        cls.__ge_op_impl_descriptors__ = cls.__dict__.get("__ge_op_impl_descriptors__", ()) + (desc,)
        if not deterministic:
            cls.__pyop_deterministic__ = False
        return cls

    return decorate


def get_registered_op_impls():
    return list(_state.current().impls.values())


def get_registered_op_impl_dicts():
    return [d.to_bridge_dict() for d in _state.current().impls.values()]


def get_registered_op_impl_by_descriptor_key(descriptor_key):
    return _state.current().impls.get(descriptor_key)


def clear_registered_op_impls():
    """Forgets the GE implementations registered so far (in a load: they are
    not handed to libpyop either)."""
    st = _state.current()
    keys = set(st.impls)
    st.impls.clear()
    st.impl_types.clear()
    ext.discard_descriptors(lambda d: isinstance(d, GeOpImpl) and d.ge.descriptor_key in keys)
