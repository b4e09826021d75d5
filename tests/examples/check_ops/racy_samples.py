"""Per-call data kept on self, checked with samples or --input
(issue 25 item 9): every thread of the concurrency run gets inputs of its
own, derived from the case, and is compared with its own inputs run
alone."""

import ctypes
import time

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="RacySampled")
def racy_sampled(x: TensorDesc) -> TensorDesc:
    if list(x.shape) != [4]:
        raise ValueError("RacySampled takes [4] only")  # generated inputs are refused
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="RacySampled")
class RacySampledImpl:
    def execute(self, x: Tensor) -> None:
        self.saved = ctypes.string_at(x.data_ptr, x.nbytes)  # per-call data on self
        time.sleep(0.005)
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        ctypes.memmove(out.data_ptr, self.saved, len(self.saved))


@pyop.register_samples(op_type="RacySampled")
def racy_samples():
    return [{"inputs": {"x": ("float32", [4], [1, 2, 3, 4])}}]
