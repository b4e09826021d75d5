"""A plugin whose module ends the process when libpyop unloads it, after
its op was checked (issue 25 item 4): the op's verdict stands, the plugin
is reported once, the check does not exit 0."""

import ctypes
import os

import pyop
from pyop import Tensor, TensorDesc


class _EndsTheProcess:
    def __del__(self):
        os._exit(4)


_at_unload = _EndsTheProcess()


@pyop.register_op(op_type="ExitsAtUnload")
def exits_at_unload(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="ExitsAtUnload")
class ExitsAtUnloadImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
