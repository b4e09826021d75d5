"""REG_OP files (ge.custom_op.host_proto, ge.custom_op._reg_op_cpp) without
the bridge: C++ headers as GE's samples write them (include guards,
#includes, namespace ge, comments, line continuations, several REG_OPs,
TensorType sets and DATATYPE symbols, list defaults), what cannot be read
refused with the line and what was expected, what has no pyop form kept
but unusable, the Python form's lines and types, and a fuzz of malformed
headers: never an exception other than ReadError, always a line in the
file (issue 27 items 1-2, issue 25 item 22).

Run by ctest as ge.reg_op (PYOP_PACKAGE_DIR=bridge/python); PYOP_FUZZ_N
sets the number of fuzzed headers (default 3000)."""

import math
import os
import random
import re
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import support  # noqa: E402  (makes bridge/python importable)
from support import TempDir  # noqa: E402

import pyop  # noqa: E402
from pyop._types import AttrType, IoKind  # noqa: E402
from ge.custom_op import host_proto  # noqa: E402
from ge.custom_op import _reg_op_cpp  # noqa: E402
from ge.graph.types import DataType  # noqa: E402

F32, F16, BF16, F64 = 1, 2, 4, 8
I8, I16, I32, I64 = 16, 32, 64, 128
U8, U16, U32, U64, BOOL = 256, 512, 1024, 2048, 4096

# A header in the shape of GE's samples (written for these tests).
SAMPLE = r'''/**
 * A test header: two REG_OPs as GE's examples/custom_op write them.
 */
#ifndef TEST_ADD_CUSTOM_IR_H_
#define TEST_ADD_CUSTOM_IR_H_

#include "graph/operator_reg.h"
#include "register/op_impl_registry.h"

namespace ge {
// x and y share one type T.
REG_OP(AddCustom)
    .INPUT(x, "T")
    .INPUT(y, "T")
    .OUTPUT(z, "T")
    .DATATYPE(T, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OP_END_FACTORY_REG(AddCustom);

/* Every form of the list. */
REG_OP(Everything)
    .INPUT(x1, TensorType({DT_FLOAT, DT_INT32, DT_INT64, DT_FLOAT16, DT_INT16, DT_INT8, \
                           DT_UINT8, DT_DOUBLE, DT_COMPLEX128, DT_COMPLEX64, DT_STRING}))
    .OPTIONAL_INPUT(bias, TensorType::RealNumberType())
    .DYNAMIC_INPUT(xs, TensorType::ALL())
    .INPUT(idx, TensorType{DT_INT32, DT_INT64})
    .INPUT(flag, TensorType(DT_BOOL))
    .OUTPUT(y, TensorType::FLOAT())
    .DYNAMIC_OUTPUT(ys, "U")
    .DATATYPE(U, ListTensorType(TensorType::IndexNumberType()))
    .REQUIRED_ATTR(n, Int)
    .ATTR(alpha, Float, 1.0)
    .ATTR(eps, Float, 1e-5f)
    .ATTR(neg, Float, -std::numeric_limits<float>::infinity())
    .ATTR(keep, Bool, false)
    .ATTR(mode, String, "NC" "HW")
    .ATTR(dt, Type, DT_INT8)
    .ATTR(axes, ListInt, {0, 1})
    .ATTR(none, ListInt, {})
    .ATTR(shape, ListInt, ge::UNKNOWN_SHAPE)
    .ATTR(scales, ListFloat, {0.5, 2})
    .ATTR(flags, ListBool, {true, false})
    .ATTR(names, ListString, {"a", "b"})
    .ATTR(dts, ListType, {DT_FLOAT, DT_BF16})
    .ATTR(pads, ListListInt, {{1, 2}, {}, {3}})
    .ATTR(count, Int, 0x10)
    .ATTR(big, Int, -9223372036854775807LL)
    .ATTR(dt_num, Int, DT_INT32)
    .REQUIRED_ATTR(table, Tensor)
    .OP_END_FACTORY_REG(Everything)
}  // namespace ge

#if 0
REG_OP(Disabled).INPUT(x, TensorType({DT_NOPE})).OP_END_FACTORY_REG(Disabled);
#endif
#endif  // TEST_ADD_CUSTOM_IR_H_
'''


def write(d, name, text):
    """Writes text to d/name exactly (no newline translation); the path."""
    path = os.path.join(d, name)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    return path


def read_text(d, text, name="ops.h"):
    return host_proto.read(write(d, name, text))


def read_error(test, d, text, line, *parts, name="ops.h"):
    """Asserts that reading text fails at line with each of parts."""
    path = write(d, name, text)
    with test.assertRaises(host_proto.ReadError) as cm:
        host_proto.read(path)
    test.assertEqual(cm.exception.line, line, str(cm.exception))
    for p in parts:
        test.assertIn(p, str(cm.exception))
    return str(cm.exception)


