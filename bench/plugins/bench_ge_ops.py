"""The GE-style op of bench row 9 (bench/bench_dispatch.c), written to CANN
GE's Python API and run by libpyop's ge package:

BenchGeNoop(x) -> None
    execute(self, x: Tensor) -> None does nothing; its pyop-native twin is
    bench_ops.BenchNoop1. What the row measures is what the GE layer adds
    to a call.
"""

from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="BenchGeNoop")
def bench_ge_noop(x: TensorDesc) -> None:
    return None


@register_op_impl(op_type="BenchGeNoop")
class BenchGeNoop:
    def execute(self, x: Tensor) -> None:
        pass
