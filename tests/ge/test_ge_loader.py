"""CANN GE's Python plugin loader and libpyop's, point by point (issue 27
item 7; docs/ge-plugins.md, "Loading"): for each difference either GE's
behaviour or libpyop's documented departure, seen through the `pyop`
command as a user sees it.

  whitespace around an element       GE's: stripped
  a file and a link to it            GE's: imported once
  a relative element                 refused (departure; the message says so)
  a missing directory                skipped with a warning (departure)
  a regular file not named .py       skipped with a warning (departure)
  a `ge` on PYTHONPATH               libpyop's serves (departure); doctor
                                     and the host's log say where the other is

Environment: PYOP_TEST_CLI (bin/pyop), PYOP_TEST_PYTHON (interpreter).
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

CLI = os.environ["PYOP_TEST_CLI"]
PY = os.environ.get("PYOP_TEST_PYTHON", sys.executable)

# A GE-style plugin; each import appends a line to the file RUNS names.
PLUGIN = textwrap.dedent("""\
    import os
    from ge.custom_op import register_op, register_op_impl, get_execute_ctx
    from ge.runtime import Tensor, TensorDesc

    with open(os.environ["RUNS"], "a") as f:
        f.write(__name__ + "\\n")


    @register_op(op_type="GeLoaderOp")
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)


    @register_op_impl(op_type="GeLoaderOp")
    class Impl:
        def execute(self, x: Tensor) -> None:
            ctx = get_execute_ctx()
            ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
    """)


class LoaderTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ge_loader_")
        self.runs = os.path.join(self.tmp, "runs.txt")
        self.ops = os.path.join(self.tmp, "ops")
        os.mkdir(self.ops)
        with open(os.path.join(self.ops, "ge_loader_op.py"), "w") as f:
            f.write(PLUGIN)

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.tmp], check=False)

    def pyop(self, *args, opp, log="warn", cwd=None, env=None):
        e = dict(os.environ, ASCEND_CUSTOM_OPP_PATH=opp, PYOP_LOG=log, RUNS=self.runs,
                 PYTHONDONTWRITEBYTECODE="1")
        e.update(env or {})
        p = subprocess.run([PY, "-B", CLI] + list(args), env=e, cwd=cwd or self.tmp,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=300)
        return p.returncode, p.stdout, p.stderr

    def listed(self, opp, **kw):
        """pyop list: (stdout, stderr) when it lists GeLoaderOp once."""
        rc, out, err = self.pyop("list", opp=opp, **kw)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(out.count("GeLoaderOp(x) -> output0"), 1, out + err)
        return out, err

    def imports(self):
        with open(self.runs) as f:
            return f.read().split()

    def test_whitespace_around_an_element_is_stripped(self):
        # GE strips each element; so does libpyop's scan (an info line says so)
        out, err = self.listed(" \t%s \n" % self.ops, log="info")
        self.assertIn("element ' \t%s \n' read as '%s' (the whitespace around an element is "
                      "dropped, as GE does)" % (self.ops, self.ops), err)
        self.listed(": :%s : :" % self.ops)  # elements of blanks are empty ones: ignored

    def test_a_link_to_a_file_of_its_directory_is_imported_once(self):
        os.symlink(os.path.join(self.ops, "ge_loader_op.py"),
                   os.path.join(self.ops, "also_the_op.py"))
        out, err = self.listed(self.ops)
        self.assertEqual(len(self.imports()), 1, self.imports())
        self.assertNotIn("same file", err)

    def test_a_relative_element_is_refused_and_says_it_departs_from_ge(self):
        rc, out, err = self.pyop("list", opp="ops", cwd=self.tmp)
        self.assertNotIn("GeLoaderOp", out)
        self.assertIn("ASCEND_CUSTOM_OPP_PATH element 'ops' skipped: relative path refused", err)
        self.assertIn("GE resolves it against the cwd, libpyop departs from that on purpose: "
                      "docs/security.md", err)
        self.assertFalse(os.path.exists(self.runs), "nothing was imported from the cwd")

    def test_a_missing_directory_is_skipped_with_a_warning(self):
        gone = os.path.join(self.tmp, "gone")
        out, err = self.listed("%s:%s" % (gone, self.ops))
        self.assertIn("ASCEND_CUSTOM_OPP_PATH element '%s' skipped: no such file or directory"
                      % gone, err)

    def test_a_file_not_named_py_is_skipped_with_a_warning(self):
        notes = os.path.join(self.tmp, "libcust_op.so")
        open(notes, "w").close()
        out, err = self.listed("%s:%s" % (notes, self.ops))
        self.assertIn("ASCEND_CUSTOM_OPP_PATH element '%s' skipped: a regular file, neither a "
                      "directory nor a .py file" % notes, err)

    def test_a_ge_on_pythonpath_is_not_used_and_is_named(self):
        site = os.path.join(self.tmp, "site")
        os.makedirs(os.path.join(site, "ge"))
        init = os.path.join(site, "ge", "__init__.py")
        with open(init, "w") as f:
            f.write("raise ImportError('this ge must not be imported')\n")
        env = {"PYTHONPATH": site}
        out, err = self.listed(self.ops, env=env, log="info")
        self.assertIn("a `ge` package is also installed at %s; libpyop's GE compatibility "
                      "package serves `import ge` while its bridge is loaded" % init, err)
        rc, out, err = self.pyop("doctor", opp=self.ops, env=env)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("ge: note: a `ge` package is installed at %s; it is used instead only "
                      "when the host imports it before pyop_load" % init, out)
        rc, out, err = self.pyop("doctor", opp=self.ops)  # none: no note
        self.assertNotIn("ge: note:", out)


if __name__ == "__main__":
    unittest.main()
