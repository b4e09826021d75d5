"""The `pyop` command's rules that decide on their own, without a libpyop
call (tools/pyop_cli): each held at its edges and on both sides of them,
so that a flipped comparison or a dropped check shows. The command's
end-to-end behaviour is tested by the other examples.cli.* tests; these
call the modules directly (pure Python, no bridge; libpyop, a worker or a
plugin module stood in for by small fakes where a rule reads one). Issue
31's coverage pass added the classes after CheckStatusTest: each line and
arm of tools/pyop_cli the @cli tests never ran, and each limit at it and
one past (their mutants: cli.cov.* in tests/mutation/mutants.txt).

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.rules):

  PYOP_TEST_TOOLS  tools/ of the source tree (holds the pyop_cli package)
"""

import os
import struct
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


def _manifest(tag="cp312", version=0x030C04F0, flags="", libpython="/usr/lib/libpython3.12.so",
              abi=(1, 6)):
    return {"python_tag": tag, "python_version_hex": "0x%08x" % version, "abi_flags": flags,
            "libpython": libpython, "bridge_abi_major": str(abi[0]),
            "bridge_abi_minor": str(abi[1])}


class StartChoiceTest(unittest.TestCase):
    """Which artifact start_python starts when lanes are asked for
    (start_choice.py, libpyop's rule of src/start_python.c)."""

    def test_lanes_unfit_at_each_edge(self):
        sc = _cli("start_choice")
        self.assertIsNone(sc.lanes_unfit(_manifest()))
        # CPython 3.12.4 is the first release that ends a sub-interpreter safely.
        self.assertIsNone(sc.lanes_unfit(_manifest(version=0x030C04F0)))
        # ... the rule's bound itself (libpyop's src/lanes_floor.h), and just below it
        self.assertIsNone(sc.lanes_unfit(_manifest(version=sc.LANES_FIXED_312)))
        self.assertIn("cannot end a sub-interpreter safely",
                      sc.lanes_unfit(_manifest(version=sc.LANES_FIXED_312 - 1)))
        self.assertIn("cannot end a sub-interpreter safely",
                      sc.lanes_unfit(_manifest(version=0x030C03F0)))
        self.assertIsNone(sc.lanes_unfit(_manifest(tag="cp313", version=0x030D00F0)))
        self.assertIn("no per-interpreter GIL", sc.lanes_unfit(_manifest(tag="cp311")))
        self.assertIn("free-threaded", sc.lanes_unfit(_manifest(tag="cp313", flags="t")))
        # a free-threaded debug build ("td") is free-threaded too; a debug one is not
        self.assertIn("free-threaded", sc.lanes_unfit(_manifest(tag="cp313", flags="td")))
        self.assertIsNone(sc.lanes_unfit(_manifest(tag="cp313", version=0x030D00F0, flags="d")))
        self.assertIn("no shared libpython", sc.lanes_unfit(_manifest(libpython="")))
        # Bridge ABI 1.6 is the first with lanes.
        self.assertIsNone(sc.lanes_unfit(_manifest(abi=(1, 6))))
        self.assertIsNone(sc.lanes_unfit(_manifest(abi=(1, 7))))
        self.assertIn("lanes need 1.6", sc.lanes_unfit(_manifest(abi=(1, 5))))
        self.assertIn("lanes need 1.6", sc.lanes_unfit(_manifest(abi=(2, 6))))

    def _root(self, names):
        root = tempfile.mkdtemp(prefix="pyop_choice_")
        self.addCleanup(lambda: __import__("shutil").rmtree(root))
        for name, m in names.items():
            os.mkdir(os.path.join(root, name))
            with open(os.path.join(root, name, "manifest.txt"), "w") as f:
                f.write("# manifest\n")
                for k, v in m.items():
                    f.write("%s=%s\n" % (k, v))
        return root

    def test_artifacts_in_the_builds_order_then_by_name(self):
        sc = _cli("start_choice")
        root = self._root({"zz": _manifest(), "aa": _manifest(), "mid": _manifest(),
                           "first": _manifest()})
        names = [n for n, _ in sc.artifacts(root, ["mid", "first"])]
        self.assertEqual(names, ["mid", "first", "aa", "zz"])

    def test_choose_the_first_fit_when_the_default_cannot(self):
        sc = _cli("start_choice")
        root = self._root({"py311": _manifest(tag="cp311"), "py312": _manifest(),
                           "a312": _manifest()})
        name, note = sc.choose(root, 2, default="py311", order="py311;py312")
        self.assertEqual(name, "py312")  # ordered before a312, which sorts first by name
        self.assertIn("starting py312 instead of the build's default py311", note)
        self.assertEqual(sc.choose(root, 0, default="py311", order="py311;py312"),
                         ("py311", None))

    def test_from_the_source_tree_no_build_order(self):
        """Run from the source tree (tools/pyop_cli, config.py as written:
        no bin/pyop filled it in), the build's artifact order is empty:
        choose() with lanes asked for and no order of its own takes the
        first fit by name, and doctor's report says it cannot tell."""
        sc, config, doctor = _cli("start_choice"), _cli("config"), _cli("doctor")
        self.assertEqual((config.BUILD_ARTIFACT, config.SCRIPT), (None, None))
        root = self._root({"py311": _manifest(tag="cp311"), "py312": _manifest(),
                           "a312": _manifest()})
        name, note = sc.choose(root, 2, default="py311")
        self.assertEqual(name, "a312")
        self.assertIn("starting a312 instead of the build's default py311", note)
        self.assertEqual(sc.choose(root, 0, default="py311"), ("py311", None))
        self.assertEqual([n for n, _ in sc.artifacts(root, [])], ["a312", "py311", "py312"])
        rep = doctor.start_python_report(root, 2)
        self.assertEqual((rep["artifact"], rep["note"]), (None, None))
        self.assertTrue(rep["verdict"].startswith("unknown (run the built or installed command"),
                        rep)


class OriginTest(unittest.TestCase):
    """Where an exception came from, read from the bridge's text of it when
    no origin was recorded (plugins.exception_origin): the innermost frame,
    where it was raised, not the outermost."""

    def test_innermost_frame_of_the_text(self):
        plugins = _cli("plugins")
        text = ("RuntimeError: no\n"
                "Traceback (most recent call last):\n"
                '  File "/p/op.py", line 9, in execute\n'
                "    helper()\n"
                '  File "/p/lib.py", line 2, in helper\n'
                '    raise RuntimeError("no")\n'
                "RuntimeError: no")
        self.assertEqual(plugins._origin_of_text(text),
                         (("RuntimeError",), "/p/lib.py", 2, "RuntimeError: no"))
        self.assertIsNone(plugins._origin_of_text("RuntimeError: no frames"))


def _info(inputs=(("x", "required"),), attrs=(), outputs=(("y", "required"),)):
    """An op's info as binding.info_to_dict gives it."""
    return {"op_type": "Op", "inputs": [{"name": n, "kind": k, "mutated": False,
                                         "dtypes": None, "dtype_symbol": None}
                                        for n, k in inputs],
            "outputs": [{"name": n, "kind": k, "alias": None, "dtypes": None,
                         "dtype_symbol": None} for n, k in outputs],
            "attrs": [dict(a) for a in attrs], "capabilities": ["infer_meta", "execute"],
            "lanes": 0, "serial_reason": None}


class CheckCasesTest(unittest.TestCase):
    """check's cases (check_cases.py): the attribute case changes every
    optional scalar attribute, and a plugin's samples are held to the op's
    inputs."""

    def test_attribute_case_changes_each_scalar(self):
        cc = _cli("check_cases")
        for a, other in (({"type": "bool", "default": False}, True),
                         ({"type": "bool", "default": True}, False),
                         ({"type": "int", "default": 3}, 4),
                         ({"type": "int", "default": (1 << 62)}, (1 << 62) - 1),
                         ({"type": "float", "default": 1.0}, 2.5),
                         ({"type": "str", "default": "a"}, None)):
            with self.subTest(a=a):
                self.assertEqual(cc._other_value(a), other)
                if other is not None:
                    self.assertNotEqual(cc._other_value(a), a["default"])

    def test_samples_held_to_the_inputs(self):
        cc = _cli("check_cases")
        info = _info(inputs=(("x", "required"), ("y", "optional")))
        t = ("float32", [2], [1.0, 2.0])
        cases = cc.sample_cases(info, lambda: [{"inputs": {"x": t}}], "ops.py:3")
        self.assertEqual([len(slot) for slot in cases[0].inputs], [1, 0])
        with self.assertRaisesRegex(ValueError, r"sample 0 of Op \(ops.py:3\): required input "
                                    r"'x' missing"):
            cc.sample_cases(info, lambda: [{"inputs": {"y": t}}], "ops.py:3")
        with self.assertRaisesRegex(ValueError, r"sample 0 of Op \(ops.py:3\): 'z' is not an "
                                    r"input \(inputs: \['x', 'y'\]\)"):
            cc.sample_cases(info, lambda: [{"inputs": {"x": t, "z": t}}], "ops.py:3")


class ListLinesTest(unittest.TestCase):
    """list's data type line (list.py): ios of one symbol together, each
    io without a symbol on its own."""

    def test_dtypes_grouped_by_symbol_only(self):
        lst = _cli("list")
        op = _info(inputs=(("x", "required"), ("y", "required"), ("idx", "required")))
        op["inputs"][0].update(dtypes=["float32", "float16"], dtype_symbol="T")
        op["inputs"][1].update(dtypes=["float32", "float16"], dtype_symbol="T")
        op["inputs"][2].update(dtypes=["int32"], dtype_symbol=None)
        op["outputs"][0].update(dtypes=["int64"], dtype_symbol=None)
        self.assertEqual(lst.dtypes_line(op), "data types: x, y (one type T): float32, float16; "
                                              "idx: int32; y: int64")
        self.assertIsNone(lst.dtypes_line(_info()))


class JsonErrorTest(unittest.TestCase):
    """--json errors (errors.py): the op a message names is the error's op
    when none was given."""

    def test_op_named_by_the_message(self):
        errors = _cli("errors")
        e = errors.CliError('execute of "Gelu" (ops.py:9) failed', "PYOP_EPYTHON")
        self.assertEqual(e.to_json()["op"], "Gelu")
        self.assertEqual(e.to_json()["file"], "ops.py")
        self.assertEqual(e.to_json()["line"], 9)
        e = errors.CliError("op 'Relu': bad", "PYOP_EINVAL", op="Given")
        self.assertEqual(e.to_json()["op"], "Given")
        self.assertIsNone(errors.CliError("nothing named").to_json()["op"])

    def test_too_deep_only_where_no_plugin_is(self):
        errors = _cli("errors")
        root = tempfile.mkdtemp(prefix="pyop_deep_")
        self.addCleanup(lambda: __import__("shutil").rmtree(root))
        deep = os.path.join(root, "deep")
        os.makedirs(os.path.join(deep, "sub"))
        open(os.path.join(deep, "sub", "op.py"), "w").close()
        fine = os.path.join(root, "fine")
        os.makedirs(os.path.join(fine, "sub"))
        open(os.path.join(fine, "sub", "op.py"), "w").close()
        open(os.path.join(fine, "top.py"), "w").close()  # a plugin at its top
        saved = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = "%s:%s" % (deep, fine)
        try:
            notes = errors.too_deep_notes()
        finally:
            if saved is None:
                del os.environ["ASCEND_CUSTOM_OPP_PATH"]
            else:
                os.environ["ASCEND_CUSTOM_OPP_PATH"] = saved
        self.assertEqual(len(notes), 1, notes)
        self.assertTrue(notes[0].startswith(os.path.join(deep, "sub", "op.py") + " skipped"),
                        notes[0])


class SampleValuesTest(unittest.TestCase):
    """The values generated for an input (values._sample_values): ints for
    every integer type, signed and unsigned, bools for bool, halves for the
    floating types; each packs as its type."""

    def test_each_dtype(self):
        import struct as st
        v, b = _cli("values"), _cli("binding")
        for k, name in enumerate(b.DTYPES):
            with self.subTest(name):
                got = v._sample_values(k, 12, 3)
                self.assertEqual(len(got), 12)
                if name == "bool":
                    self.assertTrue(all(type(x) is bool for x in got))
                elif name.startswith(("int", "uint")):
                    self.assertTrue(all(type(x) is int and 0 <= x < 7 for x in got), got)
                else:
                    self.assertTrue(all(type(x) is float for x in got), got)
                    self.assertIn(0.5, [x % 1 for x in got])
                if name != "bfloat16":  # packed from its bits, not from the float
                    st.pack("<%d%s" % (len(got), b.DTYPE_STRUCT[k]), *got)


class DoctorRssTest(unittest.TestCase):
    """doctor's memory figure (doctor._rss) is this process's resident
    memory (statm's second field, VmRSS), not its virtual size; None
    where there is no /proc."""

    def test_resident_not_virtual(self):
        doctor = _cli("doctor")
        if not os.path.exists("/proc/self/status"):
            self.skipTest("no /proc")
        import mmap
        # 64 MiB mapped, never touched: virtual, not resident, whatever
        # Python runs this (a lean one's two sizes can be close).
        untouched = mmap.mmap(-1, 64 << 20)
        got = doctor._rss()
        with open("/proc/self/status") as f:
            kb = {ln.split(":")[0]: int(ln.split()[1]) for ln in f
                  if ln.startswith(("VmRSS:", "VmSize:"))}
        rss, size = kb["VmRSS"] * 1024, kb["VmSize"] * 1024
        self.assertGreater(size - rss, 4 << 20, "test bug: resident and virtual too close")
        self.assertLess(abs(got - rss), 2 << 20, (got, rss, size))
        untouched.close()
        import builtins
        saved = builtins.open

        def no_proc(path, *a, **k):
            if str(path).startswith("/proc/"):
                raise FileNotFoundError(path)
            return saved(path, *a, **k)
        builtins.open = no_proc
        try:
            self.assertIsNone(doctor._rss())
        finally:
            builtins.open = saved


class BindingTest(unittest.TestCase):
    """binding.info_to_dict: what list, check and run read of an op."""

    def test_alias_of_each_input_shown(self):
        import ctypes
        b = _cli("binding")
        ins = (b.IoInfo * 2)((b"acc", 0), (b"x", 0))
        outs = (b.IoInfo * 2)((b"acc_out", 0), (b"x_out", 0))
        flags = (ctypes.c_uint32 * 2)(1, 1)
        for alias, want in (((0, 1), ["acc", "x"]), ((-1, 0), [None, "acc"]),
                            ((1, -1), ["x", None])):
            with self.subTest(alias=alias):
                arr = (ctypes.c_int32 * 2)(*alias)
                info = b.OpInfo(ctypes.sizeof(b.OpInfo), b"Acc", b"pyop:acc", b"acc.py:1",
                                None, None, ins, 2, outs, 2, None, 0, 0, flags, arr)
                d = b.info_to_dict(info)
                self.assertEqual([o["alias"] for o in d["outputs"]], want)
                self.assertEqual([i["mutated"] for i in d["inputs"]], [True, True])


    def test_dtype_constraints_of_each_io(self):
        """Each input and output shows its own constraint (mask and
        symbol), none when the array is NULL."""
        import ctypes
        b = _cli("binding")
        ins = (b.IoInfo * 1)((b"x", 0))
        outs = (b.IoInfo * 2)((b"y", 0), (b"z", 0))
        in_sets = (b.DtypeSet * 1)((1 << 0, b"T"))
        out_sets = (b.DtypeSet * 2)((1 << 0, b"T"), (1 << 1 | 1 << 2, None))
        info = b.OpInfo(ctypes.sizeof(b.OpInfo), b"Op", b"pyop:op", b"op.py:1", None, None,
                        ins, 1, outs, 2, None, 0, 0, None, None)
        info.input_dtypes, info.output_dtypes = in_sets, out_sets
        d = b.info_to_dict(info)
        names = b.DTYPES
        self.assertEqual([(i["dtypes"], i["dtype_symbol"]) for i in d["inputs"]],
                         [([names[0]], "T")])
        self.assertEqual([(o["dtypes"], o["dtype_symbol"]) for o in d["outputs"]],
                         [([names[0]], "T"), ([names[1], names[2]], None)])
        info.input_dtypes = None
        d = b.info_to_dict(info)
        self.assertEqual((d["inputs"][0]["dtypes"], d["inputs"][0]["dtype_symbol"]), (None, None))
        self.assertEqual(d["outputs"][1]["dtypes"], [names[1], names[2]])


class ReferenceCompareTest(unittest.TestCase):
    """check's comparison with a plugin's reference (check_plugin._compare):
    the shapes first (numpy would broadcast [3] against [1, 3]), NaN where
    the reference has NaN is equal, anything else within rtol/atol."""

    def test_compare(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("no numpy in this Python")
        cp = _cli("check_plugin")
        got = np.array([1.0, float("nan"), 3.0], dtype=np.float32)
        self.assertIsNone(cp._compare(np, got, np.array([1.0, float("nan"), 3.0]), "output y",
                                      1e-6, 0))
        self.assertEqual(cp._compare(np, got, np.array([[1.0, float("nan"), 3.0]]), "output y",
                                     1e-6, 0), "output y: shape [3], the reference's [1, 3]")
        text = cp._compare(np, got, np.array([1.0, float("nan"), 3.5]), "output y", 1e-6, 0)
        self.assertTrue(text.startswith("output y differs from the reference at element 2: 3.0, "
                                        "the reference 3.5"), text)


class CheckWorkerTest(unittest.TestCase):
    """check's worker and supervisor (check_worker.py, check_supervise.py):
    which plugins of a directory are checked, a waiting implementation's
    entry, what the worker is told, and an op a worker died in."""

    def test_plugin_entries_as_the_loader_finds_them(self):
        cw = _cli("check_worker")
        root = tempfile.mkdtemp(prefix="pyop_entries_")
        self.addCleanup(lambda: __import__("shutil").rmtree(root))
        for name in ("a.py", "_private.py", ".hidden.py", "b.txt"):
            open(os.path.join(root, name), "w").close()
        os.makedirs(os.path.join(root, "pkg"))
        open(os.path.join(root, "pkg", "__init__.py"), "w").close()
        os.makedirs(os.path.join(root, "_pkg"))
        open(os.path.join(root, "_pkg", "__init__.py"), "w").close()
        os.makedirs(os.path.join(root, "plain"))
        self.assertEqual(cw._plugin_entries([root]),
                         [os.path.join(root, "a.py"), os.path.join(root, "pkg")])

    def test_waiting_implementation_is_inconclusive(self):
        cw = _cli("check_worker")
        e = cw._pending_entry({"op_type": "Late", "impl_source": "late.py:4"}, "late.py")
        self.assertEqual((e["status"], e["pending"], e["inputs"]),
                         ("inconclusive", True, "no prototype"))
        self.assertEqual(e["ran"], [])

    def test_samples_come_before_the_sweep_not_instead(self):
        import argparse
        cw = _cli("check_worker")
        info = _info()
        t = ("float32", [2], [1.0, 2.0])
        worker = cw.Worker.__new__(cw.Worker)
        worker.args = argparse.Namespace(input=None, attr=None)
        saved = cw.plugin_samples
        cw.plugin_samples = lambda: {"Op": (lambda: [{"inputs": {"x": t}, "label": "mine"}],
                                            "ops.py:3")}
        try:
            cases, what = worker._cases(info)
        finally:
            cw.plugin_samples = saved
        generated = _cli("check_cases").generated_cases(info)
        self.assertEqual(what, "samples + generated")
        self.assertEqual([c.label for c in cases], ["mine"] + [c.label for c in generated])
        self.assertGreater(len(generated), 1)

    def test_worker_gets_every_given_value(self):
        import argparse
        cs = _cli("check_supervise")
        sup = cs.Supervisor.__new__(cs.Supervisor)
        sup.lib = argparse.Namespace(path="/lib/libpyop.so")
        sup.args = argparse.Namespace(lanes=0, proto=["p.h"], input=["x=float32[2]"],
                                      attr=["n=1", "flag=true"])
        sup.job = {"paths": ["ops.py"], "done": [], "done_plugins": [], "phase": "each"}
        argv = sup._argv(7)
        self.assertEqual(argv[argv.index("--_worker") + 1], "7")
        pairs = [(argv[k], argv[k + 1]) for k in range(len(argv) - 1)
                 if argv[k] in ("--proto", "--input", "--attr")]
        self.assertEqual(pairs, [("--proto", "p.h"), ("--input", "x=float32[2]"),
                                 ("--attr", "n=1"), ("--attr", "flag=true")])

    def test_op_a_worker_died_in_is_done(self):
        cs = _cli("check_supervise")
        sup = cs.Supervisor.__new__(cs.Supervisor)
        sup.ops, sup.partial = [], None
        sup.job = {"paths": ["ops.py"], "done": [], "done_plugins": [], "phase": "each"}
        sup._op_died({"plugin": "ops.py", "op": "Crash", "stage": "execute", "case": None},
                     "ended the process running the check: killed by SIGSEGV")
        self.assertEqual(sup.job["done"], [["ops.py", "Crash"]])  # the next worker skips it
        self.assertEqual([(o["op_type"], o["status"]) for o in sup.ops], [("Crash", "failed")])


class MaxBytesTest(unittest.TestCase):
    """PYOP_CLI_MAX_BYTES (values.max_bytes): a positive byte count; 0, a
    negative or a non-number is a usage error, not a limit that refuses
    every allocation."""

    def _with(self, text):
        values = _cli("values")
        saved = os.environ.get("PYOP_CLI_MAX_BYTES")
        if text is None:
            os.environ.pop("PYOP_CLI_MAX_BYTES", None)
        else:
            os.environ["PYOP_CLI_MAX_BYTES"] = text
        try:
            return values.max_bytes()
        finally:
            if saved is None:
                os.environ.pop("PYOP_CLI_MAX_BYTES", None)
            else:
                os.environ["PYOP_CLI_MAX_BYTES"] = saved

    def test_limits(self):
        values = _cli("values")
        errors = _cli("errors")
        self.assertEqual(self._with(None), values.MAX_BYTES_DEFAULT)
        self.assertEqual(self._with("1"), 1)
        self.assertEqual(self._with("0x10"), 16)
        self.assertEqual(self._with(str(values.INT64_MAX)), values.INT64_MAX)
        for bad in ("0", "-1", "ten", str(values.INT64_MAX + 1)):
            with self.subTest(bad=bad):
                with self.assertRaisesRegex(errors.UsageError, "PYOP_CLI_MAX_BYTES=%s: expected a "
                                            "positive byte count" % bad):
                    self._with(bad)


class _FakeC:
    """The few libpyop calls Lib.check makes, answering a fixed failure."""

    def __init__(self, name, detail):
        self.name, self.detail = name, detail

    def pyop_status_name(self, rc):
        return self.name.encode()

    def pyop_last_error(self):
        return self.detail.encode()

    def pyop_strerror(self, rc):
        return b"it failed"

    def pyop_last_status(self):
        return -22


class CheckStatusTest(unittest.TestCase):
    """Lib.check: an interrupted call (PYOP_EINTR: a KeyboardInterrupt in
    plugin code) is an interrupt for the command, never an ordinary failure
    that a handler of failures would report and go on from."""

    def _lib(self, name, detail):
        b = _cli("binding")
        lib = b.Lib.__new__(b.Lib)
        lib.c = _FakeC(name, detail)
        return b, lib

    def test_eintr_is_a_keyboard_interrupt(self):
        b, lib = self._lib("PYOP_EINTR", "execute of \"Slow\" interrupted\nKeyboardInterrupt")
        with self.assertRaises(KeyboardInterrupt) as cm:
            lib.check("pyop_op_execute", b.PYOP_EINTR)
        self.assertEqual(str(cm.exception), 'execute of "Slow" interrupted')
        self.assertEqual(lib.interrupt_detail(), 'execute of "Slow" interrupted')

    def test_other_failures_are_pyop_errors(self):
        b, lib = self._lib("PYOP_EINVAL", "bad input")
        errors = _cli("errors")
        with self.assertRaises(errors.PyopError) as cm:
            lib.check("pyop_op_execute", -1)
        self.assertEqual((cm.exception.status, cm.exception.message), ("PYOP_EINVAL", "bad input"))
        lib.check("pyop_load", 0)  # success: nothing raised

    def test_origin_only_for_python_errors(self):
        """A Python exception's origin is kept for PYOP_EPYTHON only: another
        failure whose text quotes a traceback (a refusal naming the plugin's
        frame) has none, so check never blames a library for it."""
        detail = ('op "Op" refused\nTraceback (most recent call last):\n'
                  '  File "/p/op.py", line 3, in execute\nValueError: bad')
        errors = _cli("errors")
        b, lib = self._lib("PYOP_EPYTHON", detail)
        with self.assertRaises(errors.PyopError) as cm:
            lib.check("pyop_op_execute", -6)
        self.assertEqual(cm.exception.origin, (("ValueError",), "/p/op.py", 3, "ValueError: bad"))
        b, lib = self._lib("PYOP_EINVAL", detail)
        with self.assertRaises(errors.PyopError) as cm:
            lib.check("pyop_op_execute", -1)
        self.assertIsNone(cm.exception.origin)



class _Env:
    """ASCEND_CUSTOM_OPP_PATH set (None: unset) for a with block."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self.saved = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
        if self.value is None:
            os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None)
        else:
            os.environ["ASCEND_CUSTOM_OPP_PATH"] = self.value

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None)
        else:
            os.environ["ASCEND_CUSTOM_OPP_PATH"] = self.saved


def _op_info_error(op, message, waiting=()):
    """The CliError binding.Lib.op_info raises for op (or None) when
    libpyop answers PYOP_ENOENT with message, "Relu" is the registered op
    type and waiting the op types of the loaded implementations
    (ASCEND_CUSTOM_OPP_PATH=/ops)."""
    b, errors, plugins = _cli("binding"), _cli("errors"), _cli("plugins")

    class C(_FakeC):
        def pyop_op_get(self, name, out):
            return -3

    lib = b.Lib.__new__(b.Lib)
    lib.c = C("PYOP_ENOENT", message)
    lib.op_types = lambda: ["Relu"]
    saved = plugins.loaded_impls
    plugins.loaded_impls = lambda: [{"op_type": t} for t in waiting]
    try:
        with _Env("/ops"):
            lib.op_info(op)
    except errors.CliError as e:
        return e
    finally:
        plugins.loaded_impls = saved
    return None


def _tree(test, files):
    """A temporary directory holding files (relative paths; a name ending
    in / is a directory)."""
    root = tempfile.mkdtemp(prefix="pyop_rules_")
    test.addCleanup(lambda: __import__("shutil").rmtree(root))
    for name in files:
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path) if not name.endswith("/") else path, exist_ok=True)
        if not name.endswith("/"):
            open(path, "w").close()
    return root


class ErrorTextTest(unittest.TestCase):
    """What the command's messages say (errors.py): the plugin path's
    state, close names, counts, the text of a failure libpyop gave none
    for, and the notes on plugins one directory too deep, at their limit."""

    def test_too_deep_names_at_most_the_limit(self):
        errors = _cli("errors")
        three = _tree(self, ["sub/a.py", "sub/b.py", "sub/c.py", "sub/_skip.py"])
        four = _tree(self, ["sub/a.py", "sub/b.py", "sub/c.py", "sub/d.py"])
        with _Env("%s:%s" % (three, four)):
            notes = errors.too_deep_notes()
        self.assertEqual(len(notes), 2, notes)
        # exactly the limit: every file named, no "and N more"
        self.assertNotIn("more", notes[0].split(" skipped")[0])
        self.assertIn(os.path.join(three, "sub", "c.py") + " skipped", notes[0])
        self.assertIn("`from . import a, b, c`", notes[0])  # _skip.py is no plugin
        # one past it: three named, the fourth counted
        self.assertIn(os.path.join(four, "sub", "c.py") + " and 1 more skipped", notes[1])
        self.assertNotIn(os.path.join(four, "sub", "d.py"), notes[1].split(" skipped")[0])
        self.assertIn("from . import a, b, c, d", notes[1])
        with _Env(four):
            self.assertIn(" and 2 more skipped", errors.too_deep_notes(limit=2)[0])

    def test_too_deep_only_for_plugin_directories_below(self):
        errors = _cli("errors")
        # a file, a private directory, an empty one and a directory of no .py
        # files below the element: none of them is a skipped plugin directory
        root = _tree(self, ["notes.txt", "_private/a.py", ".hidden/b.py", "empty/",
                            "data/x.txt", "data/_y.py"])
        with _Env(root):
            self.assertEqual(errors.too_deep_notes(), [])
        with _Env(os.path.relpath(_tree(self, ["sub/a.py"]))):
            self.assertEqual(errors.too_deep_notes(), [])  # relative: never scanned

    def test_too_deep_despite_helpers_at_the_top(self):
        # _helper.py, _pkg/ (a package) and .hidden.py are no plugins (the
        # loader skips them): a directory holding only those and sub/a.py
        # still loads nothing, so the note is given; a plugin at the top
        # (plug.py, or a package pkg/) is what ends it
        errors = _cli("errors")
        helpers = ["_helper.py", "_pkg/__init__.py", ".hidden.py", "sub/a.py"]
        for top in ([], ["_helper.py"], ["_pkg/__init__.py"], [".hidden.py"], helpers[:3]):
            with self.subTest(top=top):
                root = _tree(self, top + ["sub/a.py"])
                with _Env(root):
                    notes = errors.too_deep_notes()
                self.assertEqual(len(notes), 1, notes)
                self.assertTrue(notes[0].startswith(os.path.join(root, "sub", "a.py")
                                                    + " skipped: one directory too deep"),
                                notes[0])
        for plugin in (["plug.py"], ["pkg/__init__.py"]):
            with self.subTest(plugin=plugin):
                with _Env(_tree(self, helpers + plugin)):
                    self.assertEqual(errors.too_deep_notes(), [])

    def test_too_deep_none_beside_a_package_named_dot_py(self):
        # a directory foo.py/ with __init__.py is a package the loader loads
        # (src/scan.c, pyop._loader.discover): its directory holds a plugin,
        # so sub/a.py beside it gets no note; foo.py/ without __init__.py is
        # no plugin, and the note is given
        errors = _cli("errors")
        with _Env(_tree(self, ["foo.py/__init__.py", "sub/a.py"])):
            self.assertEqual(errors.too_deep_notes(), [])
        root = _tree(self, ["foo.py/", "sub/a.py"])
        with _Env(root):
            notes = errors.too_deep_notes()
        self.assertEqual([n.split(" skipped")[0] for n in notes],
                         [os.path.join(root, "sub", "a.py")])
        with _Env(None):
            self.assertEqual(errors.too_deep_notes(), [])

    def test_path_note_and_unknown_op(self):
        errors = _cli("errors")
        with _Env(None):
            self.assertIn("is not set", errors.opp_path_note())
            self.assertEqual(errors.unknown_op_message("Relu", []),
                             'no op "Relu" is registered (ASCEND_CUSTOM_OPP_PATH is not set, '
                             'so no plugins were loaded)')
        for empty in ("", ":", "::"):
            with _Env(empty):
                self.assertIn("is empty", errors.opp_path_note())
        with _Env("/ops"):
            self.assertIsNone(errors.opp_path_note())
            self.assertEqual(errors.unknown_op_message("Relu", []),
                             'no op "Relu" is registered (none are registered from '
                             'ASCEND_CUSTOM_OPP_PATH=/ops)')
            self.assertEqual(errors.unknown_op_message("relu", ["Relu", "Sigmoid"]),
                             'no op "relu" is registered; did you mean "Relu"?')

    def test_did_you_mean_and_plural(self):
        errors = _cli("errors")
        self.assertEqual(errors.did_you_mean("gama", ["gamma", "beta"]), '; did you mean "gamma"?')
        self.assertEqual(errors.did_you_mean("X", ["x", "y"]), '; did you mean "x"?')
        self.assertEqual(errors.did_you_mean("x", ["x"]), "")  # itself is no suggestion
        self.assertEqual(errors.did_you_mean("alpha", ["zeta"]), "")
        self.assertEqual(errors.did_you_mean("ab", ["AB", "abc"]), '; did you mean "AB" or "abc"?')
        self.assertEqual([errors.plural(n, "op") for n in (0, 1, 2)], ["0 ops", "1 op", "2 ops"])
        self.assertEqual(errors.plural(2, "entry", "entries"), "2 entries")
        self.assertEqual(errors.plural(1, "entry", "entries"), "1 entry")

    def test_failure_text(self):
        errors = _cli("errors")
        for blank in (None, "", "  \n"):
            with self.subTest(detail=blank):
                e = errors.PyopError("pyop_load", "PYOP_EINVAL", blank, "bad argument")
                self.assertEqual(e.message, "pyop_load failed (PYOP_EINVAL: bad argument)")
                self.assertEqual((e.status, e.exit_code), ("PYOP_EINVAL", 1))
        self.assertEqual(errors.PyopError("pyop_load", "PYOP_EPYTHON", "it broke\n").message,
                         "it broke")
        missing = "while importing pyop plugin /p/a.py\nModuleNotFoundError: No module named 'np'"
        self.assertIn("a module installed for another Python is not found",
                      errors.PyopError("pyop_load", "PYOP_EPYTHON", missing).message)
        for alone in (missing.splitlines()[0] + "\nImportError: no",
                      "ModuleNotFoundError: No module named 'np'"):
            self.assertNotIn("another Python", errors.PyopError("x", "PYOP_EPYTHON", alone).message)
        self.assertEqual(errors.UsageError("bad").exit_code, 2)

    def test_where(self):
        errors = _cli("errors")
        self.assertEqual(errors._where("while importing pyop plugin /p/a.py \nboom"),
                         ("/p/a.py", None))
        self.assertEqual(errors._where('op "X" (implementation at /p/x.py:12) failed'),
                         ("/p/x.py", 12))
        self.assertEqual(errors._where("nothing here"), (None, None))
        self.assertEqual(errors._op_named('op type "Conv" unknown'), "Conv")
        self.assertIsNone(errors._op_named("no name"))


class HostArgsTest(unittest.TestCase):
    """--input, --attr, --compile-option and the plugin path arguments as
    the commands read them (host.py), each rule at its count."""

    def _args(self, inputs=None, attrs=None):
        import argparse
        return argparse.Namespace(input=inputs, attr=attrs, op="Op")

    def test_input_counts(self):
        host, errors = _cli("host"), _cli("errors")
        info = _info(inputs=(("x", "required"), ("b", "optional")))
        got = host._inputs_from_args(info, self._args(["x=float32[2]:1,2"]))
        self.assertEqual(got, [[(0, [2], [1.0, 2.0])], []])
        got = host._inputs_from_args(info, self._args(["x=float32[3]", "b=float32[1]:5"]))
        self.assertEqual([len(slot) for slot in got], [1, 1])
        self.assertEqual(len(got[0][0][2]), 3)  # values made for a shape without them
        for given in (None, [], ["b=float32[1]"], ["x=float32[1]", "x=float32[1]"]):
            with self.subTest(given=given):
                with self.assertRaisesRegex(errors.UsageError,
                                            'input "x" of "Op" is required') as cm:
                    host._inputs_from_args(info, self._args(given))
                self.assertEqual((cm.exception.exit_code, cm.exception.op), (2, "Op"))
        with self.assertRaisesRegex(errors.UsageError, 'input "b" is optional: give it at most '
                                    'once'):
            host._inputs_from_args(info, self._args(["x=float32[1]", "b=float32[1]",
                                                     "b=float32[1]"]))
        with self.assertRaisesRegex(errors.UsageError, 'op "Op" has no input "X" \\(inputs: x, '
                                    'b\\); did you mean "x"\\?'):
            host._inputs_from_args(info, self._args(["x=float32[1]", "X=float32[1]"]))
        with self.assertRaisesRegex(errors.UsageError, 'has no input "x" \\(inputs: none\\)'):
            host._inputs_from_args(_info(inputs=()), self._args(["x=float32[1]"]))

    def test_attrs(self):
        host, errors = _cli("host"), _cli("errors")
        info = _info(attrs=({"name": "n", "type": "int"}, {"name": "s", "type": "str"}))
        self.assertEqual(host._attrs_from_args(info, self._args(attrs=["n=3", "s=a=b"])),
                         {"n": 3, "s": "a=b"})
        self.assertEqual(host._attrs_from_args(info, self._args()), {})
        with self.assertRaisesRegex(errors.UsageError, "--attr n: expected NAME=VALUE"):
            host._attrs_from_args(info, self._args(attrs=["n"]))
        with self.assertRaisesRegex(errors.UsageError, 'op "Op" has no attribute "N" \\(it has: '
                                    'n, s\\); did you mean "n"\\?'):
            host._attrs_from_args(info, self._args(attrs=["N=3"]))
        with self.assertRaisesRegex(errors.UsageError, r"\(it has: none\)"):
            host._attrs_from_args(_info(), self._args(attrs=["n=3"]))

    def test_plugin_paths(self):
        host, errors = _cli("host"), _cli("errors")
        host.check_paths(["ops", "my ops", "/a/b"])  # space inside a name is fine
        host.check_paths(None)
        for bad, text in (("a:b", "cannot contain ':'"), ("", "an empty plugin path"),
                          (" ops", "cannot start or end with whitespace"),
                          ("ops\t", "cannot start or end with whitespace"),
                          ("ops\n", "cannot start or end with whitespace")):
            with self.subTest(path=bad):
                with self.assertRaisesRegex(errors.UsageError, text) as cm:
                    host.check_paths(["ops", bad])
                self.assertEqual(cm.exception.exit_code, 2)
        with _Env("/unchanged"):
            host.with_opp_path([])
            self.assertEqual(os.environ["ASCEND_CUSTOM_OPP_PATH"], "/unchanged")
            host.with_opp_path(["/a", "/b"])
            self.assertEqual(os.environ["ASCEND_CUSTOM_OPP_PATH"], "/a:/b")

    def test_compile_options(self):
        import argparse
        host, errors = _cli("host"), _cli("errors")

        def opts(*texts):
            return host.compile_options(argparse.Namespace(compile_option=list(texts)))
        self.assertEqual(opts(), {})
        self.assertEqual(opts("K=1", "E=", "K=2", "U=a=b"), {"K": "2", "E": "", "U": "a=b"})
        for bad in ("K", "=V"):
            with self.subTest(option=bad):
                with self.assertRaisesRegex(errors.UsageError,
                                            "--compile-option %s: expected KEY=VALUE" % bad):
                    opts("K=1", bad)
        self.assertIsNone(host.set_compile_options({}))
        saved = sys.modules.pop("ge.custom_op.context", None)
        try:
            self.assertIn("no GE plugin is loaded", host.set_compile_options({"K": "1"}))
            got = []
            sys.modules["ge.custom_op.context"] = type(sys)("ctx")
            sys.modules["ge.custom_op.context"].set_compile_options = got.append
            self.assertIsNone(host.set_compile_options({"K": "1"}))
            self.assertEqual(got, [{"K": "1"}])
        finally:
            sys.modules.pop("ge.custom_op.context", None)
            if saved is not None:
                sys.modules["ge.custom_op.context"] = saved


class MainOptionTypesTest(unittest.TestCase):
    """The command line's number types (main.py): a count at its least and
    at INT64_MAX, one past each; a time limit > 0 and finite."""

    def test_count(self):
        import argparse
        main = _cli("main")
        values = _cli("values")
        one = main._count(1)
        self.assertEqual([one("1"), one("0x10"), one(str(values.INT64_MAX))],
                         [1, 16, values.INT64_MAX])
        for bad in ("0", "-1", str(values.INT64_MAX + 1), "ten", "1.5"):
            with self.subTest(text=bad):
                with self.assertRaises(argparse.ArgumentTypeError):
                    one(bad)
        self.assertEqual(main._count(0)("0"), 0)
        with self.assertRaisesRegex(argparse.ArgumentTypeError, "-1 is not an integer >= 0"):
            main._count(0)("-1")

    def test_seconds(self):
        import argparse
        main = _cli("main")
        self.assertEqual([main._seconds("0.5"), main._seconds("1e-9"), main._seconds("600")],
                         [0.5, 1e-9, 600.0])
        for bad in ("0", "-1", "inf", "nan", "", "soon"):
            with self.subTest(text=bad):
                with self.assertRaises(argparse.ArgumentTypeError):
                    main._seconds(bad)

    def test_help_is_the_result(self):
        import contextlib
        import io
        main = _cli("main")
        p = main._Parser(prog="pyop")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            p._print_message("help text\n")
            p._print_message("to stdout\n", sys.stdout)
            p._print_message("a note\n", sys.stderr)
            p._print_message("", sys.stderr)
        self.assertEqual((out.getvalue(), err.getvalue()), ("help text\nto stdout\n", "a note\n"))

    def test_parser_error_is_a_usage_error(self):
        main, errors = _cli("main"), _cli("errors")
        p = main._Parser(prog="pyop x")
        with self.assertRaisesRegex(errors.UsageError, r"^bad \(see pyop x --help\)$") as cm:
            p.error("bad")
        self.assertEqual(cm.exception.exit_code, 2)


class _Res:
    """The part of an instance.RunResult that check's comparisons read."""

    def __init__(self, outputs, after=None):
        self.outputs, self.after = outputs, after

    def output_bytes(self):
        return self.outputs


class CheckVerdictRulesTest(unittest.TestCase):
    """check's rules of a verdict (check_verdict.py): what two runs differ
    in, a thread's result against its inputs run alone, and an op's status
    from what ran."""

    def test_difference(self):
        cv = _cli("check_verdict")
        self.assertIsNone(cv._difference({"output y": b"ab"}, {"output y": b"ab"}))
        self.assertIsNone(cv._difference({}, {}))
        self.assertEqual(cv._difference({"output y": b"abc"}, {"output y": b"abd"}),
                         "output y differs from byte 2")
        self.assertEqual(cv._difference({"output y": b"xbc"}, {"output y": b"abc"}),
                         "output y differs from byte 0")
        self.assertEqual(cv._difference({"output y": b"ab"}, {"output y": b"abc"}),
                         "output y differs from byte 2")  # one is a prefix of the other
        self.assertEqual(cv._difference({"output z": 1}, {"output z": 2}),
                         "output z has 1 tensors, then 2")
        self.assertEqual(cv._difference({"output z": b"a"}, {"output z": 2}),
                         "output z has b'a' tensors, then 2")
        self.assertEqual(cv._difference({"a": b"1"}, {"a": b"1", "b": b"2"}),
                         "b is missing from one run")
        self.assertEqual(cv._difference({"a": b"1", "b": b"2"}, {"a": b"1"}),
                         "b is missing from one run")

    def test_result_bytes(self):
        cv = _cli("check_verdict")
        info = _info(inputs=(("acc", "required"), ("x", "required")),
                     outputs=(("y", "required"), ("zs", "dynamic")))
        info["inputs"][0]["mutated"] = True
        res = _Res([[b"y0"], [b"z0", b"z1"]], after=[[b"a0", b"a1"], [b"x0"]])
        self.assertEqual(cv._result_bytes(info, res),
                         {"output y": b"y0", "output zs": 2, "output zs[0]": b"z0",
                          "output zs[1]": b"z1", "input acc (mutated)": b"a0",
                          "input acc[1] (mutated)": b"a1"})
        self.assertEqual(cv._result_bytes(info, _Res([[b"y0"], []], after=None)),
                         {"output y": b"y0", "output zs": 0})

    def test_thread_problems(self):
        cv, errors = _cli("check_verdict"), _cli("errors")
        alone = [{"output y": b"ab"}, {"output y": b"cd"}]
        self.assertEqual(cv._thread_problems([[{"output y": b"ab"}, None],
                                              [{"output y": b"cd"}] * 2], alone, True, "w"), [])
        got = cv._thread_problems([[{"output y": b"ab"}], [{"output y": b"cx"}]], alone, True,
                                  "w")
        self.assertEqual(len(got), 1)
        self.assertTrue(got[0].startswith("w: thread 1: output y differs from byte 1, compared "
                                          "with its inputs run alone"), got)
        # not deterministic: the same sizes are all that is asked
        self.assertEqual(cv._thread_problems([[{"output y": b"zz"}], [{"output y": b"cx"}]],
                                             alone, False, "w"), [])
        got = cv._thread_problems([[{"output y": b"z"}], [{"output y": b"cd"}]], alone, False, "w")
        self.assertTrue(got and got[0].startswith("w: thread 0: output y"), got)
        got = cv._thread_problems([[{"output y": b"ab"}],
                                   [errors.CliError("it broke", "PYOP_EPYTHON")]], alone, True,
                                  "w")
        self.assertTrue(got[0].startswith("w: thread 1 failed: PYOP_EPYTHON: it broke; "), got)
        got = cv._thread_problems([[RuntimeError("bad")], [None]], alone, True, "w")
        self.assertTrue(got[0].startswith("w: thread 0 failed: RuntimeError: bad; "), got)
        with self.assertRaises(KeyboardInterrupt):
            cv._thread_problems([[{"output y": b"ab"}], [KeyboardInterrupt()]], alone, True, "w")

    def test_a_call_failing_in_the_threads_run_is_reported_as_failed(self):
        # a call that fails in the threads run (its inputs ran alone first) is
        # reported with its status and message, not as outputs it lacks
        import threading
        import types
        cv, errors = _cli("check_verdict"), _cli("errors")

        class Inst:
            def __init__(self, *a, **kw):
                pass

            def run(self, inputs):
                if threading.current_thread() is threading.main_thread():
                    res = _Res([[b"y0"]])  # alone: fine
                    res.error = None
                else:
                    res = _Res(None)
                    res.error = errors.PyopError('execute of "Op"', "PYOP_EPYTHON",
                                                 "RuntimeError: busy")
                return res

            def destroy(self):
                pass
        case = types.SimpleNamespace(label="case 1", inputs=[], attrs={}, kind="given")
        mon = types.SimpleNamespace(activity=lambda *a: None)
        saved = cv.Instance
        cv.Instance = Inst
        try:
            got = cv._concurrency_problems(None, _info(inputs=()), case, True, mon,
                                           n_threads=2, rounds=2)
        finally:
            cv.Instance = saved
        self.assertEqual(got, ["case 1: run from 2 threads at once on one instance: thread 0 "
                               "failed: PYOP_EPYTHON: RuntimeError: busy; " + cv.SELF_HINT])

    def test_one_thread_hung_is_a_deadlock(self):
        # one of the threads of the concurrency run never returns (the others
        # finish): that is reported as a deadlock, not its missing results skipped
        import threading
        import types
        cv = _cli("check_verdict")
        release = threading.Event()
        lock = threading.Lock()
        calls = {"workers": 0, "destroyed": 0}

        class Inst:
            def __init__(self, *a, **kw):
                pass

            def run(self, inputs):
                if threading.current_thread() is not threading.main_thread():
                    with lock:
                        calls["workers"] += 1
                        first = calls["workers"] == 1
                    if first:
                        release.wait(60)  # this thread hangs until the test ends
                res = _Res([[b"y0"]])
                res.error = None
                return res

            def destroy(self):
                calls["destroyed"] += 1

        case = types.SimpleNamespace(label="case 1", inputs=[], attrs={}, kind="given")
        mon = types.SimpleNamespace(activity=lambda *a: None)
        old = (cv.Instance, cv.THREAD_TIMEOUT)
        cv.Instance, cv.THREAD_TIMEOUT = Inst, 2
        try:
            got = cv._concurrency_problems(None, _info(inputs=()), case, True, mon,
                                           n_threads=3, rounds=1)
        finally:
            release.set()
            cv.Instance, cv.THREAD_TIMEOUT = old
        self.assertEqual(got, ["case 1: run from 3 threads at once on one instance: did not "
                               "finish within 2 s (a deadlock?)"])
        self.assertEqual(calls["destroyed"], 1)

    def _verdict(self, **kw):
        v = _cli("check_verdict")._new_verdict()
        v.update(kw)
        return v

    def test_op_status(self):
        cv = _cli("check_verdict")
        info = dict(_info(), impl_key="pyop:op")
        self.assertEqual(cv.op_status(info, self._verdict(problems=["x"],
                                                          stages={"execute": 1})), "failed")
        self.assertEqual(cv.op_status(info, self._verdict(stages={"execute": 1})), "ok")
        self.assertEqual(cv.op_status(info, self._verdict(stages={"launch": 2})), "ok")
        v = self._verdict(stages={"infer_meta": 1})
        self.assertEqual(cv.op_status(dict(_info(), impl_key=None), v), "infer-only")
        self.assertEqual((v["inconclusive"], v["why"]), (None, None))
        v = self._verdict(stages={"infer_meta": 1})
        self.assertEqual(cv.op_status(info, v), "inconclusive")
        self.assertEqual(v["why"], "nothing ran")
        self.assertIn("capabilities: infer_meta, execute", v["inconclusive"])
        v = self._verdict(stages={"infer_meta": 2, "compile": 2})
        self.assertEqual(cv.op_status(info, v), "inconclusive")
        self.assertEqual(v["why"], "compile only")
        self.assertIn("only compile ran (2 cases)", v["inconclusive"])
        v = self._verdict()
        self.assertEqual(cv.op_status(dict(_info(), capabilities=[], proto_source=None), v),
                         "inconclusive")
        self.assertEqual(v["why"], "no implementation")
        self.assertIn("the prototype (the host's) has no infer_meta", v["inconclusive"])
        refused = {"case": "float32[2,3]", "reason": "ValueError: no", "file": "/p/op.py",
                   "line": 4}
        v = self._verdict(refusals=[refused])
        self.assertEqual(cv.op_status(info, v), "inconclusive")
        self.assertEqual(v["why"], "infer_meta refused every generated input")
        self.assertIn("(float32[2,3]: ValueError: no, /p/op.py:4)", v["inconclusive"])
        # a refusal beside a case that ran is not "refused every input"
        v = self._verdict(refusals=[refused], ran=["float16[2,3]"], stages={"infer_meta": 2})
        cv.op_status(info, v)
        self.assertEqual(v["why"], "nothing ran")
        v = self._verdict(npu=[("declare_launch_args", "float32[2,3]", "no NPU")])
        cv.op_status(info, v)
        self.assertEqual(v["why"], "declare_launch_args needs an NPU")

    def test_checked_in_host_order(self):
        cv = _cli("check_verdict")
        self.assertEqual(cv.checked({"execute": 1, "infer_meta": 1}), ["infer_meta", "execute"])
        self.assertEqual(cv.checked({"launch": 1, "compile": 1}),
                         ["compile", "declare_launch_args"])
        self.assertEqual(cv.checked({}), [])

    def test_refusal_only_of_generated_cases(self):
        cv, cc = _cli("check_verdict"), _cli("check_cases")
        err = _cli("errors").CliError("no", "PYOP_EPYTHON")
        err.origin = (("ValueError",), "/nowhere/op.py", 3, "ValueError: no")
        saved = cv.in_plugin_code
        cv.in_plugin_code = lambda f: f == "/nowhere/op.py"
        try:
            for kind, refused in (("generated", True), ("sweep", True), ("samples", False),
                                  ("given", False)):
                with self.subTest(kind=kind):
                    got = cv.refusal(err, cc.Case("c", [], {}, kind))
                    self.assertEqual(got is not None, refused)
            self.assertEqual(cv.refusal(err, cc.Case("c", [], {}, "sweep")),
                             {"reason": "ValueError: no", "file": "/nowhere/op.py", "line": 3})
            err.origin = (("KeyError", "LookupError"), "/nowhere/op.py", 3, "KeyError: k")
            self.assertIsNone(cv.refusal(err, cc.Case("c", [], {}, "generated")))
            err.origin = (("TypeError",), "/lib/numpy.py", 3, "TypeError: t")
            self.assertIsNone(cv.refusal(err, cc.Case("c", [], {}, "generated")))
            err.origin = None
            self.assertIsNone(cv.refusal(err, cc.Case("c", [], {}, "generated")))
        finally:
            cv.in_plugin_code = saved


class SampleRulesTest(unittest.TestCase):
    """A plugin's samples as check reads them (check_cases.py): a value's
    count held to its shape, at it and one off on each side; a dim that is
    no integer; the cases' labels and a dynamic input's list."""

    def test_values_held_to_the_shape(self):
        cc = _cli("check_cases")
        self.assertEqual(cc._sample_tensor(("float32", [2], [1.0, 2.0]), "s"), (0, [2], [1.0, 2.0]))
        self.assertEqual(cc._sample_tensor(("int32", [], [7]), "s")[1:], ([], [7]))
        self.assertEqual(cc._sample_tensor(("float32", [0, 3], []), "s")[1:], ([0, 3], []))
        for values, n in (([1.0], "1 value"), ([1.0, 2.0, 3.0], "3 values")):
            with self.assertRaisesRegex(ValueError, r"^s: %s for shape \[2\]$" % n):
                cc._sample_tensor(("float32", [2], values), "s")
        with self.assertRaisesRegex(ValueError, "s: unknown data type 'float99'"):
            cc._sample_tensor(("float99", [1], [1]), "s")
        for bad in (("float32", [1]), 3.0, None):
            with self.assertRaisesRegex(ValueError, "s: expected \\(dtype, shape, values\\) or a "
                                        "numpy array"):
                cc._sample_tensor(bad, "s")

    def test_dims(self):
        cc = _cli("check_cases")
        self.assertEqual(cc._sample_shape((2, 3), "s"), [2, 3])
        for dim in (True, 2.5, "2"):
            with self.assertRaisesRegex(ValueError, "s: dim %r is not an integer" % (dim,)):
                cc._sample_shape([1, dim], "s")
        with self.assertRaisesRegex(ValueError, "s: shape 4 is not a list of dims"):
            cc._sample_shape(4, "s")

    def test_numpy_samples(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("no numpy in this Python")
        cc = _cli("check_cases")
        got = cc._sample_tensor(np.arange(6, dtype=np.int32).reshape(2, 3), "s")
        self.assertEqual(got[1:], ([2, 3], [0, 1, 2, 3, 4, 5]))
        with self.assertRaisesRegex(ValueError, "s: numpy dtype complex64 has no pyop equivalent"):
            cc._sample_tensor(np.zeros(2, dtype=np.complex64), "s")

    def test_cases_and_labels(self):
        cc = _cli("check_cases")
        info = _info(inputs=(("xs", "dynamic"), ("b", "optional")),
                     attrs=({"name": "w", "type": "Tensor"}, {"name": "n", "type": "int"}))
        t = ("float32", [1], [1.0])
        cases = cc.sample_cases(info, lambda: [
            {"inputs": {"xs": [t, t, t]}, "label": "three"},
            {"inputs": {"xs": [t], "b": None}, "attrs": {"w": t, "n": 2}}], "ops.py:1")
        self.assertEqual([c.label for c in cases], ["three", "sample 1"])
        self.assertEqual([len(s) for s in cases[0].inputs], [3, 0])
        self.assertEqual([len(s) for s in cases[1].inputs], [1, 0])
        self.assertEqual(cases[1].attrs, {"w": (0, [1], [1.0]), "n": 2})
        self.assertEqual({c.kind for c in cases}, {"samples"})
        for bad, text in (([], "must be a non-empty list of cases"),
                          ((), "must be a non-empty list of cases"),
                          ({"inputs": {}}, "must be a non-empty list of cases"),
                          ([{"inputs": {"xs": [t]}}, ["xs"]],
                           r"sample 1 of Op \(ops.py:1\): a case is a dict"),
                          ([{"inputs": {"xs": [t]}, "attrs": {"m": 1}}],
                           r"sample 0 of Op \(ops.py:1\): 'm' is not an attribute")):
            with self.subTest(samples=bad):
                with self.assertRaisesRegex(ValueError, text):
                    cc.sample_cases(info, lambda: bad, "ops.py:1")

    def test_generated_without_sweep(self):
        cc = _cli("check_cases")
        info = _info(inputs=(("x", "required"), ("b", "optional")),
                     attrs=({"name": "n", "type": "int", "required": False, "default": 1},))
        cases = cc.generated_cases(info, sweep=False)
        self.assertEqual([c.kind for c in cases], ["generated", "generated"])
        self.assertTrue(cases[1].short.endswith("(optional inputs absent)"))
        swept = cc.generated_cases(info)
        self.assertGreater(len(swept), 2)
        self.assertEqual(swept[-1].attrs, {"n": 2})  # the attribute case comes last
        # no inputs: no data type or shape to sweep, the attribute case only
        bare = cc.generated_cases(_info(inputs=(), attrs=info["attrs"]))
        self.assertEqual([c.kind for c in bare], ["generated", "sweep"])
        self.assertEqual(bare[1].attrs, {"n": 2})


class CommandOutputTest(unittest.TestCase):
    """output.command_output: while active, the result goes to stdout and
    anything else printed to stderr; after it, stdout is stdout again unless
    a thread is still running (it could print into the result)."""

    def _run(self, code, env=None):
        import subprocess
        tools = _need("PYOP_TEST_TOOLS")
        script = ("import sys, threading; sys.path.insert(0, %r)\n"
                  "from pyop_cli import output\n" % tools) + code
        return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=60, env=env)

    def test_result_alone_on_stdout(self):
        p = self._run("with output.command_output():\n"
                      "    output.say('result')\n"
                      "    print('noise')\n"
                      "print('after')\n"
                      "output.release()\n")  # inactive: nothing to do
        self.assertEqual((p.returncode, p.stdout), (0, "result\nafter\n"), p.stderr)
        self.assertEqual(p.stderr, "noise\n")

    def test_a_running_thread_keeps_stdout_on_stderr(self):
        p = self._run("stop = threading.Event()\n"
                      "t = threading.Thread(target=stop.wait)\n"
                      "with output.command_output():\n"
                      "    t.start()\n"
                      "    output.say('result')\n"
                      "print('after')\n"
                      "stop.set(); t.join()\n")
        self.assertEqual((p.returncode, p.stdout), (0, "result\n"), p.stderr)
        self.assertEqual(p.stderr, "after\n")

    def test_ending_at_once_flushes_first(self):
        # host.end_now (check's worker, a plugin's thread left running): the
        # process ends at once, with what it printed, unended lines too, on
        # stdout and stderr (pipes: Python buffers them)
        # buffered as the command's are (not PYTHONUNBUFFERED, which a test's
        # environment may set)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
        p = self._run("from pyop_cli import host\n"
                      "sys.stdout.write('out, no newline')\n"
                      "sys.stderr.write('err, no newline')\n"
                      "host.end_now(3)\n", env)
        self.assertEqual((p.returncode, p.stdout, p.stderr),
                         (3, "out, no newline", "err, no newline"))
        p = self._run("from pyop_cli import host\n"
                      "stop = threading.Event()\n"
                      "threading.Thread(target=stop.wait).start()\n"
                      "with output.command_output():\n"
                      "    output.write('result, no newline')\n"
                      "    print('plugin, no newline', end='')\n"
                      "    host.end_now(4)\n", env)
        self.assertEqual((p.returncode, p.stdout, p.stderr),
                         (4, "result, no newline", "plugin, no newline"))

    def test_result_fd_and_discard(self):
        p = self._run("import os\n"
                      "with output.command_output():\n"
                      "    fd = output.result_fd()\n"
                      "    os.write(fd, b'raw\\n')\n"
                      "    print('noise', flush=True)\n"
                      "    output.discard()\n"  # the reader went away: the rest is dropped
                      "    output.say('dropped')\n"
                      "print('after')\n"  # stdout is the reader's too: dropped
                      "sys.stderr.write('%s\\n' % (output.result_fd() == 1))\n")
        self.assertEqual((p.returncode, p.stdout), (0, "raw\n"), p.stderr)
        self.assertEqual(p.stderr, "noise\nTrue\n")

    def test_result_before_a_worker_comes_first(self):
        # result text not yet ended by a newline (line buffering keeps it)
        # when a worker is started with the result as its stdout
        # (supervise.spawn): it comes before what the worker says, not after
        # it at the end of the command (batch 22's survivor
        # cli.b22.output.result_fd_unflushed)
        p = self._run("import os\n"
                      "from pyop_cli import supervise\n"
                      "with output.command_output():\n"
                      "    output.write('mine, ')\n"
                      "    proc, rfd = supervise.spawn(lambda fd: [sys.executable, '-c', "
                      "'print(\"the worker\\'s\")'])\n"
                      "    proc.wait(); os.close(rfd)\n"
                      "    output.say('mine again')\n")
        self.assertEqual((p.returncode, p.stdout), (0, "mine, the worker's\nmine again\n"),
                         p.stderr)

    def test_release_early(self):
        p = self._run("with output.command_output():\n"
                      "    output.say('result')\n"
                      "    output.release()\n"
                      "    print('mine')\n")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "result\nmine\n", ""))



class SupervisorRulesTest(unittest.TestCase):
    """check's supervisor (check_supervise.py, supervise.py): how a worker
    ended, said; what a worker that died in each place costs; the number of
    workers one check starts at most, at it."""

    def _sup(self, phase="each", lanes=0):
        import argparse
        cs = _cli("check_supervise")
        return cs.Supervisor(argparse.Namespace(path="/lib/libpyop.so"),
                             argparse.Namespace(lanes=lanes, proto=None, input=None, attr=None),
                             {"paths": ["/ops"], "done": [], "done_plugins": [], "phase": phase},
                             2.5)

    def test_how_it_ended(self):
        sv = _cli("supervise")
        self.assertEqual(sv.how_it_ended(None, 2.5, "L", "P"), "did not finish within 2.5 s (L): "
                                                              "a hang?")
        self.assertEqual(sv.how_it_ended(-9, 1, "L", "P"), "ended P: killed by SIGKILL")
        self.assertEqual(sv.how_it_ended(-1000, 1, "L", "P"), "ended P: killed by signal 1000")
        for status in (0, 1, 3):
            self.assertTrue(sv.how_it_ended(status, 1, "L", "P").startswith(
                "ended P: it exited with status %d " % status))

    def test_lanes_reach_the_worker(self):
        argv = self._sup(lanes=3)._argv(5)
        self.assertEqual(argv[argv.index("--lanes") + 1], "3")
        self.assertLess(argv.index("--lanes"), argv.index("check"))
        self.assertNotIn("--lanes", self._sup()._argv(5))

    def test_events(self):
        sup = self._sup()
        self.assertFalse(sup._event({"e": "threads", "names": ["t1"]}))
        self.assertFalse(sup._event({"e": "threads", "names": ["t1", "t2"]}))
        self.assertFalse(sup._event({"e": "warning", "text": "careful"}))
        self.assertIn("left a thread running (t1): the check did not wait for it,", sup.warnings[0])
        self.assertIn("left 2 threads running (t1, t2): the check did not wait for them,",
                      sup.warnings[1])
        self.assertEqual(sup.warnings[2], "careful")
        self.assertFalse(sup._event({"e": "plugin_done", "plugin": "/ops/a.py"}))
        self.assertEqual(sup.job["done_plugins"], ["/ops/a.py"])
        self.assertFalse(sup._event({"e": "interrupted", "text": "Ctrl-C"}))
        self.assertEqual(sup.interrupted, "Ctrl-C")
        self.assertTrue(sup._event({"e": "done"}))

    def test_a_death_before_any_event_ends_the_check(self):
        sup = self._sup()
        self.assertTrue(sup._died(-9))
        self.assertEqual(sup.fatal["error"]["status"], "PYOP_EINTERNAL")
        self.assertIn("its worker process killed by SIGKILL before it reported anything",
                      sup.fatal["error"]["message"])

    def test_a_death_outside_an_op(self):
        cw = _cli("check_worker")
        sup = self._sup()
        sup.current = {"plugin": "/ops/a.py", "op": None, "between": True}
        self.assertFalse(sup._died(3))
        self.assertIn("between the checks of two of its ops", sup.broken[-1]["problem"])
        # unloading: the plugin is done when each is loaded alone; the check
        # cannot go on when they were loaded together
        sup.current = {"plugin": "/ops/a.py", "op": None, "stage": cw.UNLOADING}
        self.assertFalse(sup._died(3))
        self.assertEqual(sup.job["done_plugins"], ["/ops/a.py"])
        sup = self._sup(phase="together")
        sup.current = {"plugin": "/ops/a.py", "op": None, "stage": cw.UNLOADING}
        self.assertTrue(sup._died(3))
        self.assertEqual(sup.job["done_plugins"], [])
        # importing: together, the load fails and each plugin is imported alone next
        sup = self._sup(phase="together")
        sup.current = {"plugin": "/ops", "op": None, "stage": "import"}
        self.assertFalse(sup._died(3))
        self.assertEqual((sup.load_error["status"], sup.job["phase"]), ("PYOP_EPLUGIN", "each"))
        self.assertIn("the plugins, imported together (/ops), ended", sup.load_error["message"])
        sup = self._sup()
        sup.current = {"plugin": "/ops/b.py", "op": None, "stage": "import"}
        self.assertFalse(sup._died(None))
        self.assertEqual(sup.job["done_plugins"], ["/ops/b.py"])
        self.assertIn("imported alone, the plugin did not finish within 2.5 s",
                      sup.broken[-1]["problem"])

    def test_workers_at_most(self):
        cs = _cli("check_supervise")
        for last_ok, broken in ((cs.MAX_WORKERS, 0), (cs.MAX_WORKERS + 1, 1)):
            with self.subTest(done_by_worker=last_ok):
                sup = self._sup()
                calls = []
                sup._one_worker = lambda: calls.append(1) or len(calls) == last_ok
                sup.run()
                self.assertEqual(len(calls), cs.MAX_WORKERS)
                self.assertEqual(len(sup.broken), broken)
        self.assertEqual(sup.broken[0]["problem"], "%d processes running the check died; the ops "
                         "not reported above were not checked" % cs.MAX_WORKERS)

    def test_no_new_worker_after_an_interrupt_or_a_fatal_error(self):
        # a worker that said it was interrupted (Ctrl-C) or failed fatally
        # ends the check: no new worker goes on, the op it was in is not
        # blamed for a death
        cs = _cli("check_supervise")
        begin = '{"e": "op_begin", "plugin": "/ops/a.py", "op": "Op"}\n'
        fatal = ('{"e": "fatal", "exit": 1, "error": {"status": "PYOP_EINTERNAL", '
                 '"message": "it broke", "op": null}}\n')
        for last, said in (('{"e": "interrupted", "text": "Ctrl-C"}\n', ("Ctrl-C", None)),
                           (fatal, (None, 1))):
            with self.subTest(last=last):
                sup, spawned = self._sup(), []

                def spawn(argv_of):
                    rfd, wfd = os.pipe()
                    spawned.append(argv_of(wfd))
                    os.write(wfd, (begin + last).encode())
                    os.close(wfd)  # the stream ends without "done"
                    return _Ended(), rfd
                saved, cs.spawn = cs.spawn, spawn
                try:
                    sup.run()
                finally:
                    cs.spawn = saved
                self.assertEqual(len(spawned), 1)
                self.assertEqual((sup.ops, sup.broken), ([], []))
                self.assertEqual((sup.interrupted, sup.fatal and sup.fatal["exit"]), said)


class _T:
    """An output tensor as res.produced holds it."""

    def __init__(self, dtype, shape):
        self.dtype, self.shape, self.ndim = dtype, list(shape) + [0] * 3, len(shape)


class ReferenceRulesTest(unittest.TestCase):
    """check against a plugin's reference (check_plugin.py): what the
    reference is given, how many outputs it must return, the tolerances
    each in its place."""

    def setUp(self):
        try:
            import numpy
        except ImportError:
            self.skipTest("no numpy in this Python")
        self.np = numpy

    def _problem(self, info, case, produced, fn, tol=(1e-5, 1e-8)):
        cp = _cli("check_plugin")

        class R:
            pass
        res = R()
        res.produced = produced
        return cp.reference_problem(info, case, res, (fn, tol))

    def test_arguments_and_outputs(self):
        cc = _cli("check_cases")
        info = _info(inputs=(("x", "required"), ("b", "optional"), ("xs", "dynamic")),
                     attrs=({"name": "k", "type": "int", "required": False, "default": 2},
                            {"name": "m", "type": "int", "required": False, "default": 5},
                            {"name": "w", "type": "Tensor", "required": True, "default": None}),
                     outputs=(("y", "required"),))
        case = cc.Case("c", [[(0, [2], [1.0, 2.0])], [], [(0, [1], [3.0]), (0, [1], [4.0])]],
                       {"m": 7, "w": (0, [1], [0.5])}, "generated")
        seen = []

        def ref(x, b, xs, **attrs):
            seen.append((x.tolist(), b, [a.tolist() for a in xs], attrs))
            return x * 2
        self.assertIsNone(self._problem(info, case, [[(_T(0, [2]), [2.0, 4.0])]], ref))
        x, b, xs, attrs = seen[0]
        self.assertEqual((x, b, xs), ([1.0, 2.0], None, [[3.0], [4.0]]))
        self.assertEqual((attrs["k"], attrs["m"], attrs["w"].tolist()), (2, 7, [0.5]))
        text = self._problem(info, case, [[(_T(0, [2]), [2.0, 4.5])]], ref)
        self.assertTrue(text.startswith("output y differs from the reference at element 1"), text)

        def broken(*a, **k):
            raise KeyError("k")
        self.assertEqual(self._problem(info, case, [[(_T(0, [2]), [2.0, 4.0])]], broken),
                         "the reference raised KeyError: 'k'")
        bf16 = cc.Case("c", [[(_cli("binding").DTYPES.index("bfloat16"), [2], [1.0, 2.0])], [],
                             []], {"w": (0, [1], [0.5])}, "generated")
        self.assertIsNone(self._problem(info, bf16, [[(_T(0, [2]), [9.0, 9.0])]], ref))

    def test_output_counts(self):
        cc, np = _cli("check_cases"), self.np
        info = _info(outputs=(("y", "required"), ("zs", "dynamic")))
        case = cc.Case("c", [[(0, [1], [1.0])]], {}, "generated")
        one = [(_T(0, [1]), [1.0])]
        two = [(_T(0, [1]), [1.0]), (_T(0, [1]), [2.0])]
        arr = np.array([1.0])
        self.assertIsNone(self._problem(info, case, [one, two], lambda x: (arr, [arr, arr * 2])))
        for got in (arr, (arr,), (arr, [arr], arr)):
            self.assertEqual(self._problem(info, case, [one, two], lambda x: got),
                             "the reference returned %r, not 2 outputs" % type(got).__name__)
        self.assertEqual(self._problem(info, case, [one, two], lambda x: (arr, [arr])),
                         "output zs: 2 tensors, the reference 1")
        self.assertEqual(self._problem(info, case, [one, one], lambda x: (arr, [arr, arr])),
                         "output zs: 1 tensor, the reference 2")
        text = self._problem(info, case, [one, two], lambda x: (arr, [arr, arr]))
        self.assertTrue(text.startswith("output zs[1] differs from the reference at element 0"),
                        text)
        # The first tensor of a dynamic output has its index too (batch 26:
        # it was named as the whole output "zs").
        text = self._problem(info, case, [one, two], lambda x: (arr, [arr + 1, arr * 2]))
        self.assertTrue(text.startswith("output zs[0] differs from the reference at element 0"),
                        text)

    def test_one_output_returned_as_a_list(self):
        # the op's only output: what the reference returns is that output,
        # even a list or tuple (a dynamic output's tensors, or a plain list
        # of numbers for a required one), never taken for the list of outputs
        cc, np = _cli("check_cases"), self.np
        case = cc.Case("c", [[(0, [2], [1.0, 2.0])]], {}, "generated")
        a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
        two = [(_T(0, [2]), [1.0, 2.0]), (_T(0, [2]), [3.0, 4.0])]
        dyn = _info(outputs=(("zs", "dynamic"),))
        for ret in ([a, b], (a, b)):
            with self.subTest(ret=type(ret).__name__):
                self.assertIsNone(self._problem(dyn, case, [two], lambda x: ret))
        text = self._problem(dyn, case, [two], lambda x: [a, b + 1])
        self.assertTrue(text.startswith("output zs[1] differs from the reference at element 0"),
                        text)
        self.assertEqual(self._problem(dyn, case, [two], lambda x: [a]),
                         "output zs: 2 tensors, the reference 1")
        req = _info(outputs=(("y", "required"),))
        self.assertIsNone(self._problem(req, case, [[two[0]]], lambda x: [1.0, 2.0]))
        text = self._problem(req, case, [[two[0]]], lambda x: [1.0, 2.5])
        self.assertTrue(text.startswith("output y differs from the reference at element 1"), text)

    def test_tolerances_each_in_its_place(self):
        cp, np = _cli("check_plugin"), self.np
        got = np.array([0.4, 105.0])
        # atol alone covers 0.4 against 0; rtol alone covers 105 against 100
        self.assertIsNone(cp._compare(np, got[:1], np.array([0.0]), "y", 0.0, 0.5))
        self.assertIsNotNone(cp._compare(np, got[:1], np.array([0.0]), "y", 0.5, 0.0))
        self.assertIsNone(cp._compare(np, got[1:], np.array([100.0]), "y", 0.1, 0.0))
        self.assertIsNotNone(cp._compare(np, got[1:], np.array([100.0]), "y", 0.0, 0.1))
        text = cp._compare(np, np.array([1.0, 2.0]), np.array([1.0, 3.0]), "y", 0.0, 0.25)
        self.assertEqual(text, "y differs from the reference at element 1: 2.0, the reference "
                               "3.0 (rtol=0, atol=0.25)")

    def test_attr_watch_regions(self):
        cp = _cli("check_plugin")
        import ctypes
        buf = ctypes.create_string_buffer(b"abcd", 4)

        class View:
            pass
        v = View()
        v.data_ptr, v.nbytes = ctypes.addressof(buf), 4
        self.assertEqual(cp.AttrWatch._region("w", v), ("w", v.data_ptr, 4, b"abcd"))
        v.nbytes = 1
        self.assertEqual(cp.AttrWatch._region("w", v)[2:], (1, b"a"))
        for size in (0, -1, None):
            v.nbytes = size
            self.assertIsNone(cp.AttrWatch._region("w", v))
        v.nbytes, v.data_ptr = 4, 0
        self.assertIsNone(cp.AttrWatch._region("w", v))
        self.assertFalse(cp.in_plugin_code(""))
        self.assertFalse(cp.in_plugin_code(None))



class DoctorRulesTest(unittest.TestCase):
    """doctor's readings (doctor.py): libpyop's report lines, the plugin a
    source belongs to, the memory a lane costs, the libpython start_python
    would load."""

    def test_report_items(self):
        doctor = _cli("doctor")
        names = doctor.PATH_VERDICTS
        self.assertEqual(doctor._item("  /p/a.py: python-file", names),
                         ("/p/a.py", "python-file", None))
        self.assertEqual(doctor._item("  /p: no-python: nothing to load", names),
                         ("/p", "no-python", "nothing to load"))
        self.assertEqual(doctor._item("  a: relative", names), ("a", "relative", None))
        # the name right after the indent names no path: no verdict there
        self.assertEqual(doctor._item("  : relative", names), (": relative", "unknown", None))
        self.assertEqual(doctor._item("  /p: relatively", names), ("/p: relatively", "unknown",
                                                                   None))
        # the leftmost name that fits, whatever the order of the names
        self.assertEqual(doctor._item("  /p: not-python: missing-dir", names),
                         ("/p", "not-python", "missing-dir"))
        self.assertEqual(doctor._item("  /a: loaded", doctor.CAND_STATUSES), ("/a", "loaded", None))

    def test_plugin_owner(self):
        doctor = _cli("doctor")
        pkg, mod = {"plugin": "/ops/pkg"}, {"plugin": "/ops/a.py"}
        plugins = [pkg, mod]
        self.assertIs(doctor._plugin_owner("/ops/pkg/sub/m.py:3", plugins), pkg)
        self.assertIs(doctor._plugin_owner("/ops/a.py:12", plugins), mod)
        self.assertIsNone(doctor._plugin_owner("/ops/pkg2/m.py:3", plugins))  # not below pkg
        self.assertIsNone(doctor._plugin_owner(None, plugins))

    def test_lane_memory(self):
        doctor = _cli("doctor")
        ok, lanes_op = {"status": "ok"}, [{"lanes": 1}, {"lanes": 0}]
        saved = doctor._rss
        try:
            doctor._rss = lambda: 5000
            self.assertEqual(doctor._lane_memory(1000, None, 2, ok, lanes_op),
                             {"bytes_per_lane": 2000, "why": None})
            self.assertEqual(doctor._lane_memory(1000, None, 3, ok, lanes_op)["bytes_per_lane"],
                             1333)
            self.assertEqual(doctor._lane_memory(9000, None, 2, ok, lanes_op)["bytes_per_lane"], 0)
            self.assertEqual(doctor._lane_memory(1000, None, 2, {"status": "failed"}, lanes_op),
                             {"bytes_per_lane": None, "why": "the load with lanes failed"})
            self.assertEqual(doctor._lane_memory(1000, None, 2, ok, [{"lanes": 0}]),
                             {"bytes_per_lane": None, "why": "no op runs in lanes"})
            self.assertEqual(doctor._lane_memory(None, "mine", 2, ok, lanes_op),
                             {"bytes_per_lane": None, "why": "mine"})
            doctor._rss = lambda: None
            self.assertEqual(doctor._lane_memory(1000, None, 2, ok, lanes_op)["why"],
                             "this system does not report resident memory")
        finally:
            doctor._rss = saved

    def test_start_python_report(self):
        doctor, config = _cli("doctor"), _cli("config")
        lib = _tree(self, ["libpython3.12.so"])
        root = _tree(self, ["none/", "empty/", "gone/", "here/", "nomanifest/"])
        for name, libpython in (("empty", ""), ("gone", "/nowhere/libpython.so"),
                                ("here", os.path.join(lib, "libpython3.12.so"))):
            with open(os.path.join(root, name, "manifest.txt"), "w") as f:
                f.write("libpython=%s\n" % libpython)
        saved = config.BUILD_ARTIFACT, config.BUILD_ARTIFACTS
        try:
            config.BUILD_ARTIFACT, config.BUILD_ARTIFACTS = None, ""
            self.assertTrue(doctor.start_python_report(root)["verdict"].startswith("unknown"))
            for name, verdict in (("empty", "none recorded"), ("gone", "missing: /nowhere/"),
                                  ("here", "present"), ("nomanifest", "no manifest: ")):
                with self.subTest(artifact=name):
                    config.BUILD_ARTIFACT = name
                    rep = doctor.start_python_report(root)
                    self.assertTrue(rep["verdict"].startswith(verdict), rep)
                    self.assertEqual((rep["artifact"], rep["default"]), (name, name))
            self.assertTrue(doctor.start_python_report(None)["verdict"].startswith("unknown"))
        finally:
            config.BUILD_ARTIFACT, config.BUILD_ARTIFACTS = saved


class BenchRulesTest(unittest.TestCase):
    """bench's choices before it times anything (bench.py): the inputs of
    --size, what it says it used, the ops it refuses to time."""

    def _args(self, **kw):
        import argparse
        a = dict(op="Op", input=None, attr=None, size=16)
        a.update(kw)
        return argparse.Namespace(**a)

    def test_size_inputs(self):
        bench, errors = _cli("bench"), _cli("errors")
        info = _info(inputs=(("x", "required"), ("b", "optional"), ("xs", "dynamic")))
        got = bench._bench_inputs(info, self._args(size=3))
        self.assertEqual([len(slot) for slot in got], [1, 0, 1])
        self.assertEqual([(d, s, len(v)) for d, s, v in (got[0][0], got[2][0])],
                         [(0, [3], 3), (0, [3], 3)])
        self.assertEqual(bench._bench_inputs(info, self._args(size=0))[0][0][1:], ([0], []))
        given = bench._bench_inputs(info, self._args(input=["x=float32[1]:4"]))
        self.assertEqual(given[0], [(0, [1], [4.0])])
        values = _cli("values")
        with self.assertRaises(errors.UsageError) as cm:
            bench._bench_inputs(info, self._args(size=values.INT64_MAX))
        self.assertEqual((cm.exception.exit_code, cm.exception.op), (2, "Op"))
        self.assertIn("--size %d" % values.INT64_MAX, cm.exception.message)

    def test_what_it_used(self):
        bench = _cli("bench")
        slot = [(0, [16], []), (0, [2, 3], [])]
        self.assertEqual(bench._input_text({"name": "x", "kind": "required"}, 0, slot),
                         "x=float32[16]")
        self.assertEqual(bench._input_text({"name": "xs", "kind": "dynamic"}, 1, slot),
                         "xs[1]=float32[2,3]")
        self.assertEqual(bench.attrs_text({"n": 3, "w": (0, [2], [1.0, 2.0]), "p": (1, 2)}),
                         {"n": 3, "w": "float32[2]", "p": (1, 2)})

    def test_refused_ops(self):
        import argparse
        bench, errors = _cli("bench"), _cli("errors")

        def lib_of(info):
            return argparse.Namespace(op_info=lambda op: info)
        nothing = dict(_info(), capabilities=["infer_meta", "compile"])
        with self.assertRaisesRegex(errors.CliError, 'op "Op" has no execute implementation nor '
                                    'kernel launch to time') as cm:
            bench._bench(lib_of(nothing), self._args())
        self.assertEqual((cm.exception.status, cm.exception.exit_code), ("PYOP_EUNSUPPORTED", 1))
        launch_dynamic = dict(_info(outputs=(("ys", "dynamic"),)),
                              capabilities=["infer_meta", "declare_launch_args"])
        with self.assertRaisesRegex(errors.CliError, 'op "Op": a launch-only op with a dynamic '
                                    'output cannot be timed') as cm:
            bench._bench(lib_of(launch_dynamic), self._args())
        self.assertEqual(cm.exception.status, "PYOP_EUNSUPPORTED")
        # one dynamic output among required ones is a dynamic output too
        launch_mixed = dict(_info(outputs=(("y", "required"), ("ys", "dynamic"),
                                           ("z", "required"))),
                            capabilities=["infer_meta", "declare_launch_args"])
        with self.assertRaisesRegex(errors.CliError, 'op "Op": a launch-only op with a dynamic '
                                    'output cannot be timed') as cm:
            bench._bench(lib_of(launch_mixed), self._args())
        self.assertEqual((cm.exception.status, cm.exception.op), ("PYOP_EUNSUPPORTED", "Op"))


class BenchOutputRoomRulesTest(unittest.TestCase):
    """The timed call of an op with a dynamic output (bench._timed_call,
    libpyop stood in for as pyop.h says it behaves): every output's list,
    the last one too, has room for 256 tensors before infer_meta is asked,
    so the op's infer_meta runs once; an op without infer_meta (a host's
    prototype, --proto) gets that room in its timed execute too, which
    fails on a list with too little."""

    EINVAL = -3

    def _lib(self, produced, calls):
        """A libpyop whose op gives produced[k] tensors of output k, in
        infer_meta_list (a short list: every count set, the call fails) and
        in execute_list (a tensor past a list's capacity fails the call)."""
        import argparse
        import ctypes
        errors = _cli("errors")

        def infer_meta_list(op, slots, n_in, lists, n_out):
            calls.append(("infer_meta", [lists[k].capacity for k in range(n_out)]))
            for k in range(n_out):
                lists[k].count = produced[k]
            if any(produced[k] > lists[k].capacity for k in range(n_out)):
                return self.EINVAL
            for k in range(n_out):
                for j in range(produced[k]):
                    t = lists[k].items[j]
                    t.dtype, t.ndim, t.shape[0], t.nbytes = 0, 1, 2, 8
            return 0

        def execute_list(op, slots, n_in, lists, n_out, ctx_p):
            calls.append(("execute", [lists[k].capacity for k in range(n_out)]))
            ctx = ctx_p._obj
            for k in range(n_out):
                for j in range(produced[k]):
                    if j >= lists[k].capacity:
                        return self.EINVAL
                    t = lists[k].items[j]
                    t.dtype, t.ndim, t.shape[0], t.nbytes = 0, 1, 2, 8
                    if ctx.alloc_output(None, k, ctypes.pointer(t)):
                        return self.EINVAL
                lists[k].count = produced[k]
            return 0

        def check(what, rc):
            if rc:
                raise errors.PyopError(what, "PYOP_EINVAL", "failed (%d)" % rc)
        return argparse.Namespace(check=check, c=argparse.Namespace(
            pyop_op_infer_meta_list=infer_meta_list, pyop_op_execute_list=execute_list))

    def _timed(self, outputs, capabilities, produced):
        bench, b = _cli("bench"), _cli("binding")
        info = dict(_info(outputs=outputs), capabilities=capabilities)
        calls = []
        lib = self._lib(produced, calls)
        inputs = [[(0, [2], [1.0, 2.0])]]
        ex, call_args, bufs = bench._timed_call(lib, info, "op", inputs, False, True)
        self.assertIs(ex, lib.c.pyop_op_execute_list)
        rc = ex(*call_args)
        return rc, calls, call_args[5]._obj.flags & b.EXEC_EXPECT_OUTPUTS, bufs

    def test_without_infer_meta_the_last_dynamic_output_has_room(self):
        rc, calls, expect, _ = self._timed((("y", "required"), ("ys", "dynamic")),
                                           ["execute"], [1, 3])
        self.assertEqual((rc, calls, expect), (0, [("execute", [256, 256])], 0))
        # a dynamic output first, a required one last: the last has room too
        rc, calls, _, _ = self._timed((("ys", "dynamic"), ("y", "required")),
                                      ["execute"], [2, 1])
        self.assertEqual((rc, calls), (0, [("execute", [256, 256])]))

    def test_infer_meta_asked_once_with_room_for_every_output(self):
        rc, calls, expect, _ = self._timed((("y", "required"), ("ys", "dynamic")),
                                           ["infer_meta", "execute"], [1, 3])
        self.assertEqual((rc, expect), (0, 1))
        self.assertEqual(calls, [("infer_meta", [256, 256]), ("execute", [256, 256])])



class ValueTextRulesTest(unittest.TestCase):
    """Values as the command reads them (values.py): --attr text of each
    type, --input text, a plugin's attribute values, int64 at both ends and
    one past."""

    def test_attr_text(self):
        values, errors = _cli("values"), _cli("errors")
        p = values.parse_attr_text
        self.assertEqual(p("[1, 2]", "list[int]"), [1, 2])
        self.assertEqual(p("1,,2,", "list[int]"), [1, 2])
        self.assertEqual(p("[[1],[2,3],[]]", "list[list[int]]"), [[1], [2, 3], []])
        self.assertEqual(p("int8,float32", "list[DataType]"), ["int8", "float32"])
        self.assertEqual([p(t, "bool") for t in ("on", "YES", "1", "off", "no", "0")],
                         [True, True, True, False, False, False])
        self.assertEqual(p(str(values.INT64_MIN), "int"), values.INT64_MIN)
        self.assertEqual(p(str(values.INT64_MAX), "int"), values.INT64_MAX)
        self.assertEqual(p("float32[2]", "Tensor", "w"), (0, [2], [0.0, 0.5]))
        over, under = values.INT64_MAX + 1, values.INT64_MIN - 1
        for text, t, why in (
                ("1.5", "int", "is an int, and '1.5' is not one (an integer such as 1"),
                (str(over), "int", "(%d is outside int64)" % over),
                (str(under), "int", "(%d is outside int64)" % under),
                ("[[1.5]]", "list[list[int]]", "is a list[list[int]]"),
                ("[1]", "list[list[int]]", "is a list[list[int]]"),
                ("{}", "list[list[int]]", "is a list[list[int]]"),
                ("[[%d]]" % (values.INT64_MAX + 1), "list[list[int]]", "outside int64"),
                ("int9", "DataType", "is a DataType, and 'int9' is not one (a data type"),
                ("maybe", "bool", "is a bool, and 'maybe' is not one (true or false)"),
                ("x", "float", "is a float, and 'x' is not one (a number such as 0.5)")):
            with self.subTest(text=text, type=t):
                with self.assertRaises(errors.UsageError) as cm:
                    p(text, t, "n", "Op")
                self.assertIn('--attr n=%s: attribute "n" of "Op" ' % text, cm.exception.message)
                self.assertIn(why, cm.exception.message)
                self.assertEqual((cm.exception.op, cm.exception.exit_code), ("Op", 2))
        with self.assertRaises(errors.UsageError) as cm:
            p("x", "int", "n")
        self.assertIn('attribute "n" is an int', cm.exception.message)  # no op named

    def test_input_text(self):
        values, errors = _cli("values"), _cli("errors")
        int32 = _cli("binding").DTYPES.index("int32")
        self.assertEqual(values.parse_input("x=int32[2,1]:3, 4"), ("x", int32, [2, 1], [3, 4]))
        self.assertEqual(values.parse_input("x=float32[]"), ("x", 0, [], None))
        for text, why in (("float32[2]", "expected NAME=DTYPE[SHAPE]:VALUES"),
                          ("x=float32", "expected DTYPE[SHAPE]"),
                          ("x=float32[2", "expected DTYPE[SHAPE]"),
                          ("x=float99[2]", "unknown data type 'float99'"),
                          ("x=float32[a]", "the shape must be integers"),
                          ("x=float32[2]1,2", "expected ':' before the values"),
                          ("x=float32[-2]", "--input x=float32[-2]")):
            with self.subTest(text=text):
                with self.assertRaises(errors.UsageError) as cm:
                    values.parse_input(text)
                self.assertIn(why, cm.exception.message)
                self.assertEqual(cm.exception.exit_code, 2)

    def test_plugin_attr_values(self):
        values = _cli("values")
        v = values.plugin_attr_value
        self.assertEqual(v("s", "str"), "s")
        self.assertEqual(v("int8", "DataType"), "int8")

        class Named:
            name = "float16"
        self.assertEqual(v(Named(), "DataType"), "float16")
        self.assertEqual(v([Named(), "int8"], "list[DataType]"), ["float16", "int8"])
        self.assertEqual(v((1, 2), "list[int]"), [1, 2])
        self.assertEqual(v([[1], (2, 3)], "list[list[int]]"), [[1], [2, 3]])
        self.assertEqual(v(values.INT64_MIN, "int"), values.INT64_MIN)
        self.assertEqual(v(values.INT64_MAX, "int"), values.INT64_MAX)
        self.assertEqual(v(2, "float"), 2.0)
        for value, t, why in ((3, "str", "3 is not a str"),
                              ("int9", "DataType", "'int9' is not a data type"),
                              (1, "list[int]", "1 is not a list[int]"),
                              ([1], "list[list[int]]", "[1] is not a list of lists of int"),
                              ([[True]], "list[list[int]]", "True is not an int"),
                              (values.INT64_MAX + 1, "int", "outside int64"),
                              (values.INT64_MIN - 1, "int", "outside int64"),
                              (True, "int", "True is not an int"),
                              (True, "float", "True is not a number"),
                              (1, "bool", "1 is not a bool"),
                              (1, "complex", "attribute type complex")):
            with self.subTest(value=value, type=t):
                with self.assertRaisesRegex(ValueError, __import__("re").escape(why)):
                    v(value, t)

    def test_make_attrs_names_the_op(self):
        values, errors = _cli("values"), _cli("errors")
        _, n = values.make_attrs(_info(attrs=({"name": "n", "type": "int"},)), {"n": 2}, [])
        self.assertEqual(n, 1)
        with self.assertRaisesRegex(errors.UsageError, 'op "Op" has no attribute "m" \\(it has: '
                                    'none\\)') as cm:
            values.make_attrs(_info(), {"m": 1}, [])
        self.assertEqual(cm.exception.op, "Op")


class ProtoReadRulesTest(unittest.TestCase):
    """A --proto file's own failures (proto._read): which is bad usage,
    which a bad descriptor, and the line of the file each names."""

    def _reader(self, exc):
        mod = type(sys)("host_proto")

        class ReadError(Exception):
            def __init__(self, text, line=None):
                super().__init__(text)
                self.line = line
        mod.ReadError = ReadError

        def read(path):
            raise exc(ReadError) if callable(exc) and not isinstance(exc, type) else exc
        mod.read = read
        return mod

    def _fails(self, exc):
        proto, errors = _cli("proto"), _cli("errors")
        with self.assertRaises(errors.CliError) as cm:
            proto._read(self._reader(exc), "/p/ops.h")
        return cm.exception

    def test_failures(self):
        e = self._fails(FileNotFoundError(2, "No such file or directory"))
        self.assertEqual((e.exit_code, e.message), (2, "--proto /p/ops.h: No such file or "
                                                       "directory"))
        e = self._fails(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"))
        self.assertEqual((e.exit_code, e.status), (1, "PYOP_EDESCRIPTOR"))
        self.assertIn("--proto /p/ops.h: not UTF-8 text", e.message)
        e = self._fails(lambda RE: RE("REG_OP(X) has no OUTPUT", line=7))
        self.assertEqual((e.status, e.message), ("PYOP_EDESCRIPTOR", "--proto /p/ops.h: REG_OP(X) "
                                                 "has no OUTPUT (/p/ops.h:7)"))
        e = self._fails(lambda RE: RE("bad"))
        self.assertEqual(e.message, "--proto /p/ops.h: bad")
        e = self._fails(SyntaxError("invalid syntax", ("/p/ops.h", 3, 1, "x")))
        self.assertTrue(e.message.startswith("--proto /p/ops.h: SyntaxError: invalid syntax"),
                        e.message)
        self.assertTrue(e.message.endswith(" (/p/ops.h:3)"), e.message)
        e = self._fails(ValueError("no"))
        self.assertEqual((e.status, e.message), ("PYOP_EDESCRIPTOR", "--proto /p/ops.h: "
                                                 "ValueError: no"))

    def test_declarations_of_a_missing_file(self):
        proto, errors = _cli("proto"), _cli("errors")
        with self.assertRaisesRegex(errors.UsageError, "--proto /nowhere/ops.h: no such file"):
            proto.read_declarations(None, "/nowhere/ops.h")


class StartChoiceEdgesTest(unittest.TestCase):
    """start_choice.py beyond lanes_unfit's versions: tags that name no one
    CPython, artifacts without a manifest, a root that cannot be read."""

    def test_tags(self):
        sc = _cli("start_choice")
        for tag in ("abi3", "cp3", "cpx12", "py312", "cp3100", ""):
            with self.subTest(tag=tag):
                self.assertEqual(sc.lanes_unfit(_manifest(tag=tag)),
                                 "built for %s, no one CPython version" % tag)
        self.assertIsNone(sc.lanes_unfit(_manifest(tag="cp399", version=0)))
        self.assertIn("Python 3.11 has no per-interpreter GIL",
                      sc.lanes_unfit(_manifest(tag="cp311")))
        self.assertIsNone(sc.lanes_unfit(_manifest(tag="cp312", version=0)))  # no version: 0
        self.assertIn("lanes need 1.6", sc.lanes_unfit(dict(_manifest(), bridge_abi_minor="x")))

    def test_a_manifest_without_the_bridge_abi(self):
        """An older bridge's manifest names no bridge ABI: its artifact
        cannot run lanes (said, not a crash), and choose starts a fit one
        instead (batch 13's survivor cli.b13.start_choice.missing_abi_crashes)."""
        sc = _cli("start_choice")
        old = dict(_manifest())
        del old["bridge_abi_major"], old["bridge_abi_minor"]
        self.assertEqual(sc.lanes_unfit(old), "its bridge speaks ABI None.None, lanes need 1.6")
        no_minor = dict(_manifest())
        del no_minor["bridge_abi_minor"]
        self.assertEqual(sc.lanes_unfit(no_minor),
                         "its bridge speaks ABI 1.None, lanes need 1.6")
        root = tempfile.mkdtemp(prefix="pyop_choice_")
        self.addCleanup(lambda: __import__("shutil").rmtree(root))
        for name, m in (("old312", old), ("new312", _manifest())):
            os.mkdir(os.path.join(root, name))
            with open(os.path.join(root, name, "manifest.txt"), "w") as f:
                f.write("".join("%s=%s\n" % kv for kv in m.items()))
        name, note = sc.choose(root, 1, default="old312", order="old312;new312")
        self.assertEqual(name, "new312")
        self.assertIn("starting new312 instead of the build's default old312 (its bridge "
                      "speaks ABI None.None", note)

    def test_artifacts_without_a_manifest(self):
        sc = _cli("start_choice")
        root = _tree(self, ["bare/", "file.txt"])
        with open(os.path.join(root, "bare", "manifest.txt.bak"), "w"):
            pass
        os.mkdir(os.path.join(root, "good"))
        with open(os.path.join(root, "good", "manifest.txt"), "w") as f:
            f.write("# python_tag=cp311\npython_tag=cp312\nno equals sign\nlibpython=/a=b\n")
        self.assertEqual(sc.artifacts(root, []),
                         [("good", {"python_tag": "cp312", "libpython": "/a=b"})])
        self.assertEqual(sc.artifacts(os.path.join(root, "none"), []), [])
        self.assertEqual(sc.choose(os.path.join(root, "none"), 2, default="d", order=""),
                         ("d", None))



class _DoctorLib:
    """A Lib whose pyop_doctor() text lists the path elements given, each
    with its verdict (and detail), as libpyop's does."""

    def __init__(self, elements):
        self.elements = elements

    def doctor(self):
        lines = ["runtime key: none (no runtime)",
                 "ASCEND_CUSTOM_OPP_PATH=%s" % os.environ.get("ASCEND_CUSTOM_OPP_PATH")]
        lines += ["  %s: %s%s" % (e, v, ": " + d if d else "") for e, v, d in self.elements]
        lines += ["artifacts: /a", "candidates:", "  /a/cp312: loaded", "ops registered: 3"]
        return "\n".join(lines) + "\n"


class CheckJobRulesTest(unittest.TestCase):
    """What `pyop check` is asked to do (check.py): paths or op names,
    --input for exactly one op, the elements libpyop's scan skips, the
    per-case limit at its ends."""

    def _args(self, target=None, inputs=None, attrs=None):
        import argparse
        return argparse.Namespace(target=target, input=inputs, attr=attrs, compile_option=None)

    def test_target_kinds(self):
        check = _cli("check")
        self.assertEqual([check._check_target_kind(t) for t in
                          ("Relu", "", "ops.py", "a" + os.sep + "b", os.curdir)],
                         ["op", "path", "path", "path", "path"])

    def test_case_timeout(self):
        import argparse
        check, errors = _cli("check"), _cli("errors")

        def limit(v):
            return check._case_timeout(argparse.Namespace(case_timeout=v))
        self.assertEqual(limit(None), _cli("check_supervise").DEFAULT_CASE_TIMEOUT)
        self.assertEqual(check._case_timeout(argparse.Namespace()),
                         _cli("check_supervise").DEFAULT_CASE_TIMEOUT)
        self.assertEqual([limit(86400), limit(0.001)], [86400, 0.001])
        for bad in (0, -1, 86400.5, float("nan"), float("inf")):
            with self.subTest(limit=bad):
                with self.assertRaisesRegex(errors.UsageError, "--case-timeout .*: expected "
                                            "seconds, more than 0 \\(at most a day\\)"):
                    limit(bad)

    def test_inputs_for_exactly_one_op(self):
        check, errors = _cli("check"), _cli("errors")
        for target in (None, ["Relu", "Gelu"], ["/ops"]):
            for given in (dict(inputs=["x=float32[1]"]), dict(attrs=["n=1"])):
                with self.subTest(target=target, given=given):
                    with self.assertRaisesRegex(errors.UsageError,
                                                "--input/--attr need exactly one OP to check"):
                        check._job(None, self._args(target, **given))
        root = _tree(self, ["a.py"])
        lib = _DoctorLib([(root, "python-dir", None)])
        with _Env(root):
            job = check._job(lib, self._args(["Relu"], inputs=["x=float32[1]"]))
        self.assertEqual((job["paths"], job["ops"], job["given"]), ([root], ["Relu"], False))

    def test_paths_as_the_scan_takes_them(self):
        check, errors = _cli("check"), _cli("errors")
        root = _tree(self, ["a.py"])
        skip = ("ops", "relative", "relative path refused")
        with _Env(root + ":ops"):
            job = check._job(_DoctorLib([(root, "python-dir", None), skip]), self._args())
            self.assertEqual((job["paths"], job["given"]), ([root], False))
            self.assertEqual(job["skipped"], ["ASCEND_CUSTOM_OPP_PATH element 'ops' skipped: "
                                              "relative path refused"])
            with self.assertRaises(errors.CliError) as cm:
                check._job(_DoctorLib([skip, ("/gone", "missing-dir", None)]), self._args())
            self.assertEqual((cm.exception.status, cm.exception.exit_code), ("PYOP_ENOENT", 1))
            self.assertEqual(cm.exception.message, "nothing to check: ASCEND_CUSTOM_OPP_PATH "
                             "element 'ops' skipped: relative path refused; ASCEND_CUSTOM_OPP_PATH "
                             "element '/gone' skipped: missing-dir")
            # a given path: ASCEND_CUSTOM_OPP_PATH is not read, and is left as it was
            job = check._job(_DoctorLib([(root, "python-dir", None)]), self._args([root]))
            self.assertEqual((job["paths"], job["given"]), ([root], True))
            self.assertEqual(os.environ["ASCEND_CUSTOM_OPP_PATH"], root + ":ops")
        for value in (None, "", " : \t"):
            with self.subTest(value=value):
                with _Env(value):
                    with self.assertRaisesRegex(errors.UsageError, "nothing to check: give "
                                                "plugin paths") as cm:
                        check._job(None, self._args())  # libpyop is not asked
                    self.assertEqual(cm.exception.exit_code, 2)

    def test_doctor_text_read(self):
        doctor = _cli("doctor")
        with _Env("/ops:rel"):
            rep = doctor.parse_doctor_report(_DoctorLib([("/ops", "python-dir", None),
                                                         ("rel", "relative", "refused")]).doctor()
                                             + "bridge: loaded /a/cp312 (ok)\n"
                                             "ASCEND_CUSTOM_OPP_PATH=(unset)\n  error: no\n")
        self.assertEqual((rep["runtime_key"], rep["runtime"]), (None, "no runtime"))
        self.assertEqual(rep["path"], [{"element": "/ops", "verdict": "python-dir", "detail": None},
                                       {"element": "rel", "verdict": "relative",
                                        "detail": "refused"}])
        self.assertEqual(rep["candidates"], [{"dir": "/a/cp312", "status": "loaded",
                                              "reason": None}])
        self.assertEqual((rep["ops_registered"], rep["artifacts"]), (3, "/a"))
        self.assertEqual(rep["bridge"], {"loaded": True, "detail": "/a/cp312 (ok)"})
        self.assertEqual((rep["opp_path"], rep["path_error"]), (None, "no"))
        rep = doctor.parse_doctor_report("runtime key: cp312-x (python 3.12)\nbridge: none\n")
        self.assertEqual((rep["runtime_key"], rep["bridge"]),
                         ("cp312-x", {"loaded": False, "detail": "none"}))
        # a path element may hold "=": the value is all after the first one
        rep = doctor.parse_doctor_report("ASCEND_CUSTOM_OPP_PATH=/ops/k=v:/x=\n")
        self.assertEqual(rep["opp_path"], "/ops/k=v:/x=")



class _Ended:
    """A worker process that has ended (what read_events and stop ask of it)."""

    pid = -1
    returncode = 0

    def poll(self):
        return 0

    def wait(self, timeout=None):
        return 0


class WorkerStreamRulesTest(unittest.TestCase):
    """The stream of a worker's events (supervise.read_events): only the
    worker's own events are handed on, "done" said is a finished worker, a
    stream ending without it a death; and how run and bench name a worker
    that did not finish (supervise._unfinished)."""

    def _read(self, text):
        sv = _cli("supervise")
        rfd, wfd = os.pipe()
        os.write(wfd, text.encode())
        os.close(wfd)
        seen = []
        try:
            got = sv.read_events(_Ended(), rfd, 60, lambda ev: seen.append(ev) or ev["e"] == "done")
        finally:
            os.close(rfd)
        return got, seen

    def test_events(self):
        got, seen = self._read('not json\n[1, 2]\n{"x": 1}\n{"e": "activity", "calls": 2}\n'
                               '{"e": "done"}\n{"e": "late"}\n{"e": "cut')
        self.assertIs(got, True)
        self.assertEqual([ev["e"] for ev in seen], ["activity", "done", "late"])
        got, seen = self._read('{"e": "activity"}\n')
        self.assertIs(got, False)  # ended without "done": a death
        self.assertEqual(self._read(""), (False, []))

    def _clocked(self, events, step, limit=1.0):
        """read_events over a clock that moves step seconds each time it
        is read (0.4 s for its first two reads: the start and the first
        look, within the limit); each event is written when the one before was handled (one
        event per read), the stream closed after the last. What it answered
        and the events seen."""
        sv = _cli("supervise")
        rfd, wfd = os.pipe()
        now = [0.0]

        reads = [0]

        def monotonic():
            reads[0] += 1
            now[0] += 0.4 if reads[0] <= 2 else step
            return now[0]
        lines = [(__import__("json").dumps(ev) + "\n").encode() for ev in events]
        seen = []

        def on_event(ev):
            seen.append(ev)
            if len(seen) < len(lines):
                os.write(wfd, lines[len(seen)])
            else:
                os.close(wfd)
            return ev["e"] == "done"
        os.write(wfd, lines[0])
        saved = sv.time
        sv.time = __import__("types").SimpleNamespace(monotonic=monotonic)
        try:
            got = sv.read_events(_Ended(), rfd, limit, on_event)
        finally:
            sv.time = saved
            os.close(rfd)
            if len(seen) < len(lines):
                os.close(wfd)
        return got, seen

    def test_done_waits_for_the_process(self):
        """"done" said, the stream still open (a process the worker forked
        holds it): finished only once the worker's own process has ended."""
        sv = _cli("supervise")
        rfd, wfd = os.pipe()
        os.write(wfd, b'{"e": "done"}\n')
        polls = []

        class Running:
            pid = -1

            def poll(self):
                polls.append(1)
                return None if len(polls) < 3 else 0

            def wait(self, timeout=None):
                return 0
        saved = sv.time
        # a clock that stands still: each idle wait is the limit, 0.05 s
        sv.time = __import__("types").SimpleNamespace(monotonic=lambda: 100.0)
        try:
            got = sv.read_events(Running(), rfd, 0.05, lambda ev: ev["e"] == "done")
        finally:
            sv.time = saved
            os.close(rfd)
            os.close(wfd)
        self.assertIs(got, True)
        self.assertEqual(len(polls), 3)  # asked until it ended, not taken as ended

    def test_ended_without_done_is_no_finish(self):
        """The worker's process has ended without saying "done" while a
        process it forked still holds the stream (idle, open): not a
        finished worker; when the stream then ends, a death (False)."""
        sv = _cli("supervise")
        rfd, wfd = os.pipe()
        os.write(wfd, b'{"e": "activity", "stage": "execute"}\n')
        reads = [0]

        def monotonic():
            # a clock that stands still (each idle wait is the 0.05 s limit);
            # the forked process ends (the stream closes) at its 6th read
            reads[0] += 1
            if reads[0] == 6:
                os.close(wfd)
            return 100.0
        saved = sv.time
        sv.time = __import__("types").SimpleNamespace(monotonic=monotonic)
        seen = []
        try:
            got = sv.read_events(_Ended(), rfd, 0.05,
                                 lambda ev: seen.append(ev["e"]) or ev["e"] == "done")
        finally:
            sv.time = saved
            os.close(rfd)
            if reads[0] < 6:
                os.close(wfd)
        self.assertEqual(seen, ["activity"])
        self.assertIs(got, False)  # a death, never taken for finished
        self.assertGreaterEqual(reads[0], 6)  # it waited for the stream to end

    def test_each_event_restarts_the_limit(self):
        """A worker that reports within its limit is never stopped however
        long it runs in all; one whose event says it makes n calls gets n
        limits; one silent past its limit is stopped (None)."""
        progress = [{"e": "activity"}] * 6 + [{"e": "done"}]
        # 0.4 s from each event to the next look at the clock, a 1 s limit:
        # 2.8 s in all, never stopped
        got, seen = self._clocked(progress, 0.4)
        self.assertIs(got, True)
        self.assertEqual(len(seen), 7)
        # 1.2 s: past a 1 s limit, within the limit of 3 calls
        got, seen = self._clocked([{"e": "activity", "calls": 3}] * 6
                                  + [{"e": "done", "calls": 3}], 1.2)
        self.assertIs(got, True)
        got, seen = self._clocked(progress, 1.2)  # 1 call each: stopped after the first
        self.assertIsNone(got)
        self.assertEqual(len(seen), 1)

    def test_unfinished(self):
        import argparse
        sv = _cli("supervise")
        run = argparse.Namespace(command="run", op="Op")
        bench = argparse.Namespace(command="bench", op="Op")
        e = sv._unfinished(run, {"stage": sv.UNLOADING, "op": None}, -9, 5)
        self.assertEqual((e.status, e.op, getattr(e, "result_said", False)),
                         ("PYOP_EPLUGIN", "Op", True))
        self.assertEqual(e.message, "while unloading the plugins after the run, the plugin code "
                                    "ended the process running it: killed by SIGKILL; the command "
                                    "did not finish")
        e = sv._unfinished(bench, {"stage": "execute", "op": "Inner"}, None, 5)
        self.assertEqual((e.op, e.message), ("Inner", 'execute of "Inner" did not finish within '
                                             '5 s (the per-call limit, --timeout): a hang?; the '
                                             'benchmark did not finish'))
        self.assertFalse(getattr(e, "result_said", False))
        e = sv._unfinished(run, None, 3, 5)
        self.assertEqual((e.op, e.exit_code), ("Op", 1))
        self.assertTrue(e.message.startswith('op "Op": while starting, the plugin code ended the '
                                             'process running it: it exited with status 3'),
                        e.message)
        e = sv._unfinished(run, {"stage": sv.LOADING, "op": None}, 3, 5)
        self.assertTrue(e.message.startswith('op "Op": while loading the plugins, '), e.message)



class _ListLib:
    """The calls `pyop list` makes, answering with the ops given."""

    def __init__(self, ops):
        self.ops = {o["op_type"]: o for o in ops}

    def load(self):
        pass

    def op_types(self):
        return list(self.ops)

    def op_info(self, t):
        return self.ops[t]


def _listed(op_type="Op", impl_key="pyop:op", proto_key=None, **kw):
    op = dict(_info(), op_type=op_type, impl_key=impl_key, impl_source="op.py:3",
              proto_source="op.py:1", proto_key=proto_key or "pyop:" + op_type)
    op.update(kw)
    return op


class ListOutputRulesTest(unittest.TestCase):
    """What `pyop list` prints of each op (list.py): the signature's marks,
    the lanes line, the implementation line only where there is one, a
    --proto REG_OP named only for the op it declared, and nothing
    registered."""

    def _list(self, ops, protos=None, path=None):
        import argparse
        import contextlib
        import io
        lst = _cli("list")
        out = io.StringIO()
        args = argparse.Namespace(path=path, json=False, proto_files=protos)
        with contextlib.redirect_stdout(out):
            self.assertEqual(lst.cmd_list(_ListLib(ops), args), 0)
        return out.getvalue()

    def test_signature(self):
        lst = _cli("list")
        op = _info(inputs=(("x", "required"), ("b", "optional"), ("xs", "dynamic")),
                   outputs=(("y", "required"), ("ys", "dynamic")),
                   attrs=({"name": "n", "type": "int", "required": False, "default": 1},
                          {"name": "mode", "type": "str", "required": True, "default": None}))
        op["inputs"][0]["mutated"] = True
        op["outputs"][0]["alias"] = "x"
        self.assertEqual(lst.signature_line(op), "Op(x (mutated), b?, xs[]; n: int = 1, mode: str) "
                                                 "-> y (input x's buffer), ys[]")
        self.assertEqual(lst.signature_line(_info(outputs=())), "Op(x)")
        self.assertEqual(lst.signature_line(_info(inputs=())), "Op() -> y")

    def test_lanes_and_symbols(self):
        lst = _cli("list")
        self.assertEqual(lst.lanes_line(dict(_info(), lanes=1)), "parallel: 1 lane")
        self.assertEqual(lst.lanes_line(dict(_info(), lanes=4)), "parallel: 4 lanes")
        self.assertEqual(lst.lanes_line(dict(_info(), serial_reason="it holds state")),
                         "serial (main interpreter): it holds state")
        self.assertIsNone(lst.lanes_line(_info()))
        op = _info(inputs=(("x", "required"), ("y", "required")))
        op["inputs"][0]["dtype_symbol"] = "T"
        op["inputs"][1]["dtype_symbol"] = "T"
        self.assertEqual(lst.dtypes_line(op), "data types: x, y (one type T): any")

    def test_op_lines(self):
        text = self._list([_listed("A"), _listed("B", impl_key=None, proto_key="host:B",
                                                 lanes=2)], protos={"B": "ops.h", "A": "ops.h"})
        lines = text.splitlines()
        self.assertEqual(lines[0], "A(x) -> y")
        self.assertIn("    prototype: op.py:1 (pyop:A)", lines)  # A's prototype is its plugin's
        self.assertIn("    prototype: op.py:1, the REG_OP of --proto ops.h (host:B)", lines)
        self.assertEqual(sum(1 for t in lines if t.startswith("    implementation: ")), 1)
        self.assertIn("    parallel: 2 lanes", lines)
        self.assertEqual(lines.count("    capabilities: infer_meta, execute"), 2)
        text = self._list([_listed("A", capabilities=[])])
        self.assertIn("    capabilities: none", text.splitlines())

    def test_nothing_registered(self):
        with _Env(None):
            self.assertEqual(self._list([]), "no ops registered (ASCEND_CUSTOM_OPP_PATH is not "
                                             "set, so no plugins were loaded)\n")
        root = _tree(self, ["sub/a.py"])
        with _Env(root):
            lines = self._list([]).splitlines()
        self.assertEqual(lines[0], "no ops registered (ASCEND_CUSTOM_OPP_PATH=%s)" % root)
        self.assertEqual(len(lines), 2)
        self.assertTrue(lines[1].startswith("  " + os.path.join(root, "sub", "a.py") + " skipped"),
                        lines)



def _pending(op_type="Late", caps=("execute",)):
    """An implementation waiting for a prototype, as plugins.loaded_impls gives it."""
    return {"op_type": op_type, "impl_key": "pyop:" + op_type.lower(),
            "impl_source": "late.py:4", "capabilities": list(caps), "ge": False,
            "legacy": False}


class ListSectionsRulesTest(unittest.TestCase):
    """Which sections `pyop list` prints (list.py), in each combination of
    registered ops (none; one; one left out, a --proto REG_OP no plugin
    implements), implementations waiting for a prototype (none; one) and
    ASCEND_CUSTOM_OPP_PATH (unset; a directory whose .py files are one
    level too deep), as text and --json: "no ops registered" (with the
    path's notes) only when there is neither an op nor a waiting
    implementation; the exit status 0 in every case."""

    def _list(self, ops, pending, as_json, declared=()):
        import argparse
        import contextlib
        import io
        from unittest import mock
        lst, proto = _cli("list"), _cli("proto")
        saved = (dict(proto._declared), set(proto._bound), set(proto._unbound))

        def restore():
            proto._declared.clear()
            proto._declared.update(saved[0])
            proto._bound.clear()
            proto._bound.update(saved[1])
            proto._unbound.clear()
            proto._unbound.update(saved[2])
        self.addCleanup(restore)
        proto._declared.update({op: "ops.h" for op in declared})
        lib = _ListLib(ops)
        asked = []

        def pending_impls(types):
            asked.append(list(types))
            return [i for i in pending if i["op_type"] not in types]
        out = io.StringIO()
        args = argparse.Namespace(path=None, json=as_json, proto_files=None)
        with mock.patch.object(lst, "pending_impls", pending_impls), \
                contextlib.redirect_stdout(out):
            status = lst.cmd_list(lib, args)
        self.assertEqual(asked, [list(lib.ops)])  # every registered type, left out or not
        return status, out.getvalue()

    def test_every_combination(self):
        import itertools
        import json
        plugins = _cli("plugins")
        root = _tree(self, ["sub/a.py"])
        kinds = {"none": ([], ()), "one": ([_listed("A")], ()),
                 "unbound": ([_listed("U", impl_key=None, proto_key="host:U")], ("U",))}
        for (kind, (ops, declared)), pend, env, as_json in itertools.product(
                kinds.items(), ([], [_pending()]), (None, root), (False, True)):
            with self.subTest(ops=kind, pending=len(pend), env=env, json=as_json), _Env(env):
                status, out = self._list(ops, pend, as_json, declared)
                self.assertEqual(status, 0)
                listed = ["A"] if kind == "one" else []
                if as_json:
                    got = json.loads(out)
                    self.assertEqual(sorted(got), ["ops", "pending"])
                    self.assertEqual([o["op_type"] for o in got["ops"]], listed)
                    self.assertEqual(got["pending"], [
                        {k: p[k] for k in ("op_type", "impl_key", "impl_source",
                                           "capabilities")} for p in pend])
                    continue
                lines = out.splitlines()
                empty = not listed and not pend
                none_line = [t for t in lines if t.startswith("no ops registered")]
                self.assertEqual(len(none_line), 1 if empty else 0, out)
                notes = [t for t in lines if t.startswith("  " + root)]
                self.assertEqual(len(notes), 1 if empty and env else 0, out)
                if empty:
                    self.assertEqual(lines[0], "no ops registered (%s)" % (
                        "ASCEND_CUSTOM_OPP_PATH=" + root if env else
                        "ASCEND_CUSTOM_OPP_PATH is not set, so no plugins were loaded"))
                    self.assertEqual(len(lines), 2 if env else 1)
                    continue
                heads = [t for t in lines if not t.startswith(" ")]
                self.assertEqual(heads, (["A(x) -> y"] if listed else []) + (
                    ["Late: implementation " + plugins.PENDING_HINT] if pend else []), out)
                self.assertNotIn("U(x) -> y", lines)
                if pend:
                    self.assertEqual(lines[-2:], ["    capabilities: execute",
                                                  "    implementation: late.py:4 (pyop:late)"])

    def test_only_pending(self):
        # the implementations waiting for a prototype, with no "no ops
        # registered" line above them, whatever the path says
        plugins = _cli("plugins")
        with _Env(None):
            status, out = self._list([], [_pending("Late"), _pending("Zed", caps=())], False)
        self.assertEqual(status, 0)
        self.assertEqual(out.splitlines(), [
            "Late: implementation " + plugins.PENDING_HINT,
            "    capabilities: execute",
            "    implementation: late.py:4 (pyop:late)",
            "Zed: implementation " + plugins.PENDING_HINT,
            "    capabilities: none",
            "    implementation: late.py:4 (pyop:zed)"])



class MainFailureRulesTest(unittest.TestCase):
    """How the command ends on a failure (main.py): the exit status of
    each kind, one message on stderr, the --json error object on stdout
    only once; an interrupt's status and line; PYOP_PYTHON."""

    def _captured(self, fn, *args):
        import contextlib
        import io
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = fn(*args)
        return code, out.getvalue(), err.getvalue()

    def test_report_failure(self):
        import json
        main, errors = _cli("main"), _cli("errors")
        code, out, err = self._captured(main.report_failure, "run",
                                        errors.UsageError("bad --input\nsecond line", "Op"), False)
        self.assertEqual((code, out, err), (2, "", "pyop: run: bad --input\nsecond line\n"))
        code, out, err = self._captured(main.report_failure, None,
                                        errors.CliError("it failed", "PYOP_EPYTHON"), True)
        self.assertEqual((code, err), (1, "pyop: it failed\n"))
        self.assertEqual(json.loads(out)["error"]["status"], "PYOP_EPYTHON")
        said = errors.CliError("after the result", "PYOP_EPLUGIN")
        said.result_said = True
        self.assertEqual(self._captured(main.report_failure, "run", said, True),
                         (1, "", "pyop: run: after the result\n"))
        self.assertEqual(self._captured(main.report_failure, "list", errors.CliError(""), False),
                         (1, "", "pyop: list: \n"))

    def test_interrupted(self):
        import json
        main = _cli("main")
        saved = main._main

        def interrupted(text):
            def fn(argv, command):
                raise KeyboardInterrupt(text)
            return fn
        try:
            main._main = interrupted("execute of \"Slow\"")
            code, out, err = self._captured(main._interruptible, ["run", "Slow"], "run")
            self.assertEqual((code, out, err), (main.EXIT_INTERRUPTED, "",
                                                'pyop: run: interrupted (execute of "Slow")\n'))
            main._main = interrupted("")
            code, out, err = self._captured(main._interruptible, ["--json", "list"], None)
            self.assertEqual((code, err), (130, "pyop: interrupted\n"))
            self.assertEqual(json.loads(out)["error"]["status"], "PYOP_EINTR")
            main._main = lambda argv, command: 3
            self.assertEqual(self._captured(main._interruptible, ["check"], "check"), (3, "", ""))
        finally:
            main._main = saved

    def test_plugin_threads_left_running(self):
        # a daemon thread a plugin started does not keep the process alive:
        # nothing said, the command returns to end as usual; a non-daemon
        # one is named, and the command ends at once with its status
        import threading
        main = _cli("main")
        release = threading.Event()
        ended = []
        saved, main.end_now = main.end_now, ended.append
        try:
            for daemon in (True, False):
                with self.subTest(daemon=daemon):
                    t = threading.Thread(target=release.wait, name="plugin-daemon-%s" % daemon,
                                         daemon=daemon)
                    t.start()
                    try:
                        code, out, err = self._captured(main.leave_plugin_threads, "run", 3)
                    finally:
                        release.set()
                        t.join()
                        release.clear()
                    self.assertEqual((code, out), (None, ""))
                    if daemon:
                        self.assertEqual((err, ended), ("", []))
                    else:
                        self.assertEqual(err, "pyop: run: warning: a plugin left a thread running "
                                              "(plugin-daemon-False); the command does not wait "
                                              "for it, as a C host's pyop_shutdown does not\n")
                        self.assertEqual(ended, [3])
        finally:
            main.end_now = saved

    def test_requested_python(self):
        main, errors = _cli("main"), _cli("errors")
        saved = {k: os.environ.get(k) for k in ("PYOP_PYTHON", "PYOP__REEXECUTED")}
        try:
            os.environ.pop("PYOP__REEXECUTED", None)
            os.environ.pop("PYOP_PYTHON", None)
            self.assertIsNone(main.run_under_requested_python(["list"]))
            os.environ["PYOP_PYTHON"] = "/nowhere/python9"
            with self.assertRaisesRegex(errors.UsageError, "PYOP_PYTHON=/nowhere/python9: no such "
                                        "Python") as cm:
                main.run_under_requested_python(["list"])
            self.assertEqual(cm.exception.exit_code, 2)
            os.environ["PYOP_PYTHON"] = "no-such-python-here"  # looked up on PATH
            with self.assertRaises(errors.UsageError):
                main.run_under_requested_python(["list"])
            os.environ["PYOP__REEXECUTED"] = "/nowhere/python9"
            os.environ["PYOP_PYTHON"] = "/nowhere/python9"
            self.assertIsNone(main.run_under_requested_python(["list"]))  # already re-executed
            os.environ.pop("PYOP__REEXECUTED")
            os.environ["PYOP_PYTHON"] = sys.executable  # this one: nothing to do
            self.assertIsNone(main.run_under_requested_python(["list"]))
            self.assertNotIn("PYOP__REEXECUTED", os.environ)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_requested_python_by_command_name(self):
        # PYOP_PYTHON=python3.12 (a command name, no /) is the one PATH
        # finds: this Python under another name is no re-exec; another one
        # is exec'd by its path on PATH, the command's script and argv after
        main, config = _cli("main"), _cli("config")
        bin_dir = tempfile.mkdtemp(prefix="pyop_rules_path_")
        self.addCleanup(lambda: __import__("shutil").rmtree(bin_dir))
        os.symlink(sys.executable, os.path.join(bin_dir, "pyop-rules-this-python"))
        other = os.path.join(bin_dir, "pyop-rules-other-python")
        with open(other, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(other, 0o755)
        keys = ("PYOP_PYTHON", "PYOP__REEXECUTED", "PATH")
        saved = {k: os.environ.get(k) for k in keys}
        saved_execv, saved_script, execs = os.execv, config.SCRIPT, []

        class Execd(Exception):
            pass

        def execv(path, argv):
            execs.append((path, list(argv)))
            raise Execd()
        try:
            os.environ.pop("PYOP__REEXECUTED", None)
            os.environ["PATH"] = bin_dir + os.pathsep + (saved["PATH"] or "")
            os.execv, config.SCRIPT = execv, "/opt/pyop/bin/pyop"
            os.environ["PYOP_PYTHON"] = "pyop-rules-this-python"
            self.assertIsNone(main.run_under_requested_python(["list"]))
            self.assertEqual(execs, [])
            self.assertNotIn("PYOP__REEXECUTED", os.environ)
            os.environ["PYOP_PYTHON"] = "pyop-rules-other-python"
            with self.assertRaises(Execd):
                main.run_under_requested_python(["check", "--json"])
            self.assertEqual(execs, [(other, [other, "/opt/pyop/bin/pyop", "check", "--json"])])
            self.assertEqual(os.environ.get("PYOP__REEXECUTED"), "pyop-rules-other-python")
        finally:
            os.execv, config.SCRIPT = saved_execv, saved_script
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v



class BindingValueRulesTest(unittest.TestCase):
    """binding.py's readings of libpyop's structs: an attribute value of
    each type written as the command writes it and read back, a data type
    at the end of the table and past it, dtype masks, which libpyop is
    loaded, an interrupt's detail."""

    def test_attr_values_round_trip(self):
        b, values = _cli("binding"), _cli("values")
        for t, value in (("int", -3), ("int", values.INT64_MIN), ("float", 0.5), ("bool", True),
                         ("bool", False), ("str", ""), ("str", "ab"), ("DataType", "bool"),
                         ("list[int]", []), ("list[int]", [1, values.INT64_MAX]),
                         ("list[float]", [0.5, -1.0]), ("list[bool]", [True, False]),
                         ("list[str]", ["", "a"]), ("list[DataType]", ["int8", "float32"]),
                         ("list[list[int]]", [[], [1, 2]]), ("list[list[int]]", [])):
            with self.subTest(type=t, value=value):
                keep = []
                a = b.AttrValue()
                values.set_attr_value(a, t, value, keep)
                self.assertEqual(b.attr_value_to_py(a), value)

    def test_data_type_past_the_table(self):
        b = _cli("binding")
        a = b.AttrValue()
        a.type = 5
        a.u.dtype = len(b.DTYPES) - 1
        self.assertEqual(b.attr_value_to_py(a), b.DTYPES[-1])
        a.u.dtype = len(b.DTYPES)
        self.assertEqual(b.attr_value_to_py(a), len(b.DTYPES))  # shown as the number
        a.u.dtype = -1
        self.assertEqual(b.attr_value_to_py(a), -1)
        a.type, a.u.span.count = 99, 1
        self.assertIsNone(b.attr_value_to_py(a))

    def test_dtype_masks(self):
        b = _cli("binding")
        self.assertIsNone(b.dtype_names(0))
        self.assertEqual(b.dtype_names(1), ["float32"])
        self.assertEqual(b.dtype_names(1 << (len(b.DTYPES) - 1) | 2), ["float16", b.DTYPES[-1]])
        self.assertEqual(b.dtype_names(1 << len(b.DTYPES)), None)  # a bit past the table

    def test_which_library(self):
        b, config = _cli("binding"), _cli("config")
        saved = os.environ.get("PYOP_LIBRARY"), config.LIBDIR, config.SCRIPT
        try:
            os.environ["PYOP_LIBRARY"] = "/x/libpyop.so"
            config.LIBDIR, config.SCRIPT = "../lib", "/inst/bin/pyop"
            self.assertEqual(b._find_library(), "/x/libpyop.so")
            del os.environ["PYOP_LIBRARY"]
            self.assertEqual(b._find_library(), os.path.join(
                os.path.dirname(os.path.dirname(os.path.realpath("/inst/bin/pyop"))), "lib",
                "libpyop.so.0"))
            config.LIBDIR = "/usr/lib64"
            self.assertEqual(b._find_library(), "/usr/lib64/libpyop.so.0")
            for libdir, script in ((None, "/inst/bin/pyop"), ("../lib", None)):
                config.LIBDIR, config.SCRIPT = libdir, script
                self.assertEqual(b._find_library(), "libpyop.so.0")
        finally:
            if saved[0] is None:
                os.environ.pop("PYOP_LIBRARY", None)
            else:
                os.environ["PYOP_LIBRARY"] = saved[0]
            config.LIBDIR, config.SCRIPT = saved[1], saved[2]

    def test_interrupt_detail_only_after_an_interrupt(self):
        b = _cli("binding")
        lib = b.Lib.__new__(b.Lib)
        lib.c = _FakeC("PYOP_EINVAL", "bad input\nmore")
        lib.c.pyop_last_status = lambda: b.PYOP_EINTR + 1
        self.assertIsNone(lib.interrupt_detail())  # the last status is not PYOP_EINTR
        lib.c.pyop_last_status = lambda: b.PYOP_EINTR
        self.assertEqual(lib.interrupt_detail(), "bad input")
        lib.c = _FakeC("PYOP_EINTR", "  \n")
        lib.c.pyop_last_status = lambda: b.PYOP_EINTR
        self.assertIsNone(lib.interrupt_detail())


class _Desc:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class LoadedImplsRulesTest(unittest.TestCase):
    """The implementations the loaded plugins define (plugins.py), read from
    their modules: pyop's with their capability bits, GE's with their
    interfaces, each once, in op type order; waiting ones."""

    def setUp(self):
        self.saved = {n: sys.modules.get(n) for n in ("pyop._loader", "pyop.ext",
                                                      "ge.custom_op.registry", "_pyopplg_a",
                                                      "_pyopplg_b", "_pyopplg_none",
                                                      "_notplg_c")}
        self.addCleanup(self._restore)

    def _restore(self):
        for n, m in self.saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m

    def _module(self, name, **objs):
        mod = type(sys)(name)
        mod.__dict__.update(objs)
        sys.modules[name] = mod
        return mod

    def test_impls(self):
        plugins = _cli("plugins")
        sys.modules.pop("pyop._loader", None)
        self.assertEqual(plugins.loaded_impls(), [])  # no plugin loaded
        self._module("pyop._loader", PLUGIN_PREFIX="_pyopplg_")
        Zed = type("Zed", (), {"__pyop_descriptor__": _Desc(op_type="Zed", key="pyop:zed",
                                                            file="/p/a.py", line=3, caps=1 | 8)})
        Abs = type("Abs", (), {"__pyop_descriptor__": _Desc(op_type="Abs", key="pyop:abs",
                                                            file="/p/a.py", line=9, caps=2 | 4)})
        Ge = type("Ge", (), {"__ge_op_impl_descriptor__": _Desc(
            op_type="Gelu", interfaces=["host_cpu_execute", "compilable", "other"])})
        Ge.__module__ = "_pyopplg_b"
        self._module("_pyopplg_a", Zed=Zed, Abs=Abs, Again=Abs, value=3)
        self._module("_pyopplg_b", Ge=Ge, Zed=Zed)
        sys.modules["_pyopplg_none"] = None
        # a module not of a plugin (its name without the loader's prefix)
        Other = type("Other", (), {"__pyop_descriptor__": _Desc(
            op_type="Other", key="pyop:other", file="/q/c.py", line=1, caps=2)})
        self._module("_notplg_c", Other=Other)
        # without pyop.ext (or without either of its functions), GE classes
        # cannot be placed: pyop's only
        sys.modules.pop("pyop.ext", None)
        self.assertEqual([i["op_type"] for i in plugins.loaded_impls()], ["Abs", "Zed"])
        self._module("pyop.ext", class_location=lambda cls: ("/p/b.py", 5))
        self.assertEqual([i["op_type"] for i in plugins.loaded_impls()], ["Abs", "Zed"])
        self._module("pyop.ext", module_label=lambda name: "b")
        self.assertEqual([i["op_type"] for i in plugins.loaded_impls()], ["Abs", "Zed"])
        self._module("pyop.ext", class_location=lambda cls: ("/p/b.py", 5),
                     module_label=lambda name: "b")
        self._module("ge.custom_op.registry", uses_legacy_execute=lambda desc: True)
        got = plugins.loaded_impls()
        self.assertEqual([(i["op_type"], i["impl_key"], i["capabilities"], i["ge"]) for i in got],
                         [("Abs", "pyop:abs", ["execute", "compile"], False),
                          ("Gelu", "ge:b:Ge:Gelu", ["execute", "compile"], True),
                          ("Zed", "pyop:zed", ["infer_meta", "declare_launch_args"], False)])
        self.assertEqual((got[1]["impl_source"], got[1]["legacy"]), ("/p/b.py:5", True))
        self.assertEqual(got[0]["impl_source"], "/p/a.py:9")
        self.assertEqual([i["op_type"] for i in plugins.pending_impls(["Abs", "Zed"])], ["Gelu"])
        sys.modules["ge.custom_op.registry"] = type(sys)("no_rule")
        self.assertFalse(plugins.loaded_impls()[1]["legacy"])
        sys.modules["pyop._loader"] = type(sys)("no_prefix")
        self.assertEqual(plugins.loaded_impls(), [])



class _Stream:
    def __init__(self):
        self.events = []

    def send(self, ev):
        self.events.append(ev)


class CheckWorkerPathsRulesTest(unittest.TestCase):
    """What check's worker loads for the paths it was given
    (check_worker._as_loaded): a directory as it is, the .py files of one
    directory through one private directory holding them and their _
    helpers, a _ file as given; and a warning said once per worker."""

    def test_files_of_one_directory_share_one(self):
        cw = _cli("check_worker")
        a = _tree(self, ["x.py", "y.py", "z.py", "_helper.py", "__pycache__/"])
        b = _tree(self, ["w.py"])
        holders = {}
        got = cw._as_loaded([os.path.join(a, "x.py"), b, os.path.join(a, "y.py"),
                             os.path.join(a, "_helper.py"), os.path.join(a, "nope.py")], holders)
        self.addCleanup(lambda: [__import__("shutil").rmtree(h) for h in holders])
        self.assertEqual(len(got), 4)
        self.assertEqual(got[1:], [b, os.path.join(a, "_helper.py"), os.path.join(a, "nope.py")])
        self.assertEqual(holders, {got[0]: a})
        self.assertEqual(sorted(os.listdir(got[0])), ["_helper.py", "x.py", "y.py"])
        self.assertEqual(os.path.realpath(os.path.join(got[0], "x.py")),
                         os.path.realpath(os.path.join(a, "x.py")))
        worker = cw.Worker(None, None, {"done": []}, _Stream())
        worker.holders = holders
        self.assertEqual(worker.real("at %s/x.py:3" % got[0]), "at %s/x.py:3" % a)
        self.assertEqual(worker.real(""), "")
        self.assertIsNone(worker.real(None))

    def test_unused_compile_options_said_once(self):
        import argparse
        cw = _cli("check_worker")
        stream = _Stream()
        lib = argparse.Namespace(load=lambda: None)
        worker = cw.Worker(lib, None, {"done": [["a.py", "Op"]], "compile_options": {"K": "1"}},
                           stream)
        self.assertEqual(worker.done, {("a.py", "Op")})
        saved = sys.modules.pop("ge.custom_op.context", None)
        try:
            worker._load("/p/a.py", "loading")
            worker._load("/p/b.py", "loading")
        finally:
            if saved is not None:
                sys.modules["ge.custom_op.context"] = saved
        self.assertEqual([ev["e"] for ev in stream.events],
                         ["activity", "warning", "activity"])
        self.assertIn("no GE plugin is loaded", stream.events[1]["text"])
        quiet = _Stream()
        worker = cw.Worker(lib, None, {"done": [], "compile_options": {}}, quiet)
        worker._load("/p/a.py", "loading")
        self.assertEqual([ev["e"] for ev in quiet.events], ["activity"])



class _Run:
    """An instance.RunResult as _contract_problems reads it."""

    def __init__(self, **kw):
        self.before = self.after = None
        self.attrs_written, self.error, self.declare_error = [], None, None
        self.produced = self.inferred = None
        self.inputs, self.ran = [], "execute"
        self.__dict__.update(kw)


class _Buf:
    def __init__(self, data, dtype=0, shape=(2,)):
        self.data, self.dtype, self.shape, self.ndim = data, dtype, list(shape), len(shape)


class ContractRulesTest(unittest.TestCase):
    """What one run broke (check_verdict._contract_problems): an input
    written without mutates_args (its index said for a dynamic one only), a
    Tensor attribute written, a failed call, a declare_launch_args failure
    (not where a GE op needs an NPU), outputs other than infer_meta's, an
    alias that is not the input's buffer."""

    def test_writes(self):
        cv = _cli("check_verdict")
        info = _info(inputs=(("x", "required"), ("xs", "dynamic"), ("acc", "required")))
        info["inputs"][2]["mutated"] = True
        res = _Run(before=[[b"a"], [b"b", b"c"], [b"d"]], after=[[b"A"], [b"b", b"C"], [b"D"]],
                   attrs_written=[("w", "execute")])
        self.assertEqual(cv._contract_problems(info, "c", res), [
            "c: input x was written, but it is not declared in mutates_args",
            "c: input xs[1] was written, but it is not declared in mutates_args",
            "c: attribute w (a Tensor attribute, read-only for the op) was written by execute"])
        self.assertEqual(cv._contract_problems(info, "c", _Run(before=res.before)), [])

    def test_failures(self):
        cv, errors = _cli("check_verdict"), _cli("errors")
        info = _info()
        err = errors.CliError("no output", "PYOP_ECONTRACT")
        declare = errors.CliError("no NPU", "PYOP_EPYTHON")
        declare.origin = (("NotImplementedError",), "/lib/ge/x.py", 3, "NotImplementedError: npu")
        res = _Run(error=err, declare_error=declare)
        self.assertEqual(cv._contract_problems(info, "c", res), ["c: PYOP_ECONTRACT: no output"])
        res = _Run(declare_error=declare)
        self.assertEqual(cv._contract_problems(info, "c", res),
                         ["c: PYOP_EPYTHON: no NPU (a host that launches the op instead of "
                          "executing it fails here)"])
        ge = dict(info, impl_key="ge:m:Cls:Op")
        self.assertEqual(cv._contract_problems(ge, "c", res), [])  # where GE needs an NPU
        declare.origin = (("ValueError",), "/lib/ge/x.py", 3, "ValueError: v")
        self.assertEqual(len(cv._contract_problems(ge, "c", res)), 1)

    def test_outputs(self):
        cv = _cli("check_verdict")
        info = _info(inputs=(("acc", "required"),), outputs=(("y", "required"),))
        info["outputs"][0]["alias"] = "acc"
        same = [_Buf(100)]
        ok = _Run(inputs=[same], produced=[[(_Buf(100), None)]], inferred=[[(0, [2])]])
        self.assertEqual(cv._contract_problems(info, "c", ok), [])
        moved = _Run(inputs=[same], produced=[[(_Buf(200), None)]], inferred=None)
        self.assertEqual(cv._contract_problems(info, "c", moved),
                         ["c: output y is declared as input acc's buffer but is not"])
        for produced, inputs in (([[]], [same]), ([[(_Buf(100), None)]], [[]])):
            with self.subTest(produced=produced, inputs=inputs):
                res = _Run(inputs=inputs, produced=produced)
                self.assertEqual(cv._contract_problems(info, "c", res),
                                 ["c: output y is declared as input acc's buffer but is not"])
        other = _Run(inputs=[same], produced=[[(_Buf(100, shape=(3,)), None)]],
                     inferred=[[(0, [2])]])
        self.assertEqual(cv._contract_problems(info, "c", other),
                         ["c: output y: infer_meta said float32[2], execute produced float32[3]"])


class GeStatusRulesTest(unittest.TestCase):
    """What serves `import ge` (host.ge_status_lines): a CANN ge imported
    before the load, nothing without a bridge, libpyop's package, a ge
    installed beside it."""

    def setUp(self):
        self.saved = {n: sys.modules.get(n) for n in ("ge", "pyop._ge_link")}
        self.addCleanup(self._restore)

    def _restore(self):
        for n, m in self.saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m

    def test_lines(self):
        host = _cli("host")
        cann = type(sys)("ge")
        cann.__file__ = "/cann/ge/__init__.py"
        sys.modules["ge"] = cann
        self.assertEqual(len(host.ge_status_lines()), 1)
        self.assertIn("a CANN `ge` package is already imported (/cann/ge/__init__.py)",
                      host.ge_status_lines(False)[0])
        ours = type(sys)("ge")
        ours.__pyop_ge__ = True
        sys.modules["ge"] = ours
        self.assertIn("no bridge is loaded", host.ge_status_lines(False)[0])
        link = type(sys)("pyop._ge_link")
        link.shadowed = lambda: "/site/ge"
        sys.modules["pyop._ge_link"] = link
        lines = host.ge_status_lines()
        self.assertEqual(len(lines), 2)
        self.assertIn("libpyop's GE compatibility package", lines[0])
        self.assertIn("a `ge` package is installed at /site/ge", lines[1])
        link.shadowed = lambda: None
        self.assertEqual(len(host.ge_status_lines()), 1)  # ge imported: not looked up again

    def test_installed_ge_looked_up_when_none_is_imported(self):
        import importlib.util
        host = _cli("host")
        sys.modules.pop("ge", None)
        sys.modules.pop("pyop._ge_link", None)
        saved = importlib.util.find_spec
        asked = []

        def find(name, answer):
            asked.append(name)
            if isinstance(answer, Exception):
                raise answer
            return answer
        try:
            spec = type(sys)("spec")
            spec.origin = "/site/ge/__init__.py"
            importlib.util.find_spec = lambda name, *a: find(name, spec)
            lines = host.ge_status_lines()
            self.assertEqual(len(lines), 2, lines)
            self.assertIn("a `ge` package is installed at /site/ge/__init__.py", lines[1])
            self.assertEqual(asked, ["ge"])
            for answer in (None, ValueError("ge.__spec__ is None"), ImportError("no")):
                importlib.util.find_spec = lambda name, *a: find(name, answer)
                self.assertEqual(len(host.ge_status_lines()), 1)
            ours = type(sys)("ge")
            ours.__pyop_ge__ = True
            sys.modules["ge"] = ours
            importlib.util.find_spec = lambda name, *a: find(name, spec)
            del asked[:]
            self.assertEqual(len(host.ge_status_lines()), 1)
            self.assertEqual(asked, [])  # libpyop's ge is imported: nothing looked up
        finally:
            importlib.util.find_spec = saved



class ConcurrencyInputsRulesTest(unittest.TestCase):
    """The concurrency run's inputs (check_cases.thread_inputs): thread 0
    the case's own, a sample's values rotated by t places (modulo their
    count), fresh values where a rotation changes nothing; and each
    thread's inputs run alone first (check_verdict._alone_runs)."""

    def test_rotations(self):
        cc = _cli("check_cases")
        case = cc.Case("s", [[(0, [3], [1.0, 2.0, 3.0])], [(0, [1], [7.0])], []], {}, "samples")
        self.assertIs(cc.thread_inputs(case, 0), case.inputs)
        self.assertEqual(cc.thread_inputs(case, 1)[0][0][2], [2.0, 3.0, 1.0])
        self.assertEqual(cc.thread_inputs(case, 2)[0][0][2], [3.0, 1.0, 2.0])
        self.assertEqual(cc.thread_inputs(case, 4)[0][0][2], [2.0, 3.0, 1.0])  # 4 = 3 + 1
        for t in (1, 3):
            got = cc.thread_inputs(case, t)
            self.assertEqual([len(slot) for slot in got], [1, 1, 0])
            self.assertEqual(got[1][0][:2], (0, [1]))
            self.assertNotEqual(got[1][0][2], [7.0])  # one element: fresh values
        self.assertNotEqual(cc.thread_inputs(case, 3)[0][0][2], [1.0, 2.0, 3.0])  # a full turn
        gen = cc.Case("g", [[(0, [3], [1.0, 2.0, 3.0])]], {}, "generated")
        self.assertNotIn(cc.thread_inputs(gen, 1)[0][0][2], ([1.0, 2.0, 3.0], [2.0, 3.0, 1.0]))
        self.assertNotEqual(cc.thread_inputs(gen, 1), cc.thread_inputs(gen, 2))

    def test_alone_runs(self):
        cv, cc, errors = _cli("check_verdict"), _cli("check_cases"), _cli("errors")
        info = _info()
        case = cc.Case("s", [[(0, [2], [1.0, 2.0])]], {}, "samples")

        class Inst:
            def __init__(self, answers):
                self.answers, self.given = list(answers), []

            def run(self, inputs):
                self.given.append(inputs)
                a = self.answers.pop(0)
                if isinstance(a, Exception):
                    raise a
                return a
        ok = _Res([[b"y"]])
        ok.error = None
        failed = _Res(None)
        failed.error = errors.CliError("refused", "PYOP_EPYTHON")
        inst = Inst([ok, ok])
        variants, alone, why = cv._alone_runs(inst, info, case, 2)
        self.assertIsNone(why)
        self.assertEqual(variants, [case.inputs, cc.thread_inputs(case, 1)])
        self.assertEqual(alone, [{"output y": b"y"}, {"output y": b"y"}])
        # thread 1's own values fail: it runs the case's instead
        inst = Inst([ok, failed, ok])
        variants, _, why = cv._alone_runs(inst, info, case, 2)
        self.assertEqual((variants[1], why), (case.inputs, None))
        inst = Inst([ok, errors.CliError("no", "PYOP_EINVAL"), ok])
        self.assertEqual(cv._alone_runs(inst, info, case, 2)[0][1], case.inputs)
        inst = Inst([failed, failed])
        self.assertEqual(cv._alone_runs(inst, info, case, 2),
                         (None, None, "the case no longer runs on a fresh instance: refused"))
        inst = Inst([errors.CliError("a", "PYOP_EINVAL"), errors.CliError("b", "PYOP_EINVAL")])
        self.assertEqual(cv._alone_runs(inst, info, case, 1)[2],
                         "the case no longer runs on a fresh instance: infer_meta refused it")


class CheckExitRulesTest(unittest.TestCase):
    """How `pyop check` ends on what its workers said (check.cmd_check): an
    interrupt is an interrupt, a worker's fatal usage error exit 2, any
    other fatal error exit 1 with its status and op; and a worker that
    cannot be started (supervise.spawn)."""

    def _check(self, **state):
        import argparse
        check = _cli("check")

        class Sup:
            def __init__(self, lib, args, job, limit):
                self.warnings, self.interrupted, self.fatal = [], None, None
                self.__dict__.update(state)

            def run(self):
                pass
        saved = check.Supervisor, check._job
        check.Supervisor = Sup
        check._job = lambda lib, args: {"skipped": []}
        try:
            return check.cmd_check(None, argparse.Namespace())
        finally:
            check.Supervisor, check._job = saved

    def test_fatal_and_interrupted(self):
        errors = _cli("errors")
        error = {"message": "bad --attr", "status": "usage", "op": "Op"}
        with self.assertRaises(errors.UsageError) as cm:
            self._check(fatal={"exit": 2, "error": error})
        self.assertEqual((cm.exception.exit_code, cm.exception.op), (2, "Op"))
        error = {"message": "it broke", "status": "PYOP_EINTERNAL", "op": None}
        with self.assertRaises(errors.CliError) as cm:
            self._check(fatal={"exit": 1, "error": error})
        self.assertEqual((cm.exception.exit_code, cm.exception.status, cm.exception.message),
                         (1, "PYOP_EINTERNAL", "it broke"))
        self.assertNotIsInstance(cm.exception, errors.UsageError)
        with self.assertRaises(KeyboardInterrupt) as cm:
            self._check(interrupted="execute of \"Slow\"",
                        fatal={"exit": 1, "error": error})
        self.assertEqual(str(cm.exception), 'execute of "Slow"')

    def test_worker_that_cannot_start(self):
        sv, errors = _cli("supervise"), _cli("errors")
        fds = []
        with self.assertRaises(errors.CliError) as cm:
            sv.spawn(lambda fd: fds.append(fd) or ["/nowhere/python9"])
        self.assertEqual(cm.exception.status, "PYOP_ENOENT")
        self.assertIn("cannot start the worker process", cm.exception.message)
        with self.assertRaises(OSError):
            os.fstat(fds[0])  # the pipe's ends are closed



def _doctor_rep(**kw):
    """A doctor report as doctor_report makes it."""
    rep = {"python": {"executable": "/py/bin/python3", "version": "3.12.4",
                      "build_python": "/usr/bin/python3.12", "is_build_python": True,
                      "numpy": {"importable": True, "version": "2.0", "error": None},
                      "sys_path": [{"path": "/lib/py", "site_packages": False},
                                   {"path": "/lib/site-packages", "site_packages": True}]},
           "runtime_key": "cp312-x", "runtime": "CPython 3.12", "opp_path": "/ops",
           "path": [{"element": "/ops", "verdict": "python-dir", "detail": None},
                    {"element": "rel", "verdict": "relative", "detail": "refused"}],
           "artifacts": "/art",
           "candidates": [{"dir": "/art/cp312", "status": "loaded", "reason": None},
                          {"dir": "/art/cp311", "status": "ABI rejected", "reason": "too old"}],
           "bridge": {"loaded": True, "detail": "/art/cp312"}, "ge": ["ge: line"],
           "start_python": {"libpython": "/lib/libpython3.12.so", "verdict": "present",
                            "artifact": "cp312", "default": "cp312", "note": None},
           "load": {"status": "ok", "ops": ["A", "B"], "error": None}, "lanes_asked": 0,
           "plugins": [], "implementations": []}
    rep.update(kw)
    return rep


class PrintDoctorRulesTest(unittest.TestCase):
    """doctor's text (doctor.print_doctor), each line that depends on the
    report: the Python, the path, candidates, start_python, the load,
    lanes and their memory, plugins and implementations."""

    def _lines(self, rep):
        import contextlib
        import io
        out = io.StringIO()
        with _Env(None), contextlib.redirect_stdout(out):
            _cli("doctor").print_doctor(rep)
        return out.getvalue().splitlines()

    def test_the_usual_report(self):
        lines = self._lines(_doctor_rep())
        self.assertEqual(lines[:6], ["python: /py/bin/python3 (Python 3.12.4)",
                                     "  the build's Python (what a C host with start_python "
                                     "runs)",
                                     "  numpy: importable (2.0)", "  sys.path:", "    /lib/py",
                                     "    /lib/site-packages  (site-packages)"])
        for line in ("runtime key: cp312-x (CPython 3.12)", "ASCEND_CUSTOM_OPP_PATH=/ops",
                     "  /ops: python-dir", "  rel: relative: refused", "artifacts: /art",
                     "  /art/cp312: loaded", "  /art/cp311: ABI rejected: too old",
                     "bridge: loaded /art/cp312", "ge: line",
                     "start_python would load: /lib/libpython3.12.so (present)",
                     "load: ok, 2 ops registered"):
            self.assertIn(line, lines)
        self.assertTrue(any(t.startswith("lanes: none asked for") for t in lines))

    def test_other_python_and_missing_parts(self):
        py = dict(_doctor_rep()["python"], is_build_python=False,
                  numpy={"importable": False, "version": None, "error": "ImportError: no"})
        lines = self._lines(_doctor_rep(
            python=py, runtime_key=None, opp_path=None, path=[], path_error="bad path",
            bridge={"loaded": False, "detail": "not loaded"},
            start_python={"libpython": None, "verdict": "unknown", "artifact": "cp313",
                          "default": "cp312", "note": "lanes: a note"}))
        self.assertTrue(lines[1].startswith("  NOT the build's Python /usr/bin/python3.12, "),
                        lines)
        for line in ("  numpy: not importable: ImportError: no", "runtime key: none (CPython 3.12)",
                     "ASCEND_CUSTOM_OPP_PATH=(unset)", "  error: bad path", "bridge: not loaded",
                     "start_python would load: - (unknown), the bridge cp313", "  lanes: a note"):
            self.assertIn(line, lines)
        lines = self._lines(_doctor_rep(python=dict(py, build_python=None), bridge=None))
        self.assertFalse(any("build's Python" in t for t in lines[:2]), lines)
        self.assertFalse(any(t.startswith("bridge: ") for t in lines))

    def test_load_and_lanes(self):
        mb = 1048576
        lanes = [dict(_info(), op_type="A", lanes=2), dict(_info(), op_type="B",
                                                          serial_reason="stateful")]
        lines = self._lines(_doctor_rep(lanes_asked=2, lanes=lanes,
                                        lane_memory={"bytes_per_lane": 3 * mb, "why": None}))
        self.assertIn("lanes: 2 asked for (pyop_options.lanes); how each op runs:", lines)
        self.assertIn("  memory: each lane adds 3.0 MB (resident memory of this load minus the "
                      "same load without lanes, divided by 2)", lines)
        self.assertIn("  op A: parallel: 2 lanes", lines)
        self.assertIn("  op B: serial (main interpreter): stateful", lines)
        lines = self._lines(_doctor_rep(lanes_asked=2, lane_memory={"bytes_per_lane": 0,
                                                                     "why": None}))
        self.assertIn("  memory: each lane adds 0.0 MB (resident memory of this load minus the "
                      "same load without lanes, divided by 2)", lines)
        lines = self._lines(_doctor_rep(lanes_asked=2, lane_memory={"bytes_per_lane": None,
                                                                     "why": "no op runs in lanes"}))
        self.assertIn("  memory per lane: not measured: no op runs in lanes", lines)
        lines = self._lines(_doctor_rep(load={"status": "PYOP_EPLUGIN", "ops": [], "error": {
            "message": "plugin x failed\nTraceback"}}, lanes_asked=2))
        self.assertEqual(lines[-3:], ["load: FAILED (PYOP_EPLUGIN)", "  plugin x failed",
                                      "  Traceback"])
        self.assertFalse(any(t.startswith("lanes: ") for t in lines))

    def test_plugins_and_implementations(self):
        plugins = [{"plugin": "/ops/a.py", "verdict": "ok", "ops": ["A"], "pending": ["P"]},
                   {"plugin": "/ops/b.py", "verdict": "ok", "ops": [], "pending": []},
                   {"plugin": "/ops/c.py", "verdict": "failed",
                    "error": {"message": "SyntaxError: bad\nmore"}}]
        impls = [{"op_type": "P", "impl_source": "a.py:3", "pending": True, "legacy": False,
                  "capabilities": ["execute"], "ge": False},
                 {"op_type": "L", "impl_source": "l.py:1", "pending": False, "legacy": True,
                  "capabilities": ["execute"], "ge": True},
                 {"op_type": "G", "impl_source": "g.py:1", "pending": False, "legacy": False,
                  "capabilities": ["execute", "compile"], "ge": True},
                 {"op_type": "C", "impl_source": "c.py:1", "pending": False, "legacy": False,
                  "capabilities": ["compile"], "ge": False}]
        lines = self._lines(_doctor_rep(plugins=plugins, implementations=impls))
        self.assertIn("  plugin /ops/a.py: ok (A; waiting for a prototype: P)", lines)
        self.assertIn("  plugin /ops/b.py: ok (no ops)", lines)
        self.assertIn("  plugin /ops/c.py: FAILED: SyntaxError: bad", lines)
        tail = [t for t in lines if t.startswith("  op ")]
        self.assertEqual(len(tail), 4, tail)
        self.assertTrue(tail[0].startswith("  op P (a.py:3): implementation waiting for a "
                                           "prototype"), tail)
        self.assertTrue(tail[1].startswith("  op L (l.py:1): legacy execute(self, ctx)"), tail)
        self.assertTrue(tail[2].startswith("  op G (g.py:1): has compile"), tail)
        self.assertTrue(tail[2].endswith("(pyop_op_compile); CompilePlatformInfo queries need an "
                                         "NPU"), tail)
        self.assertTrue(tail[3].endswith("(pyop_op_compile)"), tail)



class AnnotationRulesTest(unittest.TestCase):
    """The implementation's annotations against the prototype
    (check_plugin.annotation_problems), read with the bridge's readers
    (pyop._signature, stood in for here): an input or attribute annotated
    as another kind or type; unannotated parameters, methods the op does
    not have and another bridge's readers are not compared."""

    def setUp(self):
        import inspect
        cp = _cli("check_plugin")
        saved_sig, saved_impl = sys.modules.get("pyop._signature"), cp.impl_class
        self.addCleanup(self._restore, cp, saved_sig, saved_impl)

        class Impl:
            def execute(self, x: "list", b, xs: "object", *, n: "float", k: "int",
                        other: "str"):
                pass

            def compile(self, x: "object"):
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
        sig._attr_type = lambda ann: {"int": 1, "float": 2, "str": 4}.get(ann)
        sys.modules["pyop._signature"] = sig
        cp.impl_class = lambda info: Impl
        self.cp, self.sig, self.Impl = cp, sig, Impl

    def _restore(self, cp, sig, impl):
        cp.impl_class = impl
        if sig is None:
            sys.modules.pop("pyop._signature", None)
        else:
            sys.modules["pyop._signature"] = sig

    def _info(self, caps=("infer_meta", "execute")):
        info = _info(inputs=(("x", "required"), ("b", "optional"), ("xs", "dynamic")),
                     attrs=({"name": "n", "type": "int"}, {"name": "k", "type": "int"}))
        return dict(info, impl_key="pyop:op", capabilities=list(caps))

    def test_problems(self):
        got = self.cp.annotation_problems(self._info())
        self.assertEqual(len(got), 3, got)
        self.assertIn("execute() (", got[0])
        self.assertTrue(got[0].endswith(": parameter x is annotated list (a dynamic input), but "
                                        "the prototype's input x is required (one tensor)"), got)
        self.assertTrue(got[1].endswith(": parameter xs is annotated object (a required input), "
                                        "but the prototype's input xs is dynamic (a list of "
                                        "tensors)"), got)
        self.assertTrue(got[2].endswith(": attribute n is annotated float, but the prototype's n "
                                        "is int (the host passes a int)"), got)
        # compile's x is annotated as a single input, as the prototype says
        self.assertEqual(len(self.cp.annotation_problems(self._info(("execute", "compile")))), 3)
        self.assertEqual(self.cp.annotation_problems(self._info(("infer_meta",))), [])
        self.Impl.compile.__annotations__["x"] = "list"
        got = self.cp.annotation_problems(self._info(("compile",)))
        self.assertEqual(len(got), 1)
        self.assertTrue(got[0].startswith("compile() ("), got)

    def test_an_annotation_with_no_attribute_type_not_compared(self):
        """An attribute annotated with something pyop has no attribute type
        for (its reader gives None, or a type the command does not know) is
        not compared with the prototype: no problem is reported for it, only
        for the attribute annotated as another type (batch 13's survivor
        cli.b13.check_plugin.unknown_annotation_flagged)."""
        self.Impl.execute.__annotations__["k"] = "bytes"  # _attr_type: None
        got = self.cp.annotation_problems(self._info())
        self.assertEqual([g.split(": ", 1)[1] for g in got if "attribute" in g],
                         ["attribute n is annotated float, but the prototype's n is int "
                          "(the host passes a int)"])
        self.assertEqual(len(got), 3, got)
        self.sig._attr_type = lambda ann: {"float": 2, "bytes": 99}.get(ann)  # 99: no name
        got = self.cp.annotation_problems(self._info())
        self.assertEqual(len(got), 3, got)
        self.assertFalse([g for g in got if "attribute k" in g], got)

    def test_not_compared(self):
        cp = self.cp
        self.assertEqual(cp.annotation_problems(dict(self._info(), impl_key="ge:m:C:Op")), [])
        self.assertEqual(cp.annotation_problems(dict(self._info(), impl_key=None)), [])
        del self.sig._attr_type  # another bridge version
        self.assertEqual(cp.annotation_problems(self._info()), [])
        sys.modules.pop("pyop._signature")
        self.assertEqual(cp.annotation_problems(self._info()), [])
        self.assertEqual(cp._ann_text(int), "int")
        self.assertEqual(cp._ann_text("list[Tensor]"), "list[Tensor]")
        import typing
        self.assertEqual(cp._ann_text(typing.Optional[int]), "Optional[int]")



class InstanceRulesTest(unittest.TestCase):
    """What an instance says after a run (instance.py): a write outside a
    buffer the host gave, past its end, before its start or both; execute
    held to infer_meta's outputs; a launch-only op with a dynamic output."""

    def _inst(self, info):
        inst_mod = _cli("instance")
        inst = inst_mod.Instance.__new__(inst_mod.Instance)
        inst.info = info
        return inst_mod, inst

    def test_overruns(self):
        import argparse
        inst_mod, inst = self._inst(_info())
        res = inst_mod.RunResult.__new__(inst_mod.RunResult)
        res.error, res.failed, res.stages = None, None, []

        def bufs(*overruns):
            return argparse.Namespace(overruns=lambda: list(overruns))
        self.assertTrue(inst._finish(res, bufs()))
        past = "output y (8 bytes written past its end)"
        before = "input x (2 bytes written before its start)"
        for overruns, how in (((past,), "wrote past the end of"),
                              ((before,), "wrote before the start of"),
                              ((past, before), "wrote outside")):
            with self.subTest(overruns=overruns):
                res.error, res.failed, res.stages = None, None, ["infer_meta", "execute"]
                self.assertFalse(inst._finish(res, bufs(*overruns)))
                self.assertEqual(res.error.message, 'execute of "Op" %s %s'
                                 % (how, ", ".join(overruns)))
                self.assertEqual((res.error.status, res.error.op, res.failed),
                                 ("PYOP_ECONTRACT", "Op", "execute"))
        res.error, res.failed, res.stages = None, None, []
        self.assertFalse(inst._finish(res, bufs(past), what="the launch"))
        self.assertTrue(res.error.message.startswith("the launch wrote past the end of"))
        self.assertIsNone(res.failed)
        res.error, res.stages = None, []
        inst._finish(res, bufs(past))
        self.assertTrue(res.error.message.startswith('a call of "Op" wrote past'))
        res.error = _cli("errors").CliError("earlier", "PYOP_EPYTHON")
        self.assertFalse(inst._finish(res, bufs()))  # no overrun, but the run had failed

    def test_overrun_keeps_failed_stage(self):
        # a run already failed in compile whose guard zones then show a
        # write: the overrun is the error, the stage that failed stays
        import argparse
        inst_mod, inst = self._inst(_info())
        res = inst_mod.RunResult.__new__(inst_mod.RunResult)
        res.error = _cli("errors").CliError("compile failed", "PYOP_EINVAL")
        res.failed, res.stages = "compile", ["infer_meta", "compile", "declare_launch_args"]
        past = "output y (8 bytes written past its end)"
        self.assertFalse(inst._finish(res, argparse.Namespace(overruns=lambda: [past])))
        self.assertEqual(res.error.message,
                         'declare_launch_args of "Op" wrote past the end of ' + past)
        self.assertEqual((res.error.status, res.failed), ("PYOP_ECONTRACT", "compile"))

    def test_grow_short_lists(self):
        # after a failed infer_meta_list: only a list whose count is over
        # its room is grown (the call made again); one exactly full is not
        inst_mod = _cli("instance")
        binding = _cli("binding")
        lists = (binding.OutputList * 2)()
        items = [(binding.Tensor * 2)(), (binding.Tensor * 2)()]
        for k in range(2):
            lists[k].items, lists[k].capacity, lists[k].count = items[k], 2, 2
        keep = []
        self.assertFalse(inst_mod.grow_short_lists(lists, 2, keep))
        self.assertEqual(([(l.capacity, l.count) for l in lists], keep), ([(2, 2), (2, 2)], []))
        lists[1].count = 5
        self.assertTrue(inst_mod.grow_short_lists(lists, 2, keep))
        self.assertEqual([(l.capacity, l.count) for l in lists], [(2, 2), (5, 5)])
        self.assertEqual(len(keep), 1)
        self.assertEqual(len(keep[0]), 5)

    def test_held_to_infer_meta(self):
        inst_mod = _cli("instance")
        self.assertEqual(inst_mod._held_to_infer_meta("no y\nmore", {"proto_source": "p.py:3"}),
                         "no y\n(pyop holds execute to what infer_meta (p.py:3) returned for "
                         "these inputs)\nmore")
        self.assertEqual(inst_mod._held_to_infer_meta("no y", {}),
                         "no y\n(pyop holds execute to what infer_meta (the prototype) returned "
                         "for these inputs)")

    def test_launch_only_dynamic_output(self):
        errors = _cli("errors")
        _, inst = self._inst(_info(outputs=(("y", "required"), ("ys", "dynamic"))))
        with self.assertRaisesRegex(errors.CliError, 'op "Op": a launch-only op with a dynamic '
                                    'output cannot be run') as cm:
            inst._launch(None, 0, None, [], None, None)
        self.assertEqual((cm.exception.status, cm.exception.op), ("PYOP_EUNSUPPORTED", "Op"))



class _OpC:
    """The libpyop calls an Instance makes for one op of capability bits
    caps, each recorded by its stage name; fail: {stage: status} to
    refuse. Like libpyop, a launch runs only the plan declare_launch_args
    declared (PYOP_ESTATE without one)."""

    def __init__(self, caps, fail=()):
        self.caps, self.fail, self.calls, self.declared = caps, dict(fail), [], False

    def _call(self, stage):
        self.calls.append(stage)
        return self.fail.get(stage, 0)

    def pyop_op_create(self, *_):
        return 0

    def pyop_op_capabilities(self, _op):
        return self.caps

    def pyop_op_destroy(self, _op):
        pass

    def pyop_free(self, _p):
        pass

    def pyop_op_compile(self, *_):
        return self._call("compile")

    def pyop_op_declare_launch_args(self, *_):
        rc = self._call("declare_launch_args")
        self.declared = rc == 0
        return rc

    def pyop_op_execute_list(self, *_):
        return self._call("execute")

    def pyop_op_launch(self, *_):
        return self._call("launch") or (0 if self.declared else -9)


class _OpLib:
    """A Lib over _OpC: check raises PyopError on a non-zero status."""

    def __init__(self, c):
        self.c = c

    def check(self, what, rc):
        if rc != 0:
            raise _cli("errors").PyopError(what, "PYOP_ESTATE" if rc == -9 else "PYOP_EINVAL",
                                           "%s failed (%d)" % (what, rc))


class DeclareRulesTest(unittest.TestCase):
    """When an instance runs declare_launch_args (instance.py, prepare): in
    the default mode ("launch": run, bench) only when the kernel launch is
    the path that runs (declare_launch_args without execute), in "always"
    mode (check) whenever the op has it; what its failure does in each
    case; a launch-only op's run declares once, then launches the plan."""

    def _inst(self, caps, declare=None, fail=()):
        im = _cli("instance")
        lib = _OpLib(_OpC(caps, fail))
        info = _info(inputs=(("x", "required"),))
        inst = (im.Instance(lib, info, {}) if declare is None
                else im.Instance(lib, info, {}, declare=declare))
        self.addCleanup(inst.destroy)
        return im, inst, lib.c

    def _prepare(self, inst):
        res = _cli("instance").RunResult()
        res.keep = []
        ok = inst.prepare(None, 1, [(0, [2, 3])], res)
        return ok, res

    def test_decision_table(self):
        im = _cli("instance")
        E, C, L, I = im.CAP_EXECUTE, im.CAP_COMPILE, im.CAP_LAUNCH, im.CAP_INFER
        for declare in (None, "launch", "always"):
            for bits in range(16):
                caps = bits & (E | C | L | I)
                wanted = bool(caps & L) and (declare == "always" or not caps & E)
                with self.subTest(declare=declare, caps=caps):
                    _, inst, c = self._inst(caps, declare)
                    ok, res = self._prepare(inst)
                    self.assertTrue(ok)
                    want = (["compile"] if caps & C else []) + (
                        ["declare_launch_args"] if wanted else [])
                    self.assertEqual(c.calls, want)
                    self.assertEqual(res.stages, want)
                    self.assertIsNone(res.error)
                    self.assertIsNone(res.declare_error)

    def test_the_named_rows(self):
        # the rows a host meets: a launch-only op in run/bench's default
        # mode, and an op with both paths in check's "always" mode
        im = _cli("instance")
        _, inst, c = self._inst(im.CAP_INFER | im.CAP_LAUNCH)
        self.assertEqual(inst.declare, "launch")
        self._prepare(inst)
        self.assertEqual(c.calls, ["declare_launch_args"])
        _, inst, c = self._inst(im.CAP_EXECUTE | im.CAP_LAUNCH, "always")
        self._prepare(inst)
        self.assertEqual(c.calls, ["declare_launch_args"])
        _, inst, c = self._inst(im.CAP_EXECUTE | im.CAP_LAUNCH)
        self._prepare(inst)
        self.assertEqual(c.calls, [])

    def test_declare_failure(self):
        im = _cli("instance")
        E, L = im.CAP_EXECUTE, im.CAP_LAUNCH
        # launch-only: the run ends in declare_launch_args
        for declare in ("launch", "always"):
            with self.subTest(declare=declare):
                _, inst, c = self._inst(L, declare, fail={"declare_launch_args": -22})
                ok, res = self._prepare(inst)
                self.assertFalse(ok)
                self.assertEqual(res.failed, "declare_launch_args")
                self.assertEqual(res.error.message, 'declare_launch_args of "Op" failed (-22)')
                self.assertIsNone(res.declare_error)
        # both paths (check): kept aside, the op executes all the same
        _, inst, c = self._inst(E | L, "always", fail={"declare_launch_args": -22})
        ok, res = self._prepare(inst)
        self.assertTrue(ok)
        self.assertIsNone(res.error)
        self.assertIsNotNone(res.declare_error)
        self.assertEqual(res.declare_error.message, 'declare_launch_args of "Op" failed (-22)')
        # a failed compile ends the run before it
        _, inst, c = self._inst(im.CAP_COMPILE | L, fail={"compile": -22})
        ok, res = self._prepare(inst)
        self.assertFalse(ok)
        self.assertEqual((c.calls, res.failed), (["compile"], "compile"))

    def test_launch_only_run_declares_then_launches(self):
        im = _cli("instance")
        _, inst, c = self._inst(im.CAP_LAUNCH)
        x = [[(0, [2], [1.0, 2.0])]]
        res = inst.run(x)
        self.assertIsNone(res.error)
        self.assertEqual(res.ran, "launch")
        self.assertEqual(res.stages, ["declare_launch_args", "launch"])
        self.assertEqual(c.calls, ["declare_launch_args", "launch"])
        self.assertEqual([[v for _, v in o] for o in res.produced], [[[0.0, 0.0]]])
        # once per set of descriptions: the second run launches the plan
        res = inst.run(x)
        self.assertEqual(res.stages, ["launch"])
        self.assertEqual(c.calls, ["declare_launch_args", "launch", "launch"])
        # new descriptions are declared again
        res = inst.run([[(0, [3], [1.0, 2.0, 3.0])]])
        self.assertEqual(res.stages, ["declare_launch_args", "launch"])
        # through run_op (pyop run's path) as well
        lib = _OpLib(_OpC(im.CAP_LAUNCH))
        res = im.run_op(lib, _info(), x, {})
        self.assertEqual((res.error, res.stages), (None, ["declare_launch_args", "launch"]))
        # both paths in the default mode: execute, nothing declared
        _, inst, c = self._inst(im.CAP_EXECUTE | im.CAP_LAUNCH)
        res = inst.run(x)
        self.assertEqual((res.ran, c.calls), ("execute", ["execute"]))



def _entry(op_type="Op", status="ok", **kw):
    """One op's entry of check's report, as the worker makes it."""
    e = {"op_type": op_type, "status": status, "checked": ["infer_meta", "execute"],
         "inputs": "generated", "problems": [], "inconclusive": None, "why": None,
         "ran": ["float32[2,3]"], "refusals": [], "notes": [], "warnings": [],
         "stages": {"infer_meta": 2, "execute": 2}, "deterministic": True, "reference": None,
         "threads": 0}
    e.update(kw)
    return e


class CheckReportRulesTest(unittest.TestCase):
    """check's report and exit status (check._report): 0 when every op
    passed (infer-only ones too), 3 when one is inconclusive and none
    failed, 1 for a failure of any kind, each said on stderr."""

    def _report(self, ops=(), broken=(), load_error=None, wanted=(), json_out=False):
        import argparse
        import contextlib
        import io
        check, config = _cli("check"), _cli("config")
        sup = argparse.Namespace(ops=list(ops), broken=list(broken), load_error=load_error,
                                 warnings=[])
        out, err = io.StringIO(), io.StringIO()
        saved = config.BUILD_PYTHON
        config.BUILD_PYTHON = None
        try:
            with _Env(None), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = check._report(argparse.Namespace(json=json_out), {"ops": list(wanted)},
                                     sup)
        finally:
            config.BUILD_PYTHON = saved
        return code, out.getvalue().splitlines(), err.getvalue()

    def test_exit_status(self):
        code, out, err = self._report([_entry()])
        self.assertEqual((code, out[-1], err), (0, "1 op checked, 0 failed", ""))
        code, _, err = self._report([_entry(status="infer-only", ran=[])])
        self.assertEqual((code, err), (0, ""))
        code, out, err = self._report([_entry(), _entry("Late", "inconclusive",
                                                        inconclusive="nothing ran",
                                                        why="compile only", ran=[])])
        self.assertEqual(code, 3)
        self.assertEqual(err, "pyop: check: 1 of 2 ops inconclusive: Late (compile only)\n")
        self.assertEqual(out[-1], "2 ops checked, 0 failed, 1 inconclusive")
        code, out, err = self._report([_entry("Bad", "failed", problems=["c: it broke"]),
                                       _entry("Late", "inconclusive", why="x", ran=[])])
        self.assertEqual((code, err), (1, "pyop: check: 1 of 2 ops failed\n"))
        self.assertIn("    c: it broke", out)

    def test_each_kind_of_failure(self):
        code, out, err = self._report([_entry()], wanted=["Op", "Nope"])
        self.assertEqual((code, err), (1, "pyop: check: op(s) not found: Nope\n"))
        self.assertIn("Nope" + " " * 20 + " not found", out)
        # an op type is found by its whole name: "Op" is not "OpN"
        code, out, err = self._report([_entry("OpN")], wanted=["Op"])
        self.assertEqual((code, err), (1, "pyop: check: op(s) not found: Op\n"))
        code, out, err = self._report([_entry("OpN")], wanted=["Op"], json_out=True)
        self.assertEqual(__import__("json").loads("\n".join(out))["missing_ops"], ["Op"])
        code, out, err = self._report([])
        self.assertEqual((code, err), (1, "pyop: check: 0 ops checked\n"))
        code, out, err = self._report([_entry()], broken=[{"plugin": "/p/b.py",
                                                          "problem": "SyntaxError: x"}])
        self.assertEqual((code, err), (1, "pyop: check: 1 plugin failed to load\n"))
        self.assertEqual(out[-1], "1 op checked, 0 failed, 1 plugin failed to load")
        load = {"status": "PYOP_ECONFLICT", "message": "two define Op\nmore", "op": None}
        code, out, err = self._report([_entry()], load_error=load)
        self.assertEqual((code, err), (1, "pyop: check: the plugins do not load together: two "
                                          "define Op\n"))
        self.assertEqual(out[-1], "1 op checked, 0 failed, the plugins do not load together")
        self.assertIn("load of all plugins together: FAILED (PYOP_ECONFLICT)", out)
        # the same failure as a plugin's own: said once, with that plugin
        code, out, err = self._report([_entry()], load_error=load,
                                      broken=[{"plugin": "/p/b.py", "problem": "two define Op"}])
        self.assertEqual(err, "pyop: check: 1 plugin failed to load\n")
        self.assertFalse(any(t.startswith("load of all plugins") for t in out))
        errors = _cli("errors")
        with self.assertRaises(errors.CliError) as cm:
            self._report([], load_error=load)  # no op loaded at all: the command's error
        self.assertEqual((cm.exception.status, cm.exception.message),
                         ("PYOP_ECONFLICT", "two define Op\nmore"))

    def test_op_lines(self):
        check = _cli("check")
        r = _entry(deterministic=False, reference=(1e-5, 1e-8), threads=4)
        self.assertEqual(check._ran_line(r), "ran: infer_meta, execute on float32[2,3] (each "
                         "twice on one instance; nondeterministic: values not compared; compared "
                         "with the reference, rtol=1e-05 atol=1e-08, and from 4 threads at once)")
        self.assertEqual(check._ran_line(_entry(stages={"infer_meta": 1}, ran=["a", "b"])),
                         "ran: infer_meta on a, b")
        self.assertEqual(check._ran_line(_entry(stages={"launch": 1})),
                         "ran: launch on float32[2,3] (each twice on one instance)")
        # an op whose worker died has no verdict on determinism (None): not "nondeterministic"
        self.assertEqual(check._ran_line(_entry(deterministic=None)),
                         "ran: infer_meta, execute on float32[2,3] (each twice on one instance)")
        refusals = [{"case": "c1", "reason": "ValueError: no", "file": "/p/op.py", "line": 3},
                    {"case": "c2", "reason": "ValueError: other", "file": "/p/op.py", "line": 3},
                    {"case": "c3", "reason": "ValueError: no", "file": "/p/op.py", "line": 4},
                    {"case": "c4", "reason": "TypeError: t", "file": "/p/op.py", "line": 3}]
        self.assertEqual(check._refused_line({"refusals": refusals}),
                         "infer_meta refused: c1, c2 (ValueError: no, /p/op.py:3); c3 "
                         "(ValueError: no, /p/op.py:4); c4 (TypeError: t, /p/op.py:3)")
        lines = check._report_lines(_entry(refusals=refusals[:1], notes=["n"], warnings=["w"]))
        self.assertEqual([t.split(":")[0] for t in lines],
                         ["ran", "infer_meta refused", "note", "warning"])
        lines = check._report_lines(_entry(refusals=refusals[:1], ran=[], status="inconclusive",
                                           inconclusive="refused all"))
        self.assertEqual(lines, ["inconclusive: refused all"])  # the reason says the refusals
        lines = check._report_lines(_entry(status="infer-only", ran=[]))
        self.assertTrue(lines[0].startswith("infer-only: no implementation is loaded"), lines)



class TensorValuesRulesTest(unittest.TestCase):
    """A tensor the command makes from given values (values.make_tensor):
    the count held to the shape, at it and one off on each side; values at
    the data type's ends and one past; an int attribute at int64's ends."""

    def test_counts_and_ranges(self):
        values, errors, b = _cli("values"), _cli("errors"), _cli("binding")
        keep = []
        i8 = b.DTYPES.index("int8")
        t = values.make_tensor(values.Buffers.shared(keep), i8, [2], [-128, 127])
        self.assertEqual((values.read_values(t), values.tensor_repr(t)), ([-128, 127], "int8[2]"))
        for given, why in (([1], "1 value given for shape [2] (2 elements)"),
                           ([1, 2, 3], "3 values given for shape [2] (2 elements)"),
                           ([1, 128], "values 1,128 do not fit int8: "),
                           ([-129, 0], "values -129,0 do not fit int8: ")):
            with self.subTest(values=given):
                with self.assertRaises(errors.UsageError) as cm:
                    values.make_tensor(values.Buffers.shared(keep), i8, [2], given)
                self.assertTrue(cm.exception.message.startswith(why), cm.exception.message)
                self.assertEqual(cm.exception.exit_code, 2)
        empty = values.make_tensor(values.Buffers.shared(keep), i8, [0, 3], [])
        self.assertEqual((values.read_values(empty), values.tensor_repr(empty)), ([], "int8[0,3]"))

    def test_int_attribute_ends(self):
        values, errors = _cli("values"), _cli("errors")
        self.assertEqual(values._attr_int64(values.INT64_MIN), values.INT64_MIN)
        self.assertEqual(values._attr_int64(values.INT64_MAX), values.INT64_MAX)
        for bad in (values.INT64_MAX + 1, values.INT64_MIN - 1):
            with self.assertRaises(errors.CliError) as cm:
                values._attr_int64(bad)
            self.assertEqual((cm.exception.status, cm.exception.message),
                             ("PYOP_EINVAL", "attribute value %d is outside int64" % bad))



class RunInWorkerRulesTest(unittest.TestCase):
    """run's and bench's exit status from their worker
    (supervise.run_in_worker, the worker's process stood in for): its own
    status once it said "done" (1 when that says none), else an error
    naming the step it was in; an interrupt ends with the worker's status
    when it said one, else it is the command's interrupt."""

    def _run(self, stream, interrupt=False):
        import argparse
        sv = _cli("supervise")
        saved = sv.spawn, sv.read_events, sv._signal
        argvs, signals = [], []

        def spawn(argv_of):
            rfd, wfd = os.pipe()
            argvs.append(argv_of(wfd))
            os.write(wfd, stream.encode())
            os.close(wfd)
            return _Ended(), rfd
        calls = []

        def read_events(proc, rfd, limit, on_event):
            calls.append(limit)
            if interrupt and len(calls) == 1:
                raise KeyboardInterrupt()
            return saved[1](proc, rfd, limit, on_event)
        sv.spawn, sv.read_events = spawn, read_events
        sv._signal = lambda proc, sig: signals.append(sig)
        try:
            code = sv.run_in_worker(argparse.Namespace(command="run", op="Op"),
                                    ["--lanes", "2", "run", "Op", "--json"], 7)
        finally:
            sv.spawn, sv.read_events, sv._signal = saved
        return code, argvs[0], calls, signals

    def test_status_of_the_worker(self):
        import signal
        sv, errors = _cli("supervise"), _cli("errors")
        code, argv, calls, _ = self._run('{"e": "activity", "stage": "execute", "op": "Op"}\n'
                                         '{"e": "done", "code": 3}\n')
        self.assertEqual((code, calls), (3, [7]))
        k = argv.index("run")
        self.assertEqual(argv[k - 2:], ["--lanes", "2", "run", "--_worker", argv[k + 2], "Op",
                                        "--json"])
        self.assertEqual(self._run('{"e": "done", "code": "3"}\n')[0], 1)
        self.assertEqual(self._run('{"e": "done"}\n')[0], 1)
        self.assertEqual(self._run('{"e": "done", "code": 0}\n')[0], 0)
        with self.assertRaises(errors.CliError) as cm:
            self._run('{"e": "activity", "stage": "compile", "op": "Op"}\n')
        self.assertTrue(cm.exception.message.startswith('compile of "Op" ended the process '
                                                        'running it: it exited with status 0'),
                        cm.exception.message)
        # interrupted: the worker is told, and its status is the command's once it says one
        code, _, calls, signals = self._run('{"e": "done", "code": 130}\n', interrupt=True)
        self.assertEqual((code, calls, signals), (130, [7, sv.STOP_GRACE], [signal.SIGINT]))
        with self.assertRaises(KeyboardInterrupt):
            self._run('{"e": "activity", "stage": "execute", "op": "Op"}\n', interrupt=True)

    def test_done_then_outlived_the_limit(self):
        # "done" said, then the worker did not end within its limit (stopped:
        # read_events answers None): the command did not finish, whatever
        # status the worker said
        sv, errors = _cli("supervise"), _cli("errors")
        saved = sv.read_events

        def outlived(proc, rfd, limit, on_event):
            saved(proc, rfd, limit, on_event)
            return None
        sv.read_events = outlived
        try:
            for stream in ('{"e": "done", "code": 0}\n', '{"e": "done"}\n'):
                with self.subTest(stream=stream):
                    with self.assertRaises(errors.CliError) as cm:
                        self._run('{"e": "activity", "stage": "execute", "op": "Op"}\n' + stream)
                    self.assertEqual(cm.exception.exit_code, 1)
                    self.assertTrue(cm.exception.message.startswith(
                        'execute of "Op" did not finish within 7 s (the per-call limit, '
                        '--timeout)'), cm.exception.message)
        finally:
            sv.read_events = saved



class ProtoRulesTest(unittest.TestCase):
    """--proto declarations turned into libpyop's structs (proto._op_info):
    an attribute type with no pyop form and a default that is no value of
    its type refused naming the file, line and attribute; and the bridge
    artifact whose REG_OP reader is used (proto._python_dir)."""

    def _decl(self, attrs):
        return {"op_type": "Op", "line": 4, "inputs": [("x", 0)], "outputs": [("y", 0)],
                "attrs": attrs}

    def test_attrs(self):
        proto, errors = _cli("proto"), _cli("errors")
        keep = []
        o = proto._op_info(self._decl([("n", 1, False, 3), ("m", 2, True, None)]), "/p/ops.h",
                           keep)
        self.assertEqual((o.op_type, o.n_inputs, o.n_outputs, o.n_attrs), (b"Op", 1, 1, 2))
        self.assertEqual((o.attrs[0].required, o.attrs[1].required), (False, True))
        self.assertEqual(_cli("binding").attr_value_to_py(o.attrs[0].default_value), 3)
        with self.assertRaises(errors.CliError) as cm:
            proto._op_info(self._decl([("t", 99, False, None)]), "/p/ops.h", keep)
        self.assertEqual((cm.exception.status, cm.exception.op, cm.exception.message),
                         ("PYOP_EDESCRIPTOR", "Op", "--proto /p/ops.h:4: REG_OP('Op') attr 't': "
                                                    "attribute type 99 has no pyop form"))
        with self.assertRaises(errors.CliError) as cm:
            proto._op_info(self._decl([("n", 1, False, 2.5)]), "/p/ops.h", keep)
        self.assertEqual(cm.exception.message, "--proto /p/ops.h:4: REG_OP('Op') ATTR('n'): "
                                               "default 2.5 is not an int")
        # a required attribute's default is not read
        proto._op_info(self._decl([("n", 1, True, 2.5)]), "/p/ops.h", keep)
        o = proto._op_info(dict(self._decl([]), line=None), "/p/ops.h", keep)
        self.assertEqual(o.n_attrs, 0)

    def test_dtype_constraints_per_slot(self):
        """Each input's and each output's constraint lands in its own slot,
        the arrays sized by their own count (two outputs after one input)."""
        proto = _cli("proto")
        keep = []
        d = dict(self._decl([]), inputs=[("x", 0)], outputs=[("y", 0), ("z", 0)],
                 input_dtypes=[(0x1, "T")], output_dtypes=[(0x1, "T"), (0x6, "")])
        o = proto._op_info(d, "/p/ops.h", keep)
        self.assertEqual((o.n_inputs, o.n_outputs), (1, 2))
        self.assertEqual((o.input_dtypes[0].mask, o.input_dtypes[0].symbol), (0x1, b"T"))
        self.assertEqual([(o.output_dtypes[k].mask, o.output_dtypes[k].symbol) for k in (0, 1)],
                         [(0x1, b"T"), (0x6, None)])
        o = proto._op_info(self._decl([]), "/p/ops.h", keep)  # no constraints: NULL arrays
        self.assertFalse(o.input_dtypes)
        self.assertFalse(o.output_dtypes)

    def test_reader_of_a_usable_artifact(self):
        import argparse
        proto, errors = _cli("proto"), _cli("errors")
        root = _tree(self, ["bad/python/ge/custom_op/host_proto.py", "bare/python/",
                            "good/python/ge/custom_op/host_proto.py"])

        def lib_of(cands):
            text = "artifacts: %s\ncandidates:\n" % root + "".join(
                "  %s: %s\n" % (os.path.join(root, d), st) for d, st in cands)
            return argparse.Namespace(doctor=lambda: text)
        got = proto._python_dir(lib_of([("bad", "ABI rejected"), ("bare", "untried"),
                                        ("good", "duplicate")]))
        self.assertEqual(got, os.path.join(root, "good", "python"))
        for status in ("untried", "loaded", "duplicate"):
            self.assertEqual(proto._python_dir(lib_of([("good", status)])),
                             os.path.join(root, "good", "python"))
        with self.assertRaises(errors.CliError) as cm:
            proto._python_dir(lib_of([("bad", "open failed"), ("bare", "loaded")]))
        self.assertEqual(cm.exception.status, "PYOP_ENOENT")
        self.assertIn("no bridge artifact for this Python has the REG_OP reader",
                      cm.exception.message)



class BenchBuffersRulesTest(unittest.TestCase):
    """bench's outputs (bench._reusing_ctx): one buffer per output index,
    reused while it is large enough, a larger one made when not; an output
    larger than PYOP_CLI_MAX_BYTES refused (at the limit allocated)."""

    def test_reused_and_refused(self):
        import ctypes
        bench, values, b = _cli("bench"), _cli("values"), _cli("binding")
        saved = os.environ.get("PYOP_CLI_MAX_BYTES")
        os.environ["PYOP_CLI_MAX_BYTES"] = "16"
        try:
            bufs = values.Buffers()
            ctx = bench._reusing_ctx(bufs)
            t = b.Tensor()

            def alloc(index, nbytes):
                t.nbytes, t.data = nbytes, None
                return ctx.alloc_output(None, index, ctypes.pointer(t)), t.data
            rc, first = alloc(0, 8)
            self.assertEqual(rc, 0)
            self.assertTrue(first)
            self.assertEqual(alloc(0, 8), (0, first))  # the same output: the same buffer
            self.assertEqual(alloc(0, 4), (0, first))
            rc, other = alloc(1, 8)
            self.assertNotEqual(other, first)  # another output: its own
            rc, grown = alloc(0, 16)  # at the limit: allocated, larger than the first
            self.assertEqual(rc, 0)
            self.assertNotEqual(grown, first)
            self.assertIsNone(bufs.refused)
            rc, _ = alloc(0, 0)
            self.assertEqual(rc, 0)
            self.assertEqual(alloc(0, 17)[0], 1)
            self.assertEqual(bufs.refused, "output 0 of 17 bytes refused: more than the 16 bytes "
                                           "the command allocates (PYOP_CLI_MAX_BYTES)")
        finally:
            if saved is None:
                os.environ.pop("PYOP_CLI_MAX_BYTES", None)
            else:
                os.environ["PYOP_CLI_MAX_BYTES"] = saved



class BenchTimingRulesTest(unittest.TestCase):
    """bench's timed calls (bench._time, with the op's call stood in for):
    the warm-up then --repeat interleaved rounds of --calls each (the
    warm-up at most 200 calls), and a call failing midway ends the command
    with libpyop's error and the output refused, when one was."""

    def _time(self, ex, calls=3, repeat=2, refused=None):
        import argparse
        bench, errors = _cli("bench"), _cli("errors")
        base_calls = []

        def check(what, rc):
            raise errors.PyopError(what, "PYOP_EPYTHON", "execute failed (%d)" % rc)
        lib = argparse.Namespace(c=argparse.Namespace(pyop_op_capabilities=base_calls.append),
                                 check=check)
        args = argparse.Namespace(op="Op", calls=calls, repeat=repeat)
        bufs = argparse.Namespace(refused=refused)
        got = bench._time(lib, args, "op-handle", ex, ("a", 1), bufs, False)
        return got, base_calls

    def test_rounds(self):
        seen = []
        (ex_t, base_t), base_calls = self._time(lambda *a: seen.append(a) or 0)
        self.assertEqual((len(ex_t), len(base_t)), (2, 2))
        self.assertEqual(ex_t, sorted(ex_t))
        self.assertEqual((len(seen), len(base_calls)), (3 + 2 * 3, 3 + 2 * 3))
        self.assertEqual(seen[0], ("a", 1))
        self.assertEqual(set(base_calls), {"op-handle"})
        seen = []
        self._time(lambda *a: seen.append(a) or 0, calls=250, repeat=1)
        self.assertEqual(len(seen), 200 + 250)  # the warm-up: 200 calls at most

    def test_failure_midway(self):
        errors = _cli("errors")
        n = []

        def ex(*a):
            n.append(1)
            return -6 if len(n) == 5 else 0
        with self.assertRaises(errors.PyopError) as cm:
            self._time(ex, refused="output 0 of 17 bytes refused")
        self.assertEqual(cm.exception.message, "execute failed (-6) (output 0 of 17 bytes "
                                               "refused)")
        with self.assertRaises(errors.PyopError) as cm:
            self._time(lambda *a: -6)
        self.assertEqual(cm.exception.message, "execute failed (-6)")



class SecondRunRulesTest(unittest.TestCase):
    """A case run twice on one instance (check_verdict._Run.again): the
    second run failing, breaking the contract, or differing from the first
    is a problem named as the second run's; a difference is none for a
    nondeterministic op."""

    def _again(self, second, deterministic=True):
        cv, cc = _cli("check_verdict"), _cli("check_cases")
        run = cv._Run(None, _info(), cv.Monitor(), deterministic, None)
        case = cc.Case("c", [[(0, [2], [1.0, 2.0])]], {}, "generated")

        class Inst:
            def run(self, inputs, stage=None):
                if isinstance(second, Exception):
                    raise second
                return second
        first = _Res([[b"ab"]])
        first.stages, first.guessed = ["execute"], False
        run.again(Inst(), case, first)
        return run

    def _res(self, data, error=None, after=None):
        r = _Res([[data]], after=after)
        r.stages, r.guessed, r.error, r.declare_error = ["execute"], False, error, None
        r.attrs_written, r.produced, r.inferred, r.inputs = [], None, None, []
        r.before = None
        return r

    def test_second_run(self):
        errors = _cli("errors")
        run = self._again(self._res(b"ab"))
        self.assertEqual((run.raw, run.first_ok.label), ([], "c"))
        self.assertEqual(run.v["stages"], {"execute": 1})
        run = self._again(self._res(b"ax"))
        self.assertEqual(len(run.raw), 1)
        self.assertTrue(run.raw[0][1].startswith("run twice on one instance with the same inputs, "
                                                 "output y differs from byte 1 ("), run.raw)
        self.assertIsNone(run.first_ok)
        run = self._again(self._res(b"ax"), deterministic=False)
        self.assertEqual((run.raw, run.first_ok.label), ([], "c"))
        run = self._again(errors.CliError("gone", "PYOP_EPYTHON"))
        self.assertEqual(run.raw[0][1], "the second run on the same instance failed: "
                                        "PYOP_EPYTHON: gone")
        run = self._again(self._res(b"ab", error=errors.CliError("no", "PYOP_ECONTRACT")))
        self.assertEqual(run.raw[0][1], "the first run succeeded, the second on the same "
                                        "instance failed: PYOP_ECONTRACT: no")
        res = self._res(b"ab")
        res.attrs_written = [("w", "execute")]
        run = self._again(res)
        self.assertEqual([t for _, t in run.raw], [
            "the second run on the same instance: attribute w (a Tensor attribute, read-only for "
            "the op) was written by execute"])
        self.assertIsNone(run.first_ok)



# ---- outcome pass, session 10: each branch's outcome asserted (mutants
# cli.out.* in tests/mutation/mutants.txt).

class SweepOutcomeTest(unittest.TestCase):
    """check's generated cases (check_cases.py) as an op author sees them:
    the data types chosen per input where the prototype declares them, a
    dynamic input's two tensors with values of their own, the attribute
    case moving every optional scalar off its default, the concurrency
    run's inputs that differ from the case's in every data type."""

    def _two_typed(self):
        info = _info(inputs=(("x", "required"), ("idx", "required")))
        info["inputs"][0]["dtypes"] = ["float16", "float32"]
        info["inputs"][1]["dtypes"] = ["int32", "int64"]
        return info

    def test_declared_dtypes(self):
        cc = _cli("check_cases")
        # int32 is idx's own, x takes the first of its own (float16): the same
        # choice as float16's, so one case; int64 likewise gives x float16.
        self.assertEqual(cc.sweep_dtypes(self._two_typed()),
                         [("float32", ("float32", "int32")), ("float16", ("float16", "int32")),
                          ("int64", ("float16", "int64"))])
        self.assertEqual(cc._short(self._two_typed(), "float16", ("float16", "int32"), [2, 3]),
                         "float16[2,3] (idx: int32)")
        self.assertEqual(cc._short(_info(), "float32", ("float32",), [2, 3]), "float32[2,3]")
        shorts = [c.short for c in cc.generated_cases(self._two_typed())]
        self.assertEqual(shorts[:3], ["float32[2,3] (idx: int32)", "float16[2,3] (idx: int32)",
                                      "int64[2,3] (x: float16)"])

    def test_dynamic_input_two_tensors(self):
        cc = _cli("check_cases")
        info = _info(inputs=(("xs", "dynamic"), ("b", "required")))
        base = cc.generated_cases(info, sweep=False)
        self.assertEqual(len(base), 1)
        xs, b = base[0].inputs
        self.assertEqual([(d, s) for d, s, _ in xs], [(0, [2, 3]), (0, [2, 3])])
        self.assertNotEqual(xs[0][2], xs[1][2])  # each tensor its own values
        self.assertEqual(len(b), 1)
        self.assertEqual(base[0].label, "inputs xs=2 x float32[2,3], b=float32[2,3]")
        # the same for an int type
        i32 = cc._make_case(info, [2, 1], {}, "int32", [2, 3], "generated", "s")
        self.assertNotEqual(i32.inputs[0][0][2], i32.inputs[0][1][2])
        self.assertNotEqual(i32.inputs[0][0][2], i32.inputs[1][0][2])

    def test_attribute_case_of_infinite_defaults(self):
        cc = _cli("check_cases")
        for d in (float("inf"), float("-inf"), float("nan")):
            with self.subTest(default=d):
                self.assertEqual(cc._other_value({"type": "float", "default": d}), 0.5)

    def test_attribute_case_leaves_required_attributes(self):
        cc = _cli("check_cases")
        attrs = ({"name": "flag", "type": "bool", "required": True, "default": None},)
        info = _info(attrs=attrs)
        self.assertIsNone(cc._attr_case(info, {"flag": False}, "float32", ("float32",)))
        cases = cc.generated_cases(info)
        self.assertTrue(all(c.attrs == {"flag": False} for c in cases), [c.attrs for c in cases])
        attrs += ({"name": "k", "type": "int", "required": False, "default": 2},)
        case = cc._attr_case(_info(attrs=attrs), {"flag": False}, "float32", ("float32",))
        self.assertEqual(case.attrs, {"flag": False, "k": 3})

    def test_thread_inputs_of_every_kind(self):
        cc = _cli("check_cases")
        given = cc.Case("g", [[(0, [3], [1.0, 2.0, 3.0])]], {}, "given")
        self.assertEqual(cc.thread_inputs(given, 1)[0][0][2], [2.0, 3.0, 1.0])
        for dtype in ("int32", "bool", "float32", "uint8"):
            with self.subTest(dtype=dtype):
                case = cc._make_case(_info(), [1], {}, dtype, [2, 3], "generated", "s")
                own = case.inputs[0][0][2]
                # (bool has two patterns only: thread 2's are thread 0's again)
                for t in (1, 3) if dtype == "bool" else (1, 2, 3):
                    self.assertNotEqual(cc.thread_inputs(case, t)[0][0][2], own)


class RunCasesOutcomeTest(unittest.TestCase):
    """An op's verdict from its runs (check_verdict.run_cases), with the
    instance stood in for: what counts as ran, which case the concurrency
    run takes and when it runs at all, the warning of a mutated input no
    run wrote, a guessed description's note, failures grouped."""

    def setUp(self):
        self.cv, self.cc, self.errors = (_cli("check_verdict"), _cli("check_cases"),
                                         _cli("errors"))

    def _res(self, data=b"ab", stages=("execute",), guessed=False, error=None, before=None,
             after=None):
        r = _Res([[data]], after=after)
        r.stages, r.guessed, r.error, r.declare_error = list(stages), guessed, error, None
        r.attrs_written, r.inferred, r.inputs, r.before = [], None, [], before
        r.produced = [[(_Buf(1), None)]]
        r.ran = r.failed = "execute"
        return r

    def _run(self, info, cases, answer, threads=1, deterministic=True):
        """run_cases with Instance.run(inputs) answered by answer(inputs);
        returns (verdict, [(activity, case label)])."""
        cv = self.cv

        class Inst:
            def __init__(self, lib, info, attrs, declare=None):
                pass

            def run(self, inputs, stage=None):
                a = answer(inputs)
                if isinstance(a, Exception):
                    raise a
                return a

            def destroy(self):
                pass

        seen = []

        class Mon(cv.Monitor):
            def activity(self, what, case=None):
                seen.append((what, case.label if case else None))
        saved = cv.Instance
        cv.Instance = Inst
        try:
            v = cv.run_cases(None, info, cases, Mon(), deterministic, threads)
        finally:
            cv.Instance = saved
        return v, seen

    def _case(self, label, value=1.0, kind="generated"):
        return self.cc.Case(label, [[(0, [1], [value])]], {}, kind, short=label + "s")

    def test_ran_and_the_concurrency_case(self):
        a, b = self._case("A", 1.0), self._case("B", 2.0)
        v, seen = self._run(_info(), [a, b], lambda inputs: self._res(), threads=2)
        self.assertEqual((v["problems"], v["ran"], v["threads"]), ([], ["As", "Bs"], 2))
        # the first case that passed is the one run from several threads
        self.assertEqual(seen, [("run from 2 threads at once on one instance", "A")])
        # one thread: no concurrency run
        v, seen = self._run(_info(), [a, b], lambda inputs: self._res(), threads=1)
        self.assertEqual((v["threads"], seen), (0, []))
        # nothing ran (no stage): not listed as ran, never the concurrency case
        v, seen = self._run(_info(), [a], lambda inputs: self._res(stages=()), threads=2)
        self.assertEqual((v["ran"], v["stages"]), ([], {}))

    def test_no_concurrency_run_after_a_failure(self):
        a, b = self._case("A", 1.0), self._case("B", 2.0)
        err = self.errors.CliError("no output", "PYOP_ECONTRACT")

        def answer(inputs):
            return self._res(error=err) if inputs[0][0][2] == [1.0] else self._res()
        v, seen = self._run(_info(), [a, b], answer, threads=2)
        self.assertEqual(v["problems"], ["A: PYOP_ECONTRACT: no output"])
        self.assertEqual((v["threads"], seen), (0, []))
        self.assertEqual(v["ran"], ["As", "Bs"])

    def test_infer_meta_failure_counted(self):
        err = self.errors.CliError("bad shape", "PYOP_EPYTHON")
        err.stage = "infer_meta"
        v, _ = self._run(_info(), [self._case("A")], lambda inputs: err)
        self.assertEqual(v["stages"], {"infer_meta": 1})
        self.assertEqual(v["problems"], ["A: PYOP_EPYTHON: bad shape"])
        self.assertEqual(self.cv.op_status(dict(_info(), impl_key=None), v), "failed")
        other = self.errors.CliError("gone", "PYOP_EPYTHON")  # not infer_meta's
        v, _ = self._run(_info(), [self._case("A")], lambda inputs: other)
        self.assertEqual(v["stages"], {})

    def test_guessed_in_any_case_noted(self):
        a, b = self._case("A", 1.0), self._case("B", 2.0)
        v, _ = self._run(_info(), [a, b],
                         lambda inputs: self._res(guessed=inputs[0][0][2] == [1.0]))
        self.assertTrue(v["guessed"])
        self.assertEqual(len(v["notes"]), 1)
        self.assertTrue(v["notes"][0].startswith("no infer_meta:"), v["notes"])
        v, _ = self._run(_info(), [a, b], lambda inputs: self._res())
        self.assertEqual((v["guessed"], v["notes"]), (False, []))

    def test_mutated_input_warning_counts_runs_on_data(self):
        info = _info(inputs=(("acc", "required"),))
        info["inputs"][0]["mutated"] = True
        empty = self._case("E")

        def unwritten(before):
            return lambda inputs: self._res(before=[[before]], after=[[before]])
        # an empty tensor is no run that could write it: no warning
        v, _ = self._run(info, [empty], unwritten(b""))
        self.assertEqual(v["warnings"], [])
        v, _ = self._run(info, [empty, self._case("F", 2.0)], unwritten(b"\0\0\0\0"))
        self.assertEqual(v["warnings"], [
            "input acc is declared in mutates_args, but none of the 2 runs wrote it: if "
            "execute never writes it, drop it from mutates_args"])
        # a case that failed ran nothing to count: no warning either
        err = self.errors.CliError("no output", "PYOP_ECONTRACT")
        v, _ = self._run(info, [empty], lambda inputs: self._res(error=err))
        self.assertEqual(v["warnings"], [])
        v, _ = self._run(info, [empty], lambda inputs: self._res(before=[[b"\0"]],
                                                                 after=[[b"\1"]]))
        self.assertEqual((v["warnings"], v["problems"]), ([], []))

    def test_grouped_failures(self):
        cc, cv = self.cc, self.cv
        a, b, c = (cc.Case(n, [], {}, "sweep", short=n + "s") for n in ("A", "B", "C"))
        self.assertEqual(cv._grouped([(a, "y is float32[2,3]"), (b, "y is int8[0,3]"),
                                      (c, "y is bool[4,1]")]),
                         ["A: y is float32[2,3]\n(the same failure with Bs, Cs)"])
        # digits of a name or a source line are not masked: other failures
        for one, two in (('File "op.py", line 12', 'File "op.py", line 13'),
                         ("at op.py:12", "at op.py:13"), ("output y1", "output y2")):
            with self.subTest(one=one):
                self.assertEqual(cv._grouped([(a, one), (b, two)]),
                                 ["A: " + one, "B: " + two])

    def test_npu_note_only_beside_execute(self):
        cv = self.cv
        v = cv._new_verdict()
        v["npu"] = [("declare_launch_args", "A", "needs an NPU")]
        cv._notes(_info(), v)
        self.assertEqual(v["notes"], [])
        v = cv._new_verdict()
        v["npu"] = [("declare_launch_args", "A", "needs an NPU"), ("execute", "B", "x"),
                    ("declare_launch_args", "C", "other")]
        v["stages"] = {"execute": 1}
        cv._notes(_info(), v)
        self.assertEqual(v["notes"], ["declare_launch_args ran on 2 cases and stopped where it "
                                      "needs an NPU (needs an NPU): the launch path is not "
                                      "checked here; execute ran"])

    def test_dynamic_input_written_names_its_first_tensor(self):
        cv = self.cv
        info = _info(inputs=(("xs", "dynamic"),))
        res = _Run(before=[[b"a", b"b"]], after=[[b"A", b"b"]])
        self.assertEqual(cv._contract_problems(info, "c", res),
                         ["c: input xs[0] was written, but it is not declared in mutates_args"])



class OtherLayerKeySurvivorTest(unittest.TestCase):
    """An implementation key starting with "ge" is not GE's unless it is
    "ge:...": a layer registering through pyop.ext makes keys of its own
    ("gemm:...", "geo:..."; docs/design.md, "Identity"). A
    NotImplementedError raised by such a layer's library is the op's
    failure, not the place a GE op needs an NPU, and the advice for an op
    whose results vary is pyop's (batch 20's survivor
    cli.b20.check_plugin.ge_key_prefix)."""

    setUp = RunCasesOutcomeTest.setUp
    _res = RunCasesOutcomeTest._res
    _run = RunCasesOutcomeTest._run
    _case = RunCasesOutcomeTest._case

    def _failed_in_library(self, key):
        """The op's status and verdict when every case's declare_launch_args
        raised NotImplementedError inside a library (not the plugin's code)."""
        err = self.errors.CliError('declare_launch_args of "Op": NotImplementedError: '
                                   'no launch here', "PYOP_EPYTHON")
        err.origin = (("NotImplementedError",), "/site-packages/layer/args.py", 7,
                      "NotImplementedError: no launch here")

        def answer(inputs):
            r = self._res(stages=("infer_meta", "declare_launch_args"), error=err)
            r.ran, r.failed, r.produced = None, "declare_launch_args", None
            return r
        info = dict(_info(), impl_key=key, capabilities=["infer_meta", "declare_launch_args"])
        v, _ = self._run(info, [self._case("A")], answer)
        return self.cv.op_status(info, v), v

    def test_a_library_failure_of_another_layer_fails_the_op(self):
        cp = _cli("check_plugin")
        for key in ("gemm:ops.Gemm", "geo:ops:Rotate:Rotate"):
            with self.subTest(key=key):
                status, v = self._failed_in_library(key)
                self.assertEqual((status, v["npu"]), ("failed", []))
                self.assertIn('PYOP_EPYTHON: declare_launch_args of "Op": NotImplementedError',
                              v["problems"][0])
                self.assertNotIn("ge.custom_op", cp.nondeterministic_hint({"impl_key": key}))
        # GE's own key: libpyop's ge raising it is where the op needs an NPU
        status, v = self._failed_in_library("ge:ops:Op:Op")
        self.assertEqual((status, v["problems"], v["why"]),
                         ("inconclusive", [], "declare_launch_args needs an NPU"))
        self.assertIn("ge.custom_op", cp.nondeterministic_hint({"impl_key": "ge:ops:Op:Op"}))


class NullDataSurvivorTest(unittest.TestCase):
    """Nothing is read at address 0: a tensor with no data pointer (a
    description: an output never allocated) has no values to show
    (values.read_values), and a Tensor attribute whose address is 0 with a
    size (a GE-style description) is not watched (check_plugin.AttrWatch)
    but run through. In a child process, where a read of address 0 is the
    crash it would be in the command (batch 20's survivors
    cli.b20.values.null_data_read and cli.b20.check_plugin.null_attr_read;
    the command's own tensors always have memory, so only a direct call
    reaches them)."""

    def _child(self, code):
        import subprocess
        tools = _need("PYOP_TEST_TOOLS")
        script = "import sys; sys.path.insert(0, %r)\n" % tools + code
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, "the child ended with %d: %s"
                         % (p.returncode, p.stderr))
        return p.stdout.splitlines()

    def test_a_tensor_without_data_has_no_values(self):
        out = self._child(
            "from pyop_cli import binding, values\n"
            "t = binding.Tensor()\n"
            "t.dtype, t.ndim, t.nbytes = binding.DTYPES.index('float32'), 1, 16\n"
            "t.shape[0] = 4\n"  # data left NULL
            "print(values.read_values(t), values.tensor_repr(t))\n")
        self.assertEqual(out, ["[] float32[4]"])

    def test_an_attribute_at_address_0_is_not_read(self):
        out = self._child(
            "from pyop_cli import check_plugin as cp\n"
            "class Described:\n"  # ge.runtime.Tensor's fields: no memory, a size
            "    addr, size = 0, 16\n"
            "class Pyop:\n"  # pyop's: data_ptr, nbytes
            "    data_ptr, nbytes = 0, 16\n"
            "class Impl:\n"
            "    def execute(self, w):\n"
            "        pass\n"
            "Impl.__pyop_descriptor__ = type('Desc', (), {'key': 'pyop:w0:Impl'})()\n"
            "mod = type(sys)('_pyop_plugin_w0')\n"
            "mod.Impl = Impl\n"
            "sys.modules[mod.__name__] = mod\n"
            "print(cp.AttrWatch._region('w', Described()), cp.AttrWatch._region('w', Pyop()))\n"
            "with cp.AttrWatch({'impl_key': 'pyop:w0:Impl'}, ['w']) as watch:\n"
            "    Impl().execute(Described())\n"
            "print(sorted(watch.codes) == sorted([Impl.execute.__code__]), watch.written)\n")
        self.assertEqual(out, ["None None", "True []"])


class PyDirectorySurvivorTest(unittest.TestCase):
    """A directory named *.py is a directory of plugins, as libpyop's scan
    (src/scan.c) and the loader (pyop._loader.discover) take it: when the
    plugins' load together fails, check tries each of its plugins alone,
    as it does those of any directory (check_worker._plugin_entries; a real
    bug found with batch 20's survivor
    cli.b20.check_worker.py_package_dir_expanded: the directory was tried
    as one plugin, whose load found none, and the ops of its good plugins
    were never checked)."""

    def test_each_plugin_of_a_py_directory_tried_alone(self):
        import argparse
        cw = _cli("check_worker")
        root = _tree(self, ["ops.py/a.py", "ops.py/b.py", "ops.py/__init__.py",
                            "ops.py/_helper.py", "ops.py/pkg/__init__.py", "ops.py/plain/",
                            "c.py"])
        d = os.path.join(root, "ops.py")
        want = [os.path.join(d, n) for n in ("a.py", "b.py", "pkg")]
        self.assertEqual(cw._plugin_entries([d, os.path.join(root, "c.py")]),
                         want + [os.path.join(root, "c.py")])
        worker = cw.Worker(argparse.Namespace(), None,
                           {"done": [], "done_plugins": [want[1]], "ops": [], "paths": [d],
                            "given": True, "phase": "each", "compile_options": {}}, _Stream())
        alone = []
        worker._one_plugin = alone.append
        worker.run()
        self.assertEqual(alone, [want[0], want[2]])  # b.py: reported by an earlier worker


class Bfloat16EdgesOutcomeTest(unittest.TestCase):
    """The command's bfloat16 values (values._bf16_bits) at the edge of the
    subnormals: the smallest normal, the subnormals below it, read back as
    written."""

    def test_round_trip_at_the_smallest_normal(self):
        values, binding = _cli("values"), _cli("binding")
        bf16 = binding.DTYPES.index("bfloat16")
        for x, bits in ((2.0 ** -126, 0x0080), (1.5 * 2.0 ** -127, 0x0060),
                        (2.0 ** -127, 0x0040), (127 * 2.0 ** -133, 0x007F),
                        (-1.5 * 2.0 ** -127, 0x8060), (2.0 ** -133, 0x0001),
                        (1.5 * 2.0 ** -126, 0x00C0)):
            with self.subTest(x=x):
                raw = values.encode_values(bf16, [x])
                self.assertEqual(raw, struct.pack("<H", bits))
                self.assertEqual(values.decode_values(bf16, raw), [x])



class PluginIndexOutcomeTest(unittest.TestCase):
    """What check reads of the loaded plugins (check_plugin.py), with plugin
    modules stood in for under the loader's prefix: the index follows the
    modules loaded now (a reload's classes, never an unloaded plugin's), a
    placeholder None module is skipped, a file reached through a symlink is
    the plugin's own, a reference's default tolerances, a Tensor attribute
    written twice named once, an optional one watched as a required one."""

    def setUp(self):
        self.cp = _cli("check_plugin")
        self.cp.forget_plugins()
        self.names = []
        self.addCleanup(self._drop)

    def _drop(self):
        for n in self.names:
            sys.modules.pop(n, None)
        self.cp.forget_plugins()

    def _module(self, name, **objs):
        mod = type(sys)(name)
        for k, v in objs.items():
            setattr(mod, k, v)
        sys.modules[name] = mod
        self.names.append(name)
        return mod

    def _impl(self, key):
        desc = type("Desc", (), {"key": key})()
        return type("Impl", (), {"__pyop_descriptor__": desc})

    def test_index_follows_the_loaded_modules(self):
        cp = self.cp
        first = self._impl("pyop:a:Impl")
        self._module("_pyop_plugin_a", Impl=first)
        self.assertIs(cp.impl_class({"impl_key": "pyop:a:Impl"}), first)
        # the plugin unloaded and another loaded: its class, not the old one
        sys.modules.pop("_pyop_plugin_a")
        second = self._impl("pyop:a:Impl")
        self._module("_pyop_plugin_a", Impl=second)
        self.assertIs(cp.impl_class({"impl_key": "pyop:a:Impl"}), second)
        sys.modules.pop("_pyop_plugin_a")
        self.assertIsNone(cp.impl_class({"impl_key": "pyop:a:Impl"}))
        # a None placeholder under the prefix is no module
        sys.modules["_pyop_plugin_none"] = None
        self.names.append("_pyop_plugin_none")
        self.assertIsNone(cp.impl_class({"impl_key": "pyop:a:Impl"}))
        self.assertFalse(cp.in_plugin_code("/nowhere/x.py"))

    def test_in_plugin_code_through_a_symlink(self):
        cp = self.cp
        root = tempfile.mkdtemp(prefix="pyop_plugin_link_")
        self.addCleanup(lambda: __import__("shutil").rmtree(root))
        real = os.path.join(root, "real")
        os.mkdir(real)
        with open(os.path.join(real, "op.py"), "w") as f:
            f.write("# op\n")
        os.symlink(real, os.path.join(root, "link"))
        mod = self._module("_pyop_plugin_op")
        mod.__file__ = os.path.join(root, "link", "op.py")
        self.assertTrue(cp.in_plugin_code(os.path.join(real, "op.py")))
        self.assertTrue(cp.in_plugin_code(os.path.join(root, "link", "op.py")))
        self.assertFalse(cp.in_plugin_code(os.path.join(real, "other.py")))
        self.assertFalse(cp.in_plugin_code(""))

    def test_reference_default_tolerances(self):
        cp = self.cp

        def ref(x):
            return x
        ref.__pyop_reference__ = "Op"
        self._module("_pyop_plugin_ref", ref=ref)
        self.assertEqual(cp.find_reference({"op_type": "Op"}), (ref, (1e-5, 1e-8)))
        self.assertIsNone(cp.find_reference({"op_type": "Other"}))

    def test_attribute_written_twice_named_once(self):
        import ctypes
        cp = self.cp
        buf = ctypes.create_string_buffer(b"abcd", 4)

        class W:
            data_ptr, nbytes = ctypes.addressof(buf), 4

        class Impl:
            def execute(self, w):
                buf[0] = bytes([buf.raw[0] + 1])  # another byte each call
        Impl.__pyop_descriptor__ = type("Desc", (), {"key": "pyop:w:Impl"})()
        self._module("_pyop_plugin_w", Impl=Impl)
        with cp.AttrWatch({"impl_key": "pyop:w:Impl"}, ["w"]) as watch:
            Impl().execute(W())
            Impl().execute(W())
        self.assertEqual(watch.written, [("w", "execute")])

    def test_optional_tensor_attribute_watched(self):
        """Every Tensor attribute of the op is watched, the one with a
        default as the required one: an implementation writing into the
        bytes of an optional Tensor attribute is named, no other kind of
        attribute is watched (batch 21's survivor
        cli.b21.check_plugin.optional_tensor_attrs_unwatched)."""
        import ctypes
        cp = self.cp
        info = {"impl_key": "pyop:opt:Impl", "attrs": [
            {"name": "w", "type": "Tensor", "required": True},
            {"name": "bias", "type": "Tensor", "required": False},
            {"name": "n", "type": "int", "required": False}]}
        names = cp.tensor_attrs(info)
        self.assertEqual(names, ["w", "bias"])
        bufs = {n: ctypes.create_string_buffer(b"abcd", 4) for n in ("w", "bias")}

        def view(n):
            return type("V", (), {"data_ptr": ctypes.addressof(bufs[n]), "nbytes": 4})()

        class Impl:
            def execute(self, w, bias):
                bufs["bias"][2] = b"z"  # the optional attribute's bytes only
        Impl.__pyop_descriptor__ = type("Desc", (), {"key": "pyop:opt:Impl"})()
        self._module("_pyop_plugin_opt", Impl=Impl)
        with cp.AttrWatch(info, names) as watch:
            Impl().execute(view("w"), view("bias"))
        self.assertEqual(watch.written, [("bias", "execute")])

    def test_a_ge_implementations_attribute_watched(self):
        """A GE implementation's Tensor attribute is a ge.runtime.Tensor
        (its bytes at addr, size of them): a write into it is seen as one
        into pyop's view (data_ptr, nbytes) is (batch 13's survivor
        cli.b13.check_plugin.ge_attr_unwatched)."""
        import ctypes
        cp = self.cp
        buf = ctypes.create_string_buffer(b"abcd", 4)

        class GeTensor:  # ge.runtime.Tensor's fields: no data_ptr
            addr, size = ctypes.addressof(buf), 4

        class GeImpl:
            def execute(self, w):
                buf[1] = b"z"
        desc = _Desc(op_type="GeW")
        GeImpl.__ge_op_impl_descriptor__ = desc
        GeImpl.__module__ = "_pyop_plugin_gew"
        self._module("_pyop_plugin_gew", GeImpl=GeImpl)
        info = {"impl_key": cp._ge_key(GeImpl, desc)}
        self.assertIs(cp.impl_class(info), GeImpl)
        self.assertEqual(cp.AttrWatch._region("w", GeTensor()),
                         ("w", ctypes.addressof(buf), 4, b"abcd"))
        with cp.AttrWatch(info, ["w"]) as watch:
            GeImpl().execute(GeTensor())
        self.assertEqual(watch.written, [("w", "execute")])
        self.assertEqual(buf.raw, b"azcd")



class CheckScanOutcomeTest(unittest.TestCase):
    """The elements check's workers load (check._scanned): each verdict
    libpyop's scan skips is skipped, the others taken in order, and
    ASCEND_CUSTOM_OPP_PATH is as it was afterwards, unset included; an
    implementation-only op's line says so."""

    def test_skipped_verdicts_and_the_variable_left_alone(self):
        check = _cli("check")
        elements = [("/a", "python-dir", None), ("rel", "relative", "refused"),
                    ("/u", "unreadable", "EACCES"), ("/t", "not-python", "no .py files"),
                    ("/m", "missing-dir", None), ("/b.py", "python-file", None)]
        for before in (None, "/before"):
            with self.subTest(before=before):
                with _Env(before):
                    taken, skipped = check._scanned(_DoctorLib(elements), "/a:rel:/u:/t:/m:/b.py")
                    self.assertEqual(os.environ.get("ASCEND_CUSTOM_OPP_PATH"), before)
                self.assertEqual(taken, ["/a", "/b.py"])
                self.assertEqual(skipped, [
                    "ASCEND_CUSTOM_OPP_PATH element 'rel' skipped: refused",
                    "ASCEND_CUSTOM_OPP_PATH element '/u' skipped: EACCES",
                    "ASCEND_CUSTOM_OPP_PATH element '/t' skipped: no .py files",
                    "ASCEND_CUSTOM_OPP_PATH element '/m' skipped: missing-dir"])

    def test_implementation_only_line(self):
        import contextlib
        import io
        check = _cli("check")
        out = io.StringIO()
        entry = _entry(status="inconclusive", checked=[], pending=True, ran=[],
                       inconclusive="waits for a prototype", why="no prototype")
        with _Env(None), contextlib.redirect_stdout(out):
            check._print_text([entry, _entry("Q", status="inconclusive", checked=[], ran=[])],
                              [], None, [], [], None,
                              {"failed": 0, "inconclusive": 2, "infer-only": 0})
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0], "%-24s inconclusive (implementation only; generated)" % "Op")
        self.assertIn("%-24s inconclusive (nothing ran; generated)" % "Q", lines)



class RunInputsOutcomeTest(unittest.TestCase):
    """What `pyop run` says of the inputs it ran on (run._inputs_used):
    each tensor of a dynamic input by its index, its values as the op got
    them (before the call, not as a mutating op left them), generated or
    given per tensor; a relative plugin path is made absolute."""

    def test_inputs_used(self):
        import argparse
        run, values = _cli("run"), _cli("values")
        info = _info(inputs=(("xs", "dynamic"), ("acc", "required")))
        bufs = values.Buffers()
        xs = [values.make_tensor(bufs, 0, [2], [1.0, 2.0]),
              values.make_tensor(bufs, 0, [1], [0.0])]
        acc = values.make_tensor(bufs, 6, [2], [5, 6])
        before = [[values.encode_values(0, [1.0, 2.0]), values.encode_values(0, [0.0])],
                  [values.encode_values(6, [5, 6])]]
        values.write_values(acc, [7, 8])  # the op wrote it
        res = argparse.Namespace(inputs=[xs, [acc]], before=before)
        args = argparse.Namespace(input=["xs=float32[2]:1,2", "xs=float32[1]",
                                         "acc=int32[2]:5,6"])
        self.assertEqual(run._inputs_used(info, args, res), [
            {"name": "xs[0]", "dtype": "float32", "shape": [2], "values": [1.0, 2.0],
             "generated": False},
            {"name": "xs[1]", "dtype": "float32", "shape": [1], "values": [0.0],
             "generated": True},
            {"name": "acc", "dtype": "int32", "shape": [2], "values": [5, 6],
             "generated": False}])

    def test_relative_plugin_path_made_absolute(self):
        host = _cli("host")
        with _Env("/unchanged"):
            host.with_opp_path(["ops", "/b"])
            self.assertEqual(os.environ["ASCEND_CUSTOM_OPP_PATH"],
                             os.path.join(os.getcwd(), "ops") + ":/b")



class BenchResultOutcomeTest(unittest.TestCase):
    """What bench reports from its timings (bench._bench, the instance and
    the timing stood in for): the medians, their difference (execute minus
    the bare call), the attributes and inputs it ran with."""

    def _bench(self, attr=None):
        """bench._bench of a two-input op with attributes n (int, required)
        and f (float, default 1.0), --attr attr: (result, attrs, what the
        instance was made and run with)."""
        import argparse
        bench = _cli("bench")
        info = _info(inputs=(("x", "required"), ("y", "required")),
                     attrs=({"name": "n", "type": "int", "required": True, "default": None},
                            {"name": "f", "type": "float", "required": False, "default": 1.0}))
        made = []

        class Inst:
            def __init__(self, lib, info, attrs, declare="launch"):
                made.append(attrs)
                self.op = None

            def run(self, inputs, stage=None):
                made.append(inputs)
                return argparse.Namespace(error=None)

            def destroy(self):
                pass
        saved = bench.Instance, bench._timed_call, bench._time
        bench.Instance = Inst
        bench._timed_call = lambda *a: (None, (), None)
        # sorted per-call times: execute 1, 3, 9 us; the bare call 1, 2, 4 us
        bench._time = lambda *a: ([1e-6, 3e-6, 9e-6], [1e-6, 2e-6, 4e-6])
        try:
            result, attrs = bench._bench(argparse.Namespace(op_info=lambda op: info),
                                         argparse.Namespace(op="Op", input=None, attr=attr,
                                                            size=4, calls=10, repeat=3))
        finally:
            bench.Instance, bench._timed_call, bench._time = saved
        return result, attrs, made

    def test_medians_and_what_was_used(self):
        result, attrs, made = self._bench()
        self.assertEqual((result["execute_ns"], result["ctypes_call_ns"],
                          result["execute_minus_ctypes_ns"]), (3000.0, 2000.0, 1000.0))
        self.assertEqual((result["mode"], result["inputs"]),
                         ("execute", ["x=float32[4]", "y=float32[4]"]))
        # a required attribute gets a sample value; the optional keeps its default
        self.assertEqual(made[0], {"n": 1})
        self.assertEqual(attrs, {"n": 1})
        x, y = made[1]
        self.assertNotEqual(x[0][2], y[0][2])  # each input values of its own

    def test_attrs_given_are_the_ones_timed(self):
        """--attr values reach the timed instance, over the sample value of
        a required attribute and beside it."""
        result, attrs, made = self._bench(["f=2.5"])
        self.assertEqual(made[0], {"n": 1, "f": 2.5})
        result, attrs, made = self._bench(["n=7", "f=0.5"])
        self.assertEqual(made[0], {"n": 7, "f": 0.5})
        self.assertEqual(attrs, {"n": 7, "f": 0.5})


class InstanceDescsOutcomeTest(unittest.TestCase):
    """The output descriptions compile, declare_launch_args and a launch
    get (instance.Instance._descs): infer_meta's, float32[0] for a dynamic
    output it gave no tensor, else the first input's (guessed), float32[1]
    without inputs; guarded input buffers named per tensor of a dynamic
    input."""

    def _inst(self, outputs):
        im = _cli("instance")
        inst = im.Instance.__new__(im.Instance)
        inst.info = _info(outputs=outputs)
        return im, inst

    def test_descs(self):
        im, inst = self._inst((("y", "required"), ("zs", "dynamic")))
        res = im.RunResult()
        res.inferred = [[(6, [2, 3])], []]
        self.assertEqual(inst._descs(res, []), [(6, [2, 3]), (0, [0])])
        self.assertFalse(res.guessed)
        res = im.RunResult()
        self.assertEqual(inst._descs(res, [[], [(1, [4], [0] * 4)]]), [(1, [4]), (1, [4])])
        self.assertTrue(res.guessed)
        res = im.RunResult()
        self.assertEqual(inst._descs(res, []), [(0, [1]), (0, [1])])
        self.assertTrue(res.guessed)

    def test_input_guard_names(self):
        im, inst = self._inst((("y", "required"),))
        inst.info = _info(inputs=(("x", "required"), ("xs", "dynamic")))
        values = _cli("values")
        bufs, res = values.Buffers(), im.RunResult()
        res.keep = []
        inst._input_slots([[(0, [1], [1.0])], [(0, [1], [1.0]), (0, [1], [2.0])]], bufs, res)
        self.assertEqual([g[4] for g in bufs.guards], ["input x", "input xs[0]", "input xs[1]"])



class BindingOutcomeTest(unittest.TestCase):
    """What the binding reads of libpyop (binding.py): each capability by
    its own bit, an empty serial reason as none, an interrupt with no text
    named by the call, an unknown op told apart from one whose
    implementation waits for its prototype."""

    def _info(self, caps, serial=None):
        import ctypes
        b = _cli("binding")
        ins = (b.IoInfo * 1)((b"x", 0))
        outs = (b.IoInfo * 1)((b"y", 0))
        info = b.OpInfo(ctypes.sizeof(b.OpInfo), b"Op", b"pyop:op", b"op.py:1",
                        None, None, ins, 1, outs, 1, None, 0, caps, None, None)
        info.serial_reason = serial
        return b.info_to_dict(info)

    def test_capabilities_by_bit(self):
        for caps, want in ((0, []), (1, ["infer_meta"]), (2, ["execute"]), (4, ["compile"]),
                           (8, ["declare_launch_args"]), (5, ["infer_meta", "compile"]),
                           (10, ["execute", "declare_launch_args"]),
                           (15, ["infer_meta", "execute", "compile", "declare_launch_args"])):
            with self.subTest(caps=caps):
                self.assertEqual(self._info(caps)["capabilities"], want)

    def test_serial_reason(self):
        self.assertIsNone(self._info(3, b"")["serial_reason"])
        self.assertIsNone(self._info(3, None)["serial_reason"])
        self.assertEqual(self._info(3, b"stateful")["serial_reason"], "stateful")

    def test_interrupt_without_text(self):
        b = _cli("binding")
        lib = b.Lib.__new__(b.Lib)
        lib.c = _FakeC("PYOP_EINTR", "  \n")
        with self.assertRaises(KeyboardInterrupt) as cm:
            lib.check("execute of \"Slow\"", b.PYOP_EINTR)
        self.assertEqual(str(cm.exception), 'execute of "Slow"')

    def test_unknown_op_beside_a_pending_one(self):
        e = _op_info_error("Gelu", 'no op "Gelu" is registered; Gelu waits for its prototype',
                           ["Gelu"])
        self.assertIsNotNone(e)
        self.assertIn("give it its REG_OP with --proto FILE", e.message)
        self.assertEqual((e.status, e.op), ("PYOP_ENOENT", "Gelu"))
        e = _op_info_error("Relux", 'no op "Gelu" is registered; Gelu waits for its prototype',
                           ["Gelu"])
        self.assertIsNotNone(e)
        self.assertEqual(e.message, 'no op "Relux" is registered; did you mean "Relu"?')
        self.assertEqual((e.status, e.op), ("PYOP_ENOENT", "Relux"))


class ProtoOutcomeTest(unittest.TestCase):
    """--proto as the command handles it (proto.py): the bridge's packages
    are pyop and ge and their submodules only (never pyop_utils or
    gettext); the reader is imported for the reading and gone after it,
    sys.path as it was; a REG_OP declared twice is refused naming both
    places; an unusable one noted (quietly in a check worker); an unused
    one noted once, never when some load implemented it."""

    def setUp(self):
        self.proto = _cli("proto")
        saved = {n: m for n, m in sys.modules.items() if self.proto._ours(n)}
        for n in saved:
            del sys.modules[n]
        state = [set(x) if isinstance(x, set) else dict(x) for x in
                 (self.proto._declared, self.proto._unbound, self.proto._bound,
                  self.proto._noted)]

        def restore():
            sys.modules.update(saved)
            for cur, old in zip((self.proto._declared, self.proto._unbound, self.proto._bound,
                                 self.proto._noted), state):
                cur.clear()
                cur.update(old)
        self.addCleanup(restore)

    def test_ours(self):
        ours = self.proto._ours
        for name in ("pyop", "ge", "pyop.ext", "ge.custom_op", "ge.custom_op.host_proto"):
            self.assertTrue(ours(name), name)
        for name in ("pyop_utils", "gettext", "geometry", "pyopx.y", "my.ge", "numpy"):
            self.assertFalse(ours(name), name)

    def test_reader_imported_for_the_reading_only(self):
        import argparse
        root = _tree(self, ["a/python/ge/__init__.py", "a/python/ge/custom_op/__init__.py",
                            "a/python/ge/custom_op/host_proto.py", "ops.h"])
        with open(os.path.join(root, "a/python/ge/custom_op/host_proto.py"), "w") as f:
            f.write("class ReadError(Exception):\n    pass\n\n"
                    "class Decl:\n    def info(self):\n        return {'op_type': 'Op'}\n\n"
                    "def read(path):\n    return [Decl(), Decl()]\n")
        lib = argparse.Namespace(doctor=lambda: "artifacts: %s\ncandidates:\n  %s: untried\n"
                                 % (root, os.path.join(root, "a")))
        bystanders = {n: type(sys)(n) for n in ("pyop_utils", "gettext_x", "geo")}
        sys.modules.update(bystanders)
        self.addCleanup(lambda: [sys.modules.pop(n, None) for n in bystanders])
        path_before = list(sys.path)
        got = self.proto.read_declarations(lib, os.path.join(root, "ops.h"))
        self.assertEqual(got, [{"op_type": "Op"}, {"op_type": "Op"}])
        self.assertEqual(sys.path, path_before)
        self.assertEqual([n for n in sys.modules if self.proto._ours(n)], [])
        for n, m in bystanders.items():
            self.assertIs(sys.modules.get(n), m)

    def _register(self, decls_by_file, notes=True):
        import argparse
        import contextlib
        import io
        proto = self.proto
        registered = []
        lib = argparse.Namespace(check=lambda what, rc: None,
                                 c=argparse.Namespace(pyop_register_host_prototype=lambda p:
                                                      registered.append(p) or 0))
        saved = proto.read_declarations
        proto.read_declarations = lambda lib, path: decls_by_file[path]
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                done = proto.register_protos(lib, list(decls_by_file), "check", notes)
        finally:
            proto.read_declarations = saved
        return done, len(registered), err.getvalue()

    def _decl(self, op, line, **kw):
        return dict({"op_type": op, "line": line, "inputs": [("x", 0)], "outputs": [("y", 0)],
                     "attrs": []}, **kw)

    def test_registered_once_each(self):
        errors = _cli("errors")
        done, n, err = self._register({"/p/a.h": [self._decl("A", 3), self._decl("B", 7)]})
        self.assertEqual((done, n, err), ({"A": "/p/a.h", "B": "/p/a.h"}, 2, ""))
        with self.assertRaises(errors.CliError) as cm:
            self._register({"/p/a.h": [self._decl("A", 3)], "/p/b.h": [self._decl("A", 9)]})
        self.assertEqual((cm.exception.status, cm.exception.op), ("PYOP_ECONFLICT", "A"))
        self.assertEqual(cm.exception.message,
                         "--proto /p/b.h:9: REG_OP('A') is declared in /p/a.h:3 too")
        odd = self._decl("U", 5, unusable="a Tensor list attribute")
        done, n, err = self._register({"/p/u.h": [odd, self._decl("C", 6)]})
        self.assertEqual((done, n), ({"C": "/p/u.h"}, 1))
        self.assertEqual(err, "pyop: check: note: --proto /p/u.h:5: REG_OP(U) is not "
                              "registered: a Tensor list attribute\n")
        done, n, err = self._register({"/p/u.h": [odd]}, notes=False)
        self.assertEqual((done, n, err), ({}, 0, ""))

    def test_unused_noted_once(self):
        import contextlib
        import io
        proto = self.proto
        for c in (proto._declared, proto._unbound, proto._bound, proto._noted):
            c.clear()
        proto._declared.update({"A": "/p/a.h:1", "B": "/p/a.h:2", "C": "/p/a.h:3"})

        def info(op, impl):
            return {"op_type": op, "proto_key": "host:" + op, "impl_key": impl}
        self.assertTrue(proto.skip_unbound(info("A", None)))
        self.assertFalse(proto.skip_unbound(info("B", "pyop:b")))
        self.assertTrue(proto.skip_unbound(info("C", None)))
        self.assertFalse(proto.skip_unbound(info("Z", None)))  # not a --proto REG_OP
        proto.merge_binding({"bound": ["C"], "unbound": []})  # a worker's load implemented C
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            proto.note_unused("check")
            proto.note_unused("check")
        self.assertEqual(err.getvalue(), "pyop: check: note: --proto /p/a.h:1: REG_OP(A) is "
                                         "not used: no loaded plugin implements it\n")



class WorkerCommandOutcomeTest(unittest.TestCase):
    """How run and bench start their worker and read it (supervise.py): this
    Python with its own flags (-B here) and the command (bin/pyop, or the
    package directory from a source tree); an event cut across two reads
    of the pipe is one event."""

    def test_self_command(self):
        sv, config = _cli("supervise"), _cli("config")
        saved = config.SCRIPT
        try:
            config.SCRIPT = None
            cmd = sv.self_command()
            self.assertEqual(cmd[0], sys.executable)
            self.assertIn("-B", cmd[1:-1])  # ctest runs this file with python -B
            self.assertEqual(cmd[-1], os.path.dirname(os.path.abspath(sv.__file__)))
            self.assertTrue(os.path.isfile(os.path.join(cmd[-1], "__main__.py")))
            config.SCRIPT = "/opt/bin/pyop"
            self.assertEqual(sv.self_command()[-1], "/opt/bin/pyop")
        finally:
            config.SCRIPT = saved

    def test_event_cut_across_reads(self):
        sv = _cli("supervise")
        rfd, wfd = os.pipe()
        os.write(wfd, b'{"e": "activity", "stage": "execute"}\n{"e": "do')
        seen = []

        def on_event(ev):
            seen.append(ev)
            if ev["e"] == "activity":  # the rest arrives in a read of its own
                os.write(wfd, b'ne", "code": 0}\n')
                os.close(wfd)
            return ev["e"] == "done"
        try:
            got = sv.read_events(_Ended(), rfd, 60, on_event)
        finally:
            os.close(rfd)
        self.assertIs(got, True)
        self.assertEqual(seen, [{"e": "activity", "stage": "execute"}, {"e": "done", "code": 0}])



class OpDiedOutcomeTest(unittest.TestCase):
    """What the command keeps of a worker's events (check_supervise.py):
    an op reported is done (the next worker skips it), a phase said is the
    job's; an op the worker died in is failed with the stages that ran (the
    supervisor's own steps not counted), the cases that ran and were
    refused, the problems found, the death named by case and stage (the
    concurrency run's as such), and is done."""

    def _sup(self):
        import argparse
        cs = _cli("check_supervise")
        return cs.Supervisor(argparse.Namespace(path="/lib/libpyop.so"),
                             argparse.Namespace(lanes=0, proto=None, input=None, attr=None),
                             {"paths": ["/ops"], "done": [], "done_plugins": [],
                              "phase": "together"}, 2.5)

    def test_reported_op_and_phase(self):
        sup = self._sup()
        entry = {"plugin": "/ops/a.py", "op_type": "A", "status": "ok"}
        self.assertFalse(sup._event({"e": "op", "entry": entry}))
        self.assertEqual((sup.ops, sup.job["done"]), ([entry], [["/ops/a.py", "A"]]))
        self.assertFalse(sup._event({"e": "phase", "phase": "each"}))
        self.assertEqual(sup.job["phase"], "each")

    def test_a_new_worker_starts_with_nothing_of_the_last(self):
        """Each worker starts with no op under way: one that dies with an
        activity of op B before B's begin reached the supervisor blames B
        alone, never with the cases and problems of the op A the worker
        before it died in."""
        cs = _cli("check_supervise")
        sup = self._sup()
        workers = [
            [{"e": "op_begin", "plugin": "/ops/a.py", "op": "A", "source": "/ops/a.py:3"},
             {"e": "ran", "short": "float32[2]"},
             {"e": "problem", "case": "inputs x=float16[2]", "short": None, "text": "A broke"},
             {"e": "activity", "plugin": "/ops/a.py", "op": "A", "stage": "execute",
              "case": "inputs x=int8[2]", "short": "int8[2]"}],
            [{"e": "activity", "plugin": "/ops/b.py", "op": "B", "stage": "execute",
              "case": "inputs y=int8[1]", "short": "int8[1]"}]]

        class Proc:
            def wait(self):
                return -9

        def spawn(argv_of):
            return Proc(), os.open(os.devnull, os.O_RDONLY)

        def read_events(proc, rfd, limit, on_event):
            for ev in workers.pop(0):
                on_event(ev)
            return False  # ended without "done"
        saved = cs.spawn, cs.read_events
        cs.spawn, cs.read_events = spawn, read_events
        try:
            self.assertFalse(sup._one_worker())
            self.assertFalse(sup._one_worker())
        finally:
            cs.spawn, cs.read_events = saved
        a, b = sup.ops
        self.assertEqual((a["op_type"], a["ran"]), ("A", ["float32[2]"]))
        self.assertTrue(any("A broke" in p for p in a["problems"]), a["problems"])
        self.assertEqual((b["op_type"], b["ran"], b["source"]), ("B", [], None))
        self.assertFalse(any("A broke" in p for p in b["problems"]), b["problems"])
        self.assertEqual(sup.job["done"], [["/ops/a.py", "A"], ["/ops/b.py", "B"]])

    def _died_in(self, activity, refused=True):
        sup = self._sup()
        sup._event({"e": "op_begin", "plugin": "/ops/a.py", "op": "A", "inputs": "generated",
                     "source": "/ops/a.py:3"})
        sup._event({"e": "activity", "plugin": "/ops/a.py", "op": "A", "stage": "infer_meta",
                    "case": "inputs x=float32[2,3]", "short": "float32[2,3]"})
        sup._event({"e": "activity", "plugin": "/ops/a.py", "op": "A", "stage": "execute",
                    "case": "inputs x=float32[2,3]", "short": "float32[2,3]"})
        sup._event({"e": "activity", "plugin": "/ops/a.py", "op": "A", "stage": "second run",
                    "case": "inputs x=float32[2,3]", "short": "float32[2,3]"})
        sup._event({"e": "ran", "short": "float32[2,3]"})
        if refused:
            sup._event({"e": "refused", "refusal": {"case": "int8[2,3]", "reason": "TypeError: t",
                                                    "file": "/ops/a.py", "line": 4}})
        sup._event({"e": "problem", "case": "inputs x=float16[2,3]", "short": None,
                    "text": "output y differs"})
        sup._event(dict({"e": "activity", "plugin": "/ops/a.py", "op": "A"}, **activity))
        self.assertFalse(sup._died(-9))
        return sup

    def test_op_died_in_a_case(self):
        sup = self._died_in({"stage": "execute", "case": "inputs x=bool[0,3]",
                             "short": "bool[0,3] (empty)"})
        self.assertEqual(sup.job["done"], [["/ops/a.py", "A"]])
        e = sup.ops[0]
        self.assertEqual((e["op_type"], e["status"], e["plugin"], e["source"]),
                         ("A", "failed", "/ops/a.py", "/ops/a.py:3"))
        self.assertEqual(e["stages"], {"infer_meta": 1, "execute": 2})
        self.assertEqual(e["checked"], ["infer_meta", "execute"])
        self.assertEqual((e["ran"], e["refused"]), (["float32[2,3]"], ["int8[2,3]"]))
        self.assertEqual(e["problems"], [
            "inputs x=float16[2,3]: output y differs",
            "inputs x=bool[0,3]: execute ended the process running the check: killed by "
            "SIGKILL"])

    def test_op_died_in_the_concurrency_run(self):
        sup = self._died_in({"stage": "run from 4 threads at once on one instance",
                             "case": "inputs x=float32[2,3]", "short": "float32[2,3]"},
                            refused=False)
        e = sup.ops[0]
        self.assertEqual(e["refused"], [])
        self.assertEqual(e["problems"][-1], "inputs x=float32[2,3]: run from 4 threads at once "
                         "on one instance: the op ended the process running the check: killed "
                         "by SIGKILL")

    def test_grouped_deaths_name_the_case_short_or_label(self):
        cs, cv = _cli("check_supervise"), _cli("check_verdict")
        a, b = cs._Raw("inputs x=float32[2,3]", None), cs._Raw("inputs x=int8[2,3]", "int8")
        self.assertEqual((a.short, b.short), ("inputs x=float32[2,3]", "int8"))
        self.assertEqual(cs._Raw(None, None).short, "")
        self.assertEqual(cv._grouped([(b, "died"), (a, "died")]),
                         ["inputs x=int8[2,3]: died\n(the same failure with "
                          "inputs x=float32[2,3])"])



class CheckWorkerOutcomeTest(unittest.TestCase):
    """check's worker (check_worker.py): a directory's plugins in sorted
    order; which loaded ops it checks (the named ones, a --proto REG_OP no
    plugin implements only when named, none already reported); given
    inputs from --attr alone; the private directories named as the real
    ones everywhere in what it sends; its exit status."""

    def test_plugins_of_a_directory_sorted(self):
        cw = _cli("check_worker")
        names = ["p%02d_%s.py" % (k, c) for k, c in enumerate("qwertyuiopasdfghjklz")]
        root = _tree(self, list(reversed(names)))
        self.assertEqual(cw._plugin_entries([root]), [os.path.join(root, n) for n in names])

    def _checked(self, ops, done=(), unbound=(), pending=()):
        """The ops _check_loaded checks (and the pending ones it reports)."""
        import argparse
        cw = _cli("check_worker")
        lib = argparse.Namespace(op_types=lambda: ["A", "B", "P"],
                                 op_info=lambda t: {"op_type": t})
        stream = _Stream()
        worker = cw.Worker(lib, None, {"done": [list(d) for d in done], "ops": list(ops)},
                           stream)
        checked = []
        worker._check_op = lambda t, plugin, pend: checked.append(t) or dict(
            cw._entry(t, plugin, None))
        saved = cw.pending_impls, cw.skip_unbound
        cw.pending_impls = lambda types: [{"op_type": n, "impl_source": "/p/%s.py:1" % n}
                                          for n in pending]
        cw.skip_unbound = lambda info: info["op_type"] in unbound
        try:
            worker._check_loaded("/p")
        finally:
            cw.pending_impls, cw.skip_unbound = saved
        sent = [ev["entry"]["op_type"] for ev in stream.events if ev["e"] == "op"]
        return checked, sent

    def test_which_ops_are_checked(self):
        self.assertEqual(self._checked([]), (["A", "B", "P"], ["A", "B", "P"]))
        self.assertEqual(self._checked(["B"]), (["B"], ["B"]))
        # reported by an earlier worker: not again
        self.assertEqual(self._checked([], done=[("/p", "A")]), (["B", "P"], ["B", "P"]))
        self.assertEqual(self._checked([], done=[("/q", "A")])[0], ["A", "B", "P"])
        # a --proto REG_OP nothing implements: left out unless named
        self.assertEqual(self._checked([], unbound=["P"])[0], ["A", "B"])
        self.assertEqual(self._checked(["P"], unbound=["P"])[0], ["P"])
        # an implementation waiting for its prototype: reported, when wanted
        self.assertEqual(self._checked([], pending=["W"]), (["A", "B", "P"],
                                                            ["W", "A", "B", "P"]))
        self.assertEqual(self._checked(["A"], pending=["W"]), (["A"], ["A"]))
        self.assertEqual(self._checked(["W"], pending=["W"]), ([], ["W"]))

    def test_given_attributes_alone_are_given_inputs(self):
        import argparse
        cw = _cli("check_worker")
        info = _info(inputs=(), attrs=({"name": "n", "type": "int", "required": True,
                                        "default": None},))
        worker = cw.Worker(None, argparse.Namespace(input=None, attr=["n=2"]), {"done": []},
                           _Stream())
        cases, what = worker._cases(info)
        self.assertEqual(what, "given")
        self.assertEqual([(c.kind, c.attrs) for c in cases], [("given", {"n": 2})])

    def test_case_typos(self):
        cw = _cli("check_worker")
        pending = [{"op_type": "ab", "impl_source": "/p/a.py:3"}]
        self.assertEqual(cw._typo_notes("AB", pending), [
            "no implementation is loaded for AB, and one waits for a prototype of ab "
            "(/p/a.py:3): a typo in an op_type?"])
        self.assertEqual(cw._typo_notes("Zq", pending), [])

    def test_real_paths_everywhere(self):
        cw = _cli("check_worker")
        stream = _Stream()
        worker = cw.Worker(None, None, {"done": []}, stream)
        worker.holders = {"/tmp/pyop-check-x": "/ops"}
        self.assertEqual(worker.real("/tmp/pyop-check-x/a.py imports /tmp/pyop-check-x/b.py"),
                         "/ops/a.py imports /ops/b.py")
        entry = dict(cw._entry("Op", "/ops/a.py", "/tmp/pyop-check-x/a.py:3"),
                     problems=["/tmp/pyop-check-x/a.py:4: bad"],
                     inconclusive="refused at /tmp/pyop-check-x/a.py:5",
                     refusals=[{"case": "c", "reason": "ValueError: /tmp/pyop-check-x/a.py",
                                "file": "/tmp/pyop-check-x/a.py", "line": 6}])
        worker._send_op(entry)
        sent = stream.events[0]["entry"]
        self.assertEqual((sent["source"], sent["problems"], sent["inconclusive"]),
                         ("/ops/a.py:3", ["/ops/a.py:4: bad"], "refused at /ops/a.py:5"))
        self.assertEqual(sent["refusals"], [{"case": "c", "reason": "ValueError: /ops/a.py",
                                             "file": "/ops/a.py", "line": 6}])
        mon = cw.StreamMonitor(stream, "/ops/a.py", "Op", worker.real)
        mon.case(_cli("check_cases").Case("inputs from /tmp/pyop-check-x/s.npy", [], {},
                                          "samples", short="s"))
        self.assertEqual(stream.events[-1]["case"], "inputs from /ops/s.npy")

    def test_exit_status_of_the_worker(self):
        import argparse
        cw, errors = _cli("check_worker"), _cli("errors")
        ended = []

        class Ended(Exception):
            pass

        def end_now(code):
            ended.append(code)
            raise Ended()
        streams = []

        class S(_Stream):
            def __init__(self, fd):
                super().__init__()
                streams.append(self)
        saved = cw.Worker, cw.end_now, cw.Stream
        try:
            cw.end_now, cw.Stream = end_now, S
            for raised, code, last in ((KeyboardInterrupt("at execute"), 130, "interrupted"),
                                       (errors.UsageError("bad --input"), 2, "fatal"),
                                       (errors.CliError("no", "PYOP_ENOENT"), 1, "fatal"),
                                       (RuntimeError("bug"), 1, "fatal"), (None, 0, "done")):
                with self.subTest(raised=raised):
                    class W:
                        def __init__(self, *a):
                            pass

                        def run(self):
                            if raised is not None:
                                raise raised
                    cw.Worker = W
                    with self.assertRaises(Ended):
                        cw.serve(argparse.Namespace(interrupt_detail=lambda: None),
                                 argparse.Namespace(_worker=9, _job="{}"))
                    self.assertEqual(ended[-1], code)
                    self.assertEqual(streams[-1].events[-1]["e"], last)
        finally:
            cw.Worker, cw.end_now, cw.Stream = saved
        self.assertEqual(streams[0].events[-1]["text"], "at execute")
        self.assertEqual(streams[1].events[-1]["exit"], 2)



class _DoctorHost:
    """A Lib for doctor_report: the whole load fails (fail_whole) or
    registers ops; each plugin's own load registers the ops of that
    plugin; records what it was asked."""

    def __init__(self, fail_whole, elements):
        import argparse
        self.fail_whole, self.elements = fail_whole, elements
        self.loads, self.lanes, self.unloads = [], [], []
        self.c = argparse.Namespace(pyop_unload=lambda: self.unloads.append(len(self.loads)))

    def load(self):
        errors = _cli("errors")
        where = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
        listing = sorted(os.listdir(where)) if where and os.path.isdir(where) and \
            where.startswith(tempfile.gettempdir()) else None
        self.loads.append((where, listing))
        self.current = where
        if len(self.loads) == 1 and self.fail_whole:
            raise errors.CliError("two plugins define A", "PYOP_ECONFLICT")
        _DoctorHost.loaded = (self._IMPLS["/x/b.py"] + self._IMPLS["pkg"]
                              if len(self.loads) == 1 else self._IMPLS.get(
                                  "pkg" if listing == ["pkg"] else where, []))
        if where == "/x/bad.py":
            raise errors.CliError("bad.py: SyntaxError", "PYOP_EPYTHON")

    _IMPLS = {"/x/b.py": [
        {"op_type": "C", "impl_source": "/x/b.py:7", "capabilities": ["compile", "execute"],
         "legacy": False},
        {"op_type": "A", "impl_source": "/x/b.py:3", "capabilities": ["execute"],
         "legacy": False}],
        "pkg": [{"op_type": "W", "impl_source": "/ops/pkg/__init__.py:9",
                 "capabilities": ["execute"], "legacy": False}]}
    loaded = []  # the implementations of the plugins loaded now (plugins.loaded_impls)

    def op_types(self):
        if len(self.loads) == 1:
            return ["A", "B", "C"]
        return ["A"] if self.current == "/x/b.py" else ["B"]

    def op_info(self, t):
        src = {"A": "/x/b.py:3", "B": "/ops/pkg/__init__.py:5", "C": "/x/b.py:7"}[t]
        return {"op_type": t, "proto_source": src, "impl_source": src, "lanes": 0,
                "serial_reason": None}

    def doctor(self):
        return ("runtime key: none (no runtime)\nASCEND_CUSTOM_OPP_PATH=/x/b.py:/ops\n"
                + "".join("  %s: %s\n" % e for e in self.elements)
                + "artifacts: /a\ncandidates:\n  /a/cp312: loaded\nops registered: 2\n")

    def set_lanes(self, n):
        self.lanes.append(n)

    def shutdown(self):
        pass


class DoctorReportOutcomeTest(unittest.TestCase):
    """doctor's report (doctor.doctor_report) with libpyop and the bridge's
    discovery stood in for: the plugins of python-file and python-dir
    elements; when the whole load fails each plugin loaded alone (a package
    from a directory holding only it), unloaded after, the variable as it
    was; an op listed once under its plugin; the implementations worth a
    note (one with compile too); lanes set again after the load without them;
    the Python's site directories."""

    def setUp(self):
        self.doctor = _cli("doctor")
        saved = self.doctor._discover, self.doctor.loaded_impls
        self.addCleanup(self._restore, saved)
        found = {"/x/b.py": [{"plugin": "/x/b.py", "package": False}],
                 "/x/bad.py": [{"plugin": "/x/bad.py", "package": False}],
                 "/ops": [{"plugin": "/ops/pkg", "package": True}]}
        self.doctor._discover = lambda el: [dict(p) for p in found.get(el, [])]
        self.doctor.loaded_impls = lambda: [dict(i) for i in _DoctorHost.loaded]

    def _restore(self, saved):
        self.doctor._discover, self.doctor.loaded_impls = saved

    def _report(self, lib, lanes=0):
        import contextlib
        import io
        with contextlib.redirect_stderr(io.StringIO()):
            return self.doctor.doctor_report(lib, lanes)

    def test_failed_load_each_plugin_alone(self):
        lib = _DoctorHost(True, [("/x/b.py", "python-file"), ("/ops", "python-dir"),
                                 ("/x/bad.py", "python-file")])
        with _Env(None):
            rep = self._report(lib)
            self.assertNotIn("ASCEND_CUSTOM_OPP_PATH", os.environ)
        self.assertEqual(rep["load"]["status"], "PYOP_ECONFLICT")
        self.assertEqual([(p["plugin"], p["verdict"], p["ops"]) for p in rep["plugins"]],
                         [("/x/b.py", "ok", ["A"]), ("/ops/pkg", "ok", ["B"]),
                          ("/x/bad.py", "failed", [])])
        self.assertEqual(rep["plugins"][2]["error"]["status"], "PYOP_EPYTHON")
        where = [w for w, _ in lib.loads]
        self.assertEqual((where[0], where[1], where[3]), (None, "/x/b.py", "/x/bad.py"))
        self.assertTrue(where[2].startswith(tempfile.gettempdir()), where)
        self.assertEqual(lib.loads[2][1], ["pkg"])  # a directory holding only the package
        self.assertFalse(os.path.exists(where[2]))  # removed after
        # the failed whole load unloaded, then each plugin's load
        self.assertEqual(lib.unloads, [1, 2, 3, 4])
        # each plugin's implementations worth a line: C and W, their prototypes not loaded
        self.assertEqual([(i["op_type"], i["pending"]) for i in rep["implementations"]],
                         [("C", True), ("W", True)])
        self.assertEqual([p["pending"] for p in rep["plugins"]], [["C"], ["W"], []])
        with _Env("/before"):
            self._report(_DoctorHost(True, [("/x/b.py", "python-file")]))
            self.assertEqual(os.environ["ASCEND_CUSTOM_OPP_PATH"], "/before")

    def test_loaded_together(self):
        lib = _DoctorHost(False, [("/x/b.py", "python-file"), ("/ops", "python-dir")])
        rep = self._report(lib)
        self.assertEqual(rep["load"], {"status": "ok", "ops": ["A", "B", "C"], "error": None})
        self.assertEqual([(p["plugin"], p["verdict"], p["ops"]) for p in rep["plugins"]],
                         [("/x/b.py", "ok", ["A", "C"]), ("/ops/pkg", "ok", ["B"])])
        self.assertEqual(len(lib.loads), 1)
        # C is registered, noted for its compile; W waits for its prototype
        self.assertEqual([(i["op_type"], i["pending"]) for i in rep["implementations"]],
                         [("C", False), ("W", True)])
        self.assertEqual([p["pending"] for p in rep["plugins"]], [[], ["W"]])
        lib = _DoctorHost(False, [("/x/b.py", "python-file")])
        self._report(lib, lanes=3)
        self.assertEqual(lib.lanes, [0, 3])  # the load without lanes, then lanes again

    def test_site_directories(self):
        doctor, config = self.doctor, _cli("config")
        saved = config.BUILD_PYTHON
        extra = ["/opt/py/lib/python3/dist-packages", "/opt/py/lib/site-packages/",
                 "/opt/py/lib/mine"]
        sys.path.extend(extra)
        try:
            config.BUILD_PYTHON = None
            rep = doctor.python_report()
        finally:
            config.BUILD_PYTHON = saved
            del sys.path[-len(extra):]
        flags = {p["path"]: p["site_packages"] for p in rep["sys_path"]}
        self.assertEqual([flags[p] for p in extra], [True, True, False])
        self.assertIsNone(rep["is_build_python"])



class TooDeepOutcomeTest(unittest.TestCase):
    """A directory named like a plugin file (odd.py/, no __init__.py) is no
    plugin (errors._is_plugin_entry): the too-deep note still names the
    .py files one directory down."""

    def test_directory_named_py_is_no_plugin(self):
        errors = _cli("errors")
        root = _tree(self, ["odd.py/readme.txt", "sub/a.py"])
        with _Env(root):
            notes = errors.too_deep_notes()
        self.assertEqual(len(notes), 1)
        self.assertTrue(notes[0].startswith(os.path.join(root, "sub", "a.py") + " skipped: "),
                        notes)
        self.assertFalse(errors._is_plugin_entry(root, "odd.py"))
        root = _tree(self, ["real.py", "sub/a.py"])
        with _Env(root):
            self.assertEqual(errors.too_deep_notes(), [])



class ProtoNotesOutcomeTest(unittest.TestCase):
    """Who says the notes of the --proto files (main._main): the command,
    and run's or bench's worker (the one process of theirs that registers
    them), never a check worker (its command said them)."""

    def test_quiet_only_in_a_check_worker(self):
        import argparse
        main, supervise = _cli("main"), _cli("supervise")
        seen = []
        saved = (main.Lib, main._find_library, main._register_protos, main.cmd_run,
                 main.cmd_check, main.note_unused, supervise._worker)
        main.Lib = lambda path: argparse.Namespace(shutdown=lambda: None)
        main._find_library = lambda: "/lib/libpyop.so"
        main._register_protos = lambda lib, files, command, notes: seen.append(
            (command, notes)) or {}
        main.cmd_run = main.cmd_check = lambda lib, args: 0
        main.note_unused = lambda command: None
        rfd, wfd = os.pipe()
        try:
            for argv in (["run", "Op", "--_worker", str(wfd)], ["check", "--_worker", "7",
                                                                 "--_job", "{}"],
                         ["check", "/ops"]):
                with self.subTest(argv=argv):
                    self.assertEqual(main._main(argv, argv[0]), 0)
                    supervise._worker = None
        finally:
            (main.Lib, main._find_library, main._register_protos, main.cmd_run, main.cmd_check,
             main.note_unused, supervise._worker) = saved
            os.close(rfd)
            os.close(wfd)
        self.assertEqual(seen, [("run", True), ("check", False), ("check", True)])


# Outcome pass 2 (session 10): each rule below held where a value is parsed
# but might not reach its use, where per-slot arrays differ per slot, where
# a name might be matched by prefix, where a flag set has more than one
# value (their mutants: cli.out2.* in tests/mutation/mutants.txt).


class BindingSlotsOutcomeTest(unittest.TestCase):
    """What binding.info_to_dict reads per input (its own flag word, the
    mutated bit only) and what Lib.op_info says of an unknown op beside a
    waiting implementation whose op type only starts with its name."""

    def _info(self, flags):
        import ctypes
        b = _cli("binding")
        ins = (b.IoInfo * 3)((b"x", 0), (b"acc", 0), (b"z", 0))
        outs = (b.IoInfo * 1)((b"y", 0),)
        arr = (ctypes.c_uint32 * 3)(*flags)
        info = b.OpInfo(ctypes.sizeof(b.OpInfo), b"Op", b"pyop:op", b"op.py:1", None, None,
                        ins, 3, outs, 1, None, 0, 3, arr, None)
        return b.info_to_dict(info)

    def test_mutated_per_input_by_its_bit(self):
        b = _cli("binding")
        d = self._info((0, b.INPUT_MUTATED, 0))
        self.assertEqual([i["mutated"] for i in d["inputs"]], [False, True, False])
        d = self._info((b.INPUT_MUTATED, 0, b.INPUT_MUTATED))
        self.assertEqual([i["mutated"] for i in d["inputs"]], [True, False, True])
        # a flag word with other bits only is no mutated input
        d = self._info((b.INPUT_MUTATED << 1, b.INPUT_MUTATED << 2 | b.INPUT_MUTATED, 0))
        self.assertEqual([i["mutated"] for i in d["inputs"]], [False, True, False])

    def test_unknown_op_beside_a_waiting_op_of_a_longer_name(self):
        e = _op_info_error("Add", 'no op "Add" is registered', ["AddN"])
        self.assertIsNotNone(e)
        self.assertNotIn("--proto", e.message)
        self.assertTrue(e.message.startswith('no op "Add" is registered'), e.message)


class PluginsOutcomeTest(unittest.TestCase):
    """plugins.py: GE's legacy rule asked of each implementation (not only
    whether it exists), each GE interface mapped to its capability, an
    implementation waiting when only a longer op type is registered, a
    dotted exception class named by its last part."""

    def setUp(self):
        names = ("pyop._loader", "pyop.ext", "ge.custom_op.registry", "_pyopplg2_a")
        self.saved = {n: sys.modules.get(n) for n in names}
        self.addCleanup(self._restore)
        plugins = _cli("plugins")
        self.plugins = plugins

        def module(name, **objs):
            mod = type(sys)(name)
            mod.__dict__.update(objs)
            sys.modules[name] = mod
        self.module = module
        module("pyop._loader", PLUGIN_PREFIX="_pyopplg2_")
        module("pyop.ext", class_location=lambda cls: ("/p/g.py", 1),
               module_label=lambda name: "g")

    def _restore(self):
        for n, m in self.saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m

    def _ge(self, **ifaces):
        classes = {}
        for op, interfaces in ifaces.items():
            cls = type(op + "Impl", (), {"__ge_op_impl_descriptor__": _Desc(
                op_type=op, interfaces=interfaces)})
            cls.__module__ = "_pyopplg2_a"
            classes[op + "Impl"] = cls
        self.module("_pyopplg2_a", **classes)

    def test_legacy_asked_of_each(self):
        self._ge(Old=["eager_execute"], New=["eager_execute"])
        self.module("ge.custom_op.registry",
                    uses_legacy_execute=lambda desc: desc.op_type == "Old")
        got = {i["op_type"]: i["legacy"] for i in self.plugins.loaded_impls()}
        self.assertEqual(got, {"New": False, "Old": True})

    def test_each_interface_its_capability(self):
        self._ge(A=["eager_execute"], B=["host_cpu_execute"], C=["compilable"],
                 D=["annotated_args"], E=["eager_execute", "annotated_args", "compilable"])
        got = {i["op_type"]: i["capabilities"] for i in self.plugins.loaded_impls()}
        self.assertEqual(got, {"A": ["execute"], "B": ["execute"], "C": ["compile"],
                               "D": ["declare_launch_args"],
                               "E": ["execute", "compile", "declare_launch_args"]})

    def test_waiting_beside_a_longer_name(self):
        self._ge(Add=["eager_execute"], AddN=["eager_execute"])
        self.assertEqual([i["op_type"] for i in self.plugins.pending_impls(["AddN"])], ["Add"])
        self.assertEqual([i["op_type"] for i in self.plugins.pending_impls(["Add"])], ["AddN"])

    def test_dotted_exception_class(self):
        text = ("pkg.errors.ShapeError: bad\nTraceback (most recent call last):\n"
                '  File "/p/op.py", line 4, in execute\n'
                "pkg.errors.ShapeError: bad")
        self.assertEqual(self.plugins._origin_of_text(text),
                         (("ShapeError",), "/p/op.py", 4, "pkg.errors.ShapeError: bad"))


class AttrArrayOutcomeTest(unittest.TestCase):
    """values.make_attrs: the count is of the attributes given (not of the
    prototype's), each value in its own entry under its own name."""

    def test_given_count_and_entries(self):
        values, b = _cli("values"), _cli("binding")
        info = _info(attrs=({"name": "n", "type": "int"}, {"name": "f", "type": "float"},
                            {"name": "s", "type": "str"}))
        keep = []
        arr, n = values.make_attrs(info, {"s": "hi", "n": 4}, keep)
        self.assertEqual(n, 2)
        self.assertEqual([(arr[k].name, b.attr_value_to_py(arr[k].value)) for k in range(n)],
                         [(b"s", "hi"), (b"n", 4)])
        arr, n = values.make_attrs(info, {}, keep)
        self.assertEqual(n, 0)


class MessageNamesOutcomeTest(unittest.TestCase):
    """errors.py: each way a message names an op and a place is read (op
    'X', op "X", of "X", op type "X"; defined at, implementation at, class
    at, bare file:line)."""

    def test_op_named(self):
        errors = _cli("errors")
        for text, op in (("op 'Relu': bad", "Relu"), ('no op "Gelu" is registered', "Gelu"),
                         ('execute of "Add" failed', "Add"), ('op type "Conv" unknown', "Conv")):
            with self.subTest(text=text):
                self.assertEqual(errors.CliError(text).to_json()["op"], op)

    def test_where(self):
        errors = _cli("errors")
        for text, where in (("(defined at /p/a.py:3)", ("/p/a.py", 3)),
                            ("(implementation at /p/b.py:4)", ("/p/b.py", 4)),
                            ("(class at /p/c.py:5)", ("/p/c.py", 5)),
                            ("(/p/d.py:6)", ("/p/d.py", 6))):
            with self.subTest(text=text):
                self.assertEqual(errors._where('op "X" ' + text + " failed"), where)


class ProtoBindingOutcomeTest(unittest.TestCase):
    """proto.skip_unbound: a --proto op whose prototype is a plugin's own
    (not the host's REG_OP) is listed, implemented or not."""

    def test_plugin_prototype_kept(self):
        proto = _cli("proto")
        saved = dict(proto._declared), set(proto._unbound), set(proto._bound)
        try:
            proto._declared["P"] = "/p/a.h:1"
            self.assertFalse(proto.skip_unbound({"op_type": "P", "proto_key": "pyop:p",
                                                 "impl_key": None}))
            self.assertNotIn("P", proto._unbound)
            self.assertTrue(proto.skip_unbound({"op_type": "P", "proto_key": "host:P",
                                                "impl_key": None}))
        finally:
            proto._declared.clear()
            proto._declared.update(saved[0])
            proto._unbound.clear()
            proto._unbound.update(saved[1])
            proto._bound.clear()
            proto._bound.update(saved[2])


class PluginPathSpaceOutcomeTest(unittest.TestCase):
    """host.check_paths: every character libpyop's scan drops around an
    element (src/scan.c is_space: space, \t, \n, \v, \f, \r) refuses a path
    that starts or ends with it."""

    def test_each_scan_space(self):
        host, errors = _cli("host"), _cli("errors")
        for c in " \t\n\v\f\r":
            for bad in (c + "ops", "ops" + c):
                with self.subTest(path=bad):
                    with self.assertRaisesRegex(errors.UsageError,
                                                "cannot start or end with whitespace"):
                        host.check_paths([bad])
        host.check_paths(["o\vp\fs\r1"])  # inside a name: kept


class DoctorNotesOutcomeTest(unittest.TestCase):
    """doctor._impl_notes: an implementation is worth a line when it waits
    (its op type, exactly, is not registered), is a GE legacy execute, or
    has compile; a plain registered one is not."""

    def test_each_reason(self):
        doctor = _cli("doctor")
        saved = doctor.loaded_impls
        impls = [{"op_type": "Add", "capabilities": ["execute"], "legacy": False},
                 {"op_type": "Old", "capabilities": ["execute"], "legacy": True},
                 {"op_type": "Comp", "capabilities": ["execute", "compile"], "legacy": False},
                 {"op_type": "Plain", "capabilities": ["execute"], "legacy": False}]
        doctor.loaded_impls = lambda: [dict(i) for i in impls]
        try:
            got = doctor._impl_notes(["AddN", "Old", "Comp", "Plain"])
        finally:
            doctor.loaded_impls = saved
        self.assertEqual([(i["op_type"], i["pending"]) for i in got],
                         [("Add", True), ("Old", False), ("Comp", False)])


class CheckLoadErrorOutcomeTest(unittest.TestCase):
    """check._load_error: the combined load's failure is left out only when
    a plugin loaded alone failed with the same first line (not one that
    only starts with it); with no op loaded it is the command's error."""

    def test_shown_unless_a_plugin_says_it(self):
        import argparse
        check, errors = _cli("check"), _cli("errors")
        err = {"message": "A: defined twice\nmore", "status": "PYOP_ECONFLICT", "op": None}

        def sup(broken, ops=({"op_type": "X"},)):
            return argparse.Namespace(load_error=err, ops=list(ops),
                                      broken=[{"problem": p} for p in broken])
        self.assertIsNone(check._load_error(argparse.Namespace(load_error=None)))
        self.assertIsNone(check._load_error(sup(["A: defined twice\nother"])))
        self.assertIs(check._load_error(sup(["A: defined twice (and more)\nx"])), err)
        self.assertIs(check._load_error(sup(["B: no\n", "other"])), err)
        self.assertIs(check._load_error(sup([])), err)
        with self.assertRaises(errors.CliError) as cm:
            check._load_error(sup([], ops=()))
        self.assertEqual((cm.exception.message, cm.exception.status),
                         (err["message"], "PYOP_ECONFLICT"))


class BenchTimedCallOutcomeTest(unittest.TestCase):
    """bench._timed_call (libpyop stood in for): each input slot with its
    own tensor count; the timed execute held to infer_meta's outputs
    (PYOP_EXEC_EXPECT_OUTPUTS) exactly when the op has infer_meta, in the
    list form (dynamic outputs) too; a launch-only op's outputs each
    allocated as infer_meta described it."""

    class _C:
        def __init__(self):
            self.calls = []

        def _infer(self, outs, n_out):
            for k in range(n_out):
                outs[k].dtype, outs[k].ndim = (0, 1) if k == 0 else (6, 2)
                outs[k].shape[0] = 3 if k == 0 else 2
                outs[k].shape[1] = 5

        def pyop_op_infer_meta(self, op, slots, n_in, outs, n_out):
            self.calls.append(("infer_meta", n_in, [slots[k].count for k in range(n_in)]))
            self._infer(outs, n_out)
            return 0

        def pyop_op_infer_meta_list(self, op, slots, n_in, lists, n_out):
            self.calls.append(("infer_meta_list", n_in, [slots[k].count for k in range(n_in)]))
            return 0

        def pyop_op_execute(self, *a):
            return 0

        def pyop_op_execute_list(self, *a):
            return 0

        def pyop_op_launch(self, *a):
            return 0

    def _call(self, caps, outputs=(("y", "required"),), launch=False, dynamic=False):
        bench = _cli("bench")
        c = self._C()
        lib = _OpLib(c)
        info = dict(_info(inputs=(("xs", "dynamic"), ("b", "required")), outputs=outputs),
                    capabilities=caps)
        inputs = [[(0, [2], [1.0, 2.0]), (0, [1], [3.0])], [(0, [1], [4.0])]]
        fn, args, bufs = bench._timed_call(lib, info, None, inputs, launch, dynamic)
        return c, fn, args

    def test_flags_and_slots(self):
        b = _cli("binding")
        for dynamic in (False, True):
            for caps, want in ((["infer_meta", "execute"], b.EXEC_EXPECT_OUTPUTS),
                               (["execute"], 0)):
                with self.subTest(dynamic=dynamic, caps=caps):
                    c, fn, args = self._call(caps, dynamic=dynamic)
                    ctx = args[-1]._obj
                    self.assertEqual(ctx.flags, want)
                    slots, n_in = args[1], args[2]
                    self.assertEqual((n_in, [slots[k].count for k in range(n_in)]), (2, [2, 1]))
                    self.assertEqual(fn, c.pyop_op_execute_list if dynamic else c.pyop_op_execute)
                    self.assertEqual(len(c.calls), 1 if want else 0)

    def test_launch_outputs_as_described(self):
        c, fn, args = self._call(["infer_meta", "declare_launch_args"],
                                 outputs=(("y", "required"), ("z", "required")), launch=True)
        self.assertEqual(fn, c.pyop_op_launch)
        outs, n_out = args[3], args[4]
        self.assertEqual([(outs[k].dtype, list(outs[k].shape[:outs[k].ndim]), outs[k].nbytes)
                          for k in range(n_out)], [(0, [3], 12), (6, [2, 5], 40)])
        self.assertTrue(all(outs[k].data for k in range(n_out)))


class ProtoFileLineOutcomeTest(unittest.TestCase):
    """A --proto file (the Python form runs as code) that fails inside a
    function of its own is named at the innermost line of the file, where
    it failed, not where the file called the function: an error
    (proto._read) and an exit() (main._register_protos) alike."""

    def _file(self, body):
        root = _tree(self, [])
        path = os.path.join(root, "ops.reg_op")
        with open(path, "w") as f:
            f.write(body)
        return path

    def _run(self, path):
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), {"__name__": "ops"})

    def test_error_at_the_innermost_line(self):
        proto, errors = _cli("proto"), _cli("errors")
        path = self._file("def f():\n    raise ValueError('bad')\n\nf()\n")
        mod = type(sys)("host_proto")
        mod.ReadError = type("ReadError", (Exception,), {})
        mod.read = lambda p: self._run(p)
        with self.assertRaises(errors.CliError) as cm:
            proto._read(mod, path)
        self.assertEqual(cm.exception.message, "--proto %s: ValueError: bad (%s:2)" % (path, path))

    def test_exit_at_the_innermost_line(self):
        main, errors = _cli("main"), _cli("errors")
        path = self._file("import sys\ndef f():\n    sys.exit(3)\n\nf()\n")
        saved = main.register_protos
        main.register_protos = lambda lib, files, command, notes: self._run(files[0])
        try:
            with self.assertRaises(errors.CliError) as cm:
                main._register_protos(None, [path], "list", True)
        finally:
            main.register_protos = saved
        self.assertEqual(cm.exception.message,
                         "--proto %s: the file called exit(3) while it was read (%s:3); a "
                         "--proto file only declares REG_OPs" % (path, path))


class RunOutputOutcomeTest(unittest.TestCase):
    """What `pyop run` prints (run.cmd_run, the run stood in for): each
    output by its kind (a dynamic one tensor by tensor, its count said),
    an output that is an input's buffer said so, and after the outputs
    exactly the inputs the prototype declares mutated, each tensor of a
    dynamic one by its index."""

    def _run(self, as_json=False):
        import argparse
        import contextlib
        import io
        run, values = _cli("run"), _cli("values")
        info = _info(inputs=(("acc", "required"), ("xs", "dynamic"), ("b", "required")),
                     outputs=(("y", "required"), ("ys", "dynamic"), ("o", "optional")))
        info["inputs"][0]["mutated"] = True
        info["inputs"][1]["mutated"] = True
        info["outputs"][0]["alias"] = "acc"
        bufs = values.Buffers()
        t = lambda vals: values.make_tensor(bufs, 6, [len(vals)], vals)  # noqa: E731
        ins = [[t([1, 2])], [t([3]), t([4])], [t([5])]]
        y, y0, y1, o = t([7, 8]), t([9]), t([10, 11]), t([12])
        res = argparse.Namespace(inputs=ins, before=[], error=None, produced=[
            [(y, [7, 8])], [(y0, [9]), (y1, [10, 11])], [(o, [12])]])
        saved = run.run_as_a_host, run._warn_other_python
        run.run_as_a_host = lambda lib, args, command, seen=None: (info, None, None, res)
        run._warn_other_python = lambda *a: None
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                run.cmd_run(None, argparse.Namespace(op="Op", json=as_json, input=None))
        finally:
            run.run_as_a_host, run._warn_other_python = saved
        return out.getvalue()

    def test_text(self):
        self.assertEqual(self._run().splitlines(), [
            "y: int32[2] = [7, 8] (input acc's buffer)",
            "ys: 2 tensors",
            "ys[0]: int32[1] = [9]",
            "ys[1]: int32[2] = [10, 11]",
            "o: int32[1] = [12]",
            "input acc after the call (mutated): int32[2] = [1, 2]",
            "input xs[0] after the call (mutated): int32[1] = [3]",
            "input xs[1] after the call (mutated): int32[1] = [4]"])

    def test_json(self):
        import json
        got = json.loads(self._run(as_json=True))
        self.assertEqual(got["outputs"], [
            {"name": "y", "kind": "required", "dtype": "int32", "shape": [2],
             "values": [7, 8], "alias": "acc"},
            {"name": "ys", "kind": "dynamic", "alias": None, "tensors": [
                {"dtype": "int32", "shape": [1], "values": [9]},
                {"dtype": "int32", "shape": [2], "values": [10, 11]}]},
            {"name": "o", "kind": "optional", "dtype": "int32", "shape": [1], "values": [12],
             "alias": None}])
        self.assertEqual([m["name"] for m in got["mutated_inputs"]], ["acc", "xs[0]", "xs[1]"])


class BindingKindsOutcomeTest(unittest.TestCase):
    """binding.info_to_dict: each input and each output with its own kind
    (the outputs' from the outputs' array, whatever the inputs are)."""

    def test_kinds_per_io(self):
        import ctypes
        b = _cli("binding")
        ins = (b.IoInfo * 2)((b"x", 0), (b"xs", 2))
        outs = (b.IoInfo * 3)((b"ys", 2), (b"y", 0), (b"o", 1))
        info = b.OpInfo(ctypes.sizeof(b.OpInfo), b"Op", b"pyop:op", b"op.py:1", None, None,
                        ins, 2, outs, 3, None, 0, 3, None, None)
        d = b.info_to_dict(info)
        self.assertEqual([(i["name"], i["kind"]) for i in d["inputs"]],
                         [("x", "required"), ("xs", "dynamic")])
        self.assertEqual([(o["name"], o["kind"]) for o in d["outputs"]],
                         [("ys", "dynamic"), ("y", "required"), ("o", "optional")])


class CheckWorkerJobOutcomeTest(unittest.TestCase):
    """A check worker's job (check_worker.Worker): an implementation waiting
    for its prototype that an earlier worker reported is not reported
    again; the plugins an earlier worker finished are skipped; after a
    failed load together the worker says it goes on plugin by plugin
    (the phase the next worker starts in) before the first plugin."""

    def test_pending_reported_once(self):
        import argparse
        cw = _cli("check_worker")
        lib = argparse.Namespace(op_types=lambda: ["A"], op_info=lambda t: {"op_type": t})
        stream = _Stream()
        worker = cw.Worker(lib, None, {"done": [["/p", "W"]], "ops": []}, stream)
        worker._check_op = lambda t, plugin, pend: dict(cw._entry(t, plugin, None))
        saved = cw.pending_impls, cw.skip_unbound
        cw.pending_impls = lambda types: [{"op_type": n, "impl_source": "/p/%s.py:1" % n}
                                          for n in ("V", "W")]
        cw.skip_unbound = lambda info: False
        try:
            worker._check_loaded("/p")
        finally:
            cw.pending_impls, cw.skip_unbound = saved
        self.assertEqual([ev["entry"]["op_type"] for ev in stream.events if ev["e"] == "op"],
                         ["V", "A"])

    def test_plugins_done_skipped_and_phase_said(self):
        cw = _cli("check_worker")
        root = _tree(self, ["a.py", "b.py", "c.py"])
        a, b, c = (os.path.join(root, n) for n in ("a.py", "b.py", "c.py"))
        for phase in ("each", "together"):
            with self.subTest(phase=phase):
                stream = _Stream()
                worker = cw.Worker(None, None, {"done": [], "paths": [root], "phase": phase,
                                                "done_plugins": [b]}, stream)
                worker._together = lambda: stream.events.append({"e": "together"}) or False
                worker._one_plugin = lambda entry: stream.events.append(
                    {"e": "one", "plugin": entry})
                worker.run()
                want = [{"e": "together"}, {"e": "phase", "phase": "each"}] \
                    if phase == "together" else []
                self.assertEqual(stream.events, want + [
                    {"e": "one", "plugin": a}, {"e": "plugin_done", "plugin": a},
                    {"e": "one", "plugin": c}, {"e": "plugin_done", "plugin": c}])


class StartChoiceDefaultOutcomeTest(unittest.TestCase):
    """start_choice.choose with lanes: the build's default kept, with no
    note, when its own Python runs lanes, whatever sorts before it."""

    def test_default_that_fits_is_kept(self):
        sc = _cli("start_choice")
        root = _tree(self, [])
        for name, m in (("a311", _manifest(tag="cp311")), ("b312", _manifest()),
                        ("c312", _manifest())):
            os.mkdir(os.path.join(root, name))
            with open(os.path.join(root, name, "manifest.txt"), "w") as f:
                f.write("".join("%s=%s\n" % kv for kv in m.items()))
        self.assertEqual(sc.choose(root, 2, default="c312", order="a311;b312;c312"),
                         ("c312", None))
        name, note = sc.choose(root, 2, default="a311", order="a311;c312;b312")
        self.assertEqual(name, "c312")
        self.assertIn("instead of the build's default a311", note)


class _InferOpC(_OpC):
    """_OpC with infer_meta (no outputs) and the execute context kept."""

    def pyop_op_infer_meta_list(self, *_):
        return self._call("infer_meta")

    def pyop_op_execute_list(self, op, slots, n_in, lists, n_out, ctx):
        self.flags = ctx._obj.flags
        return self._call("execute")


class InstanceRunOutcomeTest(unittest.TestCase):
    """instance.Instance.run: execute held to infer_meta's outputs
    (PYOP_EXEC_EXPECT_OUTPUTS) exactly when infer_meta ran; a compile that
    failed leaves the instance unprepared, so the next run compiles
    again."""

    def _inst(self, caps, fail=()):
        im = _cli("instance")
        c = _InferOpC(caps, fail)
        inst = im.Instance(_OpLib(c), _info(outputs=()), {})
        self.addCleanup(inst.destroy)
        return im, inst, c

    def test_held_to_infer_meta_only_after_it(self):
        im = _cli("instance")
        b = _cli("binding")
        x = [[(0, [2], [1.0, 2.0])]]
        for caps, want in ((im.CAP_INFER | im.CAP_EXECUTE, b.EXEC_EXPECT_OUTPUTS),
                           (im.CAP_EXECUTE, 0)):
            with self.subTest(caps=caps):
                _, inst, c = self._inst(caps)
                res = inst.run(x)
                self.assertIsNone(res.error)
                self.assertEqual(c.flags, want)

    def test_failed_compile_is_compiled_again(self):
        im = _cli("instance")
        _, inst, c = self._inst(im.CAP_COMPILE | im.CAP_EXECUTE, fail={"compile": -22})
        x = [[(0, [2], [1.0, 2.0])]]
        res = inst.run(x)
        self.assertEqual(res.failed, "compile")
        c.fail = {}
        res = inst.run(x)
        self.assertIsNone(res.error)
        self.assertEqual(c.calls, ["compile", "compile", "execute"])
        inst.run(x)  # prepared now: not again
        self.assertEqual(c.calls, ["compile", "compile", "execute", "execute"])


class ThreadRoundsOutcomeTest(unittest.TestCase):
    """check_verdict._thread_problems: every round of every thread is
    compared with that thread's inputs run alone, a later round too."""

    def test_later_round_compared(self):
        cv = _cli("check_verdict")
        alone = [{"output y": b"ab"}, {"output y": b"cd"}]
        got = cv._thread_problems([[{"output y": b"ab"}, {"output y": b"ax"}],
                                   [{"output y": b"cd"}, {"output y": b"cd"}]], alone, True, "w")
        self.assertEqual(len(got), 1)
        self.assertTrue(got[0].startswith("w: thread 0: output y differs from byte 1"), got)
        got = cv._thread_problems([[{"output y": b"ab"}] * 3,
                                   [{"output y": b"cd"}, None, {"output y": b"c"}]],
                                  alone, True, "w")
        self.assertTrue(got and got[0].startswith("w: thread 1: output y"), got)



# ------------------------------------------------------------------
# State pass (session 11): what carries across events, workers, calls and
# elements in check_worker, check_supervise, supervise, check,
# check_cases, start_choice and run (mutants cli.st.*).


class StreamStateTest(unittest.TestCase):
    """supervise.read_events and run_in_worker: the limit after a chunk of
    events is the LAST event's (calls of an earlier event in the chunk are
    not kept); the step run or bench names is the worker's last activity,
    not its first."""

    def test_limit_of_the_last_event_of_a_chunk(self):
        """Two events arrive in one read: {"calls": 3} then one without
        calls (1). The clock then moves 1.2 s, past one 1 s limit: the
        worker is stopped (None); had the 3 calls of the first event been
        kept, it would have read on to its "done"."""
        import json
        import types
        sv = _cli("supervise")
        rfd, wfd = os.pipe()
        now, reads = [0.0], [0]

        def monotonic():
            reads[0] += 1
            now[0] += 0.4 if reads[0] <= 2 else 1.2
            return now[0]
        seen = []
        closed = []

        def on_event(ev):
            seen.append(ev)
            if len(seen) == 2:  # the next chunk: "done" (3 calls), then the end
                os.write(wfd, (json.dumps({"e": "done", "calls": 3}) + "\n").encode())
                os.close(wfd)
                closed.append(1)
            return ev["e"] == "done"
        os.write(wfd, b'{"e": "activity", "calls": 3}\n{"e": "activity"}\n')
        saved = sv.time
        sv.time = types.SimpleNamespace(monotonic=monotonic)
        try:
            got = sv.read_events(_Ended(), rfd, 1.0, on_event)
        finally:
            sv.time = saved
            os.close(rfd)
            if not closed:
                os.close(wfd)
        self.assertIsNone(got)
        self.assertEqual([ev["e"] for ev in seen], ["activity", "activity"])
        # the same chunk the other way round (1 call, then 3): 3.6 s, read on
        rfd, wfd = os.pipe()
        now[0], reads[0], seen[:], closed[:] = 0.0, 0, [], []
        os.write(wfd, b'{"e": "activity"}\n{"e": "activity", "calls": 3}\n')
        sv.time = types.SimpleNamespace(monotonic=monotonic)
        try:
            got = sv.read_events(_Ended(), rfd, 1.0, on_event)
        finally:
            sv.time = saved
            os.close(rfd)
            if not closed:
                os.close(wfd)
        self.assertIs(got, True)

    def test_run_names_the_last_step(self):
        errors = _cli("errors")
        with self.assertRaises(errors.CliError) as cm:
            RunInWorkerRulesTest._run(self, '{"e": "activity", "stage": "loading the plugins", '
                                            '"op": null}\n'
                                            '{"e": "activity", "stage": "infer_meta", "op": "Op"}\n'
                                            '{"e": "activity", "stage": "execute", "op": "Op"}\n')
        self.assertEqual(cm.exception.op, "Op")
        self.assertTrue(cm.exception.message.startswith('execute of "Op" ended the process'),
                        cm.exception.message)


class SupervisorStateTest(unittest.TestCase):
    """check_supervise.Supervisor across workers and ops: a new worker
    starts with no current activity (one that dies before any event ends
    the check, it does not blame the last worker's op again); an op once
    reported is no longer what the worker is doing (a death after it is
    between ops, the op is not failed a second time); an op begun is (a
    death in its samples function fails it)."""

    def _sup(self, phase="each"):
        import argparse
        cs = _cli("check_supervise")
        return cs.Supervisor(argparse.Namespace(path="/lib/libpyop.so"),
                             argparse.Namespace(lanes=0, proto=None, input=None, attr=None),
                             {"paths": ["/ops"], "done": [], "done_plugins": [],
                              "phase": phase}, 2.5)

    def _workers(self, sup, workers, statuses):
        """Runs sup._one_worker once per worker (its events, then its death
        with its status); what each returned."""
        cs = _cli("check_supervise")
        workers, statuses = list(workers), list(statuses)

        class Proc:
            def wait(self):
                return statuses.pop(0)

        def spawn(argv_of):
            return Proc(), os.open(os.devnull, os.O_RDONLY)

        def read_events(proc, rfd, limit, on_event):
            for ev in workers.pop(0):
                on_event(ev)
            return False
        saved = cs.spawn, cs.read_events
        cs.spawn, cs.read_events = spawn, read_events
        try:
            return [sup._one_worker() for _ in range(len(workers))]
        finally:
            cs.spawn, cs.read_events = saved

    def test_a_silent_worker_after_a_death_is_fatal(self):
        sup = self._sup()
        got = self._workers(sup, [
            [{"e": "op_begin", "plugin": "/ops/a.py", "op": "A", "source": "/ops/a.py:3"},
             {"e": "activity", "plugin": "/ops/a.py", "op": "A", "stage": "execute",
              "case": "inputs x=int8[2]", "short": "int8[2]"}],
            []], [-9, 3])
        self.assertEqual(got, [False, True])
        self.assertEqual([o["op_type"] for o in sup.ops], ["A"])
        self.assertEqual(sup.job["done"], [["/ops/a.py", "A"]])
        self.assertEqual(sup.fatal["error"]["status"], "PYOP_EINTERNAL")
        self.assertIn("before it reported anything", sup.fatal["error"]["message"])

    def test_a_death_after_an_op_was_reported(self):
        sup = self._sup()
        entry = {"plugin": "/ops/a.py", "op_type": "A", "status": "ok"}
        got = self._workers(sup, [
            [{"e": "op_begin", "plugin": "/ops/a.py", "op": "A", "source": "/ops/a.py:3"},
             {"e": "activity", "plugin": "/ops/a.py", "op": "A", "stage": "execute",
              "case": "inputs x=int8[2]", "short": "int8[2]"},
             {"e": "op", "entry": entry}]], [-9])
        self.assertEqual(got, [False])
        self.assertEqual(sup.ops, [entry])  # not failed a second time
        self.assertEqual(sup.job["done"], [["/ops/a.py", "A"]])
        self.assertEqual(len(sup.broken), 1)
        self.assertTrue(sup.broken[0]["problem"].startswith("between the checks of two of its "
                                                            "ops"), sup.broken[0])
        self.assertEqual(sup.broken[0]["plugin"], "/ops/a.py")

    def test_a_death_in_the_next_ops_samples(self):
        """An op reported, then the next op begun (its samples function
        runs): a death there fails that op, not "between two ops"."""
        sup = self._sup()
        entry = {"plugin": "/ops/a.py", "op_type": "A", "status": "ok"}
        got = self._workers(sup, [
            [{"e": "op_begin", "plugin": "/ops/a.py", "op": "A", "source": "/ops/a.py:3"},
             {"e": "op", "entry": entry},
             {"e": "op_begin", "plugin": "/ops/a.py", "op": "B", "source": "/ops/a.py:9"}]],
            [-9])
        self.assertEqual(got, [False])
        self.assertEqual(sup.broken, [])
        self.assertEqual([(o["op_type"], o["status"]) for o in sup.ops],
                         [("A", "ok"), ("B", "failed")])
        self.assertEqual((sup.ops[1]["source"], sup.ops[1]["plugin"]), ("/ops/a.py:9", "/ops/a.py"))
        self.assertEqual(sup.ops[1]["problems"], [
            "op B: while preparing its cases (its samples function runs here), the op ended "
            "the process running the check: killed by SIGKILL"])
        self.assertEqual(sup.job["done"], [["/ops/a.py", "A"], ["/ops/a.py", "B"]])

    def test_an_exit_without_done_while_a_child_holds_the_stream(self):
        """The worker exits (status 3) in an op's execute without saying
        "done" while a process it forked still holds the event stream (the
        real read_events, the stream idle, then closed): the op is failed
        naming the exit, never the check taken for finished with the op
        left out."""
        import json
        import types
        cs, sv = _cli("check_supervise"), _cli("supervise")
        sup = self._sup()
        rfd, wfd = os.pipe()
        for ev in ({"e": "op_begin", "plugin": "/ops/a.py", "op": "A", "source": "/ops/a.py:3"},
                   {"e": "activity", "plugin": "/ops/a.py", "op": "A", "stage": "execute",
                    "case": "inputs x=int8[2]", "short": "int8[2]"}):
            os.write(wfd, (json.dumps(ev) + "\n").encode())
        reads = [0]

        def monotonic():
            # a clock that stands still (each idle wait is the 2.5 s limit
            # capped at 1 s). Its reads: the start, a look (the events), their
            # new limit, a look (an idle wait); the forked process ends at the
            # 5th (the stream closes)
            reads[0] += 1
            if reads[0] == 5:
                os.close(wfd)
            return 100.0

        class Exited:
            pid, returncode = -1, 3

            def poll(self):
                return 3

            def wait(self, timeout=None):
                return 3
        saved = cs.spawn, sv.time
        cs.spawn = lambda argv_of: (Exited(), rfd)
        sv.time = types.SimpleNamespace(monotonic=monotonic)
        try:
            got = sup._one_worker()
        finally:
            cs.spawn, sv.time = saved
            if reads[0] < 5:
                os.close(wfd)
        self.assertIs(got, False)  # a death: the next worker goes on
        self.assertEqual([(o["op_type"], o["status"]) for o in sup.ops], [("A", "failed")])
        self.assertEqual(sup.ops[0]["problems"], [
            "inputs x=int8[2]: execute ended the process running the check: it exited with "
            "status 3 (os._exit() or C exit() in plugin code?)"])
        self.assertEqual(sup.job["done"], [["/ops/a.py", "A"]])


class CheckWorkerStateTest(unittest.TestCase):
    """check_worker: the monitor's case is the current one (an activity
    outside a case names none, not the case before); every refusal of an
    op gets its real paths; each directory of the .py files given gets its
    private directory in the place of its first file, after the other
    arguments before it; a file given twice is linked once; the plugins of
    every path are checked one by one, not only the last path's; the
    private directories are removed when the worker's job ends; each typo
    note names its own waiting implementation; a plugin that fails alone
    is unloaded before the next one loads."""

    def test_monitor_case_is_the_current_one(self):
        cw, cc = _cli("check_worker"), _cli("check_cases")
        stream = _Stream()
        mon = cw.StreamMonitor(stream, "/ops/a.py", "Op", lambda t: t)
        mon.case(cc.Case("inputs x=int8[2,3]", [], {}, "sweep", short="int8[2,3]"))
        mon.activity("run from 4 threads at once")
        mon.problem(None, "threads differ")
        self.assertEqual([(ev["case"], ev["short"]) for ev in stream.events],
                         [("inputs x=int8[2,3]", "int8[2,3]"), (None, None), (None, None)])
        mon.activity("second run", cc.Case("inputs x=bool[1]", [], {}, "sweep", short="b"))
        mon.stage("execute")
        self.assertEqual([(ev["case"], ev["short"]) for ev in stream.events[-2:]],
                         [("inputs x=bool[1]", "b")] * 2)

    def test_every_refusal_real(self):
        cw = _cli("check_worker")
        stream = _Stream()
        worker = cw.Worker(None, None, {"done": []}, stream)
        worker.holders = {"/tmp/pyop-check-y": "/ops"}
        refusals = [{"case": c, "reason": "TypeError: /tmp/pyop-check-y/a.py:%d" % n,
                     "file": "/tmp/pyop-check-y/a.py", "line": n}
                    for n, c in ((4, "int8[2,3]"), (9, "bool[2,3]"))]
        worker._send_op(dict(cw._entry("Op", "/ops/a.py", None), refusals=refusals))
        self.assertEqual([(r["reason"], r["file"]) for r in
                          stream.events[0]["entry"]["refusals"]],
                         [("TypeError: /ops/a.py:4", "/ops/a.py"),
                          ("TypeError: /ops/a.py:9", "/ops/a.py")])

    def test_each_directory_in_the_place_of_its_first_file(self):
        cw = _cli("check_worker")
        a, b, d = _tree(self, ["x.py"]), _tree(self, ["y.py"]), _tree(self, ["z.py"])
        holders = {}
        got = cw._as_loaded([d, os.path.join(a, "x.py"), os.path.join(b, "y.py"),
                             os.path.join(a, "x.py")], holders)
        self.addCleanup(lambda: [__import__("shutil").rmtree(h) for h in holders])
        self.assertEqual(len(got), 3)
        self.assertEqual(got[0], d)
        self.assertEqual((holders.get(got[1]), holders.get(got[2])), (a, b))
        self.assertEqual(os.listdir(got[1]), ["x.py"])  # given twice, linked once
        self.assertEqual(os.listdir(got[2]), ["y.py"])

    def test_plugins_of_every_path(self):
        cw = _cli("check_worker")
        a, b, c = _tree(self, ["p.py", "q.py"]), _tree(self, ["x.py"]), _tree(self, ["z.py"])
        self.assertEqual(cw._plugin_entries([a, os.path.join(b, "x.py"), c]),
                         [os.path.join(a, "p.py"), os.path.join(a, "q.py"),
                          os.path.join(b, "x.py"), os.path.join(c, "z.py")])

    def test_private_directories_removed_at_the_end(self):
        import argparse
        cw = _cli("check_worker")
        a = _tree(self, ["x.py", "y.py"])
        lib = argparse.Namespace(load=lambda: None,
                                 c=argparse.Namespace(pyop_unload=lambda: None))
        worker = cw.Worker(lib, None, {"done": [], "done_plugins": [], "ops": [],
                                       "paths": [os.path.join(a, "x.py")], "given": True,
                                       "phase": "together", "compile_options": {}}, _Stream())
        seen = []
        worker._check_loaded = lambda plugin: seen.extend(worker.holders)
        saved = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
        try:
            worker.run()
        finally:
            if saved is None:
                os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None)
            else:
                os.environ["ASCEND_CUSTOM_OPP_PATH"] = saved
        self.assertEqual(len(seen), 1)  # the load saw its private directory
        self.assertFalse(os.path.exists(seen[0]), seen[0])

    def test_each_typo_note_names_its_own_implementation(self):
        cw = _cli("check_worker")
        pending = [{"op_type": "Other", "impl_source": "/p/o.py:1"},
                   {"op_type": "Scael2", "impl_source": "/p/s.py:16"},
                   {"op_type": "scale2", "impl_source": "/p/t.py:4"}]
        notes = cw._typo_notes("Scale2", pending)
        self.assertEqual(sorted(n.split("prototype of ")[1].split(":")[0] for n in notes),
                         ["Scael2 (/p/s.py", "scale2 (/p/t.py"], notes)

    def test_a_plugin_that_fails_alone_is_unloaded_before_the_next(self):
        import argparse
        cw, errors = _cli("check_worker"), _cli("errors")
        root = _tree(self, ["a.py", "b.py"])
        calls = []

        def load():
            calls.append("load")
            if len(calls) == 1:
                raise errors.PyopError("pyop_load", "PYOP_EPLUGIN", "a.py: SyntaxError")
        lib = argparse.Namespace(load=load, c=argparse.Namespace(
            pyop_unload=lambda: calls.append("unload")))
        stream = _Stream()
        worker = cw.Worker(lib, None, {"done": [], "done_plugins": [], "ops": [],
                                       "paths": [root], "phase": "each",
                                       "compile_options": {}}, stream)
        worker._check_loaded = lambda plugin: calls.append("check " + os.path.basename(plugin))
        saved = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
        try:
            worker.run()
        finally:
            if saved is None:
                os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None)
            else:
                os.environ["ASCEND_CUSTOM_OPP_PATH"] = saved
        self.assertEqual(calls, ["load", "unload", "load", "check b.py", "unload"])
        self.assertEqual([(ev["e"], os.path.basename(ev.get("plugin") or ""))
                          for ev in stream.events if ev["e"] != "activity"],
                         [("broken", "a.py"), ("plugin_done", "a.py"), ("plugin_done", "b.py")])


class DiedOpInputsTest(unittest.TestCase):
    """The report of an op the check worker died in names the inputs its
    cases were (given, samples + generated, generated) as a finished op's
    does: the worker's op_begin says them (before the samples function
    runs), the supervisor keeps them."""

    def test_op_begin_says_the_inputs(self):
        import argparse
        cw, cs = _cli("check_worker"), _cli("check_supervise")
        lib = argparse.Namespace(op_info=lambda t: {"op_type": t, "proto_source": "/p/a.py:1"})
        for given, samples, want in ((["x=float32[3]:1,2,3"], {}, "given"),
                                     (None, {"Op": (None, "/p/a.py:9")}, "samples + generated"),
                                     (None, {"Other": (None, "/p/a.py:9")}, "generated")):
            with self.subTest(want=want):
                stream = _Stream()
                worker = cw.Worker(lib, argparse.Namespace(input=given, attr=None),
                                   {"done": []}, stream)

                def cases(info):
                    raise ValueError("the worker dies here")
                worker._cases = cases
                saved = cw.plugin_samples
                cw.plugin_samples = lambda: samples
                try:
                    worker._check_op("Op", "/p/a.py", [])
                finally:
                    cw.plugin_samples = saved
                begin = stream.events[0]
                self.assertEqual((begin["e"], begin.get("inputs")), ("op_begin", want))
                sup = cs.Supervisor(argparse.Namespace(path="/lib/libpyop.so"),
                                    argparse.Namespace(lanes=0, proto=None, input=given,
                                                       attr=None),
                                    {"paths": ["/p"], "done": [], "done_plugins": [],
                                     "phase": "each"}, 2.5)
                sup._event(begin)
                sup._event({"e": "activity", "plugin": "/p/a.py", "op": "Op",
                            "stage": "execute", "case": "given inputs", "short": None})
                self.assertFalse(sup._died(0))
                self.assertEqual((sup.ops[0]["op_type"], sup.ops[0]["inputs"]), ("Op", want))


class CheckCommandStateTest(unittest.TestCase):
    """check.py: the scan's skipped elements come before the workers'
    warnings (as libpyop's load says them first); the combined load's
    failure is left out when ANY plugin failing alone is it, not only the
    first."""

    def test_skipped_first(self):
        import argparse
        ck = _cli("check")
        got = []

        class Sup:
            def __init__(self, lib, args, job, limit):
                self.warnings, self.interrupted, self.fatal = [], None, None

            def run(self):
                self.warnings.extend(["w1", "w2"])
        saved = ck._job, ck.Supervisor, ck.note_unused, ck._report
        ck._job = lambda lib, args: {"skipped": ["s1", "s2"]}
        ck.Supervisor, ck.note_unused = Sup, lambda command: None
        ck._report = lambda args, job, sup: got.append(list(sup.warnings)) or 0
        try:
            self.assertEqual(ck.cmd_check(None, argparse.Namespace(case_timeout=None)), 0)
        finally:
            ck._job, ck.Supervisor, ck.note_unused, ck._report = saved
        self.assertEqual(got, [["s1", "s2", "w1", "w2"]])

    def test_load_error_told_by_any_broken_plugin(self):
        import argparse
        ck = _cli("check")
        err = {"status": "PYOP_EPLUGIN", "message": "b.py: ImportError: no\n  detail",
               "op": None}
        sup = argparse.Namespace(load_error=err, ops=[{"op_type": "A"}], broken=[
            {"plugin": "/ops/a.py", "problem": "a.py: SyntaxError"},
            {"plugin": "/ops/b.py", "problem": "b.py: ImportError: no\n  more"}])
        self.assertIsNone(ck._load_error(sup))
        sup.broken.pop()
        self.assertIs(ck._load_error(sup), err)


class CheckCasesStateTest(unittest.TestCase):
    """check_cases: each tensor of a dynamic sample input is its own; a
    thread's values differ between the tensors of a dynamic input, as the
    case's own do, each rotated by its own size; the attribute case's
    varied values are its own (the cases before it keep their attributes);
    only the second generated case leaves the optional inputs out."""

    def test_dynamic_sample_tensors_each_their_own(self):
        cc = _cli("check_cases")
        info = _info(inputs=(("xs", "dynamic"),))
        cases = cc.sample_cases(info, lambda: [{"inputs": {"xs": [
            ("int32", [2], [1, 2]), ("int32", [3], [3, 4, 5])]}}], "a.py:1")
        (d0, s0, v0), (d1, s1, v1) = cases[0].inputs[0]
        self.assertEqual((s0, s1), ([2], [3]))
        self.assertEqual((list(v0), list(v1)), ([1, 2], [3, 4, 5]))

    def test_thread_values_differ_between_tensors(self):
        cc = _cli("check_cases")
        info = _info(inputs=(("xs", "dynamic"),))
        case = cc.generated_cases(info, sweep=False)[0]
        a, b = case.inputs[0]
        self.assertNotEqual(a[2], b[2])  # the case's own (test's premise)
        for t in (1, 2):
            x0, x1 = cc.thread_inputs(case, t)[0]
            self.assertNotEqual(x0[2], x1[2], t)

    def test_thread_values_sized_per_tensor(self):
        """A dynamic sample input's tensors of different sizes: each
        thread's tensor is its own rotated by t places (by its own size)."""
        cc = _cli("check_cases")
        info = _info(inputs=(("xs", "dynamic"),))
        case = cc.sample_cases(info, lambda: [{"inputs": {"xs": [
            ("int32", [2], [1, 2]), ("int32", [3], [3, 4, 5])]}}], "a.py:1")[0]
        (d0, s0, v0), (d1, s1, v1) = cc.thread_inputs(case, 2)[0]
        self.assertEqual((s0, len(v0)), ([2], 2))
        self.assertEqual((s1, list(v1)), ([3], [5, 3, 4]))
        (_, _, v1), = cc.thread_inputs(case, 1)[0][1:]
        self.assertEqual(list(v1), [4, 5, 3])

    def test_each_input_in_its_own_data_type(self):
        """A case whose inputs take different data types (a pick of one per
        input, sweep_dtypes): each input's tensors are made in its own."""
        cc, binding = _cli("check_cases"), _cli("binding")
        info = _info(inputs=(("x", "required"), ("idx", "dynamic")))
        case = cc._make_case(info, [1, 2], {}, ("float16", "int32"), [2, 3], "sweep", "s")
        self.assertEqual([[binding.DTYPES[d] for d, _, _ in slot] for slot in case.inputs],
                         [["float16"], ["int32", "int32"]])
        self.assertTrue(all(isinstance(v, int) for v in case.inputs[1][1][2]))
        self.assertIn("idx=2 x int32[2,3]", case.label)

    def test_attr_case_keeps_its_values_to_itself(self):
        cc = _cli("check_cases")
        info = _info(attrs=({"name": "r", "type": "int", "required": True, "default": None},
                            {"name": "k", "type": "int", "required": False, "default": 1},
                            {"name": "on", "type": "bool", "required": False,
                             "default": False}))
        cases = cc.generated_cases(info)
        self.assertIn("attrs", cases[-1].short)
        self.assertEqual((cases[-1].attrs["k"], cases[-1].attrs["on"]), (2, True))
        for c in cases[:-1]:
            self.assertEqual(sorted(c.attrs), ["r"], c.short)

    def test_optional_inputs_present_in_every_sweep_case(self):
        """Only the second generated case leaves the optional input out;
        the data type, shape and attribute sweeps have it (the loop over
        the input sets ends on the absent one: its counts are not kept)."""
        cc = _cli("check_cases")
        info = _info(inputs=(("x", "required"), ("b", "optional")),
                     attrs=({"name": "k", "type": "int", "required": False, "default": 1},))
        cases = cc.generated_cases(info)
        self.assertGreater(len(cases), 6)
        self.assertEqual([len(c.inputs[1]) for c in cases[:2]], [1, 0])
        self.assertEqual([c.short for c in cases[2:] if len(c.inputs[1]) != 1], [])
        self.assertEqual([len(c.inputs[0]) for c in cases], [1] * len(cases))
        kinds = {c.kind for c in cases[2:]}
        self.assertEqual(kinds, {"sweep"})
        self.assertIn("attrs k=2", cases[-1].short)  # the attribute case is among them
        self.assertTrue(any("empty" in c.short for c in cases))  # and the shapes


class RunStateTest(unittest.TestCase):
    """run: every input the prototype declares mutated is shown after the
    call, also one after an input that is not."""

    def test_mutated_after_an_unmutated_input(self):
        import argparse
        import contextlib
        import io
        import json
        run, values = _cli("run"), _cli("values")
        info = _info(inputs=(("x", "required"), ("acc", "required"), ("ys", "dynamic")),
                     outputs=())
        info["inputs"][2]["mutated"] = True
        info["inputs"][1]["mutated"] = True
        bufs = values.Buffers()
        t = lambda vals: values.make_tensor(bufs, 6, [len(vals)], vals)  # noqa: E731
        res = argparse.Namespace(inputs=[[t([1])], [t([2, 3])], [t([4]), t([5])]], before=[],
                                 error=None, produced=[])
        saved = run.run_as_a_host, run._warn_other_python
        run.run_as_a_host = lambda lib, args, command, seen=None: (info, None, None, res)
        run._warn_other_python = lambda *a: None
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                run.cmd_run(None, argparse.Namespace(op="Op", json=True, input=None))
        finally:
            run.run_as_a_host, run._warn_other_python = saved
        got = json.loads(out.getvalue())["mutated_inputs"]
        self.assertEqual([(m["name"], m["values"]) for m in got],
                         [("acc", [2, 3]), ("ys[0]", [4]), ("ys[1]", [5])])


class StartChoiceStateTest(unittest.TestCase):
    """start_choice.artifacts: artifacts the build's order does not name
    come after it by name, whatever order the directory lists them in."""

    def test_unranked_by_name(self):
        import types
        sc = _cli("start_choice")
        root = _tree(self, [])
        for name in ("c", "a", "d", "b"):
            os.makedirs(os.path.join(root, name))
            with open(os.path.join(root, name, "manifest.txt"), "w") as f:
                f.write("python_tag=cp312\n")
        saved = sc.os
        sc.os = types.SimpleNamespace(listdir=lambda p: ["c", "a", "d", "b"], path=os.path)
        try:
            got = sc.artifacts(root, ["d"])
        finally:
            sc.os = saved
        self.assertEqual([n for n, _ in got], ["d", "a", "b", "c"])


class GuardStateOutcomeTest(unittest.TestCase):
    """The guard zones' state (values.Buffers): each buffer of a Buffers
    its own pattern, each Buffers (run) its own too, a change far past the
    end of a large buffer found and measured from the end (a zone longer
    than one pattern is compared chunk by chunk, every chunk)."""

    def _guard(self, bufs, k):
        addr, nbytes, back, pattern, what = bufs.guards[k]
        return addr + nbytes, back, pattern

    def test_bytes_of_another_buffers_guard_are_seen(self):
        import ctypes
        values = _cli("values")
        bufs = values.Buffers()
        bufs.alloc(4, "input 0")
        bufs.alloc(4, "output 0")
        # output 0's guard gets the bytes input 0's guard holds (a copy of the wrong zone)
        src, n, _ = self._guard(bufs, 0)
        dst, _, mine = self._guard(bufs, 1)
        copied = ctypes.string_at(src, n)
        ctypes.memmove(dst, copied, n)
        last = max(k for k in range(n) if copied[k] != mine[k])  # 63 but for a 1/256 chance
        self.assertEqual(bufs.overruns(), ["output 0 (%d bytes past its end)" % (last + 1)])

    def test_each_run_its_own_pattern(self):
        import ctypes
        values = _cli("values")
        one, two = values.Buffers(), values.Buffers()
        self.assertNotEqual(one.run, two.run)
        one.alloc(4, "x")
        two.alloc(4, "x")
        src, n, _ = self._guard(one, 0)
        dst, _, mine = self._guard(two, 0)
        copied = ctypes.string_at(src, 16)
        ctypes.memmove(dst, copied, 16)
        last = max(k for k in range(16) if copied[k] != mine[k])
        self.assertEqual(two.overruns(), ["x (%d bytes past its end)" % (last + 1)])
        self.assertEqual(one.overruns(), [])

    def test_a_write_far_past_a_large_buffer(self):
        import ctypes
        values = _cli("values")
        bufs = values.Buffers()
        bufs.alloc(1024, "output 0", "y")  # a back zone of 8192 bytes: two patterns
        end, back, pattern = self._guard(bufs, 0)
        self.assertGreater(back, values.GUARD_PATTERN)
        self.assertEqual(bufs.overruns(), [])  # every chunk of the zone filled
        at = 5000  # in the zone's second chunk; its first chunk is untouched
        ctypes.memmove(end + at, bytes([pattern[at % len(pattern)] ^ 0xFF]), 1)
        self.assertEqual(bufs.overruns(), ['output 0 "y" (5001 bytes past its end)'])

    def test_every_buffer_looked_at(self):
        import ctypes
        values = _cli("values")
        bufs = values.Buffers()
        bufs.alloc(4, "input 0", "x")
        bufs.alloc(4, "output 0", "y")
        bufs.alloc(4, "output 1", "z")
        for k in (1, 2):
            end, _, pattern = self._guard(bufs, k)
            ctypes.memmove(end, bytes([pattern[0] ^ 0xFF]), 1)
        self.assertEqual(bufs.overruns(), ['output 0 "y" (1 byte past its end)',
                                           'output 1 "z" (1 byte past its end)'])

    def test_a_front_zone_of_several_patterns_counts_from_its_first_change(self):
        """A front zone longer than one pattern (GUARD_FRONT past
        GUARD_PATTERN), written in two of its pattern blocks: the count
        before the start is the farthest byte written, in the first block,
        not the first change of the last block."""
        import ctypes
        from unittest import mock
        values = _cli("values")
        with mock.patch.object(values, "GUARD_FRONT", 3 * values.GUARD_PATTERN):
            bufs = values.Buffers()
            addr = bufs.alloc(4, "input 0", "x")
            pattern = bufs.guards[0][3]
            self.assertEqual(bufs.overruns(), [])  # every block of the front zone filled
            for back in (10000, 1):  # y[-10000] (the zone's first block) and y[-1] (its last)
                at = values.GUARD_FRONT - back
                ctypes.memmove(addr - back, bytes([pattern[at % len(pattern)] ^ 0xFF]), 1)
            self.assertEqual(bufs.overruns(), ['input 0 "x" (10000 bytes before its start)'])


class ValueStateOutcomeTest(unittest.TestCase):
    """Per-dtype and per-element values (values.py): a Tensor attribute's
    sample values are of its own data type; every row of a plugin's
    list[list[int]] value is checked."""

    def test_tensor_attribute_samples_of_its_dtype(self):
        values, b = _cli("values"), _cli("binding")
        for name in ("int32", "uint8", "int64"):
            with self.subTest(name):
                dtype, shape, vals = values.parse_tensor_text(name + "[3]", "w")
                self.assertEqual((dtype, shape, vals), (b.DTYPES.index(name), [3], [0, 1, 2]))
                self.assertTrue(all(type(v) is int for v in vals), vals)
        dtype, shape, vals = values.parse_tensor_text("bool[2,2]", "w")
        self.assertEqual(vals, [True, False, True, False])
        self.assertEqual(values.parse_tensor_text("float16[2]", "w")[2], [0.0, 0.5])

    def test_every_row_of_a_list_of_lists(self):
        values = _cli("values")
        for value in ([[1], 2], [[1], [2], "3"], ([], 5)):
            with self.subTest(value=value):
                with self.assertRaisesRegex(ValueError, "is not a list of lists of int"):
                    values.plugin_attr_value(value, "list[list[int]]")
        self.assertEqual(values.plugin_attr_value([[1], [], (2, 3)], "list[list[int]]"),
                         [[1], [], [2, 3]])



class VerdictStateOutcomeTest(unittest.TestCase):
    """State check_verdict carries across slots, cases and threads: an
    alias and an infer_meta description read at their own slot, a mutated
    input's writes summed over every case (and read at its own index), the
    stage counts summed over the runs, each thread of the concurrency run
    running its own inputs and compared by its own results, the first
    refusal and NPU stop the ones named."""

    setUp = RunCasesOutcomeTest.setUp
    _res = RunCasesOutcomeTest._res
    _run = RunCasesOutcomeTest._run
    _case = RunCasesOutcomeTest._case

    def test_alias_of_a_later_input(self):
        cv = self.cv
        info = _info(inputs=(("x", "required"), ("acc", "required")),
                     outputs=(("y", "required"),))
        info["outputs"][0]["alias"] = "acc"
        x, acc = _Buf(100), _Buf(200)
        ok = _Run(inputs=[[x], [acc]], produced=[[(_Buf(200), None)]])
        self.assertEqual(cv._contract_problems(info, "c", ok), [])
        wrong = _Run(inputs=[[x], [acc]], produced=[[(_Buf(100), None)]])
        self.assertEqual(cv._contract_problems(info, "c", wrong),
                         ["c: output y is declared as input acc's buffer but is not"])

    def test_each_output_against_its_own_description(self):
        cv = self.cv
        info = _info(outputs=(("y", "required"), ("z", "required")))
        res = _Run(produced=[[(_Buf(1, shape=(2,)), None)], [(_Buf(2, shape=(3,)), None)]],
                   inferred=[[(0, [2])], [(0, [3])]])
        self.assertEqual(cv._contract_problems(info, "c", res), [])
        res.inferred = [[(0, [2])], [(0, [4])]]
        self.assertEqual(cv._contract_problems(info, "c", res),
                         ["c: output z: infer_meta said float32[4], execute produced float32[3]"])

    def _mutated_info(self):
        info = _info(inputs=(("x", "required"), ("acc", "required")))
        info["inputs"][1]["mutated"] = True
        return info

    def test_a_write_in_any_case_counts(self):
        info = self._mutated_info()

        def answer(inputs):  # case A writes acc, case B does not
            wrote = inputs[0][0][2] == [1.0]
            return self._res(before=[[b"x"], [b"\0"]], after=[[b"x"], [b"\1" if wrote else b"\0"]])
        v, _ = self._run(info, [self._case("A", 1.0), self._case("B", 2.0)], answer)
        self.assertEqual((v["warnings"], v["problems"]), ([], []))
        v, _ = self._run(info, [self._case("B", 2.0), self._case("A", 1.0)], answer)
        self.assertEqual((v["warnings"], v["problems"]), ([], []))
        v, _ = self._run(info, [self._case("B", 2.0), self._case("C", 3.0)], answer)
        self.assertEqual(len(v["warnings"]), 1, v["warnings"])
        self.assertIn("input acc is declared in mutates_args, but none of the 2 runs",
                      v["warnings"][0])

    def test_the_mutated_inputs_own_bytes(self):
        info = self._mutated_info()
        # acc (input 1) written; x (input 0) not: no warning
        v, _ = self._run(info, [self._case("A")], lambda inputs: self._res(
            before=[[b"x"], [b"\0"]], after=[[b"x"], [b"\1"]]))
        self.assertEqual((v["warnings"], v["problems"]), ([], []))
        cv = self.cv
        res = _Res([[b"y"]], after=[[b"x"], [b"a0", b"a1"]])
        self.assertEqual(cv._result_bytes(info, res),
                         {"output y": b"y", "input acc (mutated)": b"a0",
                          "input acc[1] (mutated)": b"a1"})

    def test_stage_calls_summed(self):
        v, _ = self._run(_info(), [self._case("A", 1.0), self._case("B", 2.0)],
                         lambda inputs: self._res(stages=("infer_meta", "execute")))
        # two cases, each run twice on its instance
        self.assertEqual(v["stages"], {"infer_meta": 4, "execute": 4})
        err = self.errors.CliError("bad shape", "PYOP_EPYTHON")
        err.stage = "infer_meta"
        v, _ = self._run(_info(), [self._case("A", 1.0), self._case("B", 2.0)],
                         lambda inputs: err)
        self.assertEqual(v["stages"], {"infer_meta": 2})

    def test_each_thread_runs_and_is_compared_by_its_own_inputs(self):
        def answer(inputs):
            return self._res(data=repr(inputs).encode())
        v, seen = self._run(_info(), [self._case("A", 1.0)], answer, threads=3)
        self.assertEqual((v["problems"], v["threads"]), ([], 3))
        self.assertEqual(len(seen), 1)

    def test_a_racy_thread_is_named(self):
        import threading
        calls, lock = {}, threading.Lock()
        case = self._case("A", 1.0)
        other = self.cc.thread_inputs(case, 1)

        def answer(inputs):
            with lock:
                key = repr(inputs)
                calls[key] = calls.get(key, 0) + 1
                n = calls[key]
            # thread 1's inputs give other bytes once run after their run alone
            data = b"late" if inputs == other and n > 1 else repr(inputs).encode()
            return self._res(data=data)
        v, _ = self._run(_info(), [case], answer, threads=2)
        self.assertEqual(len(v["problems"]), 1, v["problems"])
        self.assertTrue(v["problems"][0].startswith(
            "A: run from 2 threads at once on one instance: thread 1: output y differs"),
            v["problems"])

    def test_the_concurrency_instance_has_the_cases_attributes(self):
        cv, made = self.cv, []

        class Inst:
            def __init__(inst, lib, info, attrs, declare=None):
                made.append(dict(attrs))

            def run(inst, inputs, stage=None):
                return self._res()

            def destroy(inst):
                pass
        case = self.cc.Case("A", [[(0, [1], [1.0])]], {"k": 2}, "generated", short="As")
        saved = cv.Instance
        cv.Instance = Inst
        try:
            v = cv.run_cases(None, _info(), [case], None, True, 2)
        finally:
            cv.Instance = saved
        self.assertEqual((v["problems"], v["threads"]), ([], 2))
        self.assertEqual(made, [{"k": 2}, {"k": 2}])  # the case's, then the concurrency run's

    def test_switch_interval_restored_after_the_threads(self):
        saved = sys.getswitchinterval()
        self.addCleanup(sys.setswitchinterval, saved)
        sys.setswitchinterval(0.004)  # whatever an earlier run may have left
        v, _ = self._run(_info(), [self._case("A", 1.0)], lambda inputs: self._res(), threads=2)
        self.assertEqual(v["threads"], 2)
        self.assertEqual(sys.getswitchinterval(), 0.004)

    def test_the_first_npu_stop_named(self):
        cv = self.cv
        info = dict(_info(), impl_key="pyop:op")
        v = cv._new_verdict()
        v["npu"] = [("declare_launch_args", "float32[2,3]", "no NPU"),
                    ("execute", "int8[2,3]", "other")]
        self.assertEqual(cv.op_status(info, v), "inconclusive")
        self.assertEqual(v["why"], "declare_launch_args needs an NPU")
        self.assertIn("(float32[2,3]: no NPU)", v["inconclusive"])



class PluginStateOutcomeTest(unittest.TestCase):
    """Per-element and per-method state of check_plugin.py: a bfloat16
    tensor anywhere in a dynamic input skips the reference, each tensor of
    a dynamic input reaches the reference with its own data type and
    shape, every plugin module's file is the plugin's own, and a Tensor
    attribute written by compile or declare_launch_args is watched and
    named with that method."""

    setUp = PluginIndexOutcomeTest.setUp
    _drop = PluginIndexOutcomeTest._drop
    _module = PluginIndexOutcomeTest._module

    def _np(self):
        try:
            import numpy
        except ImportError:
            self.skipTest("no numpy in this Python")
        return numpy

    def test_bfloat16_in_a_later_tensor(self):
        self._np()
        cc, b = _cli("check_cases"), _cli("binding")
        bf16 = b.DTYPES.index("bfloat16")
        info = _info(inputs=(("xs", "dynamic"),))
        case = cc.Case("c", [[(0, [1], [1.0]), (bf16, [1], [2.0])]], {}, "generated")

        class R:
            produced = [[(_T(0, [1]), [5.0])]]
        seen = []
        self.assertIsNone(self.cp.reference_problem(info, case, R(),
                                                    (lambda xs: seen.append(xs), (0, 0))))
        self.assertEqual(seen, [])  # not called: numpy has no bfloat16

    def test_each_dynamic_tensor_its_own_dtype_and_shape(self):
        np = self._np()
        cc, b = _cli("check_cases"), _cli("binding")
        i32 = b.DTYPES.index("int32")
        info = _info(inputs=(("xs", "dynamic"),))
        case = cc.Case("c", [[(0, [2], [1.0, 2.0]), (i32, [1, 3], [1, 2, 3])]], {}, "generated")
        args, attrs = self.cp._reference_args(info, case, np)
        xs = args[0]
        self.assertEqual([a.dtype.name for a in xs], ["float32", "int32"])
        self.assertEqual([list(a.shape) for a in xs], [[2], [1, 3]])
        self.assertEqual(xs[1].tolist(), [[1, 2, 3]])

    def test_every_plugin_modules_file(self):
        cp = self.cp
        root = tempfile.mkdtemp(prefix="pyop_plugin_files_")
        self.addCleanup(lambda: __import__("shutil").rmtree(root))
        paths = []
        for name in ("a", "b", "c"):
            path = os.path.join(root, name + ".py")
            open(path, "w").close()
            self._module("_pyop_plugin_files_" + name).__file__ = path
            paths.append(path)
        for path in paths:
            self.assertTrue(cp.in_plugin_code(path), path)
        self.assertFalse(cp.in_plugin_code(os.path.join(root, "d.py")))

    def test_tensor_attribute_written_by_each_method(self):
        import ctypes
        cp = self.cp
        buf = ctypes.create_string_buffer(b"abcd", 4)

        class W:
            data_ptr, nbytes = ctypes.addressof(buf), 4

        def bump():
            buf[0] = bytes([buf.raw[0] + 1])

        class Impl:
            def execute(self, w):
                pass

            def compile(self, w):
                bump()

            def declare_launch_args(self, w):
                bump()
        Impl.__pyop_descriptor__ = type("Desc", (), {"key": "pyop:wm:Impl"})()
        self._module("_pyop_plugin_wm", Impl=Impl)
        with cp.AttrWatch({"impl_key": "pyop:wm:Impl"}, ["w"]) as watch:
            Impl().compile(W())
            Impl().execute(W())
            Impl().declare_launch_args(W())
        self.assertEqual(watch.written, [("w", "compile"), ("w", "declare_launch_args")])

    def test_a_profile_function_before_is_restored(self):
        cp = self.cp

        class Impl:
            def execute(self, w):
                pass
        Impl.__pyop_descriptor__ = type("Desc", (), {"key": "pyop:wp:Impl"})()
        self._module("_pyop_plugin_wp", Impl=Impl)
        calls = []

        def mine(frame, event, arg):
            calls.append(event)
        saved = sys.getprofile()
        sys.setprofile(mine)
        try:
            with cp.AttrWatch({"impl_key": "pyop:wp:Impl"}, ["w"]):
                Impl().execute(None)
            after = sys.getprofile()
        finally:
            sys.setprofile(saved)
        self.assertIs(after, mine)


class BindingSlotsStateOutcomeTest(unittest.TestCase):
    """binding.info_to_dict reads each input's data type constraint and
    each attribute's required flag and default at its own index."""

    def test_per_slot_dtypes_and_attrs(self):
        import ctypes
        b = _cli("binding")
        ins = (b.IoInfo * 2)((b"x", 0), (b"idx", 0))
        outs = (b.IoInfo * 1)((b"y", 0),)
        in_sets = (b.DtypeSet * 2)((1 << 0, b"T"), (1 << 6 | 1 << 7, b"I"))
        attrs = (b.AttrInfo * 3)()
        for k, (name, t, required, value) in enumerate(
                (("axis", 1, True, None), ("scale", 2, False, 0.5), ("k", 1, False, 3))):
            attrs[k].name, attrs[k].type, attrs[k].required = name.encode(), t, required
            attrs[k].default_value.type = t
            if t == 1:
                attrs[k].default_value.u.i = value or 0
            else:
                attrs[k].default_value.u.f = value
        info = b.OpInfo(ctypes.sizeof(b.OpInfo), b"Op", b"pyop:op", b"op.py:1", None, None,
                        ins, 2, outs, 1, attrs, 3, 3, None, None)
        info.input_dtypes = in_sets
        d = b.info_to_dict(info)
        self.assertEqual([(i["dtypes"], i["dtype_symbol"]) for i in d["inputs"]],
                         [(["float32"], "T"), (["int32", "int64"], "I")])
        self.assertEqual([(a["name"], a["type"], a["required"], a["default"]) for a in d["attrs"]],
                         [("axis", "int", True, None), ("scale", "float", False, 0.5),
                          ("k", "int", False, 3)])



class ReferenceBfloat16OutcomeTest(unittest.TestCase):
    """A case with bfloat16 anywhere numpy would get it -- an input, an
    output, a Tensor attribute -- is not compared with the reference
    (numpy has no bfloat16): check_plugin.reference_problem says nothing
    and does not call the reference, instead of failing with a KeyError."""

    def test_bfloat16_output_or_tensor_attribute(self):
        try:
            import numpy  # noqa: F401
        except ImportError:
            self.skipTest("no numpy in this Python")
        cp, cc, b = _cli("check_plugin"), _cli("check_cases"), _cli("binding")
        bf16 = b.DTYPES.index("bfloat16")
        seen = []

        def ref(x, **attrs):
            seen.append(x)
            return x

        class R:
            produced = [[(_T(bf16, [2]), [1.0, 2.0])]]
        case = cc.Case("c", [[(0, [2], [1.0, 2.0])]], {}, "generated")
        self.assertIsNone(cp.reference_problem(_info(), case, R(), (ref, (0, 0))))
        info = _info(attrs=({"name": "w", "type": "Tensor", "required": True, "default": None},))
        case = cc.Case("c", [[(0, [2], [1.0, 2.0])]], {"w": (bf16, [1], [0.5])}, "generated")
        R.produced = [[(_T(0, [2]), [1.0, 2.0])]]
        self.assertIsNone(cp.reference_problem(info, case, R(), (ref, (0, 0))))
        self.assertEqual(seen, [])
        # the same with float32 is compared
        case = cc.Case("c", [[(0, [2], [1.0, 2.0])]], {"w": (0, [1], [0.5])}, "generated")
        R.produced = [[(_T(0, [2]), [1.0, 3.0])]]
        text = cp.reference_problem(info, case, R(), (ref, (0, 0)))
        self.assertTrue(text.startswith("output y differs from the reference at element 1"), text)


class StreamNoiseTest(unittest.TestCase):
    """supervise.read_events: only an event restarts the worker's limit. A
    plugin that writes to the event pipe in a loop (lines that are no
    events, or a half line that never ends) is stopped at its limit, not
    kept alive by its own noise."""

    def _read_forever(self, data):
        import types
        sv = _cli("supervise")
        rfd, wfd = os.pipe()
        os.write(wfd, b"x")  # readable for select; the reads below are fake
        now, reads, seen = [0.0], [0], []

        def monotonic():
            now[0] += 0.3
            return now[0]

        def read(fd, n):
            reads[0] += 1
            if reads[0] > 200:
                raise AssertionError("still reading after 200 chunks of noise")
            return data
        saved_time, saved_os = sv.time, sv.os
        sv.time = types.SimpleNamespace(monotonic=monotonic)
        sv.os = types.SimpleNamespace(read=read, killpg=os.killpg)
        try:
            got = sv.read_events(_Ended(), rfd, 1.0, lambda ev: seen.append(ev))
        finally:
            sv.time, sv.os = saved_time, saved_os
            os.close(rfd)
            os.close(wfd)
        return got, reads[0], seen

    def test_lines_that_are_no_events(self):
        got, reads, seen = self._read_forever(b"plugin noise\n[1, 2]\n{}\n")
        self.assertIsNone(got)  # stopped at the limit
        self.assertLess(reads, 10)
        self.assertEqual(seen, [])

    def test_a_half_line(self):
        got, reads, seen = self._read_forever(b'{"e": "activity", "calls": 9')
        self.assertIsNone(got)
        self.assertLess(reads, 10)
        self.assertEqual(seen, [])


if __name__ == "__main__":
    unittest.main()
