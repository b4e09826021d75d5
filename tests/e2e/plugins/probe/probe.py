"""Reports how the interpreter running the plugin was configured: execute
writes int64 [isolated, ignore_environment, cwd or '' on sys.path,
user site enabled, PYTHONPATH marker on sys.path] into output 0."""
import os
import sys

import pyop
from pyop import DataType, TensorDesc


@pyop.register_op(op_type="Probe")
def probe(x: TensorDesc) -> TensorDesc:
    return TensorDesc((5,), DataType.int64)


@pyop.register_op_impl(op_type="Probe")
class ProbeImpl:
    def execute(self, x):
        import site
        import struct
        cwd = os.getcwd()
        vals = (sys.flags.isolated, sys.flags.ignore_environment,
                int("" in sys.path or cwd in sys.path),
                int(bool(site.ENABLE_USER_SITE)),
                int(any("pyop-e2e-marker" in p for p in sys.path)))
        out = pyop.get_execute_ctx().malloc_output_tensor(0, (5,), DataType.int64)
        with memoryview(out) as m:
            m.cast("B")[:] = struct.pack("=5q", *vals)
