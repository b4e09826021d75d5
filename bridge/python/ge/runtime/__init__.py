"""ge.runtime: the runtime value types a GE plugin sees (host-only copies
provided by libpyop).

Tensor is a view handed to execute / declare_launch_args: addr is the host
address of the data, and the Tensor and every view reached through it are
valid only during that call (RuntimeError afterwards). There is no buffer
protocol, as in GE: read and write through addr (ctypes).
"""

import reprlib

from pyop import ext

from ..graph.types import DataType, Format
from .. import _convert

# The bridge's base of the Tensor views it hands a directly called execute
# (pyop.ext.native.ViewBase); object without the bridge (pure-Python use).
_ViewBase = getattr(ext.native, "ViewBase", object)
_new = _ViewBase.__new__

__all__ = ["Tensor", "TensorDesc", "Shape", "StorageShape", "StorageFormat",
           "ExpandDimsType", "TensorPlacement"]

MAX_DIM_NUM = 25  # gert::Shape::kMaxDimNum
_INT64_MIN = -(1 << 63)


class _Scope:
    """One validity flag shared by a context and every view it handed out.
    ro: the views are read-only (compile-time tensors, GE 6e38964b+)."""

    __slots__ = ("valid", "what", "ro")

    def __init__(self, what, ro=False):
        self.valid = True
        self.what = what
        self.ro = ro

    def check(self):
        if not self.valid:
            raise RuntimeError("handle has expired: %s used after its call returned (GE "
                               "objects handed to a callback are valid only during it)"
                               % self.what)


class _OwnerScope(_Scope):
    """The validity of the views of an object a plugin made (a TensorDesc,
    StorageShape or StorageFormat): as in GE, a view does not keep its
    owner alive, and it expires when the owner is deleted."""

    __slots__ = ()

    def check(self):
        if not self.valid:
            raise RuntimeError("handle has expired: %s used after its owner was deleted (a "
                               "view does not keep the object it reads alive)" % self.what)


def _check(scope):
    if scope is not None and not scope.valid:
        scope.check()


def _writable(scope):
    """RuntimeError on a mutator of a read-only (compile-time) view."""
    if scope is not None:
        if not scope.valid:
            scope.check()
        if scope.ro:
            raise RuntimeError("borrowed object is read-only: %s is a compile-time view"
                               % scope.what)


def _exact_int(v, what):
    if type(v) is not int:
        raise TypeError("%s must be an int, got %s" % (what, type(v).__name__))
    return v


def _index(i, what="index"):
    if isinstance(i, bool) or not isinstance(i, int):
        raise TypeError("%s must be an int, got %s" % (what, type(i).__name__))
    if i < 0:
        raise TypeError("%s must be >= 0, got %d" % (what, i))
    return i


_SHAPE_KINDS = "a StorageShape, list of integers, or None"


def _dims_from(seq, what):
    """A list of ints from TensorDesc's shape argument: a list of exact ints
    (not a tuple, bool or float), at most MAX_DIM_NUM of them, or a Shape
    view; GE's words with the offending value."""
    if isinstance(seq, Shape):
        return list(seq._view())
    if not isinstance(seq, list):
        raise TypeError("%s must be %s, got %s %s"
                        % (what, _SHAPE_KINDS, type(seq).__name__, reprlib.repr(seq)))
    if len(seq) > MAX_DIM_NUM:
        raise ValueError("%s has %d dimensions: it exceeds the maximum dimension count %d"
                         % (what, len(seq), MAX_DIM_NUM))
    for i, d in enumerate(seq):
        if type(d) is not int:
            raise TypeError("%s must be %s: dimension %d is %s %r"
                            % (what, _SHAPE_KINDS, i, type(d).__name__, d))
    return list(seq)


def _dims_seq(seq, what):
    """Dimensions from any int sequence (StorageShape's constructor)."""
    if isinstance(seq, Shape):
        return list(seq._view())
    try:
        dims = list(seq)
    except TypeError:
        raise TypeError("%s must be a sequence of ints, got %s"
                        % (what, type(seq).__name__)) from None
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError("%s dimension must be an int, got %s" % (what, type(d).__name__))
    if len(dims) > MAX_DIM_NUM:
        raise ValueError("%s has %d dimensions, at most %d are supported"
                         % (what, len(dims), MAX_DIM_NUM))
    return dims


