"""GilHog's execute keeps the GIL for `seconds` in C (libc's usleep called
through ctypes.PyDLL, which does not release it); GilHogThread's starts a
Python thread that does the same (after 0.2 s, once the call has
returned) and returns at once."""
import ctypes
import threading
import time

import pyop
from pyop import Tensor, TensorDesc


def _hold_gil(seconds):
    ctypes.PyDLL(None).usleep(int(seconds * 1e6))


@pyop.register_op(op_type="GilHog")
def gil_hog(x: TensorDesc, *, seconds: float = 1.0) -> None:
    return None


@pyop.register_op_impl(op_type="GilHog")
class GilHogImpl:
    def execute(self, x: Tensor, *, seconds: float) -> None:
        _hold_gil(seconds)


@pyop.register_op(op_type="GilHogThread")
def gil_hog_thread(x: TensorDesc, *, seconds: float = 1.0) -> None:
    return None


@pyop.register_op_impl(op_type="GilHogThread")
class GilHogThreadImpl:
    def execute(self, x: Tensor, *, seconds: float) -> None:
        def later():
            time.sleep(0.2)
            _hold_gil(seconds)

        threading.Thread(target=later, name="gil-hog", daemon=True).start()
