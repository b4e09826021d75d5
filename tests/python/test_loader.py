import ast
import inspect
import os
import sys
import unittest
from unittest import mock

import support
from support import TempDir, write
from pyop import _loader, _registry


OP = """
import pyop
from pyop import TensorDesc

@pyop.register_op(op_type=%r)
def f(x: TensorDesc) -> TensorDesc:
    return x
"""


class DiscoverTest(unittest.TestCase):
    def test_order_and_skipping(self):
        with TempDir() as d:
            write(d, "b.py", "")
            write(d, "a.py", "")
            write(d, "_private.py", "")
            write(d, ".hidden.py", "")
            write(d, "notes.txt", "")
            write(d, "pkg/__init__.py", "")
            write(d, "_pkg/__init__.py", "")
            write(d, "plain_dir/mod.py", "")
            found = [(os.path.basename(f), pkg is not None, stem) for f, pkg, stem in
                     _loader.discover(d)]
            self.assertEqual(found, [("a.py", False, "a"), ("b.py", False, "b"),
                                     ("__init__.py", True, "pkg")])
            self.assertEqual(_loader.discover(os.path.join(d, "a.py"))[0][2], "a")
            self.assertEqual(_loader.discover(os.path.join(d, "missing_dir")), [])
            with self.assertRaises(FileNotFoundError):
                _loader.discover(os.path.join(d, "missing.py"))
            with self.assertRaises(ValueError):
                _loader.discover("relative/dir")


