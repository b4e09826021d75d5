"""The `pyop` command's rules that decide on their own, without a libpyop
call (tools/pyop_cli): each held at its edges and on both sides of them,
so that a flipped comparison or a dropped check shows. The command's
end-to-end behaviour is tested by the other examples.cli.* tests; these
call the modules directly (pure Python, no bridge).

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.rules):

  PYOP_TEST_TOOLS  tools/ of the source tree (holds the pyop_cli package)
"""

import os
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


if __name__ == "__main__":
    unittest.main()
