"""The execute and declare_launch_args contexts of GE's Python API, on a
host: EagerOpExecutionContext over pyop's execute context, and the
AnnotatedArgs classes, which behave as in GE up to add_launch (an NPU kernel
binary cannot run here: NotImplementedError naming it and the op; those
live in _launch_args.py and are re-exported here).

A context, its RuntimeAttrs and every Tensor / view reached through them
share one validity flag: after the call, any access raises RuntimeError.
"""

import threading

import pyop
from pyop import ext

from .. import _convert
from ..graph.types import DataType
from ..runtime import (_Scope, _View, _check as _check_view, ExpandDimsType, StorageFormat,
                       StorageShape, Tensor, TensorPlacement)
from ._values import attr_from_pyop, wrap_tensor
from ._launch_args import (_nonneg, AnnotatedArgsContext, AnnotatedKernelArgs,
                           AnnotatedKernelLaunchInfo, WorkspaceAddr)

__all__ = ["get_execute_ctx", "get_declare_launch_args_ctx", "get_compile_ctx",
           "get_compile_platform_info", "EagerOpExecutionContext", "HostCpuOpExecutionContext",
           "OpCompileContext", "CompilePlatformInfo", "InferMetaContext", "RuntimeAttrs",
           "AnnotatedArgsContext", "AnnotatedKernelArgs", "AnnotatedKernelLaunchInfo",
           "WorkspaceAddr", "set_compile_options"]

_EXEC, _DECLARE, _COMPILE = 1, 2, 3


# The call running on this thread. A schema-bound execute whose inputs are
# all required and whose attributes need no conversion is called by the
# bridge directly (registry._make_execute: the adapter's execute is the
# kernel itself, its inputs are ge.runtime.Tensor views the bridge makes),
# so no Python runs around it: its call is the bridge's innermost callback
# (pyop.ext.native.view_call), whose context is made on the first get_execute_ctx()
# from the call's inputs and attributes and kept on pyop's context (_x)
# until the call ends. Every other call (compile, declare_launch_args, the
# legacy and general execute paths) is a _Call in _calls, which maps a
# thread's ident to its current call: a dict, not a ContextVar as in GE
# (setting a ContextVar costs a new context mapping per call), and GE's
# observable rules hold the same (the binding is per thread, nested calls
# restore the outer one, a context copied inside raises once the call has
# ended). A _Call records how many bridge callbacks were running when it
# began (depth), so the innermost of the two kinds is the one found.
_calls = {}
_ident = threading.get_ident
_view_call = getattr(ext.native, "view_call", None)
_depth = getattr(ext.native, "depth", None) or (lambda: 0)


class _Call:
    __slots__ = ("kind", "ctx", "op", "depth")

    def __init__(self, kind, ctx, op):
        self.kind, self.ctx, self.op = kind, ctx, op


def enter(call):
    """Makes call this thread's current one; returns (ident, previous) for
    leave."""
    call.depth = _depth()
    tid = _ident()
    prev = _calls.get(tid)
    _calls[tid] = call
    return tid, prev


def leave(token):
    tid, prev = token
    if prev is None:
        del _calls[tid]
    else:
        _calls[tid] = prev


def _direct(c):
    """pyop's context of the bridge's innermost callback when it is a
    directly called GE execute that began after c (a _Call or None), else
    None."""
    if _view_call is None:
        return None
    return _view_call(c.depth if c is not None else 0)


class _FrameScope:
    """The validity of a directly called execute's context and what it
    hands out: that of pyop's context of the call (p), or False once closed."""

    __slots__ = ("_p", "_closed", "what")
    ro = False

    def __init__(self, p, what):
        self._p, self._closed, self.what = p, False, what

    @property
    def valid(self):
        return not self._closed and self._p.valid

    @valid.setter
    def valid(self, v):
        if not v:
            self._closed = True

    check = _Scope.check


def _from_frame(p):
    """The execute context of a directly called kernel (p: pyop's context
    of its call), kept on p for the rest of the call."""
    view = p._view
    scope = _FrameScope(p, view.what)
    ctx = view.Ctx._make(scope, view.op, view.ir, list(p._inputs), p._attrs)
    ctx._p = p
    p._x = ctx
    return ctx


