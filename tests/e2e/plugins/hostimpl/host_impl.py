"""Implementations without a Python prototype: they bind to the prototypes
the host registered (HostScale(x) -> y, attr factor: float = 2.0, and
HostNeg(x) -> y without attributes)."""
import pyop


@pyop.register_op_impl(op_type="HostScale")
class HostScaleImpl:
    def execute(self, x, *, factor):
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as s, memoryview(out) as d:
            fs, fd = s.cast("B").cast("f"), d.cast("B").cast("f")
            for i in range(len(fd)):
                fd[i] = factor * fs[i]
            fs.release()
            fd.release()


@pyop.register_op_impl(op_type="HostNeg")
class HostNegImpl:
    """Bound to the host's HostNeg(x) -> y, which has no attributes."""

    def execute(self, x):
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as s, memoryview(out) as d:
            fs, fd = s.cast("B").cast("f"), d.cast("B").cast("f")
            for i in range(len(fd)):
                fd[i] = -fs[i]
            fs.release()
            fd.release()
