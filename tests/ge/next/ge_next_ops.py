"""GE-style ops written to GE's newest Python API (as docs/ge-plugins.md,
"Which GE versions", describes it): register_kernel with HOST and DEVICE kernels, the host
execution context, compile with its contexts and the one-instance-per-op-type
model, the legacy execute(ctx) with the private readers, and GE's departures
libpyop keeps on purpose (unallocated outputs). Checks that can only be made
inside a call are assertions there: a failed one fails the call (and the
test that makes it)."""

import ctypes

from ge.custom_op import (register_op, register_op_impl, register_kernel, OpBackend,
                          get_execute_ctx, get_compile_ctx, get_compile_platform_info,
                          EagerOpExecutionContext, HostCpuOpExecutionContext,
                          OpCompileContext, CompilePlatformInfo)
from ge.graph.types import DataType
from ge.runtime import Tensor, TensorDesc, StorageShape, StorageFormat


def view(t):
    return (ctypes.c_float * t.shape_size).from_address(t.addr)


def raises(exc, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        return str(e)
    raise AssertionError("%s did not raise %s" % (getattr(fn, "__name__", fn), exc.__name__))


def same_shape(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


# --- HOST and DEVICE kernels: the HOST one runs (out = x + y); the DEVICE
# one would give x - y.
register_op(op_type="GeNextBoth")(same_shape)


@register_op_impl(op_type="GeNextBoth")
class Both:
    @register_kernel(backend=OpBackend.DEVICE)
    def execute(self, x: Tensor, y: Tensor) -> None:
        ctx = get_execute_ctx()
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        for i, (a, b) in enumerate(zip(view(x), view(y))):
            view(z)[i] = a - b

    @register_kernel(backend=OpBackend.HOST)
    def execute(self, x: Tensor, y: Tensor) -> None:  # noqa: F811 (GE's pattern)
        ctx = get_execute_ctx()
        assert type(ctx) is HostCpuOpExecutionContext, type(ctx)
        for name in ("get_stream", "malloc_workspace", "get_input_tensor"):
            raises(AttributeError, getattr, ctx, name)
        assert ctx._get_input_num() == 2
        assert ctx._get_required_input_tensor(1).addr == y.addr
        msg = raises(RuntimeError, ctx.get_output_tensor, 0)
        assert "Failed to get host output tensor" in msg, msg
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        assert ctx.get_output_tensor(0) is z
        for i, (a, b) in enumerate(zip(view(x), view(y))):
            view(z)[i] = a + b


desc = Both.__ge_op_impl_descriptor__
assert desc.interfaces == ["eager_execute", "host_cpu_execute"], desc.interfaces
assert set(desc.kernel_bindings) == {OpBackend.DEVICE, OpBackend.HOST}
assert "__ge_pending_custom_op_kernels__" not in vars(Both)


# --- only a DEVICE kernel: run on the host with the eager context, public
# (GE master) and private (newest GE) readers alike. out = 2 x.
@register_op(op_type="GeNextDeviceOnly")
def device_only(x: TensorDesc, *, k: int = 2) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeNextDeviceOnly")
class DeviceOnly:
    @register_kernel(backend=OpBackend.DEVICE)
    def execute(self, x: Tensor, *, k: int) -> None:
        ctx = get_execute_ctx()
        assert type(ctx) is EagerOpExecutionContext
        assert ctx.get_input_num() == ctx._get_input_num() == 1
        assert ctx.get_attrs().get_int(0) == ctx._get_attrs().get_int(0) == k
        assert ctx.get_stream() == 0
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        for i, a in enumerate(view(x)):
            view(z)[i] = a * k


# --- compile: read-only descriptions, options, the platform refused, and
# the kernel it leaves on self read back by execute (one instance per op
# type, as in GE). execute writes the number of compiles it sees.
@register_op(op_type="GeNextCompiled")
def compiled(x: TensorDesc, *, scale: float = 1.0) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeNextCompiled")
class Compiled:
    def __init__(self):
        self.kernels = {}

    def compile(self, x: Tensor, y: Tensor, *, scale: float) -> None:
        ctx = get_compile_ctx()
        assert type(ctx) is OpCompileContext
        assert not hasattr(ctx, "get_soc_version")
        assert x.addr == 0 and y.addr == 0
        msg = raises(RuntimeError, x.storage_shape.set_dim, 0, 9)
        assert "borrowed object is read-only" in msg, msg
        raises(RuntimeError, x.format.set_storage_format, 0)
        raises(KeyError, ctx.get_option, "ge.exec.deviceId")
        raises(TypeError, ctx.get_option, 1)
        raises(ValueError, ctx.get_option, "")
        pi = get_compile_platform_info()
        assert type(pi) is CompilePlatformInfo
        for m, a in (("get_soc_version", ()), ("get_ai_core_num", ()), ("get_core_num", ()),
                     ("get_platform_resource", ("version", "NpuArch")),
                     ("get_platform_resource_group", ("version",))):
            msg = raises(NotImplementedError, getattr(pi, m), *a)
            assert "CompilePlatformInfo.%s" % m in msg and "'GeNextCompiled'" in msg and \
                "no Ascend SoC platform on a host-only build" in msg, msg
        key = (tuple(x.storage_shape.dims), x.data_type)
        self.kernels[key] = "kernel-%d" % len(self.kernels)
        self.saved = pi

    def execute(self, x: Tensor, *, scale: float) -> None:
        ctx = get_execute_ctx()
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        view(z)[0] = float(len(self.kernels))
        msg = raises(RuntimeError, self.saved.get_soc_version)
        assert "Borrowed native object has expired" in msg, msg


# --- the legacy form (GE master / develop) on a Python prototype: the
# context is the argument, get_execute_ctx() is unbound, the result ignored.
@register_op(op_type="GeNextLegacy")
def legacy(x: TensorDesc, *, bias: float = 0.5) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeNextLegacy")
class Legacy:
    def execute(self, ctx):
        msg = raises(RuntimeError, get_execute_ctx)
        assert "only available inside schema-bound execute" in msg, msg
        x = ctx._get_required_input_tensor(0)
        bias = ctx._get_attrs().get_float(0)
        assert bias == ctx.get_attrs().get_float(0)
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        for i, a in enumerate(view(x)):
            view(z)[i] = a + bias
        return 7  # ignored for the legacy form


# --- outputs left unallocated: PYOP_ECONTRACT at the op (a deliberate
# departure from GE, which lets the empty output flow downstream).
register_op(op_type="GeNextNoAlloc")(same_shape)


@register_op_impl(op_type="GeNextNoAlloc")
class NoAlloc:
    def execute(self, x: Tensor, y: Tensor) -> None:
        pass


# --- a schema-bound execute returning a value: GE's TypeError.
@register_op(op_type="GeNextReturns")
def returns(x: TensorDesc) -> None:
    return None


@register_op_impl(op_type="GeNextReturns")
class Returns:
    def execute(self, x: Tensor) -> None:
        return 1


# --- a HOST kernel of an in-place op: the ref output cannot be malloc'd on
# the host context (GE's "Failed to malloc host output tensor"); it is the
# input's buffer through make_output_ref_input. x *= 10 in place.
@register_op(op_type="GeNextHostRef", mutates_args=["x"])
def host_ref(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeNextHostRef")
class HostRef:
    @register_kernel(backend=OpBackend.HOST)
    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        msg = raises(RuntimeError, ctx.malloc_output_tensor, 0, x.shape, x.format, x.data_type)
        assert "Failed to malloc host output tensor" in msg and "ref output" in msg, msg
        out = ctx.make_output_ref_input(0, 0)
        assert out.addr == x.addr
        for i, a in enumerate(view(x)):
            view(x)[i] = a * 10


# --- a HOST kernel asking twice for output 0: GE returns the output that
# already has memory; libpyop does for the same description and refuses
# another one (docs/ge-plugins.md, "What runs on a host"). out = x + 1.
register_op(op_type="GeNextHostTwice")(same_shape)


@register_op_impl(op_type="GeNextHostTwice")
class HostTwice:
    @register_kernel(backend=OpBackend.HOST)
    def execute(self, x: Tensor, y: Tensor) -> None:
        ctx = get_execute_ctx()
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        assert ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type) is z
        msg = raises(RuntimeError, ctx.malloc_output_tensor, 0, StorageShape([1], [1]),
                     x.format, x.data_type)
        assert "Failed to malloc host output tensor" in msg and "already has memory" in msg, msg
        assert "float32" not in msg and "DT_FLOAT[4]" in msg and "DT_FLOAT[1]" in msg, msg
        for i, a in enumerate(view(x)):
            view(z)[i] = a + 1
