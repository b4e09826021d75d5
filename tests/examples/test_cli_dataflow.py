"""The `pyop` command's check and bench side followed value by value
(tools/pyop_cli: check.py, check_*.py, bench.py, supervise.py): each value
a function validates, computes or copies, followed to what the user sees
(an exit status, a --json key, a report line, a worker process that is or
is not still running), so that a value dropped, replaced by its default,
taken from its neighbour or compared by prefix shows. Issue 31's dataflow
pass (session 13; mutants cli.df.* in tests/mutation/mutants.txt). Pure
Python, calling the modules directly; libpyop, a worker or a plugin module
stood in for by small fakes where a rule reads one.

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.dataflow):

  PYOP_TEST_TOOLS  tools/ of the source tree (holds the pyop_cli package)
"""

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import types
import unittest

ENV = os.environ


def _need(name):
    value = ENV.get(name)
    if not value:
        raise unittest.SkipTest("%s is not set (run through ctest)" % name)
    return value


def _cli(module):
    """tools/pyop_cli/<module>, imported from PYOP_TEST_TOOLS."""
    tools = _need("PYOP_TEST_TOOLS")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    import importlib
    return importlib.import_module("pyop_cli." + module)


class _Stream:
    """A worker's event stream, kept."""

    def __init__(self):
        self.events = []

    def send(self, ev):
        self.events.append(json.loads(json.dumps(ev)))


def _patched(test, module, **values):
    """Sets module attributes for the test, restored after it."""
    for name, value in values.items():
        saved = getattr(module, name)
        test.addCleanup(setattr, module, name, saved)
        setattr(module, name, value)


def _plugin_module(test, path):
    """A module standing for a loaded plugin (its loader's unique name)
    whose file is path."""
    name = "_pyop_plugin_dataflow_%d" % len(sys.modules)
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    test.addCleanup(sys.modules.pop, name, None)
    return mod


def _tmpdir(test):
    d = tempfile.mkdtemp(prefix="pyop_df_")
    test.addCleanup(shutil.rmtree, d, True)
    return d


class CheckFatalDataflowTest(unittest.TestCase):
    """A worker's fatal error (a CliError in the worker) is the command's:
    its status, its op (the --json error's "op") and its exit status."""

    def _fatal(self, exit_code):
        check, errors = _cli("check"), _cli("errors")
        fatal = {"exit": exit_code, "error": {"status": "PYOP_ENOENT", "op": "Relu",
                                              "message": 'op "Relu" is not loaded'}}

        class Sup:
            def __init__(self, lib, args, job, limit):
                self.warnings, self.interrupted, self.fatal = [], None, fatal

            def run(self):
                pass

        _patched(self, check, _job=lambda lib, args: {"skipped": []}, Supervisor=Sup,
                 note_unused=lambda command: None)
        with self.assertRaises(errors.CliError) as cm:
            check.cmd_check(None, argparse.Namespace(_worker=None, case_timeout=None))
        return cm.exception

    def test_the_op_and_status_of_a_fatal_error(self):
        e = self._fatal(1)
        self.assertEqual((type(e).__name__, e.status, e.op, e.exit_code),
                         ("CliError", "PYOP_ENOENT", "Relu", 1))
        self.assertEqual(e.to_json()["op"], "Relu")

    def test_a_usage_error_of_the_worker_stays_one(self):
        e = self._fatal(2)
        self.assertEqual((type(e).__name__, e.op, e.exit_code), ("UsageError", "Relu", 2))


class RefusalDataflowTest(unittest.TestCase):
    """Which infer_meta failures refuse a generated case
    (check_verdict.refusal): a subclass of ValueError or TypeError raised by
    the plugin's own code refuses it, as the docstring says; the exception's
    class names are its MRO's, the subclass first."""

    def test_a_subclass_of_value_error_refuses(self):
        cv, cc, errors = _cli("check_verdict"), _cli("check_cases"), _cli("errors")
        path = os.path.join(_tmpdir(self), "op.py")
        _plugin_module(self, path)
        case = cc.Case("inputs x=float32[2,3]", [], {}, "generated")
        err = errors.CliError("infer_meta of op 'Op' raised BadShape: rank 2", "PYOP_EPYTHON")
        err.origin = (("BadShape", "ValueError", "Exception", "BaseException"), path, 7,
                      "BadShape: rank 2")
        self.assertEqual(cv.refusal(err, case),
                         {"reason": "BadShape: rank 2", "file": path, "line": 7})
        # ... not on samples, nor from a file that is no plugin's
        self.assertIsNone(cv.refusal(err, cc.Case("sample 0", [], {}, "samples")))
        err.origin = (("BadShape", "ValueError"), path + "x", 7, "BadShape: rank 2")
        self.assertIsNone(cv.refusal(err, case))
        err.origin = (("LookupError", "Exception"), path, 7, "LookupError: no")
        self.assertIsNone(cv.refusal(err, case))


