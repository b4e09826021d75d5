"""pyop.testing.opcheck against a stand-in `pyop` command (a small script
that records the command line it got and answers what the test sets: a
report, an exit status, stderr): the command built from each option, the
report returned on success, and each failure (exit 1 and 3, a usage error,
an error report, no report) raised as the right exception with the
problems; find_cli's search for bin/pyop. Nothing is loaded or run."""

import importlib.util
import json
import os
import stat
import sys
import unittest

import support
from support import TempDir, write
import pyop.testing as pt

FAKE = """\
#!%s
import json, os, sys
with open(os.environ["FAKE_PYOP_ARGV"], "w") as f:
    json.dump({"argv": sys.argv[1:], "opp": os.environ.get("ASCEND_CUSTOM_OPP_PATH")}, f)
sys.stdout.write(os.environ.get("FAKE_PYOP_OUT", ""))
sys.stderr.write(os.environ.get("FAKE_PYOP_ERR", ""))
sys.exit(int(os.environ.get("FAKE_PYOP_RC", "0")))
"""

# A `pyop check` that hangs with a worker in a session of its own, as the
# command runs them; on SIGINT it stops and reaps the worker, as the command
# does on Ctrl-C, and records how the worker ended.
HUNG = """\
#!%s
import json, os, signal, subprocess, sys, time
state = os.environ["FAKE_PYOP_STATE"]
worker = None
def interrupted(*_):
    if worker is None:  # interrupted before it started one
        sys.exit(130)
    os.killpg(worker.pid, signal.SIGKILL)
    with open(state, "w") as f:
        json.dump({"worker": worker.wait()}, f)
    sys.exit(130)
signal.signal(signal.SIGINT, interrupted)
# The worker ends by itself once orphaned (the command killed): no test run
# leaves it behind, whatever the code under test does.
worker = subprocess.Popen([sys.executable, "-c", "import os, time\\n"
                           "p = os.getppid()\\n"
                           "while os.getppid() == p:\\n"
                           "    time.sleep(0.05)\\n"], start_new_session=True)
while True:
    time.sleep(1)
"""


