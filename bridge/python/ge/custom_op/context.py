"""The execute and declare_launch_args contexts of GE's Python API, on a
host: EagerOpExecutionContext over pyop's execute context, and the
AnnotatedArgs classes, which behave as in GE up to add_launch (an NPU kernel
binary cannot run here: NotImplementedError naming it and the op).

A context, its RuntimeAttrs and every Tensor / view reached through them
share one validity flag: after the call, any access raises RuntimeError.
"""

import ctypes
import threading

import pyop

from .. import _convert
from ..graph.types import DataType
from ..runtime import (_Scope, ExpandDimsType, StorageFormat, StorageShape, Tensor,
                       TensorPlacement)

__all__ = ["get_execute_ctx", "get_declare_launch_args_ctx", "EagerOpExecutionContext",
           "RuntimeAttrs", "AnnotatedArgsContext", "AnnotatedKernelArgs",
           "AnnotatedKernelLaunchInfo", "WorkspaceAddr"]

_tls = threading.local()
_EXEC, _DECLARE = 1, 2


def _stack():
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


class binding:
    """Binds ctx (or None: a legacy call) for get_*_ctx() during a call; a
    nested call restores the outer binding."""

    __slots__ = ("entry",)

    def __init__(self, kind, ctx, op_type=None):
        self.entry = (kind, ctx, op_type)

    def __enter__(self):
        _stack().append(self.entry)

    def __exit__(self, *exc):
        s = _stack()
        s.pop()
        if not s:
            del _tls.stack
        return False


def current_op():
    """The op type of the innermost GE call on this thread, or None."""
    s = getattr(_tls, "stack", None)
    return s[-1][2] if s else None


def _bound(kind, fname):
    s = getattr(_tls, "stack", None)
    if s and s[-1][0] == kind and s[-1][1] is not None:
        return s[-1][1]
    raise RuntimeError("%s(): no schema-bound %s call is running on this thread (the "
                       "context exists only during the call; a legacy execute(self, ctx) "
                       "gets it as its argument)"
                       % (fname, "execute" if kind == _EXEC else "declare_launch_args"))


def get_execute_ctx():
    """The EagerOpExecutionContext of the schema-bound execute running on
    this thread; RuntimeError elsewhere."""
    return _bound(_EXEC, "get_execute_ctx")


def get_declare_launch_args_ctx():
    """The AnnotatedArgsContext of the declare_launch_args running on this
    thread; RuntimeError elsewhere."""
    return _bound(_DECLARE, "get_declare_launch_args_ctx")


def wrap_tensor(scope, t, placement=TensorPlacement.ON_HOST):
    """A ge.runtime.Tensor for a pyop Tensor (execute) or TensorDesc
    (declare_launch_args: addr 0)."""
    if isinstance(t, pyop.TensorDesc):
        return Tensor._make(scope, 0, 0, t.shape, _convert.dtype_from_pyop(t.dtype),
                            _convert.format_from_pyop(t.format), placement)
    return Tensor._make(scope, t.data_ptr, t.nbytes, t.shape,
                        _convert.dtype_from_pyop(t.dtype), _convert.format_from_pyop(t.format),
                        placement)


def _nonneg(v, what):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int, got %s" % (what, type(v).__name__))
    if v < 0:
        raise TypeError("%s must be >= 0, got %d" % (what, v))
    return v


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

    def get_attr_num(self):
        self._s.check()
        return len(self._ir)

    def _get(self, index, ir, getter):
        self._s.check()
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