class HeaderTest(unittest.TestCase):
    def test_sample_header(self):
        with TempDir() as d:
            ops = read_text(d, SAMPLE)
            self.assertEqual([o.op_type for o in ops], ["AddCustom", "Everything"])
            add = ops[0].info()
            self.assertEqual(add["line"], 12)
            self.assertEqual(add["inputs"], [("x", IoKind.REQUIRED), ("y", IoKind.REQUIRED)])
            self.assertEqual(add["outputs"], [("z", IoKind.REQUIRED)])
            self.assertEqual(add["input_dtypes"], [(F32 | F16, "T"), (F32 | F16, "T")])
            self.assertEqual(add["output_dtypes"], [(F32 | F16, "T")])
            self.assertIsNone(add["unusable"])
            e = ops[1].info()
            self.assertIsNone(e["unusable"])
            self.assertEqual([n for n, _ in e["inputs"]], ["x1", "bias", "xs", "idx", "flag"])
            self.assertEqual([k for _, k in e["inputs"]],
                             [IoKind.REQUIRED, IoKind.OPTIONAL, IoKind.DYNAMIC, IoKind.REQUIRED,
                              IoKind.REQUIRED])
            self.assertEqual(e["outputs"], [("y", IoKind.REQUIRED), ("ys", IoKind.DYNAMIC)])
            # Only what libpyop can pass (complex, string have no pyop form).
            every = F32 | F16 | BF16 | F64 | I8 | I16 | I32 | I64 | U8 | U16 | U32 | U64 | BOOL
            self.assertEqual(e["input_dtypes"], [
                (F32 | I32 | I64 | F16 | I16 | I8 | U8 | F64, ""),
                (every & ~BOOL, ""),  # RealNumberType
                (every, ""),          # ALL
                (I32 | I64, ""), (BOOL, "")])
            # ListTensorType: each tensor its own type of the set, no symbol.
            self.assertEqual(e["output_dtypes"], [(F32 | F16 | BF16, ""), (I32 | I64, "")])
            attrs = {a[0]: a[1:] for a in e["attrs"]}
            self.assertEqual(attrs["n"], (AttrType.INT, True, None))
            self.assertEqual(attrs["alpha"], (AttrType.FLOAT, False, 1.0))
            self.assertAlmostEqual(attrs["eps"][2], 1e-5)
            self.assertEqual(attrs["neg"][2], -math.inf)
            self.assertEqual(attrs["keep"], (AttrType.BOOL, False, False))
            self.assertEqual(attrs["mode"], (AttrType.STR, False, "NCHW"))
            self.assertEqual(attrs["dt"], (AttrType.DTYPE, False, pyop.DataType.int8))
            self.assertEqual(attrs["axes"], (AttrType.LIST_INT, False, [0, 1]))
            self.assertEqual(attrs["none"], (AttrType.LIST_INT, False, []))
            self.assertEqual(attrs["shape"], (AttrType.LIST_INT, False, [-1]))
            self.assertEqual(attrs["scales"], (AttrType.LIST_FLOAT, False, [0.5, 2.0]))
            self.assertEqual(attrs["flags"], (AttrType.LIST_BOOL, False, [True, False]))
            self.assertEqual(attrs["names"], (AttrType.LIST_STR, False, ["a", "b"]))
            self.assertEqual(attrs["dts"], (AttrType.LIST_DTYPE, False,
                                            [pyop.DataType.float32, pyop.DataType.bfloat16]))
            self.assertEqual(attrs["pads"], (AttrType.LIST_LIST_INT, False, [[1, 2], [], [3]]))
            self.assertEqual(attrs["count"][2], 16)
            self.assertEqual(attrs["big"][2], -9223372036854775807)
            self.assertEqual(attrs["dt_num"][2], int(DataType.DT_INT32))  # GE's number, as C++
            self.assertEqual(attrs["table"], (AttrType.TENSOR, True, None))

    def test_bom_crlf_and_continuations(self):
        with TempDir() as d:
            text = "\ufeff" + SAMPLE.replace("\n", "\r\n")
            ops = read_text(d, text)
            self.assertEqual(ops[1].info()["input_dtypes"][0][0],
                             F32 | I32 | I64 | F16 | I16 | I8 | U8 | F64)
            # A // comment continued by a backslash hides the next line too.
            ops = read_text(d, "// a comment \\\nREG_OP(Hidden).OP_END_FACTORY_REG(Hidden)\n"
                            "REG_OP(Seen).INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, \\\n"
                            "  TensorType({DT_FLOAT}))\n.OP_END_FACTORY_REG(Seen);\n")
            self.assertEqual([o.op_type for o in ops], ["Seen"])
            self.assertEqual(ops[0].info()["line"], 3)

    def test_preprocessor(self):
        with TempDir() as d:
            text = ("#ifdef __cplusplus\nREG_OP(A).OP_END_FACTORY_REG(A)\n#else\n"
                    "REG_OP(B).OP_END_FACTORY_REG(B)\n#endif\n"
                    "#if 0\nREG_OP(C) garbage ( ' \"\n#elif 1\nREG_OP(D).OP_END_FACTORY_REG(D)\n"
                    "#endif\n#define REG(x) REG_OP(x)\n"
                    "#define LONG \\\n  REG_OP(E).OP_END_FACTORY_REG(E)\n")
            self.assertEqual([o.op_type for o in read_text(d, text)], ["A", "D"])
            read_error(self, d, "#if 1\nREG_OP(A).OP_END_FACTORY_REG(A)\n", 3, "#if at line 1")
            read_error(self, d, "\n#endif\n", 2, "#endif without #if")

    def test_errors_name_the_line_and_what_was_expected(self):
        cases = [
            ("REG_OP(A)\n  .INPUT(x TensorType({DT_FLOAT}))\n.OP_END_FACTORY_REG(A);", 2,
             "expected ',' after .INPUT(x (then its type"),
            ("REG_OP(A)\n  .INPUT(x, TensorType({DT_FLOAT})\n.OP_END_FACTORY_REG(A);", 3,
             "expected ')' after the type of .INPUT(x, ..., got '.'"),
            ("REG_OP(A)\n  .INPUT(x, TensorType({DT_FLAOT}))\n.OP_END_FACTORY_REG(A);", 2,
             "'DT_FLAOT' is not a GE data type"),
            ("REG_OP(A)\n  .INPUT(x, TensorType::EVERYTHING())\n.OP_END_FACTORY_REG(A);", 2,
             "'TensorType::EVERYTHING' is not a GE data type"),
            ("REG_OP(A)\n  .INPUT(x, 42)\n.OP_END_FACTORY_REG(A);", 2,
             "expected the type in .INPUT(x, ...)"),
            ("REG_OP(A)\n  .INPUTS(x, \"T\")\n.OP_END_FACTORY_REG(A);", 2,
             "unknown REG_OP item .INPUTS (expected one of INPUT"),
            ("REG_OP(A)\n  .INPUT(x, \"T\")\n.OP_END_FACTORY_REG(A);", 2,
             "input 'x' is of type 'T', which no .DATATYPE(T, ...) of this REG_OP declares"),
            ("REG_OP(A)\n  .INPUT(x, TensorType({DT_FLOAT}))\n", 3,
             "REG_OP(A) (line 1) never ends: expected .OP_END_FACTORY_REG(A)"),
            ("REG_OP(A)\n  .INPUT(x, TensorType({DT_FLOAT}))\n.OP_END_FACTORY_REG(B);", 3,
             "OP_END_FACTORY_REG(B) ends REG_OP(A) (line 1)"),
            ("REG_OP(A)\n .INPUT(x, TensorType({DT_FLOAT}))\n .INPUT(x, TensorType({DT_FLOAT}))"
             "\n.OP_END_FACTORY_REG(A);", 3, "REG_OP('A'): input 'x' is declared twice"),
            ("REG_OP(A)\n .INPUT(x, TensorType({DT_FLOAT}))\n .ATTR(x, Int, 1)"
             "\n.OP_END_FACTORY_REG(A);", 3, "attribute 'x' is declared twice (it is an input "
             "already"),
            ("REG_OP(A)\n .ATTR(k, Int, 1)\n .REQUIRED_ATTR(k, Float)\n.OP_END_FACTORY_REG(A);",
             3, "attribute 'k' is declared twice"),
            ("REG_OP(A)\n .ATTR(s, String, \"a\\0b\")\n.OP_END_FACTORY_REG(A);", 2,
             "ATTR('s'): default 'a\\x00b' holds a NUL character"),
            ("REG_OP(A)\n .ATTR(k, Int, 9223372036854775808)\n.OP_END_FACTORY_REG(A);", 2,
             "default 9223372036854775808 is outside int64"),
            ("REG_OP(A)\n .ATTR(k, Int, 2.5)\n.OP_END_FACTORY_REG(A);", 2,
             "default 2.5 is not an int"),
            ("REG_OP(A)\n .ATTR(b, Bool, 1)\n.OP_END_FACTORY_REG(A);", 2,
             "default 1 is not a bool"),
            ("REG_OP(A)\n .ATTR(f, Float, 1e39)\n.OP_END_FACTORY_REG(A);", 2,
             "default 1e+39 does not fit in float32"),
            ("REG_OP(A)\n .ATTR(f, ListFloat, {1, -3.5e38})\n.OP_END_FACTORY_REG(A);", 2,
             "does not fit in float32"),
            ("REG_OP(A)\n .ATTR(f, Float, std::numeric_limits<double>::max())\n"
             ".OP_END_FACTORY_REG(A);", 2, "does not fit in float32"),
            ("REG_OP(A)\n .ATTR(k, Nope, 1)\n.OP_END_FACTORY_REG(A);", 2,
             "unsupported custom op runtime attr type: 'Nope'"),
            ("REG_OP(A)\n .ATTR(k, Int)\n.OP_END_FACTORY_REG(A);", 2,
             "expected ',' after .ATTR(k, Int (then its default value)"),
            ("REG_OP(A)\n .ATTR(k, Int, )\n.OP_END_FACTORY_REG(A);", 2,
             "expected the default value of .ATTR(k, Int, ...), got ')'"),
            ("REG_OP(A)\n .DATATYPE(T, TensorType({DT_FLOAT}))\n .DATATYPE(T, TensorType("
             "{DT_INT8}))\n.OP_END_FACTORY_REG(A);", 3, "DATATYPE(T, ...) is declared twice"),
            ("REG_OP(A)\n .DATATYPE(T, Promote({\"T1\", 2}))\n.OP_END_FACTORY_REG(A);", 2,
             "expected a type name \"T1\" in Promote({...}), got '2'"),
            ("REG_OP(A).OP_END_FACTORY_REG(A);\nREG_OP(A).OP_END_FACTORY_REG(A);", 2,
             "REG_OP('A') is declared twice (first at line 1)"),
            ("REG_OP(A)\n /* unclosed\n", 2, "a /* comment is not closed"),
            ("REG_OP(A)\n .ATTR(s, String, \"open)\n", 2, "a string literal is not closed"),
            ("REG_OP(A)\n .ATTR(s, String, \"\\q\")\n", 2, "unknown escape \\q"),
            ("REG_OP(A)\n .INPUT(x, TensorType({DT_FLOAT, DT_INT8))\n"
             ".OP_END_FACTORY_REG(A);", 2, "expected ',' between the data types of "
             "TensorType({...}), got ')'"),
            ("REG_OP(A)\n .ATTR(v, ListInt, {1, 2)\n.OP_END_FACTORY_REG(A);", 2,
             "unbalanced ')'"),
            ("REG_OP(A)\n .ATTR(v, Int, 1.2.3)\n.OP_END_FACTORY_REG(A);", 2,
             "'1.2.3' is not a number literal"),
        ]
        with TempDir() as d:
            for text, line, part in cases:
                with self.subTest(text=text):
                    read_error(self, d, text, line, part)

    def test_the_python_form_in_a_header_says_which_form(self):
        with TempDir() as d:
            read_error(self, d, "\n\nREG_OP(\"AddCustom\").INPUT(\"x\")\n", 3,
                       "expected the op type in REG_OP(...), got '\"AddCustom\"'",
                       "the Python form", "REG_OP(AddCustom)")

    def test_no_pyop_form_keeps_the_reg_op_unusable(self):
        text = ("REG_OP(Good).INPUT(x, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(Good);\n"
                "REG_OP(Cplx)\n .INPUT(x, TensorType({DT_COMPLEX64, DT_STRING}))\n"
                " .OP_END_FACTORY_REG(Cplx);\n"
                "REG_OP(Named)\n .ATTR(f, NamedAttrs, {})\n .GRAPH(body)\n"
                " .ATTR(t, Tensor, Tensor())\n .ATTR(v, ListInt, val_list_int)\n"
                " .ATTR(dt, Type, DT_COMPLEX64)\n .OP_END_FACTORY_REG(Named);\n")
        with TempDir() as d:
            ops = [o.info() for o in read_text(d, text)]
            self.assertIsNone(ops[0]["unusable"])
            self.assertEqual(ops[1]["unusable"], "line 3: input 'x': TensorType({DT_COMPLEX64, "
                             "DT_STRING}) allows no data type libpyop can pass (DT_COMPLEX64, "
                             "DT_STRING: no pyop form)")
            why = ops[2]["unusable"]
            for part in ("line 6: attr 'f': unsupported custom op runtime attr type: "
                         "'NamedAttrs' (GE's NamedAttrs has no pyop form)",
                         "line 7: subgraph .GRAPH(body) has no pyop form",
                         "line 8: attribute 't': a Tensor attribute with a default has no pyop "
                         "form", "line 9: attribute 'v': default `val_list_int` is not a "
                         "literal libpyop can read",
                         "line 10: attribute 'dt': default DataType.DT_COMPLEX64 has no pyop form"):
                self.assertIn(part, why)


