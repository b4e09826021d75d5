"""`pyop list/check/run --proto` with C++ REG_OP headers and data type
constraints, through the command (issue 27 items 1-2, issue 25 items
21-22): the header of tests/ge/impl_only/ge_add_custom.py
(tests/examples/ge_protos/ge_add_custom.h) binds its implementations, its
TensorType/DATATYPE sets reach libpyop (list shows them, run is refused
outside them, check sweeps only them: the untyped Python form lets check
find the plugin's float32-only view overrun on float16), REG_OPs no plugin
implements or libpyop cannot represent are left out with a note, every
wrong declaration names file:line, and a Python register_op's dtypes= work
the same way.

Environment: PYOP_TEST_CLI (bin/pyop), PYOP_TEST_PYTHON (interpreter).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

CLI = os.environ["PYOP_TEST_CLI"]
PY = os.environ.get("PYOP_TEST_PYTHON", sys.executable)
HERE = os.path.dirname(os.path.abspath(__file__))
IMPL_ONLY = os.path.join(HERE, "impl_only")
PROTOS = os.path.normpath(os.path.join(HERE, "..", "examples", "ge_protos"))
HEADER = os.path.join(PROTOS, "ge_add_custom.h")
PY_FORM = os.path.join(PROTOS, "ge_add_custom.reg_op")


def pyop(*args, opp=IMPL_ONLY):
    env = dict(os.environ, ASCEND_CUSTOM_OPP_PATH=opp, PYOP_LOG="warn",
               PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([PY, "-B", CLI] + list(args), env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def line_of(path, text):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise AssertionError("%r not in %s" % (text, path))


class _Case(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pyop-proto-cli-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_ok(self, *args, code=0, **kw):
        rc, out, err = pyop(*args, **kw)
        self.assertEqual(rc, code, "pyop %s: %s%s" % (" ".join(args), out, err))
        self.assertNotIn("Traceback", err)
        return out, err

    def file(self, name, text, raw=False):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text if raw else textwrap.dedent(text))
        return path


class HeaderTest(_Case):
    def test_list_shows_the_header_and_its_data_types(self):
        out, err = self.run_ok("list", "--proto", HEADER)
        self.assertIn("GeAddCustom(x1, x2; alpha: float = 1.0) -> y\n    capabilities: "
                      "execute\n    prototype: <host>, the REG_OP of --proto %s "
                      "(host:GeAddCustom)\n" % HEADER, out)
        self.assertIn("    data types: x1, x2, y (one type T): float32\n", out)
        self.assertIn("GeLegacyHost(x; k: int) -> y", out)
        self.assertIn("    data types: x: float32; y: float32\n", out)
        self.assertNotIn("GeEngineOnly", out)
        self.assertNotIn("GeWithGraph", out)
        self.assertIn("pyop: list: note: --proto %s:%d: REG_OP(GeEngineOnly) is not used: no "
                      "loaded plugin implements it" % (HEADER, line_of(HEADER, "REG_OP(GeEngineOnly)")),
                      err)
        self.assertIn("pyop: list: note: --proto %s:%d: REG_OP(GeWithGraph) is not registered: "
                      "line %d: subgraph .GRAPH(body) has no pyop form"
                      % (HEADER, line_of(HEADER, "REG_OP(GeWithGraph)"),
                         line_of(HEADER, ".GRAPH(body)")), err)
        data = json.loads(self.run_ok("list", "--json", "--proto", HEADER)[0])
        add = next(o for o in data["ops"] if o["op_type"] == "GeAddCustom")
        self.assertEqual([(i["name"], i["dtypes"], i["dtype_symbol"]) for i in add["inputs"]],
                         [("x1", ["float32"], "T"), ("x2", ["float32"], "T")])
        self.assertEqual(add["outputs"][0]["dtypes"], ["float32"])
        self.assertEqual(add["outputs"][0]["dtype_symbol"], "T")
        self.assertEqual([o["op_type"] for o in data["ops"]], ["GeAddCustom", "GeLegacyHost"])
        # The Python form declares no data types: none shown.
        data = json.loads(self.run_ok("list", "--json", "--proto", PY_FORM)[0])
        self.assertEqual({i["dtypes"] for o in data["ops"] for i in o["inputs"]}, {None})

    def test_run_is_refused_outside_the_declared_types(self):
        out, _ = self.run_ok("run", "GeAddCustom", "--proto", HEADER, "--input",
                             "x1=float32[2]:1,2", "--input", "x2=float32[2]:10,20", "--attr",
                             "alpha=2")
        self.assertEqual(out, "y: float32[2] = [21, 42]\n")
        rc, out, err = pyop("run", "GeAddCustom", "--proto", HEADER, "--input",
                            "x1=float16[2]:1,2", "--input", "x2=float16[2]:10,20")
        self.assertEqual(rc, 1, out + err)
        self.assertIn('pyop: run: execute of "GeAddCustom": input 0 "x1" is float16; its '
                      "prototype (<host>) allows float32 (type T)", err)
        self.assertEqual(out, "")

    def test_check_sweeps_only_the_declared_types(self):
        out, _ = self.run_ok("check", "--proto", HEADER, "GeAddCustom", "GeLegacyHost")
        self.assertRegex(out, r"(?m)^GeAddCustom +ok \(execute; generated\)")
        self.assertRegex(out, r"(?m)^GeLegacyHost +ok \(execute; generated\)")
        self.assertIn(" on float32[2,3], float32[0,3] (empty)", out)
        self.assertNotIn("float16", out)
        # Unnamed, a REG_OP no plugin implements is left out with a note
        # (GeMulCustom, which waits for a prototype, keeps the check at 3).
        out, err = self.run_ok("check", "--proto", HEADER, code=3)
        self.assertNotIn("GeEngineOnly", out)
        self.assertIn("pyop: check: note: --proto %s:%d: REG_OP(GeEngineOnly) is not used: no "
                      "loaded plugin implements it\n" % (HEADER, line_of(HEADER,
                                                                          "REG_OP(GeEngineOnly)")),
                      err)
        self.assertEqual(err.count("REG_OP(GeEngineOnly) is not used"), 1)
        # Named, it is checked: nothing implements it, so nothing ran.
        out, err = self.run_ok("check", "--proto", HEADER, "GeEngineOnly", code=3)
        self.assertRegex(out, r"(?m)^GeEngineOnly +inconclusive")
        # Without the declaration, every type is swept and the plugin's
        # float32-only view writes past a float16 output (what issue 25.21
        # saw): the declaration is the only place a host prototype says it.
        rc, out, err = pyop("check", "--proto", PY_FORM, "GeAddCustom")
        self.assertEqual(rc, 1, out + err)
        self.assertIn('inputs x1=float16[2,3], x2=float16[2,3]: PYOP_ECONTRACT: execute of '
                      '"GeAddCustom" wrote past the end of output 0', out)


class ProtoErrorsTest(_Case):
    """Every wrong declaration names file and line (issue 25 item 22)."""

    def expect(self, path, line, *parts):
        rc, out, err = pyop("list", "--proto", path)
        self.assertEqual(rc, 1, out + err)
        first = err.splitlines()[0]
        self.assertTrue(first.startswith("pyop: list: --proto %s: " % path), err)
        self.assertIn("(%s:%d)" % (path, line), first)
        for p in parts:
            self.assertIn(p, first)
        self.assertNotIn("Traceback", err)

    def test_python_form(self):
        cases = [
            ('\nREG_OP("GeAddCustom").INPUT("x1").INPUT("x1").OUTPUT("y")\n', 2,
             "input 'x1' is declared twice"),
            ('\nREG_OP("GeLegacyHost").INPUT("x").OUTPUT("y") \\\n'
             '    .REQUIRED_ATTR("k", "Int").ATTR("k", "Float", 1.0)\n', 3,
             "attribute 'k' is declared twice"),
            ('REG_OP("A").INPUT("x").OUTPUT("y")\n\nREG_OP("B").ATTR("s", "String", "a\\0b")\n', 3,
             "holds a NUL character"),
            ('\n\nREG_OP("A").ATTR("k", "Int", 2**70)\n', 3,
             "default 1180591620717411303424 is outside int64"),
            ('REG_OP("A").ATTR("b", "Bool", 1)\n', 1, "default 1 is not a bool"),
            ('REG_OP("A")\\\n  .ATTR("f", "Float", 1e39)\n', 2, "does not fit in float32"),
            ('\nexit()\n', 2, "the file called exit()"),
            ('REG_OP("A").INPUT("x", "T")\n', 1, "which no .DATATYPE(T, ...)"),
        ]
        for n, (text, line, part) in enumerate(cases):
            with self.subTest(text=text):
                self.expect(self.file("bad%d.reg_op" % n, text, raw=True), line, part)

    def test_header(self):
        cases = [
            ("REG_OP(A)\n  .INPUT(x, TensorType({DT_FLOAT})\n.OP_END_FACTORY_REG(A);\n", 3,
             "expected ')' after the type of .INPUT(x, ..., got '.'"),
            ("namespace ge {\nREG_OP(A)\n  .INPUT(x, TensorType({DT_FLOAT}))\n"
             "  .INPUT(x, TensorType({DT_FLOAT}))\n.OP_END_FACTORY_REG(A);\n}\n", 4,
             "input 'x' is declared twice"),
            ("REG_OP(A)\n .ATTR(f, Float, 3.5e38)\n.OP_END_FACTORY_REG(A);\n", 2,
             "does not fit in float32"),
            ('\nREG_OP("A").INPUT("x")\n', 2, "the Python form"),
        ]
        for n, (text, line, part) in enumerate(cases):
            with self.subTest(text=text):
                self.expect(self.file("bad%d.h" % n, text, raw=True), line, part)

    def test_one_reg_op_in_two_files(self):
        """A REG_OP declared by two --proto files is a conflict naming both
        places, whichever their content: nothing runs on a guess."""
        with open(HEADER, encoding="utf-8") as f:
            copy = self.file("again.h", f.read(), raw=True)
        line = line_of(HEADER, "REG_OP(GeAddCustom)")
        rc, out, err = pyop("list", "--proto", HEADER, "--proto", copy)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("--proto %s:%d: REG_OP('GeAddCustom') is declared in %s:%d too"
                      % (copy, line, HEADER, line), err)
        self.assertEqual(out, "")
        self.assertNotIn("Traceback", err)

    def test_a_header_given_the_python_form_says_so(self):
        with open(HEADER, encoding="utf-8") as f:
            path = self.file("ge_add_custom.txt", f.read(), raw=True)
        self.expect(path, 1, "is C++ REG_OP syntax, but a file named ge_add_custom.txt is read "
                    "as the Python form", "give a C++ header a name ending in .h")

    def test_bom_accepted(self):
        with open(HEADER, encoding="utf-8") as f:
            text = f.read()
        out, _ = self.run_ok("list", "--proto", self.file("bom.h", "\ufeff" + text, raw=True))
        self.assertIn("data types: x1, x2, y (one type T): float32", out)
        with open(PY_FORM, encoding="utf-8") as f:
            text = f.read()
        out, _ = self.run_ok("list", "--proto", self.file("bom.reg_op", "\ufeff" + text, raw=True))
        self.assertIn("GeAddCustom(x1, x2; alpha: float = 1.0) -> y", out)


DTYPED = '''
    import pyop
    from pyop import Tensor, TensorDesc

    @pyop.register_op(op_type="Dt", outputs=("out",),
                      dtypes={"x": ["float32", "float64"], "out": ["float32", "float64"]})
    def dt(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="Dt")
    class DtImpl:
        def execute(self, x: Tensor) -> None:
            out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)
            with memoryview(x) as a, memoryview(out) as b:
                if a.nbytes:
                    b.cast("B")[:] = a.cast("B")

    @pyop.register_op(op_type="DtWrongOut", dtypes={"x": "float32", "y": "float32"},
                      outputs=("y",))
    def wrong(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="DtWrongOut")
    class WrongImpl:
        def execute(self, x: Tensor) -> None:
            pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, pyop.DataType.float16)
    '''


class RegisterOpDtypesTest(_Case):
    """register_op(dtypes=...): the same constraints from Python."""

    def test_list_run_check(self):
        d = os.path.join(self.tmp, "dtyped")
        os.makedirs(d, exist_ok=True)
        ops = self.file("dtyped/dt_ops.py", DTYPED)
        out, _ = self.run_ok("list", opp=d)
        self.assertIn("Dt(x) -> out", out)
        self.assertIn("    data types: x: float32, float64; out: float32, float64\n", out)
        out, _ = self.run_ok("run", "Dt", "--input", "x=float64[2]:1,2", opp=d)
        self.assertEqual(out, "out: float64[2] = [1, 2]\n")
        rc, out, err = pyop("run", "Dt", "--input", "x=int8[2]:1,2", opp=d)
        self.assertEqual(rc, 1, out + err)
        self.assertIn('input 0 "x" is int8; its prototype (%s:%d) allows float32, float64'
                      % (ops, line_of(ops, 'op_type="Dt",')), err)
        out, _ = self.run_ok("check", d, "Dt")
        self.assertRegex(out, r"(?m)^Dt +ok \(infer_meta, execute; generated\)")
        self.assertIn(" on float32[2,3], float64[2,3], float32[0,3] (empty)", out)
        # An execute asking for an output outside its set breaks the contract.
        rc, out, err = pyop("run", "DtWrongOut", "--input", "x=float32[2]:1,2", opp=d)
        self.assertEqual(rc, 1, out + err)
        self.assertIn('output 0 "y" asked for as float16; its prototype (%s:%d) allows float32'
                      % (ops, line_of(ops, 'op_type="DtWrongOut"')), err)


if __name__ == "__main__":
    unittest.main()
