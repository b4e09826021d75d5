"""The `pyop` command's checks held on both sides (tools/pyop_cli: main,
run, list, doctor, --proto and the shared modules): each bound at the
value just inside and just outside it (0, -1, the largest, 2**32 where a
count crosses into a C uint32_t, 2**63 into an int64_t), each sibling
input held to the check its sibling is, each table's first and last entry
and each configuration's rarer value observed, each state seen the second
time. Issue 31's both-sides pass (session 14): each class names the
mutants (cli.bs.* in tests/mutation/mutants.txt) it was seen killing.
Pure Python, no bridge: libpyop and the bridge's modules stood in for by
small fakes, the helpers of test_cli_rules.py reused.

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.bs_b):

  PYOP_TEST_TOOLS  tools/ of the source tree (holds the pyop_cli package;
                   the tables are compared with the headers beside it)
"""

import argparse
import contextlib
import ctypes
import io
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli_rules import _cli, _info, _manifest, _OpC, _OpLib  # noqa: E402


def _source(rel):
    """The text of a file of the source tree (PYOP_TEST_TOOLS/..)."""
    _cli("errors")  # skips without PYOP_TEST_TOOLS
    root = os.path.dirname(os.path.abspath(os.environ["PYOP_TEST_TOOLS"]))
    with open(os.path.join(root, rel)) as f:
        return f.read()


def _quiet(fn, *a, **kw):
    """(fn's value, its stdout, its stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        value = fn(*a, **kw)
    return value, out.getvalue(), err.getvalue()


class _FakeC:
    """The libpyop functions Lib.set_lanes and Lib.check call."""

    def __init__(self):
        self.options = []

    def pyop_set_options(self, p):
        o = ctypes.cast(p, ctypes.POINTER(_cli("binding").Options)).contents
        self.options.append(o.lanes)
        return 0

    def pyop_status_name(self, rc):
        return b"PYOP_EINVAL"

    def pyop_last_error(self):
        return b""

    def pyop_strerror(self, rc):
        return b"invalid argument"


def _lib_with(c):
    b = _cli("binding")
    lib = b.Lib.__new__(b.Lib)
    lib.c, lib.path = c, "/fake/libpyop.so"
    return lib


class LanesPastUint32Test(unittest.TestCase):
    """--lanes N reaches pyop_options.lanes, a uint32_t: a count past it
    (2**32, 2**32 + 2) is refused as libpyop refuses 65 (PYOP_EINVAL, the
    command fails), never wrapped by ctypes into 0 lanes (a load without
    the lanes asked for) or 2. The largest uint32_t reaches libpyop as it
    is (libpyop says it is out of range). Kills
    cli.bs.binding.lanes_wrapped (a real bug, fixed in this pass)."""

    def test_past_uint32_refused(self):
        b, errors = _cli("binding"), _cli("errors")
        for n in (1 << 32, (1 << 32) + 2, (1 << 63) - 1):
            with self.subTest(n=n):
                c = _FakeC()
                with self.assertRaises(errors.CliError) as cm:
                    _lib_with(c).set_lanes(n)
                self.assertEqual(cm.exception.status, "PYOP_EINVAL")
                self.assertEqual(cm.exception.exit_code, 1)
                self.assertIn("lanes %d is out of range (0..%d)" % (n, b.MAX_LANES),
                              cm.exception.message)
                self.assertEqual(c.options, [])
        for n in (0, 2, b.MAX_LANES, (1 << 32) - 1):
            with self.subTest(n=n):
                c = _FakeC()
                _lib_with(c).set_lanes(n)
                self.assertEqual(c.options, [n])

    def test_max_lanes_is_the_headers(self):
        m = re.search(r"#define PYOP_MAX_LANES (\d+)u", _source("include/pyop/pyop.h"))
        self.assertEqual(int(m.group(1)), _cli("binding").MAX_LANES)

    def test_command_fails_on_lanes_past_uint32(self):
        main = _cli("main")
        c = _FakeC()
        listed = []
        saved = (main.Lib, main._find_library, main._register_protos, main.cmd_list,
                 main.note_unused)

        def lib(path):
            lb = _lib_with(c)
            lb.shutdown = lambda: None
            return lb
        main.Lib = lib
        main._find_library = lambda: "/lib/libpyop.so"
        main._register_protos = lambda lib, files, command, notes: {}
        main.cmd_list = lambda lib, args: listed.append(args) or 0
        main.note_unused = lambda command: None
        try:
            rc, out, err = _quiet(main._main, ["--lanes", str(1 << 32), "list", "--json"],
                                  "list")
        finally:
            (main.Lib, main._find_library, main._register_protos, main.cmd_list,
             main.note_unused) = saved
        self.assertEqual(rc, 1)
        self.assertEqual(json.loads(out)["error"]["status"], "PYOP_EINVAL")
        self.assertIn("lanes 4294967296 is out of range", err)
        self.assertEqual((c.options, listed), ([], []))


class ListOfListsBoolTest(unittest.TestCase):
    """--attr NAME=[[..]] of a list[list[int]] attribute: a JSON true or
    false is a bool, not an int, refused as the scalar int's "true" and a
    sample's True are (values.plugin_attr_value); 0 and 1 are ints. Kills
    cli.bs.values.lol_bool_taken (a real bug, fixed in this pass)."""

    def test_bool_refused_in_rows(self):
        v, errors = _cli("values"), _cli("errors")
        self.assertEqual(v.parse_attr_text("[[1,0],[]]", "list[list[int]]", "s", "Op"),
                         [[1, 0], []])
        for text in ("[[true,2]]", "[[1],[false]]"):
            with self.subTest(text=text):
                with self.assertRaises(errors.UsageError) as cm:
                    v.parse_attr_text(text, "list[list[int]]", "s", "Op")
                self.assertIn('attribute "s" of "Op" is a list[list[int]]', cm.exception.message)
        with self.assertRaises(errors.UsageError):
            v.parse_attr_text("true", "int", "n", "Op")
        with self.assertRaises(ValueError):
            v.plugin_attr_value([[True]], "list[list[int]]")


class DimAtInt64Test(unittest.TestCase):
    """--input's shape: a dim is 0..INT64_MAX, a pyop_tensor's int64_t
    shape: 2**63 is refused even when another dim of 0 keeps the tensor
    empty (ctypes would wrap it into -2**63 in the shape), INT64_MAX is
    taken beside a 0. Kills cli.bs.values.dim_past_int64."""

    def test_dim_edges(self):
        v, errors = _cli("values"), _cli("errors")
        name, dtype, shape, vals = v.parse_input("x=float32[0,%d]" % v.INT64_MAX)
        self.assertEqual((name, shape, vals), ("x", [0, v.INT64_MAX], None))
        for dim in (v.INT64_MAX + 1, 1 << 64):
            with self.subTest(dim=dim):
                with self.assertRaises(errors.UsageError) as cm:
                    v.parse_input("x=float32[0,%d]" % dim)
                self.assertIn("dim %d does not fit in int64" % dim, cm.exception.message)
                with self.assertRaises(ValueError):
                    v.check_shape(0, [dim, 0], "t")


class _Limit:
    """PYOP_CLI_MAX_BYTES set for a with block."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self.saved = os.environ.get("PYOP_CLI_MAX_BYTES")
        os.environ["PYOP_CLI_MAX_BYTES"] = self.value

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop("PYOP_CLI_MAX_BYTES", None)
        else:
            os.environ["PYOP_CLI_MAX_BYTES"] = self.saved


