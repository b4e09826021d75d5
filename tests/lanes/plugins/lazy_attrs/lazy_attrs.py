"""LazyAttrs(x; alpha, add, tags) -> y: execute imports, before anything
else, an extension module an interpreter lane refuses (_ctypes on 3.12,
_testsinglephase on 3.13), so the op falls back to the main interpreter at
its first call, and the instance there is made from the attributes the
host gave (tests/lanes/lanes_load.c, lazy_attrs). y[0] = alpha * x[0] +
add[0] + 10 * add[1] + 100 * add[2], y[1] = the id of the interpreter that
ran it, y[2] = how many calls this instance (this Python object) has run,
y[3] = the codes of the characters of tags[0] + "|" + tags[1], each times
its place (1, 2, ...), summed.

LazyOne(x; alpha) -> y, y[0] = alpha * x[0], y[1] the interpreter's id: the
same fallback, of an op with a single attribute.

LazyFloats(x; scales) -> y, y[i] = scales[i] for each element of the
list[float] attribute, then len(scales), then the interpreter's id: the
same fallback, every element of a list of floats.

LazyRows(x; rows) -> y: every element of the list[list[int]] attribute,
row after row, then len(rows), then the interpreter's id: the same
fallback, every element of every row of a list of lists of ints.

LazyDtypes(x; dts) -> y: the code of each data type of the list[DataType]
attribute, then len(dts), then the interpreter's id: the same fallback,
every element of a list of data types.

LazyBools(x; flags) -> y: 1 or 0 for each element of the list[bool]
attribute (-2 for one that is not a bool), then len(flags), then the
interpreter's id: the same fallback, every element of a list of bools.

LazyText(x; text) -> y: the code of each character of the str attribute,
then len(text), then the interpreter's id: the same fallback, every byte
of a string."""
import importlib
import sys

import pyop
from pyop import DataType, Tensor, TensorDesc

EXT = "_ctypes" if sys.version_info < (3, 13) else "_testsinglephase"


def _interp_id():
    try:
        import _interpreters as i  # 3.13
    except ImportError:
        import _xxsubinterpreters as i  # 3.12
    cur = i.get_current()
    return int(cur[0] if isinstance(cur, tuple) else cur)


@pyop.register_op(op_type="LazyAttrs")
def lazy_attrs(x: TensorDesc, *, alpha: float = 1.0, add: list[int] = [0, 0, 0],
               tags: list[str] = ["", ""]) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyAttrs")
class LazyAttrsImpl:
    def __init__(self):
        self.calls = 0

    def execute(self, x: Tensor, *, alpha: float, add: list[int], tags: list[str]) -> None:
        importlib.import_module(EXT)
        self.calls += 1
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        o[0] = alpha * memoryview(x).cast("B").cast("f")[0] + add[0] + 10 * add[1] + 100 * add[2]
        o[1] = float(_interp_id())
        o[2] = float(self.calls)
        s = tags[0] + "|" + tags[1]
        o[3] = float(sum(ord(c) * (i + 1) for i, c in enumerate(s)))


@pyop.register_op(op_type="LazyOne")
def lazy_one(x: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyOne")
class LazyOneImpl:
    def execute(self, x: Tensor, *, alpha: float) -> None:
        importlib.import_module(EXT)
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        o[0] = alpha * memoryview(x).cast("B").cast("f")[0]
        o[1] = float(_interp_id())


@pyop.register_op(op_type="LazyFloats")
def lazy_floats(x: TensorDesc, *, scales: list[float] = [0.0]) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyFloats")
class LazyFloatsImpl:
    def execute(self, x: Tensor, *, scales: list[float]) -> None:
        importlib.import_module(EXT)
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        for i, s in enumerate(scales):
            o[i] = s
        o[len(scales)] = float(len(scales))
        o[len(scales) + 1] = float(_interp_id())


@pyop.register_op(op_type="LazyRows")
def lazy_rows(x: TensorDesc, *, rows: list[list[int]] = [[0]]) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyRows")
class LazyRowsImpl:
    def execute(self, x: Tensor, *, rows: list[list[int]]) -> None:
        importlib.import_module(EXT)
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        flat = [v for row in rows for v in row]
        for i, v in enumerate(flat):
            o[i] = float(v)
        o[len(flat)] = float(len(rows))
        o[len(flat) + 1] = float(_interp_id())


@pyop.register_op(op_type="LazyDtypes")
def lazy_dtypes(x: TensorDesc, *, dts: list[DataType] = [DataType.float32]) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyDtypes")
class LazyDtypesImpl:
    def execute(self, x: Tensor, *, dts: list[DataType]) -> None:
        importlib.import_module(EXT)
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        for i, d in enumerate(dts):
            o[i] = float(int(getattr(d, "value", d)))
        o[len(dts)] = float(len(dts))
        o[len(dts) + 1] = float(_interp_id())


@pyop.register_op(op_type="LazyBools")
def lazy_bools(x: TensorDesc, *, flags: list[bool] = [False]) -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyBools")
class LazyBoolsImpl:
    def execute(self, x: Tensor, *, flags: list[bool]) -> None:
        importlib.import_module(EXT)
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        for i, f in enumerate(flags):
            o[i] = 1.0 if f is True else 0.0 if f is False else -2.0
        o[len(flags)] = float(len(flags))
        o[len(flags) + 1] = float(_interp_id())


@pyop.register_op(op_type="LazyText")
def lazy_text(x: TensorDesc, *, text: str = "") -> TensorDesc:
    return TensorDesc(shape=x.shape, dtype=x.dtype)


@pyop.register_op_impl(op_type="LazyText")
class LazyTextImpl:
    def execute(self, x: Tensor, *, text: str) -> None:
        importlib.import_module(EXT)
        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        o = memoryview(out).cast("B").cast("f")
        for i, c in enumerate(text):
            o[i] = float(ord(c))
        o[len(text)] = float(len(text))
        o[len(text) + 1] = float(_interp_id())
