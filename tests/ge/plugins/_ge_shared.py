"""A helper module of the plugin directory (not a plugin: its name starts
with '_'); GE plugins import it by absolute name."""

import ctypes

LOADS = globals().get("LOADS", 0) + 1


def unary(ctx, fn):
    x = ctx.get_input_tensor(0)
    z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
    n = x.shape_size
    xs = (ctypes.c_float * n).from_address(x.addr)
    zs = (ctypes.c_float * n).from_address(z.addr)
    for i in range(n):
        zs[i] = fn(xs[i])
