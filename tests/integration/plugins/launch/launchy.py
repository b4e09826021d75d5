"""compile and declare_launch_args."""
import pyop
from pyop import TensorDesc, launch


@pyop.register_op(op_type="Launchy")
def launchy(x: TensorDesc, y: TensorDesc, *, alpha: float = 2.0) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Launchy")
class LaunchyImpl:
    def compile(self, x, y, out, *, alpha):
        assert isinstance(x, TensorDesc) and isinstance(out, TensorDesc)
        pyop.get_compile_ctx().set_artifact(b"artifact:%d:%s" % (len(x.shape), out.dtype.name.encode()))

    def declare_launch_args(self, x, y, out, *, alpha):
        ctx = pyop.get_declare_launch_args_ctx()
        ctx.add_workspace(64)
        ctx.add_launch("libkern.so", "kern",
                       [launch.input(0), launch.input(1), launch.output(0), launch.workspace(0),
                        launch.scalar("float32", alpha), launch.scalar("int64", -3),
                        launch.stream()])