class binding:
    """Binds ctx (or None: a legacy call) for get_*_ctx() during a call; a
    nested call restores the outer binding."""

    __slots__ = ("call", "prev")

    def __init__(self, kind, ctx, op_type=None):
        self.call = _Call(kind, ctx, op_type)

    def __enter__(self):
        self.prev = enter(self.call)

    def __exit__(self, *exc):
        leave(self.prev)
        return False


def current_op():
    """The op type of the innermost GE call on this thread, or None."""
    c = _calls.get(_ident())
    p = _direct(c)
    if p is not None:
        return p._view.op
    return c.op if c is not None else None


_OUTSIDE = {
    _EXEC: "get_execute_ctx() is only available inside schema-bound execute",
    _COMPILE: "get_compile_ctx() is only available inside schema-bound compile",
    _DECLARE: "get_declare_launch_args_ctx() is only available inside declare_launch_args",
}


def _bound(kind):
    c = _calls.get(_ident())
    if kind == _EXEC:
        p = _direct(c)
        if p is not None:
            x = p._x
            return x if x is not None else _from_frame(p)
    if c is not None and c.kind == kind and c.ctx is not None:
        return c.ctx
    raise RuntimeError("%s (a legacy execute(self, ctx) gets its context as the argument; "
                       "the context exists only during the call)" % _OUTSIDE[kind])


def get_execute_ctx():
    """The EagerOpExecutionContext (DEVICE kernel) or HostCpuOpExecutionContext
    (HOST kernel) of the schema-bound execute running in this context;
    RuntimeError elsewhere."""
    return _bound(_EXEC)


def get_declare_launch_args_ctx():
    """The AnnotatedArgsContext of the declare_launch_args running here;
    RuntimeError elsewhere."""
    return _bound(_DECLARE)


def get_compile_ctx():
    """The OpCompileContext of the schema-bound compile running here;
    RuntimeError elsewhere."""
    return _bound(_COMPILE)


def get_compile_platform_info():
    """get_compile_ctx()._get_platform_info(): a new CompilePlatformInfo,
    whose every query is refused on a host (no Ascend SoC)."""
    return get_compile_ctx()._get_platform_info()


class RuntimeAttrs:
    """The op's attributes by IR index: get_int(i), get_float(i) (float32
    values), ..., get_attr_num(). A bad index -> RuntimeError; a getter of
    another type -> TypeError (GE reads garbage there)."""

    __slots__ = ("_s", "_ir", "_v", "_op")

    def __init__(self, *a, **k):
        raise TypeError("RuntimeAttrs objects come from EagerOpExecutionContext.get_attrs()")

    @classmethod
    def _make(cls, scope, ir_attrs, values, op_type):
        r = object.__new__(cls)
        r._s, r._ir, r._v, r._op = scope, ir_attrs, values, op_type
        return r

    def _live(self):
        if not self._s.valid:
            raise RuntimeError("Borrowed runtime attrs have expired (op %r: RuntimeAttrs are "
                               "valid only during the call)" % self._op)

    def get_attr_num(self):
        self._live()
        return len(self._ir)

    def _get(self, index, ir, getter):
        self._live()
        index = _nonneg(index, "index")
        if index >= len(self._ir):
            raise RuntimeError("op %r: %s(%d): no attribute at that index (the op has %d)"
                               % (self._op, getter, index, len(self._ir)))
        name, have = self._ir[index][0], self._ir[index][1]
        if have != ir:
            raise TypeError("op %r: %s(%d): attribute %r is %s, not %s"
                            % (self._op, getter, index, name, have, ir))
        v = self._v[index]
        return list(v) if isinstance(v, list) and ir != "VT_LIST_LIST_INT" else \
            ([list(r) for r in v] if ir == "VT_LIST_LIST_INT" else v)

    def get_int(self, index):
        return self._get(index, "VT_INT", "get_int")

    def get_float(self, index):
        return self._get(index, "VT_FLOAT", "get_float")

    def get_bool(self, index):
        return self._get(index, "VT_BOOL", "get_bool")

    def get_str(self, index):
        return self._get(index, "VT_STRING", "get_str")

    def get_data_type(self, index):
        return self._get(index, "VT_DATA_TYPE", "get_data_type")

    def get_tensor(self, index):
        return self._get(index, "VT_TENSOR", "get_tensor")

    def get_list_int(self, index):
        return self._get(index, "VT_LIST_INT", "get_list_int")

    def get_list_float(self, index):
        return self._get(index, "VT_LIST_FLOAT", "get_list_float")

    def get_list_bool(self, index):
        return self._get(index, "VT_LIST_BOOL", "get_list_bool")

    def get_list_str(self, index):
        return self._get(index, "VT_LIST_STRING", "get_list_str")

    def get_list_data_type(self, index):
        return self._get(index, "VT_LIST_DATA_TYPE", "get_list_data_type")

    def get_list_list_int(self, index):
        return self._get(index, "VT_LIST_LIST_INT", "get_list_list_int")


