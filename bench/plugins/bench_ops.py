"""Ops of the dispatch benchmarks (bench/bench_dispatch.c).

BenchNoop(x, y, *, alpha) -> None
    an op without outputs whose execute does nothing (which keeps its
    contract): what is left is the cost of the dispatch itself.
BenchNoop1(x) -> None
    one input, no attribute, execute does nothing: row 9's baseline (the
    same op written to GE's API is bench_ge_ops.BenchGeNoop).
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


@pyop.register_op(op_type="BenchNoop1")
def bench_noop1(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="BenchNoop1")
class BenchNoop1Impl:
    """Row 9's pyop-native twin of bench_ge_ops.BenchGeNoop."""

    def execute(self, x: Tensor) -> None:
        pass


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


# ---- the numpy row (5): GELU on float32[1,000,000], zero-copy in and out.
# gelu() is the one Python function both sides of the row call: the op's
# execute on numpy views of the host's buffers, the floor directly on numpy
# arrays. Registered only when numpy is installed (the row is then skipped).
try:
    import numpy as np
except ImportError:
    np = None

if np is not None:
    _C = np.float32(0.7978845608028654)  # sqrt(2 / pi)

    def gelu(x, out):
        """out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
        np.multiply(x, x, out=out)
        out *= np.float32(0.044715)
        out += np.float32(1.0)
        out *= x
        out *= _C
        np.tanh(out, out=out)
        out += np.float32(1.0)
        out *= x
        out *= np.float32(0.5)

    @pyop.register_op(op_type="BenchGelu")
    def bench_gelu(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="BenchGelu")
    class BenchGeluImpl:
        def execute(self, x: Tensor) -> None:
            out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
            gelu(np.asarray(x), np.asarray(out))

    def gelu_direct_args(n):
        """The floor's numpy arrays: the same values the host passes."""
        x = np.linspace(-4.0, 4.0, n, dtype=np.float32)
        return x, np.empty_like(x)
