"""ge.runtime._tensor: TensorDesc (what infer_meta takes and returns) and
Tensor, the view of a call's tensor, with _View, the one the bridge makes
for a directly called execute. Re-exported by ge.runtime."""

import reprlib

from pyop import ext

from ..graph.types import DataType
from .. import _convert
from ._scope import _OwnerScope, _Scope, _check, _owner_del
from ._shape import Shape, StorageShape, _dims_from
from ._format import ExpandDimsType, StorageFormat, TensorPlacement

# The bridge's base of the Tensor views it hands a directly called execute
# (pyop.ext.native.ViewBase); object without the bridge (pure-Python use).
_ViewBase = getattr(ext.native, "ViewBase", object)
_new = _ViewBase.__new__


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