class AllocAtTheLimitTest(unittest.TestCase):
    """A buffer an op asks for (an output, a workspace: Buffers.alloc) at
    exactly PYOP_CLI_MAX_BYTES is allocated, one byte more refused (the
    CliError PYOP_ENOMEM, refused saying why), as --input's tensor at the
    limit is taken (check_shape). Kills cli.bs.values.alloc_limit_exclusive."""

    def test_alloc_edges(self):
        v, errors = _cli("values"), _cli("errors")
        with _Limit("64"):
            bufs = v.Buffers()
            addr = bufs.alloc(64, "a workspace")
            self.assertTrue(addr)
            self.assertIsNone(bufs.refused)
            self.assertEqual(bufs.overruns(), [])
            v.check_shape(0, [16], "t")  # 64 bytes: the sibling's edge
            with self.assertRaises(errors.CliError) as cm:
                bufs.alloc(65, "output 0")
            self.assertEqual(cm.exception.status, "PYOP_ENOMEM")
            self.assertIn("output 0 of 65 bytes refused", bufs.refused)
            with self.assertRaises(ValueError):
                v.check_shape(0, [17], "t")


class PluginUintSamplesTest(unittest.TestCase):
    """A plugin's sample values for a uint tensor are held to what an int
    tensor's are (values.plugin_tensor_values): integers only, never 2.5
    or True, within the type; int and uint alike. Kills
    cli.bs.values.plugin_uint_as_float."""

    def test_uint_like_int(self):
        v, b = _cli("values"), _cli("binding")
        for name, top in (("int8", 127), ("uint8", 255), ("uint16", 65535),
                          ("uint32", (1 << 32) - 1), ("uint64", (1 << 64) - 1)):
            dt = b.DTYPES.index(name)
            with self.subTest(dtype=name):
                self.assertEqual(v.plugin_tensor_values(dt, [0, top], "x"), [0, top])
                for bad in (2.5, 2.0, True):
                    with self.assertRaises(ValueError) as cm:
                        v.plugin_tensor_values(dt, [1, bad], "x")
                    self.assertIn("is not a%s %s value" % ("n" if name[0] in "aeio" else "",
                                                          name), str(cm.exception))
                with self.assertRaises(ValueError):
                    v.plugin_tensor_values(dt, [top + 1], "x")


