"""What a failed load's traceback shows (pyop._errors.format_exception): the
plugin's frames, never pyop's loader and registry, also when the failure is
found after the plugin's code ran (a signature bound to its prototype) or is
a SyntaxError; pyop's own frames only when the error is pyop's own."""
import os
import unittest

import support
from support import TempDir, write
from pyop import _errors, _loader

PACKAGE = os.path.dirname(os.path.abspath(_errors.__file__))

BAD_SIGNATURE = """\
import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="BadSig")
def bad_sig(x: TensorDesc, *, factor: float = 1.0) -> TensorDesc:
    return TensorDesc(x.shape, x.dtype)


@pyop.register_op_impl(op_type="BadSig")
class BadSigImpl:
    def execute(self, x: Tensor, y: Tensor, *, factor: float) -> None:
        pass
"""


def _load_error(directory):
    """The exception of a failed load, with the traceback the bridge sees
    (it calls load_plugins from C: no frame of this test)."""
    try:
        res = _loader.load_plugins([directory])
    except Exception as e:  # noqa: BLE001 (the test inspects what a host reads)
        return e.with_traceback(e.__traceback__.tb_next)
    _loader.unload_modules(res.modules)
    raise AssertionError("the load did not fail")


class TracebackTest(unittest.TestCase):
    def tearDown(self):
        _loader.shutdown()

    def assert_no_pyop_frames(self, text):
        self.assertNotIn(PACKAGE, text)
        self.assertNotIn("<frozen importlib", text)

    def test_signature_error_shows_the_method(self):
        with TempDir() as d:
            path = write(d, "bad_sig.py", BAD_SIGNATURE)
            text = _errors.format_exception(_load_error(d))
        self.assert_no_pyop_frames(text)
        self.assertEqual(text.splitlines()[1:4], [
            "Traceback (most recent call last):",
            '  File "%s", line 12, in BadSigImpl.execute' % path,
            "    def execute(self, x: Tensor, y: Tensor, *, factor: float) -> None:"])
        self.assertIn("parameter 'y': not an input of the prototype", text.splitlines()[-1])

    def test_syntax_error_shows_the_plugin_line(self):
        with TempDir() as d:
            path = write(d, "bad_syntax.py", "import pyop\n\ndef f(:\n    pass\n")
            text = _errors.format_exception(_load_error(d))
        self.assert_no_pyop_frames(text)
        self.assertNotIn("Traceback", text)
        self.assertIn('  File "%s", line 3\n    def f(:\n' % path, text)

    def test_error_in_plugin_code_keeps_its_frames_only(self):
        with TempDir() as d:
            write(d, "helper_fail.py", "def boom():\n    raise RuntimeError('no')\n\nboom()\n")
            text = _errors.format_exception(_load_error(d))
        self.assert_no_pyop_frames(text)
        self.assertIn("line 4, in <module>", text)
        self.assertIn("line 2, in boom", text)

    def test_pyop_own_error_keeps_its_frames(self):
        try:
            _loader.discover("relative/dir")
        except ValueError as e:
            exc = e.with_traceback(e.__traceback__.tb_next)  # only pyop's frames
        text = _errors.format_exception(exc)
        self.assertIn(os.path.join(PACKAGE, "_loader.py"), text)


if __name__ == "__main__":
    unittest.main()
