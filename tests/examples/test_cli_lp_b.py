"""The `pyop` command end to end (run, list, doctor as a user runs them:
bin/pyop in a subprocess, its exit status, --json fields and text), for
the rules only a whole command reaches: each value accepted in several
forms (PYOP_PYTHON as a path, a wrapper script, a command name, empty;
PYOP_LIBRARY set, empty, unset; the build's Python under another name; an
ASCEND_CUSTOM_OPP_PATH element missing, with a trailing slash), the later
one of many (the last of several plugins tried alone, a later path
element, a later subdirectory, a later attribute's default, a later
artifact), and the state a command keeps across its trial loads (the
plugin path and the trial directories doctor makes). Issue 31's lifetime
pass (session 15): a class names the mutants (cli.lp.* in
tests/mutation/mutants.txt) it kills that no earlier test did; the others
hold rules earlier tests hold too, here end to end.

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.lp_b):

  PYOP_TEST_CLI           the build tree's bin/pyop
  PYOP_TEST_BUILD_PYTHON  the build's default Python (bin/pyop's #! line)
  PYOP_TEST_TOOLS         tools/ of the source tree (the pyop_cli package,
                          for the rules read without a build)

Needs only the standard library.
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


def _op(op_type, extra=""):
    """A plugin registering op_type: y = x's shape and dtype."""
    return textwrap.dedent('''\
        import pyop
        from pyop import TensorDesc

        @pyop.register_op(op_type="%s")
        def op(x: TensorDesc%s) -> TensorDesc:
            return TensorDesc(shape=x.shape, dtype=x.dtype)
        ''') % (op_type, extra)


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class _Cli(unittest.TestCase):
    """bin/pyop run as a user runs it, in a directory of its own plugins."""

    @classmethod
    def setUpClass(cls):
        cls.cli = _need("PYOP_TEST_CLI")
        cls.build_python = _need("PYOP_TEST_BUILD_PYTHON")
        cls.tmp = tempfile.mkdtemp(prefix="pyop-lp-b-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pyop(self, *args, opp=None, unset=(), argv0=None, **extra):
        """(exit status, stdout, stderr) of bin/pyop ARGS; opp: the plugin
        path (None: unset); unset: variables removed; argv0: the Python
        to run the script with (None: its #! line)."""
        env = dict(ENV)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        for k in ("PYOP_PYTHON", "PYOP__REEXECUTED", "PYOP_LIBRARY",
                  "ASCEND_CUSTOM_OPP_PATH") + tuple(unset):
            env.pop(k, None)
        if opp is not None:
            env["ASCEND_CUSTOM_OPP_PATH"] = opp
        env.update(extra)
        cmd = ([argv0] if argv0 else []) + [self.cli] + list(args)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        return r.returncode, r.stdout, r.stderr

    def dir(self, name, files):
        """A directory under the test's tmp with files {relative path: text}."""
        root = os.path.join(self.tmp, name)
        for rel, text in files.items():
            _write(os.path.join(root, rel), text)
        return root


class PyopPythonFormsTest(_Cli):
    """PYOP_PYTHON in each form it is accepted in, the rarer first: a
    wrapper script that execs a Python (the command is exec'd under it
    once, its result still on stdout: the exec gives fd 1 back first), the
    same wrapper as a command name found on PATH, the variable set empty
    (as unset: the command runs, no 'no such Python'); and the build's
    Python started under another name (a symlink) is still the build's.
    Kills cli.lp.main.empty_pyop_python_refused, cli.lp.doctor.build_python_by_name;
    the exec with fd 1 still redirected (output.release() dropped before
    os.execv) fails test_wrapper_by_path_and_by_name too, whichever python3
    PATH finds (examples.cli.messages catches it only where PATH's python3
    is another interpreter the build has a bridge for)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ops = os.path.join(cls.tmp, "ops")
        _write(os.path.join(cls.ops, "fine.py"), _op("LpFine"))
        cls.bin = os.path.join(cls.tmp, "bin")
        os.makedirs(cls.bin)
        cls.count = os.path.join(cls.tmp, "wrapper.count")
        cls.wrapper = os.path.join(cls.bin, "pyop-lp-python")
        with open(cls.wrapper, "w") as f:
            f.write('#!/bin/sh\necho ran >> "%s"\nexec "%s" "$@"\n'
                    % (cls.count, cls.build_python))
        os.chmod(cls.wrapper, 0o755)
        cls.alias = os.path.join(cls.bin, "python-by-another-name")
        os.symlink(os.path.realpath(cls.build_python), cls.alias)

    def runs(self):
        """How often the wrapper ran since the last call."""
        if not os.path.exists(self.count):
            return 0
        with open(self.count) as f:
            n = len(f.read().split())
        os.unlink(self.count)
        return n

    def assert_lists_fine(self, r, as_json):
        code, out, err = r
        self.assertEqual(code, 0, err)
        self.assertNotIn("LpFine", err)
        if as_json:
            self.assertEqual([o["op_type"] for o in json.loads(out)["ops"]], ["LpFine"])
        else:
            self.assertTrue(out.startswith("LpFine(x) -> y\n"), out)

    def test_wrapper_by_path_and_by_name(self):
        self.runs()
        for form, extra in (("name", {"PYOP_PYTHON": "pyop-lp-python",
                                      "PATH": self.bin + os.pathsep + ENV.get("PATH", "")}),
                            ("path", {"PYOP_PYTHON": self.wrapper})):
            for as_json in (False, True):
                with self.subTest(form=form, json=as_json):
                    r = self.pyop("list", *(["--json"] if as_json else []), opp=self.ops,
                                  **extra)
                    self.assert_lists_fine(r, as_json)
                    self.assertEqual(self.runs(), 1)
            with self.subTest(form=form, command="run"):
                code, out, err = self.pyop("run", "LpFine", "--json", "--input",
                                           "x=int32[2]:5,6", opp=self.ops, **extra)
                self.assertEqual(code, 1, err)  # no execute: the failure on stdout
                self.assertEqual(json.loads(out)["error"]["status"], "PYOP_EUNSUPPORTED")
                self.assertEqual(self.runs(), 1)
            with self.subTest(form=form, command="doctor"):
                code, out, err = self.pyop("doctor", "--json", opp=self.ops, **extra)
                self.assertEqual(code, 0, err)
                rep = json.loads(out)
                self.assertEqual(rep["load"]["ops"], ["LpFine"])
                self.assertIs(rep["python"]["is_build_python"], True)
                self.assertEqual(self.runs(), 1)

    def test_empty_is_unset(self):
        plain = self.pyop("list", opp=self.ops)
        self.assert_lists_fine(plain, False)
        for as_json in (False, True):
            with self.subTest(json=as_json):
                r = self.pyop("list", *(["--json"] if as_json else []), opp=self.ops,
                              PYOP_PYTHON="")
                self.assert_lists_fine(r, as_json)
                self.assertNotIn("PYOP_PYTHON", r[2])
        self.assertEqual(self.pyop("list", opp=self.ops, PYOP_PYTHON="")[1], plain[1])
        code, out, err = self.pyop("doctor", "--json", opp=self.ops, PYOP_PYTHON="")
        self.assertEqual(code, 0, err)
        self.assertIs(json.loads(out)["python"]["is_build_python"], True)

    def test_the_build_python_under_another_name(self):
        code, out, err = self.pyop("doctor", "--json", opp=self.ops, argv0=self.alias)
        self.assertEqual(code, 0, err)
        py = json.loads(out)["python"]
        self.assertEqual(py["executable"], self.alias)  # not resolved: another name
        self.assertIs(py["is_build_python"], True)
        code, out, err = self.pyop("doctor", opp=self.ops, argv0=self.alias)
        self.assertEqual(code, 0, err)
        self.assertIn("\n  the build's Python (what a C host with start_python runs)\n", out)
        self.assertNotIn("NOT the build's Python", out)
        # PYOP_PYTHON naming it so: the same interpreter, no exec, the same verdict.
        code, out, err = self.pyop("doctor", "--json", opp=self.ops, PYOP_PYTHON=self.alias)
        self.assertEqual(code, 0, err)
        self.assertIs(json.loads(out)["python"]["is_build_python"], True)


class PyopLibraryFormsTest(_Cli):
    """PYOP_LIBRARY set (that file), empty (as unset: the build's own
    libpyop, not an empty path), unset. Kills cli.lp.binding.empty_library_taken."""

    def test_forms(self):
        ops = self.dir("lib_ops", {"fine.py": _op("LpLib")})
        lib = os.path.join(os.path.dirname(os.path.realpath(self.cli)), "..", "lib",
                           "libpyop.so.0")
        for form, extra in (("set", {"PYOP_LIBRARY": os.path.normpath(lib)}),
                            ("empty", {"PYOP_LIBRARY": ""}), ("unset", {})):
            for as_json in (False, True):
                with self.subTest(form=form, json=as_json):
                    code, out, err = self.pyop("list", *(["--json"] if as_json else []),
                                               opp=ops, **extra)
                    self.assertEqual(code, 0, err)
                    if as_json:
                        self.assertEqual([o["op_type"] for o in json.loads(out)["ops"]],
                                         ["LpLib"])
                    else:
                        self.assertTrue(out.startswith("LpLib(x) -> y\n"), out)
        code, out, err = self.pyop("list", "--json", opp=ops,
                                   PYOP_LIBRARY=os.path.join(self.tmp, "no", "libpyop.so.0"))
        self.assertEqual(code, 1)
        self.assertEqual(json.loads(out)["error"]["status"], "PYOP_ENOENT")


class DoctorTrialLoadsTest(_Cli):
    """doctor after a failed load tries each plugin alone: every plugin
    gets its own verdict, ops and error (the last one failing too), and
    afterwards the plugin path is the user's again (the too-deep note of
    a later element is still said) and the trial directories made for
    package plugins are gone. (The mutants tried here are killed by
    examples.cli.rules and examples.cli.messages too: not listed.)"""

    def test_each_plugin_alone_then_the_path_again(self):
        mix = self.dir("mix", {"a.py": _op("LpA"),
                               "b_bad.py": 'raise RuntimeError("b is broken")\n',
                               "c.py": _op("LpC"),
                               "d_bad.py": 'import pyop\nraise ValueError("d is broken")\n'})
        deep = self.dir("deep", {"sub/x.py": _op("LpDeep")})
        opp = "%s:%s" % (mix, deep)
        code, out, err = self.pyop("doctor", "--json", opp=opp)
        self.assertEqual(code, 1, err)
        self.assertIn("pyop: doctor: the load failed (PYOP_EPLUGIN)\n", err)
        rep = json.loads(out)
        self.assertEqual(rep["load"]["status"], "PYOP_EPLUGIN")
        self.assertEqual(rep["error"], rep["load"]["error"])
        self.assertEqual(rep["error"]["status"], "PYOP_EPLUGIN")
        self.assertEqual(rep["opp_path"], opp)
        got = [(os.path.basename(p["plugin"]), p["verdict"], p["ops"],
                p["error"] and (os.path.basename(p["error"]["file"]), p["error"]["line"]))
               for p in rep["plugins"]]
        self.assertEqual(got, [("a.py", "ok", ["LpA"], None),
                               ("b_bad.py", "failed", [], ("b_bad.py", 1)),
                               ("c.py", "ok", ["LpC"], None),
                               ("d_bad.py", "failed", [], ("d_bad.py", 2))])
        self.assertIn("d is broken", rep["plugins"][3]["error"]["message"])
        code, out, err = self.pyop("doctor", opp=opp)
        self.assertEqual(code, 1, err)
        self.assertIn("\nASCEND_CUSTOM_OPP_PATH=%s\n" % opp, out)
        self.assertIn("  plugin %s: ok (LpC)\n" % os.path.join(mix, "c.py"), out)
        self.assertIn("  plugin %s: FAILED: " % os.path.join(mix, "d_bad.py"), out)
        # The trial loads set the path to one plugin each; the note on the
        # later element is read from the user's path after them.
        self.assertIn("  note: %s skipped: one directory too deep" % os.path.join(deep, "sub",
                                                                                  "x.py"), out)

    def test_package_trial_dirs_removed(self):
        root = self.dir("pkgs", {"pkg/__init__.py": "from . import impl\n",
                                 "pkg/impl.py": _op("LpPkg"),
                                 "zz_bad.py": 'raise RuntimeError("zz is broken")\n'})
        tmpdir = os.path.join(self.tmp, "private_tmp")
        os.makedirs(tmpdir)
        for as_json in (True, False):
            with self.subTest(json=as_json):
                code, out, err = self.pyop("doctor", *(["--json"] if as_json else []),
                                           opp=root, TMPDIR=tmpdir)
                self.assertEqual(code, 1, err)
                if as_json:
                    got = [(os.path.basename(p["plugin"]), p["verdict"], p["ops"])
                           for p in json.loads(out)["plugins"]]
                    self.assertEqual(got, [("pkg", "ok", ["LpPkg"]),
                                           ("zz_bad.py", "failed", [])])
                else:
                    self.assertIn("  plugin %s: ok (LpPkg)\n" % os.path.join(root, "pkg"), out)
                self.assertEqual([n for n in os.listdir(tmpdir) if n.startswith("pyop-doctor-")],
                                 [])


class PathListedTwiceTest(_Cli):
    """A plugin directory listed twice in ASCEND_CUSTOM_OPP_PATH: once with
    a trailing slash, as D/., or through a symbolic link to it. libpyop
    loads its plugins once (it knows a file by device and inode), and
    doctor lists each plugin once with its ops, after a good load and
    after a failed one (each tried alone once), in --json and text; list
    and run see each op once. A real bug fixed in the lifetime pass:
    doctor listed every plugin twice, the second time "ok (no ops)"
    (kills cli.lp.doctor.plugin_listed_twice); it then still listed a
    link's plugins twice, keyed on the path string (session 16)."""

    def test_doctor_each_plugin_once(self):
        good = self.dir("twice", {"a.py": _op("LpTwiceA"), "c.py": _op("LpTwiceC")})
        bad = self.dir("twice_bad", {"a.py": _op("LpTwiceBadA"),
                                     "b_bad.py": 'raise RuntimeError("b is broken")\n'})
        for root, status, want in ((good, 0, [("a.py", "ok", ["LpTwiceA"]),
                                              ("c.py", "ok", ["LpTwiceC"])]),
                                   (bad, 1, [("a.py", "ok", ["LpTwiceBadA"]),
                                             ("b_bad.py", "failed", [])])):
            link = root + "_link"
            if not os.path.islink(link):
                os.symlink(root, link)
            for second in (root + "/", root + "/.", link):
                opp = "%s:%s" % (root, second)
                with self.subTest(root=root, second=second):
                    code, out, err = self.pyop("doctor", "--json", opp=opp)
                    self.assertEqual(code, status, err)
                    rep = json.loads(out)
                    self.assertEqual([e["element"] for e in rep["path"]], [root, second])
                    self.assertEqual([(p["plugin"], p["verdict"], p["ops"])
                                      for p in rep["plugins"]],
                                     [(os.path.join(root, n), v, o) for n, v, o in want])
                    code, out, err = self.pyop("doctor", opp=opp)
                    self.assertEqual(code, status, err)
                    for name, verdict, ops in want:
                        line = "  plugin %s: %s" % (os.path.join(root, name),
                                                    "ok (%s)" % ", ".join(ops) if ops else "FAILED")
                        self.assertEqual(out.count(line), 1, out)
                    self.assertNotIn("(no ops)", out)
        for second in (good + "/", good + "/.", good + "_link"):
            code, out, err = self.pyop("list", "--json", good, second)
            self.assertEqual(code, 0, err)
            self.assertEqual([o["op_type"] for o in json.loads(out)["ops"]],
                             ["LpTwiceA", "LpTwiceC"])


