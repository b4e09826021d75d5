"""LaneCopy(x) -> y, a copy of x's bytes whatever its dtype and shape, in
pure Python: an op `pyop check` passes and that runs in every lane (the pyop
command with --lanes, tests/lanes/cli_host.py)."""
import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="LaneCopy")
def lane_copy(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LaneCopy")
class LaneCopyImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        data = memoryview(x).tobytes()
        if data:
            memoryview(out).cast("B")[:] = data
