"""The same plugin installed in two OPP directories (same_a and same_b hold
identical copies): same op type, same descriptor key, same content."""
import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="Twin")
def twin(x: TensorDesc, *, k: int = 2) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Twin")
class TwinImpl:
    def execute(self, x, *, k):
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as s, memoryview(out) as d:
            fs, fd = s.cast("B").cast("f"), d.cast("B").cast("f")
            for i in range(len(fd)):
                fd[i] = k * fs[i]
            fs.release()
            fd.release()