class TooDeepLaterElementTest(_Cli):
    """The too-deep note of an element after one that is missing, given in
    either form (with and without a trailing slash), and of a
    subdirectory after one without .py files. Kills
    cli.lp.errors.too_deep_missing_element_stops."""

    def test_after_a_missing_element(self):
        deep = self.dir("deep2", {"sub/x.py": _op("LpDeep2")})
        missing = os.path.join(self.tmp, "missing")
        note = ("  %s skipped: one directory too deep (the plugins of %s are"
                % (os.path.join(deep, "sub", "x.py"), deep))
        for element in (deep + "/", deep):
            with self.subTest(element=element):
                code, out, err = self.pyop("list", opp="%s:%s" % (missing, element))
                self.assertEqual(code, 0, err)
                self.assertTrue(out.startswith("no ops registered (ASCEND_CUSTOM_OPP_PATH=%s:%s)\n"
                                               % (missing, element)), out)
                self.assertIn(note.replace(deep + " are", element + " are")
                              if element.endswith("/") else note, out)
                code, out, err = self.pyop("list", "--json", opp="%s:%s" % (missing, element))
                self.assertEqual((code, json.loads(out)), (0, {"ops": [], "pending": []}))

    def test_after_a_subdirectory_without_python(self):
        deep = self.dir("deep3", {"a_docs/README.txt": "docs\n", "a_docs/_private.py": "",
                                  "sub/y.py": _op("LpDeep3")})
        code, out, err = self.pyop("doctor", opp=deep)
        self.assertEqual(code, 0, err)
        self.assertIn("  note: %s skipped: one directory too deep" % os.path.join(deep, "sub",
                                                                                  "y.py"), out)
        self.assertNotIn("a_docs", out)
        code, out, err = self.pyop("list", opp=deep)
        self.assertIn("  %s skipped" % os.path.join(deep, "sub", "y.py"), out)


