"""ge.custom_op: GE's Python custom-op API on libpyop (host-only).

    from ge.custom_op import register_op, register_op_impl, register_kernel, OpBackend
    from ge.runtime import Tensor, TensorDesc

The names of GE master (ffdcbc9f7), develop and the newest commits are all
here, so plugins written to any of them import: see docs/ge-plugins.md for
which versions the layer follows, what runs on a host and what needs an NPU.
"""

from .proto import register_op
from .registry import (register_op_impl, register_kernel, OpBackend, get_registered_op_impls,
                       get_registered_op_impl_dicts, get_registered_op_impl_by_descriptor_key,
                       clear_registered_op_impls)
from .context import (get_execute_ctx, get_declare_launch_args_ctx, get_compile_ctx,
                      get_compile_platform_info, EagerOpExecutionContext,
                      HostCpuOpExecutionContext, OpCompileContext, CompilePlatformInfo,
                      InferMetaContext, AnnotatedArgsContext, AnnotatedKernelArgs,
                      AnnotatedKernelLaunchInfo, WorkspaceAddr, RuntimeAttrs)
from .base import BaseCustomOp, EagerExecuteOp

# GE's newest __all__ (20 names), plus what master (BaseCustomOp,
# EagerExecuteOp) and develop (InferMetaContext) exported.
__all__ = ["AnnotatedArgsContext", "AnnotatedKernelArgs", "AnnotatedKernelLaunchInfo",
           "EagerOpExecutionContext", "HostCpuOpExecutionContext", "CompilePlatformInfo",
           "OpBackend", "OpCompileContext", "WorkspaceAddr", "clear_registered_op_impls",
           "get_declare_launch_args_ctx", "get_compile_ctx", "get_compile_platform_info",
           "get_execute_ctx", "get_registered_op_impl_by_descriptor_key",
           "get_registered_op_impl_dicts", "get_registered_op_impls", "register_kernel",
           "register_op", "register_op_impl",
           "BaseCustomOp", "EagerExecuteOp", "InferMetaContext"]
