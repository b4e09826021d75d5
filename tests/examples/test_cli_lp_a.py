"""`pyop check` and `pyop bench` end to end on one of many and on a value's
other forms (issue 31's lifetime pass, session 15; mutants cli.lp.* in
tests/mutation/mutants.txt): the command run on small plugins, its verdict,
exit status and --json fields asserted where a LATER output, input,
attribute, sample, thread round or target differs from the first (the 2nd
of two outputs nondeterministic, the 2nd tensor of a dynamic output, a
written input after a declared one, the second of two Tensor attributes
written, the last sample failing, a dynamic output after a required one in
bench), and where a value comes in another form (a sample tensor as a list,
a list attribute as a tuple, a data type as pyop.DataType, an int for a
float, a reference's outputs as a list, a plugin directory named without a
path separator), and per-instance state across runs (compile once per
instance and descriptions).

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.lp_a):

  PYOP_TEST_CLI    the build tree's bin/pyop
  PYOP_TEST_TOOLS  tools/ of the source tree (holds the pyop_cli package)

Needs only the standard library (the reference cases are skipped when the
command's Python has no numpy).
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


COMMON = '''
    import ctypes
    import os
    import pyop
    from pyop import DataType, Tensor, TensorDesc

    def copy_into(out, x):
        if x.nbytes:
            ctypes.memmove(out.data_ptr, x.data_ptr, x.nbytes)

    def noise_into(out):
        if out.nbytes:
            ctypes.memmove(out.data_ptr, os.urandom(out.nbytes), out.nbytes)

    def flip_first_byte(t):
        if t.nbytes:
            b = ctypes.c_ubyte.from_address(t.data_ptr)
            b.value ^= 1
    '''

PLUGINS = {
    # Two outputs of different descriptions: y0 is x, y1 its element count.
    "two_outs.py": COMMON + '''
    def _two(x):
        return TensorDesc(x.shape, x.dtype), TensorDesc([1], DataType.int64)

    def _count(ctx, x, extra):
        n = 1
        for d in x.shape:
            n *= d
        y1 = ctx.malloc_output_tensor(1, [1], DataType.int64)
        ctypes.c_int64.from_address(y1.data_ptr).value = n + extra

    @pyop.register_op(op_type="TwoOuts", outputs=("y0", "y1"))
    def two_outs(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
        return _two(x)

    @pyop.register_op_impl(op_type="TwoOuts")
    class TwoOutsImpl:
        def execute(self, x: Tensor) -> None:
            ctx = pyop.get_execute_ctx()
            copy_into(ctx.malloc_output_tensor(0, x.shape, x.dtype), x)
            _count(ctx, x, 0)

    @pyop.register_reference(op_type="TwoOuts", rtol=0, atol=0)
    def two_outs_reference(x):
        import numpy
        return [x.copy(), numpy.array([x.size], dtype=numpy.int64)]  # a list, not a tuple

    @pyop.register_op(op_type="SecondOutOff", outputs=("y0", "y1"))
    def second_out_off(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
        return _two(x)

    @pyop.register_op_impl(op_type="SecondOutOff")
    class SecondOutOffImpl:
        def execute(self, x: Tensor) -> None:
            ctx = pyop.get_execute_ctx()
            copy_into(ctx.malloc_output_tensor(0, x.shape, x.dtype), x)
            _count(ctx, x, 1)  # the reference says the count itself

    @pyop.register_reference(op_type="SecondOutOff", rtol=0, atol=0)
    def second_out_off_reference(x):
        import numpy
        return (x.copy(), numpy.array([x.size], dtype=numpy.int64))

    @pyop.register_op(op_type="FirstOutNoisy", outputs=("y0", "y1"))
    def first_out_noisy(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
        return _two(x)

    @pyop.register_op_impl(op_type="FirstOutNoisy")
    class FirstOutNoisyImpl:
        def execute(self, x: Tensor) -> None:
            ctx = pyop.get_execute_ctx()
            noise_into(ctx.malloc_output_tensor(0, x.shape, x.dtype))
            _count(ctx, x, 0)
    ''',
    # A dynamic output of two tensors, the second one's bytes random.
    "dyn_noisy.py": COMMON + '''
    @pyop.register_op(op_type="DynSecondNoisy", outputs=("ys",))
    def dyn_second_noisy(x: TensorDesc) -> list[TensorDesc]:
        return [TensorDesc(x.shape, x.dtype), TensorDesc(x.shape, x.dtype)]

    @pyop.register_op_impl(op_type="DynSecondNoisy")
    class DynSecondNoisyImpl:
        def execute(self, x: Tensor) -> None:
            ctx = pyop.get_execute_ctx()
            copy_into(ctx.malloc_output_tensor(0, x.shape, x.dtype), x)
            noise_into(ctx.malloc_output_tensor(0, x.shape, x.dtype))
    ''',
    # Inputs written: a declared one and a later undeclared one; two
    # declared, the second never written; a dynamic declared one whose
    # first tensor gets random bytes.
    "writes.py": COMMON + '''
    @pyop.register_op(op_type="WritesSecond", mutates_args=("x",))
    def writes_second(x: TensorDesc, w: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="WritesSecond")
    class WritesSecondImpl:
        def execute(self, x: Tensor, w: Tensor) -> None:
            copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)
            flip_first_byte(x)
            flip_first_byte(w)  # not declared in mutates_args

    @pyop.register_op(op_type="SecondUnwritten", mutates_args=("x", "w"))
    def second_unwritten(x: TensorDesc, w: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="SecondUnwritten")
    class SecondUnwrittenImpl:
        def execute(self, x: Tensor, w: Tensor) -> None:
            copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)
            flip_first_byte(x)  # w is declared too, and never written

    @pyop.register_op(op_type="MutDynNoisy", mutates_args=("xs",))
    def mut_dyn_noisy(xs: list[TensorDesc]) -> TensorDesc:
        return TensorDesc(xs[0].shape, xs[0].dtype)

    @pyop.register_op_impl(op_type="MutDynNoisy")
    class MutDynNoisyImpl:
        def execute(self, xs: list[Tensor]) -> None:
            copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, xs[0].shape, xs[0].dtype),
                      xs[0])
            noise_into(xs[0])  # its result differs from run to run
            flip_first_byte(xs[1])
    ''',
    # Two Tensor attributes, the second written in place.
    "attrs.py": COMMON + '''
    @pyop.register_op(op_type="BumpsSecondAttr")
    def bumps_second_attr(x: TensorDesc, *, a: Tensor, b: Tensor) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="BumpsSecondAttr")
    class BumpsSecondAttrImpl:
        def execute(self, x: Tensor, *, a: Tensor, b: Tensor) -> None:
            copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)
            flip_first_byte(b)
    ''',
    # The second input's annotation of another kind than the prototype's.
    "annotated.py": COMMON + '''
    @pyop.register_op(op_type="SecondMisannotated")
    def second_misannotated(x: TensorDesc, w: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="SecondMisannotated")
    class SecondMisannotatedImpl:
        def execute(self, x: Tensor, w: list[Tensor]) -> None:
            copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)
    ''',
    # compile, counted per instance: a host compiles an instance once per
    # set of descriptions, then executes it any number of times.
    "compiled.py": COMMON + '''
    @pyop.register_op(op_type="CompiledOnce")
    def compiled_once(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="CompiledOnce")
    class CompiledOnceImpl:
        def __init__(self):
            self.compiled = {}

        def compile(self, x: TensorDesc, y: TensorDesc) -> None:
            key = (tuple(x.shape), x.dtype)
            self.compiled[key] = self.compiled.get(key, 0) + 1

        def execute(self, x: Tensor) -> None:
            times = self.compiled.get((tuple(x.shape), x.dtype), 0)
            if times != 1:
                raise RuntimeError("CompiledOnce: compiled %d times for these inputs" % times)
            copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)
    ''',
    # Samples in every form a sample value takes; infer_meta holds a sample
    # to the values it was given.
    "forms.py": COMMON + '''
    @pyop.register_op(op_type="Forms")
    def forms(x: TensorDesc, xs: list[TensorDesc], *, dims: list[int] = [],
              grid: list[list[int]] = [[0]], dt: DataType = DataType.float32,
              dts: list[DataType] = [DataType.float32], scale: float = 1.0) -> TensorDesc:
        if dims:  # a sample: every attribute as it gave them
            got = (list(dims), [list(r) for r in grid], dt, list(dts), scale, len(xs))
            want = ([1, 2], [[1, 2], [3]], DataType.int32, [DataType.int8, DataType.float16],
                    2.0, 1)
            if got != want:
                raise RuntimeError("Forms: sample attrs %r, expected %r" % (got, want))
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="Forms")
    class FormsImpl:
        def execute(self, x: Tensor, xs: list[Tensor], *, dims: list[int],
                    grid: list[list[int]], dt: DataType, dts: list[DataType],
                    scale: float) -> None:
            copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)

    @pyop.register_samples(op_type="Forms")
    def forms_samples():
        return [
            {"inputs": {"x": ["float32", [2], [1, 2]],          # a list, not a tuple
                        "xs": (("float32", [2], [3, 4]),)},      # a tuple of one
             "attrs": {"dims": (1, 2), "grid": ((1, 2), (3,)),   # tuples
                       "dt": DataType.int32, "dts": (DataType.int8, "float16"),
                       "scale": 2},                              # an int for a float
             "label": "other forms"},
            {"inputs": {"x": ("float32", [2], [1, 2]), "xs": [("float32", [2], [3, 4])]},
             "attrs": {"dims": [1, 2], "grid": [[1, 2], [3]], "dt": "int32",
                       "dts": ["int8", "float16"], "scale": 2.0},
             "label": "usual forms"},
        ]
    ''',
    # Three unlabelled samples, the last one failing.
    "last_sample.py": COMMON + '''
    @pyop.register_op(op_type="LastSampleFails")
    def last_sample_fails(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="LastSampleFails")
    class LastSampleFailsImpl:
        def execute(self, x: Tensor) -> None:
            with pyop.elements(x) as v:
                if len(v) and v[0] == 99:
                    raise RuntimeError("LastSampleFails: 99 is not taken")
            copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)

    @pyop.register_samples(op_type="LastSampleFails")
    def last_sample_fails_samples():
        return [{"inputs": {"x": ("float32", [2], [1, 2])}},
                {"inputs": {"x": ("float32", [2], [3, 4])}},
                {"inputs": {"x": ("float32", [2], [99, 5])}}]
    ''',
    # bench: a required output, then a dynamic one.
    "bench_dyn.py": COMMON + '''
    @pyop.register_op(op_type="HeadAndPieces", outputs=("head", "pieces"))
    def head_and_pieces(x: TensorDesc) -> tuple[TensorDesc, list[TensorDesc]]:
        return TensorDesc(x.shape, x.dtype), [TensorDesc(x.shape, x.dtype)] * 2

    @pyop.register_op_impl(op_type="HeadAndPieces")
    class HeadAndPiecesImpl:
        def execute(self, x: Tensor) -> None:
            ctx = pyop.get_execute_ctx()
            copy_into(ctx.malloc_output_tensor(0, x.shape, x.dtype), x)
            for _ in range(2):
                copy_into(ctx.malloc_output_tensor(1, x.shape, x.dtype), x)
    ''',
    # A reference, and a second input that may be bfloat16 (numpy has no
    # such type) while the first and the output may not.
    "bf16_second.py": COMMON + '''
    @pyop.register_op(op_type="Bf16Second", dtypes={"x": "float32",
                                                    "w": ["float32", "bfloat16"], "y": "float32"})
    def bf16_second(x: TensorDesc, w: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="Bf16Second")
    class Bf16SecondImpl:
        def execute(self, x: Tensor, w: Tensor) -> None:
            copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)

    @pyop.register_reference(op_type="Bf16Second", rtol=0, atol=0)
    def bf16_second_reference(x, w):
        return x.copy()
    ''',
    # An in-place op whose SECOND output is its input's buffer (an alias).
    "alias_second.py": COMMON + '''
    @pyop.register_op(op_type="AliasSecond", mutates_args=("x",), outputs=("y", "x"))
    def alias_second(x: TensorDesc) -> tuple[TensorDesc, TensorDesc]:
        return TensorDesc(x.shape, x.dtype), TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="AliasSecond")
    class AliasSecondImpl:
        def execute(self, x: Tensor) -> None:
            ctx = pyop.get_execute_ctx()
            copy_into(ctx.malloc_output_tensor(0, x.shape, x.dtype), x)
            flip_first_byte(x)
            ctx.make_output_ref_input(1, 0)
    ''',
    # A dynamic output of 300 tensors: more than the room run/check (64)
    # and bench (256) give at first.
    "many.py": COMMON + '''
    @pyop.register_op(op_type="ManyPieces", outputs=("pieces",))
    def many_pieces(x: TensorDesc) -> list[TensorDesc]:
        return [TensorDesc([1], x.dtype)] * 300

    @pyop.register_op_impl(op_type="ManyPieces")
    class ManyPiecesImpl:
        def execute(self, x: Tensor) -> None:
            ctx = pyop.get_execute_ctx()
            for _ in range(300):
                ctx.malloc_output_tensor(0, [1], x.dtype)
    ''',
    # bench: a dynamic output whose second tensor is bigger than its first;
    # the first is read back after the second is allocated.
    "growing.py": COMMON + '''
    @pyop.register_op(op_type="GrowingPieces", outputs=("pieces",))
    def growing_pieces(x: TensorDesc) -> list[TensorDesc]:
        return [TensorDesc([16], DataType.float32), TensorDesc([1024], DataType.float32)]

    @pyop.register_op_impl(op_type="GrowingPieces")
    class GrowingPiecesImpl:
        def execute(self, x: Tensor) -> None:
            ctx = pyop.get_execute_ctx()
            first = ctx.malloc_output_tensor(0, [16], DataType.float32)
            ctypes.memset(first.data_ptr, 0x11, first.nbytes)
            ctx.malloc_output_tensor(0, [1024], DataType.float32)
            got = ctypes.string_at(first.data_ptr, first.nbytes)
            if got != bytes([0x11]) * first.nbytes:
                raise RuntimeError("GrowingPieces: the first piece changed when the second "
                                   "was allocated: %r" % got[:16])
    ''',
}

GOOD = COMMON + '''
    @pyop.register_op(op_type="Good")
    def good(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.dtype)

    @pyop.register_op_impl(op_type="Good")
    class GoodImpl:
        def execute(self, x: Tensor) -> None:
            copy_into(pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype), x)
    '''


class _Cli(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cli = _need("PYOP_TEST_CLI")
        cls.tmp = tempfile.mkdtemp(prefix="pyop-lp-a-")
        cls.ops = os.path.join(cls.tmp, "ops")
        os.makedirs(cls.ops)
        for name, text in PLUGINS.items():
            with open(os.path.join(cls.ops, name), "w") as f:
                f.write(textwrap.dedent(text))
        cls.good = os.path.join(cls.tmp, "goodops")
        os.makedirs(cls.good)
        with open(os.path.join(cls.good, "good.py"), "w") as f:
            f.write(textwrap.dedent(GOOD))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pyop(self, *args, cwd=None, opp=None):
        env = dict(ENV, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYOP_PYTHON", None)
        env.pop("ASCEND_CUSTOM_OPP_PATH", None)
        if opp is not None:
            env["ASCEND_CUSTOM_OPP_PATH"] = opp
        return subprocess.run([self.cli] + list(args), capture_output=True, text=True,
                              env=env, timeout=600, cwd=cwd)

    def check(self, op, code):
        """pyop check --json of op in the plugins: (its report entry, the whole)."""
        r = self.pyop("check", "--json", self.ops, op)
        self.assertEqual(r.returncode, code, r.stdout + r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual([o["op_type"] for o in out["ops"]], [op], out)
        return out["ops"][0], out

    def problems(self, op):
        entry, _ = self.check(op, 1)
        self.assertEqual(entry["status"], "failed", entry)
        return "\n".join(entry["problems"])


class LaterOutputTest(_Cli):
    """A later output of an op differing from the first: another
    description, another reference value, random bytes in the second of
    two outputs or in the second tensor of a dynamic output."""

    def _needs_numpy(self, entry):
        if any("needs numpy" in p for p in entry["problems"]):
            self.skipTest("no numpy in the command's Python")

    def test_two_outputs_of_different_descriptions_pass_with_their_reference(self):
        """y1 (int64[1]) is held to infer_meta's second description and to
        the reference's second output (returned in a list), not to y0's."""
        r = self.pyop("check", "--json", self.ops, "TwoOuts")
        entry = json.loads(r.stdout)["ops"][0]
        self._needs_numpy(entry)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual((entry["status"], entry["problems"], entry["reference"],
                          entry["threads"]), ("ok", [], [0, 0], 4), entry)
        self.assertEqual(len(entry["ran"]), 16, entry)

    def test_the_second_output_off_the_reference_fails(self):
        r = self.pyop("check", "--json", self.ops, "SecondOutOff")
        entry = json.loads(r.stdout)["ops"][0]
        self._needs_numpy(entry)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(entry["status"], "failed", entry)
        text = "\n".join(entry["problems"])
        self.assertIn("inputs x=float32[2,3]: output y1 differs from the reference at "
                      "element 0: 7, the reference 6", text)
        self.assertNotIn("output y0", text)

    def test_random_bytes_in_the_first_of_two_outputs_fail(self):
        text = self.problems("FirstOutNoisy")
        self.assertIn("run twice on one instance with the same inputs, output y0 differs "
                      "from byte 0", text)

    def test_random_bytes_in_a_dynamic_outputs_second_tensor_fail(self):
        text = self.problems("DynSecondNoisy")
        self.assertIn("run twice on one instance with the same inputs, output ys[1] "
                      "differs from byte 0", text)
        self.assertNotIn("ys[0]", text)


class LaterInputTest(_Cli):
    """A later input (or Tensor attribute, or annotation) differing from the
    first."""

    def test_an_undeclared_input_after_a_declared_one_is_seen_written(self):
        text = self.problems("WritesSecond")
        self.assertIn("inputs x=float32[2,3], w=float32[2,3]: input w was written, but it is "
                      "not declared in mutates_args", text)
        self.assertNotIn("input x was written", text)

    def test_the_second_declared_input_never_written_is_a_warning(self):
        entry, _ = self.check("SecondUnwritten", 0)
        self.assertEqual(entry["status"], "ok", entry)
        self.assertEqual(len(entry["warnings"]), 1, entry)
        self.assertIn("input w is declared in mutates_args, but none of the 15 runs wrote it",
                      entry["warnings"][0])

    def test_random_bytes_in_a_mutated_dynamic_inputs_first_tensor_fail(self):
        """The mutated tensors of a dynamic input are compared each: xs[0]
        differs from run to run, xs[1] does not."""
        text = self.problems("MutDynNoisy")
        self.assertIn("run twice on one instance with the same inputs, input xs (mutated) "
                      "differs from byte 0", text)

    def test_the_second_of_two_tensor_attributes_written_fails(self):
        text = self.problems("BumpsSecondAttr")
        self.assertIn("attribute b (a Tensor attribute, read-only for the op) was written by "
                      "execute", text)
        self.assertNotIn("attribute a", text)

    def test_the_second_inputs_annotation_is_compared(self):
        text = self.problems("SecondMisannotated")
        self.assertIn("parameter w is annotated list[Tensor] (a dynamic input), but the "
                      "prototype's input w is required (one tensor)", text)
        self.assertNotIn("parameter x", text)


class LaterOutputKindsTest(_Cli):

    def test_an_alias_as_the_second_output_is_the_inputs_buffer(self):
        """The second output, declared as input x's buffer, is compared
        with x (not the first output, a buffer of its own)."""
        entry, _ = self.check("AliasSecond", 0)
        self.assertEqual((entry["status"], entry["problems"], entry["threads"]),
                         ("ok", [], 4), entry)
        self.assertEqual(len(entry["ran"]), 16, entry)


class PerInstanceTest(_Cli):

    def test_compile_runs_once_per_instance_and_descriptions(self):
        """Each case's instance is compiled once, then run twice (and from
        four threads): execute fails when it was compiled again."""
        entry, _ = self.check("CompiledOnce", 0)
        self.assertEqual((entry["status"], entry["problems"], entry["threads"]),
                         ("ok", [], 4), entry)
        n = len(entry["ran"])
        self.assertEqual(n, 16, entry)
        self.assertEqual(entry["stages"], {"infer_meta": 2 * n, "compile": n, "execute": 2 * n},
                         entry)


class SampleFormsTest(_Cli):
    """A sample's values in each form they are taken in, and the last of
    several samples failing."""

    def test_every_form_of_a_sample_value_is_taken(self):
        entry, _ = self.check("Forms", 0)
        self.assertEqual((entry["status"], entry["inputs"], entry["problems"]),
                         ("ok", "samples + generated", []), entry)
        self.assertEqual(entry["ran"][:2], ["other forms", "usual forms"], entry)

    def test_the_last_of_three_samples_failing_fails_the_op(self):
        text = self.problems("LastSampleFails")
        self.assertIn("sample 2: PYOP_EPYTHON: execute of op 'LastSampleFails'", text)
        self.assertIn("99 is not taken", text)
        entry, _ = self.check("LastSampleFails", 1)
        self.assertEqual(entry["ran"][:2], ["sample 0", "sample 1"], entry)


class TargetsTest(_Cli):
    """check's targets: a plugin directory named without a path separator
    (from its parent), a missing .py path, the second of two ops missing."""

    def test_a_directory_named_from_its_parent_is_a_path(self):
        r = self.pyop("check", "--json", "goodops", cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual([(o["op_type"], o["status"]) for o in out["ops"]], [("Good", "ok")])
        self.assertEqual(out["missing_ops"], [])

    def test_a_missing_py_file_is_a_path_not_an_op(self):
        """A .py target is a plugin path even when it does not exist (the
        load says so), never an op type to look for."""
        r = self.pyop("check", "--json", "goodops", "nothere.py", cwd=self.tmp)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["missing_ops"], [], out)
        self.assertIn("nothere.py', which does not exist", r.stderr)
        self.assertNotIn("op(s) not found", r.stderr)

    def test_the_second_of_two_named_ops_missing(self):
        r = self.pyop("check", "--json", self.good, "Good", "Nope")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["missing_ops"], ["Nope"], out)
        self.assertEqual([(o["op_type"], o["status"]) for o in out["ops"]], [("Good", "ok")])
        self.assertIn("pyop: check: op(s) not found: Nope", r.stderr)


class BenchLaterOutputTest(_Cli):

    def test_bench_an_op_whose_second_output_is_dynamic(self):
        r = self.pyop("bench", "HeadAndPieces", "--size", "4", "--calls", "3", "--repeat",
                      "1", "--json", opp=self.ops)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual((out["op_type"], out["mode"], out["inputs"]),
                         ("HeadAndPieces", "execute", ["x=float32[4]"]), out)

    def test_bench_an_op_without_infer_meta_whose_last_output_is_dynamic(self):
        """A host's prototype (--proto REG_OP: no infer_meta) with a dynamic
        last output: the timed execute gives that output's list room too,
        as it does the first's."""
        d = tempfile.mkdtemp(prefix="pyop-lp-a-proto-")
        self.addCleanup(shutil.rmtree, d, True)
        os.makedirs(os.path.join(d, "ops"))
        with open(os.path.join(d, "ops", "host_pieces.py"), "w") as f:
            f.write(textwrap.dedent(COMMON) + textwrap.dedent('''
            @pyop.register_op_impl(op_type="HostPieces")
            class HostPiecesImpl:
                def execute(self, x: Tensor) -> None:
                    ctx = pyop.get_execute_ctx()
                    copy_into(ctx.malloc_output_tensor(0, x.shape, x.dtype), x)
                    for _ in range(3):
                        copy_into(ctx.malloc_output_tensor(1, x.shape, x.dtype), x)
            '''))
        proto = os.path.join(d, "host_pieces.reg_op")
        with open(proto, "w") as f:
            f.write('REG_OP("HostPieces").INPUT("x").OUTPUT("y").DYNAMIC_OUTPUT("ys")'
                    '.OP_END_FACTORY_REG()\n')
        opp = os.path.join(d, "ops")
        r = self.pyop("run", "HostPieces", "--proto", proto, "--input", "x=float32[2]:1,2",
                      "--json", opp=opp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(json.loads(r.stdout)["outputs"][1]["tensors"]), 3)
        r = self.pyop("bench", "HostPieces", "--proto", proto, "--size", "2", "--calls", "3",
                      "--repeat", "1", "--json", opp=opp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual((out["op_type"], out["mode"], out["inputs"]),
                         ("HostPieces", "execute", ["x=float32[2]"]), out)


class ReferenceSecondInputTest(_Cli):

    def test_a_bfloat16_second_input_is_not_given_to_the_reference(self):
        """The case whose second input is bfloat16 (the first and the
        output may not be) runs, and is not compared with the reference
        (numpy has no bfloat16); the others are."""
        r = self.pyop("check", "--json", self.ops, "Bf16Second")
        out = json.loads(r.stdout)
        entry = out["ops"][0]
        if any("needs numpy" in p for p in entry["problems"]):
            self.skipTest("no numpy in the command's Python")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual((entry["status"], entry["problems"], entry["reference"]),
                         ("ok", [], [0, 0]), entry)
        self.assertEqual(entry["ran"], ["float32[2,3]", "bfloat16[2,3] (x: float32)",
                                        "float32[0,3] (empty)", "float32[] (rank-0)",
                                        "float32[1] (one element)"], entry)


class BenchBuffersTest(_Cli):

    def test_an_earlier_tensor_of_a_dynamic_output_keeps_its_buffer(self):
        """bench's outputs reuse one buffer per output index; when a later
        tensor of a dynamic output needs a bigger one, the earlier tensor's
        buffer stays alive for the call (it was freed under the op: the op
        read back other bytes than it wrote, and its writes there went into
        the command's freed heap). pyop run of the op passes as well."""
        r = self.pyop("run", "GrowingPieces", "--input", "x=float32[1]:1", "--json",
                      opp=self.ops)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        pieces = json.loads(r.stdout)["outputs"][0]["tensors"]
        self.assertEqual([t["shape"] for t in pieces], [[16], [1024]])
        r = self.pyop("bench", "GrowingPieces", "--size", "1", "--calls", "3", "--repeat",
                      "2", "--json", opp=self.ops)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("changed", r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual((out["op_type"], out["calls"], out["repeat"]),
                         ("GrowingPieces", 3, 2), out)


class ManyTensorsTest(_Cli):
    """A dynamic output with more tensors than the room first given:
    infer_meta has set every count, and the command calls it again with
    room for them, as a host does (pyop.h, pyop_op_infer_meta_list)."""

    def test_check_run_and_bench_an_output_of_300_tensors(self):
        entry, _ = self.check("ManyPieces", 0)
        self.assertEqual((entry["status"], entry["problems"], len(entry["ran"])),
                         ("ok", [], 16), entry)
        r = self.pyop("run", "ManyPieces", "--input", "x=int8[1]:1", "--json", opp=self.ops)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        pieces = json.loads(r.stdout)["outputs"][0]["tensors"]
        self.assertEqual((len(pieces), pieces[-1]["dtype"], pieces[-1]["shape"]),
                         (300, "int8", [1]))
        r = self.pyop("bench", "ManyPieces", "--size", "1", "--calls", "2", "--repeat", "1",
                      "--json", opp=self.ops)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(json.loads(r.stdout)["op_type"], "ManyPieces")


class ThreadRoundsTest(unittest.TestCase):
    """check_verdict._thread_problems over every round of every thread: a
    later round of a later thread differing (or raising) is reported."""

    def test_a_later_round_of_a_later_thread(self):
        cv = _cli("check_verdict")
        alone = [{"output y": b"\x00"}, {"output y": b"\x01"}, {"output y": b"\x02"}]
        ok = [[dict(a) for _ in range(3)] for a in alone]
        self.assertEqual(cv._thread_problems(ok, alone, True, "w"), [])
        bad = [[dict(a) for _ in range(3)] for a in alone]
        bad[2][2] = {"output y": b"\x07"}
        self.assertEqual(len(cv._thread_problems(bad, alone, True, "w")), 1)
        self.assertIn("w: thread 2: output y differs from byte 0",
                      cv._thread_problems(bad, alone, True, "w")[0])
        failed = [[dict(a) for _ in range(3)] for a in alone]
        failed[1][2] = RuntimeError("late")
        text = cv._thread_problems(failed, alone, True, "w")
        self.assertEqual(len(text), 1)
        self.assertIn("w: thread 1 failed: RuntimeError: late", text[0])


if __name__ == "__main__":
    unittest.main()
