import sys
import re
import unittest
from typing import List, Optional

import support
import pyop
from pyop import DataType, Tensor, TensorDesc
from pyop._registry import collecting
from pyop._types import AttrType, IoKind


def proto(fn):
    return fn.__pyop_descriptor__


class PrototypeTest(unittest.TestCase):
    def test_inputs_attrs_outputs(self):
        @pyop.register_op(op_type="P1")
        def f(a: TensorDesc, b: Optional[TensorDesc], c: list[TensorDesc], d: Tensor,
              e: "TensorDesc | None", g: List[TensorDesc], *, i: int, fl: float = 2,
              bo: bool = False, s: str = "x", dt: DataType = "int8",
              li: list[int] = (1, 2), lf: List[float] = [1], lb: list[bool] = [True],
              ls: list[str] = ["a"], ld: list[DataType] = ["float16"],
              lli: list[list[int]] = [[1], [2, 3]]) -> TensorDesc:
            return a

        p = proto(f)
        self.assertEqual(p.inputs, (("a", IoKind.REQUIRED), ("b", IoKind.OPTIONAL),
                                    ("c", IoKind.DYNAMIC), ("d", IoKind.REQUIRED),
                                    ("e", IoKind.OPTIONAL), ("g", IoKind.DYNAMIC)))
        self.assertEqual(p.outputs, ("y",))
        attrs = {a[0]: a[1:] for a in p.attrs}
        self.assertEqual(attrs["i"], (AttrType.INT, True, None))
        self.assertEqual(attrs["fl"], (AttrType.FLOAT, False, 2.0))
        self.assertIs(type(attrs["fl"][2]), float)
        self.assertEqual(attrs["dt"], (AttrType.DTYPE, False, DataType.int8))
        self.assertEqual(attrs["li"], (AttrType.LIST_INT, False, [1, 2]))
        self.assertEqual(attrs["lf"], (AttrType.LIST_FLOAT, False, [1.0]))
        self.assertEqual(attrs["ld"], (AttrType.LIST_DTYPE, False, [DataType.float16]))
        self.assertEqual(attrs["lli"], (AttrType.LIST_LIST_INT, False, [[1], [2, 3]]))
        self.assertEqual([a[0] for a in p.attrs],
                         ["i", "fl", "bo", "s", "dt", "li", "lf", "lb", "ls", "ld", "lli"])
        self.assertEqual(p.file, __file__)
        self.assertEqual(p.key, "pyop:test_signature.PrototypeTest.test_inputs_attrs_outputs."
                                "<locals>.f")

    def test_output_names(self):
        @pyop.register_op(op_type="Two")
        def two(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
            return x, x

        self.assertEqual(proto(two).outputs, ("y0", "y1"))

        @pyop.register_op(op_type="Named", outputs=("values", "indices"))
        def named(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
            return x, x

        self.assertEqual(proto(named).outputs, ("values", "indices"))

        @pyop.register_op(op_type="Var", outputs=("a", "b", "c"))
        def var(x: TensorDesc) -> tuple[TensorDesc, ...]:
            return x, x, x

        self.assertEqual(proto(var).outputs, ("a", "b", "c"))

    def test_string_annotations(self):
        ns = {}
        code = ("from __future__ import annotations\n"
                "import pyop\n"
                "from typing import Optional\n"
                "from pyop import TensorDesc, DataType\n"
                "@pyop.register_op(op_type='Str')\n"
                "def f(x: TensorDesc, y: Optional[TensorDesc], *, d: DataType = DataType.int8,\n"
                "      l: list[list[int]] = []) -> tuple[TensorDesc, TensorDesc]:\n"
                "    return x, x\n")
        exec(compile(code, "<strann>", "exec"), ns)
        p = proto(ns["f"])
        self.assertEqual(p.inputs, (("x", IoKind.REQUIRED), ("y", IoKind.OPTIONAL)))
        self.assertEqual([a[1] for a in p.attrs], [AttrType.DTYPE, AttrType.LIST_LIST_INT])
        self.assertEqual(p.outputs, ("y0", "y1"))

    def assertRejects(self, exc, pattern, fn, **kw):
        with self.assertRaisesRegex(exc, pattern):
            pyop.register_op(op_type="Bad", **kw)(fn)

    def test_errors_name_op_parameter_and_location(self):
        def f(x: TensorDesc, *, table: dict) -> TensorDesc:
            return x
        line = f.__code__.co_firstlineno
        self.assertRejects(TypeError, r"op 'Bad' \(.*test_signature.py:%d\): parameter 'table': "
                           r"unsupported attribute type" % line, f)

        def g(x: TensorDesc, alpha: float) -> TensorDesc:
            return x
        self.assertRejects(TypeError, r"parameter 'alpha'.*keyword-only", g)

        def h(x: TensorDesc, *, alpha) -> TensorDesc:
            return x
        self.assertRejects(TypeError, r"parameter 'alpha': attribute has no type annotation", h)

        def i(x: TensorDesc, *, n: int = 1.5) -> TensorDesc:
            return x
        self.assertRejects(TypeError, r"parameter 'n': default 1.5 does not match type int", i)

        def j(x: TensorDesc, *, b: bool = 1) -> TensorDesc:
            return x
        self.assertRejects(TypeError, r"parameter 'b': default", j)

        def k(x: TensorDesc):
            return x
        self.assertRejects(TypeError, r"missing return annotation", k)

        def m(x: TensorDesc) -> tuple[TensorDesc, ...]:
            return x
        self.assertRejects(TypeError, r"needs outputs=", m)

        def n(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
            return x
        self.assertRejects(TypeError, r"names 1 output but the return annotation declares 2", n,
                           outputs=("a",))

        def o(*xs: TensorDesc) -> TensorDesc:
            return xs[0]
        self.assertRejects(TypeError, r"\*args is not allowed", o)

        def p(x: TensorDesc, **kw) -> TensorDesc:
            return x
        self.assertRejects(TypeError, r"\*\*kwargs is not allowed", p)

        def q(x: TensorDesc, *, s: str = "a\0b") -> TensorDesc:
            return x
        self.assertRejects(ValueError, r"NUL", q)

        with self.assertRaises(TypeError):
            pyop.register_op(op_type="")
        with self.assertRaises(TypeError):
            pyop.register_op(op_type=3)

    def test_defaults_at_the_edges_of_their_types(self):
        # bool is an int to Python, not to an int or float attribute; int64's
        # bounds; a str is a sequence, not a list[str] (the mutation check:
        # none of these was tried).
        def a(x: TensorDesc, *, n: int = True) -> TensorDesc:
            return x
        self.assertRejects(TypeError, r"parameter 'n': default True does not match type int", a)

        def b(x: TensorDesc, *, f: float = False) -> TensorDesc:
            return x
        self.assertRejects(TypeError, r"parameter 'f': default False does not match type float",
                           b)

        def c(x: TensorDesc, *, n: int = 1 << 63) -> TensorDesc:
            return x
        self.assertRejects(ValueError, r"parameter 'n': default 9223372036854775808 does not "
                           r"match type int: .*does not fit in int64", c)

        def d(x: TensorDesc, *, n: int = -(1 << 63) - 1) -> TensorDesc:
            return x
        self.assertRejects(ValueError, r"does not fit in int64", d)

        def e(x: TensorDesc, *, names: list[str] = "ab") -> TensorDesc:
            return x
        self.assertRejects(TypeError, r"parameter 'names': default 'ab' does not match type "
                           r"list\[str\]: expected a list, got str", e)

        # Two outputs of one name (the C check would refuse it later, less
        # clearly).
        def dup(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
            return x, x
        self.assertRejects(ValueError, r"duplicate output names \('y', 'y'\)", dup,
                           outputs=("y", "y"))

        # An input's only default is None, and only for an optional one.
        def g(x: TensorDesc, b: Optional[TensorDesc] = 0) -> TensorDesc:
            return x
        self.assertRejects(TypeError, r"parameter 'b': an input cannot have a default", g)

        def h(x: TensorDesc = None) -> TensorDesc:
            return x
        self.assertRejects(TypeError, r"parameter 'x': an input cannot have a default", h)

        @pyop.register_op(op_type="Edges")
        def ok(x: TensorDesc, y: Optional[TensorDesc] = None, *, lo: int = -(1 << 63), hi: int = (1 << 63) - 1,
               f: float = 2, names: list[str] = ("a", "b")) -> TensorDesc:
            return x
        attrs = {a[0]: a for a in proto(ok).attrs}
        self.assertEqual(attrs["lo"][3], -(1 << 63))
        self.assertEqual(attrs["hi"][3], (1 << 63) - 1)
        self.assertIsInstance(attrs["f"][3], float)
        self.assertEqual(attrs["names"][3], ["a", "b"])

    def test_names_are_ascii_identifiers(self):
        # Python takes these identifiers; libpyop does not: refused at the
        # decorator, naming the op, the name and the file:line.
        def f(x: TensorDesc, *, α: int = 1) -> TensorDesc:
            return x
        line = f.__code__.co_firstlineno
        self.assertRejects(ValueError, r"op 'Bad' \(.*test_signature.py:%d\): attribute name "
                           r"'\u03b1' is not valid: .*ASCII identifiers" % line, f)

        def g(café: TensorDesc) -> TensorDesc:
            return café
        self.assertRejects(ValueError, r"test_signature.py:\d+\): input name 'caf\u00e9' is "
                           r"not valid", g)

        def h(x: TensorDesc) -> TensorDesc:
            return x
        self.assertRejects(ValueError, r"output name 'r\u00e9sultat' is not valid", h,
                           outputs=("r\u00e9sultat",))
        self.assertRejects(ValueError, r"output name 'a-b' is not valid", h, outputs=("a-b",))
        ns = {"TensorDesc": TensorDesc}
        exec("def long_attr(x: TensorDesc, *, %s: int = 1) -> TensorDesc:\n    return x"
             % ("a" * 257), ns)
        self.assertRejects(ValueError, r"attribute name 'a{257}' is not valid.*at most 256",
                           ns["long_attr"])

        here = r"\S*test_signature.py:\d+"
        for bad in ("Caf\u00e9", "two words", "1st", "a/b", "x" * 257):
            with self.assertRaisesRegex(ValueError, r"register_op\(op_type=.*\) at %s: not a "
                                        r"valid op type" % here):
                pyop.register_op(op_type=bad)
            with self.assertRaisesRegex(ValueError, r"register_op_impl\(op_type=.*\) at %s"
                                        % here):
                pyop.register_op_impl(op_type=bad)
        with self.assertRaisesRegex(TypeError, r"register_op\(op_type=''\) at %s" % here):
            pyop.register_op(op_type="")

        @pyop.register_op(op_type="my.ns:Op-1", outputs=("out_1",))
        def ok(x_0: TensorDesc, *, _a: int = 1) -> TensorDesc:
            return x_0
        self.assertEqual(proto(ok).op_type, "my.ns:Op-1")

    def test_decorator_returns_function(self):
        def f(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape, x.dtype)
        g = pyop.register_op(op_type="Same")(f)
        self.assertIs(g, f)
        self.assertEqual(g(TensorDesc((1,), "int8")).shape, (1,))


class ImplTest(unittest.TestCase):
    def _load(self, *objs):
        with collecting() as c:
            for o in objs:
                o()
        c.finalize()
        return c

    def test_caps_and_binding(self):
        def define():
            @pyop.register_op(op_type="Op")
            def op(x: TensorDesc, y: Optional[TensorDesc], *, alpha: float = 1.0) -> TensorDesc:
                return x

            @pyop.register_op_impl(op_type="Op")
            class Impl:
                def execute(self, x, y, *, alpha):
                    pass

                def declare_launch_args(self, x, y, out, *, alpha):
                    pass

        c = self._load(define)
        impl = c.impls["Op"]
        self.assertEqual(impl.caps, pyop._types.CAP_EXECUTE | pyop._types.CAP_LAUNCH)
        self.assertEqual(impl.input_kinds, (IoKind.REQUIRED, IoKind.OPTIONAL))
        self.assertTrue(impl.proto_known)
        self.assertEqual(impl.n_outputs, 1)
        self.assertTrue(impl.key.endswith(".Impl"))

    def test_mismatches(self):
        cases = [
            ("def execute(self, x, z, *, alpha): pass", r"execute\(\) at .*:\d+: parameter 'z': "
             r"positional parameter 1 must be input 'y'"),
            ("def execute(self, x, *, alpha): pass", r"parameter 'y': input missing"),
            ("def execute(self, x, y, w, *, alpha): pass", r"parameter 'w': not an input"),
            ("def execute(self, x, y, *, alpha, beta): pass",
             r"parameter 'beta': not an attribute"),
            ("def execute(self, x, y): pass", r"parameter 'alpha': attribute missing"),
            ("def compile(self, x, y, *, alpha): pass",
             r"compile\(\).*expected 3 positional parameters"),
        ]
        for body, pattern in cases:
            with self.subTest(body=body):
                ns = {"pyop": pyop, "TensorDesc": TensorDesc, "Optional": Optional}
                code = ("@pyop.register_op(op_type='M')\n"
                        "def m(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:\n"
                        "    return x\n"
                        "@pyop.register_op_impl(op_type='M')\n"
                        "class Impl:\n"
                        "    " + body + "\n")
                with collecting() as c:
                    exec(compile(code, "/plugins/m.py", "exec"), ns)
                with self.assertRaisesRegex(TypeError, r"op 'M'.*" + pattern) as cm:
                    c.finalize()
                self.assertIn("/plugins/m.py:", str(cm.exception))

    def test_inputs_take_no_default(self):
        # An input's value comes from the host: no default, refused when the
        # class is decorated (None, the absent optional input's value, is
        # the one taken).
        for body, name in (("def execute(self, x, y=1, *, alpha): pass", "y"),
                           ("def execute(self, x=0, y=None, *, alpha): pass", "x")):
            with self.subTest(body=body):
                code = ("@pyop.register_op_impl(op_type='N')\n"
                        "class Impl:\n"
                        "    " + body + "\n")
                with collecting(), self.assertRaisesRegex(
                        TypeError, r"op 'N': execute\(\) at /plugins/n.py:\d+: parameter '%s': "
                        r"inputs take no default" % name):
                    exec(compile(code, "/plugins/n.py", "exec"), {"pyop": pyop})
        with collecting():
            @pyop.register_op_impl(op_type="N")
            class Fine:
                def execute(self, x, y=None, *, alpha):
                    pass

    def test_kwargs_accepts_all_attrs(self):
        def define():
            @pyop.register_op(op_type="K")
            def k(x: TensorDesc, *, a: int = 1, b: int = 2) -> TensorDesc:
                return x

            @pyop.register_op_impl(op_type="K")
            class Impl:
                def execute(self, x, **attrs):
                    pass
        self._load(define)

    def test_impl_without_python_prototype(self):
        def define():
            @pyop.register_op_impl(op_type="HostOwned")
            class Impl:
                def execute(self, x: Tensor, ys: list[Tensor], z: Optional[Tensor], *, n):
                    pass
        c = self._load(define)
        impl = c.impls["HostOwned"]
        self.assertFalse(impl.proto_known)
        self.assertEqual(impl.input_kinds, (IoKind.REQUIRED, IoKind.DYNAMIC, IoKind.OPTIONAL))
        impl.check_attrs(("n",))
        with self.assertRaisesRegex(TypeError, r"parameter 'm': attribute missing|'n'"):
            impl.check_attrs(("m",))

    def test_no_methods(self):
        with self.assertRaisesRegex(TypeError, r"op 'E'.*defines none of execute"):
            @pyop.register_op_impl(op_type="E")
            class Empty:
                pass

    def test_duplicates_are_kept_for_the_registry(self):
        with collecting() as coll:
            @pyop.register_op(op_type="D")
            def d1(x: TensorDesc) -> TensorDesc:
                return x

            @pyop.register_op(op_type="D")
            def d2(x: TensorDesc) -> TensorDesc:
                return x
        self.assertEqual([p.key.rsplit(".", 1)[1] for p in coll.all_protos()], ["d1", "d2"])


class LaunchTest(unittest.TestCase):
    def test_args(self):
        from pyop import launch
        self.assertEqual((launch.input(2).kind, launch.input(2).index), (launch.INPUT, 2))
        s = launch.scalar("float32", 3)
        self.assertEqual((s.kind, s.scalar_type, s.value), (launch.SCALAR, 9, 3.0))
        self.assertEqual(launch.scalar(DataType.int64, -1).scalar_type, 4)
        with self.assertRaises(ValueError):
            launch.scalar("complex64", 1)
        with self.assertRaises(TypeError):
            launch.scalar("int32", 1.5)
        with self.assertRaises(ValueError):
            launch.output(-1)
        # bool is not a number to a float scalar (nor an int to an int one)
        with self.assertRaisesRegex(TypeError, r"scalar float32 needs a number, got True"):
            launch.scalar("float32", True)
        self.assertEqual(launch.scalar("float64", 2).value, 2.0)

    def test_index_range(self):
        """An input, output or workspace index is a uint32: 2**32 - 1 is the
        last one taken, 2**32 is refused where it is given (not later by the
        bridge), and so are a bool and a negative index."""
        from pyop import launch
        for make in (launch.input, launch.output, launch.workspace):
            with self.subTest(make=make.__name__):
                self.assertEqual(make((1 << 32) - 1).index, (1 << 32) - 1)
                self.assertEqual(make(0).index, 0)
                for bad in (1 << 32, -1, True):
                    with self.assertRaisesRegex(ValueError, r"index must be an int in "
                                                r"\[0, 2\*\*32\), got %s" % re.escape(repr(bad))):
                        make(bad)

    def test_scalar_bool_and_int_kept_apart(self):
        """One rule: a bool is not a number, a number is not a bool."""
        from pyop import launch
        for name in ("int8", "int32", "int64", "uint8", "uint64", "pointer", "float32",
                     "float64"):
            with self.assertRaisesRegex(TypeError, r"scalar %s needs a number, got True "
                                        r"\(a bool is not a number here" % name):
                launch.scalar(name, True)
            with self.assertRaises(TypeError):
                launch.scalar(name, False)
        for v in (0, 1, 2, 1.0, "true", None):
            with self.assertRaisesRegex(TypeError, r"scalar bool needs a bool \(True or False\), "
                                        r"got %s" % re.escape(repr(v))):
                launch.scalar("bool", v)
        self.assertEqual((launch.scalar("bool", True).value, launch.scalar("bool", False).value),
                         (1, 0))
        self.assertEqual(launch.scalar("int64", 7).value, 7)

    def test_scalar_ranges(self):
        """Values past 2**63 (and each type's range) refused, naming it."""
        from pyop import launch
        self.assertEqual(launch.scalar("int64", (1 << 63) - 1).value, (1 << 63) - 1)
        self.assertEqual(launch.scalar("int64", -(1 << 63)).value, -(1 << 63))
        with self.assertRaisesRegex(OverflowError, r"scalar int64 value 9223372036854775808 is "
                                    r"out of range \[-9223372036854775808, 9223372036854775807\]"):
            launch.scalar("int64", 1 << 63)
        with self.assertRaises(OverflowError):
            launch.scalar("int64", -(1 << 63) - 1)
        self.assertEqual(launch.scalar("uint64", (1 << 64) - 1).value, (1 << 64) - 1)
        self.assertEqual(launch.scalar("pointer", 1 << 63).value, 1 << 63)
        for name, bad in (("uint64", 1 << 64), ("pointer", 1 << 64), ("uint8", -1),
                          ("int8", 128), ("int32", 1 << 31), ("uint32", 1 << 32)):
            with self.assertRaisesRegex(OverflowError, r"scalar %s value %d is out of range"
                                        % (name, bad)):
                launch.scalar(name, bad)
        with self.assertRaisesRegex(OverflowError, r"scalar float64 value \d+ is out of range"):
            launch.scalar("float64", 1 << 1100)
        with self.assertRaisesRegex(OverflowError, r"scalar float32 value 1e\+39 is out of range"):
            launch.scalar("float32", 1e39)
        self.assertEqual(launch.scalar("float32", float("inf")).value, float("inf"))


def _names_table():
    return support.names_table()


class NamesTableTest(unittest.TestCase):
    """pyop's early name checks against tests/names.txt, the table the C
    validation (the rule's authority, src/descriptor.c) is tested against
    too (tests/unit/test_descriptor.c)."""

    def test_every_row(self):
        from pyop._signature import check_name, op_type_problem
        rows = _names_table()
        self.assertGreater(len(rows), 20)
        for line, kind, ok, name in rows:
            with self.subTest(line=line, name=name):
                if kind == "op_type":
                    problem = op_type_problem(name)
                    self.assertEqual(problem is None, ok, "names.txt:%d: %r: %s"
                                     % (line, name, problem))
                    continue
                for what in ("input", "output", "attribute"):
                    if ok:
                        check_name(name, what, "Op")
                    else:
                        with self.assertRaisesRegex(ValueError, "%s name" % what):
                            check_name(name, what, "Op")

    def test_decorator_refuses_a_bad_op_type_with_its_reason(self):
        bad = [name for _, kind, ok, name in _names_table() if kind == "op_type" and not ok and name]
        self.assertIn("2Add", bad)
        for name in bad:
            with self.subTest(name=name):
                with self.assertRaisesRegex(ValueError, "not a valid op type"):
                    pyop.register_op(op_type=name)


if __name__ == "__main__":
    unittest.main()