class LoadTest(unittest.TestCase):
    def tearDown(self):
        _loader.shutdown()

    def _plugin_modules(self):
        return [m for m in sys.modules if m.startswith("_pyop_plugin_")]

    def test_load_and_unload(self):
        with TempDir() as d:
            write(d, "json.py", OP % "FromJson")
            write(d, "pkg/__init__.py", "from .sub import VALUE\nfrom . import sub\n" + OP % "Pkg")
            write(d, "pkg/sub.py", "VALUE = 42\n")
            path_before = list(sys.path)
            import json as stdlib_json
            res = _loader.load_plugins([d])
            try:
                self.assertEqual(sorted(p.op_type for p in res.protos), ["FromJson", "Pkg"])
                self.assertIs(sys.modules["json"], stdlib_json)
                self.assertEqual(sys.path, path_before)
                self.assertEqual(len(res.modules), 3)  # json, pkg, pkg.sub
                pkg = sys.modules[[m for m in res.modules if m.endswith("_pkg")][0]]
                self.assertEqual(pkg.VALUE, 42)
                self.assertEqual(res.protos[0].key.split(":")[1].split(".")[0],
                                 "json" if res.protos[0].op_type == "FromJson" else "pkg")
                self.assertFalse(os.path.exists(os.path.join(d, "__pycache__")))
                self.assertFalse(os.path.exists(os.path.join(d, "pkg", "__pycache__")))
            finally:
                _loader.unload_modules(res.modules)
            self.assertEqual(self._plugin_modules(), [])

    def test_failure_leaves_nothing(self):
        with TempDir() as d:
            write(d, "a_good.py", OP % "Good")
            write(d, "b_bad.py", "import sys\nsys.path.append('/x')\nraise SystemExit(4)\n")
            path_before = list(sys.path)
            with self.assertRaises(SystemExit) as cm:
                _loader.load_plugins([d])
            if hasattr(cm.exception, "__notes__"):
                self.assertIn("b_bad.py", cm.exception.__notes__[0])
            self.assertEqual(self._plugin_modules(), [])
            self.assertEqual(sys.path, path_before)

    def _meta_path_cases(self, d, name, setup, tail):
        write(d, name, "import sys\n" + setup + "\n" + tail)

    def test_meta_path_replaced_by_a_plugin(self):
        # Python's import system takes any iterable as sys.meta_path; the
        # loader's finders come off it all the same (it becomes a list of the
        # same finders), whatever the plugin made it: a tuple, a list
        # subclass whose remove does nothing (the loader once looped on it for
        # good), and the plugin's own exception is what propagates.
        setups = {
            "tuple": "sys.meta_path = tuple(sys.meta_path)",
            "subclass": ("class _L(list):\n"
                         "    calls = 0\n"
                         "    def remove(self, f):\n"
                         "        _L.calls += 1\n"
                         "        if _L.calls > 100:\n"
                         "            raise AssertionError('remove called 100 times')\n"
                         "sys.meta_path = _L(sys.meta_path)"),
        }
        for what, setup in setups.items():
            with self.subTest(what), TempDir() as d:
                _loader._install_finder()  # as a load leaves it
                before = list(sys.meta_path)
                self._meta_path_cases(d, "a_ok.py", setup, OP % ("Meta_" + what))
                res = _loader.load_plugins([d])
                try:
                    self.assertEqual([p.op_type for p in res.protos], ["Meta_" + what])
                    self.assertIs(type(sys.meta_path), list)
                    self.assertEqual(len(sys.meta_path), len(before))
                    self.assertTrue(all(a is b for a, b in zip(sys.meta_path, before)))
                finally:
                    _loader.unload_modules(res.modules)
            with self.subTest(what + " then raises"), TempDir() as d:
                self._meta_path_cases(d, "a_bad.py", setup, "raise SystemExit(6)\n")
                with self.assertRaises(SystemExit) as cm:
                    _loader.load_plugins([d])
                self.assertEqual(cm.exception.code, 6)
                self.assertIs(type(sys.meta_path), list)
                self.assertFalse([f for f in sys.meta_path
                                  if type(f).__name__ == "_SiblingFinder"])
                self.assertEqual(self._plugin_modules(), [])
                sys.meta_path[:] = before

    def test_meta_path_not_iterable(self):
        # A plugin that sets sys.meta_path to None and loads: the load fails
        # saying so (the bridge then puts the saved list back); one that
        # also raises keeps its own exception.
        before = sys.meta_path
        try:
            with TempDir() as d:
                self._meta_path_cases(d, "a_none.py", "sys.meta_path = None", "")
                with self.assertRaises(TypeError) as cm:
                    _loader.load_plugins([d])
                self.assertIn("sys.meta_path is NoneType", str(cm.exception))
                self.assertIn("(a plugin of %s replaced it)" % d, str(cm.exception))
                self.assertEqual(self._plugin_modules(), [])
            sys.meta_path = before
            with TempDir() as d:
                self._meta_path_cases(d, "a_none.py", "sys.meta_path = None",
                                      "raise SystemExit(7)\n")
                with self.assertRaises(SystemExit) as cm:
                    _loader.load_plugins([d])
                self.assertEqual(cm.exception.code, 7)
                self.assertEqual(self._plugin_modules(), [])
        finally:
            sys.meta_path = before
            for f in [f for f in before if type(f).__name__ == "_SiblingFinder"]:
                before.remove(f)

    def test_shutdown_takes_the_finder_off_any_meta_path(self):
        # The finder comes off a tuple too (it stayed there, and kept the
        # package's objects alive past the bridge's shutdown: the bridge
        # pinned itself); a finder
        # whose __eq__ says yes to everything stays; a sys.meta_path that is
        # None is no error.
        class Greedy:
            def __eq__(self, other):
                return True

            __hash__ = object.__hash__

            @staticmethod
            def find_spec(*args):
                return None

        before = list(sys.meta_path)
        greedy = Greedy()
        try:
            _loader._install_finder()
            first = sys.meta_path
            sys.meta_path = tuple(sys.meta_path) + (greedy,)
            _loader.shutdown()
            self.assertIs(type(sys.meta_path), list)
            self.assertFalse(any(f is _loader._PluginFinder for f in sys.meta_path))
            # Off the list it was put on too, which outlives its replacement
            # (CPython keeps the list sys.meta_path started as).
            self.assertFalse(any(f is _loader._PluginFinder for f in first))
            self.assertTrue(any(f is greedy for f in sys.meta_path))
            sys.meta_path = None
            _loader.shutdown()
        finally:
            sys.meta_path = [f for f in before if f is not _loader._PluginFinder]

    def test_deleted_sys_path_is_put_back(self):
        # sys.path has one owner, load_plugins: a plugin that deletes it gets
        # it back, and its own exception (not an AttributeError) propagates.
        with TempDir() as d:
            write(d, "a_bad.py", "import sys\ndel sys.path\nraise SystemExit(5)\n")
            path_before = list(sys.path)
            with self.assertRaises(SystemExit) as cm:
                _loader.load_plugins([d])
            self.assertEqual(cm.exception.code, 5)
            self.assertEqual(sys.path, path_before)
            self.assertEqual(self._plugin_modules(), [])
        with TempDir() as d:
            write(d, "a_ok.py", "import sys\ndel sys.path\n" + OP % "DelPath")
            path_before = list(sys.path)
            res = _loader.load_plugins([d])
            try:
                self.assertEqual([p.op_type for p in res.protos], ["DelPath"])
                self.assertEqual(sys.path, path_before)
            finally:
                _loader.unload_modules(res.modules)

    def test_duplicate_across_files(self):
        # Both definitions reach libpyop, whose registry decides (conflict
        # naming both, or one op when key and content are the same).
        with TempDir() as d:
            a = write(d, "a.py", OP % "Dup")
            b = write(d, "b.py", OP % "Dup")
            res = _loader.load_plugins([d])
            self.assertEqual([(p.op_type, p.file) for p in res.protos],
                             [("Dup", a), ("Dup", b)])
            _loader.unload_modules(res.modules)

    def test_source_digests(self):
        # What libpyop compares to tell one definition from two (bridge ABI
        # 1.3 source_digest): the SHA-256 of the defining file's bytes.
        import hashlib
        with TempDir() as d:
            a = write(d, "one/ops.py", OP % "Same")
            write(d, "two/ops.py", OP % "Same")  # the same bytes
            write(d, "three/ops.py", "# other\n" + OP % "Same")
            res = _loader.load_plugins([os.path.join(d, n) for n in ("one", "two", "three")])
            try:
                with open(a, "rb") as f:
                    want = "sha256:" + hashlib.sha256(f.read()).hexdigest()
                digests = [p.source_digest for p in res.protos]
                self.assertEqual(digests[:2], [want, want])
                self.assertNotEqual(digests[2], want)
                self.assertTrue(digests[2].startswith("sha256:"))
            finally:
                _loader.unload_modules(res.modules)
        self.assertIsNone(_registry.source_digest(os.path.join(d, "gone.py")))

    def test_what_was_compiled(self):
        # Interpreter lanes compare what each interpreter compiled (issue 28
        # item 4): a plugin replaced while it is imported keeps the digest of
        # the bytes compiled, not of the file read at decorator time; its
        # path's code_digest covers a package's submodules; element is the
        # index of the path.
        import hashlib
        replace = ("import os\n"
                   "with open(__file__ + '.new', 'w') as f:\n"
                   "    f.write('# version 2\\n')\n"
                   "os.replace(__file__ + '.new', __file__)\n")
        with TempDir() as d:
            v1 = replace + OP % "Replaced"
            a = write(d, "one/ops.py", v1)
            write(d, "two/pkg/__init__.py", "from . import sub\n" + OP % "Pkg")
            write(d, "two/pkg/sub.py", "VALUE = 1\n")
            paths = [os.path.join(d, n) for n in ("one", "two")]
            res = _loader.load_plugins(paths)
            _loader.unload_modules(res.modules)
            by_type = {p.op_type: p for p in res.protos}
            self.assertEqual(by_type["Replaced"].source_digest,
                             "sha256:" + hashlib.sha256(v1.encode()).hexdigest())
            self.assertEqual([by_type[t].element for t in ("Replaced", "Pkg")], [0, 1])
            write(d, "one/ops.py", v1)
            first = {p.op_type: p.code_digest for p in res.protos}
            res = _loader.load_plugins(paths)
            _loader.unload_modules(res.modules)
            self.assertEqual({p.op_type: p.code_digest for p in res.protos}, first)
            write(d, "one/ops.py", v1)
            write(d, "two/pkg/sub.py", "VALUE = 2\n")  # only the package's submodule differs
            res = _loader.load_plugins(paths)
            _loader.unload_modules(res.modules)
            again = {p.op_type: p for p in res.protos}
            self.assertEqual(again["Replaced"].code_digest, first["Replaced"])
            self.assertNotEqual(again["Pkg"].code_digest, first["Pkg"])
            self.assertEqual(again["Pkg"].source_digest, by_type["Pkg"].source_digest)

    def test_seen_across_calls(self):
        # A lane loads one path at a time (issue 28 item 7): with seen, a
        # plugin an earlier call imported (the same directory again) is not
        # imported twice, as in one load of both paths.
        with TempDir() as d:
            write(d, "ops.py", OP % "Once")
            seen = {}
            first = _loader.load_plugins([d], seen)
            second = _loader.load_plugins([d], seen)
            try:
                self.assertEqual([p.op_type for p in first.protos], ["Once"])
                self.assertEqual(second.protos, [])
                self.assertEqual(len(seen), 1)
            finally:
                _loader.unload_modules(first.modules + second.modules)

    def test_reload_sees_edits(self):
        with TempDir() as d:
            for value in (1, 2, 3):
                write(d, "p.py", "VALUE = %d\n" % value + OP % "R")
                res = _loader.load_plugins([os.path.join(d, "p.py")])
                mod = sys.modules[res.modules[0]]
                self.assertEqual(mod.VALUE, value)
                _loader.unload_modules(res.modules)

    def test_unique_names(self):
        with TempDir() as d:
            write(d, "my-op.py", OP % "Dash")
            r1 = _loader.load_plugins([d])
            r2 = _loader.load_plugins([d])
            try:
                self.assertNotEqual(r1.modules, r2.modules)
                self.assertTrue(r1.modules[0].endswith("_my_op"))
                self.assertEqual(r1.protos[0].key, "pyop:my_op.f")
            finally:
                _loader.unload_modules(r1.modules + r2.modules)


