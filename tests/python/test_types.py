import os
import re
import unittest

import support
from pyop import DataType, Format, TensorDesc
from pyop._types import AttrType, IoKind
import pyop._types as types


def _header_map(macro):
    """{NAME: value} of an X-macro list in include/pyop/pyop.h."""
    with open(os.path.join(support.ROOT, "include", "pyop", "pyop.h")) as f:
        text = f.read()
    start = text.index("#define %s(X)" % macro)
    body = text[start:text.index("\n\n", start)]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"X\((\w+), (-?\d+)", body)}


class TypesTest(unittest.TestCase):
    def test_dtype_values_match_header(self):
        header = _header_map("PYOP_DTYPE_MAP")
        self.assertEqual(len(header), len(DataType))
        for name, value in header.items():
            self.assertEqual(DataType[name.lower()].value, value, name)

    def test_format_values_match_header(self):
        header = _header_map("PYOP_FORMAT_MAP")
        self.assertEqual({f.name: f.value for f in Format}, header)

    def test_attr_and_io_codes_match_header(self):
        with open(os.path.join(support.ROOT, "include", "pyop", "pyop.h")) as f:
            text = f.read()
        def has(pattern):
            return re.search(pattern, text) is not None
        for a in AttrType:
            self.assertTrue(has(r"PYOP_ATTR_%s = %d\b" % (a.name, a.value)), a)
        self.assertFalse(has(r"PYOP_ATTR_\w+ = %d\b" % (len(AttrType) + 1)))
        for k in IoKind:
            self.assertTrue(has(r"PYOP_IO_%s = %d\b" % (k.name, k.value)), k)
        for name, bit in (("INFER_META", types.CAP_INFER_META), ("EXECUTE", types.CAP_EXECUTE),
                          ("COMPILE", types.CAP_COMPILE), ("LAUNCH", types.CAP_LAUNCH)):
            self.assertTrue(has(r"#define PYOP_CAP_%s \(1u << %d\)"
                                % (name, bit.bit_length() - 1)), name)

    def test_launch_codes_match_header(self):
        from pyop import launch
        with open(os.path.join(support.ROOT, "include", "pyop", "bridge_abi.h")) as f:
            text = f.read()

        def enum(name):
            body = text[text.index("typedef enum %s {" % name):]
            body = body[:body.index("}")]
            out, value = {}, 0
            for m in re.finditer(r"PYOP_(\w+?)(?: = (\d+))?,?\s", body):
                value = int(m.group(2)) if m.group(2) else value + 1
                out[m.group(1)] = value
            return out
        kinds = enum("pyop_launch_arg_kind")
        self.assertEqual({k: kinds["LAUNCH_ARG_" + k] for k in
                          ("INPUT", "OUTPUT", "WORKSPACE", "SCALAR", "STREAM")},
                         {k: getattr(launch, k) for k in
                          ("INPUT", "OUTPUT", "WORKSPACE", "SCALAR", "STREAM")})
        scalars = enum("pyop_scalar_type")
        c_name = {"float32": "FLOAT", "float64": "DOUBLE"}
        self.assertEqual(len(scalars), len(launch.SCALAR_TYPES))
        for name, value in launch.SCALAR_TYPES.items():
            self.assertEqual(scalars["SCALAR_" + c_name.get(name, name.upper())], value, name)

    def test_dtype_names_and_sizes(self):
        self.assertEqual(DataType.from_name("bfloat16"), DataType.bfloat16)
        self.assertEqual(str(DataType.float32), "float32")
        self.assertEqual(DataType.int64.itemsize, 8)
        self.assertEqual(DataType.bool.itemsize, 1)
        with self.assertRaisesRegex(ValueError, "unknown data type 'float128'"):
            DataType.from_name("float128")

    def test_tensor_desc(self):
        d = TensorDesc([2, 3], "float16")
        self.assertEqual(d.shape, (2, 3))
        self.assertIs(d.dtype, DataType.float16)
        self.assertIs(d.format, Format.ND)
        self.assertEqual(d.ndim, 2)
        self.assertEqual(d, TensorDesc((2, 3), DataType.float16))
        self.assertNotEqual(d, TensorDesc((2, 3), DataType.float16, Format.NCHW))
        self.assertIn("float16", repr(d))
        TensorDesc((-1, 4), DataType.int8)  # unknown dimension
        with self.assertRaises(ValueError):
            TensorDesc((1.5,), DataType.int8)
        with self.assertRaises(ValueError):
            TensorDesc((1,) * 9, DataType.int8)
        self.assertEqual(TensorDesc((1,) * 8, DataType.int8).ndim, 8)  # the maximum rank
        with self.assertRaises(ValueError):
            TensorDesc((2,), 99)

    def test_package_imports_without_bridge(self):
        import pyop
        self.assertIsNone(pyop._native)
        with self.assertRaisesRegex(RuntimeError, "no bridge is loaded"):
            pyop.get_execute_ctx()
        with self.assertRaises(RuntimeError):
            pyop.Tensor()


if __name__ == "__main__":
    unittest.main()
