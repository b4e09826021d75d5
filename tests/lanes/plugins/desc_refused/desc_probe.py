"""DescProbe(x) -> y = x, its list[int] attribute k defaulting to [3]: the
default's item is an object whose __index__ imports an extension module a
lane refuses (_ctypes on 3.12, the single-phase _testsinglephase on 3.13),
catches that ImportError and raises a ValueError instead. So converting
the descriptors fails in a lane alone, after a caught refusal: the load
fails as any lane's Python error does (tests/lanes/lanes_load.c,
desc_refused)."""
import sys

import pyop
from pyop import TensorDesc
from pyop._types import AttrType


class NeedsExt:
    def __index__(self):
        try:
            if sys.version_info < (3, 13):
                import _ctypes  # noqa: F401
            else:
                import _testsinglephase  # noqa: F401
        except ImportError:
            raise ValueError("DescProbe: no default for k without the extension") from None
        return 3


@pyop.register_op(op_type="DescProbe")
def desc_probe(x: TensorDesc, *, k: list[int] = [1]) -> TensorDesc:
    return x


# The descriptor is a plain object (as tests/integration/plugins/hostile's
# evil_descs.py rewrites it): the default converted by the bridge.
desc_probe.__pyop_descriptor__.attrs = (("k", AttrType.LIST_INT, False, [NeedsExt()]),)
