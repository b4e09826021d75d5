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

    def test_ge_layer_frames_are_trimmed_too(self):
        """libpyop's ge package is machinery in its subpackages as well
        (ge/runtime, ge/custom_op): a GE-style plugin's error raised in them
        shows the plugin's line, not theirs."""
        import ge.runtime
        ge_dir = os.path.dirname(os.path.abspath(ge.__file__))
        with TempDir() as d:
            path = write(d, "ge_shape.py", "from ge.runtime import Shape\n\nShape()\n")
            text = _errors.format_exception(_load_error(d))
        self.assert_no_pyop_frames(text)
        self.assertNotIn(ge_dir, text)
        self.assertIn('  File "%s", line 3, in <module>' % path, text)
        self.assertTrue(text.startswith("TypeError: ge.runtime.Shape cannot be constructed"), text)

    def test_last_origin_is_consumed(self):
        """last_origin() gives the origin of the exception described last,
        once: a second call (a failure with no exception since) has none."""
        with TempDir() as d:
            path = write(d, "helper_fail.py",
                         "def boom():\n    raise RuntimeError('no')\n\nboom()\n")
            _errors.format_exception(_load_error(d))
        origin = _errors.last_origin()
        self.assertIsNotNone(origin)
        self.assertEqual(origin[0][0], "RuntimeError")
        self.assertEqual(origin[1:], (path, 2, "RuntimeError: no"))
        self.assertIsNone(_errors.last_origin())

    def test_pyop_own_error_keeps_its_frames(self):
        try:
            _loader.discover("relative/dir")
        except ValueError as e:
            exc = e.with_traceback(e.__traceback__.tb_next)  # only pyop's frames
        text = _errors.format_exception(exc)
        self.assertIn(os.path.join(PACKAGE, "_loader.py"), text)


if __name__ == "__main__":
    unittest.main()
