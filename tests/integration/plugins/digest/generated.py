"""An op whose code is compiled from a string (tests/integration/
bridge_harness.c, case outcome): its file, "<generated pyop op>", cannot be
read, so neither view carries a source_digest (libpyop then compares
file:line alone), and the load succeeds; a kernel library named relative
to that file (which has no directory) is relative to "."."""
SRC = '''
import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="Generated")
def generated(x: TensorDesc) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="Generated")
class GeneratedImpl:
    def declare_launch_args(self, x, y):
        pyop.get_declare_launch_args_ctx().add_launch("libgen.so", "gen_kernel", [])
'''
exec(compile(SRC, "<generated pyop op>", "exec"), {"__name__": "generated_pyop_op"})