class AttrDefaultsEachTest(_Cli):
    """Each attribute's default read at its own slot: an op whose
    attributes are a float, an int, a str and a list (the later ones
    differ in type from the first). (Its mutants, a default or a type read
    at the first attribute's slot, are killed by ge.cli too: not listed.)"""

    def test_each_default(self):
        ops = self.dir("attrs", {"attrs.py": _op(
            "LpAttrs", ", *, alpha: float = 0.5, n: int = 3, tag: str = \"t\", "
            "axes: list[int] = [1, 2]")})
        code, out, err = self.pyop("list", "--json", opp=ops)
        self.assertEqual(code, 0, err)
        attrs = json.loads(out)["ops"][0]["attrs"]
        self.assertEqual([(a["name"], a["type"], a["default"]) for a in attrs],
                         [("alpha", "float", 0.5), ("n", "int", 3), ("tag", "str", "t"),
                          ("axes", "list[int]", [1, 2])])
        code, out, err = self.pyop("list", opp=ops)
        self.assertIn("LpAttrs(x; alpha: float = 0.5, n: int = 3, tag: str = 't', "
                      "axes: list[int] = [1, 2]) -> y\n", out)


class IoKindsEachTest(_Cli):
    """Each output's kind and each attribute's required flag read at its
    own slot: a required output before a dynamic one, an optional
    attribute before a required one; run's outputs each in its own form
    (the required one's fields at the top, the dynamic one's tensors).
    (Its mutants are killed by ge.cli and examples.cli.rules too: not
    listed.)"""

    def test_later_output_and_attr(self):
        ops = self.dir("kinds", {"mixed.py": textwrap.dedent('''\
            import pyop
            from pyop import TensorDesc

            @pyop.register_op(op_type="LpMixed", outputs=("total", "parts"))
            def mixed(x: TensorDesc, *, alpha: float = 0.5,
                      k: int) -> tuple[TensorDesc, list[TensorDesc]]:
                return (TensorDesc((1,), x.dtype),
                        [TensorDesc((1,), x.dtype) for _ in range(x.shape[0])])


            @pyop.register_op_impl(op_type="LpMixed")
            class MixedImpl:
                def execute(self, x, *, alpha, k):
                    ctx = pyop.get_execute_ctx()
                    with pyop.elements(x) as xs:
                        with pyop.elements(ctx.malloc_output_tensor(0, (1,), x.dtype)) as t:
                            t[0] = sum(xs) * k
                        for v in xs:
                            with pyop.elements(ctx.malloc_output_tensor(1, (1,),
                                                                        x.dtype)) as p:
                                p[0] = v + alpha
            ''')})
        code, out, err = self.pyop("list", "--json", opp=ops)
        self.assertEqual(code, 0, err)
        op = json.loads(out)["ops"][0]
        self.assertEqual([(o["name"], o["kind"]) for o in op["outputs"]],
                         [("total", "required"), ("parts", "dynamic")])
        self.assertEqual([(a["name"], a["required"], a["default"]) for a in op["attrs"]],
                         [("alpha", False, 0.5), ("k", True, None)])
        code, out, err = self.pyop("list", opp=ops)
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("LpMixed(x; alpha: float = 0.5, k: int) -> total, "
                                       "parts[]\n"), out)
        run = ("run", "LpMixed", "--input", "x=float32[2]:1,2", "--attr", "k=2")
        code, out, err = self.pyop(*run, "--json", opp=ops)
        self.assertEqual(code, 0, err)
        outs = json.loads(out)["outputs"]
        self.assertEqual(outs[0], {"name": "total", "kind": "required", "dtype": "float32",
                                   "shape": [1], "values": [6.0], "alias": None})
        self.assertEqual(outs[1], {"name": "parts", "kind": "dynamic", "alias": None,
                                   "tensors": [{"dtype": "float32", "shape": [1],
                                                "values": [1.5]},
                                               {"dtype": "float32", "shape": [1],
                                                "values": [2.5]}]})
        code, out, err = self.pyop(*run, opp=ops)
        self.assertEqual(code, 0, err)
        self.assertEqual(out, "total: float32[1] = [6]\nparts: 2 tensors\n"
                              "parts[0]: float32[1] = [1.5]\nparts[1]: float32[1] = [2.5]\n")


