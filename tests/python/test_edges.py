"""The edges of the op-author API's rules, each side of each: a limit taken
AT it and refused one past it, both arms of a compound check, every entry
of a rule with several, the non-default settings, and which parameter,
attribute, input or output an error names (issue 31: a line coverage pass
over bridge/python/pyop, each unexecuted error path and untaken arm given
a test of what it does)."""

import json
import os
import re
import struct
import sys
import textwrap
import unittest
from typing import Optional

import support  # noqa: F401  (makes bridge/python importable)
import pyop
from pyop import DataType, Tensor, TensorDesc, launch
from pyop import _registry, _signature
from pyop._registry import collecting
from pyop._types import AttrType, IoKind


def proto(fn):
    return fn.__pyop_descriptor__


class NameLimitTest(unittest.TestCase):
    def test_names_at_and_past_the_limit(self):
        limit = _signature.MAX_NAME_LEN
        self.assertEqual(limit, 256)
        _signature.check_name("a" * limit, "input", "W")
        with self.assertRaisesRegex(ValueError, r"^W: output name 'a{257}' is not valid"):
            _signature.check_name("a" * (limit + 1), "output", "W")
        self.assertIsNone(_signature.op_type_problem("A" * limit))
        self.assertIsNotNone(_signature.op_type_problem("A" * (limit + 1)))
        self.assertIsNone(_signature.op_type_problem("a.b:c-d_9"))
        self.assertIsNotNone(_signature.op_type_problem("9a"))
        for bad in (3, None, b"x"):
            with self.assertRaisesRegex(ValueError, r"attribute name %s is not valid"
                                        % re.escape(repr(bad))):
                _signature.check_name(bad, "attribute", "W")


class AttrValueTest(unittest.TestCase):
    """normalize_attr_value: each attribute type's checker, its refusals and
    the canonical value it returns."""

    def norm(self, at, v):
        return _signature.normalize_attr_value(at, v)

    def test_accepted_values_are_canonical(self):
        self.assertIs(type(self.norm(AttrType.FLOAT, 2)), float)
        self.assertEqual(self.norm(AttrType.DTYPE, "int8"), DataType.int8)
        self.assertIs(self.norm(AttrType.DTYPE, DataType.bool), DataType.bool)
        self.assertEqual(self.norm(AttrType.LIST_INT, (1, 2)), [1, 2])
        self.assertIs(type(self.norm(AttrType.LIST_INT, (1, 2))), list)
        self.assertEqual(self.norm(AttrType.LIST_DTYPE, ("float16", DataType.int32)),
                         [DataType.float16, DataType.int32])
        self.assertEqual(self.norm(AttrType.LIST_LIST_INT, ([1], (2, 3))), [[1], [2, 3]])
        self.assertEqual(self.norm(AttrType.STR, ""), "")
        self.assertIs(self.norm(AttrType.BOOL, False), False)
        self.assertEqual(self.norm(int(AttrType.INT), 5), 5)  # an int attr_type too

    def test_refusals_name_the_expected_type(self):
        cases = [(AttrType.DTYPE, 3, TypeError, "expected DataType, got int"),
                 (AttrType.DTYPE, "float33", ValueError, "float33"),
                 (AttrType.STR, 3, TypeError, "expected str, got int"),
                 (AttrType.STR, "a\0b", ValueError, "NUL"),
                 (AttrType.INT, True, TypeError, "expected int, got bool"),
                 (AttrType.INT, 1.0, TypeError, "expected int, got float"),
                 (AttrType.FLOAT, True, TypeError, "expected float, got bool"),
                 (AttrType.FLOAT, "1", TypeError, "expected float, got str"),
                 (AttrType.BOOL, 1, TypeError, "expected bool, got int"),
                 (AttrType.LIST_INT, 1, TypeError, "expected a list, got int"),
                 (AttrType.LIST_STR, "ab", TypeError, "expected a list, got str"),
                 (AttrType.LIST_BOOL, [True, 1], TypeError, "expected bool, got int"),
                 (AttrType.LIST_LIST_INT, [1], TypeError, "expected a list, got int"),
                 (AttrType.LIST_LIST_INT, [[1 << 63]], ValueError, "does not fit in int64"),
                 (AttrType.TENSOR, None, TypeError, "Tensor attribute cannot have a default")]
        for at, v, exc, text in cases:
            with self.subTest(at=at, v=v):
                with self.assertRaises(exc) as cm:
                    self.norm(at, v)
                self.assertIn(text, str(cm.exception))