class SupervisorProcessDataflowTest(unittest.TestCase):
    """The check's worker process (check_supervise._one_worker,
    supervise.spawn and stop): in a session of its own, so that stopping it
    stops what it started; stopped when reading its stream fails (Ctrl-C),
    never left running."""

    SCRIPT = ("import json, os, sys, time\n"
              "fd = int(sys.argv[1])\n"
              "os.write(fd, (json.dumps({'e': 'activity', 'plugin': '/ops', 'op': None,"
              " 'stage': 'loading'}) + '\\n').encode())\n"
              "time.sleep(30)\n")

    def test_the_worker_has_a_session_of_its_own(self):
        sv = _cli("supervise")
        proc, rfd = sv.spawn(lambda fd: [sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            sid, group = os.getsid(proc.pid), os.getpgid(proc.pid)
            if sid == proc.pid:
                sv.stop(proc)  # its session's group: stop kills it
            else:  # (stop would wait for it: its pid names no group)
                proc.kill()
                proc.wait()
        finally:
            os.close(rfd)
        self.assertEqual((sid, group), (proc.pid, proc.pid))
        self.assertNotEqual(group, os.getpgid(0))
        self.assertEqual(proc.returncode, -signal.SIGKILL)

    def test_an_interrupted_read_stops_the_worker(self):
        cs, sv = _cli("check_supervise"), _cli("supervise")
        started = []

        def spawn(argv_of):
            proc, rfd = sv.spawn(lambda fd: [sys.executable, "-c", self.SCRIPT, str(fd)])
            started.append(proc)
            return proc, rfd

        def event(ev):
            raise KeyboardInterrupt("Ctrl-C")

        _patched(self, cs, spawn=spawn)
        sup = cs.Supervisor(argparse.Namespace(path="/lib/libpyop.so"),
                            argparse.Namespace(lanes=0, proto=None, input=None, attr=None),
                            {"paths": ["/ops"], "done": [], "done_plugins": [],
                             "phase": "together"}, 600)
        sup._event = event
        try:
            with self.assertRaises(KeyboardInterrupt):
                sup._one_worker()
        finally:
            for proc in started:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                    self.fail("the worker was left running after the interrupt")
        self.assertEqual(len(started), 1)
        # killed at once (a worker left to itself would end after its sleep, status 0)
        self.assertEqual(started[0].returncode, -signal.SIGKILL)


class ActivityDataflowTest(unittest.TestCase):
    """What a run or bench worker says before a step (supervise.activity):
    the step's number of calls (the parent's limit for the step is that
    many per-call limits), at least 1."""

    def test_the_calls_of_a_step_are_said(self):
        sv = _cli("supervise")
        rfd, wfd = os.pipe()
        self.addCleanup(os.close, rfd)
        self.addCleanup(os.close, wfd)
        _patched(self, sv, _worker=None)
        sv.become_worker(wfd)
        sv.activity("timed execute (5 calls)", "Op", 5)
        sv.activity("compile", "Op")
        sv.activity("nothing", "Op", 0)
        sv._worker = None
        sv.activity("not a worker", "Op", 9)  # says nothing
        os.write(wfd, b"end\n")
        data = b""
        while not data.endswith(b"end\n"):
            data += os.read(rfd, 4096)
        events = [json.loads(line) for line in data.splitlines()[:-1]]
        self.assertEqual([(e["stage"], e["op"], e["calls"]) for e in events],
                         [("timed execute (5 calls)", "Op", 5), ("compile", "Op", 1),
                          ("nothing", "Op", 1)])


class WorkerRealPathsDataflowTest(unittest.TestCase):
    """What the check's worker sends names the real directories, not its
    private ones: a refusal's file, a problem, the combined load's error."""

    def test_a_refusal_names_the_real_file(self):
        cw, cc = _cli("check_worker"), _cli("check_cases")
        stream = _Stream()
        real = (lambda text: text.replace("/tmp/pyop-check-x", "/ops") if text else text)
        mon = cw.StreamMonitor(stream, "/ops/a.py", "Op", real)
        case = cc.Case("inputs x=float32[2,3]", [], {}, "generated")
        mon.case(case)
        mon.refused(case, {"reason": "ValueError: see /tmp/pyop-check-x/a.py",
                           "file": "/tmp/pyop-check-x/a.py", "line": 4, "case": case.short})
        mon.problem(case, "execute of /tmp/pyop-check-x/a.py:4 failed")
        self.assertEqual(stream.events[-1]["text"], "execute of /ops/a.py:4 failed")
        ev = stream.events[-2]
        self.assertEqual(ev["e"], "refused")
        self.assertEqual(ev["refusal"], {"reason": "ValueError: see /ops/a.py",
                                         "file": "/ops/a.py", "line": 4,
                                         "case": "inputs x=float32[2,3]"})

    def test_the_load_error_of_a_given_file_names_its_directory(self):
        cw, errors = _cli("check_worker"), _cli("errors")
        ops = _tmpdir(self)
        with open(os.path.join(ops, "a.py"), "w") as f:
            f.write("# a plugin\n")
        unloads = []

        class Lib:
            class c:
                @staticmethod
                def pyop_unload():
                    unloads.append(1)

            @staticmethod
            def load():
                where = os.environ["ASCEND_CUSTOM_OPP_PATH"]
                raise errors.PyopError("load", "PYOP_EPLUGIN",
                                       "plugin %s/a.py failed: SyntaxError" % where)

        _patched(self, cw, set_compile_options=lambda options: None)
        saved = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
        self.addCleanup(lambda: os.environ.__setitem__("ASCEND_CUSTOM_OPP_PATH", saved)
                        if saved is not None else os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None))
        stream = _Stream()
        job = {"paths": [os.path.join(ops, "a.py")], "given": True, "done": [],
               "phase": "together", "done_plugins": [], "ops": [], "compile_options": {}}
        worker = cw.Worker(Lib, argparse.Namespace(input=None, attr=None), job, stream)
        self.assertFalse(worker._together())
        holder = os.environ["ASCEND_CUSTOM_OPP_PATH"]
        self.assertNotEqual(holder, ops)  # a private directory was loaded ...
        err = [e for e in stream.events if e["e"] == "load_error"][0]["error"]
        # ... and the error names the real one
        self.assertEqual(err["message"], "plugin %s/a.py failed: SyntaxError" % ops)
        self.assertNotIn(holder, json.dumps(stream.events))
        self.assertEqual(unloads, [1])


class WorkerEntryDataflowTest(unittest.TestCase):
    """An op's report entry as the worker builds it (Worker._check_op): the
    number of its cases, its inputs' kind, its reference's tolerances."""

    def test_cases_and_reference_of_the_entry(self):
        cw = _cli("check_worker")
        info = {"op_type": "Op", "proto_source": "/ops/a.py:3", "impl_key": "pyop:a:Op",
                "inputs": [{"name": "x", "kind": "required", "mutated": False,
                            "dtypes": None, "dtype_symbol": None}],
                "outputs": [{"name": "y", "kind": "required", "alias": None, "dtypes": None,
                             "dtype_symbol": None}],
                "attrs": [], "capabilities": ["infer_meta", "execute"]}
        seen = {}

        def run_cases(lib, info, cases, mon, deterministic, reference=None):
            seen["cases"] = cases
            return {"problems": [], "warnings": [], "notes": [], "ran": [c.short for c in cases],
                    "refused": [], "refusals": [], "stages": {"infer_meta": len(cases),
                                                              "execute": len(cases)},
                    "npu": [], "threads": 4, "guessed": False, "inconclusive": None,
                    "why": None}

        _patched(self, cw, run_cases=run_cases, plugin_samples=lambda: {},
                 is_deterministic=lambda info: False,
                 find_reference=lambda info: (None, (1e-3, 1e-6)),
                 annotation_problems=lambda info: [])
        lib = argparse.Namespace(op_info=lambda t: info)
        worker = cw.Worker(lib, argparse.Namespace(input=None, attr=None), {"done": []},
                           _Stream())
        entry = worker._check_op("Op", "/ops/a.py", [])
        self.assertGreater(len(seen["cases"]), 1)
        self.assertEqual((entry["status"], entry["cases"], entry["inputs"]),
                         ("ok", len(seen["cases"]), "generated"))
        self.assertEqual((entry["deterministic"], entry["reference"], entry["threads"]),
                         (False, [1e-3, 1e-6], 4))
        self.assertEqual(entry["checked"], ["infer_meta", "execute"])


    def _worker(self, info, run_cases=None, samples=None, holders=None):
        cw = _cli("check_worker")

        def nothing_ran(lib, info, cases, mon, deterministic, reference=None):
            return {"problems": [], "warnings": [], "notes": [], "ran": [], "refused": [],
                    "refusals": [], "stages": {}, "npu": [], "threads": 0, "guessed": False,
                    "inconclusive": None, "why": None}

        _patched(self, cw, run_cases=run_cases or nothing_ran,
                 plugin_samples=lambda: dict(samples or {}),
                 is_deterministic=lambda info: True, find_reference=lambda info: None,
                 annotation_problems=lambda info: [])
        stream = _Stream()
        worker = cw.Worker(argparse.Namespace(op_info=lambda t: info),
                           argparse.Namespace(input=None, attr=None), {"done": []}, stream)
        worker.holders = dict(holders or {})
        return worker, stream

    def test_a_broken_samples_function_is_said_of_the_samples(self):
        info = dict(_INFO, proto_source="/tmp/pyop-check-x/a.py:3")

        def samples():
            raise RuntimeError("no samples today")

        worker, stream = self._worker(info, samples={"Op": (samples, "/ops/a.py:9")},
                                      holders={"/tmp/pyop-check-x": "/ops"})
        entry = worker._check_op("Op", "/ops/a.py", [])
        self.assertEqual((entry["status"], entry["inputs"], entry["problems"]),
                         ("failed", "samples",
                          ["samples (/ops/a.py:9): RuntimeError: no samples today"]))
        begin = stream.events[0]
        self.assertEqual((begin["e"], begin["inputs"], begin["source"]),
                         ("op_begin", "samples + generated", "/ops/a.py:3"))

    def test_typo_notes_only_for_an_op_without_implementation(self):
        pending = [{"op_type": "Opp", "impl_source": "/ops/b.py:2"}]
        worker, _ = self._worker(dict(_INFO, impl_key=None))
        entry = worker._check_op("Op", "/ops", pending)
        self.assertEqual(entry["status"], "inconclusive")
        self.assertEqual(entry["notes"], [
            "no implementation is loaded for Op, and one waits for a prototype of Opp "
            "(/ops/b.py:2): a typo in an op_type?"])
        # an op whose implementation is loaded has no typo to be told of
        worker, _ = self._worker(dict(_INFO))
        entry = worker._check_op("Op", "/ops", pending)
        self.assertEqual((entry["status"], entry["notes"]), ("inconclusive", []))


_INFO = {"op_type": "Op", "proto_source": "/ops/a.py:3", "impl_key": "pyop:a:Op",
         "inputs": [{"name": "x", "kind": "required", "mutated": False,
                     "dtypes": None, "dtype_symbol": None}],
         "outputs": [{"name": "y", "kind": "required", "alias": None, "dtypes": None,
                      "dtype_symbol": None}],
         "attrs": [], "capabilities": ["infer_meta", "execute"]}


class WorkerBrokenDataflowTest(unittest.TestCase):
    """A plugin that fails to load alone (Worker._one_plugin): its problem
    names its real directory, not the private one it was loaded from."""

    def test_the_problem_names_the_real_directory(self):
        cw, errors = _cli("check_worker"), _cli("errors")
        ops = _tmpdir(self)
        with open(os.path.join(ops, "a.py"), "w") as f:
            f.write("# a plugin\n")
        seen = []

        class Lib:
            class c:
                @staticmethod
                def pyop_unload():
                    pass

            @staticmethod
            def load():
                where = os.environ["ASCEND_CUSTOM_OPP_PATH"]
                seen.append(where)
                raise errors.PyopError("load", "PYOP_EPLUGIN",
                                       "plugin %s/a.py failed: SyntaxError" % where)

        _patched(self, cw, set_compile_options=lambda options: None)
        saved = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
        self.addCleanup(lambda: os.environ.__setitem__("ASCEND_CUSTOM_OPP_PATH", saved)
                        if saved is not None else os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None))
        stream = _Stream()
        worker = cw.Worker(Lib, None, {"done": [], "compile_options": {}}, stream)
        worker._one_plugin(os.path.join(ops, "a.py"))
        self.assertNotEqual(seen, [ops])  # loaded from a private directory
        broken = [e for e in stream.events if e["e"] == "broken"]
        self.assertEqual(broken, [{"e": "broken", "plugin": os.path.join(ops, "a.py"),
                                   "problem": "plugin %s/a.py failed: SyntaxError" % ops}])


