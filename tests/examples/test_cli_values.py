"""How the `pyop` command reads and writes values, at the edges the mutation
check (tests/mutation) found untested: bfloat16 rounding, True where a
number is meant (in a plugin's samples), and the --json schemas' behaviour
fields beside the words. Driven by ctest (tests/examples/CMakeLists.txt):
PYOP_TEST_CLI is the build tree's bin/pyop. Standard library only."""

import json
import os
import shutil
import struct
import subprocess
import tempfile
import textwrap
import unittest

ENV = os.environ

COPY = '''
    import ctypes
    import pyop
    from pyop import Tensor, TensorDesc

    @pyop.register_op(op_type="Copy")
    def copy(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="Copy")
    class CopyImpl:
        def execute(self, x: Tensor) -> None:
            out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
            ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
    '''

ATTRS = '''
    import ctypes
    import pyop
    from pyop import DataType, Tensor, TensorDesc

    @pyop.register_op(op_type="Echo")
    def echo(x: TensorDesc, *, k: int = 0) -> TensorDesc:
        return TensorDesc([1], DataType.int64)

    @pyop.register_op_impl(op_type="Echo")
    class EchoImpl:
        def execute(self, x: Tensor, *, k: int) -> None:
            out = pyop.get_execute_ctx().malloc_output_tensor(0, [1], DataType.int64)
            ctypes.c_int64.from_address(out.data_ptr).value = k
    '''

SECOND_FAILS = '''
    import ctypes
    import pyop
    from pyop import Tensor, TensorDesc

    @pyop.register_op(op_type="SecondFails")
    def second_fails(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="SecondFails", deterministic=False)
    class SecondFailsImpl:
        def __init__(self):
            self.calls = 0

        def execute(self, x: Tensor) -> None:
            self.calls += 1
            if self.calls == 2:
                raise RuntimeError("broken on the second call")
            out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
            ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
    '''

SAMPLED = '''
    import ctypes
    import pyop
    from pyop import Tensor, TensorDesc

    @pyop.register_op(op_type="Sampled")
    def sampled(x: TensorDesc, *, k: int = 1, f: float = 0.5) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="Sampled")
    class SampledImpl:
        def execute(self, x: Tensor, *, k: int, f: float) -> None:
            out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
            ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)

    @pyop.register_samples(op_type="Sampled")
    def samples():
        return [%s]
    '''