class OutputsTest(unittest.TestCase):
    """register_op's outputs= against the return annotation."""

    def refuse(self, exc, pattern, outputs, ret):
        ns = {"TensorDesc": TensorDesc}
        exec("def f(x: TensorDesc) -> %s:\n    return x\n" % ret if ret else
             "def f(x: TensorDesc):\n    return x\n", ns)
        with self.assertRaisesRegex(exc, r"^op 'O' \(.*\): " + pattern):
            pyop.register_op(op_type="O", outputs=outputs)(ns["f"])

    def test_refusals(self):
        self.refuse(TypeError, r"outputs= must be a tuple of names", "y", "TensorDesc")
        self.refuse(TypeError, r"outputs= must be a tuple of names", ("a", 1),
                    "tuple[TensorDesc, TensorDesc]")
        self.refuse(TypeError, r"outputs=\('a', 'b'\) names 2 outputs but the return "
                    r"annotation declares 1", ("a", "b"), "TensorDesc")
        self.refuse(TypeError, r"outputs=\('a',\) names 1 output but the return "
                    r"annotation declares 0", ("a",), "None")
        self.refuse(ValueError, r"duplicate output names \('a', 'a'\)", ("a", "a"),
                    "tuple[TensorDesc, TensorDesc]")
        self.refuse(ValueError, r"output name 'b c' is not valid", ("a", "b c"),
                    "tuple[TensorDesc, ...]")
        self.refuse(TypeError, r"missing return annotation", None, None)
        self.refuse(TypeError, r"tuple\[TensorDesc, \.\.\.\] needs outputs=", None,
                    "tuple[TensorDesc, ...]")
        self.refuse(TypeError, r"return annotation .*expected None, TensorDesc", None,
                    "tuple[()]")
        self.refuse(TypeError, r"return annotation .*expected None, TensorDesc", None, "int")
        # A tuple is refused when any element (first, last) is no output.
        self.refuse(TypeError, r"return annotation .*expected None, TensorDesc", None,
                    "tuple[TensorDesc, int]")
        self.refuse(TypeError, r"return annotation .*expected None, TensorDesc", None,
                    "tuple[int, TensorDesc]")

    def test_outputs_without_return_annotation(self):
        """outputs= alone: that many single outputs (and for tuple[T, ...])."""
        def f(x: TensorDesc):
            return x
        p = proto(pyop.register_op(op_type="O2", outputs=["a", "b"])(f))
        self.assertEqual(p.outputs, ("a", "b"))
        self.assertIsNone(p.output_kinds)

        def g(x: TensorDesc) -> tuple[TensorDesc, list[TensorDesc]]:
            return x, [x]
        p = proto(pyop.register_op(op_type="O3")(g))
        self.assertEqual(p.outputs, ("y0", "y1"))
        self.assertEqual(p.output_kinds, (IoKind.REQUIRED, IoKind.DYNAMIC))

    def test_parse_prototype_without_kinds(self):
        def f(x: TensorDesc, *, k: int = 1) -> list[TensorDesc]:
            return [x]
        self.assertEqual(_signature.parse_prototype(f, "P"),
                         ((("x", IoKind.REQUIRED),), ("y",), (("k", AttrType.INT, False, 1),)))
        self.assertEqual(len(_signature.parse_prototype(f, "P", with_kinds=True)), 4)
        self.assertEqual(_signature.parse_prototype(f, "P", with_kinds=True)[3],
                         (IoKind.DYNAMIC,))

    def test_unreadable_signature(self):
        with self.assertRaisesRegex(TypeError, r"^op 'S': cannot read the signature"):
            _signature.parse_prototype(min, "S")


