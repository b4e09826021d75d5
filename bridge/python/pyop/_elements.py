"""pyop.elements(t): the one way to reach a tensor's elements from Python.

    with pyop.elements(x) as xs, pyop.elements(z) as zs:
        for i in range(len(zs)):
            zs[i] = xs[i] * 2

elements(t) is a flat (one-dimensional, C order) sequence of the elements
of the pyop.Tensor t as Python numbers (float for the floating types, int
for the integer types, bool for bool), whatever t's shape: an empty tensor
(a 0 in its shape) gives an empty sequence, a rank-0 tensor one element.
It reads and writes the host's buffer itself (nothing is copied). Where
the running Python's memoryview can index the data type it is a memoryview
of t's bytes cast to the type's buffer format; bfloat16 (which has no
format) and float16 before Python 3.12 (whose memoryview cannot index 'e')
get a pyop.Elements over the raw 16-bit words that converts each element
to and from float on access. Both offer len(), [i], [i] = v, slices
(views of the same memory; ys[a:b] = xs[c:d] copies between two views of
one data type), iteration, tolist(), release(), readonly, nbytes, itemsize
and `with` (release on exit).

It is a buffer of t like memoryview(t): writable only where t is (an
output, a workspace, an input in mutates_args; writing into a read-only one
raises TypeError), asked for only while t's callback runs (RuntimeError
afterwards, as every use of t), and it must be released before the callback
returns (`with`, release() or del), or the call fails as for any view of a
tensor kept after its callback. A value that does not fit the data type is
refused when written, never wrapped: TypeError for a float in an integer
tensor, ValueError for an integer out of range, OverflowError for a finite
float beyond float16's or bfloat16's range (float32 and float64 take it as
infinity, as a memoryview, a C cast and numpy do).
"""

import math
import pickle
import struct

from ._types import DataType

__all__ = ["elements", "Elements"]

# The buffer format of each data type: the bridge's (bridge/tensor.c,
# dtype_fmt), which tests/examples/test_elements.py holds to this table.
# bfloat16 has none; its words are read as "H".
FORMATS = {
    DataType.float32: "f", DataType.float16: "e", DataType.float64: "d",
    DataType.int8: "b", DataType.int16: "h", DataType.int32: "i", DataType.int64: "q",
    DataType.uint8: "B", DataType.uint16: "H", DataType.uint32: "I", DataType.uint64: "Q",
    DataType.bool: "?",
}

_F32 = struct.Struct("=f")
_U32 = struct.Struct("=I")
_F16 = struct.Struct("=e")
_U16 = struct.Struct("=H")
# The largest finite bfloat16 (0x7F7F), and the smallest normal one, as floats.
_BF16_MAX = _F32.unpack(_U32.pack(0x7F7F << 16))[0]
_BF16_MIN_NORMAL = math.ldexp(1.0, -126)


def _memoryview_indexes(fmt):
    """Whether this Python's memoryview reads and writes items of format fmt
    ('e' only from 3.12)."""
    try:
        with memoryview(bytearray(8)) as m, m.cast(fmt) as v:
            v[0] = v[0]
        return True
    except (ValueError, NotImplementedError, TypeError):
        return False


def _tensor_type():
    """pyop.Tensor of the bridge, or None without one (pure-Python use)."""
    import sys
    return getattr(sys.modules.get(__package__ + "._native"), "Tensor", None)


def elements(t):
    """The elements of pyop.Tensor t as a flat sequence of Python numbers
    (see the module's documentation); use it in a `with`."""
    tensor = _tensor_type()
    if tensor is None or not isinstance(t, tensor):
        kind = type(t).__module__ + "." + type(t).__qualname__
        hint = (" (a TensorDesc describes a tensor and has no data: its elements are "
                "in the Tensor execute receives)" if type(t).__name__ == "TensorDesc" else "")
        raise TypeError("pyop.elements() takes a pyop.Tensor, got %s%s" % (kind, hint))
    dtype = t.dtype  # RuntimeError once t's callback returned
    # A PickleBuffer's raw() is the one flat byte view the buffer protocol
    # gives of any C-contiguous buffer, empty and rank-0 ones included
    # (memoryview.cast refuses a 0 in the shape); it holds its own export of
    # t, so the PickleBuffer is released at once.
    whole = pickle.PickleBuffer(t)
    try:
        raw = whole.raw()
    finally:
        whole.release()
    with raw:
        if dtype in _CODECS:
            return Elements(raw.cast("H"), dtype)
        return raw.cast(FORMATS[dtype])


def _as_float(value):
    """value as a float, as a memoryview of format 'f' takes it: a real
    number (float, int, or anything with __float__ or __index__), never a
    str; TypeError otherwise."""
    t = type(value)
    if isinstance(value, (str, bytes, bytearray)) or not (
            hasattr(t, "__float__") or hasattr(t, "__index__")):
        raise TypeError("a float is required, got %s" % t.__name__)
    return float(value)