class ListAttrInt64Test(unittest.TestCase):
    """An int attribute's value crosses into an int64_t: a list[int]'s and
    a list[list[int]]'s items are held to int64 as the scalar int's are
    (values.set_attr_value: CliError PYOP_EINVAL, never a value ctypes
    wraps into -2**63); the largest and smallest int64 reach libpyop as
    they are. Kills cli.bs.values.list_int_unchecked,
    cli.bs.values.list_list_int_unchecked."""

    def _set(self, t, value):
        v, b = _cli("values"), _cli("binding")
        a = b.AttrValue()
        keep = []
        v.set_attr_value(a, t, value, keep)
        return b.attr_value_to_py(a)

    def test_lists_at_int64_edges(self):
        v, errors = _cli("values"), _cli("errors")
        ends = [v.INT64_MIN, v.INT64_MAX]
        self.assertEqual(self._set("list[int]", ends), ends)
        self.assertEqual(self._set("list[list[int]]", [ends, [0]]), [ends, [0]])
        for t, value in (("list[int]", [1, v.INT64_MAX + 1]), ("list[int]", [v.INT64_MIN - 1]),
                         ("list[list[int]]", [[1], [v.INT64_MAX + 1]]),
                         ("list[list[int]]", [[v.INT64_MIN - 1, 0]])):
            with self.subTest(t=t, value=value):
                with self.assertRaises(errors.CliError) as cm:
                    self._set(t, value)
                self.assertEqual(cm.exception.status, "PYOP_EINVAL")
                self.assertIn("outside int64", cm.exception.message)


class AttrRoundTripTest(unittest.TestCase):
    """Every attribute type of ATTR_TYPES, first to last, written as the
    command gives it to libpyop (values.set_attr_value) and read back as
    it reads a default (binding.attr_value_to_py): each value whole, a
    list's last item and a one-item row included, an empty list and an
    empty row as []. Kills cli.bs.binding.one_item_row_empty,
    cli.bs.binding.list_dtype_last_dropped."""

    def test_each_type(self):
        v, b = _cli("values"), _cli("binding")
        cases = {"int": -7, "float": 0.5, "bool": True, "str": "a\0b", "DataType": "bool",
                 "list[int]": [3, 4, 5], "list[float]": [0.5, -1.0], "list[bool]": [False, True],
                 "list[str]": ["x", ""], "list[DataType]": ["float32", "int8", "bool"],
                 "list[list[int]]": [[7], [], [1, 2]]}
        self.assertEqual(set(cases) | {"Tensor"}, set(b.ATTR_TYPES.values()))
        for t, value in cases.items():
            with self.subTest(t=t):
                a = b.AttrValue()
                keep = []
                v.set_attr_value(a, t, value, keep)
                self.assertEqual(b.ATTR_TYPES[a.type], t)
                self.assertEqual(b.attr_value_to_py(a), value)
                if t.startswith("list["):
                    a = b.AttrValue()
                    v.set_attr_value(a, t, [], keep)
                    self.assertEqual(b.attr_value_to_py(a), [])



def _x_map(text, macro):
    """{value: (NAME, "text", rest...)} of the X(NAME, value, "text", ...)
    lines of macro's X-list in header text."""
    body = text[text.index("#define %s(X)" % macro):]
    body = body[:body.index("\n\n")]
    out = {}
    for m in re.finditer(r'X\((\w+), (-?\d+), "([^"]*)"(?:, (\d+))?\)', body):
        out[int(m.group(2))] = (m.group(1), m.group(3), m.group(4))
    return out


