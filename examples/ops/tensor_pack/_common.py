"""Helpers shared by the ops of this package (imported relatively)."""

import contextlib


def numel(shape):
    """Number of elements of a shape (1 for a scalar)."""
    n = 1
    for d in shape:
        n *= d
    return n


@contextlib.contextmanager
def flat_view(t, fmt):
    """A flat memoryview of tensor t with struct format fmt ("f" for float32,
    "B" for raw bytes), released on exit. memoryview casts between two
    non-byte formats only through bytes, hence the cast("B") in between; and
    every view must be released before the callback returns."""
    with memoryview(t) as m, m.cast("B") as b:
        if fmt == "B":
            yield b
        else:
            with b.cast(fmt) as f:
                yield f
