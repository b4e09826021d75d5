"""A GE op as GE's compile samples write it: compile reads a compile option
the host gives and leaves a kernel on self (one instance per op type);
execute reads it back, and fails with "compile cache miss" without it
(issue 27 item 3)."""

import ctypes

from ge.custom_op import get_compile_ctx, get_execute_ctx, register_op, register_op_impl
from ge.graph.types import DataType
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="GeCompiledScale")
def infer(x: TensorDesc) -> TensorDesc:
    if x.data_type != DataType.DT_FLOAT:
        raise TypeError("GeCompiledScale: float32 only, got %s" % x.data_type)
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="GeCompiledScale")
class GeCompiledScale:
    def __init__(self):
        self.kernels = {}

    def compile(self, x: Tensor, y: Tensor) -> None:
        scale = float(get_compile_ctx().get_option("st.python.compile.option"))
        self.kernels[tuple(x.storage_shape.dims)] = scale

    def execute(self, x: Tensor) -> None:
        key = tuple(x.storage_shape.dims)
        if key not in self.kernels:
            raise RuntimeError("GeCompiledScale: compile cache miss for shape %s" % (key,))
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        n = x.shape_size
        src = (ctypes.c_float * n).from_address(x.addr)
        dst = (ctypes.c_float * n).from_address(y.addr)
        for i in range(n):
            dst[i] = src[i] * self.kernels[key]
