"""Arguments of a kernel launch for DeclareCtx.add_launch().

    ctx = pyop.get_declare_launch_args_ctx()
    ctx.add_workspace(1024)
    ctx.add_launch("libmykernels.so", "scaled_add",
                   [launch.input(0), launch.input(1), launch.output(0),
                    launch.workspace(0), launch.scalar("float32", alpha)])

A relative library path is resolved against the directory of the file that
defines the implementation class.
"""

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


def scalar(dtype, value):
    """A typed scalar: dtype is a name of SCALAR_TYPES or a DataType."""
    if isinstance(dtype, DataType):
        dtype = dtype.name
    st = SCALAR_TYPES.get(dtype)
    if st is None:
        raise ValueError("unknown scalar type %r (expected one of %s)"
                         % (dtype, ", ".join(SCALAR_TYPES)))
    if st in _FLOAT_SCALARS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("scalar %s needs a number, got %r" % (dtype, value))
        value = float(value)
    else:
        if not isinstance(value, int):
            raise TypeError("scalar %s needs an int, got %r" % (dtype, value))
        value = int(value)
    return LaunchArg(SCALAR, 0, st, value)
