"""The declare_launch_args side of ge.custom_op (GE's annotated launch
arguments) on a host: the context, its workspaces (real host memory), the
kernel arguments recorded as GE records them, and add_launch, which needs
an NPU. Split from context.py, which re-exports every name."""

import ctypes

from ..runtime import _Scope, Tensor

__all__ = ["WorkspaceAddr", "AnnotatedKernelLaunchInfo", "AnnotatedKernelArgs",
           "AnnotatedArgsContext"]


def _nonneg(v, what):
    """v when it is an int >= 0 (not a bool), else TypeError naming what."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int, got %s" % (what, type(v).__name__))
    if v < 0:
        raise TypeError("%s must be >= 0, got %d" % (what, v))
    return v


class WorkspaceAddr:
    """A workspace of declare_launch_args: read-only index and addr."""

    __slots__ = ("_i", "_a", "_s")

    def __init__(self, *a, **k):
        raise TypeError("WorkspaceAddr objects come from AnnotatedArgsContext.malloc_workspace()")

    def _live(self):
        if not self._s.valid:
            raise RuntimeError("Borrowed native object has expired (a WorkspaceAddr is valid "
                               "only during declare_launch_args)")

    @property
    def index(self):
        self._live()
        return self._i

    @property
    def addr(self):
        self._live()
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
            raise ValueError("block_dim must be greater than zero")
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
            raise RuntimeError("AnnotatedKernelArgs has been consumed (by add_launch)")
        self._ctx._check()

    def _tensor(self, kind, index, tensor, n):
        self._live()
        index = _nonneg(index, "instance_index")
        if not isinstance(tensor, Tensor):
            raise TypeError("append_%s() takes a ge.runtime.Tensor, got %s"
                            % (kind, type(tensor).__name__))
        if index >= n:
            raise IndexError("%s instance index %d is out of range for %s count %d (op %r)"
                             % (kind, index, kind, n, self._ctx._op))
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

    def _check(self):
        if not self._s.valid:
            raise RuntimeError("Borrowed native object has expired (op %r: the "
                               "declare_launch_args context is valid only during the call)"
                               % self._op)

    def malloc_workspace(self, size):
        self._check()
        size = _nonneg(size, "size")
        if size == 0:
            raise ValueError("workspace size must be greater than zero (op %r: "
                             "malloc_workspace(0))" % self._op)
        buf = ctypes.create_string_buffer(size)
        self._ws.append(buf)
        w = object.__new__(WorkspaceAddr)
        w._i = len(self._ws) - 1
        w._a = ctypes.addressof(buf)
        w._s = self._s
        return w

    def get_stream_id(self):
        self._check()
        return 0

    def create_kernel_args(self):
        self._check()
        a = object.__new__(AnnotatedKernelArgs)
        a._ctx = self
        a._args = []
        a._used = False
        return a

    def add_launch(self, launch_info, args):
        self._check()
        if not isinstance(launch_info, AnnotatedKernelLaunchInfo):
            raise TypeError("add_launch() takes an AnnotatedKernelLaunchInfo, got %s"
                            % type(launch_info).__name__)
        if not isinstance(args, AnnotatedKernelArgs):
            raise TypeError("add_launch() takes AnnotatedKernelArgs, got %s"
                            % type(args).__name__)
        args._live()
        if launch_info._stream != self.get_stream_id():
            raise ValueError("launch stream_id does not match current context stream_id (op %r: "
                             "launch_info.stream_id %d, context %d)"
                             % (self._op, launch_info._stream, self.get_stream_id()))
        args._used = True
        args._args = None
        raise NotImplementedError(
            "op %r: AnnotatedArgsContext.add_launch of NPU kernel %r needs an NPU: "
            "libpyop runs on the host and cannot run an NPU kernel binary; the op's "
            "execute (if it has one) runs instead (docs/ge-plugins.md)"
            % (self._op, launch_info._name))