class TablesMirrorTheHeadersTest(unittest.TestCase):
    """The command's copies of the headers' tables, entry by entry, first
    to last (tests/e2e/test_tables.py compares them with libpyop's answers,
    but runs in no CLI mutant's covering set): the data types with their
    sizes and struct codes, the formats, the attribute types, the io
    kinds, the capability bits, doctor's path verdicts and candidate
    statuses. Kills cli.bs.binding.caps_launch_missing,
    cli.bs.doctor.verdict_last_missing, cli.bs.doctor.cand_status_missing."""

    def test_binding_tables(self):
        b = _cli("binding")
        h = _source("include/pyop/pyop.h")
        dt = _x_map(h, "PYOP_DTYPE_MAP")
        self.assertEqual(b.DTYPES, [dt[k][1] for k in sorted(dt)])
        self.assertEqual(sorted(dt), list(range(len(dt))))
        self.assertEqual(b.DTYPE_SIZE, [int(dt[k][2]) for k in sorted(dt)])
        for k, code in enumerate(b.DTYPE_STRUCT):
            with self.subTest(dtype=b.DTYPES[k]):
                import struct
                self.assertEqual(struct.calcsize("<" + code), b.DTYPE_SIZE[k])
                name = b.DTYPES[k]
                if name.startswith(("int", "uint")):
                    self.assertEqual(code.isupper(), name.startswith("uint"))
        fm = _x_map(h, "PYOP_FORMAT_MAP")
        self.assertEqual(b.FORMATS, [fm[k][1] for k in sorted(fm)])
        attrs = {int(v): n for n, v in re.findall(r"PYOP_ATTR_(\w+) = (\d+)", h)}
        self.assertEqual(sorted(b.ATTR_TYPES), sorted(attrs))
        words = {"INT": "int", "FLOAT": "float", "BOOL": "bool", "STR": "str",
                 "DTYPE": "DataType", "TENSOR": "Tensor"}
        for code, n in attrs.items():
            parts = n.split("_")
            t = words[parts[-1]]
            for _ in parts[:-1]:
                t = "list[%s]" % t
            self.assertEqual(b.ATTR_TYPES[code], t)
        kinds = {int(v): n.lower() for n, v in re.findall(r"PYOP_IO_(\w+) = (\d+)", h)}
        self.assertEqual(b.IO_KINDS, [kinds[k] for k in sorted(kinds)])
        caps = {1 << int(s): n for n, s in
                re.findall(r"#define PYOP_CAP_(\w+) \(1u << (\d+)\)", h)}
        self.assertEqual([bit for bit, _ in b.CAPS], sorted(caps))
        self.assertEqual(sum(bit for bit, _ in b.CAPS),
                         int(re.search(r"#define PYOP_CAP_ALL (0x[0-9A-F]+)u", h).group(1), 16))
        names = {"INFER_META": "infer_meta", "EXECUTE": "execute", "COMPILE": "compile",
                 "LAUNCH": "declare_launch_args"}
        self.assertEqual(b.CAPS, [(bit, names[caps[bit]]) for bit in sorted(caps)])
        self.assertEqual(b.MAX_DIMS, int(re.search(r"#define PYOP_MAX_DIMS (\d+)", h).group(1)))

    def test_doctor_tables(self):
        d = _cli("doctor")
        pv = _x_map(_source("src/scan.h"), "PYOP__PATH_VERDICT_MAP")
        self.assertEqual(d.PATH_VERDICTS, tuple(pv[k][1] for k in sorted(pv)) + ("unknown",))
        cs = _x_map(_source("src/candidates.h"), "PYOP__CAND_STATUS_MAP")
        self.assertEqual(sorted(cs), list(range(len(cs))))
        self.assertEqual(d.CAND_STATUSES, tuple(cs[k][1] for k in sorted(cs)) + ("unknown",))



class _Parsed:
    """main._main with the worker of run and bench stood in for: the
    arguments it would have been given."""

    def __init__(self, test):
        self.main = _cli("main")
        self.got = []
        sv = self.main.supervise
        test.addCleanup(setattr, sv, "run_in_worker", sv.run_in_worker)
        sv.run_in_worker = lambda args, argv, timeout: self.got.append(args) or 0

    def __call__(self, *argv):
        del self.got[:]
        rc, out, err = _quiet(self.main._main, list(argv), argv[0])
        return rc, (self.got[0] if self.got else None), err


class BenchCountsBothEndsTest(unittest.TestCase):
    """bench's counts (main._count): --size is a count from 0 (float32[0]
    inputs are a size like any other), --calls and --repeat from 1; each
    taken at its least and refused one below it (a usage error, exit 2,
    no worker started). Kills cli.bs.main.size_zero_refused."""

    def test_least_and_one_below(self):
        parsed = _Parsed(self)
        for opt, least in (("--size", 0), ("--calls", 1), ("--repeat", 1)):
            with self.subTest(opt=opt):
                rc, args, err = parsed("bench", "Op", opt, str(least))
                self.assertEqual((rc, err), (0, ""))
                self.assertEqual(getattr(args, opt[2:]), least)
                rc, args, err = parsed("bench", "Op", opt, str(least - 1))
                self.assertEqual((rc, args), (2, None))
                self.assertIn("argument %s: %d is not an integer >= %d"
                              % (opt, least - 1, least), err)
        rc, args, err = parsed("bench", "Op")
        self.assertEqual((args.size, args.calls, args.repeat), (16, 2000, 5))