RUNS_NOT = "raise RuntimeError('this plugin must not be imported')\n"


@unittest.skipIf(getattr(sys, "_is_gil_enabled", lambda: True)(),
                 "a free-threaded Python running without its GIL only")
class FreeThreadedTest(unittest.TestCase):
    """On a free-threaded CPython the constants of plugin code are immortal,
    as when loaded from a .pyc (docs/host-guide.md, "Python ops in
    parallel"): compile() leaves them mortal, one reference count that every
    thread running the code writes."""

    def tearDown(self):
        _loader.shutdown()

    def test_plugin_constants_are_immortal(self):
        with TempDir() as d:
            write(d, "consts.py", OP % "Consts" + "\ndef scale(v):\n    return v * 0.125 + 1.5\n")
            res = _loader.load_plugins([d])
            try:
                mod = sys.modules[res.modules[0]]
                consts = [c for c in mod.scale.__code__.co_consts if isinstance(c, float)]
                self.assertEqual(sorted(consts), [0.125, 1.5])
                for c in consts:
                    # An immortal object's count reads as a fixed huge value.
                    self.assertGreater(sys.getrefcount(c), 1 << 30, c)
                self.assertEqual(mod.scale(8.0), 2.5)
            finally:
                _loader.unload_modules(res.modules)


