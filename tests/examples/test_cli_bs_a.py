"""The `pyop check` and `pyop bench` side held on both sides of each check
(tools/pyop_cli: check.py, check_*.py, bench.py, supervise.py): the value
just inside and just outside a bound, the element kind beside the one
tested, the configuration other than the usual one, the last entry of a
table, the second worker after a refused or failed one. Issue 31's
both-sides pass (session 14; mutants cli.bs.* in
tests/mutation/mutants.txt). Pure Python, calling the modules directly;
libpyop, a worker or a plugin stood in for by small fakes.

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.bs_a):

  PYOP_TEST_TOOLS  tools/ of the source tree (holds the pyop_cli package)
"""

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
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


def _patched(test, module, **values):
    """Sets module attributes for the test, restored after it."""
    for name, value in values.items():
        saved = getattr(module, name)
        test.addCleanup(setattr, module, name, saved)
        setattr(module, name, value)


def _tmpdir(test):
    d = tempfile.mkdtemp(prefix="pyop_bs_a_")
    test.addCleanup(shutil.rmtree, d, True)
    return d


def _info(inputs=(("x", "required"),), attrs=(), outputs=(("y", "required"),),
          caps=("infer_meta", "execute")):
    """An op's info as binding.info_to_dict gives it."""
    return {"op_type": "Op", "inputs": [{"name": n, "kind": k, "mutated": False,
                                         "dtypes": None, "dtype_symbol": None}
                                        for n, k in inputs],
            "outputs": [{"name": n, "kind": k, "alias": None, "dtypes": None,
                         "dtype_symbol": None} for n, k in outputs],
            "attrs": [dict(a) for a in attrs], "capabilities": list(caps),
            "lanes": 0, "serial_reason": None, "impl_key": "pyop:m:Impl"}


class _Stream:
    def __init__(self):
        self.events = []

    def send(self, ev):
        self.events.append(json.loads(json.dumps(ev)))


# ------------------------------------------------------------ check_cases


class SampleEdgesTest(unittest.TestCase):
    """A sample at its edges (check_cases): an empty tensor in the
    concurrency run's rotation, a data type given as a DataType (an object
    with .name) beside one given as its name, an empty array (falsy)
    beside None for an input."""

    def test_an_empty_sample_tensor_is_rotated_without_failing(self):
        """A sample (or given) input with no elements, the op's first case
        that passed: each thread of the concurrency run gets an empty
        tensor again (its rotation by t places is modulo its count, 0)."""
        cc = _cli("check_cases")
        for kind in ("samples", "given"):
            with self.subTest(kind=kind):
                case = cc.Case("s", [[(0, [0, 3], [])], [(0, [2], [1.0, 2.0])]], {}, kind)
                for t in (1, 2, 3):
                    got = cc.thread_inputs(case, t)
                    self.assertEqual(got[0], [(0, [0, 3], [])])
                    self.assertEqual(got[1][0][:2], (0, [2]))
                self.assertEqual(cc.thread_inputs(case, 1)[1][0][2], [2.0, 1.0])

    def test_a_data_type_given_as_a_data_type_object(self):
        """pyop.DataType.float16 in a sample reads as "float16" does (its
        .name), not as an unknown data type."""
        cc = _cli("check_cases")

        class DataType:
            def __init__(self, name):
                self.name = name

        for name in ("float32", "float16", "int64", "bool"):
            with self.subTest(name=name):
                values = [True, False] if name == "bool" else [1, 0]
                by_name = cc._sample_tensor((name, [2], values), "s")
                self.assertEqual(by_name[:2], (cc.DTYPES.index(name), [2]))
                self.assertEqual(cc._sample_tensor((DataType(name), [2], values), "s"),
                                 by_name)
        with self.assertRaisesRegex(ValueError, "unknown data type"):
            cc._sample_tensor((DataType("float99"), [1], [1]), "s")


    def test_an_empty_array_is_an_input_not_absent(self):
        """A numpy array with no elements given for an input is an empty
        tensor of it (it is falsy, as an empty list is): never "missing"
        for a required input, never absent for an optional one."""
        cc = _cli("check_cases")

        class Array:  # what _sample_tensor reads of a numpy array
            dtype, shape = "float32", (0, 3)

            def __len__(self):
                return 0

            def tolist(self):
                return []

            def reshape(self, *shape):
                return self

        info = _info(inputs=(("x", "required"), ("b", "optional")))
        got = cc.sample_cases(info, lambda: [{"inputs": {"x": Array(), "b": Array()}}], "p.py:1")
        self.assertEqual(got[0].inputs, [[(0, [0, 3], [])], [(0, [0, 3], [])]])
        got = cc.sample_cases(info, lambda: [{"inputs": {"x": Array(), "b": None}}], "p.py:1")
        self.assertEqual(got[0].inputs, [[(0, [0, 3], [])], []])
        with self.assertRaisesRegex(ValueError, "required input 'x' missing"):
            cc.sample_cases(info, lambda: [{"inputs": {"b": Array()}}], "p.py:1")


