"""The `pyop` command's STATE across elements, calls and loads
(tools/pyop_cli): the second element, the second plugin, the second call
seeing what it should and not the first one's leftovers; and the text
and --json results carrying the same facts. Issue 31's state pass
(session 11): each class names the mutants (cli.st.* in
tests/mutation/mutants.txt) it was seen killing. Pure Python, no bridge:
libpyop, the bridge's modules and plugins stood in for by small fakes,
the helpers of test_cli_rules.py reused.

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.state):

  PYOP_TEST_TOOLS  tools/ of the source tree (holds the pyop_cli package)
"""

import argparse
import contextlib
import ctypes
import io
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli_rules import _cli, _Env, _info, _need, _OpC, _OpLib, _tree  # noqa: E402


def _quiet(fn, *a, **kw):
    """(fn's value, its stdout, its stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        value = fn(*a, **kw)
    return value, out.getvalue(), err.getvalue()


class BenchReportStateTest(unittest.TestCase):
    """bench's result (bench.cmd_bench, bench._bench): the text says the
    rounds and calls --repeat and --calls asked for, each in its place,
    and the attributes as --json does (a Tensor attribute as its
    description); each tensor of a dynamic input said with its own index
    and shape. Kills cli.st.bench.text_repeat_calls_swapped,
    cli.st.bench.text_attrs_raw, cli.st.bench.used_first_tensor."""

    def _cmd(self, as_json):
        bench = _cli("bench")
        attrs = {"n": 3, "w": (0, [2], [1.0, 2.0])}
        result = {"op_type": "Op", "calls": 10, "repeat": 3, "mode": "execute",
                  "execute_ns": 3000.0, "ctypes_call_ns": 2000.0,
                  "execute_minus_ctypes_ns": 1000.0, "inputs": ["x=float32[4]"],
                  "attrs": bench.attrs_text(attrs)}
        saved = bench._bench
        bench._bench = lambda lib, args: (result, attrs)
        try:
            args = argparse.Namespace(op="Op", json=as_json, calls=10, repeat=3,
                                      compile_option=None)
            rc, out, err = _quiet(bench.cmd_bench, argparse.Namespace(load=lambda: None), args)
        finally:
            bench._bench = saved
        self.assertEqual((rc, err), (0, ""))
        return out

    def test_text_and_json_say_the_same(self):
        text = self._cmd(False)
        self.assertEqual(text, "Op: execute 3000 ns/call, a bare ctypes call 2000 ns, difference "
                               "1000 ns (median of 3 x 10 calls from Python; bench/run.sh "
                               "measures from C)\ninputs: x=float32[4]; attrs: n=3, w=float32[2]\n")
        got = json.loads(self._cmd(True))
        self.assertEqual((got["repeat"], got["calls"], got["attrs"]),
                         (3, 10, {"n": 3, "w": "float32[2]"}))

    def test_each_tensor_of_a_dynamic_input(self):
        bench = _cli("bench")
        info = _info(inputs=(("x", "required"), ("xs", "dynamic")))

        class Inst:
            def __init__(self, lib, info, attrs, declare="launch"):
                self.op = None

            def run(self, inputs, stage=None):
                return argparse.Namespace(error=None)

            def destroy(self):
                pass
        saved = bench.Instance, bench._timed_call, bench._time
        bench.Instance = Inst
        bench._timed_call = lambda *a: (None, (), None)
        bench._time = lambda *a: ([1e-6], [1e-6])
        try:
            result, _ = bench._bench(
                argparse.Namespace(op_info=lambda op: info),
                argparse.Namespace(op="Op", attr=None, size=4, calls=1, repeat=1,
                                   input=["x=float32[1]", "xs=float32[2]", "xs=int32[3,1]"]))
        finally:
            bench.Instance, bench._timed_call, bench._time = saved
        self.assertEqual(result["inputs"], ["x=float32[1]", "xs[0]=float32[2]",
                                            "xs[1]=int32[3,1]"])


class _DoctorLib:
    """A Lib for doctor.doctor_report: the whole load registers ops (or
    fails: fail_whole); a plugin's load alone registers alone[path]."""

    def __init__(self, elements, ops, infos, fail_whole=False, alone=None):
        self.elements, self.ops, self.infos = elements, ops, infos
        self.fail_whole, self.alone, self.loads = fail_whole, alone or {}, []
        self.c = argparse.Namespace(pyop_unload=lambda: None)

    def load(self):
        self.loads.append(os.environ.get("ASCEND_CUSTOM_OPP_PATH"))
        if len(self.loads) == 1 and self.fail_whole:
            raise _cli("errors").CliError("A is defined twice", "PYOP_ECONFLICT")

    def op_types(self):
        return self.ops if len(self.loads) == 1 else self.alone.get(self.loads[-1], [])

    def op_info(self, t):
        return dict(self.infos[t], op_type=t, lanes=0, serial_reason=None)

    def doctor(self):
        return ("runtime key: none (no runtime)\nASCEND_CUSTOM_OPP_PATH=x\n"
                + "".join("  %s: python-file\n" % e for e in self.elements)
                + "artifacts: /a\ncandidates:\nops registered: 1\n")