def _executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class OpcheckTest(unittest.TestCase):
    def setUp(self):
        self._tmp = TempDir()
        self.dir = self._tmp.__enter__()
        self.cli = _executable(os.path.join(self.dir, "pyop"), FAKE % sys.executable)
        self.argv_file = os.path.join(self.dir, "argv.json")
        self._env = {k: os.environ.get(k) for k in
                     ("FAKE_PYOP_ARGV", "FAKE_PYOP_OUT", "FAKE_PYOP_ERR", "FAKE_PYOP_RC",
                      "ASCEND_CUSTOM_OPP_PATH", "PYOP_CLI")}
        os.environ["FAKE_PYOP_ARGV"] = self.argv_file

    def tearDown(self):
        for k, v in self._env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._tmp.__exit__(None, None, None)

    def answer(self, report, rc=0, err=""):
        os.environ["FAKE_PYOP_OUT"] = report if isinstance(report, str) else json.dumps(report)
        os.environ["FAKE_PYOP_RC"] = str(rc)
        os.environ["FAKE_PYOP_ERR"] = err

    def got(self):
        with open(self.argv_file) as f:
            return json.load(f)

    def test_command_line_of_every_option(self):
        report = {"ops": [{"op_type": "A", "status": "ok", "problems": []}]}
        self.answer(report)
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = "/somewhere"
        got = pt.opcheck(["p1.py", "p2"], "A", inputs={"x": "float32[2]:1,2"},
                         attrs={"k": [1, 2]}, proto=["a.h", "b.h"],
                         compile_options={"K1": "v1", "K2": 2}, case_timeout=2.5,
                         cli=self.cli)
        self.assertEqual(got, report)
        seen = self.got()
        self.assertEqual(seen["argv"], ["check", "--json", "p1.py", "p2", "A",
                                        "--input", "x=float32[2]:1,2", "--attr", "k=1,2",
                                        "--proto", "a.h", "--proto", "b.h",
                                        "--compile-option", "K1=v1", "--compile-option", "K2=2",
                                        "--case-timeout", "2.5"])
        self.assertIsNone(seen["opp"])  # the caller's GE op path is not handed on

    def test_the_callers_environment_is_left_as_it_was(self):
        """opcheck keeps the caller's GE op path from the command in a copy
        of the environment: the calling test's own os.environ still has it
        afterwards, and a second opcheck hides it again (lifetime pass,
        session 15: bridge.lp.testing.env_aliased)."""
        self.answer({"ops": []})
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = "/somewhere"
        for _ in range(2):
            pt.opcheck("ops", "A", cli=self.cli)
            self.assertIsNone(self.got()["opp"])
            self.assertEqual(os.environ.get("ASCEND_CUSTOM_OPP_PATH"), "/somewhere")

    def test_rows_given_as_tuples(self):
        # A list[list[int]] attribute given as a tuple of tuples (or a list
        # of tuples) is JSON like a list of lists: each row whole, not
        # "(4,),(5, 6)" (test_check_decls' test_arguments has the lists).
        self.answer({"ops": []})
        pt.opcheck("ops", "A", attrs={"trows": ((4,), (5, 6)), "lrows": [(7, 8)], "ks": (4, 5)},
                   cli=self.cli)
        self.assertEqual(self.got()["argv"], [
            "check", "--json", "ops", "A", "--attr", "trows=[[4], [5, 6]]",
            "--attr", "lrows=[[7, 8]]", "--attr", "ks=4,5"])

    def test_list_items_written_as_the_command_reads_them(self):
        # Each item of a list attribute is written as a single one would be:
        # bools as true/false (not Python's "True,False"), data types by
        # name (not str() of the enum: "1" or "DataType.float16"), so `pyop
        # check` gets the values the caller meant (batch 21/22 survivor,
        # session 16: bridge.b21.testing_py.list_attr_items_unformatted).
        import pyop
        self.answer({"ops": []})
        pt.opcheck("ops", "A", attrs={"flags": [True, False], "dts": (pyop.DataType.float16,
                                                                      pyop.DataType.int32),
                                      "flag": False, "dt": pyop.DataType.bfloat16},
                   cli=self.cli)
        self.assertEqual(self.got()["argv"], [
            "check", "--json", "ops", "A", "--attr", "flags=true,false",
            "--attr", "dts=float16,int32", "--attr", "flag=false", "--attr", "dt=bfloat16"])

    def test_timeout_stops_the_checks_the_command_runs(self):
        # At opcheck's timeout the command is interrupted as by Ctrl-C (pyop
        # check then stops its workers, each in a session of its own), not
        # killed outright, which would leave a hung op's worker running for
        # good. The stand-in starts such a worker and stops it on SIGINT.
        hung = _executable(os.path.join(self.dir, "hung"), HUNG % sys.executable)
        state = os.path.join(self.dir, "state.json")
        os.environ["FAKE_PYOP_STATE"] = state
        try:
            with self.assertRaisesRegex(pt.OpCheckError, r"did not finish within 5 s"):
                pt.opcheck("ops", "A", cli=hung, timeout=5)
            self.assertTrue(os.path.exists(state), "the command was killed, not "
                            "interrupted: pyop check's worker would be left running")
            with open(state) as f:
                got = json.load(f)
            self.assertEqual(got["worker"], -9)  # stopped by the command, and waited for
        finally:
            os.environ.pop("FAKE_PYOP_STATE", None)

    def test_defaults_add_nothing(self):
        self.answer({"ops": []})
        os.environ["PYOP_CLI"] = self.cli
        import pathlib
        self.assertEqual(pt.opcheck(pathlib.Path("ops")), {"ops": []})
        self.assertEqual(self.got()["argv"], ["check", "--json", "ops"])
        pt.opcheck("ops", ("A", "B"), proto="x.h", case_timeout=0)
        self.assertEqual(self.got()["argv"], ["check", "--json", "ops", "A", "B",
                                              "--proto", "x.h", "--case-timeout", "0"])

    def test_inputs_need_exactly_one_op(self):
        for ops in (None, ["A", "B"]):
            with self.assertRaisesRegex(ValueError, r"inputs/attrs need op_type \(exactly one\)"):
                pt.opcheck("ops", ops, inputs={"x": "int8[1]"}, cli=self.cli)
        self.assertFalse(os.path.exists(self.argv_file))
        self.answer({"ops": []})
        pt.opcheck("ops", ["A"], inputs={"x": "int8[1]"}, cli=self.cli)

    def test_failed_and_inconclusive_ops(self):
        report = {"ops": [{"op_type": "Ok", "status": "ok", "problems": []},
                          {"op_type": "Inf", "status": "infer-only", "problems": []},
                          {"op_type": "Bad", "status": "failed",
                           "problems": ["first\nsecond", "third"]},
                          {"op_type": "Maybe", "status": "inconclusive", "problems": [],
                           "inconclusive": "no case ran"}],
                  "broken_plugins": [{"plugin": "b.py", "problem": "SyntaxError"}],
                  "missing_ops": ["Gone"],
                  "load_error": {"message": "two Foo"}}
        for rc, word in ((1, "failed"), (3, "inconclusive")):
            self.answer(report, rc)
            with self.assertRaises(pt.OpCheckError) as cm:
                pt.opcheck("ops", cli=self.cli)
            self.assertIsInstance(cm.exception, AssertionError)
            self.assertEqual(cm.exception.report, report)
            self.assertEqual(str(cm.exception),
                             "pyop check ops: %s\n"
                             "the plugins do not load together: two Foo\n"
                             "plugin b.py failed to load: SyntaxError\n"
                             "Bad: failed\n    first\n    second\n    third\n"
                             "Maybe: inconclusive\n    no case ran\n"
                             "Gone: not found" % word)

    def test_a_failure_alone(self):
        report = {"ops": [{"op_type": "Bad", "status": "failed", "problems": ["wrong"]}]}
        self.answer(report, 1)
        with self.assertRaises(pt.OpCheckError) as cm:
            pt.opcheck(["a.py", "b.py"], cli=self.cli)
        self.assertEqual(str(cm.exception), "pyop check a.py b.py: failed\nBad: failed\n    wrong")

    def test_error_reports(self):
        self.answer({"error": {"message": "no such option"}}, 2)
        with self.assertRaisesRegex(ValueError, r"^opcheck: no such option$"):
            pt.opcheck("ops", cli=self.cli)
        err = {"error": {"message": "no plugins"}}
        for rc in (1, 3, 0):  # only a usage error (2) is the caller's ValueError
            self.answer(err, rc)
            with self.assertRaises(pt.OpCheckError) as cm:
                pt.opcheck("ops", cli=self.cli)
            self.assertEqual((str(cm.exception), cm.exception.report),
                             ("pyop check: no plugins", err))
        # an error beside ops is a report like any other
        self.answer({"error": {"message": "x"}, "ops": []}, 0)
        self.assertEqual(pt.opcheck("ops", cli=self.cli), {"error": {"message": "x"}, "ops": []})

    def test_no_report(self):
        self.answer("", 4, "  crashed  \n")
        with self.assertRaises(pt.OpCheckError) as cm:
            pt.opcheck("ops", "A", cli=self.cli)
        self.assertEqual(str(cm.exception), "pyop check ops A failed (exit 4) without a report: "
                         "crashed")
        self.assertIsNone(cm.exception.report)
        self.answer("not json", 0, "")
        with self.assertRaisesRegex(pt.OpCheckError, r"failed \(exit 0\) without a report: "
                                    r"\nstdout: not json$"):
            pt.opcheck("ops", cli=self.cli)


