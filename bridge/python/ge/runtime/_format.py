"""ge.runtime._format: ExpandDimsType, StorageFormat (origin and storage
formats) and TensorPlacement. Re-exported by ge.runtime."""

from ..graph.types import Format
from .. import _convert
from ._scope import _OwnerScope, _check, _index, _owner_del, _writable


class ExpandDimsType:
    """ExpandDimsType(), (rule: str) such as "1100", or (rule: int): high 8
    bits the length, low 56 bits the mask of expanded dimensions."""

    __slots__ = ("_v", "_s")
    _MAX = 56

    def __init__(self, rule=None):
        self._s = None
        self._v = [0, 0]  # [size, mask]: a list so views share it
        if rule is None:
            return
        if isinstance(rule, str):
            if len(rule) > self._MAX:
                return  # longer than 56: ignored, as GE does
            mask = 0
            for i, c in enumerate(rule):
                if c == "1":
                    mask |= 1 << i
            self._v[:] = [len(rule), mask]
        elif isinstance(rule, int) and not isinstance(rule, bool):
            if rule < 0 or rule >= 1 << 64:
                raise TypeError("ExpandDimsType rule must be a uint64, got %d" % rule)
            self._v[:] = [rule >> 56, rule & ((1 << 56) - 1)]
        else:
            raise TypeError("ExpandDimsType rule must be a str or an int, got %s"
                            % type(rule).__name__)

    @classmethod
    def _make(cls, v, scope):
        e = object.__new__(cls)
        e._v, e._s = v, scope
        return e

    @property
    def full_size(self):
        _check(self._s)
        return self._v[0]

    def is_expand_index(self, i):
        _check(self._s)
        return bool(self._v[1] >> _index(i) & 1) if i < self._MAX else False

    def set_expand_index(self, i):
        _writable(self._s)
        i = _index(i)
        if i < self._MAX:
            self._v[1] |= 1 << i

    def __reduce__(self):
        _check(self._s)
        return ExpandDimsType, ((self._v[0] << 56) | self._v[1],)

    def __repr__(self):
        return "ExpandDimsType(size=%d, mask=%#x)" % (self._v[0], self._v[1])


class StorageFormat:
    """StorageFormat() (ND/ND, empty rule) or StorageFormat(origin_format,
    storage_format, expand_dims_type); the formats are Format or int."""

    __slots__ = ("_f", "_e", "_s", "_own")

    def __init__(self, origin_format=None, storage_format=None, expand_dims_type=None):
        self._s = self._own = _OwnerScope("an ExpandDimsType view of a StorageFormat")
        if origin_format is None and storage_format is None and expand_dims_type is None:
            self._f = [Format.FORMAT_ND, Format.FORMAT_ND]
            self._e = [0, 0]
            return
        if origin_format is None or storage_format is None or expand_dims_type is None:
            raise TypeError("StorageFormat() takes no arguments or origin_format, "
                            "storage_format and expand_dims_type")
        if not isinstance(expand_dims_type, ExpandDimsType):
            raise TypeError("expand_dims_type must be a ge.runtime.ExpandDimsType")
        self._f = [_convert.ge_format(origin_format, "origin_format"),
                   _convert.ge_format(storage_format, "storage_format")]
        _check(expand_dims_type._s)
        self._e = list(expand_dims_type._v)

    __del__ = _owner_del

    @classmethod
    def _make(cls, f, e, scope):
        s = object.__new__(cls)
        s._f, s._e, s._s, s._own = f, e, scope, None
        return s

    def get_origin_format(self):
        _check(self._s)
        return self._f[0]

    def get_storage_format(self):
        _check(self._s)
        return self._f[1]

    origin_format = property(get_origin_format)
    storage_format = property(get_storage_format)

    @property
    def expand_dims_type(self):
        _check(self._s)
        return ExpandDimsType._make(self._e, self._s)

    def set_origin_format(self, fmt):
        _writable(self._s)
        self._f[0] = _convert.ge_format(fmt, "origin_format")

    def set_storage_format(self, fmt):
        _writable(self._s)
        self._f[1] = _convert.ge_format(fmt, "storage_format")

    def set_expand_dims_type(self, e):
        _writable(self._s)
        if not isinstance(e, ExpandDimsType):
            raise TypeError("set_expand_dims_type() takes a ge.runtime.ExpandDimsType")
        self._e[:] = e._v

    def __reduce__(self):
        _check(self._s)
        return StorageFormat, (self._f[0], self._f[1],
                               ExpandDimsType((self._e[0] << 56) | self._e[1]))

    def __repr__(self):
        if self._s is not None and not self._s.valid:
            return "<ge.runtime.StorageFormat (expired)>"
        return "StorageFormat(%s, %s)" % (self._f[0].name, self._f[1].name)


class TensorPlacement:
    """Where a tensor's memory lives. Like GE's (a pybind11 enum), this is
    not an int: use int(p) / p.value and p.name."""

    __slots__ = ("name", "value")
    _by_value = {}

    def __init__(self, *args, **kwargs):
        raise TypeError("TensorPlacement members are TensorPlacement.ON_HOST, ...")

    @classmethod
    def _member(cls, name, value):
        p = object.__new__(cls)
        object.__setattr__(p, "name", name)
        object.__setattr__(p, "value", value)
        cls._by_value[value] = p
        setattr(cls, name, p)
        return p

    def __setattr__(self, k, v):
        raise AttributeError("TensorPlacement members are read-only")

    def __int__(self):
        return self.value

    __index__ = __int__

    def __eq__(self, other):
        if isinstance(other, TensorPlacement):
            return self.value == other.value
        return NotImplemented

    def __hash__(self):
        return hash(("TensorPlacement", self.value))

    def __repr__(self):
        return "<TensorPlacement.%s: %d>" % (self.name, self.value)


for _n, _v in (("ON_DEVICE_HBM", 0), ("ON_HOST", 1), ("FOLLOWING", 2),
               ("ON_DEVICE_P2P", 3), ("END", 4)):
    TensorPlacement._member(_n, _v)
TensorPlacement.__members__ = dict((p.name, p) for p in TensorPlacement._by_value.values())
del _n, _v
