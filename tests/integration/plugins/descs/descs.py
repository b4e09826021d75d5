"""A descriptor the plugin rewrote after decoration, one way per load
(tests/integration/bridge_harness.c, case descs: PYOP_TEST_DESC names the
way): a line at and past the ends of uint32_t (and negative), fields of the wrong type or
shape, tuples of default values only. The descriptor is a plain object a plugin can rewrite; the bridge
checks what it reads."""
import os

import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="Tampered", dtypes={"x": "float32"})
def tampered(x: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    return x


_d = tampered.__pyop_descriptor__
_how = os.environ.get("PYOP_TEST_DESC", "")
_ways = {
    "line_zero": ("line", 0),
    "line_max": ("line", 2**32 - 1),
    "line_past": ("line", 2**32),
    "line_neg": ("line", -1),
    "op_type": ("op_type", 5),
    "input_pair": ("inputs", (("x",),)),
    "input_kind": ("inputs", (("x", "required"),)),
    "attr_shape": ("attrs", (("alpha", 2, False),)),
    "output_kinds": ("output_kinds", (0, 0)),
    "output_kind_big": ("output_kinds", (2**31,)),
    "dtype_pair": ("input_dtypes", ((1,),)),
    "dtype_mask": ("input_dtypes", ((-1, "x"),)),
    "outputs_list": ("outputs", list(_d.outputs)),
    "attrs_list": ("attrs", list(_d.attrs)),
}
if _how == "all_default":
    # Tuples whose every value is the default (a required output, no
    # mutated input, no alias): the host gets what None gives.
    _d.output_kinds, _d.input_flags, _d.output_alias = (0,), (0,), (-1,)
elif _how:
    setattr(_d, *_ways[_how])
del _d