class OpLookupStatusTest(unittest.TestCase):
    """binding.Lib.op_info: only PYOP_ENOENT from pyop_op_get is "no op
    ... is registered" (with close names); any other failure (PYOP_ESTATE
    before a load, PYOP_EINVAL) is libpyop's own status and text. Kills
    cli.bs.binding.op_get_any_failure_unknown."""

    def test_other_status_kept(self):
        b, errors = _cli("binding"), _cli("errors")
        names = {-3: b"PYOP_ENOENT", -14: b"PYOP_ESTATE", -1: b"PYOP_EINVAL"}

        class C(_FakeC):
            def __init__(self, rc):
                super().__init__()
                self.rc = rc

            def pyop_op_get(self, name, out):
                return self.rc

            def pyop_status_name(self, rc):
                return names[rc]

            def pyop_last_error(self):
                return b"pyop_op_get: the state says no"

        for rc in (-14, -1):
            with self.subTest(rc=rc):
                lib = _lib_with(C(rc))
                lib.op_types = lambda: ["Relu"]
                with self.assertRaises(errors.PyopError) as cm:
                    lib.op_info("Relux")
                self.assertEqual(cm.exception.status, names[rc].decode())
                self.assertEqual(cm.exception.message, "pyop_op_get: the state says no")
        lib = _lib_with(C(-3))
        lib.op_types = lambda: ["Relu"]
        plugins = _cli("plugins")
        saved = plugins.loaded_impls
        plugins.loaded_impls = lambda: []
        try:
            with self.assertRaises(errors.CliError) as cm:
                lib.op_info("Relux")
        finally:
            plugins.loaded_impls = saved
        self.assertEqual(cm.exception.status, "PYOP_ENOENT")
        self.assertTrue(cm.exception.message.startswith(
            'no op "Relux" is registered; did you mean "Relu"?'), cm.exception.message)


class LibraryThroughSymlinkTest(unittest.TestCase):
    """Which libpyop the command loads (binding._find_library) in each
    configuration: PYOP_LIBRARY as given; else config.LIBDIR relative to
    the command's real file, also when the command is run through a
    symbolic link elsewhere (a bin/ link to the install); from the source
    tree (no LIBDIR or no SCRIPT) the loader's search. Kills
    cli.bs.binding.libdir_from_link."""

    def test_each_configuration(self):
        import shutil
        import tempfile
        b, config = _cli("binding"), _cli("config")
        root = tempfile.mkdtemp(prefix="pyop_bs_b_")
        self.addCleanup(shutil.rmtree, root, True)
        os.makedirs(os.path.join(root, "inst", "bin"))
        os.makedirs(os.path.join(root, "elsewhere", "bin"))
        real = os.path.join(root, "inst", "bin", "pyop")
        open(real, "w").close()
        link = os.path.join(root, "elsewhere", "bin", "pyop")
        os.symlink(real, link)
        saved = (config.LIBDIR, config.SCRIPT, os.environ.pop("PYOP_LIBRARY", None))

        def restore():
            config.LIBDIR, config.SCRIPT = saved[:2]
            if saved[2] is not None:
                os.environ["PYOP_LIBRARY"] = saved[2]
        self.addCleanup(restore)
        config.LIBDIR, config.SCRIPT = "../lib", link
        want = os.path.join(os.path.realpath(root), "inst", "lib", "libpyop.so.0")
        self.assertEqual(b._find_library(), want)
        config.SCRIPT = real
        self.assertEqual(b._find_library(), want)
        config.LIBDIR = os.path.join(root, "abs")
        self.assertEqual(b._find_library(), os.path.join(root, "abs", "libpyop.so.0"))
        for libdir, script in ((None, link), ("../lib", None)):
            config.LIBDIR, config.SCRIPT = libdir, script
            self.assertEqual(b._find_library(), "libpyop.so.0")
        os.environ["PYOP_LIBRARY"] = "/x/libpyop.so"
        config.LIBDIR, config.SCRIPT = "../lib", link
        try:
            self.assertEqual(b._find_library(), "/x/libpyop.so")
        finally:
            os.environ.pop("PYOP_LIBRARY")



class Bf16CarryTest(unittest.TestCase):
    """A float rounded to bfloat16 whose 8 significant bits round up past
    the last (1.998046875 = 2 - 2**-9, 255.9, -3.999) carries into the next
    binade: 2.0, 256.0, -4.0, not a value with a broken exponent; the
    largest finite bfloat16 is written as itself, one that rounds past it
    is refused (OverflowError). (A mutant that drops the carry is killed by
    examples.cli.values too, through its 3.4e38: not listed.)"""

    def test_carry_and_top(self):
        v, b = _cli("values"), _cli("binding")
        bf16 = b.DTYPES.index("bfloat16")
        for x, want in ((2 - 2 ** -9, 2.0), (255.9, 256.0), (-3.999, -4.0), (1.0, 1.0),
                        (v.BF16_MAX, v.BF16_MAX), (2.0 ** -126, 2.0 ** -126)):
            with self.subTest(x=x):
                got = v.decode_values(bf16, v.encode_values(bf16, [x]))[0]
                self.assertEqual(got, want)
        with self.assertRaises(OverflowError):
            v.encode_values(bf16, [v.BF16_MAX * (1 + 2 ** -8)])