class LayoutTest(unittest.TestCase):
    """Entries of one directory that would be one module (issue 17, item 10)."""

    def tearDown(self):
        _loader.shutdown()

    def _clean(self):
        self.assertEqual([m for m in sys.modules if m.startswith("_pyop_plugin_")], [])

    def refused(self, d, *needles):
        with self.assertRaises(ImportError) as cm:
            _loader.load_plugins([d])
        for n in needles:
            self.assertIn(n, str(cm.exception))
        self._clean()  # nothing ran: both plugins raise if imported

    def test_module_beside_package(self):
        with TempDir() as d:
            write(d, "foo.py", RUNS_NOT)
            write(d, "foo/__init__.py", RUNS_NOT)
            self.refused(d, "plugin directory %s" % d, "foo/ and foo.py are both the module "
                         "'foo'", "Python itself would import only the package")
            # discover() still lists both (pyop doctor shows them).
            self.assertEqual([stem for _, _, stem in _loader.discover(d)], ["foo", "foo"])

    def test_module_beside_plain_directory_loads(self):
        with TempDir() as d:  # foo/ without __init__.py is not a plugin
            write(d, "foo.py", OP % "Foo")
            write(d, "foo/data.py", RUNS_NOT)
            res = _loader.load_plugins([d])
            try:
                self.assertEqual([p.op_type for p in res.protos], ["Foo"])
            finally:
                _loader.unload_modules(res.modules)

    def test_link_to_another_entry_imports_it_once(self):
        # As CANN GE (a file is imported once by its resolved path): the
        # first name imports it, the other is an alias of that module.
        import builtins
        counter = ("import builtins\n"
                   "builtins._pyop_test_runs = getattr(builtins, '_pyop_test_runs', 0) + 1\n")
        for kind in ("file", "package"):
            with self.subTest(kind), TempDir() as d:
                if kind == "file":
                    write(d, "foo.py", counter + OP % "Foo")
                    os.symlink(os.path.join(d, "foo.py"), os.path.join(d, "bar.py"))
                else:
                    write(d, "pkg/__init__.py", counter + OP % "Foo")
                    os.symlink(os.path.join(d, "pkg"), os.path.join(d, "alias"))
                write(d, "user.py", "import %s as a, %s as b\nSAME = a is b\n"
                      % (("bar", "foo") if kind == "file" else ("alias", "pkg")) + OP % "User")
                builtins._pyop_test_runs = 0
                res = _loader.load_plugins([d])
                try:
                    self.assertEqual(builtins._pyop_test_runs, 1)
                    self.assertEqual(sorted(p.op_type for p in res.protos), ["Foo", "User"])
                    user = [p for p in res.protos if p.op_type == "User"][0]
                    self.assertTrue(sys.modules[user.infer.__module__].SAME)
                finally:
                    _loader.unload_modules(res.modules)
                    del builtins._pyop_test_runs
                self._clean()

    def test_link_from_elsewhere_loads(self):
        with TempDir() as d, TempDir() as real:
            write(real, "impl.py", OP % "Linked")
            os.symlink(os.path.join(real, "impl.py"), os.path.join(d, "linked.py"))
            res = _loader.load_plugins([d])
            try:
                self.assertEqual([p.op_type for p in res.protos], ["Linked"])
            finally:
                _loader.unload_modules(res.modules)

    def test_one_file_reached_from_two_paths_imports_once(self):
        counter = ("import builtins\n"
                   "builtins._pyop_test_runs = getattr(builtins, '_pyop_test_runs', 0) + 1\n")
        with TempDir() as d, TempDir() as d2:
            write(d, "once.py", counter + OP % "Once")
            os.symlink(os.path.join(d, "once.py"), os.path.join(d2, "once.py"))
            write(d2, "user.py", "import once\nONCE = once\n" + OP % "User")
            import builtins
            for paths in ([d, d], [d, d2]):
                with self.subTest(paths=paths):
                    builtins._pyop_test_runs = 0
                    res = _loader.load_plugins(paths)
                    try:
                        self.assertEqual(builtins._pyop_test_runs, 1)
                        self.assertEqual(sorted(p.op_type for p in res.protos),
                                         ["Once"] if paths == [d, d] else ["Once", "User"])
                        if paths == [d, d2]:  # the second path's sibling is the same module
                            user = [p for p in res.protos if p.op_type == "User"][0]
                            once = [p for p in res.protos if p.op_type == "Once"][0]
                            self.assertIs(sys.modules[user.infer.__module__].ONCE,
                                          sys.modules[once.infer.__module__])
                    finally:
                        _loader.unload_modules(res.modules)
                    self._clean()
            del builtins._pyop_test_runs

    def test_suffix_is_case_sensitive(self):
        with TempDir() as d:  # as the C scan (src/scan.c): .PY is not Python
            write(d, "foo.PY", RUNS_NOT)
            write(d, "bar.Py", RUNS_NOT)
            self.assertEqual(_loader.discover(d), [])

    def test_same_names_in_two_directories(self):
        helper_user = "import helper\nVALUE = helper.VALUE\n" + OP
        with TempDir() as d1, TempDir() as d2:
            write(d1, "helper.py", "VALUE = 1\n")
            write(d2, "helper.py", "VALUE = 2\n")
            write(d1, "ops.py", helper_user % "One")
            write(d2, "ops.py", helper_user % "Two")
            res = _loader.load_plugins([d1, d2])
            try:
                mods = {p.op_type: sys.modules[p.infer.__module__] for p in res.protos}
                self.assertEqual((mods["One"].VALUE, mods["Two"].VALUE), (1, 2))
                self.assertIsNot(mods["One"], mods["Two"])
                self.assertNotIn("helper", sys.modules)
            finally:
                _loader.unload_modules(res.modules)
            self._clean()

    def test_names_that_are_not_identifiers(self):
        with TempDir() as d:  # loaded under sanitized unique names; not importable by name
            for i, name in enumerate(("1op.py", "a b.py", "x.y.py", "caf\u00e9.py")):
                write(d, name, OP % ("N%d" % i))
            res = _loader.load_plugins([d])
            try:
                self.assertEqual(sorted(p.op_type for p in res.protos),
                                 ["N0", "N1", "N2", "N3"])
                for m in res.modules:
                    self.assertTrue(m.isidentifier(), m)
            finally:
                _loader.unload_modules(res.modules)


