"""VersionedPkg(x) -> y, y[0] = impl.VERSION: a package plugin whose
submodule a deploy replaces (cp + mv) while a load imports it. With
PYOP_TEST_REPLACE=1, its first import (a lane's) writes VERSION = 2 over
impl.py, once compiled, and leaves a mark (.deployed beside the package,
taken atomically: lanes import in parallel) so that no other one does: the
other lanes and the main interpreter then compile version 2 of impl.py,
this file staying the same (tests/lanes/lanes_load.c, replaced). Loaded
from a copy."""
import os

import pyop
from pyop import Tensor, TensorDesc

from . import impl


def _deploy_once():
    mark = os.path.join(os.path.dirname(os.path.dirname(__file__)), ".deployed")
    if os.environ.get("PYOP_TEST_REPLACE") != "1":
        return
    # Lanes import in parallel: the mark is taken atomically, so exactly
    # one import deploys.
    try:
        os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    with open(impl.__file__) as f:
        source = f.read().replace("VERSION = " + "1", "VERSION = " + "2", 1)
    with open(impl.__file__ + ".new", "w") as f:
        f.write(source)
    os.replace(impl.__file__ + ".new", impl.__file__)


_deploy_once()


@pyop.register_op(op_type="VersionedPkg")
def versioned_pkg(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="VersionedPkg")
class VersionedPkgImpl:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        memoryview(out).cast("B").cast("f")[0] = impl.version()