class ProtoEachDeclarationPartTest(_Cli):
    """A --proto REG_OP's later attributes and inputs reach libpyop at their
    own slots: an optional float attribute, then a required int, then an
    optional str; a float32 input, then an int32 one (list --json and text,
    with the implementation-only GE plugin bound to it). (Its mutants are
    killed by ge.proto_cli and examples.cli.flow too: not listed.)"""

    def test_later_attrs_and_dtypes(self):
        root = self.dir("proto_many", {
            "many.h": textwrap.dedent('''\
                namespace ge {
                REG_OP(LpProtoMany)
                    .INPUT(x1, TensorType({DT_FLOAT}))
                    .INPUT(x2, TensorType({DT_INT32}))
                    .OUTPUT(y, TensorType({DT_FLOAT}))
                    .ATTR(alpha, Float, 0.5)
                    .REQUIRED_ATTR(k, Int)
                    .ATTR(tag, String, "t")
                    .OP_END_FACTORY_REG(LpProtoMany);
                }
                '''),
            "impl/many.py": textwrap.dedent('''\
                from ge.custom_op import register_op_impl, get_execute_ctx
                from ge.runtime import Tensor


                @register_op_impl(op_type="LpProtoMany")
                class Many:
                    def execute(self, a: Tensor, b: Tensor, *, alpha: float, k: int,
                                tag: str) -> None:
                        get_execute_ctx().malloc_output_tensor(0, a.shape, a.format,
                                                               a.data_type)
                ''')})
        proto, impl = os.path.join(root, "many.h"), os.path.join(root, "impl")
        code, out, err = self.pyop("list", "--json", "--proto", proto, impl)
        self.assertEqual(code, 0, err)
        op = json.loads(out)["ops"][0]
        self.assertEqual(op["proto_key"], "host:LpProtoMany")
        self.assertEqual([(a["name"], a["type"], a["required"], a["default"])
                          for a in op["attrs"]],
                         [("alpha", "float", False, 0.5), ("k", "int", True, None),
                          ("tag", "str", False, "t")])
        self.assertEqual([(i["name"], i["dtypes"]) for i in op["inputs"] + op["outputs"]],
                         [("x1", ["float32"]), ("x2", ["int32"]), ("y", ["float32"])])
        code, out, err = self.pyop("list", "--proto", proto, impl)
        self.assertEqual(code, 0, err)
        self.assertIn("LpProtoMany(x1, x2; alpha: float = 0.5, k: int, tag: str = 't') -> y\n",
                      out)
        self.assertIn("    data types: x1: float32; x2: int32; y: float32\n", out)