class AttrCaseEdgesTest(unittest.TestCase):
    """The sweep's attribute case (check_cases._other_value) at the ends of
    each scalar type: a value other than the default, and one a host can
    pass (an int within int64, a finite float), whatever the default: the
    float -0.5 (where twice it plus 0.5 is itself), the largest doubles
    (twice them is infinite), the ends of int64."""

    def test_other_value_differs_and_is_passable(self):
        import math
        cc = _cli("check_cases")
        big = sys.float_info.max
        for d in (-0.5, 1e308, -1e308, big, -big, 0.0, -0.0, 2.5, -0.25, 5e-324, 1e-300):
            with self.subTest(default=d):
                v = cc._other_value({"type": "float", "default": d})
                self.assertIsInstance(v, float)
                self.assertNotEqual(v, d)
                self.assertTrue(math.isfinite(v), v)
        for d in (-(1 << 63), (1 << 63) - 1, (1 << 62) - 1, 1 << 62, -1, 0):
            with self.subTest(default=d):
                v = cc._other_value({"type": "int", "default": d})
                self.assertNotEqual(v, d)
                self.assertTrue(-(1 << 63) <= v < (1 << 63), v)

    def test_attr_case_of_minus_a_half(self):
        """The attribute case of an op whose float attribute defaults to
        -0.5 gives it another value (the check it exists for: an op that
        ignores the attribute differs from its reference)."""
        cc = _cli("check_cases")
        info = _info(attrs=({"name": "shift", "type": "float", "required": False,
                             "default": -0.5},))
        case = cc._attr_case(info, {}, "float32", ("float32",))
        self.assertNotEqual(case.attrs["shift"], -0.5)
        self.assertIn("; attrs shift=%g" % case.attrs["shift"], case.label)


# ------------------------------------------------------------ check_verdict


class StageTableTest(unittest.TestCase):
    """The stages the command counts for an op a worker died in
    (check_verdict.STAGES, read by check_supervise): every one of them,
    the first and the last (a launch) included, as check_verdict counts
    them for an op whose check finished."""

    def _died_in(self, stages):
        cs = _cli("check_supervise")
        sup = cs.Supervisor(argparse.Namespace(path="/lib"), argparse.Namespace(),
                            {"phase": "together", "done": [], "done_plugins": [],
                             "paths": ["/p"]}, 5)
        sup._event({"e": "op_begin", "plugin": "/p", "op": "Op", "source": "/p/a.py:1",
                    "inputs": "generated"})
        for s in stages:
            sup._event({"e": "activity", "plugin": "/p", "op": "Op", "case": "c",
                        "short": "c", "stage": s, "calls": 1})
        self.assertFalse(sup._died(-9))
        return sup.ops[0]

    def test_every_stage_counted(self):
        cv = _cli("check_verdict")
        self.assertEqual(cv.STAGES, ("infer_meta", "compile", "declare_launch_args",
                                     "execute", "launch"))
        for stage in cv.STAGES:
            with self.subTest(stage=stage):
                entry = self._died_in([stage, "second run", stage])
                self.assertEqual(entry["stages"], {stage: 2})
                self.assertEqual(entry["checked"], cv.checked({stage: 2}))
                self.assertTrue(entry["checked"])

    def test_a_launch_died_in_says_the_launch_path_was_checked(self):
        entry = self._died_in(["infer_meta", "launch"])
        self.assertEqual(entry["checked"], ["infer_meta", "declare_launch_args"])
        self.assertEqual(entry["status"], "failed")


