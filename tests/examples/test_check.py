"""`pyop check` runs each op the way a host will (issue 19): ops wrong in
exactly one way each, and correct ops that must keep passing.

  sweeps         every data type infer_meta accepts, empty, rank-0 and
                 one-element tensors; the report says which cases ran
  determinism    each case twice on one instance, bytes compared; an op
                 declared nondeterministic is compared by shape only
  mutation       a declared mutated input no run writes is a warning
  concurrency    one instance from several threads at once, compared with
                 the same inputs run alone
  inconclusive   infer_meta refusing every generated input is not a pass
                 (exit 3) and not a failure
  overrun        a write past the end of a buffer is reported, not a crash
  bench          holds the op to the contract as run does

Driven by ctest (tests/examples/CMakeLists.txt): PYOP_TEST_CLI is the build
tree's bin/pyop. Needs only the standard library.
"""

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
import unittest

ENV = os.environ

PLUGINS = {
    "copy_ok.py": '''
        import ctypes
        import pyop
        from pyop import Tensor, TensorDesc

        @pyop.register_op(op_type="CopyOk")
        def copy_ok(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape, x.dtype)

        @pyop.register_op_impl(op_type="CopyOk")
        class CopyOkImpl:
            def execute(self, x: Tensor) -> None:
                out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
                ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
        ''',
    "float_only.py": '''
        import ctypes
        import pyop
        from pyop import DataType, Tensor, TensorDesc

        @pyop.register_op(op_type="FloatOnly")
        def float_only(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape, x.dtype)  # accepts every dtype...

        @pyop.register_op_impl(op_type="FloatOnly")
        class FloatOnlyImpl:
            def execute(self, x: Tensor) -> None:
                out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
                if x.dtype != DataType.float32:  # ...but execute handles float32 only
                    raise TypeError("FloatOnly: no %s" % x.dtype)
                ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
        ''',
    "no_empty.py": '''
        import pyop
        from pyop import Tensor, TensorDesc

        @pyop.register_op(op_type="NoEmpty")
        def no_empty(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape, x.dtype)

        @pyop.register_op_impl(op_type="NoEmpty")
        class NoEmptyImpl:
            def execute(self, x: Tensor) -> None:
                pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
                with memoryview(x) as m, m.cast("B"):  # fails with a 0 in the shape
                    pass
        ''',
    "noisy.py": '''
        import ctypes
        import os
        import pyop
        from pyop import Tensor, TensorDesc

        @pyop.register_op(op_type="Noisy")
        def noisy(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape, x.dtype)

        @pyop.register_op_impl(op_type="Noisy")
        class NoisyImpl:
            def execute(self, x: Tensor) -> None:
                out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
                ctypes.memmove(out.data_ptr, os.urandom(out.nbytes), out.nbytes)

        @pyop.register_op(op_type="NoisyDeclared")
        def noisy_declared(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape, x.dtype)

        @pyop.register_op_impl(op_type="NoisyDeclared", deterministic=False)
        class NoisyDeclaredImpl(NoisyImpl):
            pass
        ''',
    "counter.py": '''
        import ctypes
        import pyop
        from pyop import DataType, Tensor, TensorDesc

        @pyop.register_op(op_type="Counter")
        def counter(x: TensorDesc) -> TensorDesc:
            return TensorDesc([1], DataType.int64)

        @pyop.register_op_impl(op_type="Counter")
        class CounterImpl:
            def __init__(self):
                self.calls = 0

            def execute(self, x: Tensor) -> None:
                self.calls += 1  # a result that depends on earlier calls
                out = pyop.get_execute_ctx().malloc_output_tensor(0, [1], DataType.int64)
                ctypes.c_int64.from_address(out.data_ptr).value = self.calls
        ''',
    "declared_unwritten.py": '''
        import pyop
        from pyop import Tensor, TensorDesc

        @pyop.register_op(op_type="DeclaredUnwritten", mutates_args=("x",))
        def declared_unwritten(x: TensorDesc) -> None:
            return None

        @pyop.register_op_impl(op_type="DeclaredUnwritten")
        class DeclaredUnwrittenImpl:
            def execute(self, x: Tensor) -> None:
                pass  # declared in mutates_args, never written
        ''',
    "racy.py": '''
        import ctypes
        import time
        import pyop
        from pyop import Tensor, TensorDesc

        @pyop.register_op(op_type="Racy")
        def racy(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape, x.dtype)

        @pyop.register_op_impl(op_type="Racy")
        class RacyImpl:
            def execute(self, x: Tensor) -> None:
                self.saved = ctypes.string_at(x.data_ptr, x.nbytes)  # per-call data on self
                time.sleep(0.005)
                out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
                ctypes.memmove(out.data_ptr, self.saved, len(self.saved))
        ''',
    "picky.py": '''
        import ctypes
        import pyop
        from pyop import Tensor, TensorDesc

        @pyop.register_op(op_type="Picky")
        def picky(x: TensorDesc) -> TensorDesc:
            if list(x.shape) != [4, 4]:
                raise ValueError("Picky takes [4,4] only, got %s" % (list(x.shape),))
            return TensorDesc(x.shape, x.dtype)

        @pyop.register_op_impl(op_type="Picky")
        class PickyImpl:
            def execute(self, x: Tensor) -> None:
                out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
                ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
        ''',
    "overrun.py": '''
        import ctypes
        import pyop
        from pyop import DataType, Tensor, TensorDesc

        @pyop.register_op(op_type="Overrun")
        def overrun(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape, DataType.int8)

        @pyop.register_op_impl(op_type="Overrun")
        class OverrunImpl:
            def execute(self, x: Tensor) -> None:
                out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, DataType.int8)
                n = 1
                for d in x.shape:
                    n *= d
                (ctypes.c_float * n).from_address(out.data_ptr)[:] = [1.0] * n  # 4 bytes each
        ''',
    "annotated.py": '''
        import ctypes
        import pyop
        from pyop import Tensor, TensorDesc

        @pyop.register_op(op_type="Annotated")
        def annotated(x: TensorDesc, *, factor: float = 1.0) -> TensorDesc:
            return TensorDesc(x.shape, x.dtype)

        @pyop.register_op_impl(op_type="Annotated")
        class AnnotatedImpl:
            def execute(self, x: list[Tensor], *, factor: int) -> None:
                out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
                ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
        ''',
    "double.py": '''
        import ctypes
        import pyop
        from pyop import DataType, Tensor, TensorDesc

        def _double(x):
            out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
            n = x.nbytes // 4
            if n:
                src = (ctypes.c_float * n).from_address(x.data_ptr)
                dst = (ctypes.c_float * n).from_address(out.data_ptr)
                for i in range(n):
                    dst[i] = src[i] * 2

        @pyop.register_op(op_type="Double")
        def double(x: TensorDesc) -> TensorDesc:
            if x.dtype != DataType.float32:
                raise TypeError("float32 only")
            return TensorDesc(x.shape, x.dtype)

        @pyop.register_op_impl(op_type="Double")
        class DoubleImpl:
            def execute(self, x: Tensor) -> None:
                _double(x)

        @pyop.register_reference(op_type="Double", rtol=1e-6, atol=0)
        def double_reference(x):
            return x * 2

        @pyop.register_op(op_type="NotTriple")
        def not_triple(x: TensorDesc) -> TensorDesc:
            return double(x)

        @pyop.register_op_impl(op_type="NotTriple")
        class NotTripleImpl:
            def execute(self, x: Tensor) -> None:
                _double(x)  # the reference says x * 3

        @pyop.register_reference(op_type="NotTriple", rtol=1e-6, atol=0)
        def triple_reference(x):
            return x * 3
        ''',
}


