"""A file plugin: ScaledAdd (prototype + execute) and IoKinds (every input kind)."""
import struct
from typing import Optional

import pyop
from pyop import DataType, Tensor, TensorDesc


@pyop.register_op(op_type="ScaledAdd")
def scaled_add(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    if x.shape != y.shape:
        raise ValueError("x and y shapes differ: %r vs %r" % (x.shape, y.shape))
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="ScaledAdd")
class ScaledAddImpl:
    def execute(self, x: Tensor, y: Tensor, *, alpha: float) -> None:
        ctx = pyop.get_execute_ctx()
        out = ctx.malloc_output_tensor(0, x.shape, x.dtype)
        xv, yv, ov = memoryview(x), memoryview(y), memoryview(out)
        assert xv.readonly and not ov.readonly
        assert xv.format == "f" and xv.shape == x.shape
        fx, fy, fo = xv.cast("B").cast("f"), yv.cast("B").cast("f"), ov.cast("B").cast("f")
        for i in range(len(fo)):
            fo[i] = fx[i] + alpha * fy[i]
        for v in (fx, fy, fo, xv, yv, ov):
            v.release()


@pyop.register_op(op_type="IoKinds", outputs=("first", "info"))
def io_kinds(a: TensorDesc, b: Optional[TensorDesc], c: list[TensorDesc]) -> tuple[TensorDesc, TensorDesc]:
    return TensorDesc(a.shape, a.dtype), TensorDesc((3,), DataType.int64)


@pyop.register_op_impl(op_type="IoKinds")
class IoKindsImpl:
    def execute(self, a, b, c):
        assert isinstance(c, list)
        ctx = pyop.get_execute_ctx()
        first = ctx.malloc_output_tensor(0, a.shape, a.dtype)
        with memoryview(first) as dst, memoryview(a) as src:
            dst.cast("B")[:] = src.cast("B")
        info = ctx.malloc_output_tensor(1, (3,), DataType.int64)
        with memoryview(info) as m:
            m.cast("B")[:] = struct.pack("=3q", 0 if b is None else 1, len(c),
                                         sum(t.numel for t in c))