class DoctorPluginsStateTest(unittest.TestCase):
    """doctor's plugins (doctor.doctor_report): an op whose prototype is in
    one plugin and its implementation in another is listed under both;
    the implementation notes of plugins loaded one at a time each said
    once, though a later load still sees an earlier plugin's
    implementations. Kills cli.st.doctor.owner_impl_only,
    cli.st.doctor.notes_repeated."""

    def setUp(self):
        self.doctor = _cli("doctor")
        saved = self.doctor._discover, self.doctor.loaded_impls
        self.addCleanup(self._restore, saved)
        self.doctor._discover = lambda el: [{"plugin": el, "package": False}]
        self.impls = []
        self.doctor.loaded_impls = lambda: [dict(i) for i in self.impls]

    def _restore(self, saved):
        self.doctor._discover, self.doctor.loaded_impls = saved

    def test_prototype_and_implementation_in_two_plugins(self):
        lib = _DoctorLib(["/x/protos.py", "/x/impls.py"], ["P"],
                         {"P": {"proto_source": "/x/protos.py:3",
                                "impl_source": "/x/impls.py:9"}})
        rep, _, _ = _quiet(self.doctor.doctor_report, lib)
        self.assertEqual([(p["plugin"], p["ops"]) for p in rep["plugins"]],
                         [("/x/protos.py", ["P"]), ("/x/impls.py", ["P"])])

    def test_notes_once_across_plugin_loads(self):
        waiting = {"op_type": "W", "impl_key": "pyop:w", "impl_source": "/x/a.py:2",
                   "capabilities": ["execute"], "legacy": False, "ge": False}
        compiled = {"op_type": "C", "impl_key": "pyop:c", "impl_source": "/x/b.py:4",
                    "capabilities": ["compile", "execute"], "legacy": False, "ge": False}
        lib = _DoctorLib(["/x/a.py", "/x/b.py"], [], {}, fail_whole=True,
                         alone={"/x/a.py": [], "/x/b.py": ["C"]})
        loads = []

        def impls():
            loads.append(1)
            # a's load: its waiting implementation; b's: a's still there, and its own
            return [dict(waiting)] + ([dict(compiled)] if len(loads) > 1 else [])
        self.doctor.loaded_impls = impls
        with _Env(None):
            rep, _, _ = _quiet(self.doctor.doctor_report, lib)
        self.assertEqual(lib.loads, [None, "/x/a.py", "/x/b.py"])
        self.assertEqual([(i["op_type"], i["pending"]) for i in rep["implementations"]],
                         [("W", True), ("C", False)])
        self.assertEqual([p["pending"] for p in rep["plugins"]], [["W"], []])


class DoctorHooksStateTest(unittest.TestCase):
    """doctor's log hook (doctor.cmd_doctor) is the host hooks only while
    the doctor runs: set before, taken back after (a hook left set would
    call into a callback the command no longer holds), a failed report
    too. Kills cli.st.doctor.hooks_left_set."""

    def test_hooks_taken_back(self):
        doctor = _cli("doctor")
        seen = []

        def set_hooks(p):
            seen.append(p is not None)
            if p is not None:
                p._obj.log(None, 1, b"said once")
                p._obj.log(None, 1, b"said once")
        lib = argparse.Namespace(c=argparse.Namespace(pyop_set_host_hooks=set_hooks))
        saved = doctor.doctor_report, doctor.print_doctor
        rep = {"load": {"status": "ok", "error": None}}
        doctor.doctor_report = lambda lib, lanes: rep
        doctor.print_doctor = lambda rep: None
        try:
            rc, _, err = _quiet(doctor.cmd_doctor, lib, argparse.Namespace(json=False))
            self.assertEqual((rc, seen, err), (0, [True, False], "said once\n"))

            def fails(lib, lanes):
                raise _cli("errors").CliError("no", "PYOP_EINVAL")
            doctor.doctor_report = fails
            with self.assertRaises(_cli("errors").CliError):
                _quiet(doctor.cmd_doctor, lib, argparse.Namespace(json=False))
            self.assertEqual(seen, [True, False, True, False])
        finally:
            doctor.doctor_report, doctor.print_doctor = saved


