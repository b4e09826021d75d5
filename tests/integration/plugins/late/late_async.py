"""Callbacks that become async def or generators after decoration (the
decorators refuse them, so a plugin can only do it afterwards): every call
fails with a TypeError, the coroutine or generator is closed unrun, and
nothing "succeeds" doing nothing (issue 17, item 9)."""

import pyop
from pyop import Tensor, TensorDesc


@pyop.register_op(op_type="LateInplace", mutates_args=("x",))
def late_inplace(x: TensorDesc) -> None:
    return None


@pyop.register_op_impl(op_type="LateInplace")
class LateInplaceImpl:
    def execute(self, x: Tensor) -> None:
        pass

    def compile(self, x) -> None:
        pass

    def declare_launch_args(self, x) -> None:
        pass


async def _execute(self, x):
    raise AssertionError("the coroutine must never run")


def _compile(self, x):
    raise AssertionError("the generator must never run")
    yield


async def _declare(self, x):
    raise AssertionError("the async generator must never run")
    yield


LateInplaceImpl.execute = _execute
LateInplaceImpl.compile = _compile
LateInplaceImpl.declare_launch_args = _declare


@pyop.register_op(op_type="LateInfer")
def late_infer(x: TensorDesc) -> TensorDesc:
    return x


async def _infer(x: TensorDesc) -> TensorDesc:
    return x


late_infer.__code__ = _infer.__code__
