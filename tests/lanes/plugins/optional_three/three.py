"""OptionalThree(x) -> y = x: optional_many/many.py with three refused
modules (faulthandler, _testsinglephase, xxlimited_35): the reason names
the first two and "1 more" (tests/lanes/lanes_load.c, optional_many; a
third refusal alone was dropped when the count began at four)."""
import importlib

import pyop
from pyop import Tensor, TensorDesc

for _name in ("faulthandler", "_testsinglephase", "xxlimited_35"):
    try:
        importlib.import_module(_name)
    except ImportError:
        pass  # optional


@pyop.register_op(op_type="OptionalThree")
def optional_three(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="OptionalThree")
class OptionalThreeImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        a = memoryview(x).cast("B").cast("f")
        for i in range(len(o)):
            o[i] = a[i]