class ProtoStateTest(unittest.TestCase):
    """--proto (proto.py): a declaration's error names its file:line once
    (register_protos gives _op_info the file, _op_info adds the line); a
    REG_OP a check worker's load left out is noted by the command, which
    merged what the worker saw. Kills cli.st.proto.where_line_twice (the
    merge is also held by ge.proto_cli)."""

    def setUp(self):
        self.proto = _cli("proto")
        p = self.proto
        state = [dict(p._declared), set(p._unbound), set(p._bound), set(p._noted)]

        def restore():
            for cur, old in zip((p._declared, p._unbound, p._bound, p._noted), state):
                cur.clear()
                cur.update(old)
        self.addCleanup(restore)
        for c in (p._declared, p._unbound, p._bound, p._noted):
            c.clear()

    def test_error_names_the_line_once(self):
        proto, errors = self.proto, _cli("errors")
        lib = argparse.Namespace(check=lambda what, rc: None,
                                 c=argparse.Namespace(pyop_register_host_prototype=lambda p: 0))
        decls = {"/p/a.h": [{"op_type": "A", "line": 3, "inputs": [("x", 0)],
                             "outputs": [("y", 0)], "attrs": [("n", 1, False, 2.5)]}]}
        saved = proto.read_declarations
        proto.read_declarations = lambda lib, path: decls[path]
        try:
            with self.assertRaises(errors.CliError) as cm:
                proto.register_protos(lib, ["/p/a.h"], "list")
        finally:
            proto.read_declarations = saved
        self.assertEqual((cm.exception.status, cm.exception.op), ("PYOP_EDESCRIPTOR", "A"))
        self.assertEqual(cm.exception.message,
                         "--proto /p/a.h:3: REG_OP('A') ATTR('n'): default 2.5 is not an int")

    def test_worker_unbound_merged(self):
        proto = self.proto
        proto._declared.update({"A": "/p/a.h:1", "B": "/p/a.h:2"})
        # the command's own process loaded nothing; a worker's load left A
        # out and implemented B
        proto.merge_binding({"bound": ["B"], "unbound": ["A"]})
        _, _, err = _quiet(proto.note_unused, "check")
        self.assertEqual(err, "pyop: check: note: --proto /p/a.h:1: REG_OP(A) is not used: no "
                              "loaded plugin implements it\n")


class _ListsC(_OpC):
    """An op with infer_meta and execute whose two outputs hold one tensor
    (y: float32[2]) and two (zs: float32[3], float32[1])."""

    SHAPES = ([[2]], [[3], [1]])
    VALUES = ([[1.0, 2.0]], [[3.0, 4.0, 5.0], [7.0]])

    def __init__(self):
        super().__init__(1 | 2)
        self.data = []

    def _fill(self, lists, n_out, values):
        for k in range(n_out):
            for j, shape in enumerate(self.SHAPES[k]):
                t = lists[k].items[j]
                t.dtype, t.ndim, t.shape[0] = 0, 1, shape[0]
                t.nbytes = 4 * shape[0]
                if values:
                    buf = (ctypes.c_float * shape[0])(*self.VALUES[k][j])
                    self.data.append(buf)
                    t.data = ctypes.addressof(buf)
            lists[k].count = len(self.SHAPES[k])
        return 0

    def pyop_op_infer_meta_list(self, op, slots, n_in, lists, n_out):
        return self._fill(lists, n_out, False)

    def pyop_op_execute_list(self, op, slots, n_in, lists, n_out, ctx):
        return self._fill(lists, n_out, True)


