"""Makes the pyop package of this source tree importable (pure-Python parts,
no bridge) and offers small helpers for the tests."""
import os
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PACKAGE_DIR = os.environ.get("PYOP_PACKAGE_DIR") or os.path.join(ROOT, "bridge", "python")
if PACKAGE_DIR not in sys.path:
    sys.path.insert(0, PACKAGE_DIR)
sys.dont_write_bytecode = True

import pyop  # noqa: E402


def write(directory, relpath, text):
    """Writes dedented text to directory/relpath and returns the path."""
    path = os.path.join(directory, relpath)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


class TempDir:
    def __enter__(self):
        self._t = tempfile.TemporaryDirectory(prefix="pyop_test_")
        return self._t.name

    def __exit__(self, *exc):
        self._t.cleanup()
        return False


def names_table():
    """The rows of tests/names.txt as (line, kind, ok, name); the format is
    described in that file (pyop's, the ge package's and libpyop's name
    checks are all run against it)."""
    import re
    rows = []
    with open(os.path.join(ROOT, "tests", "names.txt"), "rb") as f:
        for n, raw in enumerate(f.read().split(b"\n"), 1):
            if not raw or raw.startswith(b"#"):
                continue
            kind, verdict, text = raw.split(b" ", 2)
            reps = 1
            m = re.search(rb"\*([0-9]+)$", text)
            if m:
                reps, text = int(m.group(1)), text[:m.start()]
            one = b"" if text == b"(empty)" else re.sub(
                rb"\\x([0-9A-Fa-f]{2})", lambda h: bytes([int(h.group(1), 16)]), text)
            name = (one * reps).decode("utf-8", "surrogateescape")
            assert kind in (b"op_type", b"name") and verdict in (b"ok", b"bad"), (n, raw)
            rows.append((n, kind.decode(), verdict == b"ok", name))
    return rows