class PythonFormTest(unittest.TestCase):
    def test_types_and_lines(self):
        text = ('REG_OP("AddCustom").INPUT("x1", "T").INPUT("x2", "T").OUTPUT("y", "T") \\\n'
                '    .DATATYPE("T", TensorType({DataType.DT_FLOAT, DataType.DT_FLOAT16})) \\\n'
                '    .OP_END_FACTORY_REG()\n'
                'REG_OP("Idx").INPUT("i", [DataType.DT_INT32, DataType.DT_INT64]) \\\n'
                '    .INPUT("x", TensorType.ALL()).OUTPUT("y", DataType.DT_BOOL)\n')
        with TempDir() as d:
            ops = host_proto.read(write(d, "ops.reg_op", text))
            a, b = ops[0].info(), ops[1].info()
            self.assertEqual(a["line"], 1)
            self.assertEqual(a["input_dtypes"], [(F32 | F16, "T"), (F32 | F16, "T")])
            self.assertEqual(b["line"], 4)
            self.assertEqual(b["input_dtypes"][0], (I32 | I64, ""))
            self.assertEqual(b["output_dtypes"], [(BOOL, "")])

    def test_types_in_every_form(self):
        """An io's types in the Python form given as a tuple, a list, a set,
        a frozenset, one DataType or a TensorType: each the same set
        (lifetime pass, session 15: bridge.lp.host_proto.types_arg_tuple);
        and DATATYPE's too."""
        forms = ["(DataType.DT_INT32, DataType.DT_INT64)", "[DataType.DT_INT32, DataType.DT_INT64]",
                 "{DataType.DT_INT32, DataType.DT_INT64}",
                 "frozenset([DataType.DT_INT32, DataType.DT_INT64])",
                 "TensorType({DataType.DT_INT32, DataType.DT_INT64})"]
        text = "".join('REG_OP("F%d").INPUT("x", %s).OUTPUT("y", "T").DATATYPE("T", %s)\n'
                       % (k, f, f) for k, f in enumerate(forms))
        text += 'REG_OP("One").INPUT("x", (DataType.DT_INT64,)).OUTPUT("y", DataType.DT_INT64)\n'
        with TempDir() as d:
            ops = [r.info() for r in host_proto.read(write(d, "forms.reg_op", text))]
        for info in ops[:-1]:
            with self.subTest(op=info["op_type"]):
                self.assertEqual(info["input_dtypes"], [(I32 | I64, "")])
                self.assertEqual(info["output_dtypes"], [(I32 | I64, "T")])
        self.assertEqual((ops[-1]["input_dtypes"], ops[-1]["output_dtypes"]),
                         ([(I64, "")], [(I64, "")]))

    def test_wrong_declarations_name_their_line(self):
        cases = [
            ('\nREG_OP("A").INPUT("x").INPUT("x")\n', 2, "input 'x' is declared twice"),
            ('\n\nREG_OP("A").INPUT("x") \\\n  .ATTR("s", "String", "a\\0b")\n', 4,
             "holds a NUL character"),
            ('REG_OP("A").ATTR("k", "Int", 2**70)\n', 1, "is outside int64"),
            ('REG_OP("A")\nREG_OP("B").ATTR("b", "Bool", "false")\n', 2, "is not a bool"),
            ('REG_OP("A").ATTR("f", "Float", 1e39)\n', 1, "does not fit in float32"),
            ('REG_OP("A").INPUT("x", "T")\n', 1, "which no .DATATYPE(T, ...)"),
            ('REG_OP("A").DATATYPE("T", [DataType.DT_STRING]).INPUT("x", "T")\n', None,
             "allows no data type libpyop can pass"),
        ]
        with TempDir() as d:
            for text, line, part in cases:
                with self.subTest(text=text):
                    path = write(d, "bad.reg_op", text)
                    with self.assertRaises(host_proto.ReadError) as cm:
                        [r.info() for r in host_proto.read(path)]
                    self.assertEqual(cm.exception.line, line or 1, str(cm.exception))
                    self.assertIn(part, str(cm.exception))

    def test_a_header_in_the_python_form_says_which_form(self):
        with TempDir() as d:
            path = write(d, "ops.reg_op", SAMPLE)
            with self.assertRaises(host_proto.ReadError) as cm:
                host_proto.read(path)
            self.assertEqual(cm.exception.line, 1)  # /**
            self.assertIn("line 1 is C++ REG_OP syntax, but a file named ops.reg_op is read as "
                          "the Python form", str(cm.exception))
            self.assertIn("give a C++ header a name ending in .h", str(cm.exception))
            path = write(d, "bare.reg_op", "REG_OP(AddCustom).INPUT(x, \"T\")\n")
            with self.assertRaisesRegex(host_proto.ReadError, "line 1 is C\\+\\+ REG_OP syntax"):
                host_proto.read(path)

    def test_bom_accepted(self):
        with TempDir() as d:
            path = write(d, "ops.reg_op", '\ufeffREG_OP("A").INPUT("x").OUTPUT("y")\n')
            self.assertEqual([o.op_type for o in host_proto.read(path)], ["A"])