class InstanceOutputsStateTest(unittest.TestCase):
    """An instance's run (instance.Instance.run) reads each output list by
    its own count: infer_meta's descriptions and execute's tensors of a
    second output holding more tensors than the first; a launch-only op's
    outputs allocated in buffers named by their own output (_launch).
    Kills cli.st.instance.inferred_first_count,
    cli.st.instance.produced_first_count, cli.st.instance.launch_names_first."""

    def test_each_output_by_its_count(self):
        im = _cli("instance")
        info = _info(outputs=(("y", "required"), ("zs", "dynamic")))
        inst = im.Instance(_OpLib(_ListsC()), info, {})
        self.addCleanup(inst.destroy)
        res = inst.run([[(0, [2], [1.0, 2.0])]])
        self.assertIsNone(res.error)
        self.assertEqual(res.inferred, [[(0, [2])], [(0, [3]), (0, [1])]])
        self.assertEqual([[v for _, v in out] for out in res.produced],
                         [[[1.0, 2.0]], [[3.0, 4.0, 5.0], [7.0]]])

    def test_launch_buffers_named_per_output(self):
        im, b, values = _cli("instance"), _cli("binding"), _cli("values")
        inst = im.Instance.__new__(im.Instance)
        inst.info = _info(outputs=(("y", "required"), ("z", "required")))
        inst.op = None
        inst.lib = argparse.Namespace(c=argparse.Namespace(pyop_op_launch=lambda *a: 0))
        lists = (b.OutputList * 2)()
        keep = []
        for k in range(2):
            items = (b.Tensor * 1)()
            keep.append(items)
            lists[k].items, lists[k].capacity = items, 1
        bufs, res = values.Buffers(), im.RunResult()
        res.keep = []
        rc = inst._launch(None, 0, lists, [(0, [2]), (0, [3])], bufs, res)
        self.assertEqual(rc, 0)
        self.assertEqual([g[4] for g in bufs.guards], ['output 0 "y"', 'output 1 "z"'])
        self.assertEqual([lists[k].items[0].nbytes for k in range(2)], [8, 12])


class TooDeepStateTest(unittest.TestCase):
    """The too-deep notes (errors.too_deep_notes) go on past an element
    holding plugins, a file of the element and a directory without .py
    files: each later element and directory still gets its note. Kills
    cli.st.errors.too_deep_plugin_element_stops,
    cli.st.errors.too_deep_file_stops, cli.st.errors.too_deep_empty_sub_stops."""

    def test_later_elements_and_directories(self):
        errors = _cli("errors")
        fine = _tree(self, ["top.py", "sub/x.py"])
        deep = _tree(self, ["a.txt", "b_empty/", "c_data/readme.txt", "ops/x.py", "zz/y.py"])
        with _Env("%s:%s" % (fine, deep)):
            notes = errors.too_deep_notes()
        self.assertEqual([n.split(" skipped")[0] for n in notes],
                         [os.path.join(deep, "ops", "x.py"), os.path.join(deep, "zz", "y.py")])


class OutputAgainStateTest(unittest.TestCase):
    """command_output (output.py) ended while a plugin's thread still runs
    leaves no result stream behind: a second command_output in the process
    starts afresh (fd 1 stays stderr's after the first, as it said, so the
    second's result goes there). Kills cli.st.output.thread_exit_result_kept."""

    def test_second_command_after_a_thread_was_left(self):
        tools = _need("PYOP_TEST_TOOLS")
        script = ("import sys, threading; sys.path.insert(0, %r)\n"
                  "from pyop_cli import output\n"
                  "stop = threading.Event()\n"
                  "t = threading.Thread(target=stop.wait)\n"
                  "with output.command_output():\n"
                  "    t.start()\n"
                  "    output.say('first')\n"
                  "stop.set(); t.join()\n"
                  "with output.command_output():\n"
                  "    output.say('second')\n" % tools)
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "first\n", "second\n"))


