"""Both sides of each check, every configuration, every end of a table,
the second time (the both-sides pass, session 14; tests/mutation/
mutants.txt, bridge.bs.*): a rule held to the sibling input it was written
for too, a registration of a subclass kept apart from its base's."""

import json
import os
import sys
import unittest

import support  # noqa: F401  (makes bridge/python importable)
from support import TempDir
import pyop
import pyop.testing as pt
from pyop import Tensor
from pyop._registry import collecting
from test_opcheck import FAKE, _executable


class SubclassRegistrationTest(unittest.TestCase):
    def test_a_subclass_lists_its_own_registrations_only(self):
        """__pyop_descriptors__ (what pyop list and check read: every op
        type the class was registered for) holds the class's own
        registrations: a subclass registered for another op type does not
        list its base's, and the base keeps its own after it."""
        with collecting() as coll:
            @pyop.register_op_impl(op_type="BaseOp")
            class Base:
                def execute(self, x: Tensor) -> None:
                    pass

            @pyop.register_op_impl(op_type="SubOp")
            class Sub(Base):
                pass

            pyop.register_op_impl(op_type="SubOp2")(Sub)
        self.assertEqual([d.op_type for d in Base.__pyop_descriptors__], ["BaseOp"])
        self.assertEqual([d.op_type for d in Sub.__pyop_descriptors__], ["SubOp", "SubOp2"])
        self.assertIs(Sub.__pyop_descriptors__[-1], Sub.__pyop_descriptor__)
        self.assertIs(Base.__pyop_descriptors__[0], coll.impls["BaseOp"])
        self.assertEqual({d.cls for d in Sub.__pyop_descriptors__}, {Sub})


class OpcheckBothSidesTest(unittest.TestCase):
    """pyop.testing.opcheck against test_opcheck's stand-in command: a
    dynamic input's tensors given as a tuple are passed as a list's are,
    every op of the report that is missing is named."""

    def setUp(self):
        self._tmp = TempDir()
        self.dir = self._tmp.__enter__()
        self.cli = _executable(os.path.join(self.dir, "pyop"), FAKE % sys.executable)
        self.argv_file = os.path.join(self.dir, "argv.json")
        self._env = {k: os.environ.get(k) for k in
                     ("FAKE_PYOP_ARGV", "FAKE_PYOP_OUT", "FAKE_PYOP_ERR", "FAKE_PYOP_RC")}
        os.environ["FAKE_PYOP_ARGV"] = self.argv_file

    def tearDown(self):
        for k, v in self._env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._tmp.__exit__(None, None, None)

    def answer(self, report, rc=0):
        os.environ["FAKE_PYOP_OUT"] = json.dumps(report)
        os.environ["FAKE_PYOP_RC"] = str(rc)
        os.environ["FAKE_PYOP_ERR"] = ""

    def argv(self):
        with open(self.argv_file) as f:
            return json.load(f)["argv"]

    def test_dynamic_input_as_tuple_or_list(self):
        """A dynamic input's tensors as a tuple give one --input each, as
        a list does (not one --input holding the tuple's repr); one value
        alone gives one."""
        self.answer({"ops": []})
        want = ["check", "--json", "ops", "A", "--input", "xs=int8[1]:1",
                "--input", "xs=int8[1]:2", "--input", "y=int8[1]:3"]
        for xs in (("int8[1]:1", "int8[1]:2"), ["int8[1]:1", "int8[1]:2"]):
            with self.subTest(type(xs).__name__):
                pt.opcheck("ops", "A", inputs={"xs": xs, "y": "int8[1]:3"}, cli=self.cli)
                self.assertEqual(self.argv(), want)

    def test_every_missing_op_is_named(self):
        """Each op the report lists as missing is named in the error, the
        last as the first."""
        report = {"ops": [], "missing_ops": ["Gone1", "Gone2", "Gone3"]}
        self.answer(report, 1)
        with self.assertRaises(pt.OpCheckError) as cm:
            pt.opcheck("ops", ["Gone1", "Gone2", "Gone3"], cli=self.cli)
        self.assertEqual(cm.exception.report, report)
        self.assertEqual(str(cm.exception).splitlines()[1:],
                         ["Gone1: not found", "Gone2: not found", "Gone3: not found"])


class DigestOncePerLoadTest(unittest.TestCase):
    def test_a_file_is_read_once_per_load(self):
        """A definition's source_digest is its file's as first read in the
        load: a second op of the same file (not compiled by the loader)
        registered after the file changed gets the same digest, and the
        next load reads the file again."""
        import hashlib
        with TempDir() as d:
            path = os.path.join(d, "ops_by_hand.py")
            v1 = b"# version 1\n"
            with open(path, "wb") as f:
                f.write(v1)

            def op(name):
                ns = {}
                exec(compile("def %s(x: pyop.TensorDesc) -> pyop.TensorDesc:\n"
                             "    return x\n" % name, path, "exec"), {"pyop": pyop}, ns)
                return ns[name]
            with collecting() as coll:
                pyop.register_op(op_type="ReadOnce1")(op("first"))
                with open(path, "wb") as f:
                    f.write(b"# version 2\n")
                pyop.register_op(op_type="ReadOnce2")(op("second"))
            want = "sha256:" + hashlib.sha256(v1).hexdigest()
            self.assertEqual([coll.protos[t].source_digest for t in ("ReadOnce1", "ReadOnce2")],
                             [want, want])
            with collecting() as again:
                pyop.register_op(op_type="ReadOnce3")(op("third"))
            self.assertEqual(again.protos["ReadOnce3"].source_digest,
                             "sha256:" + hashlib.sha256(b"# version 2\n").hexdigest())


class ElementsNumbersTest(unittest.TestCase):
    def test_a_bytes_like_value_is_not_a_number(self):
        """Writing a bytes-like value (bytes, bytearray, a memoryview)
        into a bfloat16 tensor's elements is a TypeError, as a float32
        tensor's memoryview of format 'f' refuses it (float() would read
        b"1" as 1.0); the tensor is unchanged."""
        from pyop import DataType
        from pyop._elements import Elements
        words = memoryview(bytearray(4)).cast("H")
        e = Elements(words, DataType.bfloat16)
        f = memoryview(bytearray(4)).cast("f")
        for bad in (b"1", bytearray(b"1"), memoryview(b"1")):
            with self.subTest(type(bad).__name__):
                with self.assertRaises(TypeError):
                    f[0] = bad
                with self.assertRaises(TypeError):
                    e[0] = bad
                self.assertEqual(e.tolist(), [0.0, 0.0])
        e[1] = 1
        self.assertEqual(e.tolist(), [0.0, 1.0])


if __name__ == "__main__":
    unittest.main()