class JsonFlagAnywhereTest(unittest.TestCase):
    """--json before another argument (`pyop list --json --bogus`,
    `pyop run --json Op --input x`): a usage error is the JSON error object
    on stdout as with --json last; without --json, nothing on stdout.
    (A mutant that reads --json only last is killed by examples.cli.messages
    too: not listed.)"""

    def test_usage_error_as_json(self):
        main = _cli("main")
        for argv in (["list", "--json", "--bogus"], ["run", "--json", "Op", "--input"],
                     ["list", "--bogus", "--json"]):
            with self.subTest(argv=argv):
                rc, out, err = _quiet(main._main, argv, argv[0])
                self.assertEqual(rc, 2)
                self.assertEqual(json.loads(out)["error"]["status"], "usage")
                self.assertTrue(err.startswith("pyop: %s: " % argv[0]), err)
        rc, out, err = _quiet(main._main, ["list", "--bogus"], "list")
        self.assertEqual((rc, out), (2, ""))



def _write_manifest(root, name, fields):
    d = os.path.join(root, name)
    os.makedirs(d)
    with open(os.path.join(d, "manifest.txt"), "w") as f:
        f.write("# an artifact's manifest\n")
        for k, v in fields.items():
            f.write("%s=%s\n" % (k, v))


class OldManifestTest(unittest.TestCase):
    """A manifest written before a key existed (an older bridge: no
    bridge_abi_minor, no python_version_hex, no abi_flags, no libpython)
    is read as the new one is, each missing key its older meaning, never a
    crash: lanes_unfit says why it cannot run lanes (or None), doctor's
    start_python line says no libpython is recorded, and the choice passes
    over it to a bridge that can. Kills cli.bs.start_choice.abi_minor_missing,
    cli.bs.doctor.libpython_key_missing."""

    def test_lanes_unfit_of_old_manifests(self):
        sc = _cli("start_choice")
        m = _manifest()
        del m["bridge_abi_minor"]
        self.assertEqual(sc.lanes_unfit(m), "its bridge speaks ABI 1.None, lanes need 1.6")
        m = _manifest()
        del m["bridge_abi_major"], m["bridge_abi_minor"]
        self.assertEqual(sc.lanes_unfit(m), "its bridge speaks ABI None.None, lanes need 1.6")
        for key in ("python_version_hex", "abi_flags"):
            m = _manifest()
            del m[key]
            self.assertIsNone(sc.lanes_unfit(m), key)
        m = _manifest()
        del m["libpython"]
        self.assertEqual(sc.lanes_unfit(m), "its Python has no shared libpython to start")
        self.assertEqual(sc.lanes_unfit({}), "built for , no one CPython version")

    def test_choice_and_report_over_an_old_manifest(self):
        import shutil
        import tempfile
        sc, doctor, config = _cli("start_choice"), _cli("doctor"), _cli("config")
        root = tempfile.mkdtemp(prefix="pyop_bs_b_")
        self.addCleanup(shutil.rmtree, root, True)
        old = _manifest()
        del old["bridge_abi_minor"], old["libpython"]
        _write_manifest(root, "cp312-old", old)
        _write_manifest(root, "cp312-new", _manifest(libpython=os.path.join(root, "nolib.so")))
        name, note = sc.choose(root, 2, default="cp312-old", order="cp312-old;cp312-new")
        self.assertEqual(name, "cp312-new")
        self.assertIn("instead of the build's default cp312-old", note)
        saved = config.BUILD_ARTIFACT, config.BUILD_ARTIFACTS
        self.addCleanup(setattr, config, "BUILD_ARTIFACTS", saved[1])
        self.addCleanup(setattr, config, "BUILD_ARTIFACT", saved[0])
        config.BUILD_ARTIFACT, config.BUILD_ARTIFACTS = "cp312-old", "cp312-old;cp312-new"
        rep = doctor.start_python_report(root, 0)
        self.assertEqual((rep["artifact"], rep["libpython"], rep["verdict"]),
                         ("cp312-old", None,
                          "none recorded (the build's Python has no shared libpython)"))
        rep = doctor.start_python_report(root, 2)
        self.assertEqual((rep["artifact"], rep["verdict"]), ("cp312-new", "missing: %s does "
                         "not exist" % os.path.join(root, "nolib.so")))



class _ContractLib(_OpLib):
    """_OpLib whose -20 is libpyop's PYOP_ECONTRACT."""

    def check(self, what, rc):
        if rc == -20:
            raise _cli("errors").PyopError(what, "PYOP_ECONTRACT", "%s broke its contract" % what)
        super().check(what, rc)


class LaunchContractTest(unittest.TestCase):
    """A launch-only op whose kernel launch breaks the contract
    (PYOP_ECONTRACT): the run's error is the launch's, its text as libpyop
    gave it, failed in "launch"; the note that pyop holds execute to
    infer_meta is execute's alone (an execute with infer_meta gets it).
    Kills cli.bs.instance.held_note_any_path."""

    def _run(self, caps, fail):
        im = _cli("instance")
        lib = _ContractLib(_OpC(caps, fail))
        info = _info(inputs=(("x", "required"),))
        inst = im.Instance(lib, info, {})
        self.addCleanup(inst.destroy)
        return inst.run([[(0, [2], [1.0, 2.0])]])

    def test_launch_and_execute(self):
        im = _cli("instance")
        res = self._run(im.CAP_LAUNCH, {"launch": -20})
        self.assertEqual((res.ran, res.failed, res.error.status),
                         ("launch", "launch", "PYOP_ECONTRACT"))
        self.assertEqual(res.error.message, 'launch of "Op" broke its contract')
        res = self._run(im.CAP_EXECUTE, {"execute": -20})
        self.assertEqual((res.ran, res.failed, res.error.message),
                         ("execute", "execute", 'execute of "Op" broke its contract'))



