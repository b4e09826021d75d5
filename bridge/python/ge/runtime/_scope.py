"""ge.runtime._scope: when a view is valid and what its arguments may be.

A _Scope is the one validity flag a call's context shares with every view
it hands out (an _OwnerScope: the views of an object a plugin made, which
expire with it); _check and _writable are what every accessor and mutator
of ge.runtime's types asks first. Re-exported by ge.runtime.
"""


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


def _owner_del(self):
    """__del__ of an object a plugin made: its views expire with it (a view
    made by _make owns nothing)."""
    own = getattr(self, "_own", None)  # unset when __init__ raised
    if own is not None:
        own.valid = False
