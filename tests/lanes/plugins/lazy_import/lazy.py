"""Ops that import, inside a call, a module an interpreter lane refuses
(tests/lanes/lanes_load.c, lazy_import): the main interpreter imports it.
Each computes y[0] = x[0] and y[1] = the id of the interpreter that ran it.

  LazyExt      execute imports the extension module (_ctypes on 3.12,
               _testsinglephase on 3.13) before anything else
  LazyLate     execute allocates its output, then imports it
  LazyInit     the implementation's constructor imports it
  LazyAsyncio  execute imports asyncio (refused in a lane on 3.12 only)
  LazyOptional execute imports the extension module and goes on without it
               when that raises ImportError (the optional-extension
               pattern, lazily): its calls never fail
  LazyOptHost  the same as LazyOptional (a host that refuses its output:
               lanes_load.c's lazy_host_status)
  LazyOptInit  the implementation's constructor does the same (its objects
               deleted are counted per interpreter)
  LazyWs       execute takes a workspace, then imports the extension module
  LazyDel      execute imports the extension module; y[2] = how many
               LazyDel objects this interpreter has deleted so far
  LazyInfer    its infer_meta imports the extension module, then says
               y has one element more than x
  LazyInferList  its infer_meta returns a dynamic output of two tensors,
               the second a description whose shape, read after the first
               was added, imports the extension module
  LaneDeleted  y[0] = how many LazyDel objects this interpreter deleted,
               y[1] its id, y[2] how many LazyOptInit objects (no import:
               runs in lanes)
  LaneInto     x += 1 in place, the output bound to x's buffer (no import:
               runs in lanes)
  LazyInto     the same, then imports the extension module
  AsyncioNamed execute looks for a module whose name starts with "asyncio"
               (absent: ModuleNotFoundError, caught): runs in lanes on 3.12 too
  LaneCompile  compile stores the artifact "id N", N the interpreter's id
  LazyCompile  the same, then imports the extension module
  LaneDeclare  declare_launch_args declares a launch of libc's abs
  LazyDeclare  the same, then imports the extension module
  LazyDeclareWs  declares a workspace, imports the extension module, then
               declares the launch
"""
import importlib
import sys

import pyop
from pyop import Tensor, TensorDesc, launch

EXT = "_ctypes" if sys.version_info < (3, 13) else "_testsinglephase"


def _interp_id():
    try:
        import _interpreters as i  # 3.13
    except ImportError:
        import _xxsubinterpreters as i  # 3.12
    cur = i.get_current()
    return int(cur[0] if isinstance(cur, tuple) else cur)


def _try_import(module):
    try:
        importlib.import_module(module)
    except ImportError:
        pass  # an optional accelerator: the op goes on without it


def _run(x, module=None, late=False):
    if module is not None and not late:
        importlib.import_module(module)
    out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
    if late:
        importlib.import_module(module)
    o = memoryview(out).cast("B").cast("f")
    o[0] = memoryview(x).cast("B").cast("f")[0]
    o[1] = float(_interp_id())


