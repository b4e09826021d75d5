"""Ops for the concurrency stress test: small and quick."""
import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="StressAdd")
def stress_add(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="StressAdd")
class StressAddImpl:
    def execute(self, x, y, *, alpha):
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as a, memoryview(y) as b, memoryview(out) as o:
            fa, fb, fo = a.cast("B").cast("f"), b.cast("B").cast("f"), o.cast("B").cast("f")
            for i in range(len(fo)):
                fo[i] = fa[i] + alpha * fb[i]
            for v in (fa, fb, fo):
                v.release()


@pyop.register_op(op_type="StressInfer")
def stress_infer(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op(op_type="StressNeg")
def stress_neg(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="StressNeg")
class StressNegImpl:
    def execute(self, x):
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as a, memoryview(out) as o:
            fa, fo = a.cast("B").cast("f"), o.cast("B").cast("f")
            for i in range(len(fo)):
                fo[i] = -fa[i]
            fa.release()
            fo.release()
