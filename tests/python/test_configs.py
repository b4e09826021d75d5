"""Second configurations and untested partitions of the pyop package's
inputs (configuration pass, session 12): a path element that is a directory
named like a plugin file, a helper whose import fails imported a second
time in one load."""
import os
import sys
import textwrap
import unittest

import support  # noqa: F401  (puts the package on sys.path)
from support import TempDir, write
from pyop import _loader


OP = """
import pyop
from pyop import TensorDesc

@pyop.register_op(op_type=%r)
def f(x: TensorDesc) -> TensorDesc:
    return x
"""


def plugin_modules():
    return [m for m in sys.modules if m.startswith("_pyop_plugin_")]


class PathElementTest(unittest.TestCase):
    def tearDown(self):
        _loader.shutdown()

    def test_a_directory_named_like_a_plugin_file_is_a_directory(self):
        # src/scan.c scans an element named *.py that is a directory as a
        # directory (tests/unit/test_scan.c); the loader must import its
        # plugins too, not report a missing file.
        with TempDir() as root:
            d = os.path.join(root, "ops.py")
            write(d, "a.py", OP % "InDirPy")
            write(d, "pkg/__init__.py", OP % "PkgInDirPy")
            found = _loader.discover(d)
            self.assertEqual([(os.path.basename(f), stem) for f, _, stem in found],
                             [("a.py", "a"), ("__init__.py", "pkg")])
            res = _loader.load_plugins([d])
            try:
                self.assertEqual(sorted(p.op_type for p in res.protos),
                                 ["InDirPy", "PkgInDirPy"])
            finally:
                _loader.unload_modules(res.modules)
        self.assertEqual(plugin_modules(), [])


class FailedImportTest(unittest.TestCase):
    def tearDown(self):
        _loader.shutdown()

    def test_a_failed_helper_import_fails_again(self):
        # As a failed import in Python leaves no module behind, a sibling
        # helper whose import raised is not half there for the next import
        # of it in the same load: the second import runs it again and fails
        # again (never hands over the half-made module).
        with TempDir() as d:
            write(d, "_helper.py", "RUNS = []\nRUNS.append(1)\nraise ValueError('helper')\n")
            write(d, "a.py", textwrap.dedent("""
                import pyop
                OUTCOMES = []
                for _ in range(2):
                    try:
                        import _helper
                        OUTCOMES.append("imported %d" % len(_helper.RUNS))
                    except ValueError as e:
                        OUTCOMES.append(str(e))
                pyop.FAILED_IMPORT_OUTCOMES = OUTCOMES
                """) + OP % "AfterHelper")
            import pyop
            res = _loader.load_plugins([d])
            try:
                outcomes = pyop.__dict__.pop("FAILED_IMPORT_OUTCOMES")
                self.assertEqual(outcomes, ["helper", "helper"])
                self.assertEqual([p.op_type for p in res.protos], ["AfterHelper"])
                self.assertEqual([m for m in sys.modules if m.endswith("__helper")], [])
            finally:
                _loader.unload_modules(res.modules)
        self.assertEqual(plugin_modules(), [])


if __name__ == "__main__":
    unittest.main()
