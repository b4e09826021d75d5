"""The `pyop` command's STATE across elements, calls and loads
(tools/pyop_cli): the second element, the second plugin, the second call
seeing what it should and not the first one's leftovers; and the text
and --json results carrying the same facts. Issue 31's state pass
(session 11): each class names the mutants (cli.st.* in
tests/mutation/mutants.txt) it was seen killing. Pure Python, no bridge:
libpyop, the bridge's modules and plugins stood in for by small fakes,
the helpers of test_cli_rules.py reused.

Driven by ctest (tests/examples/CMakeLists.txt, examples.cli.state):

  PYOP_TEST_TOOLS  tools/ of the source tree (holds the pyop_cli package)
"""

import argparse
import contextlib
import ctypes
import io
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli_rules import _cli, _Env, _info, _need, _OpC, _OpLib, _tree  # noqa: E402


def _quiet(fn, *a, **kw):
    """(fn's value, its stdout, its stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        value = fn(*a, **kw)
    return value, out.getvalue(), err.getvalue()


class ProtoStateTest(unittest.TestCase):
    """--proto (proto.py): a declaration's error names its file:line once
    (register_protos gives _op_info the file, _op_info adds the line); a
    REG_OP a check worker's load left out is noted by the command, which
    merged what the worker saw. Kills cli.st.proto.where_line_twice,
    cli.st.proto.worker_unbound_dropped."""

    def setUp(self):
        self.proto = _cli("proto")
        p = self.proto
        state = [dict(p._declared), set(p._unbound), set(p._bound), set(p._noted)]

        def restore():
            for cur, old in zip((p._declared, p._unbound, p._bound, p._noted), state):
                cur.clear()
                cur.update(old)
        self.addCleanup(restore)
        for c in (p._declared, p._unbound, p._bound, p._noted):
            c.clear()

    def test_error_names_the_line_once(self):
        proto, errors = self.proto, _cli("errors")
        lib = argparse.Namespace(check=lambda what, rc: None,
                                 c=argparse.Namespace(pyop_register_host_prototype=lambda p: 0))
        decls = {"/p/a.h": [{"op_type": "A", "line": 3, "inputs": [("x", 0)],
                             "outputs": [("y", 0)], "attrs": [("n", 1, False, 2.5)]}]}
        saved = proto.read_declarations
        proto.read_declarations = lambda lib, path: decls[path]
        try:
            with self.assertRaises(errors.CliError) as cm:
                proto.register_protos(lib, ["/p/a.h"], "list")
        finally:
            proto.read_declarations = saved
        self.assertEqual((cm.exception.status, cm.exception.op), ("PYOP_EDESCRIPTOR", "A"))
        self.assertEqual(cm.exception.message,
                         "--proto /p/a.h:3: REG_OP('A') ATTR('n'): default 2.5 is not an int")

    def test_worker_unbound_merged(self):
        proto = self.proto
        proto._declared.update({"A": "/p/a.h:1", "B": "/p/a.h:2"})
        # the command's own process loaded nothing; a worker's load left A
        # out and implemented B
        proto.merge_binding({"bound": ["B"], "unbound": ["A"]})
        _, _, err = _quiet(proto.note_unused, "check")
        self.assertEqual(err, "pyop: check: note: --proto /p/a.h:1: REG_OP(A) is not used: no "
                              "loaded plugin implements it\n")



if __name__ == "__main__":
    unittest.main()
