"""ScaledAdd: z = x + alpha * y, float32, with nothing but memoryview.

The smallest complete op: a prototype (the decorated function is the op's
infer_meta and its signature is the prototype) and an implementation class
with execute. No third-party module is needed.

    pyop run ScaledAdd --input x=float32[3]:1,2,3 --input y=float32[3]:10,20,30 \
        --attr alpha=2
    z: float32[3] = [21, 42, 63]
"""

import contextlib

import pyop
from pyop import DataType, Tensor, TensorDesc


@contextlib.contextmanager
def float_view(t):
    """A flat memoryview of the float32 tensor t, released on exit.

    A Tensor exports a C-contiguous buffer shaped like the tensor (format
    'f' for float32). memoryview casts between two non-byte formats only
    through bytes, hence cast("B").cast("f"). Every view must be released
    before execute returns: a buffer still exported then fails the call.
    An empty tensor (a 0 in its shape) gets an empty view: memoryview cannot
    cast a view with a 0 in its shape."""
    if t.nbytes == 0:
        with memoryview(bytearray()) as b, b.cast("f") as f:
            yield f
        return
    with memoryview(t) as m, m.cast("B") as b, b.cast("f") as f:
        yield f


# Positional parameters are the inputs (both required: plain TensorDesc),
# keyword-only parameters the attributes (alpha is optional: it has a
# default). outputs= names the single output "z" (default would be "y").
@pyop.register_op(op_type="ScaledAdd", outputs=("z",))
def scaled_add(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    # infer_meta: validate what the implementation relies on, here rather
    # than in execute, so the host learns about a bad graph before it runs.
    if x.dtype != DataType.float32 or y.dtype != DataType.float32:
        raise TypeError("ScaledAdd supports float32 only, got %s and %s" % (x.dtype, y.dtype))
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
        with float_view(x) as xf, float_view(y) as yf, float_view(z) as zf:
            for i in range(len(zf)):
                zf[i] = xf[i] + alpha * yf[i]
