"""Tensors and contexts as the op uses them (tests/integration/bridge_harness.c,
case views): writing into an input not declared in mutates_args, reading an
input whose buffer the host made smaller than its shape, calling a context
method of another callback kind."""
import hashlib
import struct

import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="Poke")
def poke(x: TensorDesc, *, what: str = "read") -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="Poke")
class PokeImpl:
    def execute(self, x, *, what):
        ctx = pyop.get_execute_ctx()
        if what == "write":
            struct.pack_into("<f", x, 0, 9.0)  # asks for a writable buffer
        elif what == "read":
            with memoryview(x) as m:
                m.tobytes()
        elif what == "flat":  # a flat request (PyBUF_SIMPLE): the bytes, one dimension
            want = memoryview(x).tobytes()
            got = hashlib.sha256(x).digest()  # refuses a buffer of more than one dimension
            if got != hashlib.sha256(want).digest() or b"".join([x]) != want:
                raise AssertionError("a flat request did not see the tensor's bytes")
        elif what == "artifact":
            ctx.set_artifact(b"from execute")
        elif what == "workspace":
            ctx.add_workspace(16)
        elif what == "ref_past":  # input 1 of an op with one input
            ctx.make_output_ref_input(0, 1)
        elif what.startswith("dtype "):  # a dtype given as its number
            ctx.malloc_output_tensor(0, x.shape, int(what[6:]))
            return
        elif what.startswith("dims "):  # a shape of that many dimensions
            ctx.malloc_output_tensor(0, (1,) * int(what[5:]), x.dtype)
            return
        ctx.malloc_output_tensor(0, x.shape, x.dtype)

    def compile(self, x, y, *, what):
        cctx = pyop.get_compile_ctx()
        if what == "output":
            cctx.malloc_output_tensor(0, (1,), "float32")
        cctx.set_artifact(b"ok")
