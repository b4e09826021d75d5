"""Counts in messages agree with their nouns ("1 op", "2 ops"; issue 26.9):
every format string of libpyop, the bridge, the pyop package and the pyop
command that prints a number before a plural noun takes the noun from the
plural helper (PYOP__PLURAL, PB_PLURAL, pyop._errors.plural,
pyop_cli.errors.plural), unless the number can never be 1 (ALLOWED says
why). The helpers themselves are checked here too."""
import glob
import os
import re
import sys
import unittest

import support

ROOT = support.ROOT
# A count conversion followed by a word: "%zu outputs", "%d ops".
C_COUNT = re.compile(r'%(?:z|ll|l|h|j)?[udi] ([a-z][a-z-]*)\b')
PY_COUNT = re.compile(r'%(?:\(\w+\))?[0-9]*d ([a-z][a-z-]*)\b')
# Words after a count that are not plural nouns.
NOT_PLURAL = {"is", "was", "has", "does", "s", "its", "this", "as", "yes", "vs", "holds",
              "yields", "status", "alias", "class", "bias", "axis", "process", "address"}
# (file, text of the line): counts that are never 1, and why.
ALLOWED = {
    ("bridge/callbacks.c", "tensor description with %d dimensions"): "ndim outside 0..8",
    ("bridge/callbacks.c", "%zd dimensions (at most %d)"): "more than PYOP_MAX_DIMS",
    ("bridge/callbacks.c", "a tuple of %zu outputs, got"): "n == 1 is handled before",
    ("bridge/context.c", "shape has %zd dimensions, at most"): "more than PYOP_MAX_DIMS",
    ("bridge/python/pyop/_types.py", "TensorDesc: %d dimensions, at most"): "more than MAX_DIMS",
    ("bridge/python/pyop/_signature.py", "at most %d characters"): "MAX_NAME_LEN (256)",
    ("bridge/views.c", "must be a tuple of %zu ints"): "internal: the bridge's own layout",
    ("src/bridge_loader.c", "is smaller than the %zu bytes"): "sizeof of a table",
    ("src/descriptor.c", "is smaller than the %zu bytes"): "sizeof of a table",
    ("src/descriptor.c", "list of %zu items (at most %u)"): "more than the limit",
    ("src/manifest.c", "%zu bytes, more than the %d allowed"): "more than PYOP__MANIFEST_MAX",
    ("src/manifest.c", "longer than %d bytes"): "a constant",
    ("src/manifest.c", "%lld bytes, more than the %d allowed"): "more than PYOP__MANIFEST_MAX",
    ("src/manifest.c", "more than the %d bytes allowed"): "PYOP__MANIFEST_MAX",
    ("src/op.c", "is %s: %zu tensors given"): "required takes 1, optional 0 or 1: never 1",
    ("src/runtime_key.c", "is %zu bytes, not an unsigned long"): "a symbol's size, never 1",
    ("tools/pyop_cli/check.py", "and from %d threads at once"): "THREADS (4)",
    ("tools/pyop_cli/check_verdict.py", "run from %d threads at once"): "THREADS (4)",
    ("tools/pyop_cli/check_supervise.py", '"a thread" if len(ev["names"]) == 1 else'):
        "1 is 'a thread'",
    ("tools/pyop_cli/main.py", '"a thread" if len(left) == 1 else'): "1 is 'a thread'",
    ("tools/pyop_cli/values.py", "%d dims; a pyop tensor has at most"): "more than MAX_DIMS",
}
SOURCES = ("src/*.c", "bridge/*.c", "bridge/python/pyop/*.py", "tools/pyop_cli/*.py")


def _found():
    """(file, line number, line, noun) of every count before a plural noun."""
    out = []
    for pattern in SOURCES:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            rel = os.path.relpath(path, ROOT)
            count = PY_COUNT if path.endswith(".py") else C_COUNT
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    for m in count.finditer(line):
                        word = m.group(1)
                        if word.endswith("s") and word not in NOT_PLURAL:
                            out.append((rel, n, line.strip(), word))
    return out


class PluralsTest(unittest.TestCase):
    def test_counts_take_their_noun_from_the_helper(self):
        used = set()
        bad = []
        for rel, n, line, word in _found():
            allowed = [k for k in ALLOWED if k[0] == rel and k[1] in line]
            if allowed:
                used.update(allowed)
            else:
                bad.append("%s:%d: %r: %s" % (rel, n, word, line))
        self.assertEqual(bad, [], "a count before a fixed plural: use the plural helper")
        self.assertEqual(sorted(set(ALLOWED) - used), [], "ALLOWED entries that match nothing")

    def test_the_scan_sees_a_fixed_plural(self):
        # The check cannot pass vacuously: the old spellings are found.
        for text, count in (('print("%d ops checked" % n)', PY_COUNT),
                            ('"the op has %zu outputs"', C_COUNT)):
            self.assertTrue([m for m in count.finditer(text) if m.group(1).endswith("s")])

    def test_helpers(self):
        from pyop._errors import plural
        self.assertEqual([plural(n, "op") for n in (0, 1, 2)], ["0 ops", "1 op", "2 ops"])
        self.assertEqual(plural(1, "was", "were"), "1 was")
        sys.path.insert(0, os.path.join(ROOT, "tools"))
        try:
            from pyop_cli.errors import plural as cli_plural
        finally:
            del sys.path[0]
        self.assertEqual([cli_plural(n, "lane") for n in (1, 2)], ["1 lane", "2 lanes"])
        with open(os.path.join(ROOT, "src", "core.h")) as f:
            self.assertIn("#define PYOP__PLURAL(n, one, many) ((n) == 1 ? (one) : (many))",
                          f.read())
        with open(os.path.join(ROOT, "bridge", "bridge.h")) as f:
            self.assertIn("#define PB_PLURAL(n, one, many) ((n) == 1 ? (one) : (many))", f.read())


if __name__ == "__main__":
    unittest.main()