class EagerOpExecutionContext:
    """The execute context (host-only): inputs are host tensors, outputs and
    workspaces are host memory allocated through libpyop's host."""

    __slots__ = ("_s", "_p", "_op", "_ir", "_slots", "_flat", "_vals", "_outs", "_ws",
                 "_counts", "_next")

    def __init__(self, *a, **k):
        raise TypeError("EagerOpExecutionContext objects are made by the runtime only")

    @classmethod
    def _make(cls, pyop_ctx, op_type, ir, inputs, attr_values):
        """inputs: pyop's positional execute arguments in IR order."""
        c = object.__new__(cls)
        c._s = _Scope("op %r: the execute context (or a Tensor or view from it)" % op_type)
        c._p = pyop_ctx
        c._op = op_type
        c._ir = ir
        slots, flat = [], []
        for (name, kind), a in zip(ir.inputs, inputs):
            if kind == 2:
                ts = [wrap_tensor(c._s, x) for x in a]
            elif a is None:
                ts = []
            else:
                ts = [wrap_tensor(c._s, a)]
            slots.append(ts)
            flat.extend(ts)
        c._slots = slots
        c._flat = flat
        c._vals = attr_values
        c._counts = None
        c._next = {}
        c._outs = {}
        c._ws = []
        return c

    def _close(self):
        self._s.valid = False
        self._p = None
        self._ws = None
        self._outs = None
        self._slots = self._flat = None

    def _check(self):
        self._s.check()

    # ------------------------------------------------------------ inputs
    def get_input_num(self):
        self._check()
        return len(self._flat)

    def get_input_tensor(self, index):
        self._check()
        index = _nonneg(index, "index")
        if index >= len(self._flat):
            raise RuntimeError("op %r: get_input_tensor(%d): no such input (%d connected)"
                               % (self._op, index, len(self._flat)))
        return self._flat[index]

    def _slot(self, ir_index, fname):
        ir_index = _nonneg(ir_index, "ir_index")
        if ir_index >= len(self._slots):
            raise RuntimeError("op %r: %s(%d): the op has %d IR inputs"
                               % (self._op, fname, ir_index, len(self._slots)))
        return ir_index, self._slots[ir_index]

    def get_dynamic_input_num(self, ir_index):
        self._check()
        return len(self._slot(ir_index, "get_dynamic_input_num")[1])

    def get_required_input_tensor(self, ir_index):
        self._check()
        i, s = self._slot(ir_index, "get_required_input_tensor")
        if len(s) != 1 or self._ir.inputs[i][1] == 2:
            raise RuntimeError("op %r: get_required_input_tensor(%d): input %r is not a "
                               "connected required input" % (self._op, i, self._ir.inputs[i][0]))
        return s[0]

    def get_optional_input_tensor(self, ir_index):
        self._check()
        i, s = self._slot(ir_index, "get_optional_input_tensor")
        if self._ir.inputs[i][1] == 2:
            raise RuntimeError("op %r: get_optional_input_tensor(%d): input %r is dynamic"
                               % (self._op, i, self._ir.inputs[i][0]))
        return s[0] if s else None

    def get_dynamic_input_tensor(self, ir_index, relative_index):
        self._check()
        i, s = self._slot(ir_index, "get_dynamic_input_tensor")
        relative_index = _nonneg(relative_index, "relative_index")
        if relative_index >= len(s):
            raise RuntimeError("op %r: get_dynamic_input_tensor(%d, %d): input %r has %d "
                               "instances" % (self._op, i, relative_index,
                                              self._ir.inputs[i][0], len(s)))
        return s[relative_index]

    def get_attrs(self):
        self._check()
        return RuntimeAttrs._make(self._s, self._ir.attrs, self._vals, self._op)

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
            return TensorDesc(list(t._t), t._dt)

        args = []
        for (name, kind), ts in zip(self._ir.inputs, self._slots):
            args.append([desc(t) for t in ts] if kind == 2 else (desc(ts[0]) if ts else None))
        kw = {a[0]: v for a, v in zip(self._ir.attrs, self._vals)}
        r = fn(*args, **kw)
        outs = self._ir.outputs
        r = (r,) if len(outs) == 1 else tuple(r)
        return [len(x) if k == 1 else 1 for (_, k), x in zip(outs, r)]

    def malloc_output_tensor(self, index, shape, format, dtype):
        """Host memory for output `index` (flattened): storage shape x dtype."""
        self._check()
        index = _nonneg(index, "index")
        if not isinstance(shape, StorageShape):
            raise RuntimeError("Unable to cast Python instance of type %s to C++ type "
                               "'gert::StorageShape'" % type(shape).__name__)
        if not isinstance(format, StorageFormat):
            raise RuntimeError("Unable to cast Python instance of type %s to C++ type "
                               "'gert::StorageFormat'" % type(format).__name__)
        slot, inst = self._out_slot(index, "malloc_output_tensor")
        name, kind = (self._ir.outputs[slot] if self._ir.outputs is not None
                      else ("output%d" % slot, 0))
        if kind == 1:
            name = "%s%d" % (name, inst)  # GE's instance name
            want = self._next.get(slot, 0)
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
            t = self._p.malloc_output_tensor(slot, tuple(dims), pdt, pfmt)
        except (ValueError, IndexError, OverflowError, TypeError, RuntimeError) as e:
            raise RuntimeError("%s: allocation of %s[%s] failed: %s"
                               % (what, gdt.name, ",".join(map(str, dims)), e)) from e
        if kind == 1:
            self._next[slot] = inst + 1
        out = Tensor._make(self._s, t.data_ptr, t.nbytes, dims, gdt, sfmt,
                           TensorPlacement.ON_HOST)
        out._o[:] = shape._o
        out._f[0] = format._f[0]
        out._e[:] = format._e
        self._outs[index] = out
        return out

    def make_output_ref_input(self, output_index, input_index):
        """Output `output_index` is input `input_index`'s buffer (same addr);
        the output must be bound to that input by mutates_args."""
        self._check()
        output_index = _nonneg(output_index, "output_index")
        input_index = _nonneg(input_index, "input_index")
        slot, _ = self._out_slot(output_index, "make_output_ref_input")
        in_slot, flat = None, 0
        for k, ts in enumerate(self._slots):
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
        bind = getattr(self._p, "make_output_ref_input", None)
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
        src = self._flat[input_index]
        out = Tensor._make(self._s, t.data_ptr, t.nbytes, src._t, src._dt, src._f[1],
                           TensorPlacement.ON_HOST)
        self._outs[output_index] = out
        return out

    def get_output_tensor(self, index):
        self._check()
        index = _nonneg(index, "index")
        t = self._outs.get(index)
        if t is None:
            raise RuntimeError("op %r: get_output_tensor(%d): output not allocated (use "
                               "malloc_output_tensor or make_output_ref_input first)"
                               % (self._op, index))
        return t

    def malloc_workspace(self, size):
        """The address of `size` bytes of host scratch memory for this call."""
        self._check()
        size = _nonneg(size, "size")
        try:
            t = self._p.malloc_workspace(size)
        except (ValueError, OverflowError, RuntimeError) as e:
            raise RuntimeError("op %r: malloc_workspace(%d) failed: %s"
                               % (self._op, size, e)) from e
        self._ws.append(t)
        return t.data_ptr

    def get_stream(self):
        """The host's stream value (0 when the host gives none)."""
        self._check()
        return int(self._p.stream or 0)


