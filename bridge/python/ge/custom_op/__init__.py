"""ge.custom_op: GE's Python custom-op API on libpyop (host-only).

    from ge.custom_op import register_op, register_op_impl
    from ge.runtime import Tensor, TensorDesc

See docs/ge-plugins.md for what runs on a host and what needs an NPU.
"""

from .proto import register_op
from .registry import (register_op_impl, get_registered_op_impls, get_registered_op_impl_dicts,
                       get_registered_op_impl_by_descriptor_key, clear_registered_op_impls)
from .context import (get_execute_ctx, get_declare_launch_args_ctx, EagerOpExecutionContext,
                      AnnotatedArgsContext, AnnotatedKernelArgs, AnnotatedKernelLaunchInfo,
                      WorkspaceAddr, RuntimeAttrs)
from .base import BaseCustomOp, EagerExecuteOp

__all__ = ["register_op", "register_op_impl", "get_execute_ctx", "get_declare_launch_args_ctx",
           "BaseCustomOp", "EagerExecuteOp", "EagerOpExecutionContext", "AnnotatedArgsContext",
           "AnnotatedKernelArgs", "AnnotatedKernelLaunchInfo", "WorkspaceAddr",
           "get_registered_op_impls", "get_registered_op_impl_dicts",
           "get_registered_op_impl_by_descriptor_key", "clear_registered_op_impls"]