class PluginsOrderStateTest(unittest.TestCase):
    """loaded_impls (plugins.py): implementations sorted by op type, then
    by key: two implementations of one op type in key order, whatever the
    order of their module. Kills cli.st.plugins.sorted_by_type_only."""

    def test_same_op_type_by_key(self):
        plugins = _cli("plugins")
        names = ("pyop._loader", "pyop.ext", "_pyopplgst_a")
        saved = {n: sys.modules.get(n) for n in names}

        def restore():
            for n, m in saved.items():
                if m is None:
                    sys.modules.pop(n, None)
                else:
                    sys.modules[n] = m
        self.addCleanup(restore)
        loader = type(sys)("pyop._loader")
        loader.PLUGIN_PREFIX = "_pyopplgst_"
        sys.modules["pyop._loader"] = loader
        sys.modules.pop("pyop.ext", None)
        mod = type(sys)("_pyopplgst_a")
        for key in ("pyop:z", "pyop:b", "pyop:m"):
            desc = argparse.Namespace(caps=2, key=key, op_type="Add", file="/p/a.py", line=1)
            setattr(mod, "Impl" + key[-1], type("Impl", (), {"__pyop_descriptor__": desc}))
        sys.modules["_pyopplgst_a"] = mod
        self.assertEqual([i["impl_key"] for i in plugins.loaded_impls()],
                         ["pyop:b", "pyop:m", "pyop:z"])


class MainProtoExitStateTest(unittest.TestCase):
    """A --proto file that calls exit() (main._register_protos) is named
    among several files: the second file's exit names the second file and
    its line. Kills cli.st.main.proto_exit_first_file_only."""

    def test_second_file_named(self):
        main, errors = _cli("main"), _cli("errors")
        root = _tree(self, ["a.h", "b.py"])
        a, b = os.path.join(root, "a.h"), os.path.join(root, "b.py")

        def register(lib, files, command, notes):
            exec(compile("x = 1\nraise SystemExit(3)\n", b, "exec"), {})
        saved = main.register_protos
        main.register_protos = register
        try:
            with self.assertRaises(errors.CliError) as cm:
                main._register_protos(None, [a, b], "list", True)
        finally:
            main.register_protos = saved
        self.assertEqual(cm.exception.message,
                         "--proto %s: the file called exit(3) while it was read (%s:2); a "
                         "--proto file only declares REG_OPs" % (b, b))


class BenchWarningStateTest(unittest.TestCase):
    """bench's --compile-option (bench.cmd_bench) reaches the loaded
    plugins, and when no GE plugin is loaded to read it bench says so on
    stderr (its stdout is the result); nothing said when one read them.
    Kills cli.st.bench.compile_warning_dropped."""

    def _cmd(self, have_ge):
        bench = _cli("bench")
        saved_bench = bench._bench
        saved_ctx = sys.modules.pop("ge.custom_op.context", None)
        got = []
        if have_ge:
            ctx = type(sys)("ctx")
            ctx.set_compile_options = got.append
            sys.modules["ge.custom_op.context"] = ctx
        bench._bench = lambda lib, args: ({"mode": "execute", "execute_ns": 1.0,
                                           "ctypes_call_ns": 1.0, "execute_minus_ctypes_ns": 0.0,
                                           "inputs": [], "attrs": {}}, {})
        try:
            args = argparse.Namespace(op="Op", json=False, calls=1, repeat=1,
                                      compile_option=["k=v"])
            rc, _, err = _quiet(bench.cmd_bench, argparse.Namespace(load=lambda: None), args)
        finally:
            bench._bench = saved_bench
            sys.modules.pop("ge.custom_op.context", None)
            if saved_ctx is not None:
                sys.modules["ge.custom_op.context"] = saved_ctx
        return rc, err, got

    def test_warning_only_without_a_reader(self):
        rc, err, got = self._cmd(False)
        self.assertEqual((rc, got), (0, []))
        self.assertEqual(err, "pyop: bench: warning: --compile-option: no GE plugin is loaded, "
                              "so no compile reads the options (pyop's own compile context "
                              "takes none)\n")
        self.assertEqual(self._cmd(True), (0, "", [{"k": "v"}]))


class DoctorTextStateTest(unittest.TestCase):
    """libpyop's doctor text read (doctor.parse_doctor_report): the path
    section ends at "artifacts:", so the bridge's indented note after it
    (an interpreter finalized) is no path element. Kills
    cli.st.doctor.artifacts_keep_path_section."""

    def test_bridge_note_is_no_element(self):
        doctor = _cli("doctor")
        rep = doctor.parse_doctor_report(
            "runtime key: none (no runtime)\nASCEND_CUSTOM_OPP_PATH=/ops\n"
            "  /ops: python-dir\nartifacts: /a\nbridge: loaded /a/cp312 (ABI 1.6)\n"
            "  the Python interpreter it was loaded into was finalized: reload it\n"
            "candidates (last load):\n  /a/cp312: loaded\nops registered: 0\n")
        self.assertEqual(rep["path"], [{"element": "/ops", "verdict": "python-dir",
                                        "detail": None}])
        self.assertEqual([c["dir"] for c in rep["candidates"]], ["/a/cp312"])


