"""Callbacks libpyop cannot call synchronously (issue 17, item 9): async def,
async generators and generators as infer_meta, execute, compile,
declare_launch_args or a samples function -- directly, through
functools.partial(method), staticmethod, classmethod or a callable object's
__call__ -- are refused at the decorator (pyop's and ge's) with a TypeError
naming the op, the method, why and file:line; so is a non-function callable
where a method is required. A result that is still a coroutine at run time
is closed unrun and refused (unawaited_result)."""

import functools
import gc
import os
import unittest
import warnings

import support
from support import TempDir, write
from pyop import _loader, _registry, _signature

WHY = "libpyop calls it synchronously"

HEAD = """
import functools
import pyop
from pyop import Tensor, TensorDesc
"""

PROTO = """
@pyop.register_op(op_type="Op")
def op(x: TensorDesc) -> TensorDesc:
    return x
"""


def _line(text, needle):
    """1-based line of the first line of text containing needle."""
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(needle)


class DecoratorTest(unittest.TestCase):
    def tearDown(self):
        _loader.shutdown()

    def refused(self, body, *needles):
        """Loads HEAD + body as a plugin; returns the TypeError's text after
        checking it holds the needles ("@L<text>" stands for the file:line
        of the first line holding <text>: a def's line is its first
        decorator's, as Python's co_firstlineno)."""
        text = HEAD + body
        with TempDir() as d:
            path = write(d, "plugin.py", text)
            with self.assertRaises(TypeError) as cm:
                _loader.load_plugins([d])
            msg = str(cm.exception)
            for n in needles:
                if n.startswith("@L"):
                    n = "%s:%d" % (path, _line(text, n[2:]))
                self.assertIn(n, msg)
        return msg

    def test_async_execute(self):
        msg = self.refused(PROTO + """
@pyop.register_op_impl(op_type="Op")
class Impl:
    async def execute(self, x: Tensor) -> None:
        pass
""", "op 'Op'", "execute()", "@Lasync def execute",
            "is a coroutine function (async def): " + WHY)
        self.assertIn("class Impl", msg)

    def test_every_method_and_form(self):
        cases = [
            ("    async def compile(self, x, y):\n        pass\n", "compile()",
             "@Lasync def compile", "is a coroutine function (async def)"),
            ("    def declare_launch_args(self, x, y):\n        yield\n",
             "declare_launch_args()", "@Ldef declare_launch_args",
             "is a generator function (it contains yield)"),
            ("    async def execute(self, x):\n        yield\n", "execute()",
             "@Lasync def execute", "is an asynchronous generator function"),
            ("    @staticmethod\n    async def execute(x):\n        pass\n", "execute()",
             "@L@staticmethod", "is a staticmethod of a coroutine function"),
            ("    @classmethod\n    async def execute(cls, x):\n        pass\n", "execute()",
             "@L@classmethod", "is a classmethod of a coroutine function"),
            ("    execute = functools.partialmethod(_coro)\n", "execute()", "@Lasync def _coro",
             "is a functools.partialmethod of a coroutine function"),
            ("    execute = _Call()\n", "execute()", "@Lasync def __call__",
             "is a callable _Call object whose __call__ is a coroutine function"),
        ]
        helpers = """
async def _coro(self, x):
    pass

class _Call:
    async def __call__(self, x):
        pass
"""
        for body, method, where, why in cases:
            with self.subTest(why=why, method=method):
                self.refused(PROTO + helpers + """
@pyop.register_op_impl(op_type="Op")
class Impl:
""" + body, "op 'Op'", method, where, why, WHY)

    def test_not_a_function_where_a_method_is_required(self):
        for value in ("functools.partial(lambda self, x: None)", "_Call()"):
            with self.subTest(value=value):
                self.refused(PROTO + """
class _Call:
    def __call__(self, x):
        pass

@pyop.register_op_impl(op_type="Op")
class Impl:
    execute = %s
""" % value, "op 'Op'", "execute()", "not a function", "called without self")

    def test_partialmethod_of_a_def_is_not_a_method(self):
        # check_sync_method lets a partialmethod of a def through (it is a
        # descriptor, not async); check_impl_method refuses it: a method is
        # a def, a staticmethod or a classmethod (docs/op-author-guide.md).
        # The same execute as a def loads (the control).
        helper = """
def _run(self, x, scale):
    pass
"""
        body = """
@pyop.register_op_impl(op_type="Op")
class Impl:
    execute = functools.partialmethod(_run, scale=2)
"""
        self.assertIsNone(_signature.sync_problem(functools.partialmethod(lambda self, x: None)))
        before = {n for n in __import__("sys").modules if n.startswith(_registry.PLUGIN_PREFIX)}
        msg = self.refused(PROTO + helper + body, "op 'Op'",
                           "execute() of class at ", "@L@pyop.register_op_impl",
                           ": execute is not a method")
        self.assertNotIn("coroutine", msg)
        with TempDir() as d:
            write(d, "plugin.py", HEAD + PROTO + helper + """
@pyop.register_op_impl(op_type="Op")
class Impl:
    def execute(self, x):
        pass
""")
            res = _loader.load_plugins([d])
            try:
                self.assertEqual([i.op_type for i in res.impls], ["Op"])
            finally:
                _loader.unload_modules(res.modules)
        # A refused load leaves no module of it behind.
        self.assertEqual({n for n in list(__import__("sys").modules)
                          if n.startswith(_registry.PLUGIN_PREFIX)} - before, set())

    def test_infer_meta_and_samples(self):
        self.refused("""
@pyop.register_op(op_type="Op")
async def op(x: TensorDesc) -> TensorDesc:
    return x
""", "op 'Op'", "infer_meta function op()", "@L@pyop.register_op(", WHY)
        self.refused("""
async def _op(x: TensorDesc) -> TensorDesc:
    return x

pyop.register_op(op_type="Op")(functools.partial(_op))
""", "op 'Op'", "infer_meta function _op()", "@Lasync def _op",
            "is a functools.partial of a coroutine function")
        self.refused("""
class _Infer:
    def __call__(self, x: TensorDesc) -> TensorDesc:
        yield x

pyop.register_op(op_type="Op")(_Infer())
""", "op 'Op'", "_Infer.__call__()", "@Ldef __call__",
            "is a callable _Infer object whose __call__ is a generator function")
        self.refused(PROTO + """
@pyop.register_samples(op_type="Op")
async def samples():
    return []
""", "op 'Op'", "samples function samples()", "@L@pyop.register_samples", WHY)

    def test_ordinary_callables_pass(self):
        text = HEAD + PROTO + """
import asyncio

async def _coro(self, x):
    pass

@functools.wraps(_coro)
def _sync_wrapper(self, x):  # a def that runs the coroutine itself
    asyncio.run(_coro(self, x))

@pyop.register_op(op_type="Op2")
def op2(x: TensorDesc) -> TensorDesc:
    return x

@pyop.register_op_impl(op_type="Op")
class Impl:
    execute = _sync_wrapper

    def compile(self, x, y):
        pass

@pyop.register_op_impl(op_type="Op2")
class Impl2:
    @staticmethod
    def execute(x):
        pass

    @classmethod
    def declare_launch_args(cls, x, y):
        pass
"""
        with TempDir() as d:
            write(d, "plugin.py", text)
            res = _loader.load_plugins([d])
            try:
                self.assertEqual(sorted(i.op_type for i in res.impls), ["Op", "Op2"])
            finally:
                _loader.unload_modules(res.modules)


