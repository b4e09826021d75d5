"""FtCopy for host_ft's nested_cross case: execute copies x into an output
the host allocates, and the host's alloc_output executes another instance
(docs/host-guide.md, "Free-threaded Python")."""
import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="FtCopy")
def ft_copy(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="FtCopy")
class FtCopy:
    def __init__(self):
        self.calls = 0

    def execute(self, x: Tensor) -> None:
        self.calls += 1
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as a, memoryview(out) as o:
            o[:] = a
