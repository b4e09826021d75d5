"""pyop.elements on real tensors: every data type, empty, rank-0 and
one-element tensors, read-only inputs, values that do not fit, a view kept
after the call, and a tensor used after its call.

Drives libpyop in this process through the pyop command's ctypes binding
(tools/pyop_cli): the real bridge imports the plugin below and each op
instance is run as a host runs it, as often as a case needs. Checks that
can only be made inside a call are assertions there: a failed one fails the
call, which the test reports.

Driven by ctest (tests/examples/CMakeLists.txt):

  PYOP_TEST_LIBRARY  the build's libpyop.so
  PYOP_TEST_TOOLS    tools/ of the source tree (the pyop_cli package)

Run by the build's default Python (the bridge is built for it).
"""

import math
import os
import shutil
import struct
import sys
import tempfile
import textwrap
import unittest

ENV = os.environ

PLUGIN = '''
import math
import threading

import pyop
from pyop import DataType, Tensor, TensorDesc
from pyop._elements import FORMATS

KIND = {d: float for d in (DataType.float32, DataType.float16, DataType.bfloat16,
                           DataType.float64)}
KIND[DataType.bool] = bool


def kind(dtype):
    return KIND.get(dtype, int)


def same(a, b):
    return a == b or (a != a and b != b)  # NaN is NaN


@pyop.register_op(op_type="ElemCopy")
def elem_copy(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="ElemCopy")
class ElemCopy:
    """y = x element by element, then again through slices, asserting what
    pyop.elements promises on the way."""

    def execute(self, x: Tensor) -> None:
        y = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with memoryview(x) as m:  # the bridge's format is the table's
            assert m.format == FORMATS.get(x.dtype, "H"), (x.dtype, m.format)
        with pyop.elements(x) as xs, pyop.elements(y) as ys:
            assert len(xs) == len(ys) == x.numel, (len(xs), x.numel)
            assert xs.readonly and not ys.readonly
            assert xs.nbytes == x.nbytes and xs.itemsize == x.dtype.itemsize
            vals = xs.tolist()
            assert all(type(v) is kind(x.dtype) for v in vals), (x.dtype, vals)
            assert all(same(a, b) for a, b in zip(vals, list(xs))), vals
            assert len(vals) == x.numel
            if vals:
                try:
                    xs[0] = vals[0]
                except TypeError as e:
                    assert "read-only" in str(e), e
                else:
                    raise AssertionError("wrote into a read-only input")
                assert same(xs[-1], vals[-1])
            for i in range(len(ys)):
                ys[i] = xs[i]
            assert all(same(a, b) for a, b in zip(ys.tolist(), vals))
            half = len(ys) // 2
            ys[:half] = xs[:half]
            ys[half:] = xs[half:]
            try:
                ys[:1] = vals[:1]  # a list is no view, as for a memoryview
            except TypeError:
                pass
            else:
                raise AssertionError("a slice took a list")
        try:
            xs[0]
        except ValueError:
            pass  # released by the with, as a memoryview
        else:
            raise AssertionError("a released view still reads")


@pyop.register_op(op_type="ElemDouble")
def elem_double(x: TensorDesc) -> TensorDesc:
    if kind(x.dtype) is not float:
        raise TypeError("ElemDouble: a floating-point x, got %s" % x.dtype)
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="ElemDouble")
class ElemDouble:
    def execute(self, x: Tensor) -> None:
        y = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with pyop.elements(x) as xs, pyop.elements(y) as ys:
            for i, v in enumerate(xs):
                ys[i] = 2 * v


@pyop.register_op(op_type="ElemSet")
def elem_set(x: TensorDesc, *, v: float, as_int: bool = False) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="ElemSet")
class ElemSet:
    """Every element of y set to v (int(v) with as_int)."""

    def execute(self, x: Tensor, *, v: float, as_int: bool) -> None:
        y = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
        with pyop.elements(y) as ys:
            for i in range(len(ys)):
                ys[i] = int(v) if as_int else v


@pyop.register_op(op_type="ElemWriteInput")
def elem_write_input(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="ElemWriteInput")
class ElemWriteInput:
    def execute(self, x: Tensor) -> None:
        with pyop.elements(x) as xs:
            xs[0] = 0


@pyop.register_op(op_type="ElemKeep")
def elem_keep(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="ElemKeep")
class ElemKeep:
    def execute(self, x: Tensor) -> None:
        self.kept = pyop.elements(x)  # never released: escapes the call


@pyop.register_op(op_type="ElemAfter")
def elem_after(x: TensorDesc) -> TensorDesc:
    return TensorDesc((1,), DataType.float32)


@pyop.register_op_impl(op_type="ElemAfter", deterministic=False)
class ElemAfter:
    """Keeps each call's x (the Tensor, not a view); the next call on the
    same thread asks pyop.elements of it, which must raise. y = [1] when
    that was checked, [0] on a thread's first call."""

    def __init__(self):
        self.prev = threading.local()

    def execute(self, x: Tensor) -> None:
        y = pyop.get_execute_ctx().malloc_output_tensor(0, (1,), DataType.float32)
        prev = getattr(self.prev, "x", None)
        if prev is not None:
            try:
                pyop.elements(prev)
            except RuntimeError as e:
                assert "outside its callback" in str(e), e
            else:
                raise AssertionError("pyop.elements of a tensor whose call returned")
        self.prev.x = x
        with pyop.elements(y) as ys:
            ys[0] = 0.0 if prev is None else 1.0


RANKS = [None, (2, 3), (), (1, 1, 1, 1)]  # None: x's own shape


@pyop.register_op(op_type="ElemRanks", outputs=("ys",))
def elem_ranks(x: TensorDesc) -> list[TensorDesc]:
    return [TensorDesc(x.shape if r is None else r, x.dtype) for r in RANKS]


@pyop.register_op_impl(op_type="ElemRanks")
class ElemRanks:
    """A dynamic output whose tensors have ranks of their own."""

    def execute(self, x: Tensor) -> None:
        ctx = pyop.get_execute_ctx()
        for r in RANKS:
            ctx.malloc_output_tensor(0, x.shape if r is None else r, x.dtype)
'''

DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64",
          "uint8", "uint16", "uint32", "uint64", "bool")
SHAPES = ([2, 3], [0, 3], [], [1], [3, 0, 2], [7])
INF = float("inf")
# Values each data type holds exactly, its extremes among them.
EXTREMES = {
    "float32": [0.0, -0.0, 1.5, -3.25, 3.4028234663852886e38, 1.401298464324817e-45, INF, -INF],
    "float16": [0.0, -0.0, 1.5, -3.25, 65504.0, 5.960464477539063e-08, INF, -INF],
    "bfloat16": [0.0, -0.0, 1.5, -3.25, 3.3895313892515355e38, 9.183549615799121e-41, INF, -INF],
    "float64": [0.0, -0.0, 1.5, -3.25, 1.7976931348623157e308, 5e-324, INF, -INF],
    "int8": [0, 1, -1, 127, -128], "int16": [0, -1, 32767, -32768],
    "int32": [0, -1, 2 ** 31 - 1, -2 ** 31], "int64": [0, -1, 2 ** 63 - 1, -2 ** 63],
    "uint8": [0, 1, 255], "uint16": [0, 65535], "uint32": [0, 2 ** 32 - 1],
    "uint64": [0, 2 ** 64 - 1], "bool": [True, False],
}


def _need(name):
    value = ENV.get(name)
    if not value:
        raise unittest.SkipTest("%s is not set (run through ctest)" % name)
    return value


def _values(dtype, n):
    ext = EXTREMES[dtype]
    return [ext[i % len(ext)] for i in range(n)]


class ElementsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        library = _need("PYOP_TEST_LIBRARY")
        sys.path.insert(0, _need("PYOP_TEST_TOOLS"))
        from pyop_cli.binding import DTYPES as CLI_DTYPES, Lib
        from pyop_cli.errors import PyopError
        from pyop_cli.host import Instance
        cls.PyopError, cls.Instance = PyopError, Instance
        cls.code = {name: k for k, name in enumerate(CLI_DTYPES)}
        cls.tmp = tempfile.mkdtemp(prefix="pyop-elements-test-")
        with open(os.path.join(cls.tmp, "elements_probe.py"), "w") as f:
            f.write(textwrap.dedent(PLUGIN))
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = cls.tmp
        cls.lib = Lib(library)
        cls.lib.load()

    @classmethod
    def tearDownClass(cls):
        cls.lib.shutdown()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def instance(self, op, attrs=None):
        inst = self.Instance(self.lib, self.lib.op_info(op), attrs or {})
        self.addCleanup(inst.destroy)
        return inst

    def run_op(self, inst, dtype, shape, values=None):
        n = 1
        for d in shape:
            n *= d
        vals = _values(dtype, n) if values is None else values
        return inst.run([[(self.code[dtype], shape, vals)]])

    def ok(self, res, what):
        self.assertIsNone(res.error, "%s: %s" % (what, res.error and res.error.message))
        return res

    def test_copy_every_dtype_and_shape(self):
        inst = self.instance("ElemCopy")
        for dtype in DTYPES:
            for shape in SHAPES:
                with self.subTest(dtype=dtype, shape=shape):
                    res = self.ok(self.run_op(inst, dtype, shape), "ElemCopy %s%s" % (dtype, shape))
                    self.assertEqual(res.output_bytes(), [res.before[0]],
                                     "the copy changed bytes")

    def test_values_convert_exactly(self):
        inst = self.instance("ElemDouble")
        for dtype in ("float32", "float16", "bfloat16", "float64"):
            with self.subTest(dtype=dtype):
                res = self.ok(self.run_op(inst, dtype, [4], [1.5, -3.25, 0.0, INF]), dtype)
                _, got = res.produced[0][0]
                self.assertEqual(got, [3.0, -6.5, 0.0, INF])

    def set_to(self, dtype, v, as_int=False):
        inst = self.instance("ElemSet", {"v": v, "as_int": as_int})
        return self.run_op(inst, dtype, [2])

    def test_bfloat16_rounds_to_nearest_even(self):
        for v, want in ((1.00390625, 1.0),         # a tie: 1 is even
                        (1.01171875, 1.015625),    # a tie: 1 + 2**-6 is even
                        (1.0039063, 1.0078125),    # just above the tie
                        (-2.0 ** -130, -2.0 ** -130),  # subnormal, exact
                        (2.0 ** -134, 0.0),          # half the smallest: a tie, 0 is even
                        (1.5 * 2.0 ** -133, 2.0 ** -132),  # a tie, 2 units is even
                        (3.3961e38, 3.3895313892515355e38)):  # below the overflow tie
            with self.subTest(v=v):
                res = self.ok(self.set_to("bfloat16", v), "bfloat16 %r" % v)
                self.assertEqual(res.produced[0][0][1], [want, want])

    def test_values_that_do_not_fit_are_refused(self):
        for dtype, v, as_int, exc in (("bfloat16", 1e39, False, "OverflowError"),
                                      ("bfloat16", 3.4e38, False, "OverflowError"),
                                      ("float16", 65520.0, False, "OverflowError"),
                                      ("int8", 300.0, True, "ValueError"),
                                      ("uint8", -1.0, True, "ValueError"),
                                      ("int8", 1.5, False, "TypeError")):
            with self.subTest(dtype=dtype, v=v):
                res = self.set_to(dtype, v, as_int)
                self.assertIsNotNone(res.error, "%r into %s was taken" % (v, dtype))
                self.assertEqual(res.error.status, "PYOP_EPYTHON")
                self.assertIn(exc + ":", res.error.message)

    def test_float32_beyond_its_range_is_infinite(self):
        # memoryview's 'f', as a C cast and numpy: what the docs say.
        res = self.ok(self.set_to("float32", -1e39), "float32 -1e39")
        self.assertEqual(res.produced[0][0][1], [-INF, -INF])

    def test_writing_an_input_is_refused(self):
        inst = self.instance("ElemWriteInput")
        for dtype in ("float32", "bfloat16", "float16", "bool"):
            with self.subTest(dtype=dtype):
                res = self.run_op(inst, dtype, [2])
                self.assertIsNotNone(res.error)
                self.assertIn("TypeError: cannot modify read-only memory", res.error.message)
                self.assertEqual(res.before, res.after)

    def test_a_kept_view_fails_the_call(self):
        for dtype in ("float32", "bfloat16", "float16"):
            with self.subTest(dtype=dtype):
                inst = self.instance("ElemKeep")
                res = self.run_op(inst, dtype, [2])
                self.assertIsNotNone(res.error, "a view kept after the call was not noticed")
                self.assertIn("is still alive after the callback returned", res.error.message)
                again = self.run_op(inst, dtype, [2])
                self.assertEqual(again.error.status, "PYOP_ESTATE")

    def test_elements_of_a_tensor_after_its_call_raises(self):
        inst = self.instance("ElemAfter")
        first = self.ok(self.run_op(inst, "bfloat16", [3]), "first call")
        self.assertEqual(first.produced[0][0][1], [0.0])
        for dtype in ("float32", "bfloat16", "int8"):
            res = self.ok(self.run_op(inst, dtype, [3]), "a later call")
            self.assertEqual(res.produced[0][0][1], [1.0], "the previous x was not checked")


    def test_dynamic_output_tensors_keep_their_own_ranks(self):
        # what a host reads back of infer_meta's list: each tensor's shape at
        # its own rank, whatever the first tensor's rank is
        inst = self.instance("ElemRanks")
        for dtype, shape in (("float32", [3]), ("int8", [2, 5]), ("int64", [])):
            with self.subTest(dtype=dtype, shape=shape):
                res = self.ok(self.run_op(inst, dtype, shape), "ElemRanks %s%s" % (dtype, shape))
                want = [(self.code[dtype], s) for s in (shape, [2, 3], [], [1, 1, 1, 1])]
                self.assertEqual(res.inferred, [want])
                self.assertEqual([(t.dtype, list(t.shape[:t.ndim])) for t, _ in res.produced[0]],
                                 want)


if __name__ == "__main__":
    unittest.main()
