"""Softmax over the last axis, implemented with numpy when numpy is present.

numpy is optional for libpyop and for this op:
- the prototype (infer_meta) needs no numpy and is always registered, so a
  host can always plan a graph containing Softmax;
- the implementation is registered only when `import numpy` succeeds. Without
  numpy, `pyop list` shows Softmax with the capability infer_meta alone and
  running it fails with "no execute implementation" -- a clear error instead
  of a half-working op.

numpy.asarray(t) wraps a Tensor without copying (buffer protocol): an input
gives a read-only array, an output a writable one. The arrays hold the
tensor's buffer, so drop them (del) before execute returns.

    pyop run Softmax --input x=float32[2,2]:0,0,1,3
    y: float32[2, 2] = [0.5, 0.5, 0.119203, 0.880797]
"""

import pyop
from pyop import DataType, Tensor, TensorDesc

try:
    import numpy
except ImportError:  # numpy is optional: register the prototype only
    numpy = None


@pyop.register_op(op_type="Softmax")
def softmax(x: TensorDesc) -> TensorDesc:
    if x.dtype not in (DataType.float32, DataType.float64):
        raise TypeError("Softmax supports float32 and float64, got %s" % x.dtype)
    if x.ndim == 0:
        raise ValueError("Softmax needs at least one dimension")
    return TensorDesc(shape=x.shape, dtype=x.dtype)


if numpy is not None:

    @pyop.register_op_impl(op_type="Softmax")
    class SoftmaxImpl:
        def execute(self, x: Tensor) -> None:
            y = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
            xa = numpy.asarray(x)  # zero-copy, read-only, shape x.shape
            ya = numpy.asarray(y)  # zero-copy, writable
            # Subtracting the row maximum keeps exp() from overflowing.
            e = numpy.exp(xa - xa.max(axis=-1, keepdims=True))
            ya[...] = e / e.sum(axis=-1, keepdims=True)
            del xa, ya  # release the tensors' buffers before returning