class PendingInSubmoduleTest(_Cli):
    """An implementation waiting for its prototype defined in a submodule
    of a package plugin (pkg/impl.py, imported by pkg/__init__.py), after a
    top-level file plugin's: list (--json and text) and doctor name both.
    Kills cli.lp.plugins.submodules_unread."""

    def test_listed_and_doctored(self):
        impl = textwrap.dedent('''\
            from ge.custom_op import register_op_impl, get_execute_ctx
            from ge.runtime import Tensor


            @register_op_impl(op_type="%s")
            class Waiting:
                def execute(self, a: Tensor) -> None:
                    get_execute_ctx().malloc_output_tensor(0, a.shape, a.format, a.data_type)
            ''')
        root = self.dir("waiting", {"a_top.py": impl % "LpWaitTop",
                                    "pkg/__init__.py": "from . import impl  # noqa: F401\n",
                                    "pkg/impl.py": impl % "LpWaitSub"})
        code, out, err = self.pyop("list", "--json", opp=root)
        self.assertEqual(code, 0, err)
        rep = json.loads(out)
        self.assertEqual(rep["ops"], [])
        self.assertEqual([(p["op_type"], p["impl_source"]) for p in rep["pending"]],
                         [("LpWaitSub", os.path.join(root, "pkg", "impl.py") + ":5"),
                          ("LpWaitTop", os.path.join(root, "a_top.py") + ":5")])
        code, out, err = self.pyop("list", opp=root)
        self.assertEqual(code, 0, err)
        self.assertIn("LpWaitSub: implementation waiting for a prototype", out)
        self.assertIn("    implementation: %s:5 (ge:pkg.impl:Waiting:LpWaitSub)\n"
                      % os.path.join(root, "pkg", "impl.py"), out)
        self.assertNotIn("no ops registered", out)
        code, out, err = self.pyop("doctor", "--json", opp=root)
        self.assertEqual(code, 0, err)
        rep = json.loads(out)
        self.assertEqual([(os.path.basename(p["plugin"]), p["pending"]) for p in rep["plugins"]],
                         [("a_top.py", ["LpWaitTop"]), ("pkg", ["LpWaitSub"])])


