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