class Shape:
    """A shape view (no public constructor): dims live in the object that
    owns them, so set_dim on tensor.storage_shape edits that tensor's
    description."""

    __slots__ = ("_d", "_s")

    def __init__(self, *args, **kwargs):
        raise TypeError("ge.runtime.Shape cannot be constructed from Python; use the views "
                        "of StorageShape, TensorDesc or Tensor")

    @classmethod
    def _make(cls, dims, scope=None):
        s = object.__new__(cls)
        s._d = dims  # shared list: the view is live
        s._s = scope
        return s

    def _view(self):
        _check(self._s)
        return self._d

    @property
    def dims(self):
        return list(self._view())

    @property
    def dim_num(self):
        return len(self._view())

    @property
    def size(self):
        n = 1
        for d in self._view():
            n *= d
            if not _INT64_MIN <= n < (1 << 63):
                return _INT64_MIN
        return n

    def is_scalar(self):
        return len(self._view()) == 0

    def get_dim(self, i):
        d = self._view()
        i = _index(i)
        if i >= len(d):
            raise ValueError("dim index %d out of range (dim_num %d)" % (i, len(d)))
        return d[i]

    def set_dim(self, i, v):
        _writable(self._s)
        d = self._view()
        i = _index(i)
        _exact_int(v, "dimension")
        if i >= len(d):
            raise ValueError("dim index %d out of range (dim_num %d)" % (i, len(d)))
        d[i] = v

    def append_dim(self, v):
        _writable(self._s)
        d = self._view()
        _exact_int(v, "dimension")
        if len(d) < MAX_DIM_NUM:
            d.append(v)
        return self

    def set_scalar(self):
        _writable(self._s)
        del self._view()[:]

    def __repr__(self):
        if self._s is not None and not self._s.valid:
            return "<ge.runtime.Shape (expired)>"
        return "Shape(%r)" % (self._d,)


def _owner_del(self):
    """__del__ of an object a plugin made: its views expire with it (a view
    made by _make owns nothing)."""
    own = getattr(self, "_own", None)  # unset when __init__ raised
    if own is not None:
        own.valid = False


class StorageShape:
    """StorageShape() (both scalar) or StorageShape(origin_shape, storage_shape).
    Its origin_shape / storage_shape views live as long as it does."""

    __slots__ = ("_o", "_t", "_s", "_own")

    def __init__(self, origin_shape=None, storage_shape=None):
        if (origin_shape is None) != (storage_shape is None):
            raise TypeError("StorageShape() takes no arguments or both origin_shape and "
                            "storage_shape")
        self._o = [] if origin_shape is None else _dims_seq(origin_shape, "origin_shape")
        self._t = [] if storage_shape is None else _dims_seq(storage_shape, "storage_shape")
        self._s = self._own = _OwnerScope("a Shape view of a StorageShape")

    __del__ = _owner_del

    @classmethod
    def _make(cls, origin, storage, scope=None):
        s = object.__new__(cls)
        s._o, s._t, s._s, s._own = origin, storage, scope, None
        return s

    @property
    def origin_shape(self):
        _check(self._s)
        return Shape._make(self._o, self._s)

    @property
    def storage_shape(self):
        _check(self._s)
        return Shape._make(self._t, self._s)

    def set_origin_shape(self, shape):
        _writable(self._s)
        if not isinstance(shape, Shape):
            raise TypeError("set_origin_shape() takes a ge.runtime.Shape")
        self._o[:] = shape._view()

    def set_storage_shape(self, shape):
        _writable(self._s)
        if not isinstance(shape, Shape):
            raise TypeError("set_storage_shape() takes a ge.runtime.Shape")
        self._t[:] = shape._view()

    def __reduce__(self):
        """copy, deepcopy and pickle make an independent StorageShape."""
        _check(self._s)
        return StorageShape, (list(self._o), list(self._t))

    def __repr__(self):
        if self._s is not None and not self._s.valid:
            return "<ge.runtime.StorageShape (expired)>"
        return "StorageShape(%r, %r)" % (self._o, self._t)


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


def _desc_shape(shape, what):
    """(origin, storage) lists from TensorDesc's shape argument."""
    if shape is None:
        return [], []
    if isinstance(shape, StorageShape):
        _check(shape._s)
        return list(shape._o), list(shape._t)
    dims = _dims_from(shape, what)
    return dims, list(dims)


def _desc_dtype(dt):
    if not isinstance(dt, DataType):
        raise TypeError("data_type must be a DataType (ge.graph.DataType), got %s %s"
                        % (type(dt).__name__, reprlib.repr(dt)))
    if dt >= DataType.DT_MAX:
        raise ValueError("data_type must be less than DataType.DT_MAX, got DataType.%s (%d)"
                         % (dt.name, dt.value))
    return dt


class TensorDesc:
    """TensorDesc(shape, data_type): what infer_meta takes and returns.
    shape is a StorageShape (copied), a list of ints (origin = storage) or
    None (a scalar); data_type a DataType. There is no format. Its shape
    is a view that lives as long as the TensorDesc does (as in GE)."""

    __slots__ = ("_o", "_t", "_dt", "_own")

    def __init__(self, shape, data_type):
        self._own = None
        self._o, self._t = _desc_shape(shape, "shape")
        self._dt = _desc_dtype(data_type)
        self._own = _OwnerScope("a shape view of a TensorDesc")

    __del__ = _owner_del

    @property
    def shape(self):
        return StorageShape._make(self._o, self._t, self._own)

    @shape.setter
    def shape(self, shape):
        o, t = _desc_shape(shape, "shape")
        self._o[:] = o
        self._t[:] = t

    @property
    def data_type(self):
        return self._dt

    @data_type.setter
    def data_type(self, dt):
        self._dt = _desc_dtype(dt)

    def __reduce__(self):
        """copy, deepcopy and pickle make an independent TensorDesc (its own
        dims and views)."""
        return TensorDesc, (StorageShape(list(self._o), list(self._t)), self._dt)

    def __repr__(self):
        if self._o == self._t:
            return "TensorDesc(%r, DataType.%s)" % (self._t, self._dt.name)
        return "TensorDesc(StorageShape(%r, %r), DataType.%s)" % (self._o, self._t,
                                                                    self._dt.name)


