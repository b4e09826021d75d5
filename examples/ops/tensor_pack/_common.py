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
    every view must be released before the callback returns. An empty
    tensor (a 0 in its shape) gets an empty view: memoryview cannot cast a
    view with a 0 in its shape."""
    if t.nbytes == 0:
        with memoryview(bytearray()) as b, b.cast(fmt) as f:
            yield f
        return
    with memoryview(t) as m, m.cast("B") as b:
        if fmt == "B":
            yield b
        else:
            with b.cast(fmt) as f:
                yield f
