"""Twin(x, y) -> y: same op type as conflict_a/twin_a.py, different prototype."""
import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="Twin")
def twin(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)