class SecondInstanceRefusedTest(unittest.TestCase):
    """The concurrency run's instance is the op's second one (with the
    case's attributes): when its creation fails (an op that allows one
    instance only), that is the op's problem, not a pass."""

    def test_second_instance_failure_is_a_problem(self):
        cc, cv, errors = _cli("check_cases"), _cli("check_verdict"), _cli("errors")
        made = []

        def refused(lib, info, attrs, declare="launch"):
            made.append((attrs, declare))
            raise errors.CliError('creating op "Op": RuntimeError: one instance only',
                                  "PYOP_EPLUGIN", "Op")
        _patched(self, cv, Instance=refused)
        case = cc.Case("inputs x=float32[2,3]", [[(0, [2, 3], [0.0] * 6)]], {"n": 2}, "generated")
        got = cv._concurrency_problems(None, _info(), case, True, cv.Monitor())
        self.assertEqual(got, ['inputs x=float32[2,3]: creating a second instance failed: '
                               'PYOP_EPLUGIN: creating op "Op": RuntimeError: one instance only'])
        self.assertEqual(made, [({"n": 2}, "always")])
        v = dict(cv._new_verdict(), problems=got, stages={"execute": 2})
        self.assertEqual(cv.op_status(_info(), v), "failed")


class StageOrderTest(unittest.TestCase):
    """The stages an op's report names, in the order a host calls them
    (check_verdict.checked, check._ran_line), every one of STAGES in its
    place: declare_launch_args before execute, launch last."""

    def test_checked_in_host_order(self):
        cv = _cli("check_verdict")
        every = {s: 1 for s in reversed(cv.STAGES)}
        self.assertEqual(cv.checked(every), ["infer_meta", "compile", "declare_launch_args",
                                             "execute"])
        self.assertEqual(cv.checked({"execute": 2, "declare_launch_args": 2}),
                         ["declare_launch_args", "execute"])
        self.assertEqual(cv.checked({"declare_launch_args": 1}), ["declare_launch_args"])

    def test_ran_line_names_every_stage(self):
        check, cv = _cli("check"), _cli("check_verdict")
        r = {"stages": {s: 1 for s in reversed(cv.STAGES)}, "ran": ["float32[2,3]"]}
        self.assertEqual(check._ran_line(r), "ran: %s on float32[2,3] (each twice on one "
                         "instance)" % ", ".join(cv.STAGES))
        for stage in cv.STAGES:
            with self.subTest(stage=stage):
                r = {"stages": {stage: 1}, "ran": ["c"]}
                self.assertTrue(check._ran_line(r).startswith("ran: %s on c" % stage))


class GroupedGeNamesTest(unittest.TestCase):
    """Two failures that differ only in a GE data type name (DT_FLOAT,
    DT_INT32) are one failure, as those differing in a pyop name are."""

    def test_ge_dtype_names_masked(self):
        cc, cv = _cli("check_cases"), _cli("check_verdict")
        a, b = (cc.Case(n, [], {}, "sweep", short=n + "s") for n in ("first", "second"))
        self.assertEqual(cv._grouped([(a, "output y is DT_FLOAT, expected DT_FLOAT16"),
                                      (b, "output y is DT_INT32, expected DT_INT8")]),
                         ["first: output y is DT_FLOAT, expected DT_FLOAT16\n"
                          "(the same failure with seconds)"])
        # a name only starting so is not a data type
        self.assertEqual(len(cv._grouped([(a, "attr DTX_A"), (b, "attr DTX_B")])), 2)


# ------------------------------------------------------------ check_plugin


class AnnotationLastMethodTest(unittest.TestCase):
    """annotation_problems compares every method a host calls with the
    instance's inputs: declare_launch_args (the last) as execute and
    compile (the bridge's readers stood in for)."""

    def setUp(self):
        import inspect
        cp = _cli("check_plugin")
        saved = sys.modules.get("pyop._signature")

        def restore():
            if saved is None:
                sys.modules.pop("pyop._signature", None)
            else:
                sys.modules["pyop._signature"] = saved
        self.addCleanup(restore)

        class Impl:
            def declare_launch_args(self, x: "list", *, n: "float"):
                pass

        def params(cls, method, what):
            fn = getattr(cls, method, None)
            if fn is None:
                raise TypeError("no " + method)
            sig = list(inspect.signature(fn).parameters.values())[1:]
            return (fn, [p for p in sig if p.kind != p.KEYWORD_ONLY],
                    [p for p in sig if p.kind == p.KEYWORD_ONLY], None, None)
        sig = type(sys)("pyop._signature")
        sig._method_params = params
        sig._resolve = lambda ann, fn, method: ann
        sig._input_kind = lambda ann: {"list": 2, "object": 0}.get(ann)
        sig._attr_type = lambda ann: {"int": 1, "float": 2}.get(ann)
        sys.modules["pyop._signature"] = sig
        _patched(self, cp, impl_class=lambda info: Impl)
        self.cp = cp

    def test_declare_launch_args_compared(self):
        info = _info(attrs=({"name": "n", "type": "int"},),
                     caps=("infer_meta", "declare_launch_args"))
        got = self.cp.annotation_problems(info)
        self.assertEqual(len(got), 2, got)
        self.assertTrue(all(g.startswith("declare_launch_args() (") for g in got), got)
        self.assertTrue(got[0].endswith("parameter x is annotated list (a dynamic input), but "
                                        "the prototype's input x is required (one tensor)"), got)
        self.assertIn("attribute n is annotated float", got[1])
        # not a capability of the op: not compared
        self.assertEqual(self.cp.annotation_problems(dict(info, capabilities=["execute"])), [])


