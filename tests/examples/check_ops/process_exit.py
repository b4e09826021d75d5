"""Ops that end the process running them (issue 25 item 4): os._exit(0),
os._exit(7) and C exit(0) in execute, os._exit(9) from the concurrency
run's threads, and one op that is fine: the check
names the op and the case each death happened in and still checks the
others; it never exits 0."""

import ctypes
import os
import threading

import pyop
from pyop import Tensor, TensorDesc


def _desc(x):
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op(op_type="ExitZero")
def exit_zero(x: TensorDesc) -> TensorDesc:
    return _desc(x)


@pyop.register_op_impl(op_type="ExitZero")
class ExitZeroImpl:
    def execute(self, x: Tensor) -> None:
        os._exit(0)


@pyop.register_op(op_type="ExitSeven")
def exit_seven(x: TensorDesc) -> TensorDesc:
    return _desc(x)


@pyop.register_op_impl(op_type="ExitSeven")
class ExitSevenImpl:
    def execute(self, x: Tensor) -> None:
        if x.dtype == pyop.DataType.float16:  # the float16 case only
            os._exit(7)
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)


@pyop.register_op(op_type="ExitC")
def exit_c(x: TensorDesc) -> TensorDesc:
    return _desc(x)


@pyop.register_op_impl(op_type="ExitC")
class ExitCImpl:
    def execute(self, x: Tensor) -> None:
        ctypes.CDLL(None).exit(0)


@pyop.register_op(op_type="StillChecked")
def still_checked(x: TensorDesc) -> TensorDesc:
    return _desc(x)


@pyop.register_op_impl(op_type="StillChecked")
class StillCheckedImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)


@pyop.register_op(op_type="ExitInThreads")
def exit_in_threads(x: TensorDesc) -> TensorDesc:
    if x.dtype != pyop.DataType.float32 or x.ndim != 2:
        raise TypeError("ExitInThreads: float32 matrices only")
    return _desc(x)


@pyop.register_op_impl(op_type="ExitInThreads")
class ExitInThreadsImpl:
    """Fine run alone; ends the process when run from several threads."""

    def execute(self, x: Tensor) -> None:
        if threading.current_thread() is not threading.main_thread():
            os._exit(9)
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