def _bf16(x):
    """x as bfloat16, rounded to nearest even (what a bfloat16 input holds)."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


class CliValuesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cli = ENV.get("PYOP_TEST_CLI")
        if not cls.cli:
            raise unittest.SkipTest("PYOP_TEST_CLI is not set (run through ctest)")
        cls.tmp = tempfile.mkdtemp(prefix="pyop-cli-values-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def plugin(self, name, text):
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name + ".py"), "w") as f:
            f.write(textwrap.dedent(text))
        return d

    def pyop(self, opp, *args, timeout=300):
        env = dict(ENV, PYTHONDONTWRITEBYTECODE="1", ASCEND_CUSTOM_OPP_PATH=opp)
        env.pop("PYOP_PYTHON", None)
        return subprocess.run([self.cli] + list(args), capture_output=True, text=True,
                              env=env, timeout=timeout)

    def test_bfloat16_rounds_to_nearest_even(self):
        # 1 + 3/256 lies halfway between 1 + 2/256 and 1 + 4/256: to the even
        # one (1 + 4/256); 1 + 1/256 halfway to 1 (even); 1 + 3/512 nearer
        # 1 + 4/512. Truncating would give 1 + 2/256, 1, 1.
        d = self.plugin("copy", COPY)
        given = [1 + 3 / 256, 1 + 1 / 256, 1 + 3 / 512, -2.0078125]
        r = self.pyop(d, "run", "Copy", "--json", "--input",
                      "x=bfloat16[4]:" + ",".join(repr(v) for v in given))
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)["outputs"][0]
        self.assertEqual((out["dtype"], out["shape"]), ("bfloat16", [4]))
        self.assertEqual(out["values"], [_bf16(v) for v in given])
        self.assertEqual(out["values"], [1 + 4 / 256, 1.0, 1 + 4 / 512, -2.0])

    def test_bfloat16_nan_stays_nan(self):
        """A NaN written as bfloat16 is a NaN, an infinity infinite, a finite
        value beyond bfloat16's range refused (as pyop.elements refuses it),
        never turned into inf, -0.0 or an error about an unsigned short."""
        d = self.plugin("copy", COPY)
        r = self.pyop(d, "run", "Copy", "--json", "--input", "x=bfloat16[4]:nan,-nan,inf,-inf")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["outputs"][0]["values"],
                         ["nan", "nan", "inf", "-inf"])
        r = self.pyop(d, "run", "Copy", "--input", "x=bfloat16[2]:1,3.4e38")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("3.4e+38 is out of range for bfloat16 (largest finite 3.3895313892515355e+38)",
                      r.stderr)
        r = self.pyop(d, "run", "Copy", "--json", "--input", "x=bfloat16[1]:3.3895e38")
        self.assertEqual(json.loads(r.stdout)["outputs"][0]["values"], [3.3895313892515355e+38])
        # NaNs with a payload (a plugin's samples may hold any): the word
        # the command writes, read back as bfloat16, is a NaN of that sign.
        tools = ENV.get("PYOP_TEST_TOOLS")
        if not tools:
            self.skipTest("PYOP_TEST_TOOLS is not set")
        import sys
        sys.path.insert(0, tools)
        try:
            from pyop_cli import binding, values
        finally:
            sys.path.remove(tools)
        bf16 = binding.DTYPES.index("bfloat16")
        for word, sign in ((0x7FF8000000000000, 1), (0x7FFFF00000000000, 1),
                           (0xFFFFF00000000000, -1), (0x7FF0000000000001, 1)):
            nan = struct.unpack("<d", struct.pack("<Q", word))[0]
            out = values.decode_values(bf16, values.encode_values(bf16, [nan]))[0]
            self.assertTrue(out != out, (hex(word), out))
            self.assertEqual(struct.unpack("<H", values.encode_values(bf16, [nan]))[0] >> 15,
                             0 if sign > 0 else 1, hex(word))

    def test_an_unknown_data_type_is_a_usage_error(self):
        d = self.plugin("copy", COPY)
        r = self.pyop(d, "run", "Copy", "--input", "x=float128[2]:1,2")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("--input x=float128[2]:1,2: unknown data type 'float128'", r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        r = self.pyop(d, "run", "Copy", "--json", "--input", "x=float128[2]:1,2")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(json.loads(r.stdout)["error"]["status"], "usage")

    def test_int_attributes_from_the_command_line(self):
        # int(text, 0): hex and octal literals; int64's range, one past it
        # refused as usage.
        d = self.plugin("echo", ATTRS)
        for text, want in (("0x10", 16), ("-0o7", -7), ("9223372036854775807", (1 << 63) - 1),
                           ("-9223372036854775808", -(1 << 63))):
            with self.subTest(text):
                r = self.pyop(d, "run", "Echo", "--json", "--input", "x=float32[1]:1",
                              "--attr", "k=" + text)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(json.loads(r.stdout)["outputs"][0]["values"], [want])
        for text in ("9223372036854775808", "-9223372036854775809"):
            with self.subTest(text):
                r = self.pyop(d, "run", "Echo", "--json", "--input", "x=float32[1]:1",
                              "--attr", "k=" + text)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                err = json.loads(r.stdout)["error"]
                self.assertEqual(err["status"], "usage")
                self.assertIn("is outside int64", err["message"])

    def test_counts_are_int64(self):
        d = self.plugin("copy", COPY)
        for opt, value, code in (("--calls", str(1 << 64), 2), ("--repeat", str(1 << 63), 2),
                                 ("--calls", "0", 2), ("--calls", "3", 0)):
            with self.subTest((opt, value)):
                # (a count let through would run for ever: a minute is plenty)
                r = self.pyop(d, "bench", "Copy", "--input", "x=float32[2]:1,2", opt, value,
                              "--repeat" if opt == "--calls" else "--calls", "1", timeout=60)
                self.assertEqual(r.returncode, code, r.stdout + r.stderr)
                if code:
                    self.assertIn("is not an integer >= ", r.stderr)

    def test_an_empty_path_is_said_to_be_empty(self):
        for value in (":", "::", ""):
            with self.subTest(repr(value)):
                r = self.pyop(value, "run", "Nothing", "--input", "x=float32[1]:1")
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn('no op "Nothing" is registered (ASCEND_CUSTOM_OPP_PATH is empty, '
                              'so no plugins were loaded)', r.stderr)

    def test_an_op_that_fails_on_its_second_run_fails_the_check(self):
        # deterministic=False: the runs' bytes are not compared, so only the
        # second run's own failure can fail the op.
        d = self.plugin("second", SECOND_FAILS)
        r = self.pyop(d, "check", "--json", d)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        data = json.loads(r.stdout)
        self.assertEqual((data["failed"], data["ops"][0]["status"]), (1, "failed"))
        self.assertTrue(any("the first run succeeded, the second on the same instance failed"
                            in p and "broken on the second call" in p
                            for p in data["ops"][0]["problems"]), data["ops"][0]["problems"])

    def test_true_is_not_a_number_in_samples(self):
        cases = (
            ('{"inputs": {"x": ("int32", [2], [True, 1])}}', "True is not an int32 value"),
            ('{"inputs": {"x": ("float32", [2], [1, 2])}, "attrs": {"k": True}}',
             "attr k (int): True is not an int"),
            ('{"inputs": {"x": ("float32", [2], [1, 2])}, "attrs": {"f": True}}',
             "attr f (float): True is not a number"),
        )
        for n, (case, want) in enumerate(cases):
            with self.subTest(want):
                d = self.plugin("sampled%d" % n, SAMPLED % case)
                r = self.pyop(d, "check", "--json", d)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                data = json.loads(r.stdout)
                self.assertEqual(data["failed"], 1)
                op = data["ops"][0]
                self.assertEqual((op["op_type"], op["status"], op["inputs"]),
                                 ("Sampled", "failed", "samples"))
                self.assertEqual(len(op["problems"]), 1, op["problems"])
                self.assertIn(want, op["problems"][0])
        # The same numbers as numbers are fine.
        d = self.plugin("sampled_ok", SAMPLED % '{"inputs": {"x": ("int32", [2], [0, 1])}, '
                        '"attrs": {"k": 1, "f": 1}}')
        r = self.pyop(d, "check", "--json", d)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(json.loads(r.stdout)["ops"][0]["status"], "ok")


if __name__ == "__main__":
    unittest.main(verbosity=2)
