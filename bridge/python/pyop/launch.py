"""Arguments of a kernel launch for DeclareCtx.add_launch().

    ctx = pyop.get_declare_launch_args_ctx()
    ctx.add_workspace(1024)
    ctx.add_launch("libmykernels.so", "scaled_add",
                   [launch.input(0), launch.input(1), launch.output(0),
                    launch.workspace(0), launch.scalar("float32", alpha)])

A relative library path is resolved against the directory of the file that
defines the implementation class.
"""

import operator

from ._types import DataType

__all__ = ["LaunchArg", "input", "output", "workspace", "scalar", "stream"]

# pyop_launch_arg_kind and pyop_scalar_type of bridge_abi.h (the authority;
# tests/python/test_types.py compares).
INPUT, OUTPUT, WORKSPACE, SCALAR, STREAM = 1, 2, 3, 4, 5

# pyop_scalar_type by numpy-style name.
SCALAR_TYPES = {
    "int8": 1, "int16": 2, "int32": 3, "int64": 4,
    "uint8": 5, "uint16": 6, "uint32": 7, "uint64": 8,
    "float32": 9, "float64": 10, "bool": 11, "pointer": 12,
}
_FLOAT_SCALARS = (9, 10)


class LaunchArg:
    """One kernel argument: kind (INPUT..STREAM), index, scalar_type, value."""

    __slots__ = ("kind", "index", "scalar_type", "value")

    def __init__(self, kind, index=0, scalar_type=0, value=0):
        self.kind = kind
        self.index = index
        self.scalar_type = scalar_type
        self.value = value

    def __repr__(self):
        return "LaunchArg(kind=%d, index=%d, scalar_type=%d, value=%r)" % (
            self.kind, self.index, self.scalar_type, self.value)


def _index(i):
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < (1 << 32):
        raise ValueError("launch argument index must be an int in [0, 2**32), got %r" % (i,))
    return i


def input(i):
    """The data pointer of input i (flattened over dynamic inputs)."""
    return LaunchArg(INPUT, _index(i))


def output(i):
    """The data pointer of output i."""
    return LaunchArg(OUTPUT, _index(i))


def workspace(k):
    """The pointer to workspace k (declared with ctx.add_workspace)."""
    return LaunchArg(WORKSPACE, _index(k))


def stream():
    """The execution context's stream pointer."""
    return LaunchArg(STREAM)


# The values each integer scalar type holds, [lo, hi] (bool: False and True).
_INT_RANGE = {
    1: (-(1 << 7), (1 << 7) - 1), 2: (-(1 << 15), (1 << 15) - 1),
    3: (-(1 << 31), (1 << 31) - 1), 4: (-(1 << 63), (1 << 63) - 1),
    5: (0, (1 << 8) - 1), 6: (0, (1 << 16) - 1), 7: (0, (1 << 32) - 1), 8: (0, (1 << 64) - 1),
    12: (0, (1 << 64) - 1),
}
_FLOAT32_MAX = 3.4028234663852886e38
_BOOL = 11


def _is_bool(value):
    """A Python bool or numpy's bool_ (which is not an int)."""
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool8")


def scalar(dtype, value):
    """A typed scalar: dtype is a name of SCALAR_TYPES or a DataType. One
    rule, whatever the type: a bool is not a number and a number is not a
    bool. An integer type takes an int (or an object with __index__, such
    as a numpy integer; not a bool, not a float) within its range, a
    float type an int or a float (not a bool) within its range, bool a
    bool (True/False, or numpy's bool_; not 0 or 1). TypeError for a value
    of the wrong kind, OverflowError (naming the type's range) for one out
    of it: nothing wraps, nothing is rounded into range."""
    if isinstance(dtype, DataType):
        dtype = dtype.name
    st = SCALAR_TYPES.get(dtype)
    if st is None:
        raise ValueError("unknown scalar type %r (expected one of %s)"
                         % (dtype, ", ".join(SCALAR_TYPES)))
    if st == _BOOL:
        if not _is_bool(value):
            raise TypeError("scalar bool needs a bool (True or False), got %r" % (value,))
        return LaunchArg(SCALAR, 0, st, 1 if value else 0)
    if _is_bool(value):
        raise TypeError("scalar %s needs a number, got %r (a bool is not a number here; "
                        "use scalar(\"bool\", ...))" % (dtype, value))
    if st in _FLOAT_SCALARS:
        if not isinstance(value, (int, float)):
            raise TypeError("scalar %s needs a number, got %r" % (dtype, value))
        try:
            f = float(value)
        except OverflowError:
            raise OverflowError("scalar %s value %d is out of range (a C double holds "
                                "about +-1.8e308)" % (dtype, value)) from None
        if dtype == "float32" and f == f and abs(f) != float("inf") and abs(f) > _FLOAT32_MAX:
            raise OverflowError("scalar float32 value %r is out of range (largest finite %r)"
                                % (value, _FLOAT32_MAX))
        return LaunchArg(SCALAR, 0, st, f)
    try:
        i = operator.index(value)
    except TypeError:
        raise TypeError("scalar %s needs an int, got %r" % (dtype, value)) from None
    lo, hi = _INT_RANGE[st]
    if not lo <= i <= hi:
        raise OverflowError("scalar %s value %d is out of range [%d, %d]" % (dtype, i, lo, hi))
    return LaunchArg(SCALAR, 0, st, i)
