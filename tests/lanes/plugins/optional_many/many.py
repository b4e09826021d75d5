"""OptionalMany(x) -> y = x: a plugin that tries four modules an interpreter
lane refuses (on 3.12 and 3.13: the built-in faulthandler, made by
_imp.create_builtin, then the extension modules _testsinglephase,
xxlimited_35, _curses_panel, in that order; not _testcapi, whose refusal
beside _testsinglephase's crashes CPython 3.12.1 itself) and goes on
without each: the element stays serial, its reason naming the first two
refused and how many more (tests/lanes/lanes_load.c, optional_many)."""
import importlib

import pyop
from pyop import Tensor, TensorDesc

for _name in ("faulthandler", "_testsinglephase", "xxlimited_35", "_curses_panel"):
    try:
        importlib.import_module(_name)
    except ImportError:
        pass  # optional


@pyop.register_op(op_type="OptionalMany")
def optional_many(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="OptionalMany")
class OptionalManyImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        a = memoryview(x).cast("B").cast("f")
        for i in range(len(o)):
            o[i] = a[i]