class GeDecoratorTest(unittest.TestCase):
    """The ge package's decorators call the same check."""

    def setUp(self):
        import ge.custom_op  # noqa: F401  (pure Python: no bridge needed)
        from ge.custom_op import _state
        _state._fallback.__init__()

    def test_ge_register_op_and_impl(self):
        from ge.custom_op import register_op, register_op_impl
        from ge.runtime import Tensor, TensorDesc

        async def ge_infer(x: TensorDesc) -> TensorDesc:
            return x

        with self.assertRaises(TypeError) as cm:
            register_op(op_type="GeAsync")(ge_infer)
        code = ge_infer.__code__
        for n in ("op 'GeAsync'", "infer_meta function ge_infer()",
                  "%s:%d" % (code.co_filename, code.co_firstlineno),
                  "is a coroutine function (async def): " + WHY):
            self.assertIn(n, str(cm.exception))

        class GeImpl:
            def execute(self, x: Tensor) -> None:
                yield

        with self.assertRaises(TypeError) as cm:
            register_op_impl(op_type="GeGen")(GeImpl)
        code = GeImpl.execute.__code__
        for n in ("op 'GeGen'", "execute() of class GeImpl",
                  "%s:%d" % (code.co_filename, code.co_firstlineno),
                  "is a generator function"):
            self.assertIn(n, str(cm.exception))
        from ge.custom_op import get_registered_op_impls
        self.assertEqual(get_registered_op_impls(), [])  # nothing half-registered


class ResultTest(unittest.TestCase):
    def test_unawaited_result_closes_and_refuses(self):
        async def coro():
            raise AssertionError("must not run")

        def gen():
            raise AssertionError("must not run")
            yield

        async def agen():
            raise AssertionError("must not run")
            yield

        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            for make, kind in ((coro, "coroutine"), (gen, "generator"),
                               (agen, "async_generator")):
                r = make()
                with self.assertRaises(TypeError) as cm:
                    _signature.unawaited_result(r, "Late", "execute")
                self.assertIn("execute of op 'Late' returned %s %s instead of running"
                              % ("an" if kind[0] == "a" else "a", kind), str(cm.exception))
                self.assertIn(WHY, str(cm.exception))
                del r, cm
            gc.collect()
        self.assertEqual([str(w.message) for w in seen], [])  # closed: never "never awaited"
        self.assertIsNone(_signature.unawaited_result(None, "Late", "execute"))
        self.assertEqual(_signature.unawaited_result([1], "Late", "execute"), [1])


if __name__ == "__main__":
    unittest.main()
