"""The NPU boundary: what a GE plugin does before it needs an NPU works on a
host; an NPU kernel launch and pyACL fail where they are used, naming the
element and the op; the plugin's other ops stay usable."""

import ctypes
from typing import List

from ge.custom_op import (register_op, register_op_impl, get_declare_launch_args_ctx,
                          get_execute_ctx, AnnotatedKernelLaunchInfo, AnnotatedArgsContext,
                          WorkspaceAddr)
from ge.graph.types import DataType
from ge.runtime import Tensor, TensorDesc

# Launch information built at import time must still load.
KERNEL = AnnotatedKernelLaunchInfo(kernel_name="add_custom_kernel", kernel_bin=b"\x7fNPU-BIN",
                                   block_dim=8, stream_id=0)


def _raises(exc, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc:
        return
    raise AssertionError("%s did not raise %s" % (fn, exc.__name__))


class _Declare:
    """declare_launch_args as GE samples write it; everything up to
    add_launch behaves as in GE."""

    def declare_launch_args(self, x: Tensor, y: Tensor, z: Tensor) -> None:
        ctx = get_declare_launch_args_ctx()
        assert isinstance(ctx, AnnotatedArgsContext)
        assert ctx.get_stream_id() == 0
        _raises(ValueError, ctx.malloc_workspace, 0)
        ws = ctx.malloc_workspace(256)
        assert isinstance(ws, WorkspaceAddr) and ws.index == 0 and ws.addr != 0
        ctypes.memset(ws.addr, 0, 256)  # real host memory
        assert ctx.malloc_workspace(16).index == 1
        args = ctx.create_kernel_args()
        args.append_input(0, x)
        args.append_input(1, y)
        _raises(IndexError, args.append_input, 2, x)
        args.append_output(0, z)
        _raises(IndexError, args.append_output, 1, z)
        args.append_workspace(ws)
        args.append_scalar(42)
        _raises(TypeError, args.append_scalar, -1)
        other_stream = AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin=b"b", block_dim=1,
                                                 stream_id=3)
        _raises(ValueError, ctx.add_launch, other_stream, args)
        args.append_scalar(1)  # still usable after the stream mismatch
        ctx.add_launch(KERNEL, args)  # NotImplementedError: needs an NPU


@register_op(op_type="GeNpuOnly")
def npu_only(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeNpuOnly")
class NpuOnly(_Declare):
    pass


@register_op(op_type="GeHostAndNpu")
def host_and_npu(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeHostAndNpu")
class HostAndNpu(_Declare):
    """Both a host execute and an NPU launch: a host runs execute."""

    def execute(self, x: Tensor, y: Tensor):
        z = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        n = x.shape_size
        xs = (ctypes.c_float * n).from_address(x.addr)
        ys = (ctypes.c_float * n).from_address(y.addr)
        zs = (ctypes.c_float * n).from_address(z.addr)
        for i in range(n):
            zs[i] = xs[i] * ys[i]


@register_op(op_type="GeAcl")
def acl_op(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeAcl")
class AclOp:
    """Uses pyACL as NPU samples do: fails where the import is written."""

    def execute(self, ctx):
        import acl  # noqa: F401  (no pyACL on a host)
        raise AssertionError("pyACL must not be importable on a host")