class MutatesAliasTest(unittest.TestCase):
    def test_a_dynamic_output_cannot_alias_a_single_input(self):
        with self.assertRaisesRegex(TypeError, r"output 'x' aliases mutated input 'x': both "
                                    r"must be single tensors"):
            @pyop.register_op(op_type="A1", mutates_args=("x",), outputs=("x",))
            def f(x: TensorDesc) -> list[TensorDesc]:
                return [x]

    def test_an_optional_input_cannot_be_aliased(self):
        with self.assertRaisesRegex(TypeError, r"output 'x' aliases mutated input 'x'"):
            @pyop.register_op(op_type="A2", mutates_args=("x",), outputs=("x",))
            def f(x: Optional[TensorDesc]) -> TensorDesc:
                return x

    def test_an_output_named_like_an_unmutated_input_is_no_alias(self):
        @pyop.register_op(op_type="A3", mutates_args=("x",), outputs=("y", "x"))
        def f(x: TensorDesc, y: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
            return y, x
        self.assertEqual(proto(f).output_alias, (-1, 0))
        self.assertEqual(proto(f).input_flags, (pyop._types.INPUT_MUTATED, 0))

        @pyop.register_op(op_type="A4", mutates_args=("x",), outputs=("y",))
        def g(x: TensorDesc, y: TensorDesc) -> TensorDesc:
            return y
        self.assertIsNone(proto(g).output_alias)

    def test_nothing_mutated(self):
        for m in ((), None):
            self.assertEqual(_signature.resolve_mutates(m, [("x", IoKind.REQUIRED)], ("x",),
                                                        (IoKind.REQUIRED,), "W"), (None, None))
        for bad in (3, {"x"}, b"x"):
            with self.assertRaisesRegex(TypeError, r"^W: mutates_args must be a tuple"):
                _signature.resolve_mutates(bad, [("x", IoKind.REQUIRED)], ("x",),
                                           (IoKind.REQUIRED,), "W")


class DtypesTest(unittest.TestCase):
    def test_an_output_named(self):
        @pyop.register_op(op_type="D1", dtypes={"z": ("int32", DataType.int64)},
                          outputs=("z",))
        def f(x: TensorDesc) -> TensorDesc:
            return x
        mask = (1 << int(DataType.int32)) | (1 << int(DataType.int64))
        self.assertIsNone(proto(f).input_dtypes)
        self.assertEqual(proto(f).output_dtypes, ((mask, ""),))

    def test_a_name_both_input_and_output_names_the_input(self):
        @pyop.register_op(op_type="D2", dtypes={"y": frozenset(["bool"])})
        def f(y: TensorDesc) -> TensorDesc:
            return y
        self.assertEqual(proto(f).input_dtypes, ((1 << int(DataType.bool), ""),))
        self.assertIsNone(proto(f).output_dtypes)

    def test_empty_and_refused(self):
        self.assertEqual(_signature.resolve_dtypes({}, [("x", 0)], ("y",), "W"), (None, None))
        with self.assertRaisesRegex(ValueError, r"^W: dtypes: 1 is not an input or output"):
            _signature.resolve_dtypes({1: "int8"}, [("x", 0)], ("y",), "W")
        self.assertEqual(_signature.dtype_mask({DataType.int8}, "W"), 1 << int(DataType.int8))
        with self.assertRaisesRegex(TypeError, r"^W: expected a DataType"):
            _signature.dtype_mask(3, "W")
        with self.assertRaisesRegex(ValueError, r"^W: "):
            _signature.dtype_mask(["int8", "nope"], "W")


class ImplMethodTest(unittest.TestCase):
    """check_impl_method against a prototype (inputs, outputs, attributes),
    each refusal naming the parameter."""

    def check(self, cls, name, inputs=("x", "y"), n_outputs=1, attrs=("k",)):
        _signature.check_impl_method(cls, name, "M", "f.py:1",
                                     None if inputs is None else list(inputs), n_outputs,
                                     None if attrs is None else list(attrs))

    def refuse(self, pattern, cls, name, **kw):
        with self.assertRaisesRegex(TypeError, r"^op 'M': %s\(\) at \S+:\d+: %s"
                                    % (name, pattern)):
            self.check(cls, name, **kw)

    def test_accepted(self):
        class C:
            def execute(self, x, y, *, k):
                pass

            def compile(self, x, y, out, *, k):
                pass

            def declare_launch_args(self, x, y, out, **kw):
                pass

        for m in ("execute", "compile", "declare_launch_args"):
            self.check(C, m)

        class D:
            @staticmethod
            def execute(x, y, *, k):
                pass

            def compile(self, *args, k):
                pass

        self.check(D, "execute")
        self.check(D, "compile")
        self.check(D, "compile", n_outputs=3)

    def test_counts_order_and_names(self):
        class C:
            def compile(self, x, y, *, k):
                pass

            def execute(self, y, x, *, k):
                pass

        self.refuse(r"expected 3 positional parameters \(inputs \['x', 'y'\], then 1 "
                    r"output\(s\)\), got 2", C, "compile")
        self.check(C, "compile", n_outputs=0)
        self.refuse(r"parameter 'y': positional parameter 0 must be input 'x'", C, "execute")

        class E:
            def execute(self, x):
                pass

        self.refuse(r"parameter 'y': input missing", E, "execute")
        self.refuse(r"parameter 'x': not an input of the prototype", E, "execute", inputs=())
        self.check(E, "execute", inputs=("x",), attrs=())

    def test_attributes(self):
        class C:
            def execute(self, x, y, *, k, j):
                pass

        self.refuse(r"parameter 'j': not an attribute of the prototype", C, "execute")

        class D:
            def execute(self, x, y):
                pass

        self.refuse(r"parameter 'k': attribute missing", D, "execute")
        self.check(D, "execute", attrs=())
        self.check(D, "execute", attrs=None)

    def test_input_defaults(self):
        class C:
            def execute(self, x, y=None, *, k):
                pass

            def compile(self, x, y=0, out=None, *, k):
                pass

        self.check(C, "execute")
        self.refuse(r"parameter 'y': inputs take no default", C, "compile")
        self.refuse(r"parameter 'y': inputs take no default", C, "compile", inputs=None)

    def test_not_a_method(self):
        class C:
            execute = 3

            def compile(*, k):
                pass

            @classmethod
            def declare_launch_args(cls, x, y, out, *, k):
                pass

        with self.assertRaisesRegex(TypeError, r"^op 'M': execute\(\) of class at f.py:1: "
                                    r"execute is not a method"):
            self.check(C, "execute")
        with self.assertRaisesRegex(TypeError, r"^op 'M': compile\(\) of class at f.py:1: the first "
                                    r"parameter must be self"):
            self.check(C, "compile")
        self.check(C, "declare_launch_args")

    def test_check_attrs_of_a_foreign_prototype(self):
        with collecting() as c:
            @pyop.register_op_impl(op_type="M")
            class C:
                def execute(self, x, *, k):
                    pass

        impl = c.impls["M"]
        impl.check_attrs(["k"])
        with self.assertRaisesRegex(TypeError, r"parameter 'j': attribute missing"):
            impl.check_attrs(["k", "j"])
        with self.assertRaisesRegex(TypeError, r"parameter 'k': not an attribute"):
            impl.check_attrs([])

    def test_input_kinds_from_execute(self):
        class C:
            def execute(self, a: Optional[TensorDesc], b: "list[TensorDesc]",
                        c: "NoSuchName", d: int, e):  # noqa: F821
                pass

        self.assertEqual(_signature.impl_input_kinds(C, ("compile", "execute")),
                         (IoKind.OPTIONAL, IoKind.DYNAMIC, IoKind.REQUIRED, IoKind.REQUIRED,
                          IoKind.REQUIRED))
        self.assertIsNone(_signature.impl_input_kinds(C, ("compile",)))


class DecoratorTargetTest(unittest.TestCase):
    def test_what_each_decorator_takes(self):
        class K:
            pass

        for bad in (3, K):
            with self.assertRaisesRegex(TypeError, r"register_op\('T'\) decorates a function"):
                pyop.register_op(op_type="T")(bad)
        with self.assertRaisesRegex(TypeError, r"register_samples\('T'\) decorates a function"):
            pyop.register_samples(op_type="T")(3)
        with self.assertRaisesRegex(TypeError, r"register_op_impl\('T'\) decorates a class"):
            pyop.register_op_impl(op_type="T")(lambda: 0)
        with self.assertRaisesRegex(TypeError, r"class K defines none of execute"):
            pyop.register_op_impl(op_type="T")(K)

    def test_op_type_checks(self):
        for bad in ("", None, 3):
            with self.assertRaisesRegex(TypeError, r"register_samples\(op_type=%s\) at \S+"
                                        r"test_edges.py:\d+: op_type must be a non-empty str"
                                        % re.escape(repr(bad))):
                pyop.register_samples(op_type=bad)
        with self.assertRaisesRegex(ValueError, r"register_op_impl\(op_type='A b'\) at \S+: "
                                    r"not a valid op type"):
            pyop.register_op_impl(op_type="A b")
        pyop.register_op_impl(op_type="A" * _signature.MAX_NAME_LEN)
        with self.assertRaises(ValueError):
            pyop.register_op_impl(op_type="A" * (_signature.MAX_NAME_LEN + 1))

    def test_samples_kept_by_the_load_only(self):
        def s():
            return []

        with collecting() as c:
            self.assertIs(pyop.register_samples(op_type="S1")(s), s)
        self.assertEqual(list(c.samples), ["S1"])
        self.assertIs(c.samples["S1"][0], s)
        self.assertRegex(c.samples["S1"][1], r"test_edges.py:\d+$")
        # The place `pyop check` names for the samples: the function's own
        # first line (bridge.df.registry.samples_line_lost).
        self.assertEqual(c.samples["S1"][1], "%s:%d" % (s.__code__.co_filename,
                                                        s.__code__.co_firstlineno))
        self.assertEqual(s.__pyop_samples__, "S1")

        def t():
            return []
        pyop.register_samples(op_type="S2")(t)  # outside a load: marked, not kept
        self.assertEqual(t.__pyop_samples__, "S2")
        self.assertEqual(list(c.samples), ["S1"])

    def test_reference_tolerances(self):
        for bad in (-1, float("nan"), float("inf"), "0", True):
            with self.assertRaisesRegex(TypeError, r"register_reference\('R'\): atol is a "
                                        r"finite number >= 0, got"):
                pyop.register_reference(op_type="R", atol=bad)
        f = pyop.register_reference(op_type="R", rtol=0, atol=2)(lambda: 0)
        self.assertEqual(f.__pyop_tolerance__, (0.0, 2.0))
        self.assertIs(type(f.__pyop_tolerance__[1]), float)
        f = pyop.register_reference(op_type="R")(lambda: 0)
        self.assertEqual(f.__pyop_tolerance__, (1e-5, 1e-8))

    def test_impl_determinism_and_caps(self):
        with collecting() as c:
            @pyop.register_op_impl(op_type="C1")
            class A:
                def compile(self, x, y):
                    pass

                def declare_launch_args(self, x, y):
                    pass

        self.assertIs(A.__pyop_deterministic__, True)
        d = c.impls["C1"]
        self.assertEqual(d.methods, ("compile", "declare_launch_args"))
        self.assertEqual(d.caps, _registry.CAP_COMPILE | _registry.CAP_LAUNCH_ARGS
                         if hasattr(_registry, "CAP_LAUNCH_ARGS") else d.caps)
        self.assertFalse(d.caps & _registry.CAP_EXECUTE)
        self.assertEqual(repr(d), "<OpImpl C1 at %s>" % d.where)
        self.assertTrue(d.where.endswith(":%d" % d.line))


class LaunchScalarTest(unittest.TestCase):
    """launch.scalar at each integer type's two limits (taken) and one past
    each (refused), float32 at its largest finite value."""

    def test_every_integer_range(self):
        ranges = {"int8": (-128, 127), "int16": (-(1 << 15), (1 << 15) - 1),
                  "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
                  "uint8": (0, 255), "uint16": (0, (1 << 16) - 1), "uint32": (0, (1 << 32) - 1),
                  "uint64": (0, (1 << 64) - 1), "pointer": (0, (1 << 64) - 1)}
        for name, (lo, hi) in ranges.items():
            with self.subTest(name=name):
                st = launch.SCALAR_TYPES[name]
                for v in (lo, hi):
                    a = launch.scalar(name, v)
                    self.assertEqual((a.kind, a.scalar_type, a.value), (launch.SCALAR, st, v))
                for v in (lo - 1, hi + 1):
                    with self.assertRaisesRegex(OverflowError, r"scalar %s value %d is out of "
                                                r"range \[%d, %d\]" % (name, v, lo, hi)):
                        launch.scalar(name, v)
                with self.assertRaisesRegex(TypeError, r"scalar %s needs an int, got 1\.0"
                                            % name):
                    launch.scalar(name, 1.0)

    def test_float_types(self):
        fmax = struct.unpack("<f", struct.pack("<I", 0x7f7fffff))[0]
        self.assertEqual(launch.scalar("float32", fmax).value, fmax)
        self.assertEqual(launch.scalar("float32", -fmax).value, -fmax)
        past = fmax * (1 + 2 ** -20)
        for v in (past, -past):
            with self.assertRaisesRegex(OverflowError, r"scalar float32 value"):
                launch.scalar("float32", v)
        self.assertEqual(launch.scalar("float64", past).value, past)  # float64 is not limited
        nan = launch.scalar("float32", float("nan")).value
        self.assertNotEqual(nan, nan)
        self.assertEqual(launch.scalar("float32", -float("inf")).value, -float("inf"))
        a = launch.scalar(DataType.float64, 2)
        self.assertEqual((a.scalar_type, a.value), (launch.SCALAR_TYPES["float64"], 2.0))
        self.assertIs(type(a.value), float)
        for name in ("float32", "float64"):
            with self.assertRaisesRegex(TypeError, r"scalar %s needs a number, got '1'" % name):
                launch.scalar(name, "1")

    def test_names_and_stream(self):
        with self.assertRaisesRegex(ValueError, r"unknown scalar type 'int128'"):
            launch.scalar("int128", 1)
        self.assertEqual(launch.scalar(DataType.int16, -5).scalar_type,
                         launch.SCALAR_TYPES["int16"])
        s = launch.stream()
        self.assertEqual((s.kind, s.index, s.scalar_type, s.value), (launch.STREAM, 0, 0, 0))
        self.assertEqual(repr(launch.output(3)),
                         "LaunchArg(kind=%d, index=3, scalar_type=0, value=0)" % launch.OUTPUT)


class TensorDescTest(unittest.TestCase):
    def test_rank_and_dimensions_at_their_limits(self):
        from pyop._types import MAX_DIMS
        self.assertEqual(MAX_DIMS, 8)
        self.assertEqual(TensorDesc((1,) * MAX_DIMS, "int8").ndim, MAX_DIMS)
        with self.assertRaisesRegex(ValueError, r"9 dimensions, at most 8"):
            TensorDesc((1,) * (MAX_DIMS + 1), "int8")
        self.assertEqual(TensorDesc((), "int8").shape, ())
        self.assertEqual(TensorDesc([0, -1], "int8").shape, (0, -1))
        for bad in (-2, True, 1.0, "1"):
            with self.assertRaisesRegex(ValueError, r"dimensions must be ints >= -1"):
                TensorDesc((2, bad), "int8")
        with self.assertRaisesRegex(ValueError, r"unknown data type 'f32'"):
            TensorDesc((1,), "f32")
        with self.assertRaises(ValueError):
            TensorDesc((1,), "int8", 99)

    def test_equality_hash_and_repr(self):
        from pyop._types import Format
        a = TensorDesc((2, 3), "float16", Format.NCHW)
        b = TensorDesc([2, 3], DataType.float16, 1)
        self.assertEqual(a, b)
        self.assertEqual(hash(a), hash(b))
        self.assertEqual(len({a, b}), 1)
        self.assertNotEqual(a, TensorDesc((2, 3), "float32", Format.NCHW))
        self.assertNotEqual(a, TensorDesc((3, 2), "float16", Format.NCHW))
        self.assertNotEqual(a, ((2, 3), DataType.float16, Format.NCHW))
        self.assertIs(a.__eq__(3), NotImplemented)
        self.assertEqual(repr(a), "TensorDesc(shape=(2, 3), dtype=DataType.float16, "
                                  "format=Format.NCHW)")
        self.assertEqual(repr(TensorDesc((1,), "bool")), "TensorDesc(shape=(1,), "
                                                          "dtype=DataType.bool)")
        self.assertEqual(str(Format.FRACTAL_NZ), "FRACTAL_NZ")

    def test_every_itemsize(self):
        sizes = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int8": 1,
                 "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4,
                 "uint64": 8, "bool": 1}
        self.assertEqual({d.name: d.itemsize for d in DataType}, sizes)