# ------------------------------------------------------- annotated args

class WorkspaceAddr:
    """A workspace of declare_launch_args: read-only index and addr."""

    __slots__ = ("_i", "_a", "_s")

    def __init__(self, *a, **k):
        raise TypeError("WorkspaceAddr objects come from AnnotatedArgsContext.malloc_workspace()")

    @property
    def index(self):
        self._s.check()
        return self._i

    @property
    def addr(self):
        self._s.check()
        return self._a

    def __repr__(self):
        return "WorkspaceAddr(index=%d, addr=%#x)" % (self._i, self._a)


def _uint32(v, what):
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < (1 << 32):
        raise TypeError("%s must be a uint32, got %r" % (what, v))
    return v


class AnnotatedKernelLaunchInfo:
    """AnnotatedKernelLaunchInfo(*, kernel_name, kernel_bin, block_dim,
    stream_id): an NPU kernel launch. Keyword-only; owns copies of its data.
    Building one works on a host; launching it (add_launch) needs an NPU."""

    __slots__ = ("_name", "_bin", "_block", "_stream")

    def __init__(self, *, kernel_name, kernel_bin, block_dim, stream_id):
        if not isinstance(kernel_name, str):
            raise TypeError("kernel_name must be a str, got %s" % type(kernel_name).__name__)
        if not isinstance(kernel_bin, (bytes, bytearray, memoryview)):
            raise TypeError("kernel_bin must be bytes, got %s" % type(kernel_bin).__name__)
        _uint32(block_dim, "block_dim")
        _uint32(stream_id, "stream_id")
        if not kernel_name:
            raise ValueError("kernel_name must not be empty")
        if len(kernel_bin) == 0:
            raise ValueError("kernel_bin must not be empty")
        if block_dim == 0:
            raise ValueError("block_dim must be > 0")
        self._name = kernel_name
        self._bin = bytes(kernel_bin)
        self._block = block_dim
        self._stream = stream_id

    def __repr__(self):
        return "<AnnotatedKernelLaunchInfo %s>" % self._name


