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
