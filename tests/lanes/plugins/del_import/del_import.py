"""DelImport(x) -> y = 2 * x, in pure Python: an op that runs in every lane
(tests/lanes/lanes_load.c, del_import). Its implementation's __del__ imports
an extension module a lane refuses (_ctypes on 3.12, _testsinglephase on
3.13) and goes on without it: the refusal comes outside any call or load."""
import importlib
import sys

import pyop
from pyop import Tensor, TensorDesc

EXT = "_ctypes" if sys.version_info < (3, 13) else "_testsinglephase"


@pyop.register_op(op_type="DelImport")
def del_import(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="DelImport")
class DelImportImpl:
    def __del__(self):
        try:
            importlib.import_module(EXT)
        except ImportError:
            pass  # an optional accelerator, even here

    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        a = memoryview(x).cast("B").cast("f")
        for i in range(len(o)):
            o[i] = 2 * a[i]
