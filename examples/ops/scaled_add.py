"""ScaledAdd: z = x + alpha * y, on floating-point tensors, with pyop.elements.

The smallest complete op: a prototype (the decorated function is the op's
infer_meta and its signature is the prototype) and an implementation class
with execute. No third-party module is needed.

    pyop run ScaledAdd --input x=float32[3]:1,2,3 --input y=float32[3]:10,20,30 \
        --attr alpha=2
    z: float32[3] = [21, 42, 63]
"""

import pyop
from pyop import DataType, Tensor, TensorDesc

# What execute computes in: a float result fits each of these (an int8 z
# could not hold x + 0.5 * y, so infer_meta refuses the integer types).
FLOATS = (DataType.float32, DataType.float16, DataType.bfloat16, DataType.float64)


# Positional parameters are the inputs (both required: plain TensorDesc),
# keyword-only parameters the attributes (alpha is optional: it has a
# default). outputs= names the single output "z" (default would be "y").
@pyop.register_op(op_type="ScaledAdd", outputs=("z",))
def scaled_add(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    # infer_meta: validate what the implementation relies on, here rather
    # than in execute, so the host learns about a bad graph before it runs
    # (and `pyop check` sweeps only what is accepted here).
    if x.dtype not in FLOATS or y.dtype != x.dtype:
        raise TypeError("ScaledAdd: x and y must have one floating-point dtype, got %s and %s"
                        % (x.dtype, y.dtype))
    if x.shape != y.shape:
        raise ValueError("ScaledAdd: x%s and y%s must have the same shape"
                         % (list(x.shape), list(y.shape)))
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="ScaledAdd")
class ScaledAddImpl:
    # One instance of this class is made per op instance (graph node); the
    # inputs arrive as read-only pyop.Tensor views of the host's buffers and
    # the attributes as keyword arguments (defaults already applied).
    def execute(self, x: Tensor, y: Tensor, *, alpha: float) -> None:
        ctx = pyop.get_execute_ctx()
        # The host owns the memory: ask it for output 0 with the shape and
        # dtype infer_meta promised.
        z = ctx.malloc_output_tensor(0, x.shape, x.dtype)
        # pyop.elements: each tensor's elements as a flat sequence of Python
        # numbers over the host's memory (any shape, empty and rank-0 too;
        # float16 and bfloat16 convert). `with` releases the views before
        # execute returns: a view kept after the call fails it.
        with pyop.elements(x) as xs, pyop.elements(y) as ys, pyop.elements(z) as zs:
            for i in range(len(zs)):
                zs[i] = xs[i] + alpha * ys[i]
