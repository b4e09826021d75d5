"""register_op's op contract features in pure Python: outputs from the
return annotation (None, list, tuple mixes), mutates_args and aliases,
Tensor attributes."""

import unittest
from typing import List, Optional, Tuple

import support  # noqa: F401  (puts the package on sys.path)
import pyop
from pyop import Tensor, TensorDesc
from pyop._types import AttrType, IoKind, INPUT_MUTATED


def proto(fn):
    return fn.__pyop_descriptor__


class OutputsTest(unittest.TestCase):
    def test_none(self):
        @pyop.register_op(op_type="N0")
        def f(x: TensorDesc) -> None:
            return None

        p = proto(f)
        self.assertEqual(p.outputs, ())
        self.assertIsNone(p.output_kinds)

    def test_list_and_mix(self):
        @pyop.register_op(op_type="L1")
        def f(x: TensorDesc) -> list[TensorDesc]:
            return [x]

        self.assertEqual(proto(f).outputs, ("y",))
        self.assertEqual(proto(f).output_kinds, (int(IoKind.DYNAMIC),))

        @pyop.register_op(op_type="M2", outputs=("head", "rest"))
        def g(x: TensorDesc) -> Tuple[TensorDesc, List[TensorDesc]]:
            return x, [x]

        self.assertEqual(proto(g).outputs, ("head", "rest"))
        self.assertEqual(proto(g).output_kinds, (int(IoKind.REQUIRED), int(IoKind.DYNAMIC)))

    def test_bad_annotations(self):
        with self.assertRaisesRegex(TypeError, "expected None, TensorDesc, list"):
            @pyop.register_op(op_type="B1")
            def f(x: TensorDesc) -> Optional[TensorDesc]:
                return x
        with self.assertRaisesRegex(TypeError, "names 1 output but the return annotation "
                                               "declares 0"):
            @pyop.register_op(op_type="B2", outputs=("y",))
            def g(x: TensorDesc) -> None:
                return None
        with self.assertRaisesRegex(TypeError, "missing return annotation"):
            @pyop.register_op(op_type="B3")
            def h(x: TensorDesc):
                return x


class MutatesTest(unittest.TestCase):
    def test_mutated_and_alias(self):
        @pyop.register_op(op_type="Inp", mutates_args=("x",), outputs=("x", "z"))
        def f(x: TensorDesc, y: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
            return x, y

        p = proto(f)
        self.assertEqual(p.input_flags, (INPUT_MUTATED, 0))
        self.assertEqual(p.output_alias, (0, -1))
        self.assertEqual(p.mutated_inputs, ("x",))

    def test_mutated_without_alias(self):
        @pyop.register_op(op_type="Inp2", mutates_args=["y"])
        def f(x: TensorDesc, y: TensorDesc) -> None:
            return None

        p = proto(f)
        self.assertEqual(p.input_flags, (0, INPUT_MUTATED))
        self.assertIsNone(p.output_alias)

    def test_errors(self):
        def make(m, outs=None):
            @pyop.register_op(op_type="E", mutates_args=m, outputs=outs)
            def f(x: TensorDesc, ys: list[TensorDesc]) -> TensorDesc:
                return x
            return f

        with self.assertRaisesRegex(TypeError, "mutates_args must be a tuple of input names"):
            make("x")
        with self.assertRaisesRegex(ValueError, "'q' is not an input"):
            make(("q",))
        with self.assertRaisesRegex(ValueError, "input 'x' given twice"):
            make(("x", "x"))
        with self.assertRaisesRegex(TypeError, "is not an input name"):
            make((1,))
        with self.assertRaisesRegex(TypeError, "both must be single tensors"):
            make(("ys",), ("ys",))


class TensorAttrTest(unittest.TestCase):
    def test_tensor_attr(self):
        @pyop.register_op(op_type="TA")
        def f(x: TensorDesc, *, w: Tensor, k: int = 1) -> TensorDesc:
            return x

        attrs = proto(f).attrs
        self.assertEqual(attrs[0], ("w", AttrType.TENSOR, True, None))

    def test_no_default(self):
        with self.assertRaisesRegex(TypeError, "'w'.*Tensor attribute cannot have a default"):
            @pyop.register_op(op_type="TB")
            def f(x: TensorDesc, *, w: Tensor = None) -> TensorDesc:
                return x


if __name__ == "__main__":
    unittest.main()
