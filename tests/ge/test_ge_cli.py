"""GE-style plugins (tests/ge/plugins) through the `pyop` command: list,
check, run, doctor; GE's rejections; a real `ge` imported first; and no
"still referenced at shutdown" warning because of the ge package.

Environment: PYOP_TEST_CLI (bin/pyop), PYOP_TEST_PYTHON (interpreter),
PYOP_TEST_GE_PLUGINS (tests/ge/plugins), PYOP_TEST_GE_BAD (tests/ge/bad).
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

CLI = os.environ["PYOP_TEST_CLI"]
PY = os.environ.get("PYOP_TEST_PYTHON", sys.executable)
PLUGINS = os.environ["PYOP_TEST_GE_PLUGINS"]
BAD = os.environ["PYOP_TEST_GE_BAD"]


def pyop(*args, opp=PLUGINS, code=None):
    env = dict(os.environ, ASCEND_CUSTOM_OPP_PATH=opp, PYOP_LOG="warn",
               PYTHONDONTWRITEBYTECODE="1")
    cmd = [PY, "-B", CLI] + list(args) if code is None else [PY, "-B", "-c", code] + list(args)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


class CliTest(unittest.TestCase):
    def ok(self, *args, **kw):
        rc, out, err = pyop(*args, **kw)
        self.assertEqual(rc, 0, "pyop %s: %s%s" % (" ".join(args), out, err))
        self.assertNotIn("still referenced", err)
        return out

    def fails(self, *args, **kw):
        rc, out, err = pyop(*args, **kw)
        self.assertEqual(rc, 1, "pyop %s: %s%s" % (" ".join(args), out, err))
        self.assertNotIn("still referenced", err)
        return out + err

    def test_list(self):
        out = self.ok("list")
        for line in ("GeScaledAdd(x, y; alpha: float = 1.0) -> output0",
                     "GeLegacyNeg(x) -> output0",
                     "GeIoKinds(x, bias?, xs[]) -> output0, output1",
                     "GeOutputNames(output0, other) -> output0_1, output1",
                     "GeDtypeSentinel(x; dt: int = 28) -> output0",
                     "GePkgScale(x) -> output0", "GePkgShift(x) -> output0",
                     "GeNpuOnly(x, y) -> output0", "GeHostAndNpu(x, y) -> output0",
                     "GeAcl(x) -> output0", "GeCtxProbe(x) -> output0",
                     "GeAddInto(x (mutated), y) -> x (input x's buffer)",
                     "GeAccumulate(acc (mutated), x) -> output0, acc (input acc's buffer)",
                     "GeNoOutputs(x)\n", "GeSplit(x; n: int = 2) -> output0[]",
                     "GeSplitSum(x; n: int = 2) -> output0[], output1",
                     "GeAddTable(x; table: Tensor) -> output0"):
            self.assertIn(line, out)
        self.assertIn("dt: DataType = 'float16'", out)
        self.assertIn("lli: list[list[int]] = [[1, 2], [3]]", out)
        self.assertIn("capabilities: infer_meta, declare_launch_args", out)
        self.assertIn("capabilities: infer_meta, execute, declare_launch_args", out)
        self.assertIn("(ge:ge_ops:ScaledAdd:GeScaledAdd)", out)

    def test_check(self):
        out = self.fails("check")
        self.assertIn("19 ops checked, 12 failed, 1 inconclusive", out)
        for op in ("GeScaledAdd", "GeAllAttrs", "GeOutputNames", "GeDtypeSentinel",
                   "GeNoOutputs", "GeDirectProbe"):
            self.assertRegex(out, r"(?m)^%s +ok" % op)
        # float32-only ops whose infer_meta accepts every data type: the sweep
        # runs them on the others (float32[2,3] itself passes), and the
        # float32 stores into a narrower buffer are reported, not a crash.
        for op in ("GePkgScale", "GePkgShift", "GeHostAndNpu", "GeAddInto", "GeAccumulate",
                   "GeSplit", "GeSplitSum", "GeAddTable"):
            self.assertRegex(out, r"(?m)^%s +failed" % op)
            self.assertRegex(out, r'(?m)^    inputs \S+=float16\[2,3\].*: PYOP_ECONTRACT: execute '
                             r'of "%s" wrote past the end of ' % op)
            self.assertNotRegex(out, r'(?m)^    inputs \S+=float32\[2,3\].*execute of "%s"' % op)
        for op in ("GeLegacyNeg", "GeIoKinds"):  # no view for float16: a KeyError, not a crash
            self.assertRegex(out, r"(?m)^    inputs x=float16\[2,3\].*failed: KeyError: "
                             r"<DataType.DT_FLOAT16: 1>")
        # GeCtxProbe counts its calls on self: two runs on one instance differ.
        self.assertIn("inputs x=float32[2,3]: run twice on one instance with the same inputs, "
                      "output output0 differs", out)
        # declare_launch_args runs and stops at add_launch: it needs an NPU.
        self.assertRegex(out, r"(?m)^GeNpuOnly +inconclusive \(infer_meta, declare_launch_args; ")
        self.assertIn("    inconclusive: declare_launch_args stopped where it needs an NPU", out)
        self.assertRegex(out, r"(?i)GeAcl +failed")
        out = self.ok("check", "GeScaledAdd", "GeAllAttrs", "GeOutputNames", "GeDtypeSentinel",
                      opp=os.path.join(PLUGINS, "ge_ops.py"))
        self.assertIn("4 ops checked, 0 failed", out)

    def test_docs_example(self):
        """docs/ge-plugins.md's plugin, as written there: StorageShape read
        the documented way, pyop samples in a GE plugin; check runs the
        sample and passes, run prints the product; x.shape[0] fails as the
        document says."""
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "..", "..", "docs", "ge-plugins.md")) as f:
            doc = f.read()
        start = doc.index("## Reading shapes, samples and the execute context")
        section = doc[start:doc.index("\n## ", start + 1)]
        code = section.split("```python\n", 1)[1].split("```", 1)[0]
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "ge_row_scale.py"), "w") as f:
                f.write(code)
            out = self.ok("check", "GeRowScale", opp=d)
            self.assertIn("1 op checked, 0 failed", out)
            self.assertRegex(out, r"(?m)^GeRowScale +ok")
            self.assertIn("2x3", out)
            out = self.ok("run", "GeRowScale", "--input", "x=float32[2,3]:1,2,3,4,5,6",
                          "--input", "gamma=float32[3]:10,20,30", opp=d)
            self.assertIn("output0: float32[2,3] = [10, 40, 90, 40, 100, 180]", out)
            self.assertIn(out.strip(), section)
        sys.path.insert(0, os.path.join(here, "..", "..", "bridge", "python"))
        try:
            from ge.runtime import TensorDesc
            from ge.graph.types import DataType
        finally:
            del sys.path[0]
        x = TensorDesc([2, 3], DataType.DT_FLOAT)
        with self.assertRaises(TypeError):
            x.shape[0]
        self.assertEqual((x.shape.storage_shape.dims, x.shape.origin_shape.get_dim(1),
                          x.shape.storage_shape.dim_num), ([2, 3], 3, 2))

    def test_run(self):
        cases = [
            (["GeScaledAdd", "--input", "x=float32[3]:1,2,3", "--input", "y=float32[3]:10,20,30",
              "--attr", "alpha=2"], "output0: float32[3] = [21, 42, 63]"),
            (["GeLegacyNeg", "--input", "x=float32[2]:1,-2"], "output0: float32[2] = [-1, 2]"),
            (["GeAllAttrs", "--input", "x=float32[1]:0"],
             "output0: float64[12] = [7, 0.1, 1, 397, 1, 63, 0.75, 5, 3, 14, 62, 99]"),
            (["GeAllAttrs", "--input", "x=float32[1]:0", "--attr", "i=-3", "--attr", "f=2.5",
              "--attr", "b=false", "--attr", "s=zz", "--attr", "dt=int32", "--attr", "li=4,5",
              "--attr", "lf=0.1", "--attr", "lb=false,true", "--attr", "ls=a,b,c",
              "--attr", "ldt=float32", "--attr", "lli=[[4],[5,6]]"],
             "output0: float64[12] = [-3, 2.5, 0, 322, 3, 92, 0.1, 2, 3, 0, 152, 122]"),
            (["GeDtypeSentinel", "--input", "x=float32[1]:0"], "output0: int32[1] = [28]"),
            (["GeDtypeSentinel", "--input", "x=float32[1]:0", "--attr", "dt=27"],
             "output0: int32[1] = [27]"),
            (["GeIoKinds", "--input", "x=float32[3]:1,2,3", "--input", "xs=float32[3]:1,1,1",
              "--input", "xs=float32[3]:10,10,10"],
             "output0: float32[3] = [12, 13, 14]\noutput1: int32[4] = [2, 0, 3, 3]"),
            (["GeIoKinds", "--input", "x=float32[3]:1,2,3", "--input", "bias=float32[3]:5,5,5"],
             "output0: float32[3] = [6, 7, 8]\noutput1: int32[4] = [0, 1, 2, 3]"),
            (["GeOutputNames", "--input", "output0=float32[2]:1,2", "--input",
              "other=int32[1]:5"], "output0_1: float32[2] = [1, 2]\noutput1: int32[1] = [5]"),
            (["GeCtxProbe", "--input", "x=float32[2]:1,2"], "output0: int64[6] = [0, 1, 2, 9, 90, 1]"),
            (["GePkgScale", "--input", "x=float32[2]:1,2"], "output0: float32[2] = [3, 6]"),
            (["GePkgShift", "--input", "x=float32[2]:1,2"], "output0: float32[2] = [4, 5]"),
            (["GeHostAndNpu", "--input", "x=float32[2]:1,2", "--input", "y=float32[2]:3,4"],
             "output0: float32[2] = [3, 8]"),
            (["GeAddInto", "--input", "x=float32[3]:1,2,3", "--input", "y=float32[3]:10,20,30"],
             "x: float32[3] = [11, 22, 33] (input x's buffer)\n"
             "input x after the call (mutated): float32[3] = [11, 22, 33]"),
            (["GeAccumulate", "--input", "acc=float32[2]:1,1", "--input", "x=float32[2]:2,3"],
             "output0: float32[2] = [4, 9]\nacc: float32[2] = [3, 4] (input acc's buffer)"),
            (["GeNoOutputs", "--input", "x=float32[2]:1,2"], "(no outputs)"),
            (["GeSplit", "--input", "x=float32[4]:1,2,3,4"],
             "output0: 2 tensors\noutput0[0]: float32[2] = [1, 2]\n"
             "output0[1]: float32[2] = [3, 4]"),
            (["GeSplitSum", "--input", "x=float32[6]:1,2,3,4,5,6", "--attr", "n=3"],
             "output0[2]: float32[2] = [5, 6]\noutput1: float32[1] = [21]"),
            (["GeAddTable", "--input", "x=float32[4]:1,2,3,4", "--attr",
              "table=float32[2]:10,20"], "output0: float32[4] = [11, 22, 13, 24]"),
        ]
        for args, want in cases:
            with self.subTest(args[0]):
                self.assertIn(want, self.ok("run", *args))

    def test_newest_api(self):
        """GE's newest API (tests/ge/next, docs/ge-plugins.md, "What runs on a host, what is accepted, what needs an NPU") through pyop list/run."""
        nxt = os.path.join(os.path.dirname(os.path.abspath(__file__)), "next",
                           "ge_next_ops.py")
        out = self.ok("list", opp=nxt)
        for op in ("GeNextBoth", "GeNextDeviceOnly", "GeNextCompiled", "GeNextLegacy",
                   "GeNextNoAlloc", "GeNextReturns", "GeNextHostRef"):
            self.assertIn(op, out)
        self.assertIn("output0: float32[2] = [11, 22]",  # the HOST kernel (x + y)
                      self.ok("run", "GeNextBoth", "--input", "x=float32[2]:1,2", "--input",
                              "y=float32[2]:10,20", opp=nxt))
        self.assertIn("output0: float32[2] = [3, 6]",
                      self.ok("run", "GeNextDeviceOnly", "--input", "x=float32[2]:1,2",
                              "--attr", "k=3", opp=nxt))
        self.assertIn("output0: float32[2] = [1.5, 2.5]",
                      self.ok("run", "GeNextLegacy", "--input", "x=float32[2]:1,2", opp=nxt))
        out = self.fails("run", "GeNextNoAlloc", "--input", "x=float32[2]:1,2", "--input",
                         "y=float32[2]:1,2", opp=nxt)
        self.assertIn('execute of "GeNextNoAlloc"', out)
        self.assertIn('returned without producing output 0 "output0"', out)
        out = self.fails("run", "GeNextReturns", "--input", "x=float32[2]:1,2", opp=nxt)
        self.assertIn("TypeError: execute must return None", out)

    def test_npu_boundary(self):
        out = self.fails("run", "GeNpuOnly", "--input", "x=float32[2]:1,2", "--input",
                         "y=float32[2]:3,4")
        for s in ("NotImplementedError", "AnnotatedArgsContext.add_launch", "add_custom_kernel",
                  "'GeNpuOnly'", "needs an NPU"):
            self.assertIn(s, out)
        out = self.fails("run", "GeAcl", "--input", "x=float32[2]:1,2")
        for s in ("ModuleNotFoundError", "'acl'", "pyACL needs an NPU", "op 'GeAcl'",
                  "ge_npu.py"):
            self.assertIn(s, out)

    def test_rejections(self):
        out = self.fails("list", opp=os.path.join(BAD, "ge_bad_default.py"))
        self.assertIn("TypeError: register_op op_type 'GeBadDefault' failed: default value for "
                      "attr 'alpha' must be float, got int 1", out)
        out = self.fails("list", opp=os.path.join(BAD, "ge_bad_signature.py"))
        self.assertIn("TypeError: invalid execute signature for op type GeBadSignature", out)
        self.assertIn("expected attr name 'a'", out)
        self.assertIn("actual attr name 'b'", out)
        self.assertIn("ge_bad_signature.py:15", out)
        # issue 17 item 15: the op, the attribute, the cause and file:line
        out = self.fails("list", opp=os.path.join(BAD, "ge_bad_int_default.py"))
        for s in ("ValueError: register_op op_type 'GeBadIntDefault' failed: default value for "
                  "attr 'k' does not fit in int64: 18446744073709551616",
                  "ge_bad_int_default.py:8"):
            self.assertIn(s, out)
        self.assertNotIn("OverflowError", out)
        out = self.fails("list", opp=os.path.join(BAD, "ge_bad_op_type.py"))
        for s in ("ValueError: register_op: op_type 'Ge Bad Type'", "ge_bad_op_type.py:8",
                  "op types are ASCII"):
            self.assertIn(s, out)

    def test_waiting_implementation_says_ges_words(self):
        """An implementation with no prototype loads and waits (a departure
        from GE, which fails the load): pyop run and pyop check say so in
        libpyop's words and in GE's ("canonical IR not found"), so a GE user
        searching for them finds the reason (docs/ge-plugins.md)."""
        impl_only = os.path.join(os.path.dirname(os.path.abspath(__file__)), "impl_only")
        rc, out, err = pyop("run", "GeMulCustom", "--input", "x1=float32[2]:1,2", "--input",
                            "x2=float32[2]:3,4", opp=impl_only)
        self.assertEqual(rc, 1, out + err)
        for s in ('op "GeMulCustom": its implementation (', "has no prototype",
                  'GE, which needs that prototype (the canonical IR) at the load, fails there '
                  'with "canonical IR not found"'):
            self.assertIn(s, err)
        rc, out, err = pyop("check", "GeMulCustom", opp=impl_only)
        self.assertEqual(rc, 3, out + err)  # inconclusive: nothing ran
        self.assertRegex(out, r'(?m)^    inconclusive: its implementation \(.*ge_add_custom\.py:'
                         r'\d+\) is waiting for a prototype: .*; GE fails such a load with '
                         r'"canonical IR not found"$')

    def test_doctor(self):
        out = self.ok("doctor")
        self.assertIn("ge: libpyop's GE compatibility package", out)

    def test_real_ge_is_kept(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "ge", "custom_op"))
            with open(os.path.join(d, "ge", "__init__.py"), "w") as f:
                f.write("CANN = True\n")
            with open(os.path.join(d, "ge", "custom_op", "__init__.py"), "w") as f:
                f.write(textwrap.dedent("""\
                    REGISTERED = []
                    def register_op(*, op_type, mutates_args=()):
                        def deco(fn):
                            REGISTERED.append(op_type)
                            return fn
                        return deco
                    def register_op_impl(*, op_type):
                        return lambda cls: cls
                    def get_execute_ctx():
                        raise RuntimeError
                    """))
            code = textwrap.dedent("""\
                import runpy, sys
                sys.path.insert(0, %r)
                import ge, ge.custom_op
                sys.path.pop(0)
                try:
                    runpy.run_path(%r, run_name="__main__")
                except SystemExit as e:
                    rc = e.code
                else:
                    rc = 0
                assert sys.modules["ge"] is ge and ge.CANN, "the real ge was replaced"
                print("REGISTERED", sorted(ge.custom_op.REGISTERED))
                sys.exit(rc)
                """ % (d, CLI))
            rc, out, err = pyop("doctor", code=code)
            # The doctor's trial load fails: this stand-in "CANN ge" lacks
            # what the test plugins import, and the doctor says so (exit 1).
            self.assertEqual(rc, 1, out + err)
            self.assertIn("load: FAILED", out)
            self.assertIn("ge: a CANN `ge` package is already imported", out)
            plugin = os.path.join(d, "plugins", "real_ge_plugin.py")
            os.makedirs(os.path.dirname(plugin))
            with open(plugin, "w") as f:
                f.write("from ge.custom_op import register_op\n"
                        "@register_op(op_type='RealGeOp')\n"
                        "def f(x):\n"
                        "    return x\n")
            rc, out, err = pyop("list", code=code, opp=plugin)
            self.assertEqual(rc, 0, out + err)
            self.assertIn("no ops registered", out)
            self.assertIn("REGISTERED ['RealGeOp']", out)
            self.assertIn("a `ge` package is already imported", err)
            self.assertIn("it is not replaced", err)


if __name__ == "__main__":
    unittest.main()
