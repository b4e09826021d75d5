"""FtBig for host_ft's reload_leak case: a plugin that holds 1 MiB of module
state (touched, so it is resident), reloaded many times."""
import sys

import pyop
from pyop import Tensor, TensorDesc

_STATE = bytes(range(256)) * 4096  # 1 MiB, every page written
_TABLE = {i: str(i) * 8 for i in range(2000)}  # small objects too


@pyop.register_op(op_type="FtBig")
def ft_big(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="FtBig")
class FtBig:
    """out[0] = 1.0 when CPython made this module's functions immortal (a
    free-threaded Python once a second thread ran Python), else 0.0; the
    rest is x."""

    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as a, memoryview(out) as o:
            o[:] = a
            o[0] = 1.0 if sys.getrefcount(ft_big) >= 2 ** 30 else 0.0
        assert len(_STATE) == 1 << 20 and len(_TABLE) == 2000
