"""SlowLazy(x) -> y = 2x: imports _pyop_slowinit (a single-phase extension
whose init takes 300 ms; tests/lanes/slow_init.c) inside execute. In a
lane the import is refused after its init and the op goes on in the main
interpreter, whose import succeeds and says how many inits ran at once;
any is a failure of the extension gate (bridge/lanes.h), which keeps the
lanes' and the main interpreter's inits apart (lanes_load.c,
ext_gate_lazy)."""
import importlib.util
import os
import sys

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="SlowLazy")
def slow_lazy(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="SlowLazy")
class SlowLazyImpl:
    def execute(self, x: Tensor) -> None:
        slow = sys.modules.get("_pyop_slowinit")
        if slow is None:
            spec = importlib.util.spec_from_file_location("_pyop_slowinit",
                                                          os.environ["LANES_SLOWINIT"])
            slow = importlib.util.module_from_spec(spec)  # ImportError in a lane
            sys.modules["_pyop_slowinit"] = slow
        if slow.overlaps:
            raise RuntimeError("_pyop_slowinit: %d inits ran while another ran" % slow.overlaps)
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        a = memoryview(x).cast("B").cast("f")
        for i in range(len(a)):
            o[i] = 2 * a[i]
