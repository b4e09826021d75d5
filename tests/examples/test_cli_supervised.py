"""`pyop run`, `pyop bench` and `pyop doctor` against plugin code that
misbehaves: an op that ends the process (os._exit(0)) or never returns
fails the command naming the op and what it was doing, never exit 0 or a
hang (the worker of supervise.py, as `pyop check`'s); whatever plugin code
prints (print, C writes to fd 1, a thread, at import, in execute) never
reaches stdout, so --json stays one JSON object (output.py).

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
        def __init__(self):
            if "exit_init" in MODE:
                os._exit(0)

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

    # --- g: run and bench supervised

    def assert_unfinished(self, r, *words):
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.returncode, 1, r.stderr)
        for w in words:
            self.assertIn(w, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        return r

    def test_run_op_exits_in_execute(self):
        r = self.assert_unfinished(self.pyop("exit_execute", *self.RUN),
                                   'execute of "Odd"', "exited with status 0",
                                   "the run did not finish")
        self.assertNotIn("y:", r.stdout)  # no result for what did not run
        r = self.pyop("exit_execute", *(self.RUN + ("--json",)))
        self.assert_unfinished(r, 'execute of "Odd"')
        err = json.loads(r.stdout)["error"]
        self.assertEqual(err["op"], "Odd", err)
        self.assertIn("did not finish", err["message"])

    def test_run_op_exits_in_infer_meta(self):
        self.assert_unfinished(self.pyop("exit_infer", *self.RUN), 'infer_meta of "Odd"',
                               "the run did not finish")

    def test_run_plugin_exits_at_import(self):
        self.assert_unfinished(self.pyop("exit_import", *self.RUN),
                               'op "Odd": while loading the plugins, the plugin code ended',
                               "exited with status 0")

    def test_run_op_exits_while_created(self):
        # The step is creating the op (its class's __init__), not loading
        # the plugins (batch 26: the stage was never said, the load's stood).
        r = self.assert_unfinished(self.pyop("exit_init", *self.RUN),
                                   'creating the op of "Odd" ended the process',
                                   "exited with status 0")
        self.assertNotIn("loading the plugins", r.stderr)

    def test_run_op_hangs(self):
        r = self.assert_unfinished(self.pyop("hang_execute", *(self.RUN + ("--timeout", "2"))),
                                   'execute of "Odd" did not finish within 2 s',
                                   "--timeout")
        self.assertNotIn("y:", r.stdout)

    def test_bench_op_exits(self):
        self.assert_unfinished(self.pyop("exit_execute", *self.BENCH), 'execute of "Odd"',
                               "the benchmark did not finish")
        r = self.pyop("exit_execute", *(self.BENCH + ("--json",)))
        self.assert_unfinished(r, "did not finish")
        self.assertEqual(json.loads(r.stdout)["error"]["op"], "Odd")

    def test_bench_op_hangs(self):
        self.assert_unfinished(self.pyop("hang_execute", *(self.BENCH + ("--timeout", "2"))),
                               'execute of "Odd" did not finish within 2 s')

    def test_timeout_is_checked(self):
        for bad in ("0", "-1", "nan", "inf", "soon"):
            r = self.pyop("", *(self.RUN + ("--timeout", bad)))
            self.assertEqual(r.returncode, 2, (bad, r.stderr))
            self.assertIn("--timeout", r.stderr)

    def test_good_run_and_bench_still_work(self):
        r = self.pyop("", *self.RUN)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("y: float32[3] = [2, 4, 6]", r.stdout)
        r = self.pyop("", *(self.BENCH + ("--json",)))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["op_type"], "Odd")
        # A failure the worker reports is the command's, said once.
        r = self.pyop("", "run", "Odd", "--input", "x=float32[3]:1,2", "--json")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.count("pyop: run:"), 1, r.stderr)
        self.assertIn("error", json.loads(r.stdout))

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
