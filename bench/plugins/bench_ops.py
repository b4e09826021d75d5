"""Ops of the dispatch benchmarks (bench/bench_dispatch.c).

BenchNoop(x, y, *, alpha) -> None
    an op without outputs whose execute does nothing (which keeps its
    contract): what is left is the cost of the dispatch itself.
BenchInfer(x, y, *, alpha) -> z
    infer-only: returns its first input description unchanged (the
    infer_meta row).
BenchEmpty4(a, b) -> out
    declare_launch_args describes one launch of the empty C kernel
    pyop_example_empty4(a, b, out, n) from the example kernels (their path
    comes from $PYOP_BENCH_KERNELS, set by the benchmark before Python
    starts).
"""

import os

import pyop
from pyop import Tensor, TensorDesc, launch


@pyop.register_op(op_type="BenchNoop")
def bench_noop(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> None:
    return None


@pyop.register_op(op_type="BenchInfer", outputs=("z",))
def bench_infer(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    return x


@pyop.register_op_impl(op_type="BenchNoop")
class BenchNoopImpl:
    def execute(self, x: Tensor, y: Tensor, *, alpha: float) -> None:
        pass


@pyop.register_op(op_type="BenchEmpty4", outputs=("out",))
def bench_empty4(a: TensorDesc, b: TensorDesc) -> TensorDesc:
    return a


@pyop.register_op_impl(op_type="BenchEmpty4")
class BenchEmpty4Impl:
    def declare_launch_args(self, a: TensorDesc, b: TensorDesc, out: TensorDesc) -> None:
        ctx = pyop.get_declare_launch_args_ctx()
        ctx.add_launch(os.environ["PYOP_BENCH_KERNELS"], "pyop_example_empty4",
                       [launch.input(0), launch.input(1), launch.output(0),
                        launch.scalar("int64", 16)])