def _attr_values(ir, kw, scope):
    """The attribute values by IR index, as GE delivers them (defaults
    applied: libpyop gives every attribute)."""
    vals = []
    for n, t, d, has in ir.attrs:
        v = kw[n] if n in kw else d
        if t == "VT_TENSOR":
            vals.append(wrap_tensor(scope, v) if v is not None else None)
        else:
            vals.append(attr_from_pyop(t, v))
    return vals


class _ExecBase:
    """What both execute contexts share: the bridge-only input readers
    (_get_*), output allocation through libpyop's host, validity."""

    __slots__ = ("_s", "_p", "_op", "_ir", "_args", "_kw", "_slots", "_flat", "_vals",
                 "_outs", "_ws", "_counts", "_next", "_mal")
    _EXPIRED = "Borrowed native object has expired"
    _HOST = False

    def __init__(self, *a, **k):
        raise TypeError("%s objects are made by the runtime only" % type(self).__name__)

    @classmethod
    def _make(cls, scope, op_type, ir, inputs, kw, attr_values=None):
        """inputs: pyop's positional execute arguments in IR order; kw: the
        attribute values by name. Everything else is read on first use."""
        c = object.__new__(cls)
        c._s = scope
        c._p = None
        c._op = op_type
        c._ir = ir
        c._args = inputs
        c._kw = kw
        c._slots = None
        c._flat = None
        c._vals = attr_values
        c._outs = None
        c._ws = None
        c._counts = None
        c._next = None
        c._mal = None
        return c

    def _close(self):
        self._s.valid = False
        for t in self._flat or ():
            if not isinstance(t, _View):
                t._pt = None
        self._p = self._ws = self._outs = self._slots = self._flat = self._mal = None
        self._args = self._kw = None

    def _check(self):
        if not self._s.valid:
            raise RuntimeError("%s (op %r: the execute context is valid only during the call)"
                               % (self._EXPIRED, self._op))

    def _pyop(self):
        p = self._p
        if p is None:
            p = self._p = pyop.get_execute_ctx()
        return p

    def _view(self, a):
        """The ge.runtime.Tensor of input a: a view the bridge made (a
        directly called kernel's) is that very Tensor."""
        return a if isinstance(a, Tensor) else Tensor._lazy(self._s, a)

    def _in(self):
        """(slots, flat) of the inputs, made on first use."""
        if self._slots is None:
            slots, flat = [], []
            for (name, kind), a in zip(self._ir.inputs, self._args):
                if kind == 2:  # a list (one tensor alone when the bridge knew no kinds)
                    seq = a if isinstance(a, list) else ([] if a is None else [a])
                    ts = [self._view(x) for x in seq]
                elif a is None:
                    ts = []
                else:
                    ts = [self._view(a)]
                slots.append(ts)
                flat.extend(ts)
            self._slots, self._flat = slots, flat
        return self._slots, self._flat

    # ------------------------------------------------ inputs (bridge-only)
    def _get_input_num(self):
        self._check()
        return len(self._in()[1])

    def _get_input_tensor(self, index):
        self._check()
        index = _nonneg(index, "index")
        flat = self._in()[1]
        if index >= len(flat):
            raise RuntimeError("op %r: get_input_tensor(%d): no such input (%d connected)"
                               % (self._op, index, len(flat)))
        return flat[index]

    def _slot(self, ir_index, fname):
        ir_index = _nonneg(ir_index, "ir_index")
        slots = self._in()[0]
        if ir_index >= len(slots):
            raise RuntimeError("op %r: %s(%d): the op has %d IR inputs"
                               % (self._op, fname, ir_index, len(slots)))
        return ir_index, slots[ir_index]

    def _get_dynamic_input_num(self, ir_index):
        self._check()
        return len(self._slot(ir_index, "get_dynamic_input_num")[1])

    def _get_required_input_tensor(self, ir_index):
        self._check()
        i, s = self._slot(ir_index, "get_required_input_tensor")
        if len(s) != 1 or self._ir.inputs[i][1] == 2:
            raise RuntimeError("op %r: get_required_input_tensor(%d): input %r is not a "
                               "connected required input" % (self._op, i, self._ir.inputs[i][0]))
        return s[0]

    def _get_optional_input_tensor(self, ir_index):
        self._check()
        i, s = self._slot(ir_index, "get_optional_input_tensor")
        if self._ir.inputs[i][1] == 2:
            raise RuntimeError("op %r: get_optional_input_tensor(%d): input %r is dynamic"
                               % (self._op, i, self._ir.inputs[i][0]))
        return s[0] if s else None

    def _get_dynamic_input_tensor(self, ir_index, relative_index):
        self._check()
        i, s = self._slot(ir_index, "get_dynamic_input_tensor")
        relative_index = _nonneg(relative_index, "relative_index")
        if relative_index >= len(s):
            raise RuntimeError("op %r: get_dynamic_input_tensor(%d, %d): input %r has %d "
                               "instances" % (self._op, i, relative_index,
                                              self._ir.inputs[i][0], len(s)))
        return s[relative_index]

    def _get_attrs(self):
        self._check()
        if self._vals is None:
            self._vals = _attr_values(self._ir, self._kw, self._s)
        return RuntimeAttrs._make(self._s, self._ir.attrs, self._vals, self._op)

    def _invalidate(self):
        self._close()

    # ----------------------------------------------------------- outputs
    def _out_slot(self, index, fname):
        """(output slot, instance) of the flattened output index: dynamic
        outputs count their instances (known from infer_meta's lists, or
        unbounded for a dynamic output that comes last)."""
        if self._ir.outputs is None:  # a host prototype: pyop checks the index
            return index, 0
        kinds = [k for _, k in self._ir.outputs]
        if 1 not in kinds:
            if index >= len(kinds):
                raise RuntimeError("op %r: %s(%d): the op has %d outputs"
                                   % (self._op, fname, index, len(kinds)))
            return index, 0
        counts = self._counts
        if counts is None:
            if kinds.index(1) == len(kinds) - 1:
                counts = [1] * (len(kinds) - 1) + [1 << 62]
            else:
                counts = self._count_outputs()
            self._counts = counts
        flat = 0
        for slot, n in enumerate(counts):
            if index < flat + n:
                return slot, index - flat
            flat += n
        raise RuntimeError("op %r: %s(%d): the op has %d output instances (infer_meta)"
                           % (self._op, fname, index, flat))

    def _count_outputs(self):
        """Instance counts per output from the op's infer_meta."""
        fn = getattr(self._ir, "func", None)
        if fn is None:
            raise RuntimeError("op %r: the instance counts of its dynamic outputs are unknown "
                               "(no Python prototype)" % self._op)
        from ..runtime import TensorDesc

        def desc(t):
            m = t._m()
            return TensorDesc(list(m._t), m._dt)

        args = []
        for (name, kind), ts in zip(self._ir.inputs, self._in()[0]):
            args.append([desc(t) for t in ts] if kind == 2 else (desc(ts[0]) if ts else None))
        if self._vals is None:
            self._vals = _attr_values(self._ir, self._kw, self._s)
        kw = {a[0]: v for a, v in zip(self._ir.attrs, self._vals)}
        r = fn(*args, **kw)
        outs = self._ir.outputs
        r = (r,) if len(outs) == 1 else tuple(r)
        return [len(x) if k == 1 else 1 for (_, k), x in zip(outs, r)]

    def _fail(self, what, e):
        """The error of a failed output call: GE's RuntimeError text for a
        HOST context, libpyop's message either way."""
        if self._HOST:
            return RuntimeError("%s: %s" % (what, e))
        return RuntimeError(str(e))

    def malloc_output_tensor(self, index, shape, format, dtype):
        """Host memory for output `index` (flattened): storage shape x dtype."""
        self._check()
        try:
            return self._malloc(index, shape, format, dtype)
        except RuntimeError as e:
            if self._HOST:
                raise RuntimeError("Failed to malloc host output tensor: %s" % e) from e
            raise

    def _malloc(self, index, shape, format, dtype):
        index = _nonneg(index, "index")
        if not isinstance(shape, StorageShape):
            raise RuntimeError("Unable to cast Python instance of type %s to C++ type "
                               "'gert::StorageShape'" % type(shape).__name__)
        if not isinstance(format, StorageFormat):
            raise RuntimeError("Unable to cast Python instance of type %s to C++ type "
                               "'gert::StorageFormat'" % type(format).__name__)
        _check_view(shape._s)
        _check_view(format._s)
        slot, inst = self._out_slot(index, "malloc_output_tensor")
        name, kind = (self._ir.outputs[slot] if self._ir.outputs is not None
                      else ("output%d" % slot, 0))
        if self._HOST and slot in getattr(self._ir, "alias", {}):
            raise RuntimeError("op %r: malloc_output_tensor(%d): output %r is a ref output "
                               "(its IR name is an input's); use make_output_ref_input"
                               % (self._op, index, name))
        prev = self._mal.get(index) if self._mal is not None else None
        if prev is not None:
            return self._again(index, prev, shape, format, dtype)
        if kind == 1:
            name = "%s%d" % (name, inst)  # GE's instance name
            nxt = self._next or {}
            want = nxt.get(slot, 0)
            if inst != want:
                raise RuntimeError("op %r: malloc_output_tensor(%d): instance %r of a dynamic "
                                   "output allocated before instance %d; libpyop allocates a "
                                   "dynamic output's instances in order"
                                   % (self._op, index, name, want))
        what = "op %r: malloc_output_tensor output %r" % (self._op, name)
        gdt = _convert.ge_dtype(dtype, what + " dtype")
        pdt = _convert.dtype_to_pyop(gdt, what + " dtype")
        sfmt = format._f[1]
        pfmt = _convert.format_to_pyop(sfmt, what + " storage format")
        dims = list(shape._t)
        try:
            t = self._pyop().malloc_output_tensor(slot, tuple(dims), pdt, pfmt)
        except (ValueError, IndexError, OverflowError, TypeError, RuntimeError) as e:
            raise RuntimeError("%s: allocation of %s[%s] failed: %s"
                               % (what, gdt.name, ",".join(map(str, dims)), e)) from e
        if kind == 1:
            if self._next is None:
                self._next = {}
            self._next[slot] = inst + 1
        out = Tensor._make(self._s, t.data_ptr, t.nbytes, dims, gdt, sfmt,
                           TensorPlacement.ON_HOST)
        out._o[:] = shape._o
        out._f[0] = format._f[0]
        out._e[:] = format._e
        if self._outs is None:
            self._outs = {}
        if self._mal is None:
            self._mal = {}
        self._outs[index] = out
        self._mal[index] = out
        return out

    def _again(self, index, prev, shape, format, dtype):
        """malloc_output_tensor for an output that already has memory: GE
        returns that tensor. libpyop does so when the description is the one
        it was allocated with; another one is refused (GE would rewrite the
        description over the same buffer, which may be too small, and the
        host was told the first one)."""
        gdt = _convert.ge_dtype(dtype, "op %r: malloc_output_tensor dtype" % self._op)
        m = prev._m()
        if (list(shape._t), list(shape._o), list(format._f), list(format._e), gdt) == \
                (m._t, m._o, m._f, m._e, m._dt):
            return prev
        raise RuntimeError(
            "op %r: malloc_output_tensor(%d): the output already has memory (%s[%s] %s, %d "
            "bytes, from an earlier malloc_output_tensor of this call), asked again as %s[%s] "
            "%s: libpyop returns an output's memory again only for the same description"
            % (self._op, index, m._dt.name, ",".join(map(str, m._t)), m._f[1].name, m._size,
               gdt.name, ",".join(map(str, shape._t)), format._f[1].name))

    def make_output_ref_input(self, output_index, input_index):
        """Output `output_index` is input `input_index`'s buffer (same addr);
        the output must be bound to that input by mutates_args."""
        self._check()
        try:
            return self._ref(output_index, input_index)
        except RuntimeError as e:
            if self._HOST:
                raise RuntimeError("Failed to make host output reference input: %s" % e) from e
            raise

    def _ref(self, output_index, input_index):
        output_index = _nonneg(output_index, "output_index")
        input_index = _nonneg(input_index, "input_index")
        slot, _ = self._out_slot(output_index, "make_output_ref_input")
        slots, flat_in = self._in()
        in_slot, flat = None, 0
        for k, ts in enumerate(slots):
            if input_index < flat + len(ts):
                in_slot = k
                break
            flat += len(ts)
        if in_slot is None:
            raise RuntimeError("op %r: make_output_ref_input(%d, %d): no such input (%d "
                               "connected)" % (self._op, output_index, input_index, flat))
        if self._ir.outputs is not None and self._ir.alias.get(slot) != in_slot:
            raise RuntimeError("op %r: make_output_ref_input(%d, %d): output %r is not bound "
                               "to input %r by mutates_args" % (
                                   self._op, output_index, input_index,
                                   self._ir.outputs[slot][0], self._ir.inputs[in_slot][0]))
        bind = getattr(self._pyop(), "make_output_ref_input", None)
        if bind is None:
            raise RuntimeError("op %r: make_output_ref_input(%d, %d): output aliases of inputs "
                               "are not supported by this libpyop"
                               % (self._op, output_index, input_index))
        try:
            t = bind(slot, in_slot)
        except (IndexError, ValueError, RuntimeError) as e:
            raise RuntimeError("op %r: make_output_ref_input(%d, %d): output %r cannot be "
                               "input %r's buffer (declare it with mutates_args): %s"
                               % (self._op, output_index, input_index,
                                  "output%d" % slot if self._ir.outputs is None
                                  else self._ir.outputs[slot][0],
                                  self._ir.inputs[in_slot][0], e)) from e
        src = flat_in[input_index]._m()
        out = Tensor._make(self._s, t.data_ptr, t.nbytes, src._t, src._dt, src._f[1],
                           TensorPlacement.ON_HOST)
        if self._outs is None:
            self._outs = {}
        self._outs[output_index] = out
        return out

    def get_output_tensor(self, index):
        self._check()
        index = _nonneg(index, "index")
        t = self._outs.get(index) if self._outs is not None else None
        if t is None:
            msg = ("op %r: get_output_tensor(%d): output not allocated (use "
                   "malloc_output_tensor or make_output_ref_input first)" % (self._op, index))
            if self._HOST:
                msg = "Failed to get host output tensor: " + msg
            raise RuntimeError(msg)
        return t


