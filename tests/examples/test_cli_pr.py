"""How `pyop check` (and run, list, doctor) reads a plugin, end to end
(bin/pyop in a subprocess, its exit status, --json fields and text): one
plugin reached by two routes (a path given twice, with a trailing slash or
as D/., a link to its directory or to its file) checked and listed once,
as libpyop loads it once; each value in its absent, None or empty form;
the second op of a class, the last input or attribute. Issue 31's
plugin-reading pass (session 16): a class names the mutants (cli.pr.* in
tests/mutation/mutants.txt) it kills that no earlier test did.

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.pr):

  PYOP_TEST_CLI           the build tree's bin/pyop

Needs only the standard library.
"""

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
import unittest

ENV = os.environ


def _need(name):
    value = ENV.get(name)
    if not value:
        raise unittest.SkipTest("%s is not set (run through ctest)" % name)
    return value


def _op(op_type, extra=""):
    """A plugin registering op_type: y = x's shape and dtype."""
    return textwrap.dedent('''\
        import pyop
        from pyop import TensorDesc

        @pyop.register_op(op_type="%s")
        def op(x: TensorDesc) -> TensorDesc:
            return TensorDesc(shape=x.shape, dtype=x.dtype)
        %s''') % (op_type, extra)


BROKEN = 'raise RuntimeError("broken on purpose")\n'


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class _Cli(unittest.TestCase):
    """bin/pyop run as a user runs it, in a directory of its own plugins."""

    @classmethod
    def setUpClass(cls):
        cls.cli = _need("PYOP_TEST_CLI")
        cls.tmp = tempfile.mkdtemp(prefix="pyop-pr-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pyop(self, *args, opp=None):
        """(exit status, stdout, stderr) of bin/pyop ARGS; opp: the plugin
        path (None: unset)."""
        env = dict(ENV)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        for k in ("PYOP_PYTHON", "PYOP__REEXECUTED", "PYOP_LIBRARY", "ASCEND_CUSTOM_OPP_PATH"):
            env.pop(k, None)
        if opp is not None:
            env["ASCEND_CUSTOM_OPP_PATH"] = opp
        r = subprocess.run([self.cli] + list(args), capture_output=True, text=True, env=env,
                           timeout=300)
        return r.returncode, r.stdout, r.stderr

    def json_of(self, *args, opp=None):
        code, out, err = self.pyop(*(args + ("--json",)), opp=opp)
        try:
            return code, json.loads(out), err
        except ValueError:
            self.fail("bin/pyop %s: no JSON (exit %d):\n%s\n%s" % (" ".join(args), code, out, err))

    def dir(self, name, files):
        """A directory under the test's tmp with files {relative path: text}."""
        root = os.path.join(self.tmp, name)
        for rel, text in files.items():
            _write(os.path.join(root, rel), text)
        return root


class OnePluginTwoRoutesTest(_Cli):
    """A plugin reached twice -- its directory given twice, with a trailing
    slash, as D/., through a link to the directory; its file given twice; a
    link to it beside it -- is imported once by libpyop's loader (by its
    file), so `pyop check` checks it once when it tries each plugin alone
    (a broken neighbour fails the load together) and `pyop doctor` lists it
    once. Before session 16 check's each phase checked it once per route
    and doctor listed a link as a second plugin with no ops (a real bug:
    the lifetime pass compared the paths' text only)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.d = cls.dir(cls, "d", {"good.py": _op("PrTwice"), "bad.py": BROKEN})
        cls.link = os.path.join(cls.tmp, "link")
        os.symlink(cls.d, cls.link)
        cls.g = cls.dir(cls, "g", {"good.py": _op("PrLinked")})
        os.symlink("good.py", os.path.join(cls.g, "again.py"))
        cls.glink = os.path.join(cls.tmp, "glink")
        os.symlink(cls.g, cls.glink)

    def checked_once(self, *paths):
        code, rep, err = self.json_of("check", *paths)
        self.assertEqual(code, 1, err)  # bad.py failed to load
        self.assertEqual([o["op_type"] for o in rep["ops"]], ["PrTwice"], rep["ops"])
        self.assertEqual(len(rep["broken_plugins"]), 1, rep["broken_plugins"])

    def test_directory_by_four_routes(self):
        self.checked_once(self.d, self.d + "/", self.d + "/.", self.link)

    def test_file_given_twice(self):
        good = os.path.join(self.d, "good.py")
        self.checked_once(good, os.path.join(self.d, "bad.py"), good)

    def test_link_beside_the_file(self):
        d = self.dir("beside", {"good.py": _op("PrTwice"), "bad.py": BROKEN})
        os.symlink("good.py", os.path.join(d, "same.py"))
        self.checked_once(d)

    def test_doctor_lists_a_linked_plugin_once(self):
        code, rep, err = self.json_of("doctor", opp="%s:%s" % (self.g, self.glink))
        self.assertEqual(code, 0, err)
        self.assertEqual([(p["plugin"], p["ops"]) for p in rep["plugins"]],
                         [(os.path.join(self.g, "again.py"), ["PrLinked"])], rep["plugins"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