class CheckArgsUsageTest(unittest.TestCase):
    """--input and --attr of check are read by the functions run's are
    (host._inputs_from_args, _attrs_from_args), from check's arguments,
    which have no op (its targets are paths and ops): an optional input
    given twice and an --attr without '=' are usage errors naming the op,
    as for run, never an AttributeError that ends check's worker with a
    traceback. Kills cli.bs.host.optional_twice_op_of_run,
    cli.bs.host.attr_text_op_of_run (the real bug the pass fixed)."""

    def test_check_namespace(self):
        host, errors = _cli("host"), _cli("errors")
        info = _info(inputs=(("x", "required"), ("b", "optional")),
                     attrs=({"name": "alpha", "type": "float", "required": False,
                             "default": 1.0},))
        for args in (argparse.Namespace(input=["x=float32[1]:1"], attr=["alpha"], target=["Op"]),
                     argparse.Namespace(input=["x=float32[1]:1"], attr=["alpha"], op="Op")):
            with self.subTest(op=hasattr(args, "op")):
                with self.assertRaises(errors.UsageError) as cm:
                    host._attrs_from_args(info, args)
                self.assertEqual((cm.exception.message, cm.exception.op, cm.exception.exit_code),
                                 ("--attr alpha: expected NAME=VALUE", "Op", 2))
                args.input = ["x=float32[1]:1", "b=float32[1]:1", "b=float32[1]:2"]
                with self.assertRaises(errors.UsageError) as cm:
                    host._inputs_from_args(info, args)
                self.assertEqual((cm.exception.message, cm.exception.op),
                                 ('input "b" is optional: give it at most once', "Op"))
                args.input, args.attr = ["x=float32[1]:1", "b=float32[1]:1"], ["alpha=2"]
                self.assertEqual(len(host._inputs_from_args(info, args)[1]), 1)
                self.assertEqual(host._attrs_from_args(info, args), {"alpha": 2.0})



class _Desc:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class BothLayersOnceTest(unittest.TestCase):
    """A plugin class registered through pyop's layer and GE's both
    (plugins.loaded_impls): libpyop lists it by its pyop descriptor, so the
    command does too, once (its pyop key and source), not a second time as
    a GE implementation that list and doctor would show as waiting for a
    prototype; a GE-only class of the same module is listed as GE's.
    Kills cli.bs.plugins.both_layers_twice."""

    def setUp(self):
        names = ("pyop._loader", "pyop.ext", "ge.custom_op.registry", "_pyopplg_bsb")
        saved = {n: sys.modules.get(n) for n in names}

        def restore():
            for n, m in saved.items():
                if m is None:
                    sys.modules.pop(n, None)
                else:
                    sys.modules[n] = m
        self.addCleanup(restore)

    def _module(self, name, **objs):
        mod = type(sys)(name)
        mod.__dict__.update(objs)
        sys.modules[name] = mod

    def test_listed_once(self):
        plugins = _cli("plugins")
        self._module("pyop._loader", PLUGIN_PREFIX="_pyopplg_")
        self._module("pyop.ext", class_location=lambda cls: ("/p/b.py", 5),
                     module_label=lambda name: "b")
        sys.modules.pop("ge.custom_op.registry", None)
        Both = type("Both", (), {
            "__pyop_descriptor__": _Desc(op_type="Both", key="pyop:both", file="/p/b.py",
                                         line=3, caps=2),
            "__ge_op_impl_descriptor__": _Desc(op_type="Both", interfaces=["eager_execute"])})
        GeOnly = type("GeOnly", (), {"__ge_op_impl_descriptor__": _Desc(
            op_type="GeOnly", interfaces=["eager_execute"])})
        self._module("_pyopplg_bsb", Both=Both, GeOnly=GeOnly)
        got = plugins.loaded_impls()
        self.assertEqual([(i["op_type"], i["impl_key"], i["ge"]) for i in got],
                         [("Both", "pyop:both", False), ("GeOnly", "ge:b:GeOnly:GeOnly", True)])
        self.assertEqual(plugins.pending_impls(["Both", "GeOnly"]), [])