class EagerOpExecutionContext(_ExecBase):
    """The execute context of a DEVICE kernel, run on the host: inputs are
    host tensors, outputs and workspaces host memory allocated through
    libpyop's host. GE master's public input getters are kept beside the
    bridge-only _get_* names of newer GE, so old and new plugins both run."""

    __slots__ = ()

    get_input_num = _ExecBase._get_input_num
    get_input_tensor = _ExecBase._get_input_tensor
    get_dynamic_input_num = _ExecBase._get_dynamic_input_num
    get_required_input_tensor = _ExecBase._get_required_input_tensor
    get_optional_input_tensor = _ExecBase._get_optional_input_tensor
    get_dynamic_input_tensor = _ExecBase._get_dynamic_input_tensor
    get_attrs = _ExecBase._get_attrs

    def malloc_workspace(self, size):
        """The address of `size` bytes of host scratch memory for this call."""
        self._check()
        size = _nonneg(size, "size")
        try:
            t = self._pyop().malloc_workspace(size)
        except (ValueError, OverflowError, RuntimeError) as e:
            raise RuntimeError("op %r: malloc_workspace(%d) failed: %s"
                               % (self._op, size, e)) from e
        if self._ws is None:
            self._ws = []
        self._ws.append(t)
        return t.data_ptr

    def get_stream(self):
        """The host's stream value (0 when the host gives none)."""
        self._check()
        return int(self._pyop().stream or 0)