class NamespaceTest(unittest.TestCase):
    """A directory without __init__.py is a namespace package for the
    plugins beside it (issue 17, item 16), and inside a package plugin."""

    def tearDown(self):
        _loader.shutdown()

    def test_sibling_namespace_package(self):
        with TempDir() as d:
            write(d, "common/utils.py", "VALUE = 5\n")
            write(d, "common/deep/more.py", "VALUE = 6\n")
            write(d, "plugin.py", "from common.utils import VALUE\nimport common.utils\n"
                  "import common.deep.more as more\nimport common\n"
                  "ALL = (VALUE, common.utils.VALUE, more.VALUE, list(common.__path__))\n"
                  + OP % "Ns")
            path_before = list(sys.path)
            res = _loader.load_plugins([d])
            try:
                mod = sys.modules[res.protos[0].infer.__module__]
                self.assertEqual(mod.ALL, (5, 5, 6, [os.path.join(d, "common")]))
                self.assertTrue(mod.common.__name__.startswith("_pyop_plugin_"))
                self.assertEqual(sys.path, path_before)
                self.assertNotIn("common", sys.modules)  # the alias left with the load
                self.assertNotIn("common.utils", sys.modules)
                self.assertIn(mod.common.__name__ + ".deep.more", res.modules)
            finally:
                _loader.unload_modules(res.modules)
            self.assertEqual([m for m in sys.modules if m.startswith("_pyop_plugin_")], [])

    def test_a_namespace_package_of_every_sibling_directory(self):
        # A plugin linked into the directory keeps its own neighbours: a
        # namespace package there and beside the link is made of both
        # portions, as Python makes one of every sys.path entry's
        # (dataflow pass, session 13: bridge.df.loader.namespace_one_portion).
        with TempDir() as d:
            here, there = os.path.join(d, "here"), os.path.join(d, "there")
            write(here, "common/near.py", "VALUE = 1\n")
            write(there, "common/far.py", "VALUE = 2\n")
            write(there, "plugin.py", "import common.near, common.far\n"
                  "ALL = (common.near.VALUE, common.far.VALUE, sorted(common.__path__))\n"
                  + OP % "NsTwo")
            os.symlink(os.path.join(there, "plugin.py"), os.path.join(here, "plugin.py"))
            res = _loader.load_plugins([here])
            try:
                mod = sys.modules[res.protos[0].infer.__module__]
                self.assertEqual(mod.ALL, (1, 2, sorted([os.path.join(here, "common"),
                                                         os.path.join(there, "common")])))
            finally:
                _loader.unload_modules(res.modules)

    def test_regular_module_wins_over_namespace(self):
        with TempDir() as d:  # as in Python: common.py before the directory common/
            write(d, "common/utils.py", "VALUE = 5\n")
            write(d, "_x/common.py", "")
            write(d, "common.py", "WHICH = 'module'\n")
            write(d, "plugin.py", "import common\nWHICH = common.WHICH\n" + OP % "Ns")
            res = _loader.load_plugins([d])
            try:
                self.assertEqual(sorted(p.op_type for p in res.protos), ["Ns"])
                mod = sys.modules[res.protos[0].infer.__module__]
                self.assertEqual(mod.WHICH, "module")
            finally:
                _loader.unload_modules(res.modules)

    def test_namespace_inside_package_plugin(self):
        with TempDir() as d:
            write(d, "pkg/__init__.py", "from .inner.helper import VALUE\n" + OP % "PkgNs")
            write(d, "pkg/inner/helper.py", "VALUE = 7\n")
            res = _loader.load_plugins([d])
            try:
                mod = sys.modules[res.protos[0].infer.__module__]
                self.assertEqual(mod.VALUE, 7)
                self.assertEqual(len(res.modules), 3)  # pkg, pkg.inner, pkg.inner.helper
            finally:
                _loader.unload_modules(res.modules)

    def test_a_standard_module_name_is_never_a_sibling(self):
        # A plugin directory's file named like a standard-library module is
        # never what a sibling's import of that name gets: the standard
        # module, or ImportError when this Python lacks it (the case a
        # finder order alone does not cover: the mutation check).
        import importlib.util
        names = sorted(n for n in getattr(sys, "stdlib_module_names", ())
                       if n.isidentifier() and not n.startswith("_")
                       and importlib.util.find_spec(n) is None)
        if not names:
            self.skipTest("every standard-library module is installed for %s" % sys.executable)
        name = names[0]
        with TempDir() as d:
            write(d, name + ".py", "FROM_PLUGIN_DIRECTORY = True\n")
            write(d, "uses.py", "try:\n    import %s as m\nexcept ImportError:\n    m = None\n"
                  "GOT = getattr(m, 'FROM_PLUGIN_DIRECTORY', m is not None)\n" % name
                  + OP % "Uses")
            res = _loader.load_plugins([d])
            try:
                mod = sys.modules[res.protos[0].infer.__module__]
                self.assertIs(mod.GOT, False, "import %s in a plugin got the directory's %s.py"
                              % (name, name))
                self.assertNotIn(name, sys.modules)
            finally:
                _loader.unload_modules(res.modules)

    def test_missing_name_still_fails(self):
        with TempDir() as d:
            write(d, "plugin.py", "import common.nothing_here\n")
            write(d, "common/utils.py", "")
            with self.assertRaises(ModuleNotFoundError) as cm:
                _loader.load_plugins([d])
            self.assertEqual(cm.exception.name, "common.nothing_here")