class ElementsEdgeTest(unittest.TestCase):
    def test_what_elements_wraps(self):
        from pyop import Elements
        flat = memoryview(bytearray(8)).cast("H")
        Elements(flat, DataType.bfloat16)
        Elements(flat, int(DataType.bfloat16))
        for bad in (bytearray(8), flat.cast("B").cast("H", (2, 2)), flat.cast("B")):
            with self.assertRaisesRegex(TypeError, r"wraps a flat memoryview of format 'H'"):
                Elements(bad, DataType.bfloat16)
        with self.assertRaisesRegex(TypeError, r"converts .*bfloat16.*memoryview for int16"):
            Elements(flat, DataType.int16)

    def test_read_only_slices_and_repr(self):
        from pyop import Elements
        ro = Elements(memoryview(bytes(4)).cast("H"), DataType.bfloat16)
        rw = Elements(memoryview(bytearray(4)).cast("H"), DataType.bfloat16)
        with self.assertRaisesRegex(TypeError, r"read-only"):
            ro[0:2] = rw[0:2]
        rw[0] = 1.0
        ro_copy = Elements(memoryview(bytes(4)).cast("H"), DataType.bfloat16)
        rw[0:2] = ro_copy[0:2]  # read from a read-only view: allowed
        self.assertEqual(rw.tolist(), [0.0, 0.0])
        self.assertEqual(repr(ro), "<pyop.Elements bfloat16[2] read-only>")
        self.assertEqual(repr(rw), "<pyop.Elements bfloat16[2]>")
        self.assertEqual(repr(rw[1:]), "<pyop.Elements bfloat16[1]>")


