"""AddCustom: an implementation-only GE plugin, y = x1 + alpha * x2 (float32).

Written the way CANN GE's samples are: the prototype is the engine's C++
REG_OP, the plugin holds only register_op_impl, and execute binds to that
prototype (positional names free, attribute names matched). Without the
engine, add_custom.reg_op beside this file writes the REG_OP down for pyop
(docs/ge-plugins.md, "Implementation-only plugins and the host's REG_OPs"):

    pyop run AddCustom --proto add_custom.reg_op \
        --input x1=float32[3]:1,2,3 --input x2=float32[3]:10,20,30 --attr alpha=2
    y: float32[3] = [21, 42, 63]

With no infer_meta (the REG_OP has none here), `pyop check` has nothing that
refuses the other data types: check it on the inputs it takes
(--input x1=float32[4] --input x2=float32[4], or opcheck's inputs=).
"""

import ctypes

from ge.custom_op import get_execute_ctx, register_op_impl
from ge.graph.types import DataType
from ge.runtime import Tensor


@register_op_impl(op_type="AddCustom")
class AddCustom:
    def execute(self, a: Tensor, b: Tensor, *, alpha: float) -> None:  # a = x1, b = x2
        if a.data_type != DataType.DT_FLOAT or b.data_type != DataType.DT_FLOAT:
            raise TypeError("AddCustom takes float32 tensors")
        y = get_execute_ctx().malloc_output_tensor(0, a.shape, a.format, a.data_type)
        n = a.shape_size  # elements (GE tensors have no buffer protocol: addr and ctypes)
        xs = (ctypes.c_float * n).from_address(a.addr)
        ws = (ctypes.c_float * n).from_address(b.addr)
        ys = (ctypes.c_float * n).from_address(y.addr)
        for i in range(n):
            ys[i] = xs[i] + alpha * ws[i]
