"""The `pyop` command's values followed to where a user sees them
(tools/pyop_cli: run, list, doctor, --proto and the shared modules): a
value the command reads, checks or computes reaches its output line, its
--json key or the library call it is meant for, each element with its
own, the second as the first. Issue 31's dataflow pass (session 13): each
class names the mutants (cli.df.* in tests/mutation/mutants.txt) it was
seen killing. Pure Python, no bridge: libpyop, the bridge's modules and
plugins stood in for by small fakes, the helpers of test_cli_rules.py
reused.

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.flow):

  PYOP_TEST_TOOLS  tools/ of the source tree (holds the pyop_cli package)
"""

import argparse
import contextlib
import ctypes
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli_rules import _cli, _Desc, _DoctorHost, _Ended, _Env, _info  # noqa: E402


def _quiet(fn, *a, **kw):
    """(fn's value, its stdout, its stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        value = fn(*a, **kw)
    return value, out.getvalue(), err.getvalue()


def _tmpdir(test):
    d = tempfile.mkdtemp(prefix="pyop_flow_")
    test.addCleanup(shutil.rmtree, d, True)
    return d


class _Modules:
    """sys.modules entries set for a test, restored after."""

    def __init__(self, test, *names):
        self.saved = {n: sys.modules.get(n) for n in names}
        test.addCleanup(self.restore)

    def restore(self):
        for n, m in self.saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m

    @staticmethod
    def module(name, **objs):
        mod = type(sys)(name)
        mod.__dict__.update(objs)
        sys.modules[name] = mod
        return mod


class RunCompileOptionsFlowTest(unittest.TestCase):
    """run's --compile-option (run.run_as_a_host): the options parsed from
    the command line are the ones the loaded GE compile context is given,
    every key with its value, and no warning is said. Kills
    cli.df.run.compile_options_dropped."""

    def test_options_reach_the_compile_context(self):
        run = _cli("run")
        mods = _Modules(self, "ge.custom_op.context")
        got = []
        mods.module("ge.custom_op.context", set_compile_options=got.append)
        info = _info()

        class Lib:
            def load(self):
                pass

            def op_info(self, op):
                return info

        class Res:
            error = None

        saved = run.run_op
        run.run_op = lambda lib, info, inputs, attrs, stage: Res
        try:
            args = argparse.Namespace(op="Op", input=["x=float32[2]:1,2"], attr=None,
                                      compile_option=["k=v", "mode=fast", "k=w"])
            value, out, err = _quiet(run.run_as_a_host, Lib(), args, "run")
        finally:
            run.run_op = saved
        self.assertIs(value[3], Res)
        self.assertEqual(got, [{"k": "w", "mode": "fast"}])
        self.assertEqual((out, err), ("", ""))


def _listed(op_type, proto_key, proto_source="a.h:3", impl=("impl.py:9", "ge:impl:Cls:X")):
    info = _info()
    info.update(op_type=op_type, proto_key=proto_key, proto_source=proto_source,
                impl_source=impl[0], impl_key=impl[1])
    return info


class _ListLib:
    def __init__(self, infos):
        self.infos = {i["op_type"]: i for i in infos}

    def load(self):
        pass

    def op_types(self):
        return list(self.infos)

    def op_info(self, t):
        return self.infos[t]


class ListProtoFilesFlowTest(unittest.TestCase):
    """list's prototype line (list.cmd_list) with two --proto files: each
    op host-declared by a REG_OP names the file it came from (args.
    proto_files, register_protos's {op: file}), not another op's; an op
    whose prototype is the plugin's own names no file. Kills
    cli.df.list.proto_file_of_another."""

    def test_each_op_names_its_own_file(self):
        lst = _cli("list")
        _Modules(self, "pyop._loader")
        sys.modules.pop("pyop._loader", None)  # no plugin classes to read
        lib = _ListLib([_listed("A", "host:A", "/h/a.h:3"), _listed("B", "host:B", "/h/b.h:7"),
                        _listed("C", "pyop:c", "/p/c.py:2")])
        args = argparse.Namespace(path=[], json=False,
                                  proto_files={"A": "/h/a.h", "B": "/h/b.h", "C": "/h/b.h"})
        rc, out, err = _quiet(lst.cmd_list, lib, args)
        self.assertEqual((rc, err), (0, ""))
        protos = [ln for ln in out.splitlines() if ln.startswith("    prototype: ")]
        self.assertEqual(protos, [
            "    prototype: /h/a.h:3, the REG_OP of --proto /h/a.h (host:A)",
            "    prototype: /h/b.h:7, the REG_OP of --proto /h/b.h (host:B)",
            "    prototype: /p/c.py:2 (pyop:c)"])


class GeImplsFlowTest(unittest.TestCase):
    """plugins.loaded_impls: two GE implementation classes of one op type
    (in two plugins) are two implementations, each with its own key and
    source, not the first alone; a subclass of one is none. Kills
    cli.df.plugins.ge_key_by_type, cli.df.plugins.inherited_registration."""

    def test_two_classes_of_one_op_type(self):
        plugins = _cli("plugins")
        mods = _Modules(self, "pyop._loader", "pyop.ext", "ge.custom_op.registry",
                        "_pyopflw_a", "_pyopflw_b")
        sys.modules.pop("ge.custom_op.registry", None)
        mods.module("pyop._loader", PLUGIN_PREFIX="_pyopflw_")
        where = {"GeA": ("/p/a.py", 4), "GeB": ("/p/b.py", 8)}
        mods.module("pyop.ext", class_location=lambda cls: where[cls.__name__],
                    module_label=lambda name: name[len("_pyopflw_"):])
        classes = {}
        for name, mod in (("GeA", "_pyopflw_a"), ("GeB", "_pyopflw_b")):
            cls = type(name, (), {"__ge_op_impl_descriptor__": _Desc(
                op_type="Gelu", interfaces=["host_cpu_execute"])})
            cls.__module__ = mod
            classes[mod] = cls
            mods.module(mod, **{name: cls})
        got = plugins.loaded_impls()
        self.assertEqual([(i["op_type"], i["impl_key"], i["impl_source"]) for i in got],
                         [("Gelu", "ge:a:GeA:Gelu", "/p/a.py:4"),
                          ("Gelu", "ge:b:GeB:Gelu", "/p/b.py:8")])
        # both wait for a prototype while Gelu is not registered
        self.assertEqual(len(plugins.pending_impls(["Relu"])), 2)


    def test_a_subclass_is_no_second_implementation(self):
        """A class deriving from a registered GE class, not registered
        itself, inherits the descriptor attribute: it is read from the
        class's own namespace, so the subclass is not listed as a second
        implementation. Kills cli.df.plugins.inherited_registration."""
        plugins = _cli("plugins")
        mods = _Modules(self, "pyop._loader", "pyop.ext", "ge.custom_op.registry",
                        "_pyopflw_a")
        sys.modules.pop("ge.custom_op.registry", None)
        mods.module("pyop._loader", PLUGIN_PREFIX="_pyopflw_")
        mods.module("pyop.ext", class_location=lambda cls: ("/p/a.py", 4),
                    module_label=lambda name: name[len("_pyopflw_"):])
        base = type("GeBase", (), {"__ge_op_impl_descriptor__": _Desc(
            op_type="Gelu", interfaces=["host_cpu_execute"])})
        base.__module__ = "_pyopflw_a"
        sub = type("GeSub", (base,), {})
        sub.__module__ = "_pyopflw_a"
        mods.module("_pyopflw_a", GeBase=base, GeSub=sub)
        self.assertEqual([i["impl_key"] for i in plugins.loaded_impls()], ["ge:a:GeBase:Gelu"])


class ProtoDefaultsFlowTest(unittest.TestCase):
    """--proto's attributes (proto._op_info): each optional attribute's
    default is written into its own pyop_attr_info, the second's as the
    first's, and read back (binding.info_to_dict) as the REG_OP declared
    them (examples.cli.check kills a second default written into the first's
    slot, as it holds a --proto REG_OP's two attributes; this one holds
    four)."""

    def test_each_default_its_own(self):
        proto, binding = _cli("proto"), _cli("binding")
        keep = []
        decl = {"op_type": "Op", "line": 4, "inputs": [("x", 0)], "outputs": [("y", 0)],
                "attrs": [("n", 1, False, 3), ("m", 1, False, 5), ("r", 2, True, None),
                          ("s", 4, False, "abc")]}
        o = proto._op_info(decl, "/p/ops.h", keep)
        d = binding.info_to_dict(o)
        self.assertEqual([(a["name"], a["type"], a["required"], a["default"]) for a in d["attrs"]],
                         [("n", "int", False, 3), ("m", "int", False, 5),
                          ("r", "float", True, None), ("s", "str", False, "abc")])


    def test_checked_default_is_the_one_written(self):
        """A default is checked and converted (values.plugin_attr_value: a
        DataType as the reader gives it, an object naming its type) and
        the converted value is written, not the raw one. Kills
        cli.df.proto.default_unconverted."""
        proto, binding = _cli("proto"), _cli("binding")

        class DataType:  # the reader's DataType: a name, not a str
            def __init__(self, name):
                self.name = name

        keep = []
        decl = {"op_type": "Op", "line": 4, "inputs": [("x", 0)], "outputs": [("y", 0)],
                "attrs": [("t", 5, False, DataType("int8")),
                          ("ts", 10, False, [DataType("float16"), DataType("bool")]),
                          ("f", 2, False, 2)]}
        d = binding.info_to_dict(proto._op_info(decl, "/p/ops.h", keep))
        self.assertEqual([(a["name"], a["default"]) for a in d["attrs"]],
                         [("t", "int8"), ("ts", ["float16", "bool"]), ("f", 2.0)])

def _op_info_struct(b, lanes=0, reserved=0):
    o = b.OpInfo()
    o.struct_size = ctypes.sizeof(b.OpInfo)
    o.op_type = b"Op"
    o.lanes = lanes
    o.reserved_ = reserved
    return o


class LanesFlowTest(unittest.TestCase):
    """The lanes an op runs in (binding.info_to_dict reads pyop_op_info.
    lanes, not its neighbour) reach list's line "parallel: N lanes"
    (list.lanes_line). Kills cli.df.binding.lanes_field."""

    def test_lanes_read_and_shown(self):
        b, lst = _cli("binding"), _cli("list")
        d = b.info_to_dict(_op_info_struct(b, lanes=3, reserved=0))
        self.assertEqual((d["lanes"], d["serial_reason"]), (3, None))
        self.assertEqual(lst.lanes_line(d), "parallel: 3 lanes")
        d = b.info_to_dict(_op_info_struct(b, lanes=0, reserved=7))
        self.assertEqual(d["lanes"], 0)
        self.assertIsNone(lst.lanes_line(d))


class CheckWithoutDetailFlowTest(unittest.TestCase):
    """A failed libpyop call that left no text (binding.Lib.check): the
    message says what failed, the status name and libpyop's strerror of
    it, the status a --json error carries. Kills
    cli.df.binding.strerror_dropped."""

    def test_what_status_and_strerror(self):
        b = _cli("binding")
        _Modules(self, "pyop._errors")
        sys.modules.pop("pyop._errors", None)
        lib = b.Lib.__new__(b.Lib)
        lib.c = argparse.Namespace(pyop_status_name=lambda rc: b"PYOP_EIO",
                                   pyop_last_error=lambda: b"  \n",
                                   pyop_strerror=lambda rc: b"an I/O error")
        with self.assertRaises(b.PyopError) as cm:
            lib.check("pyop_load", -5)
        e = cm.exception
        self.assertEqual((e.status, e.message), ("PYOP_EIO", "pyop_load failed (PYOP_EIO: an "
                                                             "I/O error)"))
        self.assertEqual(e.to_json()["status"], "PYOP_EIO")
        lib.check("pyop_load", 0)  # success raises nothing


def _manifest_text(tag, version):
    return ("# manifest\npython_tag=%s\npython_version_hex=0x%08x\nabi_flags=\n"
            "libpython=%s\nbridge_abi_major=1\nbridge_abi_minor=6\n"
            % (tag, version, sys.executable if tag == "cp312" else "/no/libpython3.11.so"))


class _ArtifactsHost(_DoctorHost):
    """_DoctorHost whose pyop_doctor names an artifact root of the test's."""

    def __init__(self, fail_whole, elements, artifacts):
        super().__init__(fail_whole, elements)
        self.artifacts = artifacts
        self.c.pyop_set_host_hooks = lambda hooks: None

    def doctor(self):
        return super().doctor().replace("artifacts: /a\n", "artifacts: %s\n" % self.artifacts)


class DoctorFlowTest(unittest.TestCase):
    """doctor's report (doctor.doctor_report, cmd_doctor) with libpyop and
    the bridge's discovery stood in for: --lanes N reaches start_python's
    choice (the artifact whose Python can run lanes, with libpyop's note)
    and the libpython reported is read from that artifact's manifest.
    Kills cli.df.doctor.start_python_lanes_dropped,
    cli.df.doctor.manifest_of_default."""

    def setUp(self):
        self.doctor, self.config = _cli("doctor"), _cli("config")
        saved = (self.doctor._discover, self.doctor.loaded_impls, self.config.BUILD_ARTIFACT,
                 self.config.BUILD_ARTIFACTS)
        self.addCleanup(self._restore, saved)
        self.doctor._discover = lambda el: [{"plugin": el, "package": False}]
        self.doctor.loaded_impls = lambda: []
        root = self.root = _tmpdir(self)
        for name, tag, version in (("py311", "cp311", 0x030B04F0),
                                   ("py312", "cp312", 0x030C04F0)):
            os.mkdir(os.path.join(root, name))
            with open(os.path.join(root, name, "manifest.txt"), "w") as f:
                f.write(_manifest_text(tag, version))
        self.config.BUILD_ARTIFACT, self.config.BUILD_ARTIFACTS = "py311", "py311;py312"

    def _restore(self, saved):
        (self.doctor._discover, self.doctor.loaded_impls, self.config.BUILD_ARTIFACT,
         self.config.BUILD_ARTIFACTS) = saved

    def test_lanes_choose_the_artifact(self):
        for lanes, artifact in ((0, "py311"), (2, "py312")):
            with self.subTest(lanes=lanes), _Env(None):
                lib = _ArtifactsHost(False, [("/x/b.py", "python-file")], self.root)
                rep, _, _ = _quiet(self.doctor.doctor_report, lib, lanes)
                sp = rep["start_python"]
                self.assertEqual((sp["artifact"], sp["default"]), (artifact, "py311"))
                self.assertEqual(sp["manifest"], os.path.join(self.root, artifact,
                                                              "manifest.txt"))
                # the chosen artifact's libpython, read from its own manifest
                self.assertEqual((sp["libpython"], sp["verdict"]),
                                 (sys.executable, "present") if lanes else
                                 ("/no/libpython3.11.so", "missing: /no/libpython3.11.so does "
                                  "not exist"))
                if lanes:
                    self.assertEqual(sp["note"], "lanes asked for (2): starting py312 instead "
                                     "of the build's default py311 (Python 3.11 has no "
                                     "per-interpreter GIL)")
                    self.assertEqual(rep["lanes_asked"], 2)
                else:
                    self.assertIsNone(sp["note"])



class ProtoReaderFlowTest(unittest.TestCase):
    """--proto's REG_OP reader (proto._python_dir) is the one of the first
    bridge artifact libpyop would try for this Python (pyop_doctor's
    candidates in order), skipping one it refused, not the last one
    listed. Kills cli.df.proto.python_dir_last."""

    def test_first_usable_candidate(self):
        proto = _cli("proto")
        root = _tmpdir(self)
        dirs = []
        for name in ("refused", "first", "second"):
            d = os.path.join(root, name)
            os.makedirs(os.path.join(d, "python", "ge", "custom_op"))
            open(os.path.join(d, "python", "ge", "custom_op", "host_proto.py"), "w").close()
            dirs.append(d)

        class Lib:
            def doctor(self):
                return ("artifacts: %s\ncandidates:\n  %s: ABI rejected: too old\n"
                        "  %s: loaded\n  %s: untried\nops registered: 0\n" % (root, *dirs))

        self.assertEqual(proto._python_dir(Lib()), os.path.join(dirs[1], "python"))

    def test_loaded_packages_read_with_and_kept(self):
        """With the bridge's packages already loaded (a second --proto read
        in one command), the REG_OP reader is the loaded one: the artifact's
        is not imported again, and no pyop or ge module is dropped from
        sys.modules, which would break the loaded package (batch 22's
        survivor cli.b22.proto.reader_any_all)."""
        proto = _cli("proto")
        root = _tmpdir(self)
        path = os.path.join(root, "ops.h")
        with open(path, "w") as f:
            f.write("REG_OP(Loaded)\n")
        art = os.path.join(root, "cp", "python", "ge", "custom_op")
        os.makedirs(art)
        for d in (os.path.dirname(art), art):
            open(os.path.join(d, "__init__.py"), "w").close()
        with open(os.path.join(art, "host_proto.py"), "w") as f:
            f.write("class ReadError(Exception):\n    pass\n\n"
                    "class _R:\n    def info(self):\n        return {'op_type': 'Artifact'}\n\n"
                    "def read(path):\n    return [_R()]\n")

        class Record:
            def info(self):
                return {"op_type": "Loaded"}

        loaded = {n: type(sys)(n) for n in ("pyop", "ge", "ge.custom_op",
                                             "ge.custom_op.host_proto")}
        loaded["ge.custom_op.host_proto"].ReadError = type("ReadError", (Exception,), {})
        loaded["ge.custom_op.host_proto"].read = lambda p: [Record()] if p == path else []
        loaded["ge.custom_op"].host_proto = loaded["ge.custom_op.host_proto"]
        loaded["ge"].custom_op = loaded["ge.custom_op"]
        saved = {n: m for n, m in sys.modules.items() if n in ("pyop", "ge")
                 or n.startswith(("pyop.", "ge."))}

        def restore():
            for n in [n for n in sys.modules if n in ("pyop", "ge")
                      or n.startswith(("pyop.", "ge."))]:
                del sys.modules[n]
            sys.modules.update(saved)
        self.addCleanup(restore)
        restore()
        sys.modules.update(loaded)

        class Lib:
            def doctor(self):
                return ("artifacts: %s\ncandidates:\n  %s: loaded\nops registered: 0\n"
                        % (root, os.path.join(root, "cp")))

        sys_path = list(sys.path)
        self.assertEqual(proto.read_declarations(Lib(), path), [{"op_type": "Loaded"}])
        self.assertEqual(sys.path, sys_path)
        for n, m in loaded.items():
            self.assertIs(sys.modules.get(n), m, n)


class DoctorCandidatesFlowTest(unittest.TestCase):
    """pyop_doctor's candidate lines (doctor.parse_doctor_report): each
    candidate keeps its own status and the reason libpyop gave, which
    doctor prints after it and --json carries. Kills
    cli.df.doctor.candidate_reason_dropped."""

    def test_reason_of_each_candidate(self):
        doctor = _cli("doctor")
        rep = doctor.parse_doctor_report(
            "artifacts: /a\ncandidates:\n  /a/cp311: ABI rejected: bridge ABI 2.0, libpyop "
            "speaks 1\n  /a/cp312: loaded\n  /a/cp313: manifest mismatch: python_tag "
            "cp313\nops registered: 1\n")
        self.assertEqual([(c["dir"], c["status"], c["reason"]) for c in rep["candidates"]],
                         [("/a/cp311", "ABI rejected", "bridge ABI 2.0, libpyop speaks 1"),
                          ("/a/cp312", "loaded", None),
                          ("/a/cp313", "manifest mismatch", "python_tag cp313")])
        rep.update(python={"executable": "/py", "version": "3", "build_python": None,
                           "numpy": {"importable": False, "error": "no"}, "sys_path": []},
                   ge=[], start_python={"libpython": None, "verdict": "unknown", "artifact": None,
                                        "default": None, "note": None},
                   load={"status": "ok", "ops": []}, lanes_asked=0, plugins=[],
                   implementations=[])
        _, out, _ = _quiet(doctor.print_doctor, rep)
        self.assertIn("\n  /a/cp311: ABI rejected: bridge ABI 2.0, libpyop speaks 1\n"
                      "  /a/cp312: loaded\n  /a/cp313: manifest mismatch: python_tag cp313\n",
                      out)


class LeftThreadsFlowTest(unittest.TestCase):
    """The warning about threads a plugin left running (main.
    leave_plugin_threads) names every one of them and counts them, and
    the command still ends with its own status. Kills
    cli.df.main.thread_names_first."""

    def test_every_thread_named(self):
        main = _cli("main")
        saved = main.stray_threads, main.end_now, main.supervise.worker_done
        self.addCleanup(self._restore, main, saved)
        ended, said = [], []
        main.stray_threads = lambda: [argparse.Namespace(name=n) for n in ("t1", "t2", "t3")]
        main.end_now = ended.append
        main.supervise.worker_done = said.append
        _, out, err = _quiet(main.leave_plugin_threads, "run", 3)
        self.assertEqual(err, "pyop: run: warning: a plugin left 3 threads running (t1, t2, t3); "
                              "the command does not wait for them, as a C host's "
                              "pyop_shutdown does not\n")
        self.assertEqual((ended, said, out), ([3], [3], ""))

    @staticmethod
    def _restore(main, saved):
        main.stray_threads, main.end_now, main.supervise.worker_done = saved



class RunSecondTensorFlowTest(unittest.TestCase):
    """run's result (run.cmd_run): each tensor of a dynamic output and each
    tensor of a dynamic mutated input is said with its own data type and
    shape, the second as the first, in the text and in --json. Kills
    cli.df.run.dynamic_output_dtype_first, cli.df.run.mutated_dtype_first,
    cli.df.run.mutated_shape_first."""

    def _cmd(self, as_json):
        run, values = _cli("run"), _cli("values")
        bufs = values.Buffers()
        info = _info(inputs=(("acc", "dynamic"),), outputs=(("ys", "dynamic"),))
        info["inputs"][0]["mutated"] = True
        f32, i32 = values.DTYPES.index("float32"), values.DTYPES.index("int32")
        ys = [values.make_tensor(bufs, f32, [2], [0.5, 1.5]),
              values.make_tensor(bufs, i32, [2, 2], [1, 2, 3, 4])]
        acc = [values.make_tensor(bufs, f32, [3], [1.0, 2.0, 3.0]),
               values.make_tensor(bufs, i32, [1, 2], [7, 8])]

        class Res:
            error, before = None, []
            produced = [[(t, values.read_values(t)) for t in ys]]
            inputs = [acc]

        def as_a_host(lib, args, command, seen):
            seen(info, Res)
            return info, None, None, Res

        saved = run.run_as_a_host
        run.run_as_a_host = as_a_host
        try:
            args = argparse.Namespace(op="Op", json=as_json, input=None)
            rc, out, err = _quiet(run.cmd_run, None, args)
        finally:
            run.run_as_a_host = saved
        self.assertEqual((rc, err), (0, ""))
        return out

    def test_text(self):
        self.assertEqual(self._cmd(False).splitlines(), [
            "ys: 2 tensors", "ys[0]: float32[2] = [0.5, 1.5]", "ys[1]: int32[2,2] = [1, 2, 3, 4]",
            "input acc[0] after the call (mutated): float32[3] = [1, 2, 3]",
            "input acc[1] after the call (mutated): int32[1,2] = [7, 8]"])

    def test_json(self):
        got = json.loads(self._cmd(True))
        self.assertEqual([(t["dtype"], t["shape"], t["values"]) for t in got["outputs"][0]["tensors"]],
                         [("float32", [2], [0.5, 1.5]), ("int32", [2, 2], [1, 2, 3, 4])])
        self.assertEqual([(m["name"], m["dtype"], m["shape"], m["values"])
                          for m in got["mutated_inputs"]],
                         [("acc[0]", "float32", [3], [1.0, 2.0, 3.0]),
                          ("acc[1]", "int32", [1, 2], [7, 8])])


class LanesOptionFlowTest(unittest.TestCase):
    """--lanes N (main._main's _count(0)) reaches pyop_options.lanes, an
    unsigned count: a negative N is a usage error naming the option (exit 2,
    --json's usage error object), never a load with libpyop's set_lanes
    given -1 (4294967295 lanes once in the options struct). Kills
    cli.b14.main.lanes_not_counted."""

    def test_negative_lanes_refused(self):
        main = _cli("main")
        lanes, loaded = [], []
        saved = (main.Lib, main._find_library, main._register_protos, main.cmd_list,
                 main.note_unused)

        def lib(path):
            loaded.append(path)
            return argparse.Namespace(shutdown=lambda: None, set_lanes=lanes.append)
        main.Lib = lib
        main._find_library = lambda: "/lib/libpyop.so"
        main._register_protos = lambda lib, files, command, notes: {}
        main.cmd_list = lambda lib, args: 0
        main.note_unused = lambda command: None
        try:
            for argv in (["--lanes", "-1", "list"], ["--lanes=-1", "list", "--json"]):
                with self.subTest(argv=argv):
                    rc, out, err = _quiet(main._main, argv, "list")
                    self.assertEqual(rc, 2)
                    self.assertEqual(err, "pyop: list: argument --lanes: -1 is not an integer "
                                          ">= 0 (see pyop --help)\n")
                    if "--json" in argv:
                        self.assertEqual(json.loads(out)["error"]["status"], "usage")
                    else:
                        self.assertEqual(out, "")
            rc, out, err = _quiet(main._main, ["--lanes", "2", "list"], "list")
            self.assertEqual((rc, err), (0, ""))
        finally:
            (main.Lib, main._find_library, main._register_protos, main.cmd_list,
             main.note_unused) = saved
        self.assertEqual((lanes, loaded), ([2], ["/lib/libpyop.so"]))


class _DiedAtUnload(BaseException):
    """A plugin ended the worker's process in pyop_shutdown (os._exit(),
    a signal): nothing after it runs."""


class UnloadActivityFlowTest(unittest.TestCase):
    """run's and bench's worker says "unloading the plugins" (main._main's
    finally, supervise.activity) before the pyop_shutdown at its end: a
    plugin that ends the process there is blamed on the unload after the
    result, not on the op's last call, and --json's result (said already)
    is not followed by a second, error, object. The worker's side run in
    this process (its event pipe read back), then the command's side
    (supervise.run_in_worker) given those events and a worker killed by
    SIGSEGV. Kills cli.b14.main.unload_activity_unsaid."""

    def _worker_events(self, command):
        main, sv = _cli("main"), _cli("supervise")
        self.addCleanup(setattr, sv, "_worker", sv._worker)
        rfd, wfd = os.pipe()
        self.addCleanup(os.close, rfd)
        self.addCleanup(os.close, wfd)

        def died():
            raise _DiedAtUnload()

        def the_op(lib, args):
            sv.activity("execute", args.op, 3)
            return 0
        saved = (main.Lib, main._find_library, main._register_protos, main.cmd_run,
                 main.cmd_bench, main.note_unused)
        main.Lib = lambda path: argparse.Namespace(shutdown=died, set_lanes=None)
        main._find_library = lambda: "/lib/libpyop.so"
        main._register_protos = lambda lib, files, command, notes: {}
        main.cmd_run = main.cmd_bench = the_op
        main.note_unused = lambda command: None
        try:
            with self.assertRaises(_DiedAtUnload):
                _quiet(main._main, [command, "--_worker", str(wfd), "Op", "--json"], command)
        finally:
            (main.Lib, main._find_library, main._register_protos, main.cmd_run,
             main.cmd_bench, main.note_unused) = saved
        os.set_blocking(rfd, False)
        return os.read(rfd, 1 << 16).decode()

    def test_unload_named(self):
        sv, main = _cli("supervise"), _cli("main")
        for command, verb in (("run", "run"), ("bench", "benchmark")):
            with self.subTest(command=command):
                stream = self._worker_events(command)
                events = [json.loads(line) for line in stream.splitlines()]
                self.assertEqual([(e["stage"], e["op"]) for e in events],
                                 [("execute", "Op"), (sv.UNLOADING, None)])

                class Killed(_Ended):
                    returncode = -11

                def spawn(argv_of):
                    r, w = os.pipe()
                    argv_of(w)
                    os.write(w, stream.encode())
                    os.close(w)
                    return Killed(), r
                saved = sv.spawn
                sv.spawn = spawn
                try:
                    with self.assertRaises(_cli("errors").CliError) as cm:
                        sv.run_in_worker(argparse.Namespace(command=command, op="Op"),
                                         [command, "Op", "--json"], 5)
                finally:
                    sv.spawn = saved
                e = cm.exception
                self.assertEqual((e.status, e.op, e.exit_code), ("PYOP_EPLUGIN", "Op", 1))
                self.assertEqual(e.message, "while unloading the plugins after the %s, the "
                                            "plugin code ended the process running it: killed "
                                            "by SIGSEGV; the command did not finish" % verb)
                rc, out, err = _quiet(main.report_failure, command, e, True)
                self.assertEqual((rc, out), (1, ""))  # the result on stdout was said already
                self.assertEqual(err, "pyop: %s: %s\n" % (command, e.message))


if __name__ == "__main__":
    unittest.main()
