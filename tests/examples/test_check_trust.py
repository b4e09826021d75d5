"""`pyop check` verdicts that can be trusted (issue 25 items 1-20, issue 27
item 3): no "ok" for work never done, no silent exit or hang, runs that can
see the bug, reports that say what happened. The fixtures are
tests/examples/check_ops/ (one file per concern, checked alone); each test
names the item it holds to.

Driven by ctest (tests/examples/CMakeLists.txt): PYOP_TEST_CLI is the build
tree's bin/pyop, PYOP_TEST_BUILD_PYTHON its Python, PYOP_TEST_PYOP_PKG the
pure-Python pyop package (pyop.testing). Needs only the standard library.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

ENV = os.environ
HERE = os.path.dirname(os.path.abspath(__file__))
OPS = os.path.join(HERE, "check_ops")


def _need(name):
    value = ENV.get(name)
    if not value:
        raise unittest.SkipTest("%s is not set (run through ctest)" % name)
    return value


def _op(path):
    return os.path.join(OPS, path)


class _Cli(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cli = _need("PYOP_TEST_CLI")

    def pyop(self, *args, opp=None, timeout=300):
        env = dict(ENV, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYOP_PYTHON", None)
        if opp is None:
            env.pop("ASCEND_CUSTOM_OPP_PATH", None)
        else:
            env["ASCEND_CUSTOM_OPP_PATH"] = opp
        return subprocess.run([self.cli] + list(args), capture_output=True, text=True,
                              env=env, timeout=timeout)

    def check(self, code, *args, **kw):
        r = self.pyop("check", *args, **kw)
        self.assertEqual(r.returncode, code, r.stdout + r.stderr)
        return r

    def json_check(self, code, *args, **kw):
        r = self.check(code, "--json", *args, **kw)
        return {op["op_type"]: op for op in json.loads(r.stdout)["ops"]}, r


class WorkNeverDoneTest(_Cli):
    """A: "ok" only for work that ran (items 1, 2, 3, 16, 19, 20; 27.3)."""

    def test_compile_runs_before_execute_and_its_failure_fails(self):  # item 1
        r = self.check(1, _op("compile_ops.py"), "CompileRaises")
        self.assertRegex(r.stdout, r"(?m)^CompileRaises +failed \(infer_meta, compile; ")
        self.assertIn("inputs x=float32[2,3]: PYOP_EPYTHON: compile of op 'CompileRaises'", r.stdout)
        self.assertIn("RuntimeError: CompileRaises: no kernel for float32", r.stdout)
        self.assertIn("    ran: infer_meta, compile on float32[2,3], ", r.stdout)

    def test_compile_leaves_what_execute_reads(self):  # item 1, GE's pattern
        r = self.check(0, _op("compile_ops.py"), "CompileCache")
        self.assertRegex(r.stdout, r"(?m)^CompileCache +ok \(infer_meta, compile, execute; ")
        self.assertIn("    ran: infer_meta, compile, execute on float32[2,3], ", r.stdout)
        self.assertNotIn("cache miss", r.stdout)

    def test_compile_only_is_not_ok(self):  # item 3
        ops, r = self.json_check(3, _op("compile_ops.py"), "CompileOnly")
        op = ops["CompileOnly"]
        self.assertEqual(op["status"], "inconclusive")
        self.assertIn("only compile ran", op["inconclusive"])
        self.assertEqual(op["checked"], ["infer_meta", "compile"])
        self.assertGreater(op["stages"]["compile"], 0)
        self.assertNotIn("execute", op["stages"])
        self.assertIn("CompileOnly (compile only)", r.stderr)

    def test_ge_compile_gets_the_compile_options(self):  # 27.3
        path = _op("ge_compiled.py")
        r = self.check(1, path)
        self.assertIn("compile of op 'GeCompiledScale'", r.stdout)
        self.assertIn("KeyError: 'st.python.compile.option'", r.stdout)
        r = self.check(0, path, "--compile-option", "st.python.compile.option=3")
        self.assertRegex(r.stdout, r"(?m)^GeCompiledScale +ok \(infer_meta, compile, execute; ")
        r = self.pyop("run", "GeCompiledScale", "--input", "x=float32[3]:1,2,3",
                      "--compile-option", "st.python.compile.option=3", opp=path)
        self.assertEqual((r.returncode, r.stdout), (0, "output0: float32[3] = [3, 6, 9]\n"),
                         r.stderr)
        r = self.pyop("run", "GeCompiledScale", "--input", "x=float32[3]:1,2,3", opp=path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("KeyError: 'st.python.compile.option'", r.stderr)
        self.assertNotIn("cache miss", r.stderr)  # compile ran first (and failed), as in GE
        r = self.pyop("bench", "GeCompiledScale", "--calls", "3", "--repeat", "1",
                      "--compile-option", "st.python.compile.option=3", opp=path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.pyop("run", "CompileCache", "--input", "x=float32[2]:1,2",
                      "--compile-option", "k=v", opp=_op("compile_ops.py"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pyop: run: warning: --compile-option: no GE plugin is loaded", r.stderr)
        r = self.pyop("run", "CompileCache", "--compile-option", "novalue",
                      "--input", "x=float32[2]:1,2", opp=_op("compile_ops.py"))
        self.assertEqual((r.returncode, r.stderr),
                         (2, "pyop: run: --compile-option novalue: expected KEY=VALUE\n"))

    def test_declare_launch_args_through_proto_is_called(self):  # items 2, 27.3
        proto = _op("ge_declare_only.reg_op")
        ops, r = self.json_check(3, "--proto", proto, _op("ge_declare_only.py"), "GeDeclareOnly")
        op = ops["GeDeclareOnly"]
        self.assertEqual(op["status"], "inconclusive")
        self.assertEqual(op["checked"], ["declare_launch_args"])
        self.assertEqual(op["stages"]["declare_launch_args"], len(op["ran"]))
        self.assertIn("declare_launch_args stopped where it needs an NPU", op["inconclusive"])
        self.assertIn("AnnotatedArgsContext.add_launch of NPU kernel 'add_custom' needs an NPU",
                      op["inconclusive"])
        self.assertEqual(r.stderr.count("GeDeclareOnly: declare_launch_args entered"),
                         len(op["ran"]))
        self.assertTrue(any("first input's description" in n for n in op["notes"]), op)
        r = self.pyop("run", "--proto", proto, "GeDeclareOnly", "--input", "x1=float32[2]:1,2",
                      "--input", "x2=float32[2]:3,4", opp=_op("ge_declare_only.py"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("GeDeclareOnly: declare_launch_args entered", r.stderr)
        self.assertIn("pyop: run: declare_launch_args of op 'GeDeclareOnly'", r.stderr)
        self.assertIn("needs an NPU", r.stderr)
        self.assertNotIn("no execute implementation", r.stderr)

    def test_a_prototype_nothing_implements_is_not_ok(self):  # item 3
        ops, r = self.json_check(3, "--proto", _op("ge_declare_only.reg_op"),
                                 _op("ge_declare_only.py"), "ProtoOnly")
        op = ops["ProtoOnly"]
        self.assertEqual((op["status"], op["ran"], op["stages"]), ("inconclusive", [], {}))
        self.assertIn("nothing ran: the prototype", op["inconclusive"])
        self.assertIn("no implementation is loaded for op type 'ProtoOnly'", op["inconclusive"])
        r = self.check(3, "--proto", _op("ge_declare_only.reg_op"), _op("ge_declare_only.py"),
                       "ProtoOnly")
        self.assertRegex(r.stdout, r"(?m)^ProtoOnly +inconclusive \(nothing ran; generated\)")
        self.assertNotIn("\n    ran:", r.stdout)
        self.assertNotIn("note:", r.stdout)

    def test_a_typo_in_an_op_type_is_not_ok_and_every_reason_is_its_own(self):  # items 3, 16
        ops, r = self.json_check(3, _op("pending.py"))
        self.assertEqual(ops["Scael2"]["status"], "inconclusive")
        self.assertEqual(ops["Scale2"]["status"], "infer-only")
        self.assertIn("no implementation is loaded for Scale2, and one waits for a prototype "
                      "of Scael2 (%s:16): a typo in an op_type?" % _op("pending.py"),
                      ops["Scale2"]["notes"])
        self.assertEqual(r.stderr, "pyop: check: 1 of 2 ops inconclusive: Scael2 (an "
                         "implementation waiting for a prototype)\n")
        self.assertNotIn("infer_meta refused", r.stderr)

    def test_an_infer_only_op_is_its_own_status(self):  # item 3
        r = self.check(0, _op("infer_only.py"))
        self.assertRegex(r.stdout, r"(?m)^PlanOnly +infer-only \(infer_meta; generated\)")
        self.assertIn("    infer-only: no implementation is loaded", r.stdout)
        self.assertIn("1 op checked, 0 failed\n", r.stdout)
        data = json.loads(self.check(0, "--json", _op("infer_only.py")).stdout)
        self.assertEqual((data["infer_only"], data["ops"][0]["status"]), (1, "infer-only"))

    def test_ge_ops_declare_themselves_nondeterministic(self):  # item 19
        path = _op("ge_nondeterministic.py")
        r = self.check(0, path, "GeNoisyDeclared", "GeNoisyAttribute")
        for op in ("GeNoisyDeclared", "GeNoisyAttribute"):
            self.assertRegex(r.stdout, r"(?m)^%s +ok" % op)
        self.assertEqual(r.stdout.count("nondeterministic: values not compared"), 2)
        r = self.check(1, path, "GeNoisy")
        self.assertIn("@register_op_impl(op_type=..., deterministic=False) from ge.custom_op",
                      r.stdout)
        self.assertNotIn("@pyop.register_op_impl", r.stdout)

    def test_opcheck_takes_what_the_command_takes(self):  # item 20
        code = textwrap.dedent('''
            import sys
            import pyop.testing as t
            ops = sys.argv[1]
            rep = t.opcheck(ops + "/ge_compiled.py", "GeCompiledScale",
                            compile_options={"st.python.compile.option": "2"})
            print("compile options:", rep["ops"][0]["status"])
            try:
                t.opcheck(ops + "/ge_declare_only.py", "GeDeclareOnly",
                          proto=ops + "/ge_declare_only.reg_op")
            except t.OpCheckError as e:
                print("proto:", e.report["ops"][0]["status"], "|", str(e).splitlines()[0])
            rep = t.opcheck([ops + "/compile_ops.py", ops + "/infer_only.py"],
                            ["CompileCache", "PlanOnly"])
            print("several:", sorted(o["status"] for o in rep["ops"]))
            rep = t.opcheck(ops + "/chatty.py", "Chatty")
            print("chatty:", rep["ops"][0]["status"])
            try:
                t.opcheck(ops + "/hang.py", "Hang", case_timeout=1)
            except t.OpCheckError as e:
                print("hang:", "did not finish within 1 s" in str(e))
            ''')
        env = dict(ENV, PYTHONPATH=_need("PYOP_TEST_PYOP_PKG"), PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYOP_CLI", None)
        r = subprocess.run([_need("PYOP_TEST_BUILD_PYTHON"), "-c", code, OPS],
                           capture_output=True, text=True, env=env, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.splitlines(), [
            "compile options: ok",
            "proto: inconclusive | pyop check %s/ge_declare_only.py GeDeclareOnly: "
            "inconclusive" % OPS,
            "several: ['infer-only', 'ok']",
            "chatty: ok",
            "hang: True"])


class DeathAndHangTest(_Cli):
    """B: process death and hangs (items 4, 5, 6, 13, 18)."""

    def test_not_used_notes_once_across_worker_restarts(self):
        """The "--proto ...: REG_OP(X) is not used" notes of every worker's
        loads, said once by the command: not one per worker, not one for
        an op an earlier (dead) worker bound, not lost when the last dies."""
        tmp = tempfile.mkdtemp(prefix="pyop-notes-")
        self.addCleanup(shutil.rmtree, tmp, True)
        mixed = os.path.join(tmp, "mixed")
        os.makedirs(mixed)
        for name in ("process_exit.py", "ge_declare_only.py"):
            shutil.copy(_op(name), mixed)
        proto = os.path.join(tmp, "p.reg_op")
        with open(_op("ge_declare_only.reg_op")) as f, open(proto, "w") as g:
            g.write(f.read() + '\nREG_OP("Nobody").INPUT("x").OUTPUT("y").OP_END_FACTORY_REG()\n')
        # dies_at_import fails the combined load and kills the worker that
        # imports it alone: each plugin is then checked alone, worker after
        # worker; first or last in the path.
        dies = _op("dies_at_import")
        for opp in (dies + ":" + mixed, mixed + ":" + dies):
            r = self.check(1, "--proto", proto, opp=opp)
            self.assertIn("GeDeclareOnly ", r.stdout)
            self.assertNotIn("REG_OP(GeDeclareOnly) is not used", r.stderr, opp)
            self.assertEqual(r.stderr.count("REG_OP(Nobody) is not used: no loaded plugin "
                                            "implements it"), 1, (opp, r.stderr))

    def test_an_op_that_ends_the_process_is_named_with_its_case(self):  # item 4
        ops, r = self.json_check(1, _op("process_exit.py"))
        self.assertEqual(ops["StillChecked"]["status"], "ok")
        for name, case, how in (
                ("ExitZero", "float32[2,3]", "exited with status 0"),
                ("ExitSeven", "float16[2,3]", "exited with status 7"),
                ("ExitC", "float32[2,3]", "exited with status 0")):
            op = ops[name]
            self.assertEqual(op["status"], "failed", op)
            self.assertRegex(op["problems"][0], r"^inputs x=%s: execute ended the process "
                             r"running the check: it %s \(os._exit\(\) or C exit\(\)"
                             % (case.replace("[", r"\[").replace("]", r"\]"), how))
        # The cases before the death ran (and passed).
        self.assertEqual(ops["ExitSeven"]["ran"], ["float32[2,3]"])
        threads = ops["ExitInThreads"]
        self.assertEqual(threads["problems"][0], "inputs x=float32[2,3]: run from 4 threads at "
                         "once on one instance: the op ended the process running the check: it "
                         "exited with status 9 (os._exit() or C exit() in plugin code?)")
        self.assertEqual((threads["checked"], threads["refused"][:1]),
                         (["infer_meta", "execute"], ["float16[2,3]"]))
        self.assertIn("pyop: check: 4 of 5 ops failed", r.stderr)
        r = self.check(1, _op("process_exit.py"), "ExitZero")
        self.assertIn("1 op checked, 1 failed", r.stdout)

    def test_a_plugin_that_ends_the_process_at_import_is_a_broken_plugin(self):  # item 4
        d = _op("dies_at_import")
        r = self.check(1, d)
        self.assertIn("load of all plugins together: FAILED (PYOP_EPLUGIN)\n    the plugins, "
                      "imported together (%s), ended the process running the check: it exited "
                      "with status 5" % d, r.stdout)
        self.assertIn("plugin %s: FAILED to load\n    imported alone, the plugin ended the "
                      "process running the check: it exited with status 5"
                      % os.path.join(d, "b_exits.py"), r.stdout)
        self.assertRegex(r.stdout, r"(?m)^BesideTheExit +ok")

    def test_a_plugin_that_ends_the_process_at_unload_is_reported_once(self):  # item 4
        path = _op("exits_at_unload.py")
        r = self.check(1, path)
        self.assertRegex(r.stdout, r"(?m)^ExitsAtUnload +ok")
        self.assertEqual(r.stdout.count("FAILED"), 1, r.stdout)
        self.assertIn("plugin %s: FAILED to load\n    while it was unloaded after its check, the "
                      "plugin ended the process running the check: it exited with status 4"
                      % path, r.stdout)

    def test_a_hang_hits_the_per_case_limit_and_the_report_goes_on(self):  # item 5
        ops, r = self.json_check(1, _op("hang.py"), "--case-timeout", "2")
        self.assertEqual(ops["AfterHang"]["status"], "ok")
        hang = ops["Hang"]
        self.assertEqual(hang["status"], "failed")
        self.assertEqual(hang["problems"][0], "inputs x=int8[2,3]: execute did not finish "
                         "within 2 s (the per-case limit, --case-timeout): a hang?")
        self.assertIn("float16[2,3]", hang["ran"])
        r = self.check(2, _op("hang.py"), "--case-timeout", "0")
        self.assertIn("--case-timeout 0: expected seconds", r.stderr)

    def test_exit_in_a_proto_file_is_an_error_naming_it(self):  # item 6
        proto = _op("exits.reg_op")
        for cmd in ("check", "list"):
            with self.subTest(cmd):
                r = self.pyop(cmd, "--proto", proto, _op("infer_only.py"))
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertEqual(r.stderr, "pyop: %s: --proto %s: the file called exit(3) "
                                 "while it was read (%s:3); a --proto file only declares "
                                 "REG_OPs\n" % (cmd, proto, proto))

    def test_what_an_op_prints_stays_out_of_the_report(self):  # item 13
        r = self.check(0, "--json", _op("chatty.py"))
        self.assertEqual(json.loads(r.stdout)["ops"][0]["status"], "ok")
        for text in ("chatty: imported", "chatty: fd 1 at import", "chatty: infer_meta",
                     "chatty: execute", "chatty: fd 1 in execute"):
            self.assertIn(text, r.stderr)
        r = self.pyop("run", "--json", "Chatty", "--input", "x=float32[2]:1,2",
                      opp=_op("chatty.py"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["outputs"][0]["values"], [1, 2])
        self.assertIn("chatty: fd 1 in execute", r.stderr)
        r = self.pyop("list", "--json", opp=_op("chatty.py"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([op["op_type"] for op in json.loads(r.stdout)["ops"]], ["Chatty"])
        self.assertIn("chatty: fd 1 at import", r.stderr)

    def test_a_thread_a_plugin_leaves_running_keeps_nothing_alive(self):  # item 18
        path = _op("leaves_a_thread.py")
        r = self.check(0, path, timeout=120)
        self.assertIn("warning: a plugin left a thread running (plugin-poller): the check did "
                      "not wait for it, as a C host's pyop_shutdown does not", r.stdout)
        for args in (["list"], ["run", "WithThread", "--input", "x=float32[1]:5"]):
            with self.subTest(args[0]):
                r = self.pyop(*args, opp=path, timeout=120)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("pyop: %s: warning: a plugin left a thread running "
                              "(plugin-poller); the command does not wait for it" % args[0],
                              r.stderr)


class SeeTheBugTest(_Cli):
    """C: runs that can see the bug (items 7-11)."""

    def test_copies_of_guard_bytes_are_seen(self):  # item 7
        r = self.check(1, _op("guards.py"), "OffByOne", "WideMemmove")
        self.assertIn('inputs x=float32[2,3]: PYOP_ECONTRACT: execute of "OffByOne" wrote past '
                      'the end of output 0 "y" (4 bytes past its end)', r.stdout)
        self.assertIn('inputs x=float32[2,3]: PYOP_ECONTRACT: execute of "WideMemmove" wrote '
                      'past the end of output 0 "y" (24 bytes past its end)', r.stdout)

    def test_an_underrun_blames_the_buffer_written(self):  # item 8
        r = self.check(1, _op("guards.py"), "Underrun")
        self.assertIn('inputs x=float32[2,3]: PYOP_ECONTRACT: execute of "Underrun" wrote '
                      'before the start of output 0 "y" (4 bytes before its start)', r.stdout)
        # float64 (8 bytes before its start) is the same failure, not input x's.
        self.assertRegex(r.stdout, r"\(the same failure with [^)]*float64\[2,3\]")
        self.assertNotIn("input x (", r.stdout)
        r = self.check(1, _op("guards.py"), "Underrun", "--input", "x=float64[2]:1,2")
        self.assertIn('given inputs: PYOP_ECONTRACT: execute of "Underrun" wrote before the '
                      'start of output 0 "y" (8 bytes before its start)', r.stdout)

    def test_threads_get_inputs_of_their_own_with_samples_and_given(self):  # item 9
        r = self.check(1, _op("racy_samples.py"))
        self.assertIn("    sample 0: run from 4 threads at once on one instance: thread ", r.stdout)
        self.assertIn("compared with its inputs run alone", r.stdout)
        r = self.check(1, _op("racy_samples.py"), "RacySampled", "--input", "x=float32[4]:1,2,3,4")
        self.assertIn("    given inputs: run from 4 threads at once on one instance: thread ",
                      r.stdout)

    def test_samples_add_to_the_sweep(self):  # item 10
        ops, _ = self.json_check(1, _op("sampled_sweep.py"))
        op = ops["Float32Sampled"]
        self.assertEqual(op["inputs"], "samples + generated")
        self.assertEqual(op["ran"][:2], ["sample 0", "float32[2,3]"])
        self.assertTrue(op["problems"][0].startswith("inputs x=float16[2,3]: PYOP_EPYTHON: "
                                                     "execute of op 'Float32Sampled'"), op)

    def test_a_tensor_attribute_written_in_place_is_a_write_not_nondeterminism(self):  # item 11
        r = self.check(1, _op("tensor_attr.py"))
        for op in ("BumpsAttr", "BumpsAttrNondet"):
            self.assertRegex(r.stdout, r"(?m)^%s +failed" % op)
        self.assertEqual(r.stdout.count("    inputs x=float32[2,3]: attribute w (a Tensor "
                                        "attribute, read-only for the op) was written by "
                                        "execute"), 2)
        self.assertNotIn("deterministic=False", r.stdout)
        self.assertNotIn("run twice on one instance", r.stdout)


class OriginTextTest(unittest.TestCase):
    """Where an exception came from, read from the bridge's text of it when
    the callback ran in another interpreter (a lane) and recorded nothing
    in this one (plugins.exception_origin)."""

    def test_the_innermost_frame_and_the_type(self):
        sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
        try:
            from pyop_cli.plugins import _origin_of_text
        finally:
            del sys.path[0]
        text = ("infer_meta of op 'P' (defined at /p/p.py:4) failed: IndexError: out of range\n"
                "Traceback (most recent call last):\n"
                '  File "/p/p.py", line 6, in p\n'
                "    if x.shape[0] != 4:\n"
                "IndexError: out of range")
        self.assertEqual(_origin_of_text(text),
                         (("IndexError",), "/p/p.py", 6, "IndexError: out of range"))
        self.assertIsNone(_origin_of_text("execute failed: ValueError: v\nValueError: v"))
        self.assertIsNone(_origin_of_text(""))


class ReportTest(_Cli):
    """D: reports that say what happened (items 12, 14, 15, 17)."""

    def test_refusals_follow_one_rule_and_say_why(self):  # item 12
        path = _op("refusals.py")
        ops, r = self.json_check(1, path)
        ok = ops["RefusesFloat16"]
        self.assertEqual(ok["status"], "ok")
        self.assertEqual(ok["refused"], ["float16[2,3]", "float32[] (rank-0)"])
        self.assertEqual(ok["refusals"], [
            {"case": "float16[2,3]", "reason": "TypeError: RefusesFloat16: no float16",
             "file": path, "line": 21},
            {"case": "float32[] (rank-0)",
             "reason": "ValueError: RefusesFloat16: rank-0 is not taken", "file": path,
             "line": 23}])
        first = ops["FirstDim"]
        self.assertEqual((first["status"], first["refused"]), ("failed", []))
        self.assertIn("inputs x=float32[]: PYOP_EPYTHON: infer_meta of op 'FirstDim'",
                      first["problems"][0])
        self.assertIn("IndexError: tuple index out of range", first["problems"][0])
        self.assertIn("Traceback", first["problems"][0])
        self.assertEqual(ops["Typo"]["status"], "failed")
        self.assertIn("AttributeError", ops["Typo"]["problems"][0])
        self.assertIsNone(ops["Typo"]["inconclusive"])
        self.assertEqual(ops["BadDesc"]["status"], "failed")  # raised inside pyop
        self.assertIn("TypeError", ops["BadDesc"]["problems"][0])
        r = self.check(0, path, "RefusesFloat16")
        self.assertIn("    infer_meta refused: float16[2,3] (TypeError: RefusesFloat16: no "
                      "float16, %s:21); float32[] (rank-0) (ValueError: RefusesFloat16: rank-0 "
                      "is not taken, %s:23)" % (path, path), r.stdout)

    def test_failures_of_different_inputs_and_outputs_are_not_merged(self):  # item 14
        r = self.check(1, _op("grouping.py"))
        for case, what in (("x1=float16[2,3], x2=float16[2,3]", "input x1 was written"),
                           ("x1=int8[2,3], x2=int8[2,3]", "input x2 was written"),
                           ("x1=float64[2,3], x2=float64[2,3]", 'output 0 "y1"'),
                           ("x1=int16[2,3], x2=int16[2,3]", 'output 1 "y2"')):
            self.assertRegex(r.stdout, r"(?m)^    inputs %s: .*%s" % (
                case.replace("[", r"\[").replace("]", r"\]"), what))
        self.assertNotIn("the same failure", r.stdout)

    def test_the_reference_gets_the_prototypes_defaults(self):  # item 15
        r = self.pyop("check", _op("reference_defaults.py"))
        if "needs numpy" in r.stdout:
            self.skipTest("no numpy in the build's Python")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"(?m)^Scaled +ok")
        self.assertIn("compared with the reference", r.stdout)
        self.assertRegex(r.stdout, r"(?m)^IgnoresAlpha +failed")
        self.assertIn("    inputs x=float32[2,3]; attrs alpha=2.5: output y differs from the "
                      "reference at element 1: 0.5, the reference 1.25", r.stdout)
        self.assertNotIn("missing", r.stdout)

    def test_execute_must_return_none_says_it_once_either_way(self):  # item 17
        path = _op("ge_returns.py")
        heads = []
        for op in ("GeReturnsFast", "GeReturnsAdapted"):
            r = self.pyop("run", op, "--input", "x=float32[2]:1,2", opp=path)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            lines = r.stderr.splitlines()
            heads.append(lines[0].split(" failed: ", 1)[1])
            self.assertEqual(lines[-1], "TypeError: execute must return None (op '%s' returned "
                             "int)" % op)
            self.assertNotIn("registry.py", r.stderr)
        self.assertEqual(heads[0].replace("Fast", "Adapted"), heads[1])
        with open(path) as f:
            line = next(n for n, text in enumerate(f, 1)
                        if "def execute(self, x: Tensor, b: Optional[Tensor])" in text)
        self.assertIn('  File "%s", line %d, in execute' % (path, line), r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