class AnnotatedKernelArgs:
    """Kernel arguments, one per append_* call in call order; consumed by
    add_launch."""

    __slots__ = ("_ctx", "_args", "_used")

    def __init__(self, *a, **k):
        raise TypeError("AnnotatedKernelArgs objects come from "
                        "AnnotatedArgsContext.create_kernel_args()")

    def _live(self):
        if self._used:
            raise RuntimeError("AnnotatedKernelArgs used after add_launch consumed them")
        self._ctx._s.check()

    def _tensor(self, kind, index, tensor, n):
        self._live()
        index = _nonneg(index, "instance_index")
        if not isinstance(tensor, Tensor):
            raise TypeError("append_%s() takes a ge.runtime.Tensor, got %s"
                            % (kind, type(tensor).__name__))
        if index >= n:
            raise IndexError("append_%s(%d): the node has %d %s instances"
                             % (kind, index, n, kind))
        self._args.append((kind, index))

    def append_input(self, instance_index, tensor):
        self._tensor("input", instance_index, tensor, self._ctx._n_in)

    def append_output(self, instance_index, tensor):
        self._tensor("output", instance_index, tensor, self._ctx._n_out)

    def append_workspace(self, workspace):
        self._live()
        if not isinstance(workspace, WorkspaceAddr):
            raise TypeError("append_workspace() takes a WorkspaceAddr, got %s"
                            % type(workspace).__name__)
        self._args.append(("workspace", workspace._i))

    def append_scalar(self, value):
        self._live()
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << 64):
            raise TypeError("append_scalar() takes a uint64, got %r" % (value,))
        self._args.append(("scalar", value))


class AnnotatedArgsContext:
    """The declare_launch_args context (host-only): workspaces are real host
    memory, the stream id is 0, kernel args are recorded as in GE; add_launch
    raises NotImplementedError (an NPU kernel binary cannot run here)."""

    __slots__ = ("_s", "_op", "_n_in", "_n_out", "_ws", "_launches")

    def __init__(self, *a, **k):
        raise TypeError("AnnotatedArgsContext objects are made by the runtime only")

    @classmethod
    def _make(cls, op_type, n_in, n_out):
        c = object.__new__(cls)
        c._s = _Scope("op %r: the declare_launch_args context" % op_type)
        c._op = op_type
        c._n_in = n_in
        c._n_out = n_out
        c._ws = []
        c._launches = 0
        return c

    def _close(self):
        self._s.valid = False
        self._ws = None

    def malloc_workspace(self, size):
        self._s.check()
        size = _nonneg(size, "size")
        if size == 0:
            raise ValueError("malloc_workspace(0): size must be > 0")
        buf = ctypes.create_string_buffer(size)
        self._ws.append(buf)
        w = object.__new__(WorkspaceAddr)
        w._i = len(self._ws) - 1
        w._a = ctypes.addressof(buf)
        w._s = self._s
        return w

    def get_stream_id(self):
        self._s.check()
        return 0

    def create_kernel_args(self):
        self._s.check()
        a = object.__new__(AnnotatedKernelArgs)
        a._ctx = self
        a._args = []
        a._used = False
        return a

    def add_launch(self, launch_info, args):
        self._s.check()
        if not isinstance(launch_info, AnnotatedKernelLaunchInfo):
            raise TypeError("add_launch() takes an AnnotatedKernelLaunchInfo, got %s"
                            % type(launch_info).__name__)
        if not isinstance(args, AnnotatedKernelArgs):
            raise TypeError("add_launch() takes AnnotatedKernelArgs, got %s"
                            % type(args).__name__)
        args._live()
        if launch_info._stream != self.get_stream_id():
            raise ValueError("add_launch(): launch_info.stream_id %d is not this context's "
                             "stream id %d" % (launch_info._stream, self.get_stream_id()))
        args._used = True
        args._args = None
        raise NotImplementedError(
            "op %r: AnnotatedArgsContext.add_launch of NPU kernel %r needs an NPU: "
            "libpyop runs on the host and cannot run an NPU kernel binary; the op's "
            "execute (if it has one) runs instead (docs/ge-plugins.md)"
            % (self._op, launch_info._name))