class ReferenceWithoutNumpyTest(unittest.TestCase):
    """A reference when numpy does not import: missing (ModuleNotFoundError)
    or present and failing (ImportError: built for another Python, a
    broken install) alike is a problem saying so, never an exception out
    of the check."""

    def _without_numpy(self, init):
        saved = {k: v for k, v in sys.modules.items() if k == "numpy" or k.startswith("numpy.")}
        for k in saved:
            del sys.modules[k]

        def restore():
            for k in [k for k in sys.modules if k == "numpy" or k.startswith("numpy.")]:
                del sys.modules[k]
            sys.modules.update(saved)
        self.addCleanup(restore)
        if init is None:
            sys.modules["numpy"] = None  # import numpy: ModuleNotFoundError
            return
        d = _tmpdir(self)
        os.makedirs(os.path.join(d, "numpy"))
        with open(os.path.join(d, "numpy", "__init__.py"), "w") as f:
            f.write(init)
        sys.path.insert(0, d)
        self.addCleanup(sys.path.remove, d)

    def test_numpy_missing_or_broken(self):
        cc, cp = _cli("check_cases"), _cli("check_plugin")
        case = cc.Case("c", [[(0, [1], [1.0])]], {}, "generated")
        res = argparse.Namespace(produced=[[]])
        called = []
        reference = (lambda *a, **k: called.append(a), (1e-5, 1e-8))
        for init, what in ((None, "ModuleNotFoundError"),
                           ("raise ImportError('numpy built for cp39 (bs_a)')",
                            "numpy built for cp39 (bs_a)")):
            with self.subTest(what=what):
                self._without_numpy(init)
                got = cp.reference_problem(_info(), case, res, reference)
                self.assertTrue(got.startswith("the reference needs numpy, which does not "
                                               "import here ("), got)
                if init is not None:
                    self.assertIn(what, got)
        self.assertEqual(called, [])


# ------------------------------------------------------------ check_worker


class GivenHiddenFileTest(unittest.TestCase):
    """A .py file given whose name starts with '.' is loaded as given, as
    one starting with '_' is: a directory of it would skip it (the loader
    imports no '.' name of a directory)."""

    def test_dot_file_loaded_as_given(self):
        cw = _cli("check_worker")
        d = _tmpdir(self)
        for name in (".hidden.py", "_helper.py", "a.py"):
            open(os.path.join(d, name), "w").close()
        for name in (".hidden.py", "_helper.py"):
            with self.subTest(name=name):
                holders = {}
                got = cw._as_loaded([os.path.join(d, name)], holders)
                self.addCleanup(lambda h=holders: [shutil.rmtree(x, True) for x in h])
                self.assertEqual((got, holders), ([os.path.join(d, name)], {}))
        holders = {}
        got = cw._as_loaded([os.path.join(d, "a.py")], holders)
        self.addCleanup(lambda: [shutil.rmtree(x, True) for x in holders])
        self.assertEqual(holders, {got[0]: d})
        self.assertEqual(sorted(os.listdir(got[0])), ["_helper.py", "a.py"])


# ------------------------------------------------------------ check_supervise