class VerdictStreamDataflowTest(unittest.TestCase):
    """What run_cases streams and keeps per case: each refused case's own
    refusal (a death's report lists them), the stage an NPU stop was in."""

    def test_each_refusal_streamed_is_its_own_case(self):
        cv, cc, errors = _cli("check_verdict"), _cli("check_cases"), _cli("errors")
        path = os.path.join(_tmpdir(self), "op.py")
        _plugin_module(self, path)

        class Inst:
            def __init__(self, lib, info, attrs, declare=None):
                self.attrs = attrs

            def run(self, inputs, stage=None):
                e = errors.CliError("infer_meta refused", "PYOP_EPYTHON")
                e.stage = "infer_meta"
                e.origin = (("ValueError",), path, self.attrs["line"],
                            "ValueError: not %d" % self.attrs["line"])
                raise e

            def destroy(self):
                pass

        class Mon(cv.Monitor):
            def __init__(self):
                self.refusals = []

            def refused(self, case, refusal):
                self.refusals.append((case.short, refusal))

        _patched(self, cv, Instance=Inst)
        cases = [cc.Case("inputs a", [], {"line": 5}, "generated", "a"),
                 cc.Case("inputs b", [], {"line": 9}, "sweep", "b")]
        mon = Mon()
        v = cv.run_cases(None, dict(_INFO, attrs=[]), cases, mon)
        want = [{"reason": "ValueError: not 5", "file": path, "line": 5, "case": "a"},
                {"reason": "ValueError: not 9", "file": path, "line": 9, "case": "b"}]
        self.assertEqual(v["refusals"], want)
        self.assertEqual(mon.refusals, [("a", want[0]), ("b", want[1])])
        self.assertEqual(v["stages"], {"infer_meta": 2})

    def test_an_npu_stop_names_its_stage(self):
        cv, cc, errors = _cli("check_verdict"), _cli("check_cases"), _cli("errors")
        info = dict(_INFO, impl_key="ge:m:Op:Op", capabilities=["infer_meta",
                                                                 "declare_launch_args"])
        run = cv._Run(None, info, cv.Monitor(), True, None)
        err = errors.CliError("launch of Op: NotImplementedError: needs an NPU\nmore",
                              "PYOP_EPYTHON")
        err.origin = (("NotImplementedError",), "/lib/ge/custom_op/x.py", 3,
                      "NotImplementedError: needs an NPU")
        case = cc.Case("inputs a", [], {}, "generated", "a")
        run.checked(None, case, types.SimpleNamespace(error=err, failed="launch",
                                                      declare_error=None))
        self.assertEqual(run.v["npu"], [("launch", "a", "launch of Op: NotImplementedError: "
                                                         "needs an NPU")])
        run.v["ran"] = ["a"]
        self.assertEqual(cv.op_status(info, run.v), "inconclusive")
        self.assertEqual(run.v["why"], "launch needs an NPU")