class ManifestNotTextTest(unittest.TestCase):
    """An artifact whose manifest is not text (bytes that do not decode):
    the start_python choice's list of artifacts passes over it as over a
    missing one (start_choice.artifacts), and doctor's start_python line,
    when it is the build's default, says the manifest is unreadable instead of ending
    doctor in a UnicodeDecodeError traceback. Kills
    cli.bs.start_choice.undecodable_manifest, cli.bs.doctor.undecodable_manifest
    (a real bug, fixed in this pass: the second)."""

    def test_not_text(self):
        import shutil
        import tempfile
        sc, doctor, config = _cli("start_choice"), _cli("doctor"), _cli("config")
        root = tempfile.mkdtemp(prefix="pyop_bs_b_")
        self.addCleanup(shutil.rmtree, root, True)
        os.makedirs(os.path.join(root, "cp312-bad"))
        with open(os.path.join(root, "cp312-bad", "manifest.txt"), "wb") as f:
            f.write(b"python_tag=cp312\n\xff\xfe\x80=x\n")
        _write_manifest(root, "cp312-ok", _manifest(libpython=os.path.join(root, "nolib.so")))
        self.assertEqual([n for n, _ in sc.artifacts(root, ["cp312-bad", "cp312-ok"])],
                         ["cp312-ok"])
        saved = config.BUILD_ARTIFACT, config.BUILD_ARTIFACTS
        self.addCleanup(setattr, config, "BUILD_ARTIFACTS", saved[1])
        self.addCleanup(setattr, config, "BUILD_ARTIFACT", saved[0])
        config.BUILD_ARTIFACT, config.BUILD_ARTIFACTS = "cp312-bad", "cp312-bad;cp312-ok"
        rep = doctor.start_python_report(root, 0)
        self.assertEqual((rep["artifact"], rep["libpython"]), ("cp312-bad", None))
        self.assertTrue(rep["verdict"].startswith("unreadable manifest: "), rep["verdict"])



class CloseNamesUpToThreeTest(unittest.TestCase):
    """did_you_mean names every close name up to three (difflib's), best
    first, after one that differs only in case: three close ones are all
    named, a fourth is not; an op's unknown name says them. Kills
    cli.bs.errors.close_names_one."""

    def test_three_named(self):
        errors = _cli("errors")
        self.assertEqual(errors.did_you_mean("Rel", ["Relu", "Relu6", "Rely", "Add"]),
                         '; did you mean "Rely" or "Relu" or "Relu6"?')
        self.assertEqual(errors.did_you_mean("Rel", ["Relu", "Relu6", "Rely", "Relx", "Add"])
                         .count('"'), 6)
        self.assertEqual(errors.did_you_mean("Relux", ["Relu", "Relu6", "ReluX"]),
                         '; did you mean "ReluX" or "Relu" or "Relu6"?')
        with _Opp("/ops"):
            self.assertEqual(errors.unknown_op_message("Rel", ["Relu", "Rely"]),
                             'no op "Rel" is registered; did you mean "Rely" or "Relu"?')


class _Opp:
    """ASCEND_CUSTOM_OPP_PATH set for a with block."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self.saved = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = self.value

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None)
        else:
            os.environ["ASCEND_CUSTOM_OPP_PATH"] = self.saved



class RelativeProtoPathTest(unittest.TestCase):
    """--proto FILE given relative (`--proto ops.h`) is read, named in the
    notes and returned for list's lines as the absolute path, as one given
    absolute is: the same file whatever the reader's directory. Kills
    cli.bs.proto.relative_path_kept."""

    def test_relative_made_absolute(self):
        import tempfile
        proto = _cli("proto")
        here = os.getcwd()
        root = os.path.realpath(tempfile.mkdtemp(prefix="pyop_bs_b_"))
        self.addCleanup(lambda: __import__("shutil").rmtree(root, True))
        os.chdir(root)
        self.addCleanup(os.chdir, here)
        read = []
        saved = proto.read_declarations, proto._op_info, dict(proto._declared)
        self.addCleanup(setattr, proto, "read_declarations", saved[0])
        self.addCleanup(setattr, proto, "_op_info", saved[1])
        self.addCleanup(lambda: (proto._declared.clear(), proto._declared.update(saved[2])))

        def declarations(lib, path):
            read.append(path)
            return [{"op_type": "BsbA", "line": 3, "unusable": "no pyop form"},
                    {"op_type": "BsbB", "line": 7}]
        proto.read_declarations = declarations
        proto._op_info = lambda info, path, keep: _cli("binding").OpInfo()
        lib = argparse.Namespace(check=lambda what, rc: None,
                                 c=argparse.Namespace(pyop_register_host_prototype=lambda p: 0))
        done, out, err = _quiet(proto.register_protos, lib, ["ops.h"], "list", True)
        path = os.path.join(root, "ops.h")
        self.assertEqual(read, [path])
        self.assertEqual(done, {"BsbB": path})
        self.assertEqual(proto._declared["BsbB"], path + ":7")
        self.assertEqual(err, "pyop: list: note: --proto %s:3: REG_OP(BsbA) is not registered: "
                              "no pyop form\n" % path)


if __name__ == "__main__":
    unittest.main()