CLASSES = """
import pyop

def deco(c):
    return c

class Plain:
    pass

@deco
class Decorated:
    class Inner:
        @deco
        @deco
        class Deeper:
            pass

def factory():
    @deco
    class Local:
        pass
    return Local

async def afactory():
    class ALocal:
        pass
    return ALocal

if True:
    class InIf:
        pass
else:
    class InIf:
        pass

try:
    class InTry:
        pass
except Exception:
    class InExcept:
        pass
finally:
    class InFinally:
        pass

for _ in range(1):
    class InFor:
        pass

with open(__file__) as _f:
    class InWith:
        pass

class Twice:
    pass

class Twice:  # noqa: F811 (the first one is what inspect finds)
    pass

match 1:
    case 1:
        class InMatch:
            pass
"""


class ClassLocationTest(unittest.TestCase):
    """_registry._class_location: the lines inspect.getsourcelines gives,
    found with one parse per module (issue 17, item 18)."""

    def tearDown(self):
        _loader.shutdown()

    def test_same_lines_as_inspect(self):
        with TempDir() as d:
            path = write(d, "classes.py", CLASSES)
            res = _loader.load_plugins([d])
            try:
                mod = sys.modules[res.modules[0]]
                index = _registry._class_lines(path, mod)
                classes = [mod.Plain, mod.Decorated, mod.Decorated.Inner,
                           mod.Decorated.Inner.Deeper, mod.factory(), mod.InIf, mod.InTry,
                           mod.InFinally, mod.InFor, mod.InWith, mod.Twice, mod.InMatch]
                for cls in classes:
                    with self.subTest(cls=cls.__qualname__):
                        if not hasattr(cls, "__firstlineno__"):  # 3.13 reads that, as we do
                            self.assertEqual(index[cls.__qualname__],
                                             inspect.getsourcelines(cls)[1])
                        self.assertEqual(_registry._class_location(cls),
                                         (path, inspect.getsourcelines(cls)[1]))
                self.assertIn("afactory.<locals>.ALocal", index)
                self.assertEqual(index["InExcept"],
                                 CLASSES.splitlines().index("    class InExcept:") + 1)
            finally:
                _loader.unload_modules(res.modules)

    def test_one_parse_per_module(self):
        impl = ("@pyop.register_op_impl(op_type='Many%d')\nclass Impl%d:\n"
                "    def execute(self, x):\n        pass\n\n")
        with TempDir() as d:
            path = write(d, "many.py",
                         "import pyop\n\n" + "".join(impl % (i, i) for i in range(60)))
            parses = []
            real_parse = ast.parse

            def counting_parse(source, *args, **kw):
                parses.append(1)
                return real_parse(source, *args, **kw)

            with mock.patch.object(ast, "parse", counting_parse):
                res = _loader.load_plugins([d])
            try:
                self.assertLessEqual(len(parses), 1)
                self.assertEqual([(i.op_type, i.line) for i in res.impls],
                                 [("Many%d" % i, 3 + 5 * i) for i in range(60)])
                self.assertEqual({i.file for i in res.impls}, {path})
            finally:
                _loader.unload_modules(res.modules)

    def test_thousand_ops_in_one_file(self):
        op = ("@pyop.register_op(op_type='Big{i}')\n"
              "def big{i}(x: TensorDesc) -> TensorDesc:\n    return x\n\n"
              "@pyop.register_op_impl(op_type='Big{i}')\nclass Big{i}Impl:\n"
              "    def execute(self, x):\n        pass\n\n")
        head = "import pyop\nfrom pyop import TensorDesc\n\n"
        with TempDir() as d:
            write(d, "big.py", head + "".join(op.format(i=i) for i in range(1000)))
            res = _loader.load_plugins([d])
            try:
                self.assertEqual([(p.op_type, p.line) for p in res.protos],
                                 [("Big%d" % i, 4 + 9 * i) for i in range(1000)])
                self.assertEqual([(p.op_type, p.line) for p in res.impls],
                                 [("Big%d" % i, 8 + 9 * i) for i in range(1000)])
            finally:
                _loader.unload_modules(res.modules)