class PathArgumentsEachTest(_Cli):
    """Every plugin path argument is checked, not only the first: a later
    one with ':' is refused (exit 2, --json usage) before any load."""

    def test_later_path_with_a_colon(self):
        ops = self.dir("paths", {"fine.py": _op("LpPath")})
        colon = os.path.join(self.tmp, "a:b")
        os.makedirs(colon)
        for as_json in (False, True):
            with self.subTest(json=as_json):
                code, out, err = self.pyop("list", *(["--json"] if as_json else []), ops, colon)
                self.assertEqual(code, 2, out + err)
                self.assertIn("%s: a plugin path cannot contain ':'" % colon, err)
                if as_json:
                    self.assertEqual(json.loads(out)["error"]["status"], "usage")
                else:
                    self.assertEqual(out, "")
        code, out, err = self.pyop("list", "--json", ops, ops + "/")
        self.assertEqual(code, 0, err)
        self.assertEqual([o["op_type"] for o in json.loads(out)["ops"]], ["LpPath"])


class StartChoiceLaterArtifactTest(unittest.TestCase):
    """start_python's artifact with lanes asked for: a fit artifact after
    one without a readable manifest is still found; a bridge of an older
    or newer ABI major cannot run lanes whatever its minor."""

    def manifest(self, **kw):
        m = {"python_tag": "cp313", "python_version_hex": "0x030D01F0", "abi_flags": "",
             "libpython": "/usr/lib/libpython3.13.so", "bridge_abi_major": "1",
             "bridge_abi_minor": "7"}
        m.update(kw)
        return m

    def test_fit_after_an_unreadable_one(self):
        sc = _cli("start_choice")
        root = tempfile.mkdtemp(prefix="pyop-lp-b-art-")
        self.addCleanup(shutil.rmtree, root)
        arts = {"cp311": self.manifest(python_tag="cp311", python_version_hex="0x030B09F0"),
                "cp313": self.manifest()}
        for name, m in arts.items():
            _write(os.path.join(root, name, "manifest.txt"),
                   "".join("%s=%s\n" % kv for kv in m.items()))
        # An artifact without a manifest listed (os.listdir's order) before
        # the fit one: named until the directory lists it first.
        for k in range(64):
            bad = "cp312-%d" % k
            os.makedirs(os.path.join(root, bad))  # no manifest
            names = os.listdir(root)
            if names.index(bad) < names.index("cp313"):
                break
            os.rmdir(os.path.join(root, bad))
        else:
            self.skipTest("no name lists before cp313 in %s" % root)
        order = "cp311;%s;cp313" % bad
        name, note = sc.choose(root, 2, "cp311", order)
        self.assertEqual(name, "cp313")
        self.assertIn("starting cp313 instead of the build's default cp311", note)
        self.assertEqual([n for n, _ in sc.artifacts(root, order.split(";"))],
                         ["cp311", "cp313"])

    def test_abi_major(self):
        sc = _cli("start_choice")
        self.assertIsNone(sc.lanes_unfit(self.manifest()))
        for major, minor in (("0", "9"), ("2", "7"), ("2", "0")):
            with self.subTest(major=major, minor=minor):
                why = sc.lanes_unfit(self.manifest(bridge_abi_major=major,
                                                   bridge_abi_minor=minor))
                self.assertEqual(why, "its bridge speaks ABI %s.%s, lanes need 1.6"
                                 % (major, minor))


if __name__ == "__main__":
    unittest.main()
