"""ge.runtime._shape: Shape (a live view of dimensions) and StorageShape
(origin and storage dimensions). Re-exported by ge.runtime."""

import reprlib

from ._scope import _OwnerScope, _check, _exact_int, _index, _owner_del, _writable

MAX_DIM_NUM = 25  # gert::Shape::kMaxDimNum
_INT64_MIN = -(1 << 63)


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