def _bf16_to_float(bits):
    return _F32.unpack(_U32.pack(bits << 16))[0]


def _float_to_bf16(value):
    """The bfloat16 word nearest to value, rounded exactly from the float
    (to nearest, ties to even; NaN stays NaN, infinities stay infinite);
    TypeError for a non-number, OverflowError for a finite value that
    rounds beyond bfloat16's largest (about 3.39e38)."""
    f = _as_float(value)
    sign = 0x8000 if math.copysign(1.0, f) < 0 else 0
    if math.isnan(f):
        return sign | 0x7FC0
    if math.isinf(f):
        return sign | 0x7F80
    a = abs(f)
    if a < _BF16_MIN_NORMAL:  # zero or subnormal: k units of 2**-133, exactly
        return sign | round(math.ldexp(a, 133))  # k = 128 is the smallest normal
    m, e = math.frexp(a)  # a = m * 2**e, 0.5 <= m < 1
    q = round(m * 256)  # 8 significant bits, exact: ties to even
    if q == 256:
        q, e = 128, e + 1
    biased = e - 1 + 127
    if biased >= 255:
        raise OverflowError("%r is out of range for bfloat16 (largest finite %r)"
                            % (value, _BF16_MAX))
    return sign | biased << 7 | (q - 128)


def _f16_to_float(bits):
    return _F16.unpack(_U16.pack(bits))[0]


def _float_to_f16(value):
    """The float16 word nearest to value (struct's 'e': to nearest, ties to
    even); TypeError for a non-number, OverflowError beyond float16's range
    (65504), as a memoryview of format 'e' refuses it."""
    return _U16.unpack(_F16.pack(_as_float(value)))[0]


# (decode, encode) of the 16-bit words of each data type that Elements
# converts: bfloat16 always, float16 where memoryview cannot index 'e'.
_CODECS = {DataType.bfloat16: (_bf16_to_float, _float_to_bf16)}
if not _memoryview_indexes("e"):
    _CODECS[DataType.float16] = (_f16_to_float, _float_to_f16)


class Elements:
    """The elements of a bfloat16 tensor (or a float16 one before Python
    3.12), as pyop.elements gives them: a flat sequence of floats over the
    tensor's 16-bit words, zero-copy. Reading widens a word to float
    exactly; writing rounds to the nearest value of the type (ties to even;
    NaN stays NaN; a finite value beyond the type's range is an
    OverflowError). It offers what a memoryview does for a sequence: len(),
    [i], [i] = v, slices (a slice is an Elements over the same memory;
    ys[a:b] = xs[c:d] copies between two of one data type), iteration, tolist(), release(), readonly, nbytes, itemsize and `with`;
    like a memoryview, it raises ValueError once released."""

    __slots__ = ("_words", "_dtype", "_decode", "_encode")

    def __init__(self, words, dtype):
        if not isinstance(words, memoryview) or words.format != "H" or words.ndim != 1:
            raise TypeError("pyop.Elements wraps a flat memoryview of format 'H' "
                            "(use pyop.elements(tensor))")
        dtype = DataType(dtype)
        if dtype not in _CODECS:
            raise TypeError("pyop.Elements converts %s; pyop.elements gives a memoryview "
                            "for %s" % (", ".join(d.name for d in _CODECS), dtype.name))
        self._words = words
        self._dtype = dtype
        self._decode, self._encode = _CODECS[dtype]

    @property
    def dtype(self):
        return self._dtype

    def __len__(self):
        return len(self._words)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Elements(self._words[index], self._dtype)
        return self._decode(self._words[index])

    def __setitem__(self, index, value):
        w = self._words
        if w.readonly:
            raise TypeError("cannot modify read-only memory")
        if not isinstance(index, slice):
            w[index] = self._encode(value)
            return
        # As a memoryview's: a slice is assigned from a view of the same type.
        if not isinstance(value, Elements) or value._dtype != self._dtype:
            raise TypeError("pyop.Elements: a slice of %s elements is assigned from "
                            "pyop.elements of the same data type (a slice of one), got %s"
                            % (self._dtype.name, type(value).__name__))
        w[index] = value._words  # ValueError when the lengths differ

    def __iter__(self):
        decode = self._decode
        for bits in self._words:
            yield decode(bits)

    def tolist(self):
        decode = self._decode
        return [decode(b) for b in self._words.tolist()]

    def release(self):
        self._words.release()

    def __enter__(self):
        self._words.__enter__()  # ValueError once released, as a memoryview
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    @property
    def readonly(self):
        return self._words.readonly

    @property
    def nbytes(self):
        return self._words.nbytes

    @property
    def itemsize(self):
        return 2

    def __repr__(self):
        try:
            n = len(self._words)
        except ValueError:
            return "<pyop.Elements %s (released)>" % self._dtype.name
        return "<pyop.Elements %s[%d]%s>" % (self._dtype.name, n,
                                             " read-only" if self.readonly else "")
