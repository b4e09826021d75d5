"""What `pyop check` reads from a plugin, in pure Python:
register_op_impl(..., deterministic=False), register_reference and its
tolerance, and pyop.testing's argument handling (issue 19)."""

import unittest

import support  # noqa: F401  (puts the package on sys.path)
import pyop
import pyop.testing
from pyop import Tensor


class DeclarationsTest(unittest.TestCase):
    def test_deterministic(self):
        @pyop.register_op_impl(op_type="Det")
        class Det:
            def execute(self, x: Tensor) -> None:
                pass

        @pyop.register_op_impl(op_type="NonDet", deterministic=False)
        class NonDet:
            def execute(self, x: Tensor) -> None:
                pass

        self.assertIs(Det.__pyop_deterministic__, True)
        self.assertIs(NonDet.__pyop_deterministic__, False)
        with self.assertRaisesRegex(TypeError, r"register_op_impl\('Bad'\): deterministic is "
                                               r"True or False, got 0"):
            pyop.register_op_impl(op_type="Bad", deterministic=0)

    def test_reference(self):
        @pyop.register_reference(op_type="Ref", rtol=1e-3, atol=0)
        def ref(x):
            return x

        self.assertEqual(ref.__pyop_reference__, "Ref")
        self.assertEqual(ref.__pyop_tolerance__, (1e-3, 0.0))
        for bad in (-1, float("nan"), float("inf"), "0.1", True):
            with self.assertRaisesRegex(TypeError, "rtol is a finite number >= 0"):
                pyop.register_reference(op_type="Ref", rtol=bad)
        with self.assertRaisesRegex(TypeError, "decorates a function"):
            pyop.register_reference(op_type="Ref")(3)
        with self.assertRaisesRegex(ValueError, "not a valid op type"):
            pyop.register_reference(op_type="no spaces")

        async def coro(x):
            return x

        def gen(x):
            yield x

        for fn, why in ((coro, "is a coroutine function"), (gen, "is a generator function")):
            with self.assertRaisesRegex(TypeError, r"op 'Ref': reference function %s\(\) at "
                                        r"\S+test_check_decls.py:\d+ %s"
                                        % (fn.__name__, why)):
                pyop.register_reference(op_type="Ref")(fn)


class TestingTest(unittest.TestCase):
    def test_arguments(self):
        args = pyop.testing._arguments({"x": "float32[2]:1,2", "xs": ["int8[1]", "int8[2]"]},
                                       {"n": 3, "flag": True, "li": [1, 2], "lli": [[1], [2, 3]],
                                        "f": 0.5})
        self.assertEqual(args, ["--input", "x=float32[2]:1,2", "--input", "xs=int8[1]",
                                "--input", "xs=int8[2]", "--attr", "n=3", "--attr", "flag=true",
                                "--attr", "li=1,2", "--attr", "lli=[[1], [2, 3]]",
                                "--attr", "f=0.5"])

    def test_attrs_need_an_op(self):
        with self.assertRaisesRegex(ValueError, "inputs/attrs need op_type"):
            pyop.testing.opcheck("ops", attrs={"n": 1}, cli="/bin/false")

    def test_no_cli(self):
        with self.assertRaisesRegex(pyop.testing.OpCheckError, "could not run"):
            pyop.testing.opcheck("ops", "X", cli="/no/such/pyop")


if __name__ == "__main__":
    unittest.main()