class ErrorsEdgeTest(unittest.TestCase):
    def test_an_exception_whose_str_fails_keeps_its_type(self):
        from pyop import _errors

        class Loud(Exception):
            def __str__(self):
                raise KeyError("k")

        class Worse(Exception):
            def __str__(self):
                raise Loud()

        self.assertEqual(_errors.format_exception(Loud()).split("\n")[0],
                         "Loud: <exception str() failed: KeyError: 'k'>")
        self.assertEqual(_errors.format_exception(Worse()).split("\n")[0],
                         "Worse: <exception str() failed: Loud>")
        origin = _errors.last_origin()
        self.assertEqual(origin[0][:2], ("Worse", "Exception"))
        self.assertEqual(origin[1:], (None, None, "Worse: <exception str() failed: Loud>"))
        self.assertIsNone(_errors.last_origin())

    @unittest.skipIf(sys.version_info < (3, 11), "ExceptionGroup is new in 3.11")
    def test_exception_group_members_are_trimmed(self):
        from pyop import _errors

        def raise_in_pyop():
            # a frame of pyop's own: compiled with a file name in its directory
            ns = {}
            exec(compile("def f():\n    raise ValueError('inner')\n",
                         os.path.join(_errors._PACKAGE_DIR, "_fake.py"), "exec"), ns)
            ns["f"]()

        try:
            try:
                raise_in_pyop()
            except ValueError as e:
                raise ExceptionGroup("many", [e, KeyError("other")])  # noqa: F821
        except Exception as g:
            text = _errors.format_exception(g)
        self.assertIn("ValueError: inner", text)
        self.assertIn("raise_in_pyop", text)
        self.assertNotIn("_fake.py", text)

    @unittest.skipIf(sys.version_info < (3, 11), "ExceptionGroup is new in 3.11")
    def test_every_group_member_is_trimmed(self):
        """The members of an ExceptionGroup after the first have pyop's
        frames trimmed too: here the first raised in the plugin alone and the
        second and third through a frame of pyop's (lifetime pass, session
        15: bridge.lp._errors.group_first_sub_only)."""
        from pyop import _errors
        ns = {}
        exec(compile("def f(what):\n    raise ValueError(what)\n",
                     os.path.join(_errors._PACKAGE_DIR, "_fake.py"), "exec"), ns)

        def raise_in_pyop(what):
            ns["f"](what)

        members = [KeyError("plain")]
        for what in ("second", "third"):
            try:
                raise_in_pyop(what)
            except ValueError as e:
                members.append(e)
        try:
            raise ExceptionGroup("many", members)  # noqa: F821
        except Exception as g:
            text = _errors.format_exception(g)
        for what in ("KeyError: 'plain'", "ValueError: second", "ValueError: third"):
            self.assertIn(what, text)
        self.assertEqual(text.count(", in raise_in_pyop"), 2)
        self.assertNotIn("_fake.py", text)

    def test_plural(self):
        from pyop._errors import plural
        self.assertEqual([plural(n, "output") for n in (0, 1, 2)],
                         ["0 outputs", "1 output", "2 outputs"])
        self.assertEqual(plural(2, "index", "indices"), "2 indices")
        self.assertEqual(plural(1, "index", "indices"), "1 index")


