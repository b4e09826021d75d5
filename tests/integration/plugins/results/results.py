"""infer_meta results the bridge must refuse (tests/integration/bridge_harness.c,
case results): enum values one past the end, more or fewer items than the op
has outputs, a value from an op without outputs, more than MAX_DIMS
dimensions. TensorDesc refuses most of these itself, so the results here are
TensorDesc-like objects the bridge reads by attribute."""
import pyop
from pyop import TensorDesc


class Desc:
    """What the bridge reads of a result: .shape, .dtype, .format."""

    def __init__(self, shape, dtype, format=0):
        self.shape, self.dtype, self.format = shape, dtype, format


@pyop.register_op(op_type="ResultEnum")
def result_enum(x: TensorDesc, *, dtype: int = 0, format: int = 0) -> TensorDesc:
    return Desc(x.shape, dtype, format)


@pyop.register_op(op_type="ResultTwo", outputs=("a", "b"))
def result_two(x: TensorDesc, *, n: int = 2) -> tuple[TensorDesc, TensorDesc]:
    return tuple(TensorDesc(x.shape, x.dtype) for _ in range(n))


@pyop.register_op(op_type="ResultNone")
def result_none(x: TensorDesc, *, give: str = "none") -> None:
    if give == "desc":
        return TensorDesc(x.shape, x.dtype)
    if give == "empty":
        return ()
    return None


@pyop.register_op(op_type="ResultDims")
def result_dims(x: TensorDesc, *, ndim: int = 8) -> TensorDesc:
    return Desc(tuple(range(2, ndim + 2)), x.dtype)


@pyop.register_op(op_type="ResultOneTuple")
def result_one_tuple(x: TensorDesc, *, form: int = 0) -> tuple[TensorDesc]:
    d = TensorDesc(x.shape, x.dtype)
    return [d] if form else (d,)  # one item per output: a tuple (or list) of one
