"""BaseCustomOp and EagerExecuteOp: optional base classes of GE
implementations (no base class is needed)."""

import abc

__all__ = ["BaseCustomOp", "EagerExecuteOp"]


class BaseCustomOp(abc.ABC):
    """An empty abstract base."""


class EagerExecuteOp(BaseCustomOp):
    """A base whose subclasses must override execute."""

    @abc.abstractmethod
    def execute(self, *args, **kwargs):
        raise NotImplementedError
