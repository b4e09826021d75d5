"""An implementation-only GE plugin, written the way GE's samples are: the
prototypes are C++ REG_OPs of the engine (here: the host registers them with
pyop_register_host_prototype, tests/ge/ge_host.c), the plugin holds only
register_op_impl, and the schema-bound execute binds to that canonical IR
(positional names free, attribute names matched; docs/ge-plugins.md,
"Implementation-only plugins and the host's REG_OPs").

    REG_OP(GeAddCustom)  .INPUT(x1) .INPUT(x2) .OUTPUT(y) .ATTR(alpha, Float, 1.0)
    REG_OP(GeLegacyHost) .INPUT(x) .OUTPUT(y) .REQUIRED_ATTR(k, Int)
    REG_OP(GeMulCustom)  .INPUT(x1) .INPUT(x2) .OUTPUT(y)
"""

import ctypes

from ge.custom_op import register_op_impl, get_execute_ctx
from ge.runtime import Tensor


def view(t):
    return (ctypes.c_float * t.shape_size).from_address(t.addr)


@register_op_impl(op_type="GeAddCustom")
class AddCustom:
    def execute(self, a: Tensor, b: Tensor, *, alpha: float) -> None:  # x1, x2 bound to a, b
        ctx = get_execute_ctx()
        y = ctx.malloc_output_tensor(0, a.shape, a.format, a.data_type)
        for i, (p, q) in enumerate(zip(view(a), view(b))):
            view(y)[i] = p + alpha * q


@register_op_impl(op_type="GeLegacyHost")
class LegacyHost:
    """GE master's legacy form: everything through the context getters."""

    def execute(self, ctx):
        x = ctx.get_input_tensor(0)
        k = ctx.get_attrs().get_int(0)
        assert ctx.get_attrs().get_attr_num() == 1
        y = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        for i, p in enumerate(view(x)):
            view(y)[i] = p * k


@register_op_impl(op_type="GeMulCustom")
class MulCustom:
    """REG_OP(GeMulCustom) .INPUT(x1) .INPUT(x2) .OUTPUT(y): registered by the
    host after the load in the test."""

    def execute(self, p: Tensor, q: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, p.shape, p.format, p.data_type)
        for i, (u, v) in enumerate(zip(view(p), view(q))):
            view(y)[i] = u * v