class CheckReportDataflowTest(unittest.TestCase):
    """check's exit status and its last line on stderr (check._report):
    the number of plugins that failed to load."""

    def test_the_count_of_broken_plugins(self):
        import contextlib
        import io
        check, cw = _cli("check"), _cli("check_worker")
        entry = dict(cw._entry("Op", "/ops/a.py", "/ops/a.py:3"), status="ok",
                     checked=["infer_meta", "execute"], ran=["a"],
                     stages={"infer_meta": 1, "execute": 1})
        sup = argparse.Namespace(ops=[entry], load_error=None, warnings=[], broken=[
            {"plugin": "/ops/b.py", "problem": "SyntaxError"},
            {"plugin": "/ops/c.py", "problem": "ImportError"}])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = check._report(argparse.Namespace(json=False), {"ops": []}, sup)
        self.assertEqual(code, 1)
        self.assertEqual(err.getvalue().splitlines()[-1],
                         "pyop: check: 2 plugins failed to load")


class BenchDataflowTest(unittest.TestCase):
    """What bench reports of what it timed (bench._bench, bench._time; the
    instance and libpyop stood in for): a Tensor attribute as its
    description in the result (and so in --json), a failed timed launch
    named as a launch."""

    def test_a_tensor_attribute_is_reported_by_its_description(self):
        bench = _cli("bench")
        info = dict(_INFO, attrs=[{"name": "w", "type": "Tensor", "required": False,
                                   "default": None}])
        made = []

        class Inst:
            def __init__(self, lib, info, attrs, declare="launch"):
                made.append(attrs)
                self.op = None

            def run(self, inputs, stage=None):
                return argparse.Namespace(error=None)

            def destroy(self):
                pass

        w = (0, [2], [1.0, 2.0])
        _patched(self, bench, Instance=Inst, _timed_call=lambda *a: (None, (), None),
                 _time=lambda *a: ([2e-6], [1e-6]),
                 _attrs_from_args=lambda info, args: {"w": w})
        result, attrs = bench._bench(argparse.Namespace(op_info=lambda op: info),
                                     argparse.Namespace(op="Op", input=None, attr=["w=..."],
                                                        size=4, calls=10, repeat=1))
        self.assertEqual(made, [{"w": w}])  # the instance gets the tensor ...
        self.assertEqual(attrs, {"w": w})
        self.assertEqual(result["attrs"], {"w": "float32[2]"})  # ... the report its description
        self.assertEqual(json.loads(json.dumps(result))["attrs"], {"w": "float32[2]"})

    def test_a_failed_timed_launch_is_named_a_launch(self):
        bench, errors = _cli("bench"), _cli("errors")
        checked = []

        def check(what, rc):
            checked.append(what)
            raise errors.PyopError(what, "PYOP_EPYTHON", "")
        lib = argparse.Namespace(c=argparse.Namespace(pyop_op_capabilities=lambda op: 0),
                                 check=check)
        for launch, verb in ((True, "launch"), (False, "execute")):
            with self.assertRaises(errors.PyopError) as cm:
                bench._time(lib, argparse.Namespace(op="Op", calls=2, repeat=1), "op",
                            lambda *a: -6, (), argparse.Namespace(refused=None), launch)
            self.assertEqual(checked[-1], "%s of Op" % verb)
            self.assertTrue(cm.exception.message.startswith("%s of Op failed" % verb),
                            cm.exception.message)


    def test_the_baseline_is_timed_by_its_own_calls(self):
        """bench._time returns execute's times and the bare ctypes call's,
        each measured on its own calls: with a clock that an execute call
        moves by 5 and a baseline call by 2, the two lists differ (and so
        does bench's execute_minus_ctypes_ns from 0). Kills
        cli.b14.bench.baseline_times_are_execute."""
        bench = _cli("bench")
        clock = [0.0]

        def ex(*a):
            clock[0] += 5.0
            return 0

        def base(op):
            clock[0] += 2.0
            return 0
        _patched(self, bench, activity=lambda *a: None,
                 time=types.SimpleNamespace(perf_counter=lambda: clock[0]))
        lib = argparse.Namespace(c=argparse.Namespace(pyop_op_capabilities=base),
                                 check=lambda what, rc: None)
        ex_t, base_t = bench._time(lib, argparse.Namespace(op="Op", calls=4, repeat=3), "op",
                                   ex, (), argparse.Namespace(refused=None), False)
        self.assertEqual(ex_t, [5.0, 5.0, 5.0])
        self.assertEqual(base_t, [2.0, 2.0, 2.0])