def _need(name):
    value = ENV.get(name)
    if not value:
        raise unittest.SkipTest("%s is not set (run through ctest)" % name)
    return value


class CheckTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cli = _need("PYOP_TEST_CLI")
        cls.tmp = tempfile.mkdtemp(prefix="pyop-check-test-")
        cls.ops = os.path.join(cls.tmp, "ops")
        os.makedirs(cls.ops)
        for name, text in PLUGINS.items():
            with open(os.path.join(cls.ops, name), "w") as f:
                f.write(textwrap.dedent(text))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pyop(self, *args):
        env = dict(ENV, PYTHONDONTWRITEBYTECODE="1", ASCEND_CUSTOM_OPP_PATH=self.ops)
        env.pop("PYOP_PYTHON", None)
        return subprocess.run([self.cli] + list(args), capture_output=True, text=True,
                              env=env, timeout=300)

    def check(self, op, code, *extra):
        r = self.pyop("check", self.ops, op, *extra)
        self.assertEqual(r.returncode, code, r.stdout + r.stderr)
        return r

    def test_a_correct_op_passes_every_check(self):
        r = self.check("CopyOk", 0)
        self.assertRegex(r.stdout, r"CopyOk +ok \(infer_meta, execute; generated\)")
        self.assertIn("    ran: infer_meta, execute on float32[2,3], float16[2,3], bfloat16[2,3], "
                      "float64[2,3], "
                      "int8[2,3], int16[2,3], int32[2,3], int64[2,3], uint8[2,3], uint16[2,3], "
                      "uint32[2,3], uint64[2,3], bool[2,3], float32[0,3] (empty), float32[] "
                      "(rank-0), float32[1] (one element) (each twice on one instance, and "
                      "from 4 threads at once)\n", r.stdout)
        self.assertIn("1 op checked, 0 failed\n", r.stdout)
        self.assertNotIn("warning", r.stdout)
        # The behaviour beside the words (--json): 16 cases ran, each twice,
        # then from 4 threads; nothing wrong, nothing to warn about.
        op = json.loads(self.pyop("check", "--json", self.ops, "CopyOk").stdout)["ops"][0]
        self.assertEqual((op["status"], len(op["ran"]), op["threads"], op["problems"],
                          op["warnings"]), ("ok", 16, 4, [], []))

    def test_a_dtype_infer_meta_accepts_and_execute_breaks_on_fails(self):
        r = self.check("FloatOnly", 1)
        self.assertIn("    inputs x=float16[2,3]: PYOP_EPYTHON: execute of op 'FloatOnly'",
                      r.stdout)
        self.assertIn("TypeError: FloatOnly: no float16", r.stdout)
        self.assertIn("(the same failure with bfloat16[2,3], float64[2,3], int8[2,3]",
                      r.stdout)
        self.assertNotIn("inputs x=float32[2,3]:", r.stdout)
        data = json.loads(self.pyop("check", "--json", self.ops, "FloatOnly").stdout)
        op = data["ops"][0]
        self.assertEqual(op["status"], "failed")
        self.assertIn("float32[0,3] (empty)", op["ran"])

    def test_an_empty_tensor_execute_breaks_on_fails(self):
        r = self.check("NoEmpty", 1)
        self.assertIn("    inputs x=float32[0,3]: PYOP_EPYTHON: execute of op 'NoEmpty'",
                      r.stdout)
        self.assertIn("cannot cast view with zeros in shape or strides", r.stdout)

    def test_different_bytes_from_two_runs_fail(self):
        r = self.check("Noisy", 1)
        self.assertIn("    inputs x=float32[2,3]: run twice on one instance with the same "
                      "inputs, output y differs from byte ", r.stdout)
        self.assertIn("@pyop.register_op_impl(..., deterministic=False)", r.stdout)
        r = self.check("Counter", 1)
        self.assertIn("run twice on one instance with the same inputs, output y differs "
                      "from byte 0", r.stdout)

    def test_a_declared_nondeterministic_op_is_compared_by_shape(self):
        r = self.check("NoisyDeclared", 0)
        self.assertIn("(each twice on one instance; nondeterministic: values not compared, "
                      "and from 4 threads at once)", r.stdout)

    def test_a_declared_mutation_never_written_is_a_warning(self):
        r = self.check("DeclaredUnwritten", 0)
        self.assertRegex(r.stdout, r"DeclaredUnwritten +ok")
        self.assertIn("    warning: input x is declared in mutates_args, but none of the 15 "
                      "runs wrote it: if execute never writes it, drop it from mutates_args",
                      r.stdout)
        # The behaviour beside the words (--json): ok, with one warning.
        op = json.loads(self.pyop("check", "--json", self.ops, "DeclaredUnwritten").stdout)
        op = op["ops"][0]
        self.assertEqual((op["status"], op["problems"], len(op["warnings"])), ("ok", [], 1))

    def test_per_call_data_on_self_fails_under_threads(self):
        r = self.check("Racy", 1)
        self.assertIn("    inputs x=float32[2,3]: run from 4 threads at once on one instance: "
                      "thread ", r.stdout)
        self.assertIn(", compared with its inputs run alone; per-call data kept on "
                      "`self` (an attribute execute sets and reads back) is the usual cause: "
                      "keep it in local variables", r.stdout)

    def test_inconclusive_is_not_a_pass(self):
        r = self.check("Picky", 3)
        self.assertRegex(r.stdout, r"Picky +inconclusive \(infer_meta; generated\)")
        self.assertIn("    inconclusive: infer_meta refused every generated input "
                      "(float32[2,3]: ValueError: Picky takes [4,4] only, got [2, 3], %s:9); "
                      "give inputs it accepts with @pyop.register_samples in the plugin, or "
                      "--input/--attr" % os.path.join(self.ops, "picky.py"), r.stdout)
        self.assertIn("1 op checked, 0 failed, 1 inconclusive\n", r.stdout)
        self.assertEqual(r.stderr, "pyop: check: 1 of 1 op inconclusive: Picky (infer_meta "
                         "refused every generated input)\n")
        data = json.loads(self.pyop("check", "--json", self.ops, "Picky").stdout)
        self.assertEqual((data["failed"], data["inconclusive"]), (0, 1))
        self.assertEqual(data["ops"][0]["status"], "inconclusive")
        # Given inputs it accepts, it runs and passes.
        r = self.check("Picky", 0, "--input", "x=float32[4,4]")
        self.assertRegex(r.stdout, r"Picky +ok \(infer_meta, execute; given\)")
        # A failure elsewhere makes the exit status 1, inconclusive or not.
        r = self.pyop("check", self.ops, "Picky", "FloatOnly")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("2 ops checked, 1 failed, 1 inconclusive\n", r.stdout)

    def test_annotations_are_compared_with_the_prototype(self):
        r = self.check("Annotated", 1)
        where = os.path.join(self.ops, "annotated.py")
        self.assertIn("    execute() (%s:12): parameter x is annotated list[Tensor] (a dynamic "
                      "input), but the prototype's input x is required (one tensor)\n" % where,
                      r.stdout)
        self.assertIn("    execute() (%s:12): attribute factor is annotated int, but the "
                      "prototype's factor is float (the host passes a float)\n" % where,
                      r.stdout)
        self.assertNotIn("annotated", self.check("CopyOk", 0).stdout)

    def test_outputs_are_compared_with_the_reference(self):
        r = self.pyop("check", self.ops, "Double")
        if "needs numpy" in r.stdout:
            self.skipTest("no numpy in the build's Python")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("; compared with the reference, rtol=1e-06 atol=0,", r.stdout)
        r = self.check("NotTriple", 1)
        self.assertIn("    inputs x=float32[2,3]: output y differs from the reference at element "
                      "1: 1.0, the reference 1.5 (rtol=1e-06, atol=0)\n", r.stdout)

    def test_opcheck_from_python(self):
        # pyop.testing.opcheck from the pure-Python package, as a pytest run
        # under the build's Python imports it; it finds bin/pyop by itself.
        code = textwrap.dedent('''
            import sys
            import pyop.testing as t
            ops = sys.argv[1]
            print("ok:", t.opcheck(ops, "CopyOk")["ops"][0]["status"])
            try:
                t.opcheck(ops, "FloatOnly")
            except t.OpCheckError as e:
                print("failed:", str(e).splitlines()[0], "|", str(e).splitlines()[1])
            try:
                t.opcheck(ops, "Picky")
            except AssertionError as e:
                print("inconclusive:", str(e).splitlines()[0])
            print("given:", t.opcheck(ops, "Picky", inputs={"x": "float32[4,4]"})["ops"][0]["status"])
            try:
                t.opcheck(ops, "Picky", attrs={"nope": 1})
            except ValueError as e:
                print("usage:", e)
            ''')
        env = dict(ENV, PYTHONPATH=_need("PYOP_TEST_PYOP_PKG"), PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYOP_CLI", None)
        r = subprocess.run([_need("PYOP_TEST_BUILD_PYTHON"), "-c", code, self.ops],
                           capture_output=True, text=True, env=env, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.splitlines(), [
            "ok: ok",
            "failed: pyop check %s FloatOnly: failed | FloatOnly: failed" % self.ops,
            "inconclusive: pyop check %s Picky: inconclusive" % self.ops,
            "given: ok",
            'usage: opcheck: input "x" of "Picky" is required: give --input '
            'x=DTYPE[SHAPE]:VALUES'])

    def test_a_write_past_the_end_is_reported_not_a_crash(self):
        r = self.check("Overrun", 1)
        self.assertIn('inputs x=float32[2,3]: PYOP_ECONTRACT: execute of "Overrun" wrote '
                      'past the end of output 0 "y" (18 bytes past its end)', r.stdout)
        r = self.pyop("run", "Overrun", "--input", "x=float32[2,3]")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn('wrote past the end of output 0 "y"', r.stderr)

    def test_bench_holds_the_op_to_the_contract_and_prints_its_inputs(self):
        r = self.pyop("bench", "Overrun", "--calls", "5", "--repeat", "1")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn('wrote past the end of output 0 "y"', r.stderr)
        env_ops = ("bench", "CopyOk", "--calls", "5", "--repeat", "1")
        r = self.pyop(*env_ops)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("inputs: x=float32[16]", r.stdout)
        r = self.pyop(*env_ops, "--json")
        self.assertEqual(json.loads(r.stdout)["inputs"], ["x=float32[16]"])



def _write(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))