class HostCpuOpExecutionContext(_ExecBase):
    """The execute context of a HOST kernel (GE's host_cpu_execute): host
    memory; public malloc_output_tensor, make_output_ref_input and
    get_output_tensor only (no stream, no workspace: AttributeError, as in
    GE); failures are RuntimeErrors with GE's texts."""

    __slots__ = ()
    _EXPIRED = "Borrowed host native object has expired"
    _HOST = True


class InferMetaContext:
    """GE's bridge-only infer-meta context (exported by GE develop for
    import compatibility). Plugins never get one: their register_op function
    is called with TensorDesc arguments."""

    __slots__ = ()

    def __init__(self, *a, **k):
        raise TypeError("InferMetaContext objects are made by the runtime only")


_compile_options = {}


def set_compile_options(options):
    """Sets the options OpCompileContext.get_option sees (a dict of str to
    str; libpyop's host gives none by default). For Python hosts and tests."""
    if not isinstance(options, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in options.items()):
        raise TypeError("set_compile_options takes a dict of str to str")
    _compile_options.clear()
    _compile_options.update(options)


def _str_arg(v, what):
    if not isinstance(v, str):
        raise TypeError("%s must be a string" % what)
    if not v:
        raise ValueError("%s must not be empty" % what)
    return v


class OpCompileContext:
    """The compile context (GE 6e38964b+): get_option(key) and the
    bridge-only readers. Compile tensors are read-only descriptions (addr 0)."""

    __slots__ = ("_s", "_op", "_ins", "_outs", "_vals", "_ir")

    def __init__(self, *a, **k):
        raise TypeError("OpCompileContext objects are made by the runtime only")

    @classmethod
    def _make(cls, scope, op_type, ir, ins, outs, vals):
        c = object.__new__(cls)
        c._s, c._op, c._ir, c._ins, c._outs, c._vals = scope, op_type, ir, ins, outs, vals
        return c

    def _check(self):
        if not self._s.valid:
            raise RuntimeError("Borrowed native object has expired (op %r: the compile context "
                               "is valid only during compile)" % self._op)

    def get_option(self, option_key):
        """The compile option's value (a copy); KeyError for an option the
        host does not give."""
        self._check()
        _str_arg(option_key, "option_key")
        try:
            return str(_compile_options[option_key])
        except KeyError:
            raise KeyError(option_key) from None

    def _get_platform_info(self):
        self._check()
        p = object.__new__(CompilePlatformInfo)
        p._c = self
        return p

    def _get_required_input_tensor(self, ir_index):
        self._check()
        return self._ins[ir_index]

    def _get_optional_input_tensor(self, ir_index):
        self._check()
        return self._ins[ir_index]

    def _get_dynamic_input_num(self, ir_index):
        self._check()
        return len(self._ins[ir_index])

    def _get_dynamic_input_tensor(self, ir_index, relative_index):
        self._check()
        return self._ins[ir_index][relative_index]

    def _get_required_output_tensor(self, ir_index):
        self._check()
        return self._outs[ir_index]

    def _get_dynamic_output_num(self, ir_index):
        self._check()
        return len(self._outs[ir_index])

    def _get_dynamic_output_tensor(self, ir_index, relative_index):
        self._check()
        return self._outs[ir_index][relative_index]

    def _get_attrs(self):
        self._check()
        return RuntimeAttrs._make(self._s, self._ir.attrs, self._vals, self._op)

    def _invalidate(self):
        self._s.valid = False


