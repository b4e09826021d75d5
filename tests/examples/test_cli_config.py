"""The `pyop` command in its SECOND CONFIGURATIONS and at the partitions of
its inputs no other test reaches (tools/pyop_cli): two plugin paths where
the other tests give one, the second of two optional inputs, a dynamic
input a sample leaves out, an option given twice, the last element of a
list held to the rules of the first, a limit at itself and one past.
Issue 31's configuration pass (session 12): a class names the mutants
(cli.cf.* in tests/mutation/mutants.txt) it was seen killing that had
survived the covering tests; a class naming none holds a rule the
end-to-end tests were found to hold already (its bug killed there too). Pure
Python, no bridge: libpyop, a worker and plugins stood in for by small
fakes, the helpers of test_cli_rules.py reused.

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.config):

  PYOP_TEST_TOOLS  tools/ of the source tree (holds the pyop_cli package)
"""

import argparse
import math
import numbers
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli_rules import _cli, _info  # noqa: E402


class _MaxBytes:
    """PYOP_CLI_MAX_BYTES set for a with block (restored after)."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self.saved = os.environ.get("PYOP_CLI_MAX_BYTES")
        os.environ["PYOP_CLI_MAX_BYTES"] = str(self.value)

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop("PYOP_CLI_MAX_BYTES", None)
        else:
            os.environ["PYOP_CLI_MAX_BYTES"] = self.saved
        return False


class SupervisorPathsConfigTest(unittest.TestCase):
    """check_supervise.Supervisor.run with two plugin paths: when every
    worker it may start died, the broken entry names the whole job (both
    paths, as the together load names them), not its first path. Kills
    cli.cf.check_supervise.max_workers_first_path."""

    def test_every_worker_died_names_both_paths(self):
        cs = _cli("check_supervise")
        sup = cs.Supervisor(argparse.Namespace(path="/lib/libpyop.so"),
                            argparse.Namespace(lanes=0, proto=None, input=None, attr=None),
                            {"paths": ["/ops/a", "/ops/b.py"], "done": [], "done_plugins": [],
                             "phase": "each"}, 2.5)
        sup._one_worker = lambda: False
        sup.run()
        self.assertEqual(sup.broken, [{"plugin": "/ops/a:/ops/b.py", "problem": (
            "%d processes running the check died; the ops not reported above were not "
            "checked" % cs.MAX_WORKERS)}])


class SignatureKindsConfigTest(unittest.TestCase):
    """list.signature_line for the kinds other than required: a dynamic
    input the op writes says (mutated) after its [], an optional output
    that is an input's buffer says so. Kills cli.cf.list.dynamic_mutated,
    cli.cf.list.optional_output_alias."""

    def test_dynamic_mutated_and_optional_alias(self):
        lst = _cli("list")
        op = _info(inputs=(("x", "required"), ("accs", "dynamic")),
                   outputs=(("y", "required"), ("acc_out", "optional")))
        op["inputs"][1]["mutated"] = True
        op["outputs"][1]["alias"] = "x"
        self.assertEqual(lst.signature_line(op),
                         "Op(x, accs[] (mutated)) -> y, acc_out (input x's buffer)")
        op["inputs"][1]["kind"] = "optional"
        self.assertEqual(lst.signature_line(op),
                         "Op(x, accs? (mutated)) -> y, acc_out (input x's buffer)")


class SampleKindsConfigTest(unittest.TestCase):
    """check_cases.sample_cases: a sample that leaves out a dynamic input
    gives it no tensor (as one that leaves out an optional one), only a
    required one missing is refused. Kills
    cli.cf.check_cases.dynamic_missing_refused."""

    def test_dynamic_left_out_is_empty(self):
        cc = _cli("check_cases")
        info = _info(inputs=(("x", "required"), ("xs", "dynamic"), ("b", "optional")))
        one = ("float32", [1], [1.0])
        cases = cc.sample_cases(info, lambda: [{"inputs": {"x": one}},
                                               {"inputs": {"x": one, "xs": None}}], "p.py:3")
        self.assertEqual([c.inputs for c in cases], [[[(0, [1], [1.0])], [], []]] * 2)
        with self.assertRaisesRegex(ValueError, "required input 'x' missing"):
            cc.sample_cases(info, lambda: [{"inputs": {"xs": [one]}}], "p.py:3")


class GeneratedOptionalConfigTest(unittest.TestCase):
    """check_cases.generated_cases with two optional inputs: the case with
    the optional inputs absent leaves out both (the second as the first),
    one such case. Kills cli.cf.check_cases.absent_first_optional_only."""

    def test_two_optionals_both_absent(self):
        cc = _cli("check_cases")
        info = _info(inputs=(("x", "required"), ("b", "optional"), ("c", "optional")))
        self.assertEqual(cc._input_counts(info), [[1, 1, 1], [1, 0, 0]])
        cases = cc.generated_cases(info, sweep=False)
        self.assertEqual([[len(s) for s in c.inputs] for c in cases], [[1, 1, 1], [1, 0, 0]])
        self.assertEqual(cases[1].label, "inputs x=float32[2,3], b=absent, c=absent")


class ByteLimitsConfigTest(unittest.TestCase):
    """values.py at its byte limits: a tensor of exactly PYOP_CLI_MAX_BYTES
    is taken, one element more refused; a size of exactly 1 KiB, 1 MiB,
    1 GiB is said in that unit. Kills cli.cf.values.max_bytes_limit_eq."""

    def test_tensor_at_the_limit(self):
        values = _cli("values")
        with _MaxBytes(16):
            values.check_shape(0, [4], "x")  # float32[4]: 16 bytes, the limit
            values.check_shape(3, [2], "x")  # float64[2]
            with self.assertRaisesRegex(ValueError, r"float32\[5\] needs 20 bytes, more than "
                                                    r"the 16 bytes"):
                values.check_shape(0, [5], "x")

    def test_units_at_their_size(self):
        values = _cli("values")
        self.assertEqual([values._fmt_bytes(n) for n in (1023, 1024, 1 << 20, 1 << 30)],
                         ["1023 bytes", "1 KiB", "1 MiB", "1 GiB"])
        self.assertEqual(values._fmt_bytes((1 << 20) - 1), "1024 KiB")


class PluginValuesConfigTest(unittest.TestCase):
    """values.plugin_attr_value on every element of a list (the last held
    to the type as the first is), and an integer that is no Python int (a
    numpy integer is a numbers.Integral). Kills
    cli.cf.values.plugin_list_first_only, cli.cf.values.plugin_integral_only_int."""

    def test_last_element_checked(self):
        values = _cli("values")
        for t, good, bad in (("list[int]", [1, 2], [1, True]), ("list[float]", [0.5, 1],
                                                                  [0.5, "1"]),
                             ("list[bool]", [True, False], [True, 0]),
                             ("list[str]", ["a", "b"], ["a", 2])):
            with self.subTest(type=t):
                self.assertEqual(values.plugin_attr_value(good, t), good)
                with self.assertRaises(ValueError):
                    values.plugin_attr_value(bad, t)
                with self.assertRaises(ValueError):
                    values.plugin_attr_value(tuple(bad), t)

    def test_an_integral_that_is_no_int(self):
        values = _cli("values")

        class Int64:  # as numpy.int64: an Integral, not a subclass of int
            def __init__(self, v):
                self.v = v

            def __int__(self):
                return self.v

            __index__ = __int__
        numbers.Integral.register(Int64)
        self.assertEqual(values.plugin_attr_value(Int64(3), "int"), 3)
        self.assertEqual(values.plugin_attr_value([Int64(1), Int64(-2)], "list[int]"), [1, -2])
        self.assertEqual([int(v) for v in values.plugin_tensor_values(6, [Int64(7)], "x")],
                         [7])  # int32
        with self.assertRaises(ValueError):
            values.plugin_attr_value(Int64(1 << 63), "int")


class InputTextConfigTest(unittest.TestCase):
    """values.parse_input at the partitions of its text: a name with spaces
    around it (the shell's --input "x = float32[2]") is the input's name,
    a trailing comma after the values adds none. Kills
    cli.cf.values.input_name_unstripped, cli.cf.values.input_trailing_comma."""

    def test_name_and_values_edges(self):
        values = _cli("values")
        self.assertEqual(values.parse_input(" x =float32[2]:1,2"), ("x", 0, [2], [1.0, 2.0]))
        self.assertEqual(values.parse_input("x=int8[2]:1,2,"), ("x", 4, [2], [1, 2]))
        self.assertEqual(values.parse_input("x=int8[0]:"), ("x", 4, [0], []))

    def test_uint_values_are_integers(self):
        """An unsigned type's --input values are read as integers, as the
        signed types' are: 1,2 are ints (written exactly), 1.5 is refused
        (exit 2) rather than truncated to 1. Kills
        cli.b14.values.uint_values_as_floats."""
        values, errors = _cli("values"), _cli("errors")
        DTYPES = _cli("binding").DTYPES
        for name in ("uint8", "uint16", "uint32", "uint64"):
            with self.subTest(dtype=name):
                got = values.parse_input("x=%s[2]:1,2" % name)
                self.assertEqual(got, ("x", DTYPES.index(name), [2], [1, 2]))
                self.assertEqual([type(v) for v in got[3]], [int, int])
                with self.assertRaises(errors.UsageError) as cm:
                    values.parse_input("x=%s[2]:1.5,2" % name)
                self.assertRegex(cm.exception.message, r"'1\.5' is not a %s value" % name)
                self.assertEqual(cm.exception.exit_code, 2)
        big = (1 << 64) - 1  # exact: no float's rounding
        self.assertEqual(values.parse_input("x=uint64[1]:%d" % big)[3], [big])


class JsonNestedConfigTest(unittest.TestCase):
    """values.json_safe reaches every level: a non-finite float inside a
    dict inside a list (run --json's outputs) is written as text, and
    dump_json does not fail on it."""

    def test_inf_in_a_dict_in_a_list(self):
        values = _cli("values")
        got = values.json_safe({"outputs": [{"values": [math.inf, 1.0]}, [[-math.inf]]]})
        self.assertEqual(got, {"outputs": [{"values": ["inf", 1.0]}, [["-inf"]]]})


class RepeatedOptionsConfigTest(unittest.TestCase):
    """An option given twice: --attr NAME=... twice keeps the last (as
    --compile-option does), on run's, bench's and check's path alike
    (host._attrs_from_args)."""

    def test_attr_twice_last_wins(self):
        host = _cli("host")
        info = _info(attrs=({"name": "n", "type": "int", "required": False, "default": 1},
                            {"name": "s", "type": "str", "required": False, "default": ""}))
        args = argparse.Namespace(op="Op", attr=["n=2", "s=a", "n=3", "s=b=c"])
        self.assertEqual(host._attrs_from_args(info, args), {"n": 3, "s": "b=c"})


class ProtoFilesConfigTest(unittest.TestCase):
    """--proto given twice, two files declaring different REG_OPs
    (proto.register_protos): each op is said to come from its own file
    (list names it: "the REG_OP of --proto FILE"); and each input's and
    output's kind (optional, dynamic) reaches its pyop_io_info, the last
    as the first (proto._op_info). Kills cli.cf.proto.done_first_file,
    cli.cf.proto.io_kinds_required."""

    def setUp(self):
        self.proto = _cli("proto")
        saved = [dict(self.proto._declared), set(self.proto._unbound), set(self.proto._bound),
                 set(self.proto._noted)]

        def restore():
            for cur, old in zip((self.proto._declared, self.proto._unbound, self.proto._bound,
                                 self.proto._noted), saved):
                cur.clear()
                cur.update(old)
        self.addCleanup(restore)

    def _decl(self, op, line, inputs=(("x", 0),), outputs=(("y", 0),)):
        return {"op_type": op, "line": line, "inputs": list(inputs), "outputs": list(outputs),
                "attrs": []}

    def test_each_op_from_its_own_file(self):
        proto = self.proto
        registered = []
        lib = argparse.Namespace(check=lambda what, rc: None,
                                 c=argparse.Namespace(pyop_register_host_prototype=lambda p:
                                                      registered.append(p) or 0))
        files = {"/p/a.h": [self._decl("A", 3)], "/p/b.h": [self._decl("B", 4),
                                                            self._decl("C", 8)]}
        saved = proto.read_declarations
        proto.read_declarations = lambda lib, path: files[path]
        try:
            done = proto.register_protos(lib, list(files), "list")
        finally:
            proto.read_declarations = saved
        self.assertEqual(done, {"A": "/p/a.h", "B": "/p/b.h", "C": "/p/b.h"})
        self.assertEqual(len(registered), 3)
        self.assertEqual(proto._declared, {"A": "/p/a.h:3", "B": "/p/b.h:4", "C": "/p/b.h:8"})

    def test_kinds_of_each_io(self):
        keep = []
        o = self.proto._op_info(self._decl("Op", 2, inputs=(("x", 0), ("b", 1), ("xs", 2)),
                                           outputs=(("y", 0), ("ys", 2), ("o", 1))),
                                "/p/ops.h", keep)
        self.assertEqual([(o.inputs[k].name, o.inputs[k].kind) for k in range(o.n_inputs)],
                         [(b"x", 0), (b"b", 1), (b"xs", 2)])
        self.assertEqual([(o.outputs[k].name, o.outputs[k].kind) for k in range(o.n_outputs)],
                         [(b"y", 0), (b"ys", 2), (b"o", 1)])
        d = _cli("binding").info_to_dict(o)
        self.assertEqual([i["kind"] for i in d["inputs"]], ["required", "optional", "dynamic"])


class OutputNamesConfigTest(unittest.TestCase):
    """instance.exec_ctx names each output's buffer after its own output
    (a write past the end of the second output names the second), not the
    first's."""

    def test_second_output_named(self):
        import ctypes
        values, instance, b = _cli("values"), _cli("instance"), _cli("binding")
        bufs, allocated = values.Buffers(), {}
        ctx = instance.exec_ctx(bufs, allocated, ["y", "z"])
        ts = []
        for k, n in enumerate((4, 8)):
            t = b.Tensor()
            t.dtype, t.ndim, t.nbytes = 4, 1, n  # int8[n]
            t.shape[0] = n
            self.assertEqual(ctx.alloc_output(None, k, ctypes.pointer(t)), 0)
            ts.append(t)
        self.assertEqual(allocated, {0: (4, [4]), 1: (4, [8])})
        past = ctypes.string_at(ts[1].data + 8, 2)  # two bytes past the end of z, changed
        ctypes.memmove(ts[1].data + 8, bytes(c ^ 0xFF for c in past), 2)
        self.assertEqual(bufs.overruns(), ['output 1 "z" (2 bytes past its end)'])
        t = b.Tensor()
        t.dtype, t.nbytes = 4, 1
        self.assertEqual(ctx.alloc_output(None, 2, ctypes.pointer(t)), 0)  # past the names
        self.assertEqual(bufs.guards[-1][4], "output 2")


class GeneratedKindsConfigTest(unittest.TestCase):
    """check_cases.generated_cases with an optional and a dynamic input:
    the case with the optional inputs absent keeps the dynamic input's two
    tensors (only optional ones are left out); the attribute case's label
    says the attributes it changed. Kills cli.cf.check_cases.absent_dynamic_too."""

    def test_absent_case_keeps_dynamic(self):
        cc = _cli("check_cases")
        info = _info(inputs=(("x", "required"), ("b", "optional"), ("xs", "dynamic")))
        self.assertEqual(cc._input_counts(info), [[1, 1, 2], [1, 0, 2]])
        cases = cc.generated_cases(info, sweep=False)
        self.assertEqual([[len(s) for s in c.inputs] for c in cases], [[1, 1, 2], [1, 0, 2]])

    def test_attr_case_label(self):
        cc = _cli("check_cases")
        info = _info(attrs=({"name": "n", "type": "int", "required": False, "default": 1},
                            {"name": "on", "type": "bool", "required": False, "default": True}))
        case = cc.generated_cases(info)[-1]
        self.assertEqual(case.attrs, {"n": 2, "on": False})
        self.assertEqual(case.label, "inputs x=float32[2,3]; attrs n=2, on=false")
        self.assertEqual(case.short, "float32[2,3] (attrs n=2, on=false)")


class SampleFormsConfigTest(unittest.TestCase):
    """A plugin's sample tensor in each of its forms (check_cases): a
    [dtype, shape, values] list as a tuple is, for an input and for a
    Tensor attribute; an object with dtype/shape/tolist (a numpy array) for
    a Tensor attribute too. Kills cli.cf.check_cases.sample_list_refused,
    cli.cf.check_cases.tensor_attr_tuple_only."""

    class _Array:  # what a sample reads of a numpy array
        def __init__(self, dtype, shape, flat):
            self.dtype, self.shape, self.flat = dtype, shape, flat

        def reshape(self, _n):
            return self

        def tolist(self):
            return list(self.flat)

    def test_list_and_array_forms(self):
        cc = _cli("check_cases")
        self.assertEqual(cc._sample_tensor(["int8", [2], [1, 2]], "s"), (4, [2], [1, 2]))
        self.assertEqual(cc._sample_tensor(("int8", (2,), [1, 2]), "s"), (4, [2], [1, 2]))
        info = _info(attrs=({"name": "w", "type": "Tensor", "required": True},))
        for w in (["float32", [2], [0.5, 1.0]], ("float32", [2], [0.5, 1.0]),
                  self._Array("float32", (2,), [0.5, 1.0])):
            with self.subTest(w=w):
                case, = cc.sample_cases(info, lambda: [{"inputs": {"x": ("float32", [1], [1.0])},
                                                        "attrs": {"w": w}}], "p.py:2")
                self.assertEqual(case.attrs, {"w": (0, [2], [0.5, 1.0])})


class OriginTextConfigTest(unittest.TestCase):
    """plugins._origin_of_text when the text's first line names another
    exception than the innermost frame raised (a chained exception, the
    bridge's summary line): the type and message said after that frame.
    Kills cli.cf.plugins.origin_head_first_line."""

    def test_head_after_the_innermost_frame(self):
        plugins = _cli("plugins")
        text = ("RuntimeError: execute failed\n"
                "Traceback (most recent call last):\n"
                '  File "/p/op.py", line 9, in execute\n'
                "    check(x)\n"
                '  File "/p/lib.py", line 4, in check\n'
                '    raise ValueError("x must be 2-D")\n'
                "ValueError: x must be 2-D")
        self.assertEqual(plugins._origin_of_text(text),
                         (("ValueError",), "/p/lib.py", 4, "ValueError: x must be 2-D"))


class DoctorLanesConfigTest(unittest.TestCase):
    """doctor_report's "lanes" (doctor --json): only the ops with something
    to say of lanes (parallel in N lanes, or serial with a reason), not
    every op. Kills cli.cf.doctor.lanes_every_op."""

    def test_only_ops_with_a_lanes_line(self):
        import contextlib
        import io
        from test_cli_rules import _DoctorHost
        doctor = _cli("doctor")

        class Host(_DoctorHost):
            def op_info(self, t):
                i = _DoctorHost.op_info(self, t)
                i.update({"A": {"lanes": 2}, "C": {"serial_reason": "uses ctypes"}}.get(t, {}))
                return i
        saved = doctor._discover, doctor.loaded_impls
        doctor._discover, doctor.loaded_impls = (lambda el: []), (lambda: [])
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                rep = doctor.doctor_report(Host(False, [("/x/b.py", "python-file")]), 0)
        finally:
            doctor._discover, doctor.loaded_impls = saved
        self.assertEqual(rep["load"]["ops"], ["A", "B", "C"])
        self.assertEqual(rep["lanes"], [{"op_type": "A", "lanes": 2, "serial_reason": None},
                                        {"op_type": "C", "lanes": 0,
                                         "serial_reason": "uses ctypes"}])


class CommandWordsConfigTest(unittest.TestCase):
    """The subcommand named by the first command word (main.main): a plugin
    directory or op named like another subcommand after it ("pyop check
    run", ./run holding the plugins) does not make the failure that of the
    other command. And --lanes N reaches pyop_options.lanes from N = 1 on
    (main._main), 0 leaving the options alone. Kills
    cli.cf.main.command_last_word, cli.cf.main.one_lane_dropped."""

    def test_first_command_word(self):
        import subprocess
        tools = os.environ.get("PYOP_TEST_TOOLS")
        if not tools:
            raise unittest.SkipTest("PYOP_TEST_TOOLS is not set (run through ctest)")
        env = dict(os.environ, PYTHONPATH=tools)
        env.pop("PYOP_PYTHON", None)
        r = subprocess.run([sys.executable, "-m", "pyop_cli", "check", "run", "--bogus"],
                           env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertEqual(r.stderr, "pyop: check: unrecognized arguments: --bogus "
                                   "(see pyop --help)\n")

    def test_lanes_from_one(self):
        main = _cli("main")
        lanes = []
        saved = (main.Lib, main._find_library, main._register_protos, main.cmd_list,
                 main.note_unused)
        main.Lib = lambda path: argparse.Namespace(shutdown=lambda: None,
                                                   set_lanes=lanes.append)
        main._find_library = lambda: "/lib/libpyop.so"
        main._register_protos = lambda lib, files, command, notes: {}
        main.cmd_list = lambda lib, args: 0
        main.note_unused = lambda command: None
        try:
            for n in ("0", "1", "2"):
                self.assertEqual(main._main(["--lanes", n, "list"], "list"), 0)
        finally:
            (main.Lib, main._find_library, main._register_protos, main.cmd_list,
             main.note_unused) = saved
        self.assertEqual(lanes, [1, 2])


class WorkerProblemsConfigTest(unittest.TestCase):
    """check_worker.Worker._check_op for an op with both annotation
    problems and problems its runs found: the report holds both, the
    annotations' first; no reference is null, not an empty tolerance.
    Kills cli.cf.check_worker.annotations_replace_runs,
    cli.cf.check_worker.reference_empty_list."""

    def test_both_kinds_of_problem(self):
        cw = _cli("check_worker")
        verdict = {"ran": ["float32[2,3]"], "refused": [], "refusals": [],
                   "problems": ["inputs x=float32[2,3]: output y differs"], "warnings": [],
                   "notes": [], "inconclusive": None, "why": None,
                   "stages": {"infer_meta": 1, "execute": 2}, "threads": 0}
        names = ("annotation_problems", "run_cases", "is_deterministic", "find_reference",
                 "plugin_samples")
        saved = [getattr(cw, n) for n in names]
        cw.annotation_problems = lambda info: ["execute() (/p/a.py:3): parameter x is "
                                               "annotated list[Tensor]"]
        cw.run_cases = lambda lib, info, cases, mon, det, reference=None: dict(
            verdict, problems=list(verdict["problems"]))
        cw.is_deterministic = lambda info: True
        cw.find_reference = lambda info: None
        cw.plugin_samples = lambda: {}
        sent = []
        try:
            lib = argparse.Namespace(op_info=lambda t: dict(_info(), impl_key="pyop:a",
                                                            proto_source="/p/a.py:1"))
            w = cw.Worker(lib, argparse.Namespace(input=None, attr=None),
                          {"done": [], "paths": ["/p"]},
                          argparse.Namespace(send=sent.append))
            entry = w._check_op("Op", "/p/a.py", [])
        finally:
            for n, v in zip(names, saved):
                setattr(cw, n, v)
        self.assertEqual(entry["status"], "failed")
        self.assertEqual(entry["problems"], [
            "execute() (/p/a.py:3): parameter x is annotated list[Tensor]",
            "inputs x=float32[2,3]: output y differs"])
        self.assertEqual(entry["checked"], ["infer_meta", "execute"])
        self.assertIsNone(entry["reference"])  # no reference: null, not an empty tolerance
        self.assertEqual(sent[0]["e"], "op_begin")

    def test_typo_note_of_an_infer_only_op(self):
        """A prototype with no implementation whose infer_meta passed
        (infer-only) beside an implementation waiting for a prototype of a
        close name gets the typo note, as an inconclusive one does."""
        cw = _cli("check_worker")
        names = ("annotation_problems", "run_cases", "is_deterministic", "find_reference",
                 "plugin_samples")
        saved = [getattr(cw, n) for n in names]
        cw.annotation_problems = lambda info: []
        cw.run_cases = lambda lib, info, cases, mon, det, reference=None: {
            "ran": [], "refused": [], "refusals": [], "problems": [], "warnings": [],
            "notes": [], "inconclusive": None, "why": None, "stages": {"infer_meta": 3}, "npu": [],
            "threads": 0}
        cw.is_deterministic = lambda info: True
        cw.find_reference = lambda info: None
        cw.plugin_samples = lambda: {}
        try:
            lib = argparse.Namespace(op_info=lambda t: dict(_info(), op_type=t, impl_key=None,
                                                            proto_source="/p/ops.h:4"))
            w = cw.Worker(lib, argparse.Namespace(input=None, attr=None),
                          {"done": [], "paths": ["/p"]}, argparse.Namespace(send=lambda e: None))
            entry = w._check_op("ScaledAdd", "/p", [{"op_type": "ScaledAd",
                                                      "impl_source": "/p/b.py:3"}])
        finally:
            for n, v in zip(names, saved):
                setattr(cw, n, v)
        self.assertEqual(entry["status"], "infer-only")
        self.assertEqual(entry["notes"], [
            "no implementation is loaded for ScaledAdd, and one waits for a prototype of "
            "ScaledAd (/p/b.py:3): a typo in an op_type?"])


class PluginIndexConfigTest(unittest.TestCase):
    """check_plugin's index of the loaded plugins across two loads: the
    second load's modules are indexed afresh (its class, not the first's),
    and forget_plugins (after each load's check) keeps nothing of an
    unloaded plugin alive (the bridge warns about plugin objects still
    referenced at shutdown)."""

    def _module(self, name, key):
        import types
        mod = types.ModuleType(name)
        cls = type("Impl", (), {"__pyop_descriptor__": argparse.Namespace(key=key)})
        mod.Impl = cls
        sys.modules[name] = mod
        self.addCleanup(sys.modules.pop, name, None)
        return cls

    def test_second_load_and_forget(self):
        import gc
        import weakref
        cp = _cli("check_plugin")
        cp.forget_plugins()
        first = self._module("_pyop_plugin_cfg_1", "pyop:a")
        self.assertIs(cp.impl_class({"impl_key": "pyop:a"}), first)
        cp.forget_plugins()
        del sys.modules["_pyop_plugin_cfg_1"]
        gone = weakref.ref(first)
        del first
        second = self._module("_pyop_plugin_cfg_2", "pyop:a")  # the next load's
        self.assertIs(cp.impl_class({"impl_key": "pyop:a"}), second)
        cp.forget_plugins()
        gc.collect()
        self.assertIsNone(gone())  # nothing of the first load held
        del sys.modules["_pyop_plugin_cfg_2"]
        ref = weakref.ref(second)
        del second
        gc.collect()
        self.assertIsNone(ref())
        self.assertIsNone(cp.impl_class({"impl_key": "pyop:a"}))


class WorkerDonePluginsConfigTest(unittest.TestCase):
    """A check worker started after two plugins of three were reported
    (check_worker.Worker.run, plugin by plugin): it checks only the third,
    the second done plugin skipped as the first is."""

    def test_only_the_plugin_not_done(self):
        import shutil
        import tempfile
        cw = _cli("check_worker")
        root = tempfile.mkdtemp(prefix="pyop-cfg-")
        self.addCleanup(shutil.rmtree, root, True)
        for n in ("a.py", "b.py", "c.py"):
            open(os.path.join(root, n), "w").close()
        sent, checked = [], []
        job = {"paths": [root], "phase": "each", "done": [],
               "done_plugins": [os.path.join(root, "a.py"), os.path.join(root, "b.py")]}
        w = cw.Worker(argparse.Namespace(), argparse.Namespace(input=None, attr=None), job,
                      argparse.Namespace(send=sent.append))
        w._one_plugin = checked.append
        w.run()
        self.assertEqual(checked, [os.path.join(root, "c.py")])
        self.assertEqual(sent, [{"e": "plugin_done", "plugin": os.path.join(root, "c.py")}])


class BenchNoInputsConfigTest(unittest.TestCase):
    """bench's text for an op with no inputs and no attributes: "inputs:
    none", not an empty list. Kills cli.cf.bench.no_inputs_unsaid."""

    def test_inputs_none(self):
        import contextlib
        import io
        bench = _cli("bench")
        result = {"op_type": "Op", "calls": 4, "repeat": 1, "mode": "execute",
                  "execute_ns": 300.0, "ctypes_call_ns": 200.0,
                  "execute_minus_ctypes_ns": 100.0, "inputs": [], "attrs": {}}
        saved = bench._bench
        bench._bench = lambda lib, args: (result, {})
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                rc = bench.cmd_bench(argparse.Namespace(load=lambda: None), argparse.Namespace(
                    op="Op", json=False, calls=4, repeat=1, compile_option=None))
        finally:
            bench._bench = saved
        self.assertEqual(rc, 0)
        self.assertEqual(out.getvalue().splitlines()[1], "inputs: none")


class BenchBufferGrowConfigTest(unittest.TestCase):
    """bench's reused output buffers (bench._reusing_ctx) one byte past
    their size: an output one byte larger than its buffer gets a new,
    large enough one (the op never writes past the command's buffer).
    Kills cli.cf.bench.grow_one_short."""

    def test_one_byte_larger(self):
        import ctypes
        bench, values, b = _cli("bench"), _cli("values"), _cli("binding")
        bufs = values.Buffers()
        ctx = bench._reusing_ctx(bufs)
        t = b.Tensor()
        got = []
        for n in (8, 8, 9, 9):
            t.nbytes, t.data = n, None
            self.assertEqual(ctx.alloc_output(None, 0, ctypes.pointer(t)), 0)
            got.append(t.data)
        self.assertEqual(got[0], got[1])
        self.assertNotEqual(got[2], got[0])  # 9 bytes do not fit the 8 of the first
        self.assertEqual(got[3], got[2])


class SupervisorDeathConfigTest(unittest.TestCase):
    """check_supervise.Supervisor when a worker dies on the third case of an
    op, after two ran (one refused, one with a problem): the failed op's
    report keeps every case that ran before, each problem found before and
    the refusal, not only the last of each; two plugins' warnings and
    broken entries are each kept."""

    def _run(self, events, status):
        cs = _cli("check_supervise")
        sup = cs.Supervisor(argparse.Namespace(path="/lib/libpyop.so"),
                            argparse.Namespace(lanes=0, proto=None, input=None, attr=None),
                            {"paths": ["/ops"], "done": [], "done_plugins": [],
                             "phase": "each"}, 2.5)

        class Proc:
            def wait(self):
                return status

        saved = cs.spawn, cs.read_events
        cs.spawn = lambda argv_of: (Proc(), os.open(os.devnull, os.O_RDONLY))
        cs.read_events = lambda proc, rfd, limit, on_event: [on_event(e) for e in events] and False
        try:
            return sup, sup._one_worker()
        finally:
            cs.spawn, cs.read_events = saved

    def test_death_on_the_third_case(self):
        a = {"plugin": "/ops/a.py", "op": "A"}
        refusal = {"case": "int8[2,3]", "reason": "ValueError: no int8", "file": "/ops/a.py",
                   "line": 4}
        sup, got = self._run([
            {"e": "warning", "text": "w1"},
            {"e": "broken", "plugin": "/ops/z.py", "problem": "SyntaxError"},
            dict(a, e="op_begin", source="/ops/a.py:3", inputs="generated"),
            dict(a, e="activity", stage="execute", case="inputs x=float32[2,3]",
                 short="float32[2,3]"),
            dict(a, e="ran", case="inputs x=float32[2,3]", short="float32[2,3]"),
            dict(a, e="problem", case="inputs x=float32[2,3]", short="float32[2,3]",
                 text="output y differs"),
            dict(a, e="refused", case="inputs x=int8[2,3]", short="int8[2,3]",
                 refusal=refusal),
            dict(a, e="ran", case="inputs x=float16[2,3]", short="float16[2,3]"),
            dict(a, e="refused", case="inputs x=int16[2,3]", short="int16[2,3]",
                 refusal=dict(refusal, case="int16[2,3]")),
            dict(a, e="problem", case="inputs x=float16[2,3]", short="float16[2,3]",
                 text="input x was written"),
            {"e": "warning", "text": "w2"},
            {"e": "broken", "plugin": "/ops/y.py", "problem": "ImportError"},
            dict(a, e="activity", stage="execute", case="inputs x=int32[2,3]",
                 short="int32[2,3]")], -9)
        self.assertFalse(got)
        op, = sup.ops
        self.assertEqual((op["op_type"], op["status"]), ("A", "failed"))
        self.assertEqual(op["ran"], ["float32[2,3]", "float16[2,3]"])
        self.assertEqual((op["refused"], op["refusals"]), (
            ["int8[2,3]", "int16[2,3]"], [refusal, dict(refusal, case="int16[2,3]")]))
        self.assertEqual(op["problems"], [
            "inputs x=float32[2,3]: output y differs",
            "inputs x=float16[2,3]: input x was written",
            "inputs x=int32[2,3]: execute ended the process running the check: killed by "
            "SIGKILL"])
        self.assertEqual(op["checked"], ["execute"])
        self.assertEqual(sup.warnings, ["w1", "w2"])
        self.assertEqual(sup.broken, [{"plugin": "/ops/z.py", "problem": "SyntaxError"},
                                      {"plugin": "/ops/y.py", "problem": "ImportError"}])
        self.assertEqual(sup.job["done"], [["/ops/a.py", "A"]])


class VerdictOrderConfigTest(unittest.TestCase):
    """check_verdict's rules where the element in question is not the one
    the other tests put first: a write into the second input when the first
    is a declared mutated one is still a problem; of two refusals, the
    inconclusive reason names the first. Kills cli.cf.check_verdict.mutated_first_ends_scan."""

    def test_write_after_a_mutated_input(self):
        from test_cli_rules import _Run
        cv = _cli("check_verdict")
        info = _info(inputs=(("acc", "required"), ("x", "required"), ("xs", "dynamic")))
        info["inputs"][0]["mutated"] = True
        res = _Run(before=[[b"a"], [b"b"], [b"c", b"d"]], after=[[b"A"], [b"B"], [b"c", b"D"]])
        self.assertEqual(cv._contract_problems(info, "c", res), [
            "c: input x was written, but it is not declared in mutates_args",
            "c: input xs[1] was written, but it is not declared in mutates_args"])

    def test_every_generated_input_refused_names_the_first(self):
        cv = _cli("check_verdict")
        v = cv._new_verdict()
        v["refusals"] = [{"case": "float32[2,3]", "reason": "ValueError: no", "file": "/p/a.py",
                          "line": 3},
                         {"case": "int8[2,3]", "reason": "TypeError: int", "file": "/p/a.py",
                          "line": 5}]
        v["stages"] = {"infer_meta": 2}
        self.assertEqual(cv.op_status(dict(_info(), impl_key="pyop:a"), v), "inconclusive")
        self.assertEqual(v["inconclusive"], (
            "infer_meta refused every generated input (float32[2,3]: ValueError: no, "
            "/p/a.py:3); give inputs it accepts with @pyop.register_samples in the plugin, "
            "or --input/--attr"))


class WhereConfigTest(unittest.TestCase):
    """errors._where (--json's file and line of a failure) with a traceback
    of two frames: the innermost frame's file with its own line, not the
    outer frame's line."""

    def test_innermost_file_and_line(self):
        errors = _cli("errors")
        text = ("RuntimeError: no\nTraceback (most recent call last):\n"
                '  File "/p/op.py", line 9, in execute\n    helper()\n'
                '  File "/p/lib.py", line 2, in helper\n    raise RuntimeError("no")\n'
                "RuntimeError: no")
        got = errors.CliError(text, "PYOP_EPYTHON", "Op").to_json()
        self.assertEqual((got["file"], got["line"], got["op"]), ("/p/lib.py", 2, "Op"))


class RunJsonConfigTest(unittest.TestCase):
    """run --json when the command generated an input's values (an --input
    without VALUES): stdout is the JSON object alone (the generated inputs
    in its "inputs"), no "input x (generated)" line before it as the text
    output has."""

    def _cmd(self, as_json):
        import contextlib
        import ctypes
        import io
        import json
        run, b, values = _cli("run"), _cli("binding"), _cli("values")
        info = _info(inputs=(("x", "required"),))
        x = b.Tensor()
        x.dtype, x.ndim, x.shape[0] = 0, 1, 2
        y = b.Tensor()
        y.dtype, y.ndim, y.shape[0] = 0, 1, 2
        before = values.encode_values(0, [0.0, 0.5])

        class Res:
            inputs, produced = [[x]], [[(y, [1.0, 2.0])]]
        Res.before = [[before]]
        saved = run.run_as_a_host
        run.run_as_a_host = lambda lib, args, command, seen: (seen(info, Res), (info, None, {},
                                                                               Res))[1]
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                rc = run.cmd_run(None, argparse.Namespace(op="Op", json=as_json,
                                                          input=["x=float32[2]"], attr=None))
        finally:
            run.run_as_a_host = saved
        self.assertEqual(rc, 0)
        return out.getvalue()

    def test_failed_before_the_call(self):
        """The run failed before the call (compile refused the inputs: no
        bytes were taken of them): the command reports that failure, no
        error of its own in listing the generated inputs."""
        import contextlib
        import io
        run, b, errors = _cli("run"), _cli("binding"), _cli("errors")
        info = _info(inputs=(("x", "required"),))
        x = b.Tensor()
        x.dtype, x.ndim, x.shape[0] = 0, 1, 2

        class Res:
            inputs, before, produced = [[x]], [], None
        failure = errors.CliError('compile of "Op" failed', "PYOP_EPYTHON", "Op")

        def host(lib, args, command, seen):
            seen(info, Res)
            raise failure
        saved = run.run_as_a_host
        run.run_as_a_host = host
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), self.assertRaises(errors.CliError) as cm:
                run.cmd_run(None, argparse.Namespace(op="Op", json=False,
                                                     input=["x=float32[2]"], attr=None))
        finally:
            run.run_as_a_host = saved
        self.assertIs(cm.exception, failure)
        self.assertEqual(out.getvalue(), "")

    def test_json_alone(self):
        import json
        got = json.loads(self._cmd(True))
        self.assertEqual(got["inputs"], [{"name": "x", "dtype": "float32", "shape": [2],
                                          "values": [0.0, 0.5], "generated": True}])
        self.assertEqual(got["outputs"][0]["values"], [1.0, 2.0])
        self.assertEqual(self._cmd(False), "input x (generated): float32[2] = [0, 0.5]\n"
                                           "y: float32[2] = [1, 2]\n")


class FlushConfigTest(unittest.TestCase):
    """output.flush at the command's end when a stream is already closed (a
    plugin closed sys.stdout, a reader gone): the others are flushed, no
    exception ends the command before its exit status. Kills
    cli.cf.output.flush_closed_raises."""

    def test_closed_stream(self):
        import io
        output = _cli("output")
        rfd, wfd = os.pipe()
        os.close(rfd)
        closed, err = os.fdopen(wfd, "w"), io.StringIO()
        closed.close()  # its flush: ValueError (I/O operation on closed file)
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = closed, err
        try:
            err.write("said")
            output.flush()
        finally:
            sys.stdout, sys.stderr = saved
        self.assertEqual(err.getvalue(), "said")


class AttrListBracketsConfigTest(unittest.TestCase):
    """--attr NAME=[...] for a list attribute (values.parse_attr_text): the
    brackets are taken off only as a pair; an unclosed "[1,2" is a usage
    error, never the list [1] with its last element dropped (a real bug
    of session 12: body[1:-1] took off the "2" for the missing "]")."""

    def test_unclosed_bracket_refused(self):
        values, errors = _cli("values"), _cli("errors")
        for text, want in (("[1,2]", [1, 2]), ("1,2", [1, 2]), ("[]", []), ("[ 3 ]", [3])):
            self.assertEqual(values.parse_attr_text(text, "list[int]", "axes", "Op"), want)
        for text in ("[1,2", "[", "1,2]"):
            with self.subTest(text=text), self.assertRaises(errors.UsageError) as cm:
                values.parse_attr_text(text, "list[int]", "axes", "Op")
            self.assertEqual(cm.exception.exit_code, 2)
        self.assertEqual(values.parse_attr_text("[0.5,1]", "list[float]", "w"), [0.5, 1.0])


class StrValueNulConfigTest(unittest.TestCase):
    """binding.attr_value_to_py reads a str (and each list[str] item) as the
    pointer and length libpyop gives: a value holding a NUL comes back
    whole (a real bug of session 12: the c_char_p field was read as a
    Python bytes copy cut at the NUL, then `len` bytes were read from that
    copy, past its end: 'a\\0b' came back 'a\\0\\0' or with garbage)."""

    def test_nul_inside(self):
        b, values = _cli("binding"), _cli("values")
        for t, value in (("str", "a\0b"), ("str", "\0"), ("str", "ab\0"),
                         ("list[str]", ["a\0bc", "", "d\0"])):
            with self.subTest(value=value):
                a, keep = b.AttrValue(), []
                values.set_attr_value(a, t, value, keep)
                self.assertEqual(b.attr_value_to_py(a), value)


class ReferenceKindsConfigTest(unittest.TestCase):
    """check's reference comparison (check_plugin) with a list attribute of
    three numbers (a list, not a Tensor attribute's (dtype, shape, values)
    tuple: passed to the reference as the list, and its first number is no
    data type, so a 2 there does not read as bfloat16 and skip the
    comparison), and with an optional output among required ones (one
    tensor, compared whole, not split into rows as a dynamic output is).
    Kills cli.cf.check_plugin.list_attr_as_tensor,
    cli.cf.check_plugin.list_attr_as_bfloat16,
    cli.cf.check_plugin.optional_output_as_dynamic."""

    def _np(self):
        try:
            import numpy
        except ImportError:
            self.skipTest("no numpy in this Python")
        return numpy

    def test_list_attribute_of_three(self):
        np = self._np()
        cc, cp = _cli("check_cases"), _cli("check_plugin")
        from test_cli_rules import _T
        info = _info(attrs=({"name": "axes", "type": "list[int]", "required": False,
                             "default": [0]},
                            {"name": "w", "type": "Tensor", "required": True}))
        case = cc.Case("c", [[(0, [2], [1.0, 2.0])]],
                       {"axes": [2, 0, 1], "w": (0, [1], [0.5])}, "generated")
        args, attrs = cp._reference_args(info, case, np)
        self.assertEqual(attrs["axes"], [2, 0, 1])
        self.assertEqual(attrs["w"].tolist(), [0.5])

        class R:
            produced = [[(_T(0, [2]), [1.0, 2.0])]]
        seen = []
        got = cp.reference_problem(info, case, R(), (lambda x, axes, w: seen.append(axes)
                                                     or x * 2, (0, 0)))
        self.assertEqual(seen, [[2, 0, 1]])  # called: nothing in the case is bfloat16
        self.assertEqual(got, "output y differs from the reference at element 0: 1.0, the "
                              "reference 2.0 (rtol=0, atol=0)")

    def test_optional_output_compared_whole(self):
        np = self._np()
        cc, cp = _cli("check_cases"), _cli("check_plugin")
        from test_cli_rules import _T
        info = _info(outputs=(("y", "required"), ("aux", "optional")))
        case = cc.Case("c", [[(0, [2, 2], [1.0, 2.0, 3.0, 4.0])]], {}, "generated")

        class R:
            produced = [[(_T(0, [2, 2]), [1.0, 2.0, 3.0, 4.0])],
                        [(_T(0, [2, 2]), [2.0, 4.0, 6.0, 8.0])]]
        ref = (lambda x: (x, x * 2), (0, 0))
        self.assertIsNone(cp.reference_problem(info, case, R(), ref))
        R.produced[1] = [(_T(0, [2, 2]), [2.0, 4.0, 6.0, 9.0])]
        self.assertEqual(cp.reference_problem(info, case, R(), ref),
                         "output aux differs from the reference at element 3: 9.0, the "
                         "reference 8.0 (rtol=0, atol=0)")


class BuildPythonNamesConfigTest(unittest.TestCase):
    """host._other_python_note when the build's Python is another name for
    this very interpreter (a symlink, as /usr/bin/python3 to python3.11):
    no "NOT the build's Python" note (run, bench and check would warn of a
    difference there is none of); another interpreter gets it. Kills
    cli.cf.host.build_python_by_name."""

    def test_symlink_is_the_same_python(self):
        import shutil
        import tempfile
        host, config = _cli("host"), _cli("config")
        root = tempfile.mkdtemp(prefix="pyop-cfg-")
        self.addCleanup(shutil.rmtree, root, True)
        alias = os.path.join(root, "python-alias")
        os.symlink(sys.executable, alias)
        other = os.path.join(root, "other-python")
        open(other, "w").close()
        saved = config.BUILD_PYTHON
        try:
            config.BUILD_PYTHON = alias
            self.assertIsNone(host._other_python_note())
            config.BUILD_PYTHON = other
            self.assertIn("NOT the build's Python %s" % other, host._other_python_note())
        finally:
            config.BUILD_PYTHON = saved


class RunDynamicOneConfigTest(unittest.TestCase):
    """run's text for a dynamic output that produced one tensor: "1 tensor"
    and that tensor as ys[0], as --json has it in "tensors". Kills
    cli.cf.run.one_tensor_plural."""

    def test_one_tensor(self):
        import contextlib
        import io
        import json
        run, b = _cli("run"), _cli("binding")
        info = _info(inputs=(("x", "required"),), outputs=(("ys", "dynamic"),))
        y = b.Tensor()
        y.dtype, y.ndim, y.shape[0] = 0, 1, 1

        class Res:
            inputs, before, produced = [[]], [[]], [[(y, [3.0])]]
        saved = run.run_as_a_host
        run.run_as_a_host = lambda lib, args, command, seen: (info, None, {}, Res)
        try:
            outs = []
            for as_json in (False, True):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    run.cmd_run(None, argparse.Namespace(op="Op", json=as_json,
                                                         input=["x=float32[1]:1"], attr=None))
                outs.append(out.getvalue())
        finally:
            run.run_as_a_host = saved
        self.assertEqual(outs[0], "ys: 1 tensor\nys[0]: float32[1] = [3]\n")
        self.assertEqual(json.loads(outs[1])["outputs"][0]["tensors"],
                         [{"dtype": "float32", "shape": [1], "values": [3.0]}])


class RunFailureShowsInputsConfigTest(unittest.TestCase):
    """run_as_a_host when the op fails: what the run was given is shown
    (seen) before the failure is raised, so `pyop run` prints the inputs
    it generated that the op failed on. Kills cli.b11.run.inputs_unsaid_on_failure."""

    def test_seen_before_the_failure(self):
        run, errors = _cli("run"), _cli("errors")
        info = _info(inputs=())
        failure = errors.CliError('execute of "Op" failed', "PYOP_EPYTHON", "Op")

        class Res:
            error = failure

        class Lib:
            def load(self):
                pass

            def op_info(self, op):
                return info
        saved = run.run_op
        run.run_op = lambda lib, info, inputs, attrs, stage: Res
        seen = []
        try:
            with self.assertRaises(errors.CliError) as cm:
                run.run_as_a_host(Lib(), argparse.Namespace(op="Op", input=None, attr=None,
                                                            compile_option=None), "run",
                                  lambda i, r: seen.append((i, r)))
        finally:
            run.run_op = saved
        self.assertIs(cm.exception, failure)
        self.assertEqual(seen, [(info, Res)])


class BenchTimedConfigTest(unittest.TestCase):
    """bench's timed steps and its --json: each timed execute step is
    announced as --calls calls long (its limit is --timeout per call), and
    the result says --calls as "calls" and --repeat as "repeat". Kills
    cli.b11.bench.timed_activity_one_call, cli.b11.bench.json_calls_repeat_swapped."""

    def test_timed_step_is_calls_long(self):
        bench = _cli("bench")
        said = []
        lib = argparse.Namespace(c=argparse.Namespace(pyop_op_capabilities=lambda op: 0))
        saved = bench.activity
        bench.activity = lambda stage, op=None, calls=1: said.append((stage, op, calls))
        try:
            ex_t, base_t = bench._time(lib, argparse.Namespace(op="Op", calls=7, repeat=2),
                                       None, lambda: 0, (), None, False)
        finally:
            bench.activity = saved
        self.assertEqual((len(ex_t), len(base_t)), (2, 2))
        self.assertEqual(said, [("timed execute (7 calls)", "Op", 7)] * 3)

    def test_json_calls_and_repeat(self):
        bench = _cli("bench")
        info = _info(inputs=(), outputs=())

        class Inst:
            op = None

            def __init__(self, lib, info, attrs):
                pass

            def run(self, inputs, stage):
                return argparse.Namespace(error=None)

            def destroy(self):
                pass
        saved = bench.Instance, bench._timed_call, bench._time, bench.activity
        bench.Instance = Inst
        bench._timed_call = lambda *a: (None, None, None)
        bench._time = lambda *a: ([2e-7], [1e-7])
        bench.activity = lambda *a, **k: None
        try:
            got, _ = bench._bench(argparse.Namespace(op_info=lambda op: info), argparse.Namespace(
                op="Op", calls=7, repeat=3, input=None, size=4, attr=None))
        finally:
            bench.Instance, bench._timed_call, bench._time, bench.activity = saved
        self.assertEqual((got["calls"], got["repeat"]), (7, 3))


class StopKillsSessionConfigTest(unittest.TestCase):
    """supervise.stop ends the worker's whole session: a process a plugin
    started (here holding the event pipe open) is killed with the worker,
    so the pipe ends. Kills cli.b11.supervise.stop_spares_children."""

    def test_child_of_the_worker_killed(self):
        import select
        import signal
        sv = _cli("supervise")
        script = ("import os, subprocess, sys, time\n"
                  "fd = int(sys.argv[1])\n"
                  "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
                  " pass_fds=(fd,), stdout=subprocess.DEVNULL)\n"
                  "os.write(fd, b'started\\n')\n"
                  "time.sleep(60)\n")
        proc, rfd = sv.spawn(lambda fd: [sys.executable, "-c", script, str(fd)])
        try:
            self.assertTrue(select.select([rfd], [], [], 30)[0])
            self.assertEqual(os.read(rfd, 100), b"started\n")
            sv.stop(proc)
            # every process holding the pipe's write end is gone: it ends
            self.assertTrue(select.select([rfd], [], [], 10)[0], "the plugin's process lives")
            self.assertEqual(os.read(rfd, 100), b"")
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(rfd)


class GeNestedClassConfigTest(unittest.TestCase):
    """check finds a GE implementation class by libpyop's key, which holds
    the class's qualified name: a class nested in another (and bound at the
    module's top level) is found, so its deterministic=False is honoured.
    Kills cli.b11.check_plugin.ge_key_by_name."""

    def setUp(self):
        names = ("pyop._loader", "pyop.ext", "_pyopplg5_a")
        self.saved = {n: sys.modules.get(n) for n in names}
        self.addCleanup(self._restore)

    def _restore(self):
        for n, m in self.saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m
        _cli("check_plugin").forget_plugins()

    def _module(self, name, **objs):
        mod = type(sys)(name)
        mod.__dict__.update(objs)
        sys.modules[name] = mod

    def test_nested_class_found(self):
        from test_cli_rules import _Desc
        cp = _cli("check_plugin")
        cp.forget_plugins()
        self._module("pyop._loader", PLUGIN_PREFIX="_pyopplg5_")
        self._module("pyop.ext", module_label=lambda name: "g")

        class Outer:
            class Impl:
                __ge_op_impl_descriptor__ = _Desc(op_type="Noise")
                __pyop_deterministic__ = False
        Outer.Impl.__module__ = "_pyopplg5_a"
        Outer.Impl.__qualname__ = "Outer.Impl"
        self._module("_pyopplg5_a", Outer=Outer, Impl=Outer.Impl)
        info = {"op_type": "Noise", "impl_key": "ge:g:Outer.Impl:Noise"}
        self.assertIs(cp.impl_class(info), Outer.Impl)
        self.assertFalse(cp.is_deterministic(info))


class DoctorLanesStartConfigTest(unittest.TestCase):
    """doctor --lanes: the start_python report names the artifact libpyop
    starts with the lanes asked for (not the build's default, which cannot
    run them) and says why. Kills cli.b12.doctor.start_choice_without_lanes."""

    def test_lanes_start_another_artifact(self):
        import shutil
        import tempfile
        from test_cli_rules import _manifest
        doctor, config = _cli("doctor"), _cli("config")
        root = tempfile.mkdtemp(prefix="pyop-doctor-")
        self.addCleanup(shutil.rmtree, root)
        for name, m in (("py311", _manifest(tag="cp311", version=0x030B09F0)),
                        ("py312", _manifest())):
            os.mkdir(os.path.join(root, name))
            with open(os.path.join(root, name, "manifest.txt"), "w") as f:
                f.write("".join("%s=%s\n" % kv for kv in m.items()))
        saved = config.BUILD_ARTIFACT, config.BUILD_ARTIFACTS
        try:
            config.BUILD_ARTIFACT, config.BUILD_ARTIFACTS = "py311", "py311;py312"
            rep = doctor.start_python_report(root, 2)
            self.assertEqual((rep["artifact"], rep["default"]), ("py312", "py311"))
            self.assertIn("starting py312 instead of the build's default py311", rep["note"])
            rep = doctor.start_python_report(root, 0)
            self.assertEqual((rep["artifact"], rep["note"]), ("py311", None))
        finally:
            config.BUILD_ARTIFACT, config.BUILD_ARTIFACTS = saved


if __name__ == "__main__":
    unittest.main()
