"""declare_launch_args naming an output and a workspace past index 0 (the
loadstate case: each argument's index reaches the host as written)."""
import pyop
from pyop import TensorDesc, launch


@pyop.register_op(op_type="OutLaunch")
def out_launch(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="OutLaunch")
class OutLaunchImpl:
    def declare_launch_args(self, x, out):
        ctx = pyop.get_declare_launch_args_ctx()
        ctx.add_workspace(8)
        ctx.add_workspace(16)
        ctx.add_launch("/lib/libkern.so", "kern",
                       [launch.input(2), launch.output(3), launch.workspace(1)])
