"""register_op(..., dtypes=...): the allowed data types of a Python
prototype's inputs and outputs, as the descriptor carries them to libpyop
(OpProto.input_dtypes / output_dtypes, bridge ABI 1.7), and its refusals."""

import unittest

import support  # noqa: F401  (makes bridge/python importable)
import pyop
from pyop import DataType, TensorDesc

F32, F16, I32, I64, BOOL = 1 << 0, 1 << 1, 1 << 6, 1 << 7, 1 << 12


def proto(fn):
    return fn.__pyop_descriptor__


class DtypesTest(unittest.TestCase):
    def test_masks_per_input_and_output(self):
        @pyop.register_op(op_type="D1", outputs=("out",),
                          dtypes={"x": [DataType.float32, "float16"], "idx": "int64",
                                  "out": (DataType.float32,)})
        def f(x: TensorDesc, idx: TensorDesc, other: TensorDesc) -> TensorDesc:
            return x

        p = proto(f)
        self.assertEqual(p.input_dtypes, ((F32 | F16, ""), (I64, ""), (0, "")))
        self.assertEqual(p.output_dtypes, ((F32, ""),))

    def test_one_type_in_each_form(self):
        """One allowed type given as a DataType member, its name, a list,
        tuple, set or frozenset of one: the same mask (lifetime pass, session
        15: bridge.lp._signature.dtype_mask_single_member)."""
        forms = [DataType.int64, "int64", [DataType.int64], ("int64",), {DataType.int64},
                 frozenset(["int64"])]
        for form in forms:
            with self.subTest(form=form):
                @pyop.register_op(op_type="One", dtypes={"x": form, "y": form})
                def f(x: TensorDesc) -> TensorDesc:
                    return x

                self.assertEqual((proto(f).input_dtypes, proto(f).output_dtypes),
                                 (((I64, ""),), ((I64, ""),)))

    def test_none_declared(self):
        @pyop.register_op(op_type="D2")
        def f(x: TensorDesc) -> TensorDesc:
            return x

        self.assertIsNone(proto(f).input_dtypes)
        self.assertIsNone(proto(f).output_dtypes)

        @pyop.register_op(op_type="D3", dtypes={"x": {"bool"}})
        def g(x: TensorDesc) -> TensorDesc:
            return x

        self.assertEqual(proto(g).input_dtypes, ((BOOL, ""),))
        self.assertIsNone(proto(g).output_dtypes)  # outputs: none named

    def test_an_output_named_like_an_input_is_not_named(self):
        # The default output "y" beside an input "y": the name is the input's.
        @pyop.register_op(op_type="D4", dtypes={"y": "int32"})
        def f(x: TensorDesc, y: TensorDesc) -> TensorDesc:
            return x

        self.assertEqual(proto(f).input_dtypes, ((0, ""), (I32, "")))
        self.assertIsNone(proto(f).output_dtypes)

    def test_refusals_name_the_op(self):
        def deco(dtypes):
            def f(x: TensorDesc) -> TensorDesc:
                return x
            return pyop.register_op(op_type="Bad", dtypes=dtypes)(f)

        cases = [({"z": "float32"}, ValueError, "dtypes: 'z' is not an input or output"),
                 ({"x": []}, TypeError, "dtypes['x']: expected a DataType, a data type name or "
                  "a non-empty list"),
                 ({"x": ["float33"]}, ValueError, "unknown data type 'float33'"),
                 ({"x": [3]}, TypeError, "3 is not a DataType or a data type name"),
                 (["x"], TypeError, "dtypes must be a dict of input or output name")]
        for dtypes, exc, text in cases:
            with self.subTest(dtypes=dtypes):
                with self.assertRaises(exc) as cm:
                    deco(dtypes)
                self.assertIn("op 'Bad'", str(cm.exception))
                self.assertIn(text, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
