"""Ops of the parallel benchmark (bench/bench_parallel.c, row 10).

BenchElementwise(x) -> y
    pure Python, no numpy: y[i] = x[i] * 0.5 + 1.0 over a float32 tensor
    (float32[4096] in the row), element by element through memoryviews --
    Python bytecode all the way, the kind of op a GIL serialises.
BenchSmall(x) -> None
    a ~2 us op (on CPython 3.11 on the benchmark machine): a short loop of
    Python arithmetic, no tensor access; what is left is mostly the cost of
    the call, where anything shared between threads shows first.
"""

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="BenchElementwise")
def bench_elementwise(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="BenchElementwise")
class BenchElementwiseImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as mx, memoryview(out) as mo:
            src = mx.cast("B").cast("f")
            dst = mo.cast("B").cast("f")
            for i in range(len(src)):
                dst[i] = src[i] * 0.5 + 1.0
            src.release()
            dst.release()


@pyop.register_op(op_type="BenchSmall")
def bench_small(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="BenchSmall")
class BenchSmallImpl:
    def execute(self, x: Tensor) -> None:
        acc = 0.0
        for i in range(24):
            acc += i * 0.5
