"""Concat: joins a dynamic list of tensors along `axis` (any dtype).

`xs: list[TensorDesc]` is a dynamic input (any number of tensors in one
slot); `axis` an optional int attribute (negative counts from the end).

    pyop run Concat --input xs=float32[1,2]:1,2 --input xs=float32[1,2]:3,4 --attr axis=1
    y: float32[1, 4] = [1, 2, 3, 4]
"""

import pyop
from pyop import Tensor, TensorDesc

from ._common import numel


def _axis(axis, ndim):
    if not -ndim <= axis < ndim:
        raise ValueError("Concat: axis %d is out of range for %d dimensions" % (axis, ndim))
    return axis + ndim if axis < 0 else axis


@pyop.register_op(op_type="Concat")
def concat(xs: list[TensorDesc], *, axis: int = 0) -> TensorDesc:
    if not xs:
        raise ValueError("Concat needs at least one input")
    first = xs[0]
    ax = _axis(axis, first.ndim)
    total = 0
    for k, x in enumerate(xs):
        if x.dtype != first.dtype or x.ndim != first.ndim:
            raise TypeError("Concat: xs[%d] is %s%s, xs[0] is %s%s"
                            % (k, x.dtype, list(x.shape), first.dtype, list(first.shape)))
        for d in range(first.ndim):
            if d != ax and x.shape[d] != first.shape[d]:
                raise ValueError("Concat: xs[%d]%s and xs[0]%s differ outside axis %d"
                                 % (k, list(x.shape), list(first.shape), ax))
        total += x.shape[ax]
    shape = list(first.shape)
    shape[ax] = total
    return TensorDesc(shape=shape, dtype=first.dtype)


@pyop.register_op_impl(op_type="Concat")
class ConcatImpl:
    def execute(self, xs: list[Tensor], *, axis: int) -> None:
        ax = _axis(axis, xs[0].ndim)
        shape = list(xs[0].shape)
        shape[ax] = sum(x.shape[ax] for x in xs)
        y = pyop.get_execute_ctx().malloc_output_tensor(0, shape, xs[0].dtype)
        # In C order, each of the `outer` leading index combinations holds one
        # contiguous block of every input, one after the other; a slice
        # assignment copies a block between two views of one dtype.
        outer = numel(shape[:ax])
        with pyop.elements(y) as ye:
            pos = 0
            for o in range(outer):
                for x in xs:
                    block = numel(x.shape[ax:])
                    with pyop.elements(x) as xe:
                        ye[pos:pos + block] = xe[o * block:(o + 1) * block]
                    pos += block
