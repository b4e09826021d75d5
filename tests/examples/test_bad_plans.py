"""`pyop check` and `pyop run` on plugins whose kernel plan names what is not
a kernel (issue 17 item 1): a data object of the kernel library, or libc's
exit found through it. Before, `pyop check` jumped into .rodata (SIGSEGV) or
ended with the kernel's exit code; now each is refused at declare time with a
message naming the symbol, the library and why, and the command exits 1.

Driven by ctest (tests/examples/CMakeLists.txt):

  PYOP_TEST_CLI          the build tree's bin/pyop
  PYOP_TEST_NOT_KERNELS  tests/unit/not_kernels' library (data exports)
"""

import os
import shutil
import subprocess
import tempfile
import textwrap
import unittest

PLUGIN = textwrap.dedent('''\
    import pyop
    from pyop import TensorDesc, launch

    @pyop.register_op(op_type="{op}")
    def proto(x: TensorDesc) -> TensorDesc:
        return TensorDesc(shape=x.shape, dtype=x.dtype)

    @pyop.register_op_impl(op_type="{op}")
    class Impl:
        def declare_launch_args(self, x, out):
            pyop.get_declare_launch_args_ctx().add_launch(
                {lib!r}, {symbol!r}, [launch.output(0), launch.scalar("int32", {code})])
    ''')


def _need(name):
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest("%s is not set (run through ctest)" % name)
    return value


class BadPlansTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cli = _need("PYOP_TEST_CLI")
        cls.lib = _need("PYOP_TEST_NOT_KERNELS")
        cls.tmp = tempfile.mkdtemp(prefix="pyop-bad-plans-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def plugin(self, op, symbol, code=3):
        d = os.path.join(self.tmp, op)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, op.lower() + ".py"), "w") as f:
            f.write(PLUGIN.format(op=op, lib=self.lib, symbol=symbol, code=code))
        return d

    def pyop(self, opp, *args):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", ASCEND_CUSTOM_OPP_PATH=opp)
        return subprocess.run([self.cli] + list(args), capture_output=True, text=True,
                              env=env, timeout=300)

    def check_refused(self, op, symbol, why):
        d = self.plugin(op, symbol)
        r = self.pyop(d, "check", d)
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 1, out)  # not a signal, not exit(3)
        self.assertIn('kernel symbol "%s" %s' % (symbol, why), out)
        self.assertIn("1 failed", out)
        r = self.pyop(d, "run", op, "--input", "x=int32[1]:0")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn('kernel symbol "%s" %s' % (symbol, why), r.stderr)

    def test_data_object(self):
        self.check_refused("DataPlan", "not_kernels_table",
                           "is a data object in %s, not a function" % self.lib)

    def test_dependency_function(self):
        self.check_refused("ExitPlan", "exit", "is defined in /")
        r = self.pyop(self.plugin("ExitPlan", "exit"), "check")
        self.assertIn(", not in %s" % self.lib, r.stdout + r.stderr)

    def test_real_kernel_still_runs(self):
        d = self.plugin("StorePlan", "not_kernels_store", code=0)
        r = self.pyop(d, "run", "StorePlan", "--input", "x=int32[1]:0")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("42", r.stdout)  # not_kernels_store(out, 0): *out = 42


if __name__ == "__main__":
    unittest.main(verbosity=2)
