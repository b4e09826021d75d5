"""pyop.elements' pure-Python parts: the float16/bfloat16 conversions (every
16-bit word, every tie), pyop.Elements as a sequence, and what
pyop.elements refuses. The same accessor on real tensors, through the
bridge: tests/examples/test_elements.py."""
import math
import struct
import unittest
from fractions import Fraction

import support  # noqa: F401  (puts the package on sys.path)
from pyop import DataType, Elements, TensorDesc, elements
from pyop import _elements as el


def words(*vals, readonly=False):
    raw = struct.pack("=%dH" % len(vals), *vals)
    b = bytes(raw) if readonly else bytearray(raw)
    return memoryview(b).cast("H")


class CodecTest(unittest.TestCase):
    def test_every_bfloat16_word_round_trips(self):
        for w in range(0x10000):
            v = el._bf16_to_float(w)
            if math.isnan(v):
                self.assertEqual(el._float_to_bf16(v) & 0x7FC0, 0x7FC0, hex(w))
            else:
                self.assertEqual(el._float_to_bf16(v), w, hex(w))

    def test_bfloat16_rounds_to_nearest_ties_to_even(self):
        # Every pair of neighbouring finite words: the midpoint goes to the
        # even one, anything beyond it to the next.
        for w in list(range(0, 0x7F7F)) + list(range(0x8000, 0xFF7F)):
            a, b = el._bf16_to_float(w), el._bf16_to_float(w + 1)
            mid = (Fraction(a) + Fraction(b)) / 2
            m = float(mid)
            self.assertEqual(Fraction(m), mid)  # exact in a double
            self.assertEqual(el._float_to_bf16(m), w if w % 2 == 0 else w + 1, hex(w))
            towards_b = math.nextafter(m, b)
            self.assertEqual(el._float_to_bf16(towards_b), w + 1, hex(w))
            towards_a = math.nextafter(m, a)
            self.assertEqual(el._float_to_bf16(towards_a), w, hex(w))

    def test_bfloat16_range(self):
        top = el._bf16_to_float(0x7F7F)
        self.assertEqual(el._float_to_bf16(-top), 0xFF7F)
        over = float((Fraction(top) + Fraction(2) ** 120) / 2 + Fraction(top) / 2)  # the tie
        for v in (over, 1e39, -1e39, 1e300):
            with self.assertRaises(OverflowError):
                el._float_to_bf16(v)
        self.assertEqual(el._float_to_bf16(math.inf), 0x7F80)
        self.assertEqual(el._float_to_bf16(-math.inf), 0xFF80)
        self.assertEqual(el._float_to_bf16(-0.0), 0x8000)
        self.assertEqual(el._float_to_bf16(5e-324), 0)  # far below the smallest subnormal
        self.assertTrue(math.isnan(el._bf16_to_float(el._float_to_bf16(-math.nan))))

    def test_float16_is_structs(self):
        for w in range(0x10000):
            v = el._f16_to_float(w)
            self.assertEqual(v if v == v else "nan", struct.unpack("=e", struct.pack("=H", w))[0]
                             if v == v else "nan")
            if v == v:
                self.assertEqual(el._float_to_f16(v), w)
        with self.assertRaises(OverflowError):
            el._float_to_f16(65520.0)

    def test_numbers_only(self):
        for f in (el._float_to_bf16, el._float_to_f16):
            for bad in ("1.5", b"1", None, [1.0]):
                with self.assertRaises(TypeError):
                    f(bad)
            self.assertEqual(f(True), f(1.0))
            self.assertEqual(f(2), f(2.0))