class DocsTest(unittest.TestCase):
    def test_the_guide_examples_read(self):
        """docs/ge-plugins.md's header and Python-form examples read as it says."""
        guide = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                             "ge-plugins.md")
        with open(guide, encoding="utf-8") as f:
            text = f.read()
        header = re.search(r"```cpp\n(.*?)```", text, re.S).group(1)
        python = re.search(r"```python\n(# add_custom.reg_op\n.*?)```", text, re.S).group(1)
        with TempDir() as d:
            (h,) = read_text(d, header)
            (p,) = host_proto.read(write(d, "add_custom.reg_op", python))
            hi, pi = h.info(), p.info()
            self.assertIsNone(hi["unusable"])
            self.assertEqual(hi["input_dtypes"][:2], [(F32, "T"), (F32, "T")])
            self.assertEqual(pi["input_dtypes"], [(F32, "T"), (F32, "T")])
            self.assertEqual([n for n, _ in hi["inputs"]], ["x1", "x2", "bias", "xs"])


# ------------------------------------------------------------------ fuzz

def _mutations(rng, text):
    """One malformed variant of text: characters or tokens dropped, doubled,
    swapped or replaced, truncated, or junk inserted."""
    junk = ["(", ")", "{", "}", ",", ".", ";", '"', "'", "/*", "*/", "//", "\\\n", "#if 0\n",
            "#endif\n", "\n", "REG_OP(", "TensorType(", "DT_FLOAT", "\0", "\ufeff", "é",
            "0x", "1e", "-", "::", "ListInt", "\"T\"", "DATATYPE(", ".ATTR(a, Int, ", "\x7f"]
    out = text
    for _ in range(rng.randint(1, 4)):
        if not out:
            break
        i = rng.randrange(len(out))
        op = rng.randrange(6)
        if op == 0:
            out = out[:i] + out[i + rng.randint(1, 8):]
        elif op == 1:
            out = out[:i] + rng.choice(junk) + out[i:]
        elif op == 2:
            out = out[:i]
        elif op == 3:
            j = rng.randrange(len(out))
            out = out[:i] + out[j:j + rng.randint(1, 12)] + out[i:]
        elif op == 4:
            out = out[:i] + chr(rng.randrange(1, 128)) + out[i + 1:]
        else:
            toks = re.split(r"(\W)", out)
            k = rng.randrange(len(toks))
            toks[k] = rng.choice(junk)
            out = "".join(toks)
    return out