class NondeterministicHintDataflowTest(unittest.TestCase):
    """How a failed determinism check tells the op's author to declare it
    (check_plugin.nondeterministic_hint): in the layer the op was written
    with."""

    def test_the_hint_of_each_layer(self):
        cp = _cli("check_plugin")
        ge = cp.nondeterministic_hint({"impl_key": "ge:ops:AddCustom:AddCustom"})
        self.assertIn("@register_op_impl(op_type=..., deterministic=False) from ge.custom_op", ge)
        self.assertIn("__pyop_deterministic__ = False", ge)
        pyop = cp.nondeterministic_hint({"impl_key": "pyop:ops:Add"})
        self.assertIn("@pyop.register_op_impl(..., deterministic=False)", pyop)
        self.assertNotIn("ge.custom_op", pyop)


class SampleShapeDataflowTest(unittest.TestCase):
    """A sample given as a numpy array (check_cases._sample_tensor) is held
    to pyop's shape limits as a (dtype, shape, values) one is: refused by a
    ValueError naming the sample, before any call."""

    def test_a_numpy_sample_of_too_many_dims(self):
        try:
            import numpy as np
        except ImportError:
            raise unittest.SkipTest("numpy does not import")
        cc = _cli("check_cases")
        what = "sample 0 of Op (/ops/a.py:9) input x"
        for v in (np.zeros((1,) * 9, dtype=np.float32), ("float32", [1] * 9, [0.0])):
            with self.assertRaises(ValueError) as cm:
                cc._sample_tensor(v, what)
            self.assertTrue(str(cm.exception).startswith(what + ": 9 dims"), cm.exception)
        self.assertEqual(cc._sample_tensor(np.arange(6, dtype=np.float32).reshape(2, 3), what),
                         (0, [2, 3], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]))


