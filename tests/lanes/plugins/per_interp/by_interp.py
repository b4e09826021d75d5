"""ByInterp(x) -> y = x: a plugin that behaves otherwise in one
interpreter only, as the file PYOP_TEST_BY_INTERP_FILE says ("ACTION ID",
read at each import; no file: it loads everywhere the same):
  refuse ID  its import raises ImportError in interpreter ID (a lane's
             ImportError leaves the element serial with that lane's reason)
  extra ID   interpreter ID also registers ByInterpExtra (a lane that
             yields what the main interpreter does not fails the load)
  nocompile ID  the implementation has no compile in interpreter ID (other
             capabilities in that lane: the load fails)
  rename ID  the prototype's function is named by_interp_renamed in
             interpreter ID: another key there, the main interpreter's a
             prefix of it (that lane does not yield the main interpreter's
             prototype: the load fails)
  noproto ID  interpreter ID registers no prototype, only the
             implementation, whose key is the prototype's everywhere (that
             lane does not yield the prototype: the load fails)
"ACTION ID DIR": only the copy of this file in directory DIR does so.
tests/lanes/lanes_host.c, one_lane_differs, writes the id of lane 1's or
lane 2's interpreter there (the lanes keep their interpreters across
unload and load), so that exactly that lane differs."""
import os

import pyop
from pyop import Tensor, TensorDesc


def _interp_id():
    try:
        import _interpreters as i  # 3.13
    except ImportError:
        import _xxsubinterpreters as i  # 3.12
    cur = i.get_current()
    return int(cur[0] if isinstance(cur, tuple) else cur)


_action, _id, _dir = "", -1, None
_path = os.environ.get("PYOP_TEST_BY_INTERP_FILE")
if _path and os.path.exists(_path):
    with open(_path) as f:
        _action, _id, *_dir = f.read().split()
    _id = int(_id)
_here = _interp_id() == _id and (
    not _dir or os.path.realpath(os.path.dirname(__file__)) == os.path.realpath(_dir[0]))
if _here and _action == "refuse":
    raise ImportError("by_interp refuses interpreter %d (PYOP_TEST_BY_INTERP_FILE)" % _id)


def by_interp(x: TensorDesc) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


if _here and _action == "rename":
    by_interp.__qualname__ = "by_interp_renamed"  # its key longer there: another descriptor
if not (_here and _action == "noproto"):
    pyop.register_op(op_type="ByInterp")(by_interp)


class _ByInterpBase:
    def execute(self, x: Tensor) -> None:
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        a = memoryview(x).cast("B").cast("f")
        for i in range(len(o)):
            o[i] = a[i]


if _here and _action == "nocompile":
    class ByInterpImpl(_ByInterpBase):
        pass
else:
    class ByInterpImpl(_ByInterpBase):
        def compile(self, x, y):
            pyop.get_compile_ctx().set_artifact(b"ok")


# The implementation's key is the prototype's (the same qualified name): only
# their kind tells them apart.
ByInterpImpl.__qualname__ = "by_interp"
pyop.register_op_impl(op_type="ByInterp")(ByInterpImpl)


if _here and _action == "extra":
    @pyop.register_op(op_type="ByInterpExtra")
    def by_interp_extra(x: TensorDesc) -> TensorDesc:
        return TensorDesc(shape=x.shape, dtype=x.dtype)