class FuzzTest(unittest.TestCase):
    def test_malformed_headers(self):
        n = int(os.environ.get("PYOP_FUZZ_N", "3000"))
        rng = random.Random(27)
        seeds = [SAMPLE, "REG_OP(A).INPUT(x, \"T\").DATATYPE(T, TensorType::ALL())"
                 ".ATTR(v, ListListInt, {{1}, {2, 3}}).OP_END_FACTORY_REG(A);\n"]
        refused = read = 0
        with TempDir() as d:
            for k in range(n):
                text = _mutations(rng, seeds[k % len(seeds)])
                path = write(d, "fuzz.h", text)
                # As read: universal newlines (\r, \r\n and \n end a line).
                lines = text.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1
                try:
                    for decl in host_proto.read(path):
                        decl.info()
                    read += 1
                except host_proto.ReadError as e:
                    refused += 1
                    self.assertIsNotNone(e.line, "%s\n---\n%r" % (e, text))
                    self.assertTrue(1 <= e.line <= lines, "line %s of %d: %s\n---\n%r"
                                    % (e.line, lines, e, text))
                except UnicodeDecodeError:
                    self.fail("NUL and non-ASCII are UTF-8: %r" % text)
                except Exception as e:  # noqa: BLE001 -- the point of the test
                    self.fail("%s: %s\n---\n%r" % (type(e).__name__, e, text))
        self.assertGreater(refused, n // 4)  # the mutations do break headers
        self.assertGreater(read, 0)


class OutcomeTest(unittest.TestCase):
    """Issue 31's outcome pass (session 10): what each branch of the two
    readers gives the host (the declarations read, their defaults and
    type masks), asserted as values (tests/mutation/mutants.txt,
    bridge.out.host_proto.*, bridge.out.reg_op_cpp.*)."""

    def read_py(self, text):
        with TempDir() as d:
            return [r.info() for r in host_proto.read(write(d, "ops.reg_op", text))]

    def read_h(self, text):
        with TempDir() as d:
            return [r.info() for r in read_text(d, text)]

    def test_python_form_lists_and_namespaces(self):
        """Every element of a ListBool default is checked; an output may
        share an input's name (outputs have their own namespace); a set of
        DataTypes is a TensorType."""
        with self.assertRaisesRegex(host_proto.ReadError, r"default 1 is not a bool"):
            self.read_py('REG_OP("A").ATTR("flags", "ListBool", [True, 1])\n')
        a, = self.read_py('REG_OP("A").ATTR("flags", "ListBool", [True, False])\n')
        self.assertEqual(a["attrs"], [("flags", AttrType.LIST_BOOL, False, [True, False])])
        a, = self.read_py('REG_OP("A").INPUT("x").OUTPUT("x")\n')
        self.assertEqual((a["inputs"], a["outputs"]),
                         ([("x", IoKind.REQUIRED)], [("x", IoKind.REQUIRED)]))
        a, = self.read_py('REG_OP("A").INPUT("x", {DataType.DT_FLOAT, DataType.DT_INT8}) \\\n'
                          '    .INPUT("y", frozenset({DataType.DT_INT32}))\n')
        self.assertEqual(a["input_dtypes"], [(F32 | I8, ""), (I32, "")])

    def test_dtype_sides(self):
        """A side with one constrained io lists every io (0 and "" for an
        unconstrained one); a Promote type constrains nothing, so a side of
        Promote types only is None."""
        a, = self.read_py('REG_OP("A").INPUT("x", [DataType.DT_FLOAT]).INPUT("y") \\\n'
                          '    .OUTPUT("z", "T").DATATYPE("T", Promote({"T1", "T2"}))\n')
        self.assertEqual(a["input_dtypes"], [(F32, ""), (0, "")])
        self.assertIsNone(a["output_dtypes"])

    def test_number_literals(self):
        """Octal, hex (an f is a hex digit there) and signed literals read
        as C++ reads them."""
        a, = self.read_h("REG_OP(A)\n"
                         "    .ATTR(o, Int, 010)\n"
                         "    .ATTR(h, Int, 0x1F)\n"
                         "    .ATTR(hl, Int, 0xffULL)\n"
                         "    .ATTR(p, Int, +3)\n"
                         "    .ATTR(n, Int, -3)\n"
                         "    .ATTR(pf, Float, +0.5)\n"
                         "    .OP_END_FACTORY_REG(A);\n")
        self.assertEqual([(n, v) for n, _, _, v in a["attrs"]],
                         [("o", 8), ("h", 31), ("hl", 255), ("p", 3), ("n", -3), ("pf", 0.5)])

    def test_number_literals_in_every_form(self):
        """Each prefix in either case (0x / 0X, 0b / 0B) and C++14 digit
        separators (1'000) read as C++ reads them (lifetime pass, session
        15: bridge.lp._reg_op_cpp.hex_upper, bin_upper, separators)."""
        a, = self.read_h("REG_OP(A)\n"
                         "    .ATTR(h, Int, 0x1F)\n"
                         "    .ATTR(hu, Int, 0X1F)\n"
                         "    .ATTR(b, Int, 0b101)\n"
                         "    .ATTR(bu, Int, 0B101)\n"
                         "    .ATTR(sep, Int, 1'000'000)\n"
                         "    .ATTR(hsep, Int, 0xFF'FF)\n"
                         "    .ATTR(fsep, Float, 1'000.5)\n"
                         "    .OP_END_FACTORY_REG(A);\n")
        self.assertEqual([(n, v) for n, _, _, v in a["attrs"]],
                         [("h", 31), ("hu", 31), ("b", 5), ("bu", 5), ("sep", 1000000),
                          ("hsep", 0xFFFF), ("fsep", 1000.5)])

    def test_three_adjacent_literals_make_one_type_name(self):
        """An io's type of three adjacent string literals ("T" "1" "0") is
        one type name, T10, as C++ joins them, on an input and an output
        (lifetime pass, session 15: bridge.lp._reg_op_cpp.adjacent_two_only)."""
        a, = self.read_h('REG_OP(A)\n'
                         '    .INPUT(x, "T" "1" "0")\n'
                         '    .OUTPUT(y, "T" "1" "0")\n'
                         '    .DATATYPE(T10, TensorType({DT_FLOAT, DT_INT64}))\n'
                         '    .OP_END_FACTORY_REG(A);\n')
        self.assertEqual((a["input_dtypes"], a["output_dtypes"]),
                         ([(F32 | I64, "T10")], [(F32 | I64, "T10")]))

    def test_escapes(self):
        r"""\101 is octal, \x263a takes every hex digit that follows."""
        a, = self.read_h('REG_OP(A)\n'
                         '    .ATTR(s, String, "\\101\\x263a")\n'
                         '    .OP_END_FACTORY_REG(A);\n')
        self.assertEqual(a["attrs"][0][3], "A\u263a")

    def test_conditional_blocks(self):
        """#if 0 / #if false / #elif 0 blocks are skipped, one branch of an
        #if chain is read, a block inside a skipped one stays skipped."""
        def ops(text):
            return [r["op_type"] for r in self.read_h(text)]

        def reg(name):
            return "REG_OP(%s).OP_END_FACTORY_REG(%s);\n" % (name, name)
        self.assertEqual(ops("#if 0\n" + reg("A") + "#elif 0\n" + reg("B") + "#else\n" +
                             reg("C") + "#endif\n"), ["C"])
        self.assertEqual(ops("#if 1\n" + reg("A") + "#elif 1\n" + reg("B") + "#else\n" +
                             reg("C") + "#endif\n"), ["A"])
        self.assertEqual(ops("#if false\n" + reg("A") + "#endif\n" + reg("B")), ["B"])
        self.assertEqual(ops("#if 0\n#if 1\n" + reg("A") + "#endif\n" + reg("B") +
                             "#endif\n" + reg("C")), ["C"])


    def test_type_names_lines_and_dt_max(self):
        """Adjacent string literals make one type name; a line continuation
        still counts its line; DT_MAX is no data type (a ReadError at its
        line, not another exception)."""
        a, b = self.read_h('REG_OP(A) \\\n'
                           '    .INPUT(x, "T" "1")\n'
                           '    .DATATYPE(T1, TensorType({DT_FLOAT}))\n'
                           '    .OP_END_FACTORY_REG(A);\n'
                           'REG_OP(B).OP_END_FACTORY_REG(B);\n')
        self.assertEqual(a["input_dtypes"], [(F32, "T1")])
        self.assertEqual((a["line"], b["line"]), (1, 5))
        with TempDir() as d:
            read_error(self, d, "REG_OP(A)\n    .INPUT(x, TensorType({DT_FLOAT,\n"
                       "        DT_MAX}))\n    .OP_END_FACTORY_REG(A);\n", 3,
                       "'DT_MAX' is not a GE data type")


    def test_type_sets_escapes_and_lists(self):
        r"""A parenthesised group of types, a named set called with () inside
        a list, a \U escape of eight digits and a list default with a
        trailing comma read as C++ reads them."""
        a, = self.read_h('REG_OP(A)\n'
                         '    .INPUT(x, TensorType({(DT_FLOAT, DT_INT8), DT_BOOL}))\n'
                         '    .INPUT(i, TensorType({IndexNumberType(), DT_UINT8}))\n'
                         '    .ATTR(s, String, "\\U0001F600")\n'
                         '    .ATTR(axes, ListInt, {0, 1,})\n'
                         '    .OP_END_FACTORY_REG(A);\n')
        self.assertEqual(a["input_dtypes"], [(F32 | I8 | BOOL, ""), (I32 | I64 | U8, "")])
        self.assertEqual([(n, v) for n, _, _, v in a["attrs"]],
                         [("s", "\U0001F600"), ("axes", [0, 1])])
        self.assertIsNone(a["unusable"])



class StateTest(unittest.TestCase):
    """Issue 31's state pass (session 11): what one declaration of a file
    leaves to the next (tests/mutation/mutants.txt, bridge.st.ge_host_proto.*)."""

    def test_every_declaration_of_a_file_is_resolved_at_read(self):
        """A type name no DATATYPE declares fails the read at its line in
        the second REG_OP of a file as in the first (Python form and
        header), not later when the host asks for the prototype."""
        for name, text, line in (
                ("ops.reg_op", 'REG_OP("A").INPUT("x")\nREG_OP("B").INPUT("y", "T")\n', 2),
                ("ops.h", "REG_OP(A)\n.INPUT(x, TensorType({DT_FLOAT}))\n"
                          ".OP_END_FACTORY_REG(A)\nREG_OP(B)\n.INPUT(y, \"T\")\n"
                          ".OP_END_FACTORY_REG(B)\n", 5)):
            with self.subTest(name=name), TempDir() as d:
                read_error(self, d, text, line, "REG_OP('B')", "input 'y' is of type 'T'",
                           name=name)

    def test_a_datatype_belongs_to_its_own_declaration(self):
        """DATATYPE(T) of one REG_OP is not the next one's: B's use of T
        is refused, A's own is resolved (and an output's type goes to the
        output side)."""
        with TempDir() as d:
            read_error(self, d, 'REG_OP("A").DATATYPE("T", [DataType.DT_INT8]).OUTPUT("y", "T")\n'
                       'REG_OP("B").INPUT("x", "T")\n', 2, "REG_OP('B')",
                       "input 'x' is of type 'T'", name="ops.reg_op")
            a, = [r.info() for r in host_proto.read(write(
                d, "ok.reg_op", 'REG_OP("A").INPUT("x").DATATYPE("T", [DataType.DT_INT8]) \\\n'
                '    .OUTPUT("y", "T").OUTPUT("z", [DataType.DT_INT32])\n'))]
        self.assertEqual((a["input_dtypes"], a["output_dtypes"]), (None, [(I8, "T"), (I32, "")]))


    def test_each_named_set_of_the_python_form_is_its_own(self):
        """TensorType.ALL(), .FLOAT(), ... of the Python form are each the
        named set of that name (as the header's TensorType::ALL()), not
        one set for all: two inputs typed by two of them differ."""
        for name, members in host_proto.NAMED_SETS.items():
            with self.subTest(name=name):
                self.assertEqual(getattr(host_proto.TensorType, name)().types, members)
        with TempDir() as d:
            a, = [r.info() for r in host_proto.read(write(
                d, "ops.reg_op", 'REG_OP("A").INPUT("x", TensorType.SignedDataType()) \\\n'
                '    .INPUT("y", TensorType.UnsignedDataType())\n'))]
        self.assertEqual(a["input_dtypes"], [(I8 | I16 | I32 | I64, ""),
                                             (U8 | U16 | U32 | U64, "")])

    def test_lines_after_a_raw_string_and_a_block_comment(self):
        """The line count carries past a raw string and a block comment
        over several lines: a later REG_OP's line and a later error's are
        the file's (and the raw string keeps its newline)."""
        text = ('REG_OP(A)\n    .ATTR(doc, String, R"(line one\nline two)")\n'
                '    .OP_END_FACTORY_REG(A)\n/* a\n   b */\nREG_OP(B)\n'
                '    .OUTPUT(y, TensorType({DT_INT8}))\n    .OP_END_FACTORY_REG(B)\n')
        with TempDir() as d:
            a, b = read_text(d, text)
            self.assertEqual((a.line, b.line), (1, 7))
            self.assertEqual(a.info()["attrs"], [("doc", AttrType.STR, False,
                                                  "line one\nline two")])
            read_error(self, d, text.replace("TensorType({DT_INT8})", '"T"'), 8,
                       "output 'y' is of type 'T'")


class ConfigurationTest(unittest.TestCase):
    """Untested partitions of a header's default values (configuration
    pass, session 12): more than two adjacent string literals, the lowest
    double beside the largest."""

    def read_h(self, text):
        with TempDir() as d:
            return [r.info() for r in read_text(d, text)]

    def test_every_adjacent_string_literal_is_joined(self):
        a, = self.read_h('REG_OP(A)\n'
                         '    .ATTR(one, String, "a")\n'
                         '    .ATTR(two, String, "a" "b")\n'
                         '    .ATTR(three, String, "a" "b" "c")\n'
                         '    .ATTR(four, ListString, {"x" "y" "z", "w"})\n'
                         '    .OP_END_FACTORY_REG(A);\n')
        self.assertIsNone(a["unusable"])
        self.assertEqual([(n, v) for n, _, _, v in a["attrs"]],
                         [("one", "a"), ("two", "ab"), ("three", "abc"),
                          ("four", ["xyz", "w"])])

    def test_the_lowest_double_does_not_fit_in_float32(self):
        # numeric_limits<double>::lowest() is -DBL_MAX, as max() is DBL_MAX:
        # both are refused for a Float attribute, not taken as float's.
        with TempDir() as d:
            for limit in ("max", "lowest"):
                read_error(self, d, "REG_OP(A)\n .ATTR(f, Float, std::numeric_limits<double>::"
                           "%s())\n.OP_END_FACTORY_REG(A);" % limit, 2,
                           "does not fit in float32")
        a, = self.read_h("REG_OP(A)\n"
                         "    .ATTR(f, Float, std::numeric_limits<float>::lowest())\n"
                         "    .ATTR(i, Float, std::numeric_limits<double>::infinity())\n"
                         "    .OP_END_FACTORY_REG(A);\n")
        self.assertEqual([v for _, _, _, v in a["attrs"]], [-host_proto.FLT_MAX, math.inf])

    def test_a_type_name_without_a_host_type_names_its_datatype_line(self):
        # Two inputs of one type name whose DATATYPE (declared after them)
        # allows no type libpyop can pass: the REG_OP is unusable, said at
        # the DATATYPE's line (for each use), not at an input's.
        a, = self.read_h("REG_OP(A)\n"
                         "    .INPUT(x, \"T\")\n"
                         "    .INPUT(y, \"T\")\n"
                         "    .OUTPUT(z, TensorType({DT_FLOAT}))\n"
                         "    .DATATYPE(T, TensorType({DT_STRING}))\n"
                         "    .OP_END_FACTORY_REG(A);\n")
        self.assertIsNotNone(a["unusable"])
        for why in a["unusable"].split("; "):
            self.assertTrue(why.startswith("line 5: DATATYPE(T): "), a["unusable"])
        self.assertEqual(a["output_dtypes"], [(F32, "")])


class AttrTypeNameTest(unittest.TestCase):
    """Each GE attribute type name a REG_OP may use is registered with the
    pyop type of its values (batch 11 survivor, session 12: a
    ListAscendString attribute registered as one string,
    bridge.b11.host_proto.list_ascend_string_scalar), in both forms, with
    and without a default."""

    # GE type name -> (pyop type, a default as C++ writes it, as Python
    # writes it, the value the host gets).
    TYPES = [
        ("Int", AttrType.INT, "3", "3", 3),
        ("Float", AttrType.FLOAT, "0.5", "0.5", 0.5),
        ("Bool", AttrType.BOOL, "true", "True", True),
        ("String", AttrType.STR, '"s"', '"s"', "s"),
        ("AscendString", AttrType.STR, '"as"', '"as"', "as"),
        ("Type", AttrType.DTYPE, "DT_INT8", "DataType.DT_INT8", pyop.DataType.int8),
        ("ListInt", AttrType.LIST_INT, "{1, 2}", "[1, 2]", [1, 2]),
        ("ListFloat", AttrType.LIST_FLOAT, "{0.5}", "[0.5]", [0.5]),
        ("ListBool", AttrType.LIST_BOOL, "{false}", "[False]", [False]),
        ("ListString", AttrType.LIST_STR, '{"a", "b"}', '["a", "b"]', ["a", "b"]),
        ("ListAscendString", AttrType.LIST_STR, '{"c", "d"}', '["c", "d"]', ["c", "d"]),
        ("ListType", AttrType.LIST_DTYPE, "{DT_FLOAT}", "[DataType.DT_FLOAT]",
         [pyop.DataType.float32]),
        ("ListListInt", AttrType.LIST_LIST_INT, "{{1}, {}}", "[[1], []]", [[1], []]),
    ]

    def test_every_type_name_in_a_header(self):
        lines = ["REG_OP(A)"]
        for i, (name, _, cpp, _, _) in enumerate(self.TYPES):
            lines.append("    .ATTR(d%d, %s, %s)" % (i, name, cpp))
            lines.append("    .REQUIRED_ATTR(r%d, %s)" % (i, name))
        lines.append("    .REQUIRED_ATTR(t, Tensor)")
        lines.append("    .OP_END_FACTORY_REG(A);\n")
        with TempDir() as d:
            a, = [r.info() for r in read_text(d, "\n".join(lines))]
        self.assertIsNone(a["unusable"])
        want = []
        for i, (_, at, _, _, value) in enumerate(self.TYPES):
            want += [("d%d" % i, at, False, value), ("r%d" % i, at, True, None)]
        want.append(("t", AttrType.TENSOR, True, None))
        self.assertEqual(a["attrs"], want)

    def test_every_type_name_in_the_python_form(self):
        text = 'REG_OP("A")'
        for i, (name, _, _, py, _) in enumerate(self.TYPES):
            text += ' \\\n    .ATTR("d%d", "%s", %s)' % (i, name, py)
            text += ' \\\n    .REQUIRED_ATTR("r%d", "%s")' % (i, name)
        text += "\n"
        with TempDir() as d:
            a, = [r.info() for r in host_proto.read(write(d, "ops.reg_op", text))]
        want = []
        for i, (_, at, _, _, value) in enumerate(self.TYPES):
            want += [("d%d" % i, at, False, value), ("r%d" % i, at, True, None)]
        self.assertEqual(a["attrs"], want)

    def test_a_list_default_of_a_scalar_string_type_is_refused(self):
        # The other way round: a list is no default of an AscendString.
        with TempDir() as d:
            read_error(self, d, 'REG_OP(A)\n    .ATTR(s, AscendString, {"a"})\n'
                       '    .OP_END_FACTORY_REG(A);\n', 2, "ATTR('s'): default ['a'] is not a str")



class DataflowTest(unittest.TestCase):
    """Each element of a list default followed to what the host gets
    (dataflow pass, session 13; tests/mutation/mutants.txt, bridge.df.*)."""

    def test_list_type_defaults_are_pyop_data_types(self):
        """A ListType (and Type) default's GE members become pyop's data
        types by name (GE's numbers differ: DT_INT8 is 2, pyop's int8 4)."""
        with TempDir() as d:
            a, = [r.info() for r in read_text(
                d, "REG_OP(A)\n    .ATTR(dts, ListType, {DT_INT8, DT_BF16, DT_UINT64})\n"
                   "    .ATTR(dt, Type, DT_INT16)\n    .OP_END_FACTORY_REG(A);\n")]
        (_, _, _, dts), (_, _, _, dt) = a["attrs"]
        self.assertEqual([(type(x), x.name) for x in dts],
                         [(pyop.DataType, "int8"), (pyop.DataType, "bfloat16"),
                          (pyop.DataType, "uint64")])
        self.assertEqual((type(dt), dt.name), (pyop.DataType, "int16"))

    def test_every_string_of_a_list_default_is_checked(self):
        """A NUL in the second string of a ListString default is refused as
        in a String default (the host would cut that string at the NUL)."""
        with TempDir() as d:
            read_error(self, d, 'REG_OP(A)\n    .ATTR(names, ListString, {"a", "b\\0c"})\n'
                                '    .OP_END_FACTORY_REG(A);\n', 2, "ATTR('names')",
                       "holds a NUL character")
            read_error(self, d, 'REG_OP("A").ATTR("names", "ListString", ["a", "b\\0c"])\n',
                       1, "holds a NUL character", name="ops.reg_op")


class BothSidesTest(unittest.TestCase):
    """Every entry of a table, both sides of a check (both-sides pass,
    session 14; tests/mutation/mutants.txt, bridge.bs.*)."""

    def test_every_header_suffix_in_either_case(self):
        """Each suffix docs/ge-plugins.md lists (the first, the last, each
        between), in lower or upper case, reads a file as a C++ header;
        any other name reads it as the Python form (where the header's
        text is a ReadError naming its line)."""
        import re as _re
        with open(os.path.join(support.ROOT, "docs", "ge-plugins.md"), encoding="utf-8") as f:
            doc = f.read()
        m = _re.search(r"\*\*C\+\+ headers\*\* \(a name ending in ([^)]*)\)", doc)
        listed = tuple(_re.findall(r"`(\.[a-z]+)`", m.group(1)))
        self.assertEqual(listed, host_proto.CPP_SUFFIXES)
        text = ("REG_OP(A)\n.INPUT(x, TensorType({DT_FLOAT}))\n"
                ".OUTPUT(y, TensorType({DT_FLOAT}))\n.OP_END_FACTORY_REG(A)\n")
        with TempDir() as d:
            for suffix in listed + tuple(x.upper() for x in listed):
                with self.subTest(suffix):
                    got = read_text(d, text, name="ops" + suffix)
                    self.assertEqual([(r.op_type, r.info()["inputs"]) for r in got],
                                     [("A", [("x", IoKind.REQUIRED)])])
            for name in ("ops.reg_op", "ops.hxx.txt", "ops.c"):
                with self.subTest(name):
                    read_error(self, d, text, 1, "is C++ REG_OP syntax", name=name)

    def test_every_named_constant_and_limit(self):
        """Each named constant a default may use (GE's graph/types.h, C's
        limits) and each numeric_limits<float> member gives its value,
        the first and the last of each table too; the tables hold these
        names and no others."""
        want = {"UNKNOWN_SHAPE": ("ListInt", [-1]), "UNKNOWN_RANK": ("ListInt", [-2]),
                "UNKNOWN_DIM": ("Int", -1), "UNKNOWN_DIM_NUM": ("Int", -2),
                "INFINITY": ("Float", math.inf), "NAN": ("Float", math.nan),
                "HUGE_VALF": ("Float", math.inf), "HUGE_VAL": ("Float", math.inf),
                "FLT_MAX": ("Float", 3.4028234663852886e38),
                "FLT_MIN": ("Float", 1.1754943508222875e-38),
                "true": ("Bool", True), "false": ("Bool", False),
                "INT64_MAX": ("Int", (1 << 63) - 1), "INT64_MIN": ("Int", -(1 << 63)),
                "INT32_MAX": ("Int", (1 << 31) - 1), "INT32_MIN": ("Int", -(1 << 31))}
        limits = {"infinity": math.inf, "quiet_NaN": math.nan,
                  "max": 3.4028234663852886e38, "lowest": -3.4028234663852886e38}
        self.assertEqual(sorted(_reg_op_cpp._CONSTANTS), sorted(want))
        self.assertEqual(sorted(_reg_op_cpp._LIMITS), sorted(limits))
        cases = [(n, t, v, n) for n, (t, v) in want.items()]
        cases += [("std::numeric_limits<float>::%s()" % n, "Float", v, n)
                  for n, v in limits.items()]
        with TempDir() as d:
            for expr, type_name, value, label in cases:
                with self.subTest(label):
                    got = read_text(d, "REG_OP(A)\n.INPUT(x, TensorType({DT_FLOAT}))\n"
                                       ".ATTR(a, %s, %s)\n.OP_END_FACTORY_REG(A)\n"
                                       % (type_name, expr))
                    (name, _, required, default), = got[0].info()["attrs"]
                    self.assertEqual((name, required), ("a", False))
                    if isinstance(value, float) and math.isnan(value):
                        self.assertTrue(math.isnan(default), default)
                    else:
                        self.assertEqual(default, value)
                        self.assertIs(type(default), type(value))

    def test_every_type_without_a_pyop_form_keeps_the_reg_op(self):
        """Each GE attribute type libpyop has no form for (the first and
        the last of the list) keeps its REG_OP in a header, unusable and
        saying why, where a type GE does not have fails the read."""
        self.assertEqual(host_proto.NO_FORM_TYPES,
                         ("NamedAttrs", "ListNamedAttrs", "ListTensor", "Bytes"))
        with TempDir() as d:
            for t in host_proto.NO_FORM_TYPES:
                with self.subTest(t):
                    got = read_text(d, "REG_OP(A)\n.INPUT(x, TensorType({DT_FLOAT}))\n"
                                       ".REQUIRED_ATTR(a, %s)\n.OP_END_FACTORY_REG(A)\n" % t)
                    info = got[0].info()
                    self.assertEqual((info["op_type"], info["attrs"]), ("A", []))
                    self.assertEqual(info["unusable"], "line 3: attr 'a': unsupported custom op "
                                     "runtime attr type: %r (GE's %s has no pyop form)" % (t, t))
            read_error(self, d, "REG_OP(A)\n.INPUT(x, TensorType({DT_FLOAT}))\n"
                       ".REQUIRED_ATTR(a, Blob)\n.OP_END_FACTORY_REG(A)\n", 3,
                       "unsupported custom op runtime attr type: 'Blob'")

    def test_every_cpp_line_names_its_line(self):
        """A file read as the Python form that fails on C++ syntax names
        the first line only a C++ header has, for each such start of a
        line (the first and the last of the list): the line of the hint,
        not the later REG_OP line."""
        self.assertEqual(host_proto._CPP_HINTS, ("#include", "#ifndef", "#define", "#pragma",
                                                 "namespace ", "//", "/*"))
        with TempDir() as d:
            for hint in host_proto._CPP_HINTS:
                with self.subTest(hint):
                    text = "x = 1\n%s something\nREG_OP(A).INPUT(x)\n" % hint.strip()
                    read_error(self, d, text, 2, "line 2 is C++ REG_OP syntax",
                               name="ops.reg_op")

    def test_every_named_set_the_docs_list_reads(self):
        """The named type sets docs/ge-plugins.md lists are the table's, in
        its order (ALL first, FLOAT last), and each reads in a header
        (TensorType::NAME()) as its members; FLOAT is GE's {DT_FLOAT,
        DT_FLOAT16, DT_BF16}."""
        import re as _re
        with open(os.path.join(support.ROOT, "docs", "ge-plugins.md"), encoding="utf-8") as f:
            doc = f.read()
        m = _re.search(r"The named type sets are GE's \(`graph/types.h`\): (.*?), written",
                       doc, _re.S)
        listed = _re.findall(r"`(\w+)`", m.group(1))
        self.assertEqual(listed, list(host_proto.NAMED_SETS))
        self.assertEqual(host_proto.NAMED_SETS["FLOAT"],
                         {DataType.DT_FLOAT, DataType.DT_FLOAT16, DataType.DT_BF16})
        with TempDir() as d:
            for name in listed:
                with self.subTest(name):
                    got = read_text(d, "REG_OP(A)\n.INPUT(x, TensorType::%s())\n"
                                       ".OP_END_FACTORY_REG(A)\n" % name)
                    mask = host_proto.TensorType(host_proto.NAMED_SETS[name]).pyop_mask()[0]
                    info = got[0].info()
                    if mask:
                        self.assertEqual((info["input_dtypes"], info["unusable"]),
                                         ([(mask, "")], None))
                    else:  # no member has a host form (QuantifiedType, ComplexDataType)
                        self.assertIn("allows no data type libpyop can pass", info["unusable"])
            f32 = read_text(d, "REG_OP(A)\n.INPUT(x, TensorType::FLOAT())\n"
                               ".OP_END_FACTORY_REG(A)\n")[0].info()["input_dtypes"]
            bits = [1 << int(pyop.DataType[n]) for n in ("float32", "float16", "bfloat16")]
            self.assertEqual(f32, [(bits[0] | bits[1] | bits[2], "")])

    def test_every_simple_escape(self):
        r"""Each of C++'s simple escapes in a String default (the first,
        \n, and the last, \?, the one a header writes to avoid a trigraph)
        is its character; \0 is a NUL, which a String default refuses."""
        want = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"',
                "a": "\a", "b": "\b", "f": "\f", "v": "\v", "?": "?"}
        with TempDir() as d:
            for esc, ch in want.items():
                with self.subTest(esc):
                    got = read_text(d, 'REG_OP(A)\n.ATTR(s, String, "x\\%s?y")\n'
                                       '.OP_END_FACTORY_REG(A)\n' % esc)
                    self.assertEqual(got[0].info()["attrs"][0][3], "x%s?y" % ch)
            read_error(self, d, 'REG_OP(A)\n.ATTR(s, String, "x\\0y")\n'
                       '.OP_END_FACTORY_REG(A)\n', 2, "holds a NUL character")


if __name__ == "__main__":
    unittest.main()