class Tensor(_ViewBase):
    """A tensor handed to execute / compile / declare_launch_args (no
    constructor): addr is the host address of its data (0 for a description
    at compile / declare_launch_args time); valid only during the call.

    A Tensor made for a call reads pyop's tensor only when a property is
    first used (most kernels read addr and one shape), so an input costs
    one small object per call. The inputs of a directly called execute are
    _View objects the bridge makes itself (no Python runs to make them)."""

    __slots__ = ("_pt", "_addr", "_size", "_o", "_t", "_f", "_e", "_dt", "_p", "_s")

    def __init__(self, *args, **kwargs):
        raise TypeError("ge.runtime.Tensor objects are made by the runtime only")

    @classmethod
    def _make(cls, scope, addr, size, dims, dtype, fmt, placement):
        t = _new(cls)
        t._s = scope
        t._pt = None
        t._addr = addr
        t._size = size
        t._o = list(dims)
        t._t = list(dims)
        t._f = [fmt, fmt]
        t._e = [0, 0]
        t._dt = dtype
        t._p = placement
        return t

    @classmethod
    def _lazy(cls, scope, pt):
        """A view of pyop tensor (or TensorDesc) pt, read on first use."""
        t = _new(cls)
        t._s = scope
        t._pt = pt
        t._o = None
        return t

    def _m(self):
        """Checks validity and reads pyop's tensor the first time."""
        s = self._s
        if s is not None and not s.valid:
            s.check()
        if self._o is None:
            pt = self._pt
            dims = list(pt.shape)
            self._o = dims
            self._t = list(dims)
            fmt = _convert.format_from_pyop(pt.format)
            self._f = [fmt, fmt]
            self._e = [0, 0]
            self._dt = _convert.dtype_from_pyop(pt.dtype)
            self._p = TensorPlacement.ON_HOST
            if hasattr(pt, "data_ptr"):
                self._addr = pt.data_ptr
                self._size = pt.nbytes
            else:  # a description (compile, declare_launch_args): no memory
                self._addr = 0
                self._size = 0
            self._pt = None
        return self

    addr = property(lambda self: self._m()._addr, doc="host address of the data")
    size = property(lambda self: self._m()._size, doc="bytes of the buffer")
    data_type = property(lambda self: self._m()._dt)
    placement = property(lambda self: self._m()._p)
    storage_format = property(lambda self: self._m()._f[1])
    origin_format = property(lambda self: self._m()._f[0])

    @property
    def shape_size(self):
        n = 1
        for d in self._m()._t:
            n *= d
        return n

    @property
    def shape(self):
        m = self._m()
        return StorageShape._make(m._o, m._t, m._s)

    @property
    def storage_shape(self):
        m = self._m()
        return Shape._make(m._t, m._s)

    @property
    def origin_shape(self):
        m = self._m()
        return Shape._make(m._o, m._s)

    @property
    def format(self):
        m = self._m()
        return StorageFormat._make(m._f, m._e, m._s)

    @property
    def expand_dims_type(self):
        m = self._m()
        return ExpandDimsType._make(m._e, m._s)

    def __repr__(self):
        if self._s is not None and not self._s.valid:
            return "<ge.runtime.Tensor (expired: used after its call)>"
        self._m()
        return "<ge.runtime.Tensor shape=%r %s addr=%#x>" % (self._t, self._dt.name, self._addr)


class _View(Tensor):
    """An input of a directly called execute: the bridge makes it (a
    pyop.ext.native.ViewBase of the host tensor; valid while its call runs, then
    every use raises). A per-op subclass (registry._make_execute) names the
    op (what, op) and carries what its context is made from (ir, Ctx). The
    fields are read from the host tensor on first use into a Tensor made
    here (_x, dropped by the bridge when the call ends) whose scope is the
    view itself, so the Shape / StorageShape / StorageFormat views reached
    through it expire with it. Without the bridge it is never made."""

    __slots__ = ()
    what = "a Tensor"
    ro = False

    check = _Scope.check

    def _m(self):
        if not self.valid:
            self.check()
        m = self._x
        if m is None:
            m = self._x = Tensor._make(self, self._data, self._nbytes, self._dims,
                                       _convert.dtype_from_pyop(self._dtype),
                                       _convert.format_from_pyop(self._format),
                                       TensorPlacement.ON_HOST)
        return m

    def __repr__(self):
        if not self.valid:
            return "<ge.runtime.Tensor (expired: used after its call)>"
        m = self._m()
        return "<ge.runtime.Tensor shape=%r %s addr=%#x>" % (m._t, m._dt.name, m._addr)