class UnloadDeathEachPhaseTest(unittest.TestCase):
    """A plugin whose unload ends the worker while the plugins are checked
    one by one (after a failed load together): it is reported once, and
    the next worker goes on with the next plugin instead of checking it
    again (and dying again, worker after worker)."""

    def test_next_worker_skips_the_plugin(self):
        cs, cw = _cli("check_supervise"), _cli("check_worker")
        job = {"phase": "each", "done": [["/p/a.py", "A"]], "done_plugins": [],
               "paths": ["/p"]}
        sup = cs.Supervisor(argparse.Namespace(path="/lib"), argparse.Namespace(), job, 5)
        sup.current = {"e": "activity", "plugin": "/p/a.py", "op": None, "case": None,
                       "short": None, "stage": cw.UNLOADING}
        self.assertFalse(sup._died(4))
        self.assertEqual(job["done_plugins"], ["/p/a.py"])
        self.assertEqual(len(sup.broken), 1)
        self.assertIn("while it was unloaded after its check, the plugin ended the process "
                      "running the check: it exited with status 4", sup.broken[0]["problem"])
        # what the next worker loads: not that plugin again
        d = _tmpdir(self)
        for name in ("a.py", "b.py"):
            open(os.path.join(d, name), "w").close()
        job = {"phase": "each", "done": [], "done_plugins": [], "paths": [d], "ops": [],
               "given": True, "compile_options": {}}
        sup = cs.Supervisor(argparse.Namespace(path="/lib"), argparse.Namespace(), job, 5)
        sup.current = {"e": "activity", "plugin": os.path.join(d, "a.py"), "op": None,
                       "stage": cw.UNLOADING}
        sup._died(4)
        loaded = []
        worker = cw.Worker(None, None, job, _Stream())
        worker._one_plugin = loaded.append
        worker.run()
        self.assertEqual(loaded, [os.path.join(d, "b.py")])


class WorkerInterruptTest(unittest.TestCase):
    """The check worker interrupted (check_worker.serve): the text of a
    KeyboardInterrupt with no message (Ctrl-C in Python code) is libpyop's
    detail of where it landed; with a message, the message."""

    def _serve(self, exc, detail):
        cw = _cli("check_worker")
        stream, codes = _Stream(), []

        class Worker:
            def __init__(self, lib, args, job, stream):
                pass

            def run(self):
                raise exc

        _patched(self, cw, Worker=Worker, Stream=lambda fd: stream,
                 end_now=codes.append, stray_threads=lambda: [])
        lib = argparse.Namespace(interrupt_detail=lambda: detail)
        cw.serve(lib, argparse.Namespace(_worker=9, _job="{}"))
        return stream.events, codes

    def test_interrupt_text(self):
        self.assertEqual(self._serve(KeyboardInterrupt(), 'execute of "Slow" interrupted'),
                         ([{"e": "interrupted", "text": 'execute of "Slow" interrupted'}],
                          [130]))
        self.assertEqual(self._serve(KeyboardInterrupt(" at load "), "other"),
                         ([{"e": "interrupted", "text": "at load"}], [130]))
        self.assertEqual(self._serve(KeyboardInterrupt(), None),
                         ([{"e": "interrupted", "text": ""}], [130]))


class WorkerPipeClosedTest(unittest.TestCase):
    """Each check worker's event pipe is closed when that worker is done
    with (check_supervise._one_worker), whether it finished, died or the
    reading failed: a check that starts worker after worker (up to
    MAX_WORKERS) keeps no descriptor of the ones before."""

    def test_read_end_closed_each_time(self):
        cs = _cli("check_supervise")

        class Proc:
            def wait(self, timeout=None):
                return 3

        ends = []

        def spawn(argv_of):
            r, w = os.pipe()
            os.close(w)
            ends.append(r)
            return Proc(), r
        outcomes = iter([True, False, KeyboardInterrupt()])

        def read_events(proc, rfd, limit, on_event):
            got = next(outcomes)
            if isinstance(got, BaseException):
                raise got
            return got
        _patched(self, cs, spawn=spawn, read_events=read_events, stop=lambda proc: None)
        job = {"phase": "each", "done": [], "done_plugins": [], "paths": ["/p"]}
        sup = cs.Supervisor(argparse.Namespace(path="/lib"), argparse.Namespace(), job, 5)
        self.assertTrue(sup._one_worker())
        _patched(self, sup, _died=lambda status: False)
        self.assertFalse(sup._one_worker())
        with self.assertRaises(KeyboardInterrupt):
            sup._one_worker()
        self.assertEqual(len(ends), 3)
        for fd in ends:
            with self.assertRaises(OSError):
                os.fstat(fd)


# ------------------------------------------------------------ supervise