def _run_with_bogus_extension(test, code):
    """Runs code in a child Python with the package importable and the path
    of a file named not_ext.so that is no ELF file as argv[1]: what it
    printed, as JSON (test fails when the child did)."""
    import subprocess
    with support.TempDir() as d:
        bogus = support.write(d, "not_ext.so", "not an ELF file\n")
        env = dict(os.environ, PYTHONPATH=support.PACKAGE_DIR)
        p = subprocess.run([sys.executable, "-B", "-c", code, bogus], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
    test.assertEqual(p.returncode, 0, p.stderr)
    return json.loads(p.stdout)


class LanesTest(unittest.TestCase):
    """pyop._lanes in a child interpreter (install() wraps _imp's makers
    for good): a refused extension module is recorded and still raised,
    take() empties the record, note() adds to it once installed; each make
    runs between the gate's enter and leave (those of the last install;
    none once _imp._pyop_gate is None, as a dropped image leaves it)."""

    def test_refusals_recorded(self):
        code = textwrap.dedent("""
            import importlib.machinery, importlib.util, json, sys
            from pyop import _lanes
            _lanes.note("early", "before install")
            out = {"before": _lanes.take()}
            gate = []
            r = _lanes.install(lambda: gate.append("old enter"), lambda: gate.append("old leave"))
            out["same"] = _lanes.install(lambda: gate.append("enter"),
                                         lambda: gate.append("leave")) is r
            path = sys.argv[1]
            spec = importlib.util.spec_from_file_location(
                "not_ext", path, loader=importlib.machinery.ExtensionFileLoader("not_ext", path))
            try:
                importlib.util.module_from_spec(spec)
                out["raised"] = False
            except ImportError:
                out["raised"] = True
            out["gate"] = list(gate)
            _lanes.note("asyncio", "ImportError: no")
            out["took"] = _lanes.take()
            out["again"] = _lanes.take()
            import _imp
            _imp._pyop_gate = None
            try:
                importlib.util.module_from_spec(spec)
            except ImportError:
                pass
            out["gate_after_drop"] = gate[len(out["gate"]):]
            # Dropped while a make runs: the gate taken is not given back.
            def enter_then_dropped():
                gate.append("enter2")
                _imp._pyop_gate = None
            _imp._pyop_gate = (enter_then_dropped, lambda: gate.append("leave2"))
            try:
                importlib.util.module_from_spec(spec)
            except ImportError:
                pass
            out["gate_dropped_midway"] = gate[len(out["gate"]):]
            _lanes.take()
            print(json.dumps(out))
        """)
        out = _run_with_bogus_extension(self, code)
        self.assertEqual(out["before"], [])
        self.assertTrue(out["same"])
        self.assertTrue(out["raised"])
        self.assertEqual(out["gate"], ["enter", "leave"])
        self.assertEqual(out["gate_after_drop"], [])
        self.assertEqual(out["gate_dropped_midway"], ["enter2"])
        self.assertEqual(len(out["took"]), 2, out["took"])
        self.assertEqual(out["took"][0][0], "not_ext")
        self.assertTrue(out["took"][0][1].startswith("ImportError: "), out["took"])
        self.assertEqual(out["took"][1], ["asyncio", "ImportError: no"])
        self.assertEqual(out["again"], [])


class LanesGateMainTest(unittest.TestCase):
    """pyop._lanes.gate_main in a child interpreter (the main interpreter's
    wrappers, for good): each make between the gate's enter and leave,
    nothing recorded, a second gate_main wraps nothing twice (its own pair
    used), None as the gate: the wrappers only make."""

    def test_gate_main(self):
        code = textwrap.dedent("""
            import _imp, importlib.machinery, importlib.util, json, sys
            from pyop import _lanes
            gate = []
            _lanes.gate_main(lambda: gate.append("a+"), lambda: gate.append("a-"))
            _lanes.gate_main(lambda: gate.append("b+"), lambda: gate.append("b-"))
            path = sys.argv[1]
            spec = importlib.util.spec_from_file_location(
                "not_ext", path, loader=importlib.machinery.ExtensionFileLoader("not_ext", path))
            def make():
                try:
                    importlib.util.module_from_spec(spec)
                    return "made"
                except ImportError as e:
                    return type(e).__name__
            out = {"made": make(), "gate": list(gate), "took": _lanes.take()}
            _imp._pyop_gate = None
            out["made_ungated"] = make()
            out["gate_ungated"] = gate[len(out["gate"]):]
            print(json.dumps(out))
        """)
        out = _run_with_bogus_extension(self, code)
        self.assertEqual(out["made"], "ImportError")
        self.assertEqual(out["gate"], ["b+", "b-"])
        self.assertEqual(out["took"], [])
        self.assertEqual(out["made_ungated"], "ImportError")
        self.assertEqual(out["gate_ungated"], [])


class GeLinkEdgeTest(unittest.TestCase):
    """pyop._ge_link in a child interpreter (it edits sys.modules,
    sys.meta_path and sys.path): what it logs through the bridge's log (a
    stand-in here) and at which level, another ge installed on sys.path
    (a package, a namespace package, libpyop's own is none), the package
    missing, and uninstall taking only what install put there."""

    CHILD = textwrap.dedent("""
        import json, os, sys, types
        from pyop import _ge_link as gl
        logs = []
        sys.modules["pyop._native"] = types.SimpleNamespace(
            log=lambda level, msg: logs.append([level, msg]))
        site_pkg, site_ns, nowhere = sys.argv[1:4]
        out = {"own": gl.shadowed()}
        sys.path.insert(0, site_pkg)
        out["pkg"] = gl.shadowed()
        gl.install()
        from ge import _npu
        out["finder"] = _npu.AclFinder in sys.meta_path
        out["installed_logs"] = logs[:]
        del logs[:]
        removed = gl.uninstall()
        out["removed_ge"] = any(getattr(m, "__name__", "") == "ge" for m in removed)
        out["finder_after"] = _npu.AclFinder in sys.meta_path
        out["status_after"] = list(gl.status())
        saved = sys.path[1:]
        own = os.path.realpath(os.path.dirname(gl.GE_DIR))
        sys.path[:] = [site_ns] + [p for p in saved if os.path.realpath(p or ".") != own]
        out["ns"] = gl.shadowed()  # a namespace package: its directory
        sys.path[:] = saved
        gl.install()
        out["quiet_logs"] = logs[:]
        sys.modules["ge"] = types.ModuleType("ge")  # replaced behind its back
        out["uninstall_other"] = gl.uninstall()
        out["still_other"] = not getattr(sys.modules["ge"], "__pyop_ge__", False)
        del sys.modules["ge"]
        for n in [n for n in sys.modules if n.startswith("ge.")]:
            del sys.modules[n]
        gl.GE_DIR = nowhere
        gl.install()
        out["missing"] = list(gl.status())
        out["missing_logs"] = logs[len(out["quiet_logs"]):]
        print(json.dumps(out))
    """)

    def test_logs_shadows_and_uninstall(self):
        import subprocess
        with support.TempDir() as d:
            d = os.path.realpath(d)
            pkg_init = support.write(d, "site_pkg/ge/__init__.py", "")
            os.makedirs(os.path.join(d, "site_ns", "ge"))
            nowhere = os.path.join(d, "nowhere")
            env = dict(os.environ, PYTHONPATH=support.PACKAGE_DIR)
            p = subprocess.run([sys.executable, "-B", "-c", self.CHILD,
                                os.path.join(d, "site_pkg"), os.path.join(d, "site_ns"),
                                nowhere], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = json.loads(p.stdout)
            self.assertIsNone(out["own"])  # libpyop's own ge shadows nothing
            self.assertEqual(out["pkg"], pkg_init)
            self.assertEqual(out["ns"], os.path.join(d, "site_ns", "ge"))
        self.assertTrue(out["finder"])
        self.assertEqual(len(out["installed_logs"]), 1, out["installed_logs"])
        level, msg = out["installed_logs"][0]
        self.assertEqual(level, 2)  # info: a note, not a warning
        self.assertIn("also installed at %s" % pkg_init, msg)
        self.assertTrue(out["removed_ge"])
        self.assertFalse(out["finder_after"])
        self.assertEqual(out["status_after"], ["not installed", ""])
        self.assertEqual(out["quiet_logs"], [])
        self.assertEqual(out["uninstall_other"], [])
        self.assertTrue(out["still_other"])
        self.assertEqual(out["missing"], ["missing", nowhere])
        self.assertEqual(len(out["missing_logs"]), 1, out["missing_logs"])
        self.assertEqual(out["missing_logs"][0][0], 1)  # a warning
        self.assertIn("%s is missing" % nowhere, out["missing_logs"][0][1])

    def test_uninstall_keeps_other_modules_named_ge_something(self):
        """uninstall removes ge and ge.* only: a module whose name merely
        starts with "ge" (the stdlib's gettext and genericpath, a host's
        geometry or ge_tools) stays."""
        import subprocess
        code = textwrap.dedent("""
            import gettext, genericpath, json, sys, types
            from pyop import _ge_link as gl
            for n in ("geometry", "ge_tools"):
                sys.modules[n] = types.ModuleType(n)
            others = ("gettext", "genericpath", "geometry", "ge_tools")
            before = {n: sys.modules[n] for n in others}
            gl.install()
            import ge.custom_op
            removed = sorted(m.__name__ for m in gl.uninstall())
            print(json.dumps({
                "removed": removed,
                "kept": [n for n in others if sys.modules.get(n) is before[n]],
                "ge_left": sorted(n for n in sys.modules if n == "ge" or n.startswith("ge."))}))
        """)
        env = dict(os.environ, PYTHONPATH=support.PACKAGE_DIR)
        p = subprocess.run([sys.executable, "-B", "-c", code], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual(out["kept"], ["gettext", "genericpath", "geometry", "ge_tools"])
        self.assertEqual(out["ge_left"], [])
        self.assertIn("ge", out["removed"])
        self.assertIn("ge.custom_op", out["removed"])
        self.assertEqual([n for n in out["removed"] if n != "ge" and not n.startswith("ge.")],
                         [])


class ContextGettersTest(unittest.TestCase):
    def test_each_getter_asks_for_its_kind(self):
        """The callback kind each getter asks the bridge for (a stand-in
        _native answering the kind it was asked), and its name in the
        refusal without a bridge."""
        import types
        for fn, name in ((pyop.get_execute_ctx, "get_execute_ctx"),
                         (pyop.get_compile_ctx, "get_compile_ctx"),
                         (pyop.get_declare_launch_args_ctx, "get_declare_launch_args_ctx")):
            with self.assertRaisesRegex(RuntimeError, r"^%s\(\): no bridge is loaded" % name):
                fn()
        saved = pyop._native
        pyop._native = types.SimpleNamespace(current_ctx=lambda kind: kind)
        try:
            self.assertEqual((pyop.get_execute_ctx(), pyop.get_compile_ctx(),
                              pyop.get_declare_launch_args_ctx()), (1, 2, 3))
        finally:
            pyop._native = saved


class ClassLocationTest(unittest.TestCase):
    """Where an implementation class is said to be when the class
    statement cannot be found: its first method's line, else unknown."""

    def test_fallbacks(self):
        loc = _registry._class_location

        def execute(self):
            pass

        dyn = type("Dyn", (), {"__module__": __name__, "execute": execute})
        self.assertEqual(loc(dyn), (__file__, execute.__code__.co_firstlineno))
        ns = {}
        exec(compile("class K:\n    x = 1\n\n    def execute(self):\n        pass\n", "<made>",
                     "exec"), ns)
        self.assertEqual(loc(ns["K"]), ("<made>", 4))
        self.assertEqual(loc(type("Empty", (), {"__module__": "no_such_module"})),
                         ("<unknown>", 0))

        class Here:
            def execute(self):
                pass

        line = Here.execute.__code__.co_firstlineno - 1
        self.assertEqual(loc(Here), (__file__, line))


LOADER_OP = """
import pyop
from pyop import TensorDesc

@pyop.register_op(op_type=%r)
def f(x: TensorDesc) -> TensorDesc:
    return x
"""


class LoaderEdgeTest(unittest.TestCase):
    def tearDown(self):
        from pyop import _loader
        _loader.shutdown()

    def test_an_empty_directory_is_skipped_and_elements_count(self):
        from pyop import _loader
        with support.TempDir() as d:
            os.makedirs(os.path.join(d, "empty"))
            support.write(d, "full/a.py", LOADER_OP % "A")
            res = _loader.load_plugins([os.path.join(d, "empty"), os.path.join(d, "full")])
            try:
                self.assertEqual([(p.op_type, p.element) for p in res.protos], [("A", 1)])
            finally:
                _loader.unload_modules(res.modules)

    def test_a_missing_optional_import_is_an_import_error(self):
        from pyop import _loader
        with support.TempDir() as d:
            support.write(d, "plugin.py", "try:\n    import no_such_module_q\nexcept ImportError "
                          "as e:\n    MISSING = e.name\n" + LOADER_OP % "Opt")
            res = _loader.load_plugins([d])
            try:
                mod = sys.modules[res.protos[0].infer.__module__]
                self.assertEqual(mod.MISSING, "no_such_module_q")
            finally:
                _loader.unload_modules(res.modules)

    def test_a_sibling_submodules_own_missing_import_is_named(self):
        from pyop import _loader
        with support.TempDir() as d:
            support.write(d, "plugin.py", "import common.utils\n")
            support.write(d, "common/__init__.py", "")
            support.write(d, "common/utils.py", "import no_such_module_r\n")
            with self.assertRaises(ModuleNotFoundError) as cm:
                _loader.load_plugins([d])
            self.assertEqual(cm.exception.name, "no_such_module_r")


    def test_a_directorys_plugins_are_imported_in_name_order(self):
        """Whatever order the directory lists its entries in (os.listdir's
        is the file system's: reversed here so it surely differs), its
        plugins, files and packages alike, are imported sorted by name."""
        import types
        from unittest import mock
        from pyop import _loader
        names = ["a_first", "b_pkg", "c_mid", "d_last"]
        probe = sys.modules["_pyop_order_probe"] = types.ModuleType("_pyop_order_probe")
        probe.seen = []
        real_listdir = os.listdir
        try:
            with support.TempDir() as d:
                for n in names:
                    rel = n + "/__init__.py" if n.endswith("_pkg") else n + ".py"
                    support.write(d, rel, "import _pyop_order_probe\n"
                                  "_pyop_order_probe.seen.append(%r)\n" % n)

                def listdir(path="."):
                    got = real_listdir(path)
                    return sorted(got, reverse=True) if path == d else got

                self.assertNotEqual(listdir(d), sorted(listdir(d)))
                with mock.patch.object(_loader.os, "listdir", listdir):
                    res = _loader.load_plugins([d])
                _loader.unload_modules(res.modules)
        finally:
            del sys.modules["_pyop_order_probe"]
        self.assertEqual(probe.seen, names)


class AttrAnnotationEdgeTest(unittest.TestCase):
    def test_a_list_takes_one_item_type(self):
        for ann in ("list[int, int]", "list[list[int], int]", "list[list[int, int]]",
                    "list[list[float]]", "list"):
            ns = {"TensorDesc": TensorDesc}
            exec("def f(x: TensorDesc, *, a: %s = []) -> TensorDesc:\n    return x\n" % ann, ns)
            with self.subTest(ann=ann):
                with self.assertRaisesRegex(TypeError, r"parameter 'a': unsupported attribute "
                                            r"type"):
                    pyop.register_op(op_type="L")(ns["f"])

    def test_class_lines_of_a_missing_file(self):
        import types
        mod = types.ModuleType("pyop_test_gone")
        mod.__file__ = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gone_away.py")
        sys.modules[mod.__name__] = mod
        try:
            self.assertIsNone(_registry._class_lines(mod.__file__, mod))

            def execute(self):
                pass

            cls = type("Gone", (), {"__module__": mod.__name__, "execute": execute})
            self.assertEqual(_registry._class_location(cls),
                             (mod.__file__, execute.__code__.co_firstlineno))
        finally:
            del sys.modules[mod.__name__]


if __name__ == "__main__":
    unittest.main()
