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

  PYOP_TEST_TOOLS    tools/ of the source tree (holds the pyop_cli package)
  PYOP_TEST_INCLUDE  include/ of the source tree (pyop.h: the tables compared)
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
from test_cli_rules import _cli, _info, _manifest  # noqa: E402


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
        inc = os.environ.get("PYOP_TEST_INCLUDE")
        if not inc:
            self.skipTest("PYOP_TEST_INCLUDE is not set (run through ctest)")
        text = open(os.path.join(inc, "pyop", "pyop.h")).read()
        m = re.search(r"#define PYOP_MAX_LANES (\d+)u", text)
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


if __name__ == "__main__":
    unittest.main()
