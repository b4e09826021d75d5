"""Helpers shared by the ops of this package (imported relatively)."""

def numel(shape):
    """Number of elements of a shape (1 for a scalar)."""
    n = 1
    for d in shape:
        n *= d
    return n
