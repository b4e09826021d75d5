"""FbAttrs(x; text, tags, flags, rows, none) -> y: execute imports, before
anything else, an extension module an interpreter lane refuses (_ctypes on
3.12, _testsinglephase on 3.13), so the op falls back to the main
interpreter at its first call in a lane, where its holder is made again
from the attributes the host gave the lane's (bridge/lane_calls.c,
attrs_copy). There execute writes the UTF-8 bytes of the repr of the
attributes it got, (text, tags, flags, rows, none), one a float32 element
of y, then -1 (y needs room for them). The bridge harness's lane_services
reads them."""
import importlib
import sys

import pyop
from pyop import Tensor, TensorDesc

EXT = "_ctypes" if sys.version_info < (3, 13) else "_testsinglephase"


@pyop.register_op(op_type="FbAttrs")
def fb_attrs(x: TensorDesc, *, text: str = "", tags: list[str] = [""],
             flags: list[bool] = [False], rows: list[list[int]] = [[0]],
             none: list[int] = [0]) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="FbAttrs")
class FbAttrsImpl:
    def execute(self, x: Tensor, *, text: str, tags: list[str], flags: list[bool],
                rows: list[list[int]], none: list[int]) -> None:
        importlib.import_module(EXT)
        seen = repr((text, list(tags), list(flags), [list(r) for r in rows], list(none)))
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        b = seen.encode()[:len(o) - 1]
        for i, c in enumerate(b):
            o[i] = float(c)
        o[len(b)] = -1.0
