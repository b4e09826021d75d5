"""Formatting exceptions for pyop_last_error(). Pure Python."""

import traceback

__all__ = ["format_exception"]


def format_exception(exc):
    """'Type: message' followed by the formatted traceback (with notes)."""
    head = "%s: %s" % (type(exc).__name__, exc)
    try:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:  # never let formatting hide the original error
        return head
    return head + "\n" + text.rstrip("\n")
