"""An implementation whose op type is a typo ("HostScal" for the host's
HostScale): it waits for a prototype of its name instead of failing the
load; host_e2e's case "unknown" checks that the errors of the op the author
meant name it."""
import pyop


@pyop.register_op_impl(op_type="HostScal")
class HostScaleImpl:
    def execute(self, x, *, factor):
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as s, memoryview(out) as d:
            s.cast("B").cast("f")
            d.cast("B").cast("f")
