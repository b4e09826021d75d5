"""An implementation-only GE plugin whose only method is
declare_launch_args, bound to the REG_OP of ge_declare_only.reg_op: GE's
annotated-args sample. `pyop check --proto` and `pyop run` must call it
(it says so on stderr) and stop at add_launch, which needs an NPU
(issue 25 item 2, issue 27 item 3)."""

import sys

from ge.custom_op import AnnotatedKernelLaunchInfo, get_declare_launch_args_ctx, register_op_impl
from ge.runtime import Tensor


@register_op_impl(op_type="GeDeclareOnly")
class GeDeclareOnly:
    def declare_launch_args(self, x1: Tensor, x2: Tensor, y: Tensor) -> None:
        sys.stderr.write("GeDeclareOnly: declare_launch_args entered\n")
        ctx = get_declare_launch_args_ctx()
        args = ctx.create_kernel_args()
        args.append_input(0, x1)
        args.append_input(1, x2)
        args.append_output(0, y)
        ctx.add_launch(AnnotatedKernelLaunchInfo(kernel_name="add_custom", kernel_bin=b"\x7fELF",
                                                 block_dim=8, stream_id=ctx.get_stream_id()),
                       args)
