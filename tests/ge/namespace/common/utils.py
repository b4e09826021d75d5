"""A helper of a namespace package (common/ has no __init__.py), shared by
the GE-style plugins beside it (docs/ge-plugins.md, "Loading")."""

import ctypes


def _floats(t):
    return (ctypes.c_float * t.shape_size).from_address(t.addr)


def negate(x, z):
    xs, zs = _floats(x), _floats(z)
    for i in range(len(zs)):
        zs[i] = -xs[i]