class CheckLoadErrorDataflowTest(unittest.TestCase):
    """A combined load that fails with no op loaded at all is the
    command's error (check._load_error): with the status and the op the
    worker's error named."""

    def test_the_op_of_a_load_error_with_nothing_loaded(self):
        check, errors = _cli("check"), _cli("errors")
        sup = argparse.Namespace(ops=[], broken=[], load_error={
            "status": "PYOP_EEXIST", "op": "Relu", "file": "/ops/b.py", "line": 3,
            "message": "op type Relu registered twice (/ops/a.py:3, /ops/b.py:3)"})
        with self.assertRaises(errors.CliError) as cm:
            check._load_error(sup)
        e = cm.exception
        self.assertEqual((e.status, e.op, e.exit_code), ("PYOP_EEXIST", "Relu", 1))
        self.assertEqual(e.to_json()["op"], "Relu")


class WorkerCommandDataflowTest(unittest.TestCase):
    """The check worker's command line (check_supervise.Supervisor._argv):
    the library the command was given (--library), so the worker loads the
    same libpyop."""

    def test_the_library_reaches_the_worker(self):
        cs = _cli("check_supervise")
        sup = cs.Supervisor(argparse.Namespace(path="/opt/x/libpyop.so.1"),
                            argparse.Namespace(lanes=0, proto=["/p/op.h"], input=None,
                                               attr=None),
                            {"paths": ["/ops"], "done": []}, 5)
        argv = sup._argv(7)
        self.assertEqual(argv[argv.index("--library") + 1], "/opt/x/libpyop.so.1")
        self.assertLess(argv.index("--library"), argv.index("check"))
        self.assertEqual(argv[argv.index("--_worker") + 1], "7")
        self.assertEqual(argv[argv.index("--proto") + 1], "/p/op.h")


