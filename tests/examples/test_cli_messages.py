"""The `pyop` command as a new user meets it: which Python runs it, what its
messages say, its exit codes, and --json on failure.

Driven by ctest (tests/examples/CMakeLists.txt) through environment variables:

  PYOP_TEST_CLI           the build tree's bin/pyop
  PYOP_TEST_BUILD_PYTHON  the build's default Python (bin/pyop's #! line)
  PYOP_TEST_OPS           examples/ops
  PYOP_TEST_ARTIFACTS     the build tree's lib/pyop/artifacts

Needs only the standard library.
"""

import glob
import json
import os
import re
import sys
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


BROKEN = textwrap.dedent('''\
    import pyop
    def helper():
        raise RuntimeError("broken on purpose")
    helper()
    ''')

GOOD = textwrap.dedent('''\
    import pyop
    from pyop import TensorDesc

    @pyop.register_op(op_type="Fine")
    def fine(x: TensorDesc) -> TensorDesc:
        return TensorDesc(shape=x.shape, dtype=x.dtype)
    ''')


class CliMessagesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cli = _need("PYOP_TEST_CLI")
        cls.build_python = _need("PYOP_TEST_BUILD_PYTHON")
        cls.ops = _need("PYOP_TEST_OPS")
        cls.tmp = tempfile.mkdtemp(prefix="pyop-cli-test-")
        cls.bad = os.path.join(cls.tmp, "bad")
        cls.good = os.path.join(cls.tmp, "good")
        for d, name, text in ((cls.bad, "broken.py", BROKEN), (cls.good, "fine.py", GOOD)):
            os.makedirs(d)
            with open(os.path.join(d, name), "w") as f:
                f.write(text)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pyop(self, *args, opp=None, unset=False, **extra):
        """Runs bin/pyop as a user would: the script itself (its #! line)."""
        env = dict(ENV)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYOP_PYTHON", None)
        env.pop("PYOP__REEXECUTED", None)
        env["ASCEND_CUSTOM_OPP_PATH"] = self.ops if opp is None else opp
        if unset:
            del env["ASCEND_CUSTOM_OPP_PATH"]
        cwd = extra.pop("_cwd", None)
        env.update(extra)
        return subprocess.run([self.cli] + list(args), capture_output=True, text=True,
                              env=env, timeout=300, cwd=cwd)

    def json_error(self, r, status):
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        err = json.loads(r.stdout)["error"]
        self.assertEqual(err["status"], status, err)
        self.assertTrue(err["message"])
        for key in ("op", "file", "line"):
            self.assertIn(key, err)
        return err

    # --- item 2: the Python that runs the command

    def test_runs_under_the_build_python(self):
        with open(self.cli) as f:
            self.assertEqual(f.readline().rstrip("\n"), "#!" + self.build_python)
        r = self.pyop("doctor", "--json", opp="")
        self.assertEqual(r.returncode, 0, r.stderr)
        py = json.loads(r.stdout)["python"]
        self.assertTrue(os.path.samefile(py["executable"], self.build_python), py)
        self.assertIs(py["is_build_python"], True)

    def test_pyop_python_chooses_another(self):
        other = shutil.which("python3")
        if other is None or os.path.samefile(other, self.build_python):
            self.skipTest("no second Python on PATH")
        # A second Python the build has a bridge for (check and run load
        # ops under it), not whichever python3 PATH finds.
        out = subprocess.run([other, "-c", "import sys, platform; print('cp%d%d%s-%s' % ("
                              "sys.version_info[0], sys.version_info[1], sys.abiflags, "
                              "platform.machine()))"], capture_output=True, text=True,
                             timeout=60)
        tag = out.stdout.strip()
        artifacts = _need("PYOP_TEST_ARTIFACTS")
        if out.returncode != 0 or not os.path.isdir(os.path.join(artifacts, tag)):
            self.skipTest("python3 on PATH is %s (%s): the build has no bridge for it (%s)"
                          % (other, tag or "not a CPython", ", ".join(sorted(
                              os.listdir(artifacts)))))
        r = self.pyop("doctor", "--json", opp="", PYOP_PYTHON=other)
        self.assertEqual(r.returncode, 0, r.stderr)
        py = json.loads(r.stdout)["python"]
        self.assertFalse(os.path.samefile(py["executable"], self.build_python), py)
        self.assertIs(py["is_build_python"], False)
        r = self.pyop("doctor", opp="", PYOP_PYTHON=other)
        self.assertIn("NOT the build's Python %s" % self.build_python, r.stdout)
        # check says so too (its verdict may not hold under the build's Python).
        r = self.pyop("check", self.ops, PYOP_PYTHON=other)
        self.assertIn("note: checked under ", r.stdout)
        self.assertIn("NOT the build's Python %s" % self.build_python, r.stdout)
        r = self.pyop("check", "--json", self.ops, PYOP_PYTHON=other)
        self.assertIs(json.loads(r.stdout)["python"]["is_build_python"], False)
        r = self.pyop("check", self.ops)
        self.assertNotIn("NOT the build's Python", r.stdout)
        r = self.pyop("check", "--json", self.ops)
        self.assertIs(json.loads(r.stdout)["python"]["is_build_python"], True)
        # run says so on stderr (its stdout is the result, unchanged).
        run = ("run", "ScaledAdd", "--input", "x=float32[2]:1,2", "--input",
               "y=float32[2]:3,4", "--attr", "alpha=2")
        r = self.pyop(*run, opp=self.ops, PYOP_PYTHON=other)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pyop: run: note: run under ", r.stderr)
        self.assertIn("NOT the build's Python %s" % self.build_python, r.stderr)
        mine = self.pyop(*run, opp=self.ops)
        self.assertEqual(r.stdout, mine.stdout)
        self.assertNotIn("note:", mine.stderr)
        r = self.pyop("list", PYOP_PYTHON="/no/such/python")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, "pyop: list: PYOP_PYTHON=/no/such/python: no such Python\n")

    def test_lanes_on_a_python_without_them(self):
        """--lanes N (pyop_options.lanes) under the build's Python 3.11: the load
        works as without lanes, one warning says why, and list/doctor show
        every op serial with that reason; without --lanes nothing of it
        shows. Out of range is libpyop's EINVAL."""
        ver = subprocess.run([self.build_python, "-c",
                              "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True).stdout.strip()
        if tuple(int(x) for x in ver.split(".")) >= (3, 12):
            self.skipTest("the build's Python %s has per-interpreter GILs" % ver)
        why = ("Python %s has no per-interpreter GIL (lanes need CPython 3.12.4 or later)"
               % ver)
        r = self.pyop("--lanes", "2", "list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("lanes: 2 asked for, but %s: every Python op runs serially in the "
                      "main interpreter" % why, r.stderr)
        self.assertEqual(r.stderr.count("lanes: 2 asked for"), 1, r.stderr)
        self.assertIn("ScaledAdd(x, y; alpha: float = 1.0) -> z\n", r.stdout)
        blocks = r.stdout.split("\n    capabilities: ")
        self.assertGreater(len(blocks), 5)
        self.assertEqual(r.stdout.count("    serial (main interpreter): %s\n" % why),
                         len(blocks) - 1, r.stdout)
        r = self.pyop("--lanes", "2", "list", "--json")
        ops = json.loads(r.stdout)["ops"]
        self.assertTrue(ops)
        for op in ops:
            self.assertEqual((op["lanes"], op["serial_reason"]), (0, why), op)
        r = self.pyop("--lanes", "2", "doctor")
        self.assertIn("lanes: 2 asked for (pyop_options.lanes); how each op runs:\n", r.stdout)
        self.assertIn("  op ScaledAdd: serial (main interpreter): %s\n" % why, r.stdout)
        plain = self.pyop("list", "--json")
        for op in json.loads(plain.stdout)["ops"]:
            self.assertEqual((op["lanes"], op["serial_reason"]), (0, None), op)
        self.assertNotIn("lanes", plain.stderr)
        self.assertNotIn("serial", self.pyop("list").stdout)
        r = self.pyop("--lanes", "65", "list", "--json")
        err = self.json_error(r, "PYOP_EINVAL")
        self.assertIn("pyop_set_options: lanes 65 is out of range (0..64)", err["message"])

    def test_doctor_without_a_bridge(self):
        """A libpyop whose artifacts are missing (copied alone): doctor says
        no bridge is loaded, its ge line does not claim that anything serves
        GE plugins, and the load's failure says how to get the bridge."""
        lonely = os.path.join(self.tmp, "lonely")
        os.makedirs(lonely)
        lib = os.path.join(os.path.dirname(os.path.realpath(self.cli)), "..", "lib",
                           "libpyop.so.0")
        shutil.copy(lib, lonely)
        r = self.pyop("--library", os.path.join(lonely, "libpyop.so.0"), "doctor")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("\nbridge: not loaded\n", r.stdout)
        self.assertIn("\nge: nothing serves GE-style plugins yet: no bridge is loaded", r.stdout)
        self.assertNotIn("serves GE-style plugins (host-only", r.stdout)
        self.assertIn("this libpyop was built with a bridge for cp3", r.stdout)
        self.assertIn("but its artifact directory is not in %s/pyop/artifacts: install the "
                      "build's lib/pyop/artifacts with it (cmake --install), or name the "
                      "directory in PYOP_BRIDGE_DIR" % lonely, r.stdout)
        r = self.pyop("doctor")
        self.assertIn("\nbridge: loaded ", r.stdout)
        self.assertIn("\nge: libpyop's GE compatibility package (python/ge of the bridge "
                      "artifact) serves GE-style plugins", r.stdout)

    def test_no_libpyop(self):
        """--library naming no libpyop: exit 1, one line naming the file and
        the command, and with --json the error object (PYOP_ENOENT) on
        stdout, nothing else."""
        missing = os.path.join(self.tmp, "nowhere", "libpyop.so.0")
        r = self.pyop("--library", missing, "list")
        self.assertEqual((r.returncode, r.stdout), (1, ""), r.stderr)
        self.assertTrue(r.stderr.startswith("pyop: list: cannot load libpyop: "), r.stderr)
        self.assertIn(missing, r.stderr)
        r = self.pyop("--library", missing, "doctor", "--json")
        err = self.json_error(r, "PYOP_ENOENT")
        self.assertIn("cannot load libpyop", err["message"])

    def test_no_bridge_for_this_python_says_the_fix(self):
        """Under a Python the build made no bridge for, the failure names
        -DPYOP_PYTHONS as the build was configured and a rebuild."""
        others = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[02-9]*/bin/python3.1*")))
        others = [p for p in others if re.search(r"python3\.\d+$", p) and os.access(p, os.X_OK)]
        if not others:
            self.skipTest("no CPython other than the build's (3.11) under ~/.pyenv")
        other = others[0]
        ver = re.search(r"python(3\.\d+)$", other).group(1)
        r = self.pyop("list", PYOP_PYTHON=other)
        if "no usable bridge" not in r.stderr:
            self.skipTest("this build has a bridge for %s" % other)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("this libpyop has no bridge for cp%s-" % ver.replace(".", ""), r.stderr)
        self.assertIn(": add that Python %s to -DPYOP_PYTHONS (it was built with "
                      "-DPYOP_PYTHONS=\"%s" % (ver, self.build_python), r.stderr)
        self.assertIn(";/path/to/python%s\"), rebuild and reinstall; or run under a Python it "
                      "has a bridge for: cp311-" % ver, r.stderr)

    def test_plugin_one_directory_too_deep(self):
        """ops/sub/my_op.py with nothing at the top of ops: list, check and
        doctor name the skipped file and the two fixes, and both fixes
        work (issue 26.5)."""
        ops = os.path.join(self.tmp, "deep", "ops")
        sub = os.path.join(ops, "sub")
        os.makedirs(sub)
        with open(os.path.join(sub, "my_op.py"), "w") as f:
            f.write(GOOD)
        note = ("%s skipped: one directory too deep (the plugins of %s are the .py files and "
                "packages at its top); make sub a package plugin (add %s with `from . import "
                "my_op`), or list %s in ASCEND_CUSTOM_OPP_PATH"
                % (os.path.join(sub, "my_op.py"), ops, os.path.join(sub, "__init__.py"), sub))
        r = self.pyop("list", opp=ops)
        self.assertEqual(r.stdout, "no ops registered (ASCEND_CUSTOM_OPP_PATH=%s)\n  %s\n"
                         % (ops, note))
        r = self.pyop("check", opp=ops)
        self.assertEqual(r.returncode, 1)
        self.assertIn("0 ops checked, 0 failed\n  %s\n" % note, r.stdout)
        self.assertIn("  note: %s\n" % note, self.pyop("doctor", opp=ops).stdout)
        self.assertIn("Fine(x) -> y", self.pyop("list", opp=sub).stdout)
        with open(os.path.join(sub, "__init__.py"), "w") as f:
            f.write("from . import my_op\n")
        r = self.pyop("list", opp=ops)
        self.assertIn("Fine(x) -> y", r.stdout)
        self.assertNotIn("too deep", r.stdout)

    def test_run_prints_the_inputs_it_made(self):
        """Generated values are printed (text: the generated ones, before the
        outputs; --json: every input, "generated" saying which) (26.8)."""
        r = self.pyop("run", "ScaledAdd", "--input", "x=float32[2,3]", "--input",
                      "y=float32[2,3]:1,1,1,1,1,1", "--attr", "alpha=2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "input x (generated): float32[2,3] = [0, 0.5, 1, 1.5, 2, 2.5]\n"
                                   "z: float32[2,3] = [2, 2.5, 3, 3.5, 4, 4.5]\n")
        r = self.pyop(*("run", "ScaledAdd", "--input", "x=float16[2,3]", "--input",
                        "y=float16[2,3]:1.1,1,1,1,1,1", "--json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["inputs"], [
            {"name": "x", "dtype": "float16", "shape": [2, 3],
             "values": [0.0, 0.5, 1.0, 1.5, 2.0, 2.5], "generated": True},
            {"name": "y", "dtype": "float16", "shape": [2, 3],  # as the op got them
             "values": [1.099609375, 1.0, 1.0, 1.0, 1.0, 1.0], "generated": False}])
        r = self.pyop("run", "SumAll", "--input", "xs=float32[1]", "--input", "xs=float32[1]:4",
                      "--json")
        self.assertEqual([(i["name"], i["generated"]) for i in json.loads(r.stdout)["inputs"]],
                         [("xs[0]", True), ("xs[1]", False)])

    def test_run_help_and_near_names(self):
        r = self.pyop("run", "--help")
        self.assertEqual(r.returncode, 0)
        text = " ".join(r.stdout.split())
        self.assertIn("--input NAME=DTYPE[SHAPE]:VALUES one tensor of input NAME, e.g. "
                      "x=float32[2,3]:1,2,3,4,5,6", text)
        self.assertIn("without :VALUES sample values are generated and printed", text)
        self.assertIn("--attr NAME=VALUE attribute NAME, e.g. alpha=2", text)
        self.assertIn("--json print the result as JSON", text)
        r = self.pyop("run", "ScaledAdd", "--input", "xx=float32[1]", "--input", "y=float32[1]")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, 'pyop: run: op "ScaledAdd" has no input "xx" (inputs: x, y); '
                                   'did you mean "x"?\n')
        r = self.pyop("run", "ScaledAdd", "--input", "x=float32[1]", "--input", "y=float32[1]",
                      "--attr", "alpah=2")
        self.assertEqual(r.stderr, 'pyop: run: op "ScaledAdd" has no attribute "alpah" (it has: '
                                   'alpha); did you mean "alpha"?\n')
        r = self.pyop("run", "ScaledAdd", "--input", "q=float32[1]")
        self.assertNotIn("did you mean", r.stderr)

    def test_counts_agree_with_their_nouns(self):
        """One op, one plugin, one output (issue 26.9)."""
        r = self.pyop("check", opp=self.good)
        self.assertIn("\n1 op checked, 0 failed\n", "\n" + r.stdout)
        r = self.pyop("check", opp=self.good + ":" + self.bad)
        self.assertIn("1 op checked, 0 failed, 1 plugin failed to load", r.stdout)
        self.assertIn("pyop: check: 1 plugin failed to load", r.stderr)
        r = self.pyop("doctor", opp=self.good)
        self.assertIn("load: ok, 1 op registered", r.stdout)
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(self.cli)), "..",
                                        "share", "pyop"))
        try:
            from pyop_cli.list import lanes_line
        finally:
            del sys.path[0]
        self.assertEqual(lanes_line({"lanes": 1, "serial_reason": None}), "parallel: 1 lane")
        self.assertEqual(lanes_line({"lanes": 3, "serial_reason": None}), "parallel: 3 lanes")

    def test_doctor_text(self):
        r = self.pyop("doctor", opp=self.ops + ":relative/ops")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertIn("python: ", out)
        self.assertIn("numpy: ", out)
        self.assertIn("(site-packages)", out)
        self.assertIn("start_python would load: /", out)
        self.assertIn("relative/ops: relative: relative path refused", out)
        self.assertIn("load: ok, 10 ops registered", out)
        self.assertIn("lanes: none asked for: every Python op runs in the main interpreter", out)
        self.assertIn("plugin %s: ok (Clip, Concat)" % os.path.join(self.ops, "tensor_pack"),
                      out)
        # Each log line once, though the doctor scans more than once.
        self.assertEqual(r.stderr.count("element 'relative/ops' skipped"), 1, r.stderr)

    def test_doctor_json_structure(self):
        opp = ":".join([self.ops, self.bad, "relative/ops", os.path.join(self.tmp, "none")])
        r = self.pyop("doctor", "--json", opp=opp)
        err = self.json_error(r, "PYOP_EPLUGIN")
        self.assertEqual(err["file"], os.path.join(self.bad, "broken.py"))
        self.assertEqual(err["line"], 3)
        d = json.loads(r.stdout)
        self.assertEqual(d["runtime_key"].split("-")[0][:4], "cp31")
        self.assertEqual([(p["element"], p["verdict"]) for p in d["path"]],
                         [(self.ops, "python-dir"), (self.bad, "python-dir"),
                          ("relative/ops", "relative"),
                          (os.path.join(self.tmp, "none"), "missing-dir")])
        self.assertTrue(d["candidates"])
        self.assertTrue(all(c["status"] and c["dir"] for c in d["candidates"]), d)
        self.assertIn("loaded", [c["status"] for c in d["candidates"]])
        py = d["python"]
        self.assertIsInstance(py["numpy"]["importable"], bool)
        self.assertTrue(any(p["site_packages"] for p in py["sys_path"]), py["sys_path"])
        sp = d["start_python"]
        self.assertEqual(sp["verdict"], "present", sp)
        self.assertTrue(os.path.isabs(sp["libpython"]))
        verdicts = {os.path.basename(p["plugin"]): p["verdict"] for p in d["plugins"]}
        self.assertEqual(verdicts["broken.py"], "failed")
        self.assertEqual(verdicts["tensor_pack"], "ok")
        self.assertEqual(verdicts["scaled_add.py"], "ok")
        ops = {os.path.basename(p["plugin"]): p["ops"] for p in d["plugins"]}
        self.assertEqual(ops["tensor_pack"], ["Clip", "Concat"])

    def test_doctor_start_python_is_libpyops_lanes_choice(self):
        """The artifact start_python starts with lanes asked for, chosen as
        libpyop chooses (src/start_python.c): this build, then fake
        artifact trees through the command's own rule."""
        r = self.pyop("--lanes", "2", "doctor", "--json")
        sp = json.loads(r.stdout)["start_python"]
        plain = json.loads(self.pyop("doctor", "--json").stdout)["start_python"]
        self.assertIsNone(plain["note"])
        self.assertEqual(plain["artifact"], plain["default"])
        if sp["artifact"] == sp["default"] and sp["note"] is not None:
            self.assertRegex(sp["note"], r"^lanes: 2 asked for, but start_python starts %s, the "
                             r"build's default, which cannot run them \(" % sp["default"])
        tools = ENV.get("PYOP_TEST_TOOLS")
        if not tools:
            self.skipTest("PYOP_TEST_TOOLS is not set")
        sys.path.insert(0, tools)
        try:
            from pyop_cli import start_choice
        finally:
            sys.path.remove(tools)
        root = os.path.join(self.tmp, "artifacts")

        def art(name, tag, hexv, flags="", lib="/usr/lib/libpython.so", abi="7"):
            os.makedirs(os.path.join(root, name), exist_ok=True)
            with open(os.path.join(root, name, "manifest.txt"), "w") as f:
                f.write("# test\nformat=1\npython_tag=%s\nabi_flags=%s\nbridge_abi_major=1\n"
                        "bridge_abi_minor=%s\nlibpython=%s\npython_version_hex=%s\n"
                        % (tag, flags, abi, lib, hexv))

        art("cp311-x86_64", "cp311", "0x30b02f0")
        art("cp312-x86_64", "cp312", "0x30c01f0")            # 3.12.1: gh-119213
        art("cp313t-x86_64", "cp313", "0x30d00f0", flags="t")
        art("cp314-x86_64", "cp314", "0x30e00f0", lib="")    # no shared libpython
        art("cp315-x86_64", "cp315", "0x30f00f0", abi="5")   # an old bridge
        order = "cp311-x86_64;cp312-x86_64;cp313t-x86_64;cp314-x86_64;cp315-x86_64"
        choose = start_choice.choose
        self.assertEqual(choose(root, 0, "cp311-x86_64", order), ("cp311-x86_64", None))
        k, note = choose(root, 2, "cp311-x86_64", order)
        self.assertEqual(k, "cp311-x86_64")
        self.assertEqual(note, "lanes: 2 asked for, but start_python starts cp311-x86_64, the "
                               "build's default, which cannot run them (Python 3.11 has no "
                               "per-interpreter GIL)")
        for name, why in (("cp312-x86_64", "CPython 3.12.1 cannot end a sub-interpreter safely "
                           "(CPython gh-119213): lanes need CPython 3.12.4 or later"),
                          ("cp313t-x86_64", "Python 3.13t is free-threaded: its threads run "
                           "Python in parallel without lanes"),
                          ("cp314-x86_64", "its Python has no shared libpython to start"),
                          ("cp315-x86_64", "its bridge speaks ABI 1.5, lanes need 1.6")):
            self.assertEqual(choose(root, 2, name, order)[1],
                             "lanes: 2 asked for, but start_python starts %s, the build's "
                             "default, which cannot run them (%s)" % (name, why))
        # Fit ones: the first in the build's order, then by name.
        art("cp313-x86_64", "cp313", "0x30d00f0")
        art("cp312a-x86_64", "cp312", "0x30c04f0")            # 3.12.4: fixed
        self.assertEqual(choose(root, 2, "cp311-x86_64", order + ";cp313-x86_64"),
                         ("cp313-x86_64", "lanes asked for (2): starting cp313-x86_64 instead "
                          "of the build's default cp311-x86_64 (Python 3.11 has no "
                          "per-interpreter GIL)"))
        self.assertEqual(choose(root, 2, "cp311-x86_64", order)[0], "cp312a-x86_64")
        self.assertEqual(choose(root, 2, "cp313-x86_64", order), ("cp313-x86_64", None))

    # --- item 3: one message, one prefix; plugin frames only

    def test_op_error_one_prefix(self):
        r = self.pyop("run", "ScaledAdd", "--input", "x=float32[2]:1,2",
                      "--input", "y=float32[3]:1,2,3")
        self.assertEqual(r.returncode, 1, r.stderr)
        first = r.stderr.splitlines()[0]
        self.assertTrue(first.startswith("pyop: run: infer_meta of op 'ScaledAdd' (defined at "),
                        first)
        self.assertIn("failed: ValueError: ScaledAdd: x[2] and y[3] must have the same shape",
                      first)
        self.assertEqual(r.stderr.count("infer_meta of"), 1, r.stderr)
        self.assertNotIn("PYOP_EPYTHON", r.stderr)
        self.assertIn('scaled_add.py", line', r.stderr)

    def test_import_error_shows_plugin_frames_only(self):
        r = self.pyop("list", opp=self.bad)
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.startswith(
            "pyop: list: loading Python plugins failed: RuntimeError: broken on purpose\n"),
            r.stderr)
        self.assertIn('broken.py", line 3, in helper', r.stderr)
        self.assertIn('broken.py", line 4, in <module>', r.stderr)
        self.assertNotIn("_loader.py", r.stderr)
        self.assertNotIn("<frozen importlib", r.stderr)
        self.assertEqual(r.stdout, "")

    # --- item 4: --json on failure

    def test_json_on_failure(self):
        broken = os.path.join(self.bad, "broken.py")
        for args in (["list", "--json"], ["check", "--json"]):
            err = self.json_error(self.pyop(*args, opp=self.bad), "PYOP_EPLUGIN")
            self.assertEqual((err["file"], err["line"]), (broken, 3), args)
        r = self.pyop("run", "ScaledAdd", "--json", "--input", "x=float32[2]:1,2",
                      "--input", "y=float32[3]:1,2,3")
        err = self.json_error(r, "PYOP_EPYTHON")
        self.assertEqual(err["op"], "ScaledAdd")
        self.assertEqual(err["file"], os.path.join(self.ops, "scaled_add.py"))
        self.assertIsInstance(err["line"], int)
        err = self.json_error(self.pyop("run", "NoSuchOp", "--json"), "PYOP_ENOENT")
        self.assertEqual(err["op"], "NoSuchOp")
        # Bad usage is reported the same way, with exit status 2.
        r = self.pyop("run", "Concat", "--json", "--input", "xs=float32[1]:1",
                      "--attr", "axis=1.5")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(json.loads(r.stdout)["error"]["status"], "usage")
        r = self.pyop("list", "--json", "--bogus")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(json.loads(r.stdout)["error"]["status"], "usage")

    # --- item 5: exit codes and argument messages

    def test_attr_of_the_wrong_type(self):
        r = self.pyop("run", "Concat", "--input", "xs=float32[1]:1", "--attr", "axis=1.5")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, "pyop: run: --attr axis=1.5: attribute \"axis\" of "
                         "\"Concat\" is an int, and '1.5' is not one (an integer such as "
                         "1 or -2)\n")
        r = self.pyop("run", "Clip", "--input", "x=float32[1]:1", "--attr", "min=low")
        self.assertEqual(r.returncode, 2)
        self.assertIn('attribute "min" of "Clip" is a float', r.stderr)
        self.assertEqual(len(r.stderr.splitlines()), 1)

    def test_missing_capability_exits_1(self):
        r = self.pyop("run", "BroadcastShape", "--input", "a=float32[2]:1,2",
                      "--input", "b=float32[2]:1,2")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn('op "BroadcastShape" has no execute implementation', r.stderr)
        self.assertIn("it has: infer_meta", r.stderr)

    def test_bad_usage_exits_2(self):
        for args in (["run", "ScaledAdd", "--input", "x=float32[2"],
                     ["run", "ScaledAdd", "--input", "x=float32[3]:1,2,3", "--input",
                      "y=float32[3]:1,2,3", "--attr", "beta=1"],
                     ["run", "ScaledAdd", "--input", "q=float32[1]:1"],
                     ["list", "--bogus"], ["frobnicate"]):
            r = self.pyop(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertTrue(r.stderr.startswith("pyop: "), r.stderr)

    def test_unknown_op(self):
        r = self.pyop("run", "Scaledadd")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, 'pyop: run: no op "Scaledadd" is registered; '
                         'did you mean "ScaledAdd"?\n')
        r = self.pyop("run", "ScaledAdd", unset=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("ASCEND_CUSTOM_OPP_PATH is not set", r.stderr)
        r = self.pyop("run", "ScaledAdd", opp="")
        self.assertIn("ASCEND_CUSTOM_OPP_PATH is empty", r.stderr)
        r = self.pyop("list", unset=True)
        self.assertEqual(r.returncode, 0)
        self.assertIn("ASCEND_CUSTOM_OPP_PATH is not set", r.stdout)

    def test_unusable_elements_are_skipped_alike(self):
        # A relative element: skipped with one warning, the rest loads.
        r = self.pyop("list", "--json", opp="relative/ops:" + self.good)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([o["op_type"] for o in json.loads(r.stdout)["ops"]], ["Fine"])
        self.assertIn("libpyop: warn: ASCEND_CUSTOM_OPP_PATH element 'relative/ops' "
                      "skipped: relative path refused", r.stderr)
        if os.geteuid() == 0:
            return  # root reads anything; tests/unit/test_scan.c fakes EACCES
        locked_dir = os.path.join(self.tmp, "locked_dir")
        os.makedirs(locked_dir, exist_ok=True)
        shutil.copy(os.path.join(self.good, "fine.py"), locked_dir)
        locked_file = os.path.join(self.tmp, "locked.py")
        shutil.copy(os.path.join(self.good, "fine.py"), locked_file)
        os.chmod(locked_dir, 0)
        os.chmod(locked_file, 0)
        try:
            for el in (locked_dir, locked_file):
                r = self.pyop("list", "--json", opp=el + ":" + self.good)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("element '%s' skipped" % el, r.stderr)
        finally:
            os.chmod(locked_dir, 0o755)
            os.chmod(locked_file, 0o644)

    # --- issue 17 item 12: every number the command reads is range-checked

    def usage(self, r, command, message):
        """Exit 2 and exactly one line on stderr: pyop: <command>: <message>."""
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stderr, "pyop: %s: %s\n" % (command, message))

    def test_numbers_out_of_range_are_usage_errors(self):
        concat = ("run", "Concat", "--input", "xs=float32[2]:1,2")
        self.usage(self.pyop(*concat, "--attr", "axis=18446744073709551618"), "run",
                   "--attr axis=18446744073709551618: attribute \"axis\" of \"Concat\" is an "
                   "int, and '18446744073709551618' is not one (18446744073709551618 is "
                   "outside int64)")
        self.usage(self.pyop(*concat, "--attr", "axis=-9223372036854775809"), "run",
                   "--attr axis=-9223372036854775809: attribute \"axis\" of \"Concat\" is "
                   "an int, and '-9223372036854775809' is not one (-9223372036854775809 is "
                   "outside int64)")
        nine = "x=float32[1,1,1,1,1,1,1,1,1]"
        self.usage(self.pyop("run", "ScaledAdd", "--input", nine, "--input", "y=float32[1]"),
                   "run", "--input %s: 9 dims; a pyop tensor has at most 8 (PYOP_MAX_DIMS)"
                   % nine)
        self.usage(self.pyop("run", "ScaledAdd", "--input", "x=float32[2,-1]"), "run",
                   "--input x=float32[2,-1]: dim -1 is negative")
        self.usage(self.pyop("run", "ScaledAdd", "--input", "x=float32[99999999999999999999]"),
                   "run", "--input x=float32[99999999999999999999]: dim 99999999999999999999 "
                   "does not fit in int64")
        huge = "x=float32[100000,100000,1000]"
        self.usage(self.pyop("run", "ScaledAdd", "--input", huge), "run",
                   "--input %s: float32[100000,100000,1000] needs 37252.9 GiB, more than the "
                   "1 GiB the command allocates for one tensor (PYOP_CLI_MAX_BYTES)" % huge)
        self.usage(self.pyop("run", "ScaledAdd", "--input", "x=float32[1]:1e39", "--input",
                             "y=float32[1]"), "run",
                   "values 1e39 do not fit float32: float too large to pack with f format")
        self.usage(self.pyop("check", "Concat", "--input", "xs=float32[-3]"), "check",
                   "--input xs=float32[-3]: dim -3 is negative")
        for opt, value in (("--calls", "0"), ("--calls", "-5"), ("--repeat", "0")):
            self.usage(self.pyop("bench", "ScaledAdd", opt, value), "bench",
                       "argument %s: %s is not an integer >= 1 (see pyop bench --help)"
                       % (opt, value))
        self.usage(self.pyop("bench", "ScaledAdd", "--size", "-1"), "bench",
                   "argument --size: -1 is not an integer >= 0 (see pyop bench --help)")
        self.usage(self.pyop("bench", "ScaledAdd", "--size", "99999999999"), "bench",
                   "--size 99999999999: float32[99999999999] needs 372.5 GiB, more than the "
                   "1 GiB the command allocates for one tensor (PYOP_CLI_MAX_BYTES)")
        self.usage(self.pyop("run", "ScaledAdd", "--input", "x=float32[300]", "--input",
                             "y=float32[300]", PYOP_CLI_MAX_BYTES="1000"), "run",
                   "--input x=float32[300]: float32[300] needs 1.2 KiB, more than the 1000 "
                   "bytes the command allocates for one tensor (PYOP_CLI_MAX_BYTES)")
        r = self.pyop("bench", "ScaledAdd", "--calls", "10", "--repeat", "1", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(json.loads(r.stdout)["execute_ns"], 0)

    def test_path_with_a_colon_is_not_split(self):
        odd = os.path.join(self.tmp, "a:b")
        os.makedirs(odd, exist_ok=True)
        for command in ("list", "check"):
            self.usage(self.pyop(command, odd), command,
                       "%s: a plugin path cannot contain ':' (it separates "
                       "ASCEND_CUSTOM_OPP_PATH elements); rename it or link it from a path "
                       "without one" % odd)

    def test_check_reads_the_path_as_libpyop_does(self):
        """check takes the ASCEND_CUSTOM_OPP_PATH elements libpyop's scan
        takes (src/scan.c), and says libpyop's words for one it skips."""
        rel = os.path.basename(self.good)
        doctor = json.loads(self.pyop("doctor", "--json", opp=rel, _cwd=self.tmp).stdout)
        words = "ASCEND_CUSTOM_OPP_PATH element '%s' skipped: %s" % (
            rel, doctor["path"][0]["detail"])
        self.assertEqual(doctor["path"][0]["verdict"], "relative", doctor["path"])
        self.assertIn("relative path refused (libpyop never resolves paths", words)
        # A relative element alone: nothing a host loads, nothing checked.
        r = self.pyop("check", opp=rel, _cwd=self.tmp)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stderr, "pyop: check: nothing to check: %s\n" % words)
        self.assertNotIn("Fine", r.stdout)
        # Beside an absolute one: skipped with libpyop's words, the other checked.
        other = os.path.join(self.tmp, "good2")
        os.makedirs(other, exist_ok=True)
        with open(os.path.join(other, "fine2.py"), "w") as f:
            f.write(GOOD.replace('"Fine"', '"Fine2"'))
        r = self.pyop("check", "--json", opp=rel + ":" + other, _cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["warnings"], [words], out["warnings"])
        self.assertEqual([o["op_type"] for o in out["ops"]], ["Fine2"])
        # Whitespace around an element is dropped, empty elements are
        # ignored, a directory twice (or with a trailing slash) is one.
        for value in (" \t%s \n" % self.good, ":%s::" % self.good,
                      "%s:%s/" % (self.good, self.good)):
            r = self.pyop("check", "--json", opp=value, _cwd=self.tmp)
            self.assertEqual(r.returncode, 0, (value, r.stdout + r.stderr))
            out = json.loads(r.stdout)
            self.assertEqual([o["op_type"] for o in out["ops"]], ["Fine"], value)
            self.assertEqual(out["warnings"], [], value)
            listed = json.loads(self.pyop("list", "--json", opp=value).stdout)
            self.assertEqual([o["op_type"] for o in listed["ops"]], ["Fine"], value)
        # A path argument libpyop would read as another path is refused.
        for command in ("list", "check"):
            self.usage(self.pyop(command, ""), command,
                       "an empty plugin path: libpyop ignores an empty ASCEND_CUSTOM_OPP_PATH "
                       "element (it never means the current directory); give the directory")
            for arg in (" " + self.good, self.good + "\t"):
                self.usage(self.pyop(command, arg), command,
                           "%r: a plugin path cannot start or end with whitespace (libpyop "
                           "drops the whitespace around an ASCEND_CUSTOM_OPP_PATH element, as "
                           "GE does, so it would load %r); rename it or link to it from a path "
                           "without such whitespace" % (arg, self.good))
        # A relative path argument is the command's (from the current
        # directory), made absolute before libpyop sees it.
        r = self.pyop("check", rel, _cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_an_output_too_large_is_refused_by_the_host(self):
        d = os.path.join(self.tmp, "huge")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "huge.py"), "w") as f:
            f.write(HUGE)
        r = self.pyop("run", "Huge", "--input", "x=float32[1]", opp=d)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("output 0 of 4 GiB refused: more than the 1 GiB the command allocates "
                      "(PYOP_CLI_MAX_BYTES)", r.stderr)
        self.assertNotIn("MemoryError", r.stderr)

    # --- issue 17 item 13: what check accepts is what a host loads

    def test_check_refuses_what_the_combined_load_refuses(self):
        one, two = os.path.join(self.tmp, "conflict1"), os.path.join(self.tmp, "conflict2")
        for d, body in ((one, "x.shape"), (two, "[1] + list(x.shape)")):
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "same_name.py"), "w") as f:
                f.write(CONFLICTING % body)
        r = self.pyop("list", opp=one + ":" + two)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("conflicts with", r.stderr)
        r = self.pyop("check", one, two)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        a, b = (os.path.join(d, "same_name.py") for d in (one, two))
        self.assertIn("load of all plugins together: FAILED (PYOP_ECONFLICT)", r.stdout)
        self.assertIn("2 ops checked, 0 failed, the plugins do not load together", r.stdout)
        first = r.stderr.splitlines()[0]
        self.assertTrue(first.startswith('pyop: check: the plugins do not load together: op '
                                         'type "Twice": prototype'), first)
        self.assertIn("%s:4" % b, first)
        self.assertIn("%s:4" % a, first)
        r = self.pyop("check", "--json", one, two)
        self.assertEqual(r.returncode, 1)
        err = json.loads(r.stdout)["load_error"]
        self.assertEqual(err["status"], "PYOP_ECONFLICT")
        self.assertEqual(err["op"], "Twice")
        # Each alone still passes.
        r = self.pyop("check", one)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("1 op checked, 0 failed\n", r.stdout)

    # --- issue 19: list marks mutated inputs, aliases, dynamic outputs

    def test_list_text_marks_mutation_aliases_and_dynamic_outputs(self):
        d = os.path.join(self.tmp, "noout")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "noout.py"), "w") as f:
            f.write(NO_OUTPUTS)
        r = self.pyop("list", opp=self.ops + ":" + d)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertIn("AddInto(x (mutated), y) -> x (input x's buffer)", lines)
        self.assertIn("SplitEven(x; parts: int = 2) -> pieces[]", lines)
        self.assertIn("SumAll(xs[], bias?) -> out", lines)
        self.assertIn("Touch(x (mutated))", lines)

    def test_a_reader_that_goes_away_is_not_a_traceback(self):
        # `pyop list | head -1`: the read end closes before the command writes.
        env = dict(ENV, ASCEND_CUSTOM_OPP_PATH=self.ops, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYOP_PYTHON", None)
        p = subprocess.Popen([self.cli, "list"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env)
        p.stdout.close()
        err = p.stderr.read().decode()
        p.wait(timeout=300)
        self.assertEqual(err, "")
        self.assertEqual(p.returncode, 1)

    # --- issue 19: shapes print one way

    def test_shapes_print_one_way(self):
        r = self.pyop("run", "Softmax", "--input", "x=float32[2,2]:1,2,3,4")
        if r.returncode != 0 and "numpy" in r.stderr:
            self.skipTest("Softmax needs numpy")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("y: float32[2,2] = ["), r.stdout)
        r = self.pyop("run", "Softmax", "--input", "x=float32[2,2]:1,2,3")
        self.usage(r, "run", "3 values given for shape [2,2] (4 elements)")
        r = self.pyop("check", "--json", "Clip")
        problems = [p for op in json.loads(r.stdout)["ops"] for p in op["ran"]]
        self.assertIn("float32[2,3]", problems)

    # --- issue 19: a missing module is one clean report

    def test_a_missing_module_is_one_clean_report(self):
        d = os.path.join(self.tmp, "missing")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "needs.py"), "w") as f:
            f.write("import pyop\nimport no_such_module_for_pyop\n")
        shutil.copy(os.path.join(self.good, "fine.py"), d)
        r = self.pyop("check", d, opp="")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("Traceback"), 1, r.stdout)
        self.assertEqual(r.stdout.count("No module named 'no_such_module_for_pyop'"), 2,
                         r.stdout)  # the summary line and the traceback's last line
        self.assertNotIn("pyop_cli", r.stdout)
        self.assertNotIn("During handling", r.stdout)
        self.assertIn("(imported by %s, Python " % self.build_python, r.stdout)
        self.assertIn("Fine                     infer-only", r.stdout)
        self.assertLess(len(r.stdout.splitlines()), 14, r.stdout)
        r = self.pyop("list", opp=d)
        self.assertEqual(r.returncode, 1)
        self.assertIn("(imported by %s, Python " % self.build_python, r.stderr)


NO_OUTPUTS = textwrap.dedent('''\
    import pyop
    from pyop import Tensor, TensorDesc

    @pyop.register_op(op_type="Touch", mutates_args=("x",))
    def touch(x: TensorDesc) -> None:
        return None
    ''')


CONFLICTING = textwrap.dedent('''\
    import pyop
    from pyop import TensorDesc

    @pyop.register_op(op_type="Twice")
    def twice(x: TensorDesc) -> TensorDesc:
        return TensorDesc(shape=%s, dtype=x.dtype)
    ''')


HUGE = textwrap.dedent('''\
    import pyop
    from pyop import Tensor, TensorDesc

    @pyop.register_op(op_type="Huge")
    def huge(x: TensorDesc) -> TensorDesc:
        return TensorDesc(shape=[1 << 15, 1 << 15], dtype=x.dtype)

    @pyop.register_op_impl(op_type="Huge")
    class HugeImpl:
        def execute(self, x: Tensor) -> None:
            pyop.get_execute_ctx().malloc_output_tensor(0, [1 << 15, 1 << 15], x.dtype)
    ''')


if __name__ == "__main__":
    unittest.main(verbosity=2)
