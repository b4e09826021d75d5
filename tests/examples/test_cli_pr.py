"""How `pyop check` (and run, list, doctor) reads a plugin, end to end
(bin/pyop in a subprocess, its exit status, --json fields and text): one
plugin reached by two routes (a path given twice, with a trailing slash or
as D/., a link to its directory or to its file) checked and listed once,
as libpyop loads it once; each value in its absent, None or empty form;
the second op of a class, the last attribute. Issue 31's
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
    the lifetime pass compared the paths' text only). Kills
    cli.pr.check_worker.entries_by_path, cli.pr.check_worker.entry_seen_unrecorded,
    cli.pr.doctor.plugins_by_path, cli.pr.plugins.plugin_id_lstat."""

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


COMMON = """\
import ctypes
import os
from typing import Optional

import pyop
from pyop import DataType, Tensor, TensorDesc


def copy_into(out, x):
    if x.nbytes:
        ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)


def noise_into(out):
    if out.nbytes:
        ctypes.memmove(out.data_ptr, os.urandom(out.nbytes), out.nbytes)
"""

# Plugins whose values come in their absent, None or empty forms, and
# classes and attributes read past the first.
FORMS = {
    # Samples with "inputs": None (an op with no inputs), "attrs": None and
    # an optional input given as None.
    "samples.py": COMMON + """
@pyop.register_op(op_type="PrNoInputs")
def no_inputs(*, n: int = 2) -> TensorDesc:
    return TensorDesc([n], DataType.float32)


@pyop.register_op_impl(op_type="PrNoInputs")
class NoInputsImpl:
    def execute(self, *, n: int = 2) -> None:
        pyop.get_execute_ctx().malloc_output_tensor(0, [n], DataType.float32)


@pyop.register_samples(op_type="PrNoInputs")
def no_inputs_samples():
    return [{"inputs": None, "attrs": {"n": 3}, "label": "inputs None"}]


@pyop.register_op(op_type="PrNoneForms")
def none_forms(x: TensorDesc, b: Optional[TensorDesc] = None, *, k: int = 1) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="PrNoneForms")
class NoneFormsImpl:
    def execute(self, x: Tensor, b: Optional[Tensor] = None, *, k: int = 1) -> None:
        copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)


@pyop.register_samples(op_type="PrNoneForms")
def none_forms_samples():
    return [{"inputs": {"x": ("float32", [2], [1, 2]), "b": None}, "attrs": None,
             "label": "b None, attrs None"}]
""",
    # One class for two op types, nondeterministic at both registrations.
    "two.py": COMMON + """
@pyop.register_op(op_type="PrTwoA")
def two_a(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op(op_type="PrTwoB")
def two_b(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="PrTwoB", deterministic=False)
@pyop.register_op_impl(op_type="PrTwoA", deterministic=False)
class TwoNoisy:
    def execute(self, x: Tensor) -> None:
        noise_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype))
""",
    # The last attribute annotated as another type than the prototype's.
    "annotated.py": COMMON + """
@pyop.register_op(op_type="PrLastAttr")
def last_attr(x: TensorDesc, *, a: int = 1, b: float = 0.5) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="PrLastAttr")
class LastAttrImpl:
    def execute(self, x: Tensor, *, a: int, b: int) -> None:
        copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)
""",
    # A Tensor attribute, for its values given empty.
    "tattr.py": COMMON + """
@pyop.register_op(op_type="PrTensorAttr")
def tensor_attr(x: TensorDesc, *, t: Tensor) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="PrTensorAttr")
class TensorAttrImpl:
    def execute(self, x: Tensor, *, t: Tensor) -> None:
        copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)
""",
}


class _Forms(_Cli):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ops = cls.dir(cls, "forms", FORMS)

    def checked(self, *ops):
        """{op_type: entry} of `pyop check --json` on the plugins, ops named."""
        code, rep, err = self.json_of("check", self.ops, *ops)
        return code, {o["op_type"]: o for o in rep["ops"]}, err


class SampleNoneFormsTest(_Forms):
    """A sample's "inputs" or "attrs" given as None (an op with no inputs,
    one with no attributes set) and an optional input given as None are
    their empty and absent forms, as pyop.register_samples documents, not a
    broken samples function. Kills cli.pr.check_cases.inputs_none,
    cli.pr.check_cases.attrs_none."""

    def test_none_forms(self):
        code, ops, err = self.checked("PrNoInputs", "PrNoneForms")
        for op in ("PrNoInputs", "PrNoneForms"):
            with self.subTest(op):
                self.assertEqual((ops[op]["status"], ops[op]["problems"], ops[op]["inputs"]),
                                 ("ok", [], "samples + generated"), ops[op])
        self.assertEqual(code, 0, err)


class EmptyValuesTest(_Forms):
    """VALUES given empty (x=float32[2]:, a Tensor attribute t=float32[2]:)
    is 0 values for 2 elements, a usage error, not zeros or sample values.
    Kills cli.pr.values.empty_values_taken, cli.pr.values.empty_tensor_attr_sampled."""

    def run_op(self, *args):
        return self.pyop("run", *args, opp=self.ops)

    def test_input(self):
        code, out, err = self.run_op("PrLastAttr", "--input", "x=float32[2]:")
        self.assertEqual(code, 2, out + err)
        self.assertIn("0 values given for shape [2] (2 elements)", err)

    def test_tensor_attribute(self):
        code, out, err = self.run_op("PrTensorAttr", "--input", "x=float32[2]:1,2",
                                     "--attr", "t=float32[2]:")
        self.assertEqual(code, 2, out + err)
        self.assertIn("0 values given for shape [2] (2 elements)", err)
        code, out, err = self.run_op("PrTensorAttr", "--input", "x=float32[2]:1,2",
                                     "--attr", "t=float32[2]")  # no values: sample ones
        self.assertEqual((code, out), (0, "y: float32[2] = [1, 2]\n"), err)


class ClassOfTwoOpTypesTest(_Forms):
    """A pyop class registered for two op types is found for each (not
    only for its last registration): both declared themselves
    nondeterministic, so neither's random values fail. (No mutant: a pyop
    implementation key names the class, not the op type, so reading the
    last registration alone finds the class too.)"""

    def test_both_nondeterministic(self):
        code, ops, err = self.checked("PrTwoA", "PrTwoB")
        for op in ("PrTwoA", "PrTwoB"):
            with self.subTest(op):
                self.assertEqual((ops[op]["status"], ops[op]["deterministic"]), ("ok", False),
                                 ops[op])
        self.assertEqual(code, 0, err)


class LastAttributeAnnotationTest(_Forms):
    """The last attribute's annotation (b: int for the prototype's float) is
    held to the prototype as the first one's is. Kills
    cli.pr.check_plugin.annotation_first_attr_only."""

    def test_last(self):
        code, ops, err = self.checked("PrLastAttr")
        self.assertEqual(code, 1, err)
        problems = ops["PrLastAttr"]["problems"]
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("attribute b is annotated int, but the prototype's b is float", problems[0])



if __name__ == "__main__":
    unittest.main(verbosity=2)
