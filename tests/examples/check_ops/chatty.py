"""An op that prints, at import and in every callback (issue 25 item 13):
`check --json` and opcheck still read a clean report; the text goes to
stderr."""

import ctypes
import os

import pyop
from pyop import Tensor, TensorDesc

print("chatty: imported")
os.write(1, b"chatty: fd 1 at import\n")


@pyop.register_op(op_type="Chatty")
def chatty(x: TensorDesc) -> TensorDesc:
    print("chatty: infer_meta")
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Chatty")
class ChattyImpl:
    def execute(self, x: Tensor) -> None:
        print("chatty: execute")
        os.write(1, b"chatty: fd 1 in execute\n")
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
