"""SumAll: an op with a dynamic input and an optional input.

    out = xs[0] + xs[1] + ... + xs[n-1] (+ bias)

- `xs: list[TensorDesc]` is a dynamic input: the host passes any number of
  tensors (at least one here) in one input slot; infer_meta and execute get
  a Python list.
- `bias: Optional[TensorDesc]` is an optional input: None when the host
  leaves the slot empty. It is either the shape of xs[0] or a single element
  added everywhere.

    pyop run SumAll --input xs=float32[3]:1,2,3 --input xs=float32[3]:10,20,30 \
        --input bias=float32[1]:0.5
    out: float32[3] = [11.5, 22.5, 33.5]
"""

from typing import Optional

import pyop
from pyop import DataType, Tensor, TensorDesc


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


@pyop.register_op(op_type="SumAll", outputs=("out",))
def sum_all(xs: list[TensorDesc], bias: Optional[TensorDesc] = None) -> TensorDesc:
    if not xs:
        raise ValueError("SumAll needs at least one input in xs")
    for k, x in enumerate(xs):
        if x.dtype != DataType.float32:
            raise TypeError("SumAll supports float32 only, xs[%d] is %s" % (k, x.dtype))
        if x.shape != xs[0].shape:
            raise ValueError("SumAll: xs[%d]%s differs from xs[0]%s"
                             % (k, list(x.shape), list(xs[0].shape)))
    if bias is not None:
        if bias.dtype != DataType.float32:
            raise TypeError("SumAll: bias must be float32, got %s" % bias.dtype)
        if bias.shape != xs[0].shape and _numel(bias.shape) != 1:
            raise ValueError("SumAll: bias%s must have the shape of xs[0]%s or one element"
                             % (list(bias.shape), list(xs[0].shape)))
    return TensorDesc(shape=xs[0].shape, dtype=xs[0].dtype)


@pyop.register_op_impl(op_type="SumAll")
class SumAllImpl:
    # The implementation's inputs mirror the prototype: a list, then a
    # Tensor or None.
    def execute(self, xs: list[Tensor], bias: Optional[Tensor] = None) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, xs[0].shape, DataType.float32)
        with pyop.elements(out) as of:
            n = len(of)
            acc = [0.0] * n
            for x in xs:
                with pyop.elements(x) as xf:
                    for i in range(n):
                        acc[i] += xf[i]
            if bias is not None:
                with pyop.elements(bias) as bf:
                    for i in range(n):
                        acc[i] += bf[i] if len(bf) == n else bf[0]
            for i in range(n):
                of[i] = acc[i]