@pyop.register_op(op_type="LazyExt")
def lazy_ext(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyExt")
class LazyExtImpl:
    def execute(self, x: Tensor) -> None:
        _run(x, EXT)


@pyop.register_op(op_type="LazyLate")
def lazy_late(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyLate")
class LazyLateImpl:
    def execute(self, x: Tensor) -> None:
        _run(x, EXT, late=True)


@pyop.register_op(op_type="LazyInit")
def lazy_init(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyInit")
class LazyInitImpl:
    def __init__(self):
        importlib.import_module(EXT)

    def execute(self, x: Tensor) -> None:
        _run(x)


@pyop.register_op(op_type="LazyAsyncio")
def lazy_asyncio(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyAsyncio")
class LazyAsyncioImpl:
    def execute(self, x: Tensor) -> None:
        _run(x, "asyncio")


@pyop.register_op(op_type="LazyOptional")
def lazy_optional(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyOptional")
class LazyOptionalImpl:
    def execute(self, x: Tensor) -> None:
        _try_import(EXT)
        _run(x)


@pyop.register_op(op_type="LazyOptInit")
def lazy_opt_init(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


_opt_deleted = 0


@pyop.register_op_impl(op_type="LazyOptInit")
class LazyOptInitImpl:
    def __init__(self):
        _try_import(EXT)

    def __del__(self):
        global _opt_deleted
        _opt_deleted += 1

    def execute(self, x: Tensor) -> None:
        _run(x)


@pyop.register_op(op_type="LazyWs")
def lazy_ws(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyWs")
class LazyWsImpl:
    def execute(self, x: Tensor) -> None:
        pyop.get_execute_ctx().malloc_workspace(64)
        _run(x, EXT)


_deleted = 0


@pyop.register_op(op_type="LazyDel")
def lazy_del(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyDel")
class LazyDelImpl:
    def __del__(self):
        global _deleted
        _deleted += 1

    def execute(self, x: Tensor) -> None:
        importlib.import_module(EXT)
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        o[0] = memoryview(x).cast("B").cast("f")[0]
        o[1] = float(_interp_id())
        o[2] = float(_deleted)


@pyop.register_op(op_type="LazyInfer")
def lazy_infer(x: TensorDesc) -> TensorDesc:
    importlib.import_module(EXT)
    return TensorDesc(shape=(x.shape[0] + 1,), dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyInfer")
class LazyInferImpl:
    def execute(self, x: Tensor) -> None:
        _run(x)


class _LateDesc:
    """A TensorDesc look-alike whose shape imports the extension module:
    read by the bridge after the tensors before it were added."""

    def __init__(self, desc):
        self.dtype, self.format, self._shape = desc.dtype, desc.format, desc.shape

    @property
    def shape(self):
        importlib.import_module(EXT)
        return self._shape


@pyop.register_op(op_type="LazyInferList")
def lazy_infer_list(x: TensorDesc) -> list[TensorDesc]:
    y = TensorDesc(shape=x.shape, dtype=x.dtype)
    return [y, _LateDesc(y)]


@pyop.register_op_impl(op_type="LazyInferList")
class LazyInferListImpl:
    def execute(self, x: Tensor) -> None:
        pass


@pyop.register_op(op_type="LaneDeleted")
def lane_deleted(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LaneDeleted")
class LaneDeletedImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        o[0] = float(_deleted)
        o[1] = float(_interp_id())
        o[2] = float(_opt_deleted)


def _add_one(x):
    xv = memoryview(x).cast("B").cast("f")
    for i in range(len(xv)):
        xv[i] += 1.0
    del xv
    pyop.get_execute_ctx().make_output_ref_input(0, 0)


@pyop.register_op(op_type="LaneInto", mutates_args=("x",), outputs=("x",))
def lane_into(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="LaneInto")
class LaneIntoImpl:
    def execute(self, x: Tensor) -> None:
        _add_one(x)


@pyop.register_op(op_type="LazyInto", mutates_args=("x",), outputs=("x",))
def lazy_into(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="LazyInto")
class LazyIntoImpl:
    def execute(self, x: Tensor) -> None:
        _add_one(x)
        importlib.import_module(EXT)


@pyop.register_op(op_type="AsyncioNamed")
def asyncio_named(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="AsyncioNamed")
class AsyncioNamedImpl:
    def execute(self, x: Tensor) -> None:
        try:
            importlib.import_module("asyncio_pyop_absent")
        except ModuleNotFoundError:
            pass  # not asyncio: a lane of 3.12 looks for it as usual
        _run(x)


@pyop.register_op(op_type="LaneCompile")
def lane_compile(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LaneCompile")
class LaneCompileImpl:
    def execute(self, x: Tensor) -> None:
        _run(x)

    def compile(self, x, y):
        pyop.get_compile_ctx().set_artifact(b"id %d" % _interp_id())


@pyop.register_op(op_type="LazyCompile")
def lazy_compile(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyCompile")
class LazyCompileImpl:
    def execute(self, x: Tensor) -> None:
        _run(x)

    def compile(self, x, y):
        pyop.get_compile_ctx().set_artifact(b"id %d" % _interp_id())
        importlib.import_module(EXT)


def _libc():
    """The path of the C library mapped in this process (a kernel library
    whose abs() a declared launch names: declare only, never launched)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.rstrip("\n").partition("/")[2]
            if path and "/libc.so" in "/" + path:
                return "/" + path
    raise FileNotFoundError("libc.so is not mapped")


def _declare(late_import, workspace_first=False):
    ctx = pyop.get_declare_launch_args_ctx()
    if workspace_first:
        ctx.add_workspace(16)
        importlib.import_module(EXT)
    ctx.add_launch(_libc(), "abs", [launch.scalar("int32", _interp_id())])
    if late_import:
        importlib.import_module(EXT)


@pyop.register_op(op_type="LaneDeclare")
def lane_declare(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LaneDeclare")
class LaneDeclareImpl:
    def execute(self, x: Tensor) -> None:
        _run(x)

    def declare_launch_args(self, x, y):
        _declare(False)


@pyop.register_op(op_type="LazyDeclare")
def lazy_declare(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyDeclare")
class LazyDeclareImpl:
    def execute(self, x: Tensor) -> None:
        _run(x)

    def declare_launch_args(self, x, y):
        _declare(True)


@pyop.register_op(op_type="LazyDeclareWs")
def lazy_declare_ws(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyDeclareWs")
class LazyDeclareWsImpl:
    def execute(self, x: Tensor) -> None:
        _run(x)

    def declare_launch_args(self, x, y):
        _declare(False, workspace_first=True)


@pyop.register_op(op_type="LazyOptHost")
def lazy_opt_host(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyOptHost")
class LazyOptHostImpl:
    def execute(self, x: Tensor) -> None:
        _try_import(EXT)
        _run(x)
