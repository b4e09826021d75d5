"""A prototype with no implementation (a valid infer-only op): its
infer_meta runs and passes, nothing runs on data -- "infer-only", not
"ok" (issue 25 item 3)."""

import pyop
from pyop import TensorDesc


@pyop.register_op(op_type="PlanOnly")
def plan_only(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)