class FindCliTest(unittest.TestCase):
    def setUp(self):
        self._cli = os.environ.pop("PYOP_CLI", None)

    def tearDown(self):
        if self._cli is not None:
            os.environ["PYOP_CLI"] = self._cli

    def copy_of_testing_in(self, directory):
        """pyop/testing.py copied (it needs only the standard library) to
        directory/lib/pyop/testing.py and imported from there."""
        path = os.path.join(directory, "lib", "pyop", "testing.py")
        with open(pt.__file__) as f:
            write(directory, os.path.join("lib", "pyop", "testing.py"), f.read())
        spec = importlib.util.spec_from_file_location("pyop_testing_copy", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    def test_env_first_then_the_nearest_executable_bin_pyop(self):
        with TempDir() as d:
            d = os.path.realpath(d)  # find_cli starts from the real path
            mod = self.copy_of_testing_in(d)
            above, p = [], os.path.realpath(d)
            while os.path.dirname(p) != p:
                p = os.path.dirname(p)
                above.append(p)
            if any(os.path.isfile(os.path.join(p, "bin", "pyop")) for p in above):
                self.skipTest("a bin/pyop above the temporary directory")
            with self.assertRaisesRegex(mod.OpCheckError, r"no `pyop` command found above "
                                        r"\S+/lib/pyop; set PYOP_CLI"):
                mod.find_cli()
            os.makedirs(os.path.join(d, "bin"))
            far = _executable(os.path.join(d, "bin", "pyop"), "#!/bin/sh\n")
            os.makedirs(os.path.join(d, "lib", "bin"))
            near = os.path.join(d, "lib", "bin", "pyop")
            with open(near, "w") as f:  # not executable: passed over
                f.write("")
            self.assertEqual(mod.find_cli(), far)
            os.chmod(near, 0o755)
            self.assertEqual(mod.find_cli(), near)
            os.environ["PYOP_CLI"] = "/else/where/pyop"
            self.assertEqual(mod.find_cli(), "/else/where/pyop")
            os.environ["PYOP_CLI"] = ""
            self.assertEqual(mod.find_cli(), near)


if __name__ == "__main__":
    unittest.main()
