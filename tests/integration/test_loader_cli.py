"""How plugins are found and imported, through the `pyop` command and the
real bridge (issue 17, items 9, 10, 16, 18):

- async def / generator callbacks fail the load at the decorator, naming the
  op, the method, why and file:line (pyop and GE-style plugins);
- foo.py beside a package foo/ (or a link to another entry) fails the load
  naming both; `pyop doctor` shows the failed load;
- the C scan (src/scan.c, what `pyop doctor` shows as each element's
  verdict) and the Python loader (_loader.discover) agree on what a Python
  entry is;
- a sibling namespace package (common/utils.py, no __init__.py) imports from
  GE-style and pyop plugins;
- one file of 1,000 ops lists all 1,000 with the lines of their definitions.

Environment: PYOP_TEST_CLI (bin/pyop), PYOP_TEST_PYTHON, PYOP_LIBRARY,
PYOP_TEST_PLUGINS (tests/integration/plugins), PYOP_TEST_GE_NAMESPACE
(tests/ge/namespace), PYOP_PACKAGE_DIR (bridge/python).
"""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

CLI = os.environ["PYOP_TEST_CLI"]
PY = os.environ.get("PYOP_TEST_PYTHON", sys.executable)
PLUGINS = os.environ["PYOP_TEST_PLUGINS"]
GE_NAMESPACE = os.environ["PYOP_TEST_GE_NAMESPACE"]
sys.path.insert(0, os.environ["PYOP_PACKAGE_DIR"])
from pyop import _loader  # noqa: E402

WHY = "is a coroutine function (async def): libpyop calls it synchronously"


