"""Scale(x; alpha) -> y = alpha * x, elementwise in pure Python: an op that
runs in every lane. Lane(x) -> y: y[0] is this interpreter's number of
imports of the plugin's module state (module state is per lane: always 1),
y[1] the interpreter's id as _interpreters/_xxsubinterpreters says."""
import pyop
from pyop import Tensor, TensorDesc

_imports = 1  # module state: one per interpreter


@pyop.register_op(op_type="Scale")
def scale(x: TensorDesc, *, alpha: float = 2.0) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Scale")
class ScaleImpl:
    def execute(self, x: Tensor, *, alpha: float) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        a = memoryview(x).cast("B").cast("f")
        for i in range(len(o)):
            o[i] = alpha * a[i]


def _interp_id():
    try:
        import _interpreters as i  # 3.13
    except ImportError:
        import _xxsubinterpreters as i  # 3.12
    cur = i.get_current()
    return int(cur[0] if isinstance(cur, tuple) else cur)


@pyop.register_op(op_type="Lane")
def lane(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Lane")
class LaneImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        o[0] = float(_imports)
        o[1] = float(_interp_id())