class ElementsTest(unittest.TestCase):
    def test_sequence(self):
        one, two, three = (el._float_to_bf16(v) for v in (1.0, 2.0, 3.0))
        e = Elements(words(one, two, three), DataType.bfloat16)
        self.assertEqual(len(e), 3)
        self.assertEqual((e[0], e[-1]), (1.0, 3.0))
        self.assertEqual(list(e), [1.0, 2.0, 3.0])
        self.assertEqual(e.tolist(), [1.0, 2.0, 3.0])
        self.assertEqual((e.nbytes, e.itemsize, e.readonly, e.dtype), (6, 2, False, DataType.bfloat16))
        e[1] = 0.5
        self.assertEqual(e.tolist(), [1.0, 0.5, 3.0])
        self.assertIsInstance(e[1:], Elements)
        self.assertEqual(e[1:].tolist(), [0.5, 3.0])
        e[:2] = e[1:]  # a copy between two views of one type
        self.assertEqual(e.tolist(), [0.5, 3.0, 3.0])
        with self.assertRaises(IndexError):
            e[3]
        with self.assertRaises(TypeError):
            e[0:1] = [1.0]  # as a memoryview: a slice takes a view, not a list
        with self.assertRaises(ValueError):
            e[0:1] = e[0:2]
        f16 = Elements(words(0x3C00), DataType.float16) if DataType.float16 in el._CODECS else None
        if f16 is not None:
            with self.assertRaises(TypeError):
                e[0:1] = f16[0:1]  # another data type

    def test_read_only_and_released(self):
        e = Elements(words(0x3F80, readonly=True), DataType.bfloat16)
        self.assertTrue(e.readonly)
        with self.assertRaisesRegex(TypeError, "read-only"):
            e[0] = 2.0
        self.assertEqual(e[0], 1.0)
        with e as same:
            self.assertIs(same, e)
        for use in (lambda: e[0], lambda: len(e), lambda: e.tolist(), e.__enter__):
            with self.assertRaises(ValueError):
                use()
        self.assertIn("released", repr(e))

    def test_dtype_given_as_its_number(self):
        """Elements(words, 2): the data type given as its number (the older
        form pyop.elements never uses) is the DataType member, as given by
        name (lifetime pass, session 15: bridge.lp._elements.dtype_int_kept)."""
        e = Elements(words(0x3F80, 0x4000), int(DataType.bfloat16))
        self.assertIs(e.dtype, DataType.bfloat16)
        self.assertIs(e[1:].dtype, DataType.bfloat16)
        self.assertEqual(repr(e), "<pyop.Elements bfloat16[2]>")
        self.assertEqual(e.tolist(), [1.0, 2.0])
        e[0:1] = Elements(words(0x4040), DataType.bfloat16)[0:1]  # one type, either form
        self.assertEqual(e.tolist(), [3.0, 2.0])

    def test_a_slice_is_a_view(self):
        """A slice of Elements reads and writes the same memory as the whole
        (zero-copy, as a memoryview's slice): a write through the slice
        reaches the tensor's words and a later write to the tensor shows in
        the slice; a read-only tensor's slice is read-only (lifetime pass,
        session 15: bridge.lp._elements.slice_copied)."""
        w = words(0x3F80, 0x4000, 0x4040)
        e = Elements(w, DataType.bfloat16)
        tail = e[1:]
        tail[0] = 0.5
        self.assertEqual(e.tolist(), [1.0, 0.5, 3.0])
        self.assertEqual(w[1], 0x3F00)
        e[2] = 4.0
        self.assertEqual(tail.tolist(), [0.5, 4.0])
        ro = Elements(words(0x3F80, 0x4000, readonly=True), DataType.bfloat16)
        self.assertTrue(ro[1:].readonly)
        with self.assertRaisesRegex(TypeError, "read-only"):
            ro[1:][0] = 2.0
        self.assertEqual(ro.tolist(), [1.0, 2.0])

    def test_only_what_it_converts(self):
        with self.assertRaises(TypeError):
            Elements(memoryview(bytearray(4)), DataType.bfloat16)  # format "B"
        with self.assertRaises(TypeError):
            Elements(words(1), DataType.uint16)  # a memoryview serves it

    def test_formats_cover_every_dtype_but_bfloat16(self):
        self.assertEqual(sorted(el.FORMATS), sorted(set(DataType) - {DataType.bfloat16}))
        for d, fmt in el.FORMATS.items():
            self.assertEqual(struct.calcsize(fmt), d.itemsize, d)

    def test_float16_needs_no_conversion_where_memoryview_indexes_it(self):
        try:
            memoryview(bytearray(2)).cast("e")[0]
            indexes = True
        except (ValueError, NotImplementedError):
            indexes = False
        self.assertEqual(DataType.float16 in el._CODECS, not indexes)

    def test_elements_takes_a_tensor(self):
        for bad, words_ in ((TensorDesc((2,), "float32"), "TensorDesc describes a tensor"),
                            (bytearray(4), "got builtins.bytearray"),
                            (memoryview(b"ab"), "got builtins.memoryview")):
            with self.assertRaises(TypeError) as cm:
                elements(bad)
            self.assertIn("pyop.elements() takes a pyop.Tensor", str(cm.exception))
            self.assertIn(words_, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