class ReferenceArgsDataflowTest(unittest.TestCase):
    """What the reference is called with (check_plugin._reference_args): a
    Tensor attribute as a numpy array of its own data type and shape, as
    the op gets it (not numpy's default float64 or int64)."""

    def test_a_tensor_attribute_keeps_its_data_type(self):
        try:
            import numpy as np
        except ImportError:
            raise unittest.SkipTest("numpy does not import")
        cp, cc, b = _cli("check_plugin"), _cli("check_cases"), _cli("binding")
        info = dict(_INFO, attrs=[
            {"name": "w", "type": "Tensor", "required": True, "default": None},
            {"name": "idx", "type": "Tensor", "required": True, "default": None},
            {"name": "alpha", "type": "float", "required": False, "default": 1.5}])
        f32, i32 = b.DTYPES.index("float32"), b.DTYPES.index("int32")
        case = cc.Case("inputs x=float32[2]", [[(f32, [2], [1.0, 2.0])]],
                       {"w": (f32, [2], [0.1, 0.2]), "idx": (i32, [1, 2], [3, 4])}, "generated")
        args, attrs = cp._reference_args(info, case, np)
        self.assertEqual((args[0].dtype, args[0].shape), (np.float32, (2,)))
        self.assertEqual(sorted(attrs), ["alpha", "idx", "w"])
        self.assertEqual((attrs["w"].dtype, attrs["w"].shape), (np.float32, (2,)))
        self.assertEqual(attrs["w"].tolist(), np.array([0.1, 0.2], dtype=np.float32).tolist())
        self.assertEqual((attrs["idx"].dtype, attrs["idx"].shape, attrs["idx"].tolist()),
                         (np.int32, (1, 2), [[3, 4]]))
        self.assertEqual(attrs["alpha"], 1.5)


if __name__ == "__main__":
    unittest.main()
