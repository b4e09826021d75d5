"""Ops for the process-level tests (host_proc.c): Twice doubles a float32
tensor; Spin keeps the GIL busy in Python for `seconds` before doubling.
Importing logging imports threading, as many real plugins do."""
import logging
import time

import pyop
from pyop import Tensor, TensorDesc

logging.getLogger("proc-plugin").debug("imported")


def _double(x, out):
    with memoryview(x) as xv, memoryview(out) as ov:
        fx, fo = xv.cast("B").cast("f"), ov.cast("B").cast("f")
        for i in range(len(fo)):
            fo[i] = 2 * fx[i]
        fx.release()
        fo.release()


@pyop.register_op(op_type="Twice")
def twice(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Twice")
class TwiceImpl:
    def execute(self, x: Tensor) -> None:
        _double(x, pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype))


@pyop.register_op(op_type="Spin")
def spin(x: TensorDesc, *, seconds: float = 1.0) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Spin")
class SpinImpl:
    def execute(self, x: Tensor, *, seconds: float) -> None:
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:  # pure Python: holds the GIL but for switches
            n += 1
        _double(x, pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype))
