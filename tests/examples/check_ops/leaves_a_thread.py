"""A plugin that starts a (non-daemon) thread and leaves it running
(issue 25 item 18): check, list and run end after their report all the
same, and say so."""

import ctypes
import threading

import pyop
from pyop import Tensor, TensorDesc

threading.Thread(target=threading.Event().wait, name="plugin-poller").start()


@pyop.register_op(op_type="WithThread")
def with_thread(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="WithThread")
class WithThreadImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
