"""`pyop run`, `pyop bench` and `pyop doctor` against plugin code that
misbehaves: whatever plugin code prints (print, C writes to fd 1, a
thread, at import, in execute) never reaches stdout, so --json stays one
JSON object (output.py).

Driven by ctest (tests/examples/CMakeLists.txt):

  PYOP_TEST_CLI  the build tree's bin/pyop

Needs only the standard library.
"""

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
import unittest

ENV = os.environ

# One op whose misbehaviour PYOP_TEST_MODE chooses (a comma-separated set).
PLUGIN = textwrap.dedent('''\
    import os, sys, threading, time
    import pyop
    from pyop import Tensor, TensorDesc

    MODE = set(os.environ.get("PYOP_TEST_MODE", "").split(","))

    def noise(where):
        print("NOISE print %s" % where)
        sys.stdout.flush()
        os.write(1, b"NOISE fd1 %s\\n" % where.encode())

    if "print_import" in MODE:
        noise("import")
        def chatter():
            while True:
                os.write(1, b"NOISE thread\\n")
                time.sleep(0.001)
        threading.Thread(target=chatter, daemon=True).start()
    if "exit_import" in MODE:
        os._exit(0)

    @pyop.register_op(op_type="Odd")
    def odd(x: TensorDesc) -> TensorDesc:
        if "print_infer" in MODE:
            noise("infer_meta")
        if "exit_infer" in MODE:
            os._exit(0)
        return TensorDesc(shape=x.shape, dtype=x.dtype)

    @pyop.register_op_impl(op_type="Odd")
    class OddImpl:
        def execute(self, x: Tensor) -> None:
            if "print_execute" in MODE:
                noise("execute")
            if "exit_execute" in MODE:
                os._exit(0)
            if "hang_execute" in MODE:
                time.sleep(3600)
            y = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
            with pyop.elements(x) as xs, pyop.elements(y) as ys:
                for i in range(len(ys)):
                    ys[i] = xs[i] * 2
    ''')


class SupervisedTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cli = ENV.get("PYOP_TEST_CLI")
        if not cls.cli:
            raise unittest.SkipTest("PYOP_TEST_CLI is not set (run through ctest)")
        cls.tmp = tempfile.mkdtemp(prefix="pyop-supervised-")
        with open(os.path.join(cls.tmp, "odd.py"), "w") as f:
            f.write(PLUGIN)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pyop(self, mode, *args):
        env = dict(ENV, PYTHONDONTWRITEBYTECODE="1", ASCEND_CUSTOM_OPP_PATH=self.tmp,
                   PYOP_TEST_MODE=mode)
        env.pop("PYOP_PYTHON", None)
        return subprocess.run([self.cli] + list(args), capture_output=True, text=True,
                              env=env, timeout=300)

    RUN = ("run", "Odd", "--input", "x=float32[3]:1,2,3")
    BENCH = ("bench", "Odd", "--size", "3", "--calls", "2", "--repeat", "1")

    # --- d: stdout holds the result only

    NOISY = "print_import,print_infer,print_execute"

    def assert_clean_json(self, r):
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("NOISE", r.stdout)
        self.assertIn("NOISE print import", r.stderr)
        return json.loads(r.stdout)

    def test_run_json_with_plugin_prints(self):
        out = self.assert_clean_json(self.pyop(self.NOISY, *(self.RUN + ("--json",))))
        self.assertEqual(out["outputs"][0]["values"], [2, 4, 6])
        r = self.pyop(self.NOISY, *self.RUN)
        self.assertNotIn("NOISE", r.stdout)
        self.assertIn("NOISE fd1 execute", r.stderr)

    def test_bench_json_with_plugin_prints(self):
        out = self.assert_clean_json(self.pyop(self.NOISY, *(self.BENCH + ("--json",))))
        self.assertEqual(out["op_type"], "Odd")

    def test_doctor_json_with_plugin_prints(self):
        out = self.assert_clean_json(self.pyop(self.NOISY, "doctor", "--json"))
        self.assertEqual(out["load"]["status"], "ok", out["load"])

    def test_list_and_check_json_with_plugin_prints(self):
        self.assert_clean_json(self.pyop(self.NOISY, "list", "--json"))
        r = self.pyop(self.NOISY, "check", "--json")
        self.assertNotIn("NOISE", r.stdout)
        json.loads(r.stdout)


if __name__ == "__main__":
    unittest.main()
