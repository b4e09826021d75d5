"""A plugin that imports numpy (as the shipped examples do): NpTwice doubles a
float32 tensor with numpy; NpImports gives how many times this file was
imported in this interpreter (a shutdown removes the plugin's module, so the
next load imports it again)."""
import sys

import numpy as np

import pyop
from pyop import Tensor, TensorDesc

sys._pyop_e2e_np_imports = getattr(sys, "_pyop_e2e_np_imports", 0) + 1


@pyop.register_op(op_type="NpTwice")
def np_twice(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="NpTwice")
class NpTwiceImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        np.asarray(out)[...] = np.asarray(x) * 2


@pyop.register_op(op_type="NpImports")
def np_imports(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=(1,), dtype=pyop.DataType.int64)


@pyop.register_op_impl(op_type="NpImports")
class NpImportsImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, (1,), pyop.DataType.int64)
        np.asarray(out)[0] = sys._pyop_e2e_np_imports
