"""Refusals(x) -> y: y[0] = 1 when os.fork() raised RuntimeError here,
y[1] = 1 when starting a daemon thread did (what CPython refuses in an
interpreter lane; in the main interpreter neither is tried: y[2] = 1)."""
import os
import threading

import pyop
from pyop import Tensor, TensorDesc


def _in_main_interpreter():
    try:
        import _interpreters as i  # 3.13
    except ImportError:
        import _xxsubinterpreters as i  # 3.12
    cur = i.get_current()
    return int(cur[0] if isinstance(cur, tuple) else cur) == 0


@pyop.register_op(op_type="Refusals")
def refusals(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Refusals")
class RefusalsImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        y = memoryview(out).cast("B").cast("f")
        y[0] = y[1] = y[2] = 0.0
        if _in_main_interpreter():
            y[2] = 1.0
            return
        try:
            pid = os.fork()
        except RuntimeError:
            y[0] = 1.0
        else:
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
        try:
            threading.Thread(target=lambda: None, daemon=True).start()
        except RuntimeError:
            y[1] = 1.0
