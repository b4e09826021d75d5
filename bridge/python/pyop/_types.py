"""Value types of the pyop package: DataType, Format, TensorDesc and the
numeric codes shared with the C side (include/pyop/pyop.h, bridge_abi.h).

Pure Python: importable without the bridge's native module (TensorDesc's
fields then live in plain slots instead of the native TensorDescBase).
"""

import enum

__all__ = ["DataType", "Format", "TensorDesc", "AttrType", "IoKind",
           "CAP_INFER_META", "CAP_EXECUTE", "CAP_COMPILE", "CAP_LAUNCH",
           "MAX_DIMS", "INPUT_MUTATED"]

MAX_DIMS = 8  # PYOP_MAX_DIMS

# PYOP_CAP_* capability bits.
CAP_INFER_META = 1 << 0
CAP_EXECUTE = 1 << 1
CAP_COMPILE = 1 << 2
CAP_LAUNCH = 1 << 3

# PYOP_INPUT_* bits of a prototype's input flags.
INPUT_MUTATED = 1 << 0


class DataType(enum.IntEnum):
    """Element types; names follow numpy, values equal PYOP_DTYPE_*."""

    float32 = 0
    float16 = 1
    bfloat16 = 2
    float64 = 3
    int8 = 4
    int16 = 5
    int32 = 6
    int64 = 7
    uint8 = 8
    uint16 = 9
    uint32 = 10
    uint64 = 11
    bool = 12

    @property
    def itemsize(self):
        """Bytes per element."""
        return _ITEMSIZE[self.value]

    @classmethod
    def from_name(cls, name):
        """DataType for a numpy-style name ("float32"); ValueError if unknown."""
        try:
            return cls[name]
        except KeyError:
            raise ValueError("unknown data type %r (expected one of %s)"
                             % (name, ", ".join(m.name for m in cls))) from None

    def __str__(self):
        return self.name


# Bytes per element by value: a copy of PYOP_DTYPE_MAP's sizes (pyop.h, the
# authority), compared with pyop_dtype_size() by tests/e2e/test_tables.py.
_ITEMSIZE = (4, 2, 2, 8, 1, 2, 4, 8, 1, 2, 4, 8, 1)


class Format(enum.IntEnum):
    """Memory layouts a tensor may declare; values equal PYOP_FORMAT_*."""

    ND = 0
    NCHW = 1
    NHWC = 2
    NC1HWC0 = 3
    FRACTAL_NZ = 4

    def __str__(self):
        return self.name


class AttrType(enum.IntEnum):
    """Attribute types; values equal PYOP_ATTR_*."""

    INT = 1
    FLOAT = 2
    BOOL = 3
    STR = 4
    DTYPE = 5
    LIST_INT = 6
    LIST_FLOAT = 7
    LIST_BOOL = 8
    LIST_STR = 9
    LIST_DTYPE = 10
    LIST_LIST_INT = 11
    TENSOR = 12


class IoKind(enum.IntEnum):
    """Input/output kinds; values equal PYOP_IO_*."""

    REQUIRED = 0
    OPTIONAL = 1
    DYNAMIC = 2


try:  # the bridge's native module, in sys.modules before this package runs
    from ._native import TensorDescBase as _DescFields
except ImportError:  # pure-Python use: the same three fields as slots
    class _DescFields:
        __slots__ = ("shape", "dtype", "format")


class TensorDesc(_DescFields):
    """A tensor description (no data): what infer_meta receives and returns.

    shape is a tuple of ints (at most MAX_DIMS of them; -1 marks an unknown
    dimension), dtype a DataType (a name such as "float32" is accepted),
    format a Format.

    The bridge may hand the same TensorDesc object to successive calls of an
    op instance when the previous call kept no reference to it; one that a
    plugin keeps is never changed afterwards.
    """

    # The fields are the base's: under the bridge, the C members of
    # pyop._native.TensorDescBase, which it reads and writes directly
    # (bridge/bridge.h, pb_desc). No field, __dict__ or __weakref__ here:
    # the bridge checks this layout when it imports the package.
    __slots__ = ()

    def __init__(self, shape, dtype, format=Format.ND):
        shape = tuple(shape)
        if len(shape) > MAX_DIMS:
            raise ValueError("TensorDesc: %d dimensions, at most %d are supported"
                             % (len(shape), MAX_DIMS))
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, int) or d < -1:
                raise ValueError("TensorDesc: shape %r: dimensions must be ints >= -1"
                                 % (shape,))
        if isinstance(dtype, str):
            dtype = DataType.from_name(dtype)
        self.shape = shape
        self.dtype = DataType(dtype)
        self.format = Format(format)

    @property
    def ndim(self):
        return len(self.shape)

    def __eq__(self, other):
        if not isinstance(other, TensorDesc):
            return NotImplemented
        return (self.shape, self.dtype, self.format) == (other.shape, other.dtype, other.format)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.format))

    def __repr__(self):
        fmt = "" if self.format == Format.ND else ", format=Format.%s" % self.format.name
        return "TensorDesc(shape=%r, dtype=DataType.%s%s)" % (self.shape, self.dtype.name, fmt)
