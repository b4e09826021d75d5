"""SlowInit(x) -> y = 2x: a plugin that imports _pyop_slowinit (a single-phase
extension whose init takes 300 ms; tests/lanes/slow_init.c), going on without
it where a lane refuses it. In the main interpreter the import succeeds
and says how many inits ran at once; any is a failure of the extension gate
(bridge/lanes.h), which keeps two lanes' inits apart (lanes_load.c,
ext_gate)."""
import importlib.util
import os

import pyop
from pyop import Tensor, TensorDesc

_spec = importlib.util.spec_from_file_location("_pyop_slowinit", os.environ["LANES_SLOWINIT"])
try:
    _slow = importlib.util.module_from_spec(_spec)
except ImportError:
    _slow = None  # a lane refuses it (after running its init)
if _slow is not None and _slow.overlaps:
    raise RuntimeError("_pyop_slowinit: %d inits ran while another ran" % _slow.overlaps)


@pyop.register_op(op_type="SlowInit")
def slow_init(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="SlowInit")
class SlowInitImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        a = memoryview(x).cast("B").cast("f")
        for i in range(len(a)):
            o[i] = 2 * a[i]
