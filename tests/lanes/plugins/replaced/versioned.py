"""Versioned(x) -> y, y[0] = VERSION: a plugin a deploy replaces (cp + mv)
while a load imports it. With PYOP_TEST_REPLACE=1, its first import (a
lane's: the bridge starts the lanes first, in parallel) writes VERSION = 2
over its own file, once compiled, and leaves a mark (.deployed beside it,
taken atomically) so that no other one does; the other lanes and the main interpreter then compile version 2
(tests/lanes/lanes_load.c, replaced). Loaded from a copy: it changes
itself."""
import os

import pyop
from pyop import Tensor, TensorDesc

VERSION = 1


def _deploy_once():
    mark = os.path.join(os.path.dirname(__file__), ".deployed")
    if os.environ.get("PYOP_TEST_REPLACE") != "1":
        return
    # Lanes import in parallel: the mark is taken atomically, so exactly
    # one import deploys.
    try:
        os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    with open(__file__) as f:
        source = f.read().replace("VERSION = " + "1", "VERSION = " + "2", 1)
    with open(__file__ + ".new", "w") as f:
        f.write(source)
    os.replace(__file__ + ".new", __file__)


_deploy_once()


@pyop.register_op(op_type="Versioned")
def versioned(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="Versioned")
class VersionedImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        memoryview(out).cast("B").cast("f")[0] = float(VERSION)
