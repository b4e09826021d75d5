"""execute asks for a workspace of 16 bytes and fills it through its buffer
(the loadstate case: the host's memory holds 0..15 after the call)."""
import pyop
from pyop import DataType, TensorDesc


@pyop.register_op(op_type="OutWs")
def out_ws(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="OutWs")
class OutWsImpl:
    def execute(self, x):
        ctx = pyop.get_execute_ctx()
        w = ctx.malloc_workspace(16)
        got = (w.dtype, w.shape, w.ndim, w.nbytes, w.writable)
        if got != (DataType.uint8, (16,), 1, 16, True):
            raise AssertionError("workspace tensor %r" % (got,))
        memoryview(w).cast("B")[:] = bytes(range(16))
        ctx.malloc_output_tensor(0, x.shape, x.dtype)