class GeLinkTest(unittest.TestCase):
    """pyop._ge_link: installing libpyop's ge package is idempotent (a
    second install, the package already its own, is no foreign ge), and
    uninstall removes it."""

    def setUp(self):
        self.saved = {n: m for n, m in sys.modules.items() if n == "ge" or n.startswith("ge.")}
        for n in self.saved:
            del sys.modules[n]
        self.meta_path = list(sys.meta_path)

    def tearDown(self):
        from pyop import _ge_link
        _ge_link.uninstall()
        _ge_link._status.update(state="not installed", detail="")
        for n in [n for n in sys.modules if n == "ge" or n.startswith("ge.")]:
            del sys.modules[n]
        sys.modules.update(self.saved)
        sys.meta_path[:] = self.meta_path

    def test_install_twice_then_uninstall(self):
        from pyop import _ge_link
        _ge_link.install()
        first = sys.modules["ge"]
        self.assertEqual(_ge_link.status(), ("installed", _ge_link.GE_DIR))
        _ge_link.install()
        self.assertIs(sys.modules["ge"], first)
        self.assertEqual(_ge_link.status(), ("installed", _ge_link.GE_DIR))
        removed = _ge_link.uninstall()
        self.assertIn(first, removed)
        self.assertNotIn("ge", sys.modules)
        self.assertEqual(_ge_link.status(), ("not installed", ""))

    def test_foreign_ge_is_left_alone(self):
        from pyop import _ge_link
        import types
        other = types.ModuleType("ge")
        other.__file__ = "/elsewhere/ge/__init__.py"
        sys.modules["ge"] = other
        _ge_link.install()
        self.assertIs(sys.modules["ge"], other)
        self.assertEqual(_ge_link.status(), ("foreign", "/elsewhere/ge/__init__.py"))
        self.assertEqual(_ge_link.uninstall(), [])
        self.assertIs(sys.modules["ge"], other)


if __name__ == "__main__":
    unittest.main()
