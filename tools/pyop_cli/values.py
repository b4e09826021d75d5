"""Host-side values: the buffers the command owns, tensors from
DTYPE[SHAPE]:VALUES text, attribute values from --attr text, every number
range-checked before it reaches libpyop, and JSON output."""

import ctypes
import itertools
import json
import math
import numbers
import os
import random
import struct

from .binding import (Attr, ATTR_TYPES, DTYPE_SIZE, DTYPE_STRUCT, DTYPES, IntList, MAX_DIMS,
                      Str, Tensor)
from .errors import CliError, UsageError, plural
from .output import say


def _json_float(x):
    """Non-finite floats as strings: --json output stays strict JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def json_safe(obj):
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [json_safe(v) for v in obj]
    return _json_float(obj)


def dump_json(obj):
    say(json.dumps(json_safe(obj), indent=2, sort_keys=True, allow_nan=False))


# The largest buffer the command allocates for one tensor or workspace: a
# shape beyond it is a usage error (or, asked for by an op, a refused
# allocation), not a MemoryError. PYOP_CLI_MAX_BYTES overrides it.
MAX_BYTES_DEFAULT = 1 << 30


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def max_bytes():
    text = os.environ.get("PYOP_CLI_MAX_BYTES")
    if not text:
        return MAX_BYTES_DEFAULT
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if not 0 < value <= INT64_MAX:
        raise UsageError("PYOP_CLI_MAX_BYTES=%s: expected a positive byte count" % text)
    return value


def _fmt_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%g %s" % (round(n / size, 1), unit)
    return plural(n, "byte")


def check_shape(dtype, shape, what):
    """Raises ValueError unless shape is a valid pyop shape (at most
    PYOP_MAX_DIMS dims, each 0..INT64_MAX) whose tensor fits in max_bytes()."""
    if len(shape) > MAX_DIMS:
        raise ValueError("%s: %d dims; a pyop tensor has at most %d (PYOP_MAX_DIMS)"
                         % (what, len(shape), MAX_DIMS))
    for d in shape:
        if d < 0:
            raise ValueError("%s: dim %d is negative" % (what, d))
        if d > INT64_MAX:
            raise ValueError("%s: dim %d does not fit in int64" % (what, d))
    nbytes = numel(shape) * DTYPE_SIZE[dtype]
    limit = max_bytes()
    if nbytes > limit:
        raise ValueError("%s: %s[%s] needs %s, more than the %s the command allocates for "
                         "one tensor (PYOP_CLI_MAX_BYTES)"
                         % (what, DTYPES[dtype], ",".join(map(str, shape)),
                            _fmt_bytes(nbytes), _fmt_bytes(limit)))


# Guard zones: a zone before and after every buffer the command allocates,
# each filled with bytes of its own (a pattern drawn from the buffer's
# number and its Buffers' run number), so bytes copied from one buffer's
# guard into another's -- an off-by-one copy y[n] = x[n], a memmove with the
# wrong element size -- change the guard they land in. Deterministic: the
# same command allocates the same patterns.
GUARD_FRONT = 64          # bytes before each buffer (a multiple of 16: data stays aligned)
GUARD_PATTERN = 4096      # a zone repeats its buffer's pattern of this many bytes
_RUNS = itertools.count(1)


def _guard_pattern(run, index):
    """The GUARD_PATTERN bytes of buffer index of run number run."""
    return random.Random((run << 24) ^ index).randbytes(GUARD_PATTERN)


def _fill(addr, length, pattern):
    for at in range(0, length, len(pattern)):
        n = min(len(pattern), length - at)
        ctypes.memmove(addr + at, pattern, n)


def _changed(addr, length, pattern):
    """(first, last) offsets of the zone at addr whose bytes differ from its
    pattern, or None."""
    first = last = None
    for at in range(0, length, len(pattern)):
        n = min(len(pattern), length - at)
        zone = ctypes.string_at(addr + at, n)
        if zone == pattern[:n]:
            continue
        diff = [k for k in range(n) if zone[k] != pattern[k]]
        first = at + diff[0] if first is None else first
        last = at + diff[-1]
    return None if first is None else (first, last)


class Buffers:
    """Owns every buffer the command hands to libpyop (the host owns memory).
    refused: why an allocation an op asked for was refused (too large).

    Each buffer has a guard zone before it (GUARD_FRONT bytes) and after it
    (8 times its size, at least 64 bytes), filled with that buffer's own
    pattern (_guard_pattern): an op that writes past the end of a tensor
    (float32 stores into an int8 output) or before its start (y[-1]) writes
    there, not into the command's own memory, and overruns() names the
    buffer written, whatever bytes it wrote."""

    def __init__(self):
        self.keep = []
        self.refused = None
        self.run = next(_RUNS)
        self.guards = []  # (data address, nbytes, back guard length, pattern, what)

    @staticmethod
    def shared(keep):
        """A Buffers kept alive by the list keep."""
        b = Buffers()
        keep.append(b)
        return b

    def alloc(self, nbytes, what="a buffer", name=None):
        """A zeroed buffer of nbytes between its guard zones; CliError
        beyond max_bytes(). what names it ("output 0"); overruns() adds its
        name ('output 0 "y"'), so two outputs never read as one."""
        if nbytes > max_bytes():
            self.refused = ("%s of %s refused: more than the %s the command allocates "
                            "(PYOP_CLI_MAX_BYTES)" % (what, _fmt_bytes(nbytes),
                                                      _fmt_bytes(max_bytes())))
            raise CliError(self.refused, "PYOP_ENOMEM")
        nbytes = int(nbytes)
        back = max(64, 8 * nbytes)
        buf = ctypes.create_string_buffer(GUARD_FRONT + nbytes + back)
        self.keep.append(buf)
        pattern = _guard_pattern(self.run, len(self.guards))
        addr = ctypes.addressof(buf) + GUARD_FRONT
        _fill(addr - GUARD_FRONT, GUARD_FRONT, pattern)
        _fill(addr + nbytes, back, pattern)
        self.guards.append((addr, nbytes, back, pattern,
                            '%s "%s"' % (what, name) if name else what))
        return addr

    def overruns(self):
        """What of the buffers had bytes written outside it (a guard zone
        changed), e.g. ["output 0 \"y\" (12 bytes past its end)", "input x
        (4 bytes before its start)"]."""
        out = []
        for addr, nbytes, back, pattern, what in list(self.guards):
            before = _changed(addr - GUARD_FRONT, GUARD_FRONT, pattern)
            after = _changed(addr + nbytes, back, pattern)
            if before:
                out.append("%s (%s before its start)" % (what, plural(GUARD_FRONT - before[0], "byte")))
            if after:
                out.append("%s (%s past its end)" % (what, plural(after[1] + 1, "byte")))
        return out


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


BF16_MAX = (2 - 2 ** -7) * 2.0 ** 127  # bfloat16's largest finite value


def _bf16_bits(x):
    """The bfloat16 word nearest to the float x, rounded once from x (to
    nearest, ties to even), as pyop.elements writes it; a NaN stays a NaN
    and an infinity infinite, with its sign (bit tricks on a NaN's float32
    word carried its payload into the exponent or the sign: inf, -0.0);
    OverflowError for a finite x beyond bfloat16's range."""
    sign = 0x8000 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | 0x7FC0
    if math.isinf(x):
        return sign | 0x7F80
    a = abs(x)
    if a < 2.0 ** -126:  # zero or subnormal: k units of 2**-133 (k = 128: the smallest normal)
        return sign | round(math.ldexp(a, 133))
    m, e = math.frexp(a)  # a = m * 2**e, 0.5 <= m < 1
    q = round(m * 256)  # 8 significant bits (m * 256 is exact): ties to even
    if q == 256:
        q, e = 128, e + 1
    if e + 126 >= 255:
        raise OverflowError("%r is out of range for bfloat16 (largest finite %r)"
                            % (x, BF16_MAX))
    return sign | (e + 126) << 7 | (q - 128)


def _bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def make_tensor(bufs, dtype, shape, values=None, what="a tensor", name=None):
    """A pyop_tensor over a fresh buffer of bufs holding values (or zeros)."""
    t = Tensor()
    t.dtype = dtype
    t.format = 0
    t.ndim = len(shape)
    for k, d in enumerate(shape):
        t.shape[k] = d
    n = numel(shape)
    t.nbytes = n * DTYPE_SIZE[dtype]
    t.data = bufs.alloc(t.nbytes, what, name)
    if values is not None:
        if len(values) != n:
            raise UsageError("%s given for shape [%s] (%s)"
                             % (plural(len(values), "value"), ",".join(map(str, shape)),
                                plural(n, "element")))
        try:
            write_values(t, values)
        except (ValueError, OverflowError, struct.error) as e:
            raise UsageError("values %s do not fit %s: %s"
                             % (",".join(map(str, values)), DTYPES[dtype], e)) from None
    return t


def encode_values(dtype, values):
    """The bytes of values as dtype; ValueError, OverflowError or
    struct.error when one does not fit (an int outside the type's range, a
    float too large for float32/float16, text that is no number)."""
    name = DTYPES[dtype]
    if name == "bfloat16":
        values = [_bf16_bits(float(v)) for v in values]
    elif name == "bool":
        values = [bool(v) for v in values]
    elif name.startswith(("int", "uint")):
        values = [int(v) for v in values]
    else:
        values = [float(v) for v in values]
    return struct.pack("<%d%s" % (len(values), DTYPE_STRUCT[dtype]), *values)


def write_values(t, values):
    raw = encode_values(t.dtype, values)
    ctypes.memmove(t.data, raw, len(raw))


def _is_int(v):
    return isinstance(v, numbers.Integral) and not _is_bool(v)


def _is_bool(v):
    return isinstance(v, bool) or type(v).__name__ == "bool_"  # numpy's too


def plugin_tensor_values(dtype, values, what):
    """Tensor values a plugin gives (its samples) as the command line's are
    read: an int type takes integers (not 2.5, not True), a float type real
    numbers (inf and nan included), bool takes bools; each must fit the type
    (ValueError naming what and the value)."""
    name = DTYPES[dtype]
    for v in values:
        ok = (_is_bool(v) if name == "bool" else _is_int(v)
              if name.startswith(("int", "uint")) else
              isinstance(v, numbers.Real) and not _is_bool(v))
        if not ok:
            raise ValueError("%s: %r is not %s value" % (what, v, _a(name)))
    try:
        encode_values(dtype, values)
    except (ValueError, OverflowError, struct.error) as e:
        bad = next((v for v in values if not _fits(dtype, v)), None)
        raise ValueError("%s: %r does not fit %s (%s)" % (what, bad, name, e)) from None
    return list(values)


def _fits(dtype, v):
    try:
        encode_values(dtype, [v])
        return True
    except (ValueError, OverflowError, struct.error):
        return False


def plugin_attr_value(value, type_name):
    """An attribute value a plugin or a --proto file gives (a sample's
    attrs, a REG_OP default), checked as --attr text is: an int is an
    integer within int64 (never a float or a bool), a float a real number
    (inf and nan included), a bool a bool, a str a str, a DataType a data
    type name or pyop.DataType, lists of those. Returns the value as
    set_attr_value takes it; ValueError saying what is wrong."""
    def one(v, t):
        if t == "int":
            if not _is_int(v):
                raise ValueError("%r is not an int" % (v,))
            return _int64(v)
        if t == "float":
            if not isinstance(v, numbers.Real) or _is_bool(v):
                raise ValueError("%r is not a number" % (v,))
            return float(v)
        if t == "bool":
            if not _is_bool(v):
                raise ValueError("%r is not a bool" % (v,))
            return bool(v)
        if t == "str":
            if not isinstance(v, str):
                raise ValueError("%r is not a str" % (v,))
            return v
        if t == "DataType":
            name = v if isinstance(v, str) else getattr(v, "name", None)
            if name not in DTYPES:
                raise ValueError("%r is not a data type (one of: %s)" % (v, ", ".join(DTYPES)))
            return name
        raise ValueError("attribute type %s" % t)

    if type_name.startswith("list[list["):
        if not isinstance(value, (list, tuple)) or not all(
                isinstance(r, (list, tuple)) for r in value):
            raise ValueError("%r is not a list of lists of int" % (value,))
        return [[one(x, "int") for x in r] for r in value]
    if type_name.startswith("list["):
        if not isinstance(value, (list, tuple)):
            raise ValueError("%r is not a %s" % (value, type_name))
        return [one(x, type_name[5:-1]) for x in value]
    return one(value, type_name)


def read_values(t):
    """The values of tensor t, read from its buffer."""
    n = numel(t.shape[:t.ndim])
    if not t.data or n == 0:
        return []
    return decode_values(t.dtype, ctypes.string_at(t.data, n * DTYPE_SIZE[t.dtype]))


def decode_values(dtype, raw):
    """The values whose bytes (little-endian, as encode_values writes them)
    are raw."""
    n = len(raw) // DTYPE_SIZE[dtype]
    vals = list(struct.unpack("<%d%s" % (n, DTYPE_STRUCT[dtype]), raw[:n * DTYPE_SIZE[dtype]]))
    if DTYPES[dtype] == "bfloat16":
        vals = [_bf16_value(v) for v in vals]
    return vals


def shape_text(dtype, shape):
    """How the command prints a tensor description, everywhere: float32[2,3]."""
    name = DTYPES[dtype] if isinstance(dtype, int) else dtype
    return "%s[%s]" % (name, ",".join(str(d) for d in shape))


def tensor_repr(t):
    return shape_text(t.dtype, t.shape[:t.ndim])


def make_attrs(info, given, keep):
    """pyop_attr array from {name: python value}, typed by the op's prototype."""
    types = {a["name"]: a["type"] for a in info["attrs"]}
    attrs = (Attr * max(len(given), 1))()
    for k, (name, value) in enumerate(given.items()):
        if name not in types:
            raise UsageError('op "%s" has no attribute "%s" (it has: %s)'
                             % (info["op_type"], name, ", ".join(types) or "none"),
                             info["op_type"])
        a = attrs[k]
        a.name = name.encode()
        keep.append(a.name)
        set_attr_value(a.value, types[name], value, keep)
    return attrs, len(given)


def _attr_int64(value):
    """An int attribute value (also from samples) that fits int64: ctypes
    would wrap a larger one silently."""
    try:
        return _int64(value)
    except ValueError as e:
        raise CliError("attribute value %s" % e, "PYOP_EINVAL") from None


def _array(ctype, values, keep):
    arr = (ctype * max(len(values), 1))(*values)
    keep.append(arr)
    return ctypes.cast(arr, ctypes.c_void_p), len(values)


def set_attr_value(v, type_name, value, keep):
    code = {n: c for c, n in ATTR_TYPES.items()}[type_name]
    v.type = code
    if type_name == "int":
        v.u.i = _attr_int64(value)
    elif type_name == "float":
        v.u.f = float(value)
    elif type_name == "bool":
        v.u.b = bool(value)
    elif type_name == "str":
        b = str(value).encode()
        keep.append(b)
        v.u.s = Str(b, len(b))
    elif type_name == "DataType":
        v.u.dtype = DTYPES.index(value)
    elif type_name == "list[int]":
        v.u.span.items, v.u.span.count = _array(ctypes.c_int64,
                                                [_attr_int64(x) for x in value], keep)
    elif type_name == "list[float]":
        v.u.span.items, v.u.span.count = _array(ctypes.c_double, [float(x) for x in value], keep)
    elif type_name == "list[bool]":
        v.u.span.items, v.u.span.count = _array(ctypes.c_bool, [bool(x) for x in value], keep)
    elif type_name == "list[DataType]":
        v.u.span.items, v.u.span.count = _array(ctypes.c_int32, [DTYPES.index(x) for x in value], keep)
    elif type_name == "list[str]":
        bs = [str(x).encode() for x in value]
        keep.extend(bs)
        v.u.span.items, v.u.span.count = _array(Str, [Str(b, len(b)) for b in bs], keep)
    elif type_name == "Tensor":
        dtype, shape, values = value
        t = make_tensor(Buffers.shared(keep), dtype, shape, values)
        keep.append(t)
        v.u.tensor = ctypes.pointer(t)
    elif type_name == "list[list[int]]":
        inner = []
        for row in value:
            p, n = _array(ctypes.c_int64, [_attr_int64(x) for x in row], keep)
            inner.append(IntList(ctypes.cast(p, ctypes.POINTER(ctypes.c_int64)), n))
        v.u.span.items, v.u.span.count = _array(IntList, inner, keep)
    else:
        raise CliError("unsupported attribute type %s" % type_name, "PYOP_EUNSUPPORTED")


_ATTR_EXAMPLES = {"int": "an integer such as 1 or -2", "float": "a number such as 0.5",
                  "bool": "true or false", "DataType": "a data type such as float32",
                  "list[int]": "e.g. 1,2,3", "list[float]": "e.g. 0.5,1", "list[bool]":
                  "e.g. true,false", "list[str]": "e.g. a,b", "list[DataType]":
                  "e.g. float32,int8", "list[list[int]]": "JSON, e.g. [[1,2],[3]]"}


def parse_tensor_text(text, what):
    """DTYPE[SHAPE]:VALUES (VALUES optional: sample values) -> (dtype, shape, values)."""
    _, dtype, shape, values = parse_input("%s=%s" % (what, text))
    if values is None:
        values = _sample_values(dtype, numel(shape), 0)
    return dtype, shape, values


def parse_attr_text(text, type_name, name="", op=None):
    """--attr NAME=VALUE text -> Python value of the attribute's type (a
    Tensor attribute as DTYPE[SHAPE]:VALUES); a value that does not parse is
    a UsageError naming the attribute and the type."""
    if type_name == "Tensor":
        return parse_tensor_text(text, name or "attr")
    try:
        if type_name in ("int", "float", "bool", "str", "DataType"):
            return _scalar(text, type_name)
        if type_name == "list[list[int]]":
            value = json.loads(text)
            if not isinstance(value, list) or not all(
                    isinstance(r, list) and all(isinstance(x, int) for x in r) for r in value):
                raise ValueError(text)
            if any(_is_bool(x) for r in value for x in r):  # JSON true/false: no int
                raise ValueError(text)
            return [[_int64(x) for x in r] for r in value]
        inner = type_name[5:-1]
        body = text.strip()
        if body.startswith("[") and body.endswith("]"):
            body = body[1:-1]  # a pair only: "[1,2" keeps its "[" and is refused
        return [_scalar(x.strip(), inner) for x in body.split(",") if x.strip()]
    except ValueError as e:
        why = str(e) if "outside int64" in str(e) else None
        raise UsageError("--attr %s=%s: attribute \"%s\"%s is %s, and %r is not one (%s)"
                         % (name, text, name, ' of "%s"' % op if op else "",
                            "an int" if type_name == "int" else "a " + type_name, text,
                            why or _ATTR_EXAMPLES.get(type_name, type_name)), op) from None


def _int64(value):
    """value as an int64 attribute; ValueError outside int64."""
    value = int(value)
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError("%d is outside int64" % value)
    return value


def _scalar(text, type_name):
    if type_name == "int":
        return _int64(int(text, 0))
    if type_name == "float":
        return float(text)
    if type_name == "bool":
        low = text.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(text)
    if type_name == "DataType":
        if text not in DTYPES:
            raise ValueError(text)
        return text
    return text


def parse_input(text):
    """NAME=DTYPE[SHAPE]:VALUES, e.g. x=float32[2,3]:1,2,3,4,5,6 (VALUES optional)."""
    if "=" not in text:
        raise UsageError("--input %s: expected NAME=DTYPE[SHAPE]:VALUES" % text)
    name, spec = text.split("=", 1)
    values = None
    if "]" not in spec or "[" not in spec:
        raise UsageError("--input %s: expected DTYPE[SHAPE], e.g. float32[2,3]" % text)
    head, _, tail = spec.partition("]")
    dtype_name, _, dims = head.partition("[")
    if dtype_name not in DTYPES:
        raise UsageError("--input %s: unknown data type %r (one of: %s)"
                         % (text, dtype_name, ", ".join(DTYPES)))
    try:
        shape = [int(d) for d in dims.split(",") if d.strip()]
    except ValueError:
        raise UsageError("--input %s: the shape must be integers, e.g. float32[2,3]"
                         % text) from None
    try:
        check_shape(DTYPES.index(dtype_name), shape, "--input %s" % text)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if tail:
        if not tail.startswith(":"):
            raise UsageError("--input %s: expected ':' before the values" % text)
        given = [v.strip() for v in tail[1:].split(",") if v.strip()]
        values = [_value_text(v, dtype_name, text) for v in given]
        try:
            encode_values(DTYPES.index(dtype_name), values)
        except (ValueError, OverflowError, struct.error) as e:
            raise UsageError("values %s do not fit %s: %s"
                             % (",".join(given), dtype_name, e)) from None
    return name.strip(), DTYPES.index(dtype_name), shape, values


def _value_text(v, dtype_name, text):
    """One VALUES element of --input as a value of its data type, read as
    --attr reads one (bool: true/false/1/0/yes/no/on/off, never "any text is
    True"); whether it fits the type is checked when it is written."""
    try:
        if dtype_name == "bool":
            return _scalar(v, "bool")
        if dtype_name.startswith(("int", "uint")):
            return int(v)
        return float(v)
    except ValueError:
        raise UsageError("--input %s: %r is not %s value" % (text, v, _a(dtype_name))) from None


def _a(name):
    """'an int8', 'a float32', 'a uint8' (said "you-int"): the data type
    name with its article."""
    return ("an " if name[0] in "aeio" else "a ") + name


def _sample_values(dtype, n, seed):
    name = DTYPES[dtype]
    if name == "bool":
        return [(k + seed) % 2 == 0 for k in range(n)]
    if name.startswith("uint") or name.startswith("int"):
        return [(k + seed) % 7 for k in range(n)]
    return [((k + seed) % 11) * 0.5 for k in range(n)]


def _default_attr(a):
    samples = {"int": 1, "float": 1.0, "bool": False, "str": "x", "DataType": "float32",
               "list[int]": [1], "list[float]": [1.0], "list[bool]": [False],
               "list[str]": ["x"], "list[DataType]": ["float32"], "list[list[int]]": [[1]],
               "Tensor": (0, [2, 3], _sample_values(0, 6, 0))}
    return samples[a["type"]]


def _fmt_values(vals):
    out = []
    for v in vals:
        if isinstance(v, float):
            out.append("%g" % v if math.isfinite(v) else str(v))
        else:
            out.append(str(v))
    return "[" + ", ".join(out) + "]"


def _descs(ds):
    return ", ".join(shape_text(d, s) for d, s in ds) or "nothing"
