"""compile runs before execute, the way a host runs it (issue 25 item 1)."""

import ctypes

import pyop
from pyop import Tensor, TensorDesc


def _copy(x):
    out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
    ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)


@pyop.register_op(op_type="CompileRaises")
def compile_raises(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="CompileRaises")
class CompileRaisesImpl:
    def compile(self, x: TensorDesc, y: TensorDesc) -> None:
        raise RuntimeError("CompileRaises: no kernel for %s" % x.dtype)

    def execute(self, x: Tensor) -> None:
        _copy(x)


@pyop.register_op(op_type="CompileCache")
def compile_cache(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="CompileCache")
class CompileCacheImpl:
    """compile leaves a kernel on self for the shapes it was given; execute
    reads it back (the pattern of GE's compile samples)."""

    def __init__(self):
        self.kernels = {}

    def compile(self, x: TensorDesc, y: TensorDesc) -> None:
        self.kernels[(tuple(x.shape), x.dtype)] = _copy
        pyop.get_compile_ctx().set_artifact(b"kernel")

    def execute(self, x: Tensor) -> None:
        kernel = self.kernels.get((tuple(x.shape), x.dtype))
        if kernel is None:
            raise RuntimeError("CompileCache: compile cache miss for %s" % (tuple(x.shape),))
        kernel(x)


@pyop.register_op(op_type="CompileOnly")
def compile_only(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="CompileOnly")
class CompileOnlyImpl:
    def compile(self, x: TensorDesc, y: TensorDesc) -> None:
        pyop.get_compile_ctx().set_artifact(b"kernel")