class CompilePlatformInfo:
    """GE's target-SoC description. A host-only libpyop has no Ascend SoC:
    every query raises NotImplementedError naming the method and the op
    (nothing is invented)."""

    __slots__ = ("_c",)

    def __init__(self, *a, **k):
        raise TypeError("CompilePlatformInfo objects come from get_compile_platform_info()")

    def _refuse(self, method):
        self._c._check()
        raise NotImplementedError(
            "CompilePlatformInfo.%s (op %r): no Ascend SoC platform on a host-only build; "
            "libpyop runs GE plugins on the host, and a kernel compiled for an NPU needs one "
            "(docs/ge-plugins.md)" % (method, self._c._op))

    def get_platform_resource(self, group, key):
        self._c._check()
        _str_arg(group, "group")
        _str_arg(key, "key")
        self._refuse("get_platform_resource")

    def get_platform_resource_group(self, group):
        self._c._check()
        _str_arg(group, "group")
        self._refuse("get_platform_resource_group")

    def get_core_num(self, core_type=None):
        self._c._check()
        if core_type is not None:
            _str_arg(core_type, "core_type")
        self._refuse("get_core_num")

    def get_soc_version(self):
        self._refuse("get_soc_version")

    def get_ai_core_num(self):
        self._refuse("get_ai_core_num")
