"""GE-style ops (ge package) for host_ft's ge_shared case. GE keeps one
implementation object per op type, shared by every op instance of that
type: FtGeCount counts its calls on that object with a read-modify-write
that loses counts (and sees overlaps) unless its calls run one at a time.
FtGeShare hands its input to threads that read its fields at once."""
import ctypes
import threading

from ge.custom_op import register_op, register_op_impl, get_execute_ctx, EagerExecuteOp
from ge.runtime import Tensor, TensorDesc


def _floats(t):
    return (ctypes.c_float * t.shape_size).from_address(t.addr)


@register_op(op_type="FtGeCount")
def ft_ge_count(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="FtGeCount")
class FtGeCount(EagerExecuteOp):
    def __init__(self):
        self.calls = 0
        self.active = 0
        self.overlaps = 0

    def execute(self, x: Tensor):
        self.active += 1
        if self.active > 1:
            self.overlaps += 1
        n = self.calls
        for _ in range(30):  # a window for another call to come in
            pass
        self.calls = n + 1
        self.active -= 1
        z = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        zs = _floats(z)
        zs[0] = float(self.calls)
        zs[1] = float(self.overlaps)


@register_op(op_type="FtGeShare")
def ft_ge_share(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="FtGeShare")
class FtGeShare(EagerExecuteOp):
    def execute(self, x: Tensor):
        seen = []

        def read():
            for _ in range(300):
                seen.append((x.shape_size, x.data_type, x.addr))

        ts = [threading.Thread(target=read) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if len(set(seen)) != 1:
            raise AssertionError("the threads read different fields: %r" % (set(seen),))
        z = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        xs, zs = _floats(x), _floats(z)
        for i in range(len(zs)):
            zs[i] = xs[i]