class EventCallsEdgesTest(unittest.TestCase):
    """An event's "calls" at its lower edge (supervise.read_events): 0 or
    a negative count is one call's limit, never none (a worker that then
    ends is a death, not a hang stopped at once)."""

    class _Proc:
        pid = -1

        def __init__(self):
            self.stopped = False

        def poll(self):
            return 3

        def wait(self, timeout=None):
            self.stopped = True
            return 3

    def _read(self, calls):
        sv = _cli("supervise")
        r, w = os.pipe()
        os.write(w, (json.dumps({"e": "activity", "stage": "execute", "calls": calls})
                     + "\n").encode())
        os.close(w)
        seen = []
        proc = self._Proc()
        try:
            got = sv.read_events(proc, r, 60, lambda ev: seen.append(ev) and False)
        finally:
            os.close(r)
        self.assertEqual(len(seen), 1)
        return got, proc.stopped

    def test_zero_and_negative_calls(self):
        for calls in (0, -1, -(1 << 40), 1, True):
            with self.subTest(calls=calls):
                self.assertEqual(self._read(calls), (False, False))


class FailedSpawnTest(unittest.TestCase):
    """A worker that cannot be started (supervise.spawn): a CliError, and
    neither end of its event pipe left open (a command that goes on, or a
    check that tries again, does not leak them)."""

    def _fds(self):
        return sorted(os.listdir("/proc/self/fd"))

    def test_no_descriptor_left(self):
        sv, errors = _cli("supervise"), _cli("errors")
        before = self._fds()
        given = []
        for _ in range(3):
            with self.assertRaises(errors.CliError) as cm:
                sv.spawn(lambda fd: given.append(fd) or ["/nonexistent/pyop-bs-a-worker"])
            self.assertEqual(cm.exception.status, "PYOP_ENOENT")
        self.assertEqual(self._fds(), before)
        self.assertEqual(len(given), 3)


class WorkerGoneBeforeTheSignalTest(unittest.TestCase):
    """A worker whose process group is gone between the check that it
    runs and the signal (supervise.stop, supervise._signal: it ended just
    then): nothing to stop, no exception; stop still reaps it."""

    class _Proc:
        pid = 2 ** 30 + 12345  # past any pid_max: no such process group

        def __init__(self):
            self.waited = 0

        def poll(self):
            return None

        def wait(self, timeout=None):
            self.waited += 1
            return -9

    def test_no_such_group(self):
        import signal
        sv = _cli("supervise")
        proc = self._Proc()
        sv.stop(proc)
        self.assertEqual(proc.waited, 1)
        sv._signal(proc, signal.SIGINT)
        self.assertEqual(proc.waited, 1)


# ------------------------------------------------------------ check


class CheckJsonPythonTest(unittest.TestCase):
    """check --json's "python": is_build_python is true or false when the
    command knows its build's Python, null when it does not (a command
    run from a source tree: config.BUILD_PYTHON unset)."""

    def _python(self, build_python):
        check, config, cw = _cli("check"), _cli("config"), _cli("check_worker")
        _patched(self, config, BUILD_PYTHON=build_python)
        entry = dict(cw._entry("Op", "/ops/a.py", "/ops/a.py:3"), status="ok",
                     checked=["infer_meta", "execute"], ran=["a"],
                     stages={"infer_meta": 1, "execute": 1})
        sup = argparse.Namespace(ops=[entry], load_error=None, warnings=[], broken=[])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = check._report(argparse.Namespace(json=True), {"ops": []}, sup)
        self.assertEqual(code, 0, err.getvalue())
        return json.loads(out.getvalue())["python"]

    def test_each_configuration(self):
        self.assertIsNone(self._python(None)["is_build_python"])
        self.assertIs(self._python(sys.executable)["is_build_python"], True)
        other = self._python("/nonexistent/python3.99")
        self.assertIs(other["is_build_python"], False)
        self.assertEqual(other["executable"], sys.executable)


# ------------------------------------------------------------ bench


class BenchAttrsTextTest(unittest.TestCase):
    """bench's attributes as it reports them (bench.attrs_text): a Tensor
    attribute, the tuple (dtype, shape, values), as its description; a
    list attribute of three values as the list it is."""

    def test_list_of_three_kept(self):
        bench = _cli("bench")
        got = bench.attrs_text({"l": [1, 2, 3], "f": [0.5, 1.5, 2.5], "w": (0, [2], [1.0, 2.0]),
                                "s": ["a", "b", "c"]})
        self.assertEqual(got, {"l": [1, 2, 3], "f": [0.5, 1.5, 2.5], "w": "float32[2]",
                               "s": ["a", "b", "c"]})


if __name__ == "__main__":
    unittest.main()
