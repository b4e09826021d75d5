"""compile and declare_launch_args that hand the host what `what` says (the
loadstate case: a host sink that is missing or refuses gives its status)."""
import pyop
from pyop import TensorDesc, launch


@pyop.register_op(op_type="OutSinks")
def out_sinks(x: TensorDesc, *, what: str = "") -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="OutSinks")
class OutSinksImpl:
    def compile(self, x, out, *, what):
        pyop.get_compile_ctx().set_artifact(b"z" * (100 if what == "long" else 4))

    def declare_launch_args(self, x, out, *, what):
        ctx = pyop.get_declare_launch_args_ctx()
        if what == "workspace":
            ctx.add_workspace(8)
        else:
            ctx.add_launch("/lib/libk.so", "k", [launch.stream()])