IDENTITY = '''
    import ctypes
    import pyop
    from pyop import Tensor, TensorDesc

    OP = "%s"

    @pyop.register_op(op_type=OP)
    def identity(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type=OP)
    class IdentityImpl:
        def execute(self, x: Tensor) -> None:
            out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
            ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)
    '''


class _CliCase(unittest.TestCase):
    """The command on plugins written into a private directory per class."""

    @classmethod
    def setUpClass(cls):
        cls.cli = _need("PYOP_TEST_CLI")
        cls.tmp = tempfile.mkdtemp(prefix="pyop-check-host-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pyop(self, *args, opp=None):
        env = dict(ENV, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYOP_PYTHON", None)
        if opp is None:
            env.pop("ASCEND_CUSTOM_OPP_PATH", None)
        else:
            env["ASCEND_CUSTOM_OPP_PATH"] = opp
        return subprocess.run([self.cli] + list(args), capture_output=True, text=True,
                              env=env, timeout=300)


class LoadsAsAHostTest(_CliCase):
    """What `pyop check` accepts is what a host loads (issue 17 item 10), and
    an interrupt in plugin code ends any subcommand (PYOP_EINTR)."""

    def test_a_file_beside_a_package_of_its_name_fails_the_check(self):
        d = os.path.join(self.tmp, "layout")
        _write(d, {"foo.py": IDENTITY % "FooFile", "foo/__init__.py": IDENTITY % "FooPkg"})
        r = self.pyop("list", opp=d)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        r = self.pyop("check", d)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("load of all plugins together: FAILED (PYOP_EPLUGIN)", r.stdout)
        self.assertIn("2 ops checked, 0 failed, the plugins do not load together", r.stdout)
        first = r.stderr.splitlines()[0]
        self.assertTrue(first.startswith("pyop: check: the plugins do not load together: "),
                        first)
        self.assertIn("foo/ and foo.py are both the module 'foo'", first)
        data = json.loads(self.pyop("check", "--json", d).stdout)
        self.assertEqual(data["load_error"]["status"], "PYOP_EPLUGIN")
        # From ASCEND_CUSTOM_OPP_PATH too.
        r = self.pyop("check", opp=d)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("the plugins do not load together", r.stderr)

    def test_a_file_argument_loads_as_a_plugin_of_its_directory(self):
        d = os.path.join(self.tmp, "neighbours")
        _write(d, {"_helper.py": "SHAPE_OF = lambda x: x.shape\n",
                   "other.py": IDENTITY % "Other",
                   "uses.py": "import _helper\nimport other\n" + textwrap.dedent(
                       IDENTITY % "Uses")})
        r = self.pyop("check", os.path.join(d, "uses.py"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"(?m)^Uses +ok")
        # The neighbour it imports registers its op in that load, as it does
        # when the host loads the directory.
        self.assertRegex(r.stdout, r"(?m)^Other +ok")
        self.assertIn("2 ops checked, 0 failed\n", r.stdout)
        # A host listing the file itself has no neighbours: check of that
        # path element fails as the host's load does.
        r = self.pyop("check", opp=os.path.join(d, "uses.py"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("No module named '_helper'", r.stderr)

    def test_a_keyboard_interrupt_in_plugin_code_ends_the_command(self):
        d = os.path.join(self.tmp, "interrupt")
        _write(d, {"intr.py": '''
            import pyop
            from pyop import Tensor, TensorDesc

            @pyop.register_op(op_type="Intr")
            def intr(x: TensorDesc) -> TensorDesc:
                return TensorDesc(x.shape, x.dtype)

            @pyop.register_op_impl(op_type="Intr")
            class IntrImpl:
                def execute(self, x: Tensor) -> None:
                    raise KeyboardInterrupt
            '''})
        for args in (["run", "Intr", "--input", "x=float32[2]:1,2"], ["check", d],
                     ["bench", "Intr", "--calls", "2", "--repeat", "1"]):
            with self.subTest(args[0]):
                r = self.pyop(*args, opp=d)
                self.assertEqual(r.returncode, 130, r.stdout + r.stderr)
                self.assertEqual(r.stderr, "pyop: %s: interrupted (execute of op 'Intr' "
                                 "(implementation at %s:9) failed: KeyboardInterrupt:)\n"
                                 % (args[0], os.path.join(d, "intr.py")))
        r = self.pyop("run", "--json", "Intr", "--input", "x=float32[2]:1,2", opp=d)
        self.assertEqual(r.returncode, 130, r.stdout + r.stderr)
        err = json.loads(r.stdout)["error"]
        self.assertEqual((err["status"], err["op"], err["file"], err["line"]),
                         ("PYOP_EINTR", "Intr", os.path.join(d, "intr.py"), 9))
        boom = os.path.join(self.tmp, "interrupt_import")
        _write(boom, {"boom.py": "raise KeyboardInterrupt\n"})
        for cmd in ("list", "doctor", "check"):
            with self.subTest(cmd):
                r = self.pyop(cmd, opp=boom)
                self.assertEqual(r.returncode, 130, r.stdout + r.stderr)
                self.assertEqual(r.stderr.splitlines(), [
                    "pyop: %s: interrupted (loading Python plugins failed: "
                    "KeyboardInterrupt:)" % cmd])



TWO_TYPES = {
    "ge_two.py": '''
        import ctypes
        import os
        from ge.custom_op import register_op_impl, get_execute_ctx
        from ge.runtime import Tensor

        @register_op_impl(op_type="TwoB")
        @register_op_impl(op_type="TwoA", deterministic=False)
        class Noisy:
            def execute(self, x: Tensor) -> None:
                y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
                if y.size:
                    ctypes.memmove(y.addr, os.urandom(y.size), y.size)
        ''',
    "py_two.py": '''
        import pyop

        @pyop.register_op_impl("PyTwoB")
        @pyop.register_op_impl("PyTwoA")
        class Twice:
            def execute(self, x):
                pass
        ''',
    "two.reg_op": '''
        REG_OP("TwoA").INPUT("x").OUTPUT("y").OP_END_FACTORY_REG()
        REG_OP("TwoB").INPUT("x").OUTPUT("y").OP_END_FACTORY_REG()
        '''}


class OneClassTwoOpTypesTest(_CliCase):
    """One class registered for two op types (GE and pyop allow it) is two
    implementations: `pyop list` shows both waiting for a prototype, not the
    last registration only, and `pyop check` finds the class of each (here:
    it declared itself nondeterministic at its first registration, TwoA, so
    TwoA's random values are compared by shape only)."""

    def setUp(self):
        self.ops = os.path.join(self.tmp, "ops")
        _write(self.ops, {k: v for k, v in TWO_TYPES.items() if k.endswith(".py")})
        self.reg_op = os.path.join(self.tmp, "two.reg_op")
        _write(self.tmp, {"two.reg_op": TWO_TYPES["two.reg_op"]})

    def test_list_shows_every_op_type_waiting(self):
        r = self.pyop("list", "--json", opp=self.ops)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        pending = [(p["op_type"], p["impl_key"]) for p in json.loads(r.stdout)["pending"]]
        self.assertEqual(pending, [("PyTwoA", "pyop:py_two.Twice"),
                                   ("PyTwoB", "pyop:py_two.Twice"),
                                   ("TwoA", "ge:ge_two:Noisy:TwoA"),
                                   ("TwoB", "ge:ge_two:Noisy:TwoB")])

    def test_check_finds_the_class_of_the_first_op_type(self):
        r = self.pyop("check", "--proto", self.reg_op, self.ops, "TwoA", opp=self.ops)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"TwoA +ok ")
        self.assertIn("nondeterministic: values not compared", r.stdout)


HERE = os.path.dirname(os.path.abspath(__file__))
IMPL_ONLY = os.path.normpath(os.path.join(HERE, "..", "ge", "impl_only"))
IMPL_ONLY_BAD = os.path.normpath(os.path.join(HERE, "..", "ge", "impl_only_bad"))
GE_NEXT = os.path.normpath(os.path.join(HERE, "..", "ge", "next"))
REG_OPS = os.path.join(HERE, "ge_protos", "ge_add_custom.reg_op")
WAITING = ("implementation waiting for a prototype: pyop_op_create fails until the host "
           "registers it (pyop_register_host_prototype); give the command its REG_OP with "
           "--proto FILE (docs/ge-plugins.md)")


def _impl_line(op_type):
    """The line of op_type's register_op_impl in tests/ge/impl_only (where
    pyop reports the implementation), found in the file rather than written
    here, so the fixture's text can change."""
    path = os.path.join(IMPL_ONLY, "ge_add_custom.py")
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if 'register_op_impl(op_type="%s")' % op_type in line:
                return n
    raise AssertionError("no register_op_impl of %s in %s" % (op_type, path))


class ProtoTest(_CliCase):
    """An implementation-only GE plugin checked without a host (issue 21
    item 1): --proto FILE registers its REG_OPs as the host's before the
    load; what still waits for a prototype is listed as such; doctor flags
    GE's legacy execute(self, ctx) and reports ops with compile."""

    def ok(self, *args, opp=IMPL_ONLY, code=0):
        r = self.pyop(*args, opp=opp)
        self.assertEqual(r.returncode, code, r.stdout + r.stderr)
        self.assertNotIn("is another module", r.stderr)  # the reader left nothing behind
        return r

    def test_list_shows_what_waits_for_a_prototype(self):
        out = self.ok("list").stdout
        for op in ("GeAddCustom", "GeLegacyHost", "GeMulCustom"):
            self.assertIn("%s: %s\n    capabilities: execute\n    implementation: %s:%d"
                          % (op, WAITING, os.path.join(IMPL_ONLY, "ge_add_custom.py"),
                             _impl_line(op)),
                          out)
        data = json.loads(self.ok("list", "--json").stdout)
        self.assertEqual(data["ops"], [])
        self.assertEqual([p["op_type"] for p in data["pending"]],
                         ["GeAddCustom", "GeLegacyHost", "GeMulCustom"])
        self.assertEqual(data["pending"][0]["impl_key"], "ge:ge_add_custom:AddCustom:GeAddCustom")

    def test_proto_binds_the_implementations(self):
        out = self.ok("list", "--proto", REG_OPS).stdout
        self.assertIn("GeAddCustom(x1, x2; alpha: float = 1.0) -> y\n    capabilities: "
                      "execute\n    prototype: <host>, the REG_OP of --proto %s "
                      "(host:GeAddCustom)\n" % REG_OPS, out)
        self.assertIn("GeLegacyHost(x; k: int) -> y", out)
        self.assertIn("GeMulCustom: " + WAITING, out)
        self.assertNotIn("GeAddCustom: implementation waiting", out)
        r = self.ok("run", "GeAddCustom", "--proto", REG_OPS, "--input", "x1=float32[2]:1,2",
                    "--input", "x2=float32[2]:10,20", "--attr", "alpha=2")
        self.assertEqual(r.stdout, "y: float32[2] = [21, 42]\n")
        r = self.ok("run", "GeLegacyHost", "--proto", REG_OPS, "--input", "x=float32[3]:1,2,3",
                    "--attr", "k=3")
        self.assertEqual(r.stdout, "y: float32[3] = [3, 6, 9]\n")
        r = self.ok("check", "--proto", REG_OPS, "GeLegacyHost", "--input", "x=float32[2,3]",
                    "--attr", "k=2")
        self.assertRegex(r.stdout, r"(?m)^GeLegacyHost +ok \(execute; given\)")
        # Its view() reads and writes float32 whatever the data type: the sweep
        # catches the overrun (with k=1 it copies input x's guard bytes into
        # output y's: guards differing per buffer see it).
        r = self.ok("check", "--proto", REG_OPS, "GeLegacyHost", code=1)
        self.assertIn('inputs x=float16[2,3]: PYOP_ECONTRACT: execute of "GeLegacyHost" wrote '
                      'past the end of output 0 "y" (12 bytes past its end)', r.stdout)
        self.assertIn("GeAddCustom", self.ok("check", "--proto", REG_OPS, "GeAddCustom",
                                             "--input", "x1=float32[2]:1,2", "--input",
                                             "x2=float32[2]:3,4").stdout)

    def test_without_a_prototype_nothing_runs_and_says_why(self):
        r = self.ok("run", "GeMulCustom", "--input", "x1=float32[2]:1,2", "--input",
                    "x2=float32[2]:3,4", code=1)
        self.assertIn('pyop: run: op "GeMulCustom": its implementation (%s:%d) is loaded but '
                      "has no prototype" % (os.path.join(IMPL_ONLY, "ge_add_custom.py"),
                                            _impl_line("GeMulCustom")), r.stderr)
        self.assertIn("give it its REG_OP with --proto FILE", r.stderr)
        r = self.ok("check", code=3)  # nothing ran: not a pass, not a failure
        self.assertIn("GeMulCustom              inconclusive (implementation only; no "
                      "prototype)\n    inconclusive: its implementation (%s:%d) is %s"
                      % (os.path.join(IMPL_ONLY, "ge_add_custom.py"), _impl_line("GeMulCustom"),
                         WAITING[len("implementation "):]), r.stdout)
        self.assertIn("3 ops checked, 0 failed, 3 inconclusive", r.stdout)

    def test_a_mismatching_implementation_fails_the_load_as_in_the_engine(self):
        r = self.ok("list", "--proto", REG_OPS, opp=IMPL_ONLY_BAD, code=1)
        self.assertIn("invalid execute signature for op type GeAddCustom", r.stderr)
        self.assertIn("expected attr name 'alpha'", r.stderr)
        self.assertIn("ge_add_mismatch.py:11", r.stderr)
        r = self.ok("check", "--proto", REG_OPS, IMPL_ONLY_BAD, code=1)
        self.assertIn("expected attr name 'alpha'", r.stdout + r.stderr)

    def test_a_wrong_proto_file_is_named(self):
        r = self.ok("list", "--proto", os.path.join(self.tmp, "none.reg_op"), code=2)
        self.assertEqual(r.stderr, "pyop: list: --proto %s: no such file\n"
                         % os.path.join(self.tmp, "none.reg_op"))
        cases = (('.ATTR("k", "Int", 2**70)', "default 1180591620717411303424 is outside int64"),
                 ('.ATTR("k", "Int", 2.5)', "default 2.5 is not an int"),
                 ('.ATTR("b", "Bool", "false")', "default 'false' is not a bool"),
                 ('.ATTR("k", "Nope", 1)', "unsupported custom op runtime attr type: 'Nope'"))
        for n, (attr, want) in enumerate(cases):
            with self.subTest(want):
                path = os.path.join(self.tmp, "bad%d.reg_op" % n)
                with open(path, "w") as f:
                    f.write('\nREG_OP("Bad").INPUT("x").OUTPUT("y")%s\n' % attr)
                r = self.ok("list", "--proto", path, code=1)
                self.assertTrue(r.stderr.startswith("pyop: list: --proto %s: " % path), r.stderr)
                self.assertIn(want, r.stderr)
        path = os.path.join(self.tmp, "inf.reg_op")
        with open(path, "w") as f:
            f.write('REG_OP("GeLegacyHost").INPUT("x").OUTPUT("y").REQUIRED_ATTR("k", "Int")'
                    '.ATTR("lo", "Float", -float("inf"))\n')
        r = self.ok("list", "--proto", path, "--json")
        op = json.loads(r.stdout)["ops"][0]
        self.assertEqual(op["attrs"][1]["default"], "-inf")  # Clip's defaults need them

    def test_doctor_flags_legacy_execute_and_compile(self):
        out = self.ok("doctor", opp=IMPL_ONLY + ":" + GE_NEXT).stdout
        nxt = os.path.join(GE_NEXT, "ge_next_ops.py")
        self.assertIn("  op GeNextLegacy (%s:143): legacy execute(self, ctx): runs here, as on "
                      "GE master and develop, but is rejected by newer GE" % nxt, out)
        self.assertIn("  op GeNextCompiled (%s:100): has compile: it runs where the host "
                      "compiles the op (pyop_op_compile); CompilePlatformInfo queries need an "
                      "NPU" % nxt, out)
        self.assertIn("  op GeMulCustom (%s:%d): %s"
                      % (os.path.join(IMPL_ONLY, "ge_add_custom.py"), _impl_line("GeMulCustom"),
                         WAITING), out)
        self.assertIn("ok (no ops; waiting for a prototype: GeAddCustom, GeLegacyHost, "
                      "GeMulCustom)", out)
        out = self.ok("doctor", "--proto", REG_OPS).stdout
        self.assertIn("ok (GeAddCustom, GeLegacyHost; waiting for a prototype: GeMulCustom)",
                      out)
        self.assertIn("  op GeLegacyHost (%s:%d): legacy execute(self, ctx)"
                      % (os.path.join(IMPL_ONLY, "ge_add_custom.py"),
                         _impl_line("GeLegacyHost")), out)
        rep = json.loads(self.ok("doctor", "--json").stdout)
        self.assertEqual(sorted(i["op_type"] for i in rep["implementations"] if i["pending"]),
                         ["GeAddCustom", "GeLegacyHost", "GeMulCustom"])



SAMPLED = '''
    import ctypes
    import pyop
    from pyop import Tensor, TensorDesc

    @pyop.register_op(op_type="Sampled")
    def sampled(x: TensorDesc, *, k: int = 1, on: bool = False) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="Sampled")
    class SampledImpl:
        def execute(self, x: Tensor, *, k: int, on: bool) -> None:
            out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
            ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)

    @pyop.register_samples(op_type="Sampled")
    def samples():
        return [%s]
    '''


class SampleNumbersTest(_CliCase):
    """Every number check reads from a plugin's samples is read as the
    command line's are (issue 17 item 12's class): an int attribute is an
    integer within int64, a dim an integer, a tensor value fits its type."""

    def test_sample_numbers_are_checked_as_command_line_numbers(self):
        cases = (
            ('{"inputs": {"x": ("float32", [2], [1, 2])}, "attrs": {"k": 2.5}}',
             "attr k (int): 2.5 is not an int"),
            ('{"inputs": {"x": ("float32", [2], [1, 2])}, "attrs": {"k": 2**64 + 2}}',
             "attr k (int): 18446744073709551618 is outside int64"),
            ('{"inputs": {"x": ("float32", [2], [1, 2])}, "attrs": {"on": "false"}}',
             "attr on (bool): 'false' is not a bool"),
            ('{"inputs": {"x": ("float32", [2.5], [1, 2])}}', "dim 2.5 is not an integer"),
            ('{"inputs": {"x": ("int8", [2], [1, 300])}}', "300 does not fit int8"),
            ('{"inputs": {"x": ("int32", [2], [1, 2.5])}}', "2.5 is not an int32 value"),
            ('{"inputs": {"x": ("float16", [1], [1e6])}}', "1000000.0 does not fit float16"),
        )
        for n, (case, want) in enumerate(cases):
            with self.subTest(want):
                d = os.path.join(self.tmp, "sampled%d" % n)
                _write(d, {"sampled.py": SAMPLED % case})
                r = self.pyop("check", d)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertRegex(r.stdout, r"(?m)^Sampled +failed")
                self.assertIn("sample 0 of Sampled (%s" % os.path.join(d, "sampled.py"),
                              r.stdout)
                self.assertIn(want, r.stdout)
                self.assertNotIn("Traceback", r.stdout + r.stderr)
        # The command line's own bool values: "0" and "false" are False.
        d = os.path.join(self.tmp, "copy")
        _write(d, {"copy_ok.py": PLUGINS["copy_ok.py"]})
        r = self.pyop("run", "CopyOk", "--input", "x=bool[4]:0,1,false,on", opp=d)
        self.assertEqual((r.returncode, r.stdout), (0, "y: bool[4] = [False, True, False, True]\n"),
                         r.stderr)
        r = self.pyop("run", "CopyOk", "--input", "x=bool[2]:2,1", opp=d)
        self.assertEqual((r.returncode, r.stderr),
                         (2, "pyop: run: --input x=bool[2]:2,1: '2' is not a bool value\n"))
        d = os.path.join(self.tmp, "sampled_inf")  # inf and nan are floats like any other
        _write(d, {"sampled.py": SAMPLED % '{"inputs": {"x": ("float32", [2], '
                   '[float("inf"), float("nan")])}, "attrs": {"k": 3, "on": True}}'})
        r = self.pyop("check", d)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"(?m)^Sampled +ok \(infer_meta, execute; samples \+ "
                                   r"generated\)")


if __name__ == "__main__":
    unittest.main(verbosity=2)