class ProtoNotesOrderStateTest(unittest.TestCase):
    """The unused --proto REG_OPs (proto.note_unused) are noted in the
    order the files declared them, not by name. Kills
    cli.st.proto.notes_sorted."""

    def test_file_order(self):
        proto = _cli("proto")
        state = [dict(proto._declared), set(proto._unbound), set(proto._bound),
                 set(proto._noted)]

        def restore():
            for cur, old in zip((proto._declared, proto._unbound, proto._bound, proto._noted),
                                state):
                cur.clear()
                cur.update(old)
        self.addCleanup(restore)
        for c in (proto._declared, proto._unbound, proto._bound, proto._noted):
            c.clear()
        proto._declared.update({"Zeta": "/p/a.h:1", "Alpha": "/p/a.h:5"})
        proto._unbound.update({"Alpha", "Zeta"})
        _, _, err = _quiet(proto.note_unused, "list")
        self.assertEqual([ln.split("REG_OP(")[1].split(")")[0] for ln in err.splitlines()],
                         ["Zeta", "Alpha"])


class _CompileC(_OpC):
    """_OpC recording the output descriptions compile gets."""

    def pyop_op_compile(self, op, slots, n_in, outs, n_out, art, size):
        self.descs = [(outs[k].dtype, list(outs[k].shape[:outs[k].ndim]), outs[k].nbytes)
                      for k in range(n_out)]
        return self._call("compile")


class InstanceDescsStateTest(unittest.TestCase):
    """compile's output descriptions (instance.Instance.prepare,
    _description): each output its own dtype and shape, its byte size the
    product of every dimension. Kills cli.st.instance.prepare_first_desc,
    cli.st.instance.desc_bytes_last_dim."""

    def test_each_output_described(self):
        im = _cli("instance")
        c = _CompileC(im.CAP_COMPILE | im.CAP_EXECUTE)
        inst = im.Instance(_OpLib(c), _info(outputs=(("y", "required"), ("z", "required"))), {})
        self.addCleanup(inst.destroy)
        res = im.RunResult()
        res.keep = []
        self.assertTrue(inst.prepare(None, 0, [(0, [2, 3]), (6, [5])], res))
        self.assertEqual(c.descs, [(0, [2, 3], 24), (6, [5], 20)])


class HostAttrsStateTest(unittest.TestCase):
    """--attr given twice for one attribute (host._attrs_from_args): the
    last wins, as for --compile-option, each read as its own type. Kills
    cli.st.host.attr_first_wins."""

    def test_last_wins(self):
        host = _cli("host")
        info = _info(attrs=({"name": "n", "type": "int"}, {"name": "s", "type": "str"}))
        args = argparse.Namespace(op="Op", attr=["n=1", "s=a", "n=2"])
        self.assertEqual(host._attrs_from_args(info, args), {"n": 2, "s": "a"})


class ListDtypesStateTest(unittest.TestCase):
    """list's data type line (list.dtypes_line) with two symbols: each io
    joins its own symbol's group, never the first group's. Kills
    cli.st.list.dtypes_any_symbol_group."""

    def test_two_symbols(self):
        lst = _cli("list")
        op = _info(inputs=(("x", "required"), ("s", "required"), ("y", "required")),
                   outputs=(("z", "required"),))
        for io, sym, types in ((op["inputs"][0], "T", ["float32"]),
                               (op["inputs"][1], "U", ["int32", "int64"]),
                               (op["inputs"][2], "T", ["float32"]),
                               (op["outputs"][0], "U", ["int32", "int64"])):
            io.update(dtypes=types, dtype_symbol=sym)
        self.assertEqual(lst.dtypes_line(op), "data types: x, y (one type T): float32; "
                                              "s, z (one type U): int32, int64")


if __name__ == "__main__":
    unittest.main()
