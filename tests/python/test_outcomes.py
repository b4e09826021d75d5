"""Outcome tests of the pyop package (issue 31's outcome pass, session 10):
each asserts what an op author, a host or the bridge sees at one branch of
bridge/python/pyop/*.py that no other test pinned down (the mutant each
kills is named in tests/mutation/mutants.txt, "outcome pass (session
10)")."""

import math
import os
import sys
import types
import unittest
from unittest import mock

import support
from support import TempDir, write
import pyop
from pyop import DataType, TensorDesc, _errors, _loader, _registry, _signature
from pyop._elements import Elements
from pyop._types import IoKind


OP = """
import pyop
from pyop import TensorDesc

@pyop.register_op(op_type=%r)
def f(x: TensorDesc) -> TensorDesc:
    return x
"""


def _plugin_modules():
    return [m for m in sys.modules if m.startswith(_registry.PLUGIN_PREFIX)]


class SignatureOutcomeTest(unittest.TestCase):
    def test_a_list_of_two_item_types_is_no_dynamic_io(self):
        # list[X] is a dynamic input or output; list[X, Y] is neither.
        two = list[TensorDesc, TensorDesc]
        self.assertIsNone(_signature.classify_input(two, _signature._is_tensor_annotation))
        self.assertIsNone(_signature.classify_output(two, _signature._is_tensor_annotation))
        self.assertEqual(_signature.classify_input(list[TensorDesc],
                                                   _signature._is_tensor_annotation),
                         IoKind.DYNAMIC)
        with self.assertRaises(TypeError) as cm:
            @pyop.register_op(op_type="Two")
            def f(x: list[TensorDesc, TensorDesc]) -> TensorDesc:
                return x
        self.assertIn("parameter 'x': an input must be annotated", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            @pyop.register_op(op_type="Two")
            def g(x: TensorDesc) -> list[TensorDesc, TensorDesc]:
                return [x]
        self.assertIn("return annotation", str(cm.exception))

    def test_dtypes_of_the_second_output(self):
        @pyop.register_op(op_type="Outs", dtypes={"y1": "int8", "x": ["float16", "float32"]})
        def f(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
            return x, x

        p = f.__pyop_descriptor__
        self.assertEqual(p.output_dtypes, ((0, ""), (1 << int(DataType.int8), "")))
        self.assertEqual(p.input_dtypes,
                         (((1 << int(DataType.float16)) | (1 << int(DataType.float32)), ""),))

    def test_compile_with_a_parameter_past_its_outputs_is_refused(self):
        @pyop.register_op(op_type="Cmp")
        def f(x: TensorDesc) -> TensorDesc:
            return x

        for method in ("compile", "declare_launch_args"):
            with self.subTest(method=method):
                ns = {}
                exec("class Impl:\n    def %s(self, x, y, extra):\n        pass\n" % method, ns)
                impl = pyop.register_op_impl(op_type="Cmp")(ns["Impl"]).__pyop_descriptor__
                with self.assertRaises(TypeError) as cm:
                    impl.bind(f.__pyop_descriptor__)
                self.assertIn("expected 2 positional parameters (inputs ['x'], then 1 "
                              "output(s)), got 3: ['x', 'y', 'extra']", str(cm.exception))
                self.assertFalse(impl.proto_known)
                # One output parameter is right.
                exec("class Ok:\n    def %s(self, x, y):\n        pass\n" % method, ns)
                ok = pyop.register_op_impl(op_type="Cmp")(ns["Ok"]).__pyop_descriptor__
                ok.bind(f.__pyop_descriptor__)
                self.assertTrue(ok.proto_known)
                self.assertEqual(ok.n_outputs, 1)

    def test_a_coroutine_function_seen_only_on_the_object(self):
        # An object inspect calls a coroutine function although its
        # __call__ is a def (an AsyncMock; on 3.12+ markcoroutinefunction):
        # its call returns a coroutine, so it is refused.
        m = mock.AsyncMock()
        self.assertIn("is a callable AsyncMock object whose __call__ is a coroutine function",
                      _signature.sync_problem(m) or "")
        with self.assertRaises(TypeError) as cm:
            pyop.register_samples(op_type="Op")(m)
        self.assertIn("samples function", str(cm.exception))
        self.assertIsNone(_signature.sync_problem(mock.Mock()))


class RegistryOutcomeTest(unittest.TestCase):
    def tearDown(self):
        _loader.shutdown()

    def test_a_second_implementation_reaches_libpyop(self):
        impl = """
import pyop

@pyop.register_op_impl(op_type="Dup")
class Impl:
    def execute(self, x):
        pass
"""
        with TempDir() as d:
            a = write(d, "a.py", impl)
            b = write(d, "b.py", impl)
            res = _loader.load_plugins([d])
            try:
                self.assertEqual([(i.op_type, i.file) for i in res.impls],
                                 [("Dup", a), ("Dup", b)])
            finally:
                _loader.unload_modules(res.modules)

    def test_code_digest_holds_the_own_file(self):
        # One directory element: the sources compiled are the same for both
        # descriptors, their own files differ (and so do their digests).
        with TempDir() as d:
            write(d, "a.py", OP % "A")
            write(d, "b.py", OP % "B" + OP % "B2")
            res = _loader.load_plugins([d])
            try:
                by = {p.op_type: p for p in res.protos}
                self.assertEqual(len({p.element for p in res.protos}), 1)
                self.assertNotEqual(by["A"].code_digest, by["B"].code_digest)
                self.assertEqual(by["B"].code_digest, by["B2"].code_digest)
                self.assertTrue(by["A"].code_digest.startswith("sha256:"))
            finally:
                _loader.unload_modules(res.modules)

    def test_a_wrapped_infer_meta_is_located_at_the_wrapped_function(self):
        import functools

        def inner(x: TensorDesc) -> TensorDesc:
            return x

        @functools.wraps(inner)
        def wrapper(*args, **kwargs):
            return inner(*args, **kwargs)

        p = pyop.register_op(op_type="Wrapped")(wrapper).__pyop_descriptor__
        self.assertEqual((p.file, p.line),
                         (__file__, inner.__code__.co_firstlineno))

    def test_nested_implementation_classes_get_their_qualified_key(self):
        class A:
            class Impl:
                def execute(self, x):
                    pass

        class B:
            class Impl:
                def execute(self, x):
                    pass

        ka = pyop.register_op_impl(op_type="KA")(A.Impl).__pyop_descriptor__.key
        kb = pyop.register_op_impl(op_type="KB")(B.Impl).__pyop_descriptor__.key
        self.assertNotEqual(ka, kb)
        self.assertTrue(ka.endswith(".A.Impl"), ka)

    def test_a_staticmethods_mismatch_is_blamed_on_the_method(self):
        @pyop.register_op(op_type="SB")
        def f(x: TensorDesc) -> TensorDesc:
            return x

        class Impl:
            @staticmethod
            def execute(wrong):
                pass

        impl = pyop.register_op_impl(op_type="SB")(Impl).__pyop_descriptor__
        with self.assertRaises(TypeError) as cm:
            impl.bind(f.__pyop_descriptor__)
        code = Impl.execute.__code__
        self.assertEqual(cm.exception.__pyop_blame__,
                         (code.co_filename, code.co_firstlineno, "Impl.execute"))


    def test_every_method_is_checked_not_only_execute(self):
        # bind (a Python prototype) and check_attrs (a foreign one) check
        # each method the class defines: here execute is right and the
        # later ones are wrong.
        @pyop.register_op(op_type="Every")
        def f(x: TensorDesc, *, k: int) -> TensorDesc:
            return x

        class Impl:
            def execute(self, x, *, k):
                pass

            def compile(self, x, y, *, k):
                pass

            def declare_launch_args(self, x, y, *, k, extra):
                pass

        impl = pyop.register_op_impl(op_type="Every")(Impl).__pyop_descriptor__
        self.assertEqual(impl.methods, ("execute", "compile", "declare_launch_args"))
        with self.assertRaises(TypeError) as cm:
            impl.bind(f.__pyop_descriptor__)
        self.assertIn("declare_launch_args() at", str(cm.exception))
        self.assertIn("parameter 'extra': not an attribute of the prototype", str(cm.exception))
        self.assertFalse(impl.proto_known)
        with self.assertRaises(TypeError) as cm:
            impl.check_attrs(["k"])
        self.assertIn("declare_launch_args() at", str(cm.exception))
        self.assertEqual(cm.exception.__pyop_blame__[2], "Impl.declare_launch_args")

class LoaderOutcomeTest(unittest.TestCase):
    def tearDown(self):
        _loader.shutdown()

    def test_a_package_before_a_module_of_the_same_name(self):
        # As Python's path finder: sub/__init__.py wins over sub.py in one
        # directory, for a package plugin's submodule and for a sibling.
        with TempDir() as d:
            write(d, "plug/__init__.py", "from . import sub\nimport _helper\n"
                  "KINDS = (sub.KIND, _helper.KIND)\n")
            write(d, "plug/sub/__init__.py", "KIND = 'package'\n")
            write(d, "plug/sub.py", "KIND = 'module'\n")
            write(d, "_helper/__init__.py", "KIND = 'package'\n")
            write(d, "_helper.py", "KIND = 'module'\n")
            res = _loader.load_plugins([d])
            try:
                plug = sys.modules[res.modules[0]]
                self.assertEqual(plug.KINDS, ("package", "package"))
            finally:
                _loader.unload_modules(res.modules)

    def test_unload_matches_whole_names(self):
        names = ("_out_pyop_m", "_out_pyop_m.sub", "_out_pyop_mx", "_out_pyop_m_x")
        for n in names:
            sys.modules[n] = types.ModuleType(n)
        try:
            removed = _loader.unload_modules(["_out_pyop_m"])
            self.assertEqual(sorted(m.__name__ for m in removed),
                             ["_out_pyop_m", "_out_pyop_m.sub"])
            self.assertIn("_out_pyop_mx", sys.modules)
            self.assertIn("_out_pyop_m_x", sys.modules)
        finally:
            for n in names:
                sys.modules.pop(n, None)

    def test_unload_drops_a_deep_submodule_imported_after_the_load(self):
        # A plugin package that imports pkg.lazy.deep at call time (after
        # the load listed its modules: res.modules is the root alone):
        # unloading the load's modules removes pkg.lazy and pkg.lazy.deep
        # too and returns them, nothing of the plugin is left in
        # sys.modules (batch 18 survivor, session 15:
        # bridge.b18.loader.deep_submodule_kept).
        with TempDir() as d:
            write(d, "pkg/__init__.py", "def value():\n"
                                        "    from .lazy import deep\n"
                                        "    return deep.VALUE\n")
            write(d, "pkg/lazy/__init__.py", "")
            write(d, "pkg/lazy/deep.py", "VALUE = 1\n")
            res = _loader.load_plugins([d])
            root = res.modules[0]
            try:
                self.assertEqual(res.modules, [root])
                self.assertEqual(sys.modules[root].value(), 1)
                self.assertIn(root + ".lazy.deep", sys.modules)
                removed = _loader.unload_modules(res.modules)
                self.assertEqual(sorted(m.__name__ for m in removed),
                                 [root, root + ".lazy", root + ".lazy.deep"])
                self.assertEqual(_plugin_modules(), [])
            finally:
                for n in [m for m in sys.modules if m == root or m.startswith(root + ".")]:
                    del sys.modules[n]

    def test_unloading_a_root_drops_its_submodules_samples(self):
        with TempDir() as d:
            write(d, "pkg/__init__.py", OP % "S" + "from . import samples\n")
            write(d, "pkg/samples.py", "import pyop\n\n@pyop.register_samples(op_type='S')\n"
                                       "def cases():\n    return []\n")
            res = _loader.load_plugins([d])
            try:
                self.assertIn("S", _registry.loaded_samples())
                root = res.modules[0]
                self.assertEqual(res.modules, [root, root + ".samples"])
                _loader.unload_modules([root])  # the root alone: its submodules too
                self.assertNotIn("S", _registry.loaded_samples())
                self.assertEqual(_plugin_modules(), [])
            finally:
                _loader.unload_modules(res.modules)

    def test_a_loads_modules_are_sorted_under_their_root(self):
        with TempDir() as d:
            write(d, "pkg/__init__.py", "from . import zeta, alpha, mid\n")
            for n in ("zeta", "alpha", "mid"):
                write(d, "pkg/%s.py" % n, "")
            res = _loader.load_plugins([d])
            try:
                root = res.modules[0]
                self.assertEqual(res.modules, [root] + [root + "." + n
                                                        for n in ("alpha", "mid", "zeta")])
            finally:
                _loader.unload_modules(res.modules)

    def test_a_skipped_link_gives_no_sibling_directory(self):
        # A plugin linked into the directory keeps its own neighbours; a
        # link the scan skips (_name) is no plugin and gives none.
        with TempDir() as d:
            write(d, "other/helper.py", "X = 1\n")
            write(d, "other/linked.py", "")
            write(d, "ops/plugin.py", "import helper\n")
            os.symlink(os.path.join(d, "other", "linked.py"), os.path.join(d, "ops", "_x.py"))
            with self.assertRaises(ModuleNotFoundError) as cm:
                _loader.load_plugins([os.path.join(d, "ops")])
            self.assertEqual(cm.exception.name, "helper")
            self.assertEqual(_plugin_modules(), [])
            # Linked under a plugin's name, its directory is searched.
            os.symlink(os.path.join(d, "other", "linked.py"), os.path.join(d, "ops", "y.py"))
            res = _loader.load_plugins([os.path.join(d, "ops")])
            _loader.unload_modules(res.modules)


    def test_the_plugin_finder_answers_for_plugin_modules_only(self):
        # A package on sys.path that a plugin imports a submodule of is
        # Python's to load, not the plugin loader's (no plugin source).
        with TempDir() as d:
            write(d, "site/outpyop_extpkg/__init__.py", "")
            write(d, "site/outpyop_extpkg/sub.py", "X = 1\n")
            write(d, "ops/plugin.py", "import outpyop_extpkg.sub\n" + OP % "Ext")
            sys.path.insert(0, os.path.join(d, "site"))
            try:
                res = _loader.load_plugins([os.path.join(d, "ops")])
                try:
                    sub = sys.modules["outpyop_extpkg.sub"]
                    self.assertNotIsInstance(sub.__loader__, _loader._PluginLoader)
                    self.assertNotIn("outpyop_extpkg.sub", res.modules)
                finally:
                    _loader.unload_modules(res.modules)
            finally:
                sys.path.remove(os.path.join(d, "site"))
                for n in ("outpyop_extpkg", "outpyop_extpkg.sub"):
                    sys.modules.pop(n, None)

    def test_a_helper_imported_by_its_name_keeps_its_own_spec(self):
        with TempDir() as d:
            write(d, "_helper.py", "X = 1\n")
            write(d, "plugin.py", "import _helper\nSEEN = _helper.__spec__.name\n")
            res = _loader.load_plugins([d])
            try:
                helper = [m for m in res.modules if m.endswith("__helper")]
                self.assertEqual(len(helper), 1)
                self.assertEqual(sys.modules[helper[0]].__spec__.name, helper[0])
                plugin = [m for m in res.modules if m.endswith("_plugin")][0]
                self.assertEqual(sys.modules[plugin].SEEN, helper[0])
                self.assertNotIn("_helper", sys.modules)
            finally:
                _loader.unload_modules(res.modules)

    @unittest.skipUnless(hasattr(BaseException, "add_note"), "exception notes: 3.11+")
    def test_a_failing_package_plugin_is_named_by_its_directory(self):
        with TempDir() as d:
            write(d, "pkg/__init__.py", "raise LookupError('pkg broken')\n")
            write(d, "mod.py", "raise KeyError('mod broken')\n")
            with self.assertRaises(KeyError) as cm:  # mod.py before pkg/ (sorted)
                _loader.load_plugins([d])
            self.assertEqual(cm.exception.__notes__,
                             ["while importing pyop plugin %s" % os.path.join(d, "mod.py")])
            os.remove(os.path.join(d, "mod.py"))
            with self.assertRaises(LookupError) as cm:
                _loader.load_plugins([d])
            self.assertEqual(cm.exception.__notes__,
                             ["while importing pyop plugin %s" % os.path.join(d, "pkg")])
            self.assertEqual(_plugin_modules(), [])

    def test_a_failed_call_adds_nothing_to_seen(self):
        # seen (a lane's record across the calls of one load) takes a
        # call's plugins only when it succeeds: after a failure the same
        # plugin is imported again, not taken as imported already.
        with TempDir() as d:
            write(d, "a/ok.py", OP % "Ok")
            write(d, "a/zbad.py", "raise RuntimeError('bad')\n")
            seen = {}
            with self.assertRaises(RuntimeError):
                _loader.load_plugins([os.path.join(d, "a")], seen)
            self.assertEqual(seen, {})
            self.assertEqual(_plugin_modules(), [])
            os.remove(os.path.join(d, "a", "zbad.py"))
            res = _loader.load_plugins([os.path.join(d, "a")], seen)
            try:
                self.assertEqual([p.op_type for p in res.protos], ["Ok"])
                self.assertEqual(len(seen), 1)
            finally:
                _loader.unload_modules(res.modules)

class ElementsOutcomeTest(unittest.TestCase):
    def _bf16(self, n, readonly=False):
        buf = bytes(2 * n) if readonly else bytearray(2 * n)
        return Elements(memoryview(buf).cast("H"), DataType.bfloat16), buf

    def test_negative_nan_and_infinity_keep_their_sign(self):
        e, buf = self._bf16(3)
        e[0] = -math.nan
        e[1] = -math.inf
        e[2] = math.inf
        words = memoryview(buf).cast("H").tolist()
        self.assertEqual(words, [0xFFC0, 0xFF80, 0x7F80])
        self.assertTrue(math.isnan(e[0]))
        self.assertEqual(math.copysign(1.0, e[0]), -1.0)
        self.assertEqual(e[1], -math.inf)

    def test_read_only_refuses_before_converting(self):
        e, _ = self._bf16(2, readonly=True)
        for value in (1.0, 1e39, "x"):
            with self.subTest(value=value):
                with self.assertRaises(TypeError) as cm:
                    e[0] = value
                self.assertIn("read-only", str(cm.exception))


class ErrorsOutcomeTest(unittest.TestCase):
    def test_last_origin_has_the_first_line_of_the_message(self):
        try:
            raise ValueError("first line\nsecond line")
        except ValueError as exc:
            text = _errors.format_exception(exc)
        self.assertTrue(text.startswith("ValueError: first line\nsecond line"))
        origin = _errors.last_origin()
        self.assertEqual(origin[3], "ValueError: first line")
        self.assertEqual(origin[0][0], "ValueError")

    def test_a_chained_cause_loses_pyops_frames(self):
        # The plugin catches pyop's error and raises its own from it: both
        # tracebacks show the plugin's frames, neither pyop's.
        with TempDir() as d:
            write(d, "plugin.py", """
import pyop
from pyop import TensorDesc

def declare():
    @pyop.register_op(op_type="bad op")
    def f(x: TensorDesc) -> TensorDesc:
        return x

try:
    declare()
except ValueError as e:
    raise RuntimeError("declaring failed") from e
""")
            try:
                _loader.load_plugins([d])
            except RuntimeError as exc:
                self.assertIsInstance(exc.__cause__, ValueError)
                text = _errors.format_exception(exc)
            else:
                self.fail("the load did not fail")
        self.assertIn("in declare", text)
        self.assertIn("The above exception was the direct cause", text)
        self.assertNotIn("_registry.py", text)
        self.assertNotIn(os.path.join("pyop", "_loader.py"), text)


class LaunchOutcomeTest(unittest.TestCase):
    def test_numpys_bool_is_a_bool_not_a_number(self):
        # numpy.bool_ is no int subclass: launch knows it by its type's
        # name (numpy is not needed here: a stand-in of that name).
        bool_ = type("bool_", (), {"__bool__": lambda self: self.v, "__index__": None})
        t, f = bool_(), bool_()
        t.v, f.v = True, False
        self.assertEqual((pyop.launch.scalar("bool", t).value,
                          pyop.launch.scalar("bool", f).value), (1, 0))
        with self.assertRaises(TypeError):
            pyop.launch.scalar("int32", t)

    def test_scalar_values_are_plain_numbers(self):
        # What the bridge packs: a float for a float type (an int given),
        # an int for an integer type (an object with __index__ given).
        class Idx:
            def __index__(self):
                return 5

        a = pyop.launch.scalar("float32", 2)
        self.assertIs(type(a.value), float)
        self.assertEqual(a.value, 2.0)
        b = pyop.launch.scalar("int32", Idx())
        self.assertIs(type(b.value), int)
        self.assertEqual(b.value, 5)


class GeLinkOutcomeTest(unittest.TestCase):
    """pyop._ge_link in a child interpreter (it edits sys.modules)."""

    CHILD = """
import json, sys, types
from pyop import _ge_link as gl
sys.modules["pyop._native"] = types.SimpleNamespace(log=lambda level, msg: None)
real = gl.GE_DIR
gl.GE_DIR = sys.argv[1]
out = {}
try:
    gl.install()
except RuntimeError as e:
    out["error"] = str(e)
out["left"] = sorted(n for n in sys.modules if n == "ge" or n.startswith("ge."))
out["status"] = list(gl.status())
gl.GE_DIR = real
gl.install()
out["then"] = list(gl.status())[0]
out["ours"] = getattr(sys.modules["ge"], "__pyop_ge__", False)
print(json.dumps(out))
"""

    def test_a_ge_that_fails_to_import_leaves_nothing(self):
        import json
        import subprocess
        with TempDir() as d:
            write(d, "ge/__init__.py", "from . import helper\nraise RuntimeError('ge broken')\n")
            write(d, "ge/helper.py", "")
            env = dict(os.environ, PYTHONPATH=support.PACKAGE_DIR)
            p = subprocess.run([sys.executable, "-B", "-c", self.CHILD, os.path.join(d, "ge")],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual(out["error"], "ge broken")
        self.assertEqual(out["left"], [])
        self.assertEqual(out["status"], ["not installed", ""])
        # The next install (the real package) is not blocked by a leftover.
        self.assertEqual((out["then"], out["ours"]), ("installed", True))


class StateOutcomeTest(unittest.TestCase):
    """Issue 31's state pass (session 11): state carried across
    registrations, loads, elements and nested collections, each test named
    after the bug it catches (tests/mutation/mutants.txt, bridge.st.pyop_*)."""

    def tearDown(self):
        _loader.shutdown()

    def test_every_implementation_of_a_load_is_bound(self):
        # Two implementations of one op type in one load: the second (kept
        # as an extra for libpyop's registry to judge) is bound to the
        # load's prototype like the first, and checked against it.
        impl = ("import pyop\n\n@pyop.register_op_impl(op_type='Two')\n"
                "class Impl:\n    def execute(self, %s):\n        pass\n")
        with TempDir() as d:
            write(d, "a.py", OP % "Two" + impl % "x")
            write(d, "b.py", impl % "x")
            res = _loader.load_plugins([d])
            _loader.unload_modules(res.modules)
        self.assertEqual([(i.proto_known, i.input_kinds, i.n_outputs) for i in res.impls],
                         [(True, (int(IoKind.REQUIRED),), 1)] * 2)
        with TempDir() as d:
            write(d, "a.py", OP % "Two" + impl % "x")
            write(d, "b.py", impl % "x, extra")
            with self.assertRaises(TypeError) as cm:
                _loader.load_plugins([d])
        self.assertIn("'Two'", str(cm.exception))
        self.assertIn("extra", str(cm.exception))
        self.assertEqual(_plugin_modules(), [])

    def test_a_nested_collection_keeps_what_is_made_inside_it(self):
        # Collections stack (a load inside a load): what is decorated,
        # compiled, discarded or kept as a layer's state inside the inner
        # one is the inner one's, and the outer one keeps its own.
        from pyop import ext

        def proto(op_type):
            def f(x: TensorDesc) -> TensorDesc:
                return x
            return pyop.register_op(op_type=op_type)(f)

        def samples():
            return []

        with _registry.collecting() as outer:
            proto("Gone")
            outer_state = ext.load_state("layer", dict)
            with _registry.collecting() as inner:
                proto("Inner")
                proto("Gone")
                pyop.register_samples(op_type="Inner")(samples)
                _registry.note_compiled("/nowhere/inner.py", b"x = 1\n")
                st = ext.load_state("layer", dict)
                self.assertIs(ext.load_state("layer", dict), st)
                self.assertIsNot(st, outer_state)
                ext.discard_descriptors(lambda d: d.op_type == "Gone")
            self.assertIs(ext.load_state("layer", dict), outer_state)
        self.assertEqual(sorted(inner.protos), ["Inner"])
        self.assertEqual(sorted(outer.protos), ["Gone"])
        self.assertEqual(list(inner.samples), ["Inner"])
        self.assertEqual(outer.samples, {})
        self.assertEqual(list(inner.compiled), ["/nowhere/inner.py"])
        self.assertEqual(outer.compiled, {})
        self.assertEqual(inner.layer_states, {"layer": st})
        self.assertEqual(outer.layer_states, {"layer": outer_state})

    def test_last_origin_is_per_thread(self):
        # The origin format_exception records is this thread's: another
        # thread neither sees nor consumes it.
        import threading
        try:
            raise ValueError("here")
        except ValueError as e:
            _errors.format_exception(e)
        seen = []
        t = threading.Thread(target=lambda: seen.append(_errors.last_origin()))
        t.start()
        t.join()
        self.assertEqual(seen, [None])
        origin = _errors.last_origin()
        self.assertEqual((origin[0][0], origin[1], origin[3]),
                         ("ValueError", __file__, "ValueError: here"))

    def test_a_rewritten_plugin_is_located_anew_after_unload(self):
        # unload_modules forgets the source lines it read: a plugin file
        # replaced by another of the same size and time stamp is located
        # by its new lines at the next load, not by the old ones kept.
        v1 = ("import pyop\n# pad\n\n@pyop.register_op_impl(op_type='L')\n"
              "class Impl:\n    def execute(self, x):\n        pass\n")
        v2 = ("import pyop\n\n@pyop.register_op_impl(op_type='L')\n"
              "class Impl:\n    def execute(self, x):\n        pass\n# pad\n")
        self.assertEqual(len(v1), len(v2))
        with TempDir() as d:
            f = write(d, "plugin.py", v1)
            st = os.stat(f)
            res = _loader.load_plugins([d])
            _loader.unload_modules(res.modules)
            first = [(i.file, i.line) for i in res.impls]
            write(d, "plugin.py", v2)
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
            res = _loader.load_plugins([d])
            _loader.unload_modules(res.modules)
        self.assertEqual(first, [(f, 4)])
        self.assertEqual([(i.file, i.line) for i in res.impls], [(f, 3)])

    def test_samples_of_two_loads_are_kept_apart(self):
        # The samples registry outlives a load: unloading the second load's
        # modules drops only its samples, and a caller that edits what
        # loaded_samples() returned changes nothing.
        src = ("import pyop\n\n@pyop.register_samples(op_type=%r)\n"
               "def cases():\n    return []\n")
        with TempDir() as d1, TempDir() as d2:
            write(d1, "a.py", src % "S1")
            write(d2, "b.py", src % "S2")
            r1 = _loader.load_plugins([d1])
            r2 = _loader.load_plugins([d2])
            try:
                got = _registry.loaded_samples()
                self.assertEqual(sorted(k for k in got if k in ("S1", "S2")), ["S1", "S2"])
                got.clear()
                self.assertIn("S1", _registry.loaded_samples())
                _loader.unload_modules(r2.modules)
                got = _registry.loaded_samples()
                self.assertIn("S1", got)
                self.assertNotIn("S2", got)
                self.assertTrue(got["S1"][1].startswith(os.path.join(d1, "a.py") + ":"))
            finally:
                _loader.unload_modules(r1.modules + r2.modules)
        self.assertNotIn("S1", _registry.loaded_samples())

    def test_each_directory_element_imports_its_own_helper(self):
        # Two directory elements each with a helper of the same name
        # (_common.py, not a plugin): each element's plugin imports its own
        # directory's, not the one the element before it imported.
        src = ("import _common\nimport pyop\nfrom pyop import TensorDesc\n\n"
               "@pyop.register_op(op_type='Op%d' % _common.VALUE)\n"
               "def f(x: TensorDesc) -> TensorDesc:\n    return x\n")
        with TempDir() as d:
            write(d, "one/a.py", src)
            write(d, "one/_common.py", "VALUE = 1\n")
            write(d, "two/b.py", src)
            write(d, "two/_common.py", "VALUE = 2\n")
            res = _loader.load_plugins([os.path.join(d, "one"), os.path.join(d, "two")])
            _loader.unload_modules(res.modules)
        self.assertEqual([(p.op_type, p.element) for p in res.protos], [("Op1", 0), ("Op2", 1)])
        self.assertEqual(sum(m.endswith("__common") for m in res.modules), 2, res.modules)
        self.assertEqual(_plugin_modules(), [])


class LifetimeOutcomeTest(unittest.TestCase):
    """The lifetime pass (session 15; tests/mutation/mutants.txt, bridge.lp.*):
    what a load caches is dropped when what it was made from changes."""

    def test_a_file_changed_within_a_load_gives_its_new_class_lines(self):
        """A class's line read from its file's source (Pythons before 3.13,
        which record no __firstlineno__) comes from the file as it is when
        the class registers: a file rewritten and imported again within one
        load gives the new line, not the first version's cached index
        (bridge.lp._registry.class_lines_stale)."""
        import importlib.util
        src = ("import pyop\nfrom pyop import Tensor\n\n%s"
               "@pyop.register_op_impl(op_type=%r)\nclass K:\n"
               "    def execute(self, x: Tensor) -> None:\n        pass\n")
        names = []
        try:
            with TempDir() as d, _registry.collecting() as coll:
                for k, (pad, op) in enumerate((("", "LinesV1"), ("# moved\n" * 5, "LinesV2"))):
                    path = write(d, "lines_mod.py", src % (pad, op))
                    name = "_pyop_test_lines_%d" % k
                    spec = importlib.util.spec_from_file_location(name, path)
                    mod = importlib.util.module_from_spec(spec)
                    sys.modules[name] = mod
                    names.append(name)
                    spec.loader.exec_module(mod)
            self.assertEqual((coll.impls["LinesV1"].line, coll.impls["LinesV2"].line), (4, 9))
        finally:
            for name in names:
                sys.modules.pop(name, None)


if __name__ == "__main__":
    unittest.main()