def pyop(*args, opp):
    env = dict(os.environ, ASCEND_CUSTOM_OPP_PATH=opp, PYOP_LOG="warn",
               PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([PY, "-B", CLI] + list(args), env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def line_of(path, needle):
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if needle in line:
                return i
    raise AssertionError(needle)


def write(d, rel, text):
    path = os.path.join(d, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


OP = """
import pyop
from pyop import TensorDesc

@pyop.register_op(op_type=%r)
def f(x: TensorDesc) -> TensorDesc:
    return x
"""


class CliTest(unittest.TestCase):
    def ok(self, *args, opp):
        rc, out, err = pyop(*args, opp=opp)
        self.assertEqual(rc, 0, "pyop %s: %s%s" % (" ".join(args), out, err))
        return out

    def fails(self, *args, opp):
        rc, out, err = pyop(*args, opp=opp)
        self.assertEqual(rc, 1, "pyop %s: %s%s" % (" ".join(args), out, err))
        return out + err

    def test_async_callbacks_fail_the_load(self):
        for name, op, cls in (("async_execute.py", "AsyncExecute", "AsyncExecuteImpl"),
                              ("ge_async_execute.py", "GeAsyncExecute", "GeAsyncExecuteImpl")):
            with self.subTest(plugin=name):
                path = os.path.join(PLUGINS, "bad", name)
                at = "%s:%d" % (path, line_of(path, "async def execute"))
                for cmd in ("list", "check"):
                    out = self.fails(cmd, opp=path)
                    for n in ("loading Python plugins failed", "TypeError", "op '%s'" % op,
                              "execute() of class %s" % cls, at, WHY):
                        self.assertIn(n, out, cmd)

    def test_module_beside_package_fails_the_load(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "foo.py", OP % "FromFile")
            write(d, "foo/__init__.py", OP % "FromPackage")
            need = "plugin directory %s: foo/ and foo.py are both the module 'foo'" % d
            self.assertIn(need, self.fails("list", opp=d))
            # (pyop check loads each plugin alone: that each loads is true; the
            # combined load a host makes is what fails, as list shows.)
            rc, out, err = pyop("doctor", opp=d)
            self.assertNotEqual(rc, 0)
            self.assertIn("load: FAILED (PYOP_EPLUGIN)", out)
            self.assertIn(need, out)
            os.remove(os.path.join(d, "foo.py"))
            os.symlink(os.path.join(d, "foo"), os.path.join(d, "bar"))
            # a link to another entry: that package once, as CANN GE loads it
            rc, out, err = pyop("list", opp=d)
            self.assertEqual((rc, out.count("FromPackage(")), (0, 1), out + err)

    def test_scan_and_loader_agree(self):
        # Each layout: the C scan's verdict (pyop doctor) says "python-dir"
        # exactly when the Python loader finds a plugin there.
        layouts = {
            "py_file": {"a.py": ""},
            "package": {"pkg/__init__.py": ""},
            "upper_suffix": {"a.PY": "", "b.Py": ""},
            "skipped": {"_a.py": "", ".b.py": "", "_pkg/__init__.py": ""},
            "namespace_only": {"common/utils.py": ""},
            "pyc_only": {"a.pyc": "", "a.py.txt": ""},
            "dir_named_py": {"d.py/inner.txt": ""},
            "package_named_py": {"p.py/__init__.py": ""},
            "non_identifier": {"my-op.py": ""},
        }
        with tempfile.TemporaryDirectory() as root:
            dirs = []
            for name, files in sorted(layouts.items()):
                d = os.path.join(root, name)
                os.makedirs(d)
                for rel, text in files.items():
                    write(d, rel, text)
                dirs.append(d)
            rc, out, err = pyop("doctor", "--json", opp=":".join(dirs))
            verdicts = {e["element"]: e["verdict"] for e in json.loads(out)["path"]}
            for d in dirs:
                with self.subTest(layout=os.path.basename(d)):
                    self.assertEqual(verdicts[d] == "python-dir", bool(_loader.discover(d)),
                                     "scan says %s, loader finds %s"
                                     % (verdicts[d], _loader.discover(d)))
            self.assertEqual(verdicts[os.path.join(root, "upper_suffix")], "no-python")
            self.assertEqual(verdicts[os.path.join(root, "package_named_py")], "python-dir")

    def test_namespace_sibling(self):
        out = self.ok("check", opp=GE_NAMESPACE)
        self.assertRegex(out, r"(?m)^GeNsNeg +ok")
        out = self.ok("run", "GeNsNeg", "--input", "x=float32[3]:1,2,3", opp=GE_NAMESPACE)
        self.assertIn("output0: float32[3] = [-1, -2, -3]", out)
        ns = os.path.join(PLUGINS, "namespace")
        self.assertRegex(self.ok("check", opp=ns), r"(?m)^NsTwice +ok")
        out = self.ok("run", "NsTwice", "--input", "x=float32[3]:1,2,3", opp=ns)
        self.assertIn("y: float32[3] = [2, 4, 6]", out)

    def test_thousand_ops_in_one_file(self):
        block = ("@pyop.register_op(op_type='Big{i:04d}')\n"
                 "def big{i}(x: TensorDesc) -> TensorDesc:\n    return x\n\n\n"
                 "@pyop.register_op_impl(op_type='Big{i:04d}')\nclass Big{i}Impl:\n"
                 "    def execute(self, x):\n        pass\n\n\n")
        head = "import pyop\nfrom pyop import TensorDesc\n\n\n"
        with tempfile.TemporaryDirectory() as d:
            path = write(d, "big.py", head + "".join(block.format(i=i) for i in range(1000)))
            ops = json.loads(self.ok("list", "--json", opp=d))["ops"]
            self.assertEqual(len(ops), 1000)
            for i, op in enumerate(sorted(ops, key=lambda o: o["op_type"])):
                self.assertEqual((op["op_type"], op["proto_source"], op["impl_source"]),
                                 ("Big%04d" % i, "%s:%d" % (path, 5 + 11 * i),
                                  "%s:%d" % (path, 10 + 11 * i)))


if __name__ == "__main__":
    unittest.main()
