"""Formatting exceptions for pyop_last_error(). Pure Python."""

import os
import threading
import traceback

__all__ = ["format_exception", "last_origin", "blame", "plural"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# The GE compatibility package shipped next to pyop (python/ge).
_GE_DIR = os.path.join(os.path.dirname(_PACKAGE_DIR), "ge")


def _is_machinery(filename):
    """pyop's own modules, libpyop's ge package and importlib's frozen
    frames: not the plugin's."""
    if filename.startswith("<frozen importlib"):
        return True
    d = os.path.dirname(os.path.abspath(filename))
    return d == _PACKAGE_DIR or d == _GE_DIR or d.startswith(_GE_DIR + os.sep)


def plural(n, word, many=None):
    """'1 output', '2 outputs': the count and the word, plural (many, or
    word + "s") unless n is 1, for every count a message gives."""
    return "%d %s" % (n, word if n == 1 else many or word + "s")


def blame(exc, file, line, name):
    """Marks exc as the fault of the plugin's definition at file:line (name:
    its function or class, for the frame line), found by one of pyop's
    checks after the plugin's own code ran (a signature checked when the
    load binds an implementation to its prototype): format_exception then
    shows that place as the traceback instead of pyop's frames. Returns
    exc."""
    try:
        exc.__pyop_blame__ = (file, line, name)
    except AttributeError:  # an exception type without a __dict__
        pass
    return exc


def _plugin_frames(te, exc):
    """What to show of a traceback whose every frame is pyop's or
    importlib's: the plugin's place when the error is the plugin's (a
    SyntaxError in its file, which shows that place itself; a definition
    pyop blamed), else None (the error is pyop's own: keep its frames)."""
    if isinstance(exc, SyntaxError) and exc.filename and not _is_machinery(exc.filename):
        return []
    where = getattr(exc, "__pyop_blame__", None)
    if where is not None:
        file, line, name = where
        return [traceback.FrameSummary(file, line, name)]
    return None


def _trim(te, exc, seen):
    """Drops machinery frames from te (the TracebackException of exc) and
    the exceptions chained to it. A traceback made only of machinery frames
    is kept whole when the error is pyop's own (its frames are all there is
    to show), and replaced by the plugin's place when it is the plugin's
    (_plugin_frames)."""
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    kept = [f for f in te.stack if not _is_machinery(f.filename)]
    if not kept and te.stack:
        kept = _plugin_frames(te, exc)
    if kept is not None and len(kept) != len(te.stack):
        te.stack = traceback.StackSummary.from_list(kept)
    _trim(te.__cause__, getattr(exc, "__cause__", None), seen)
    _trim(te.__context__, getattr(exc, "__context__", None), seen)
    subs = getattr(exc, "exceptions", None) or ()
    for k, sub in enumerate(getattr(te, "exceptions", None) or ()):
        _trim(sub, subs[k] if k < len(subs) else None, seen)


def _safe_str(exc):
    """str(exc), or what made it fail: an exception whose __str__ raises
    still names its type and keeps its traceback."""
    try:
        return str(exc)
    except Exception as e:  # noqa: BLE001 (the original error must not be lost)
        try:
            why = "%s: %s" % (type(e).__name__, e)
        except Exception:  # noqa: BLE001
            why = type(e).__name__
        return "<exception str() failed: %s>" % why


_origin = threading.local()


def last_origin():
    """(the class names of the exception's type (its MRO), the file and line
    of the innermost frame of its traceback before pyop's frames are
    trimmed, "Type: first line of its message") of the last exception
    format_exception described on this thread, or None; consumed (a second
    call returns None). What `pyop check` reads to tell an exception a
    plugin raised itself from one raised inside a library it called."""
    value = getattr(_origin, "value", None)
    _origin.value = None
    return value


def _record_origin(exc, head):
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = (tb.tb_frame.f_code.co_filename, tb.tb_lineno) if tb is not None else (None, None)
    _origin.value = ((tuple(c.__name__ for c in type(exc).__mro__),) + where
                     + (head.split("\n", 1)[0],))


def format_exception(exc):
    """'Type: message' followed by the formatted traceback (with notes),
    showing the plugin's frames without pyop's and importlib's (_trim); records the
    exception's origin (last_origin)."""
    head = "%s: %s" % (type(exc).__name__, _safe_str(exc))
    try:
        _record_origin(exc, head)
    except Exception:  # noqa: BLE001 (never let the record hide the original error)
        _origin.value = None
    try:
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
        _trim(te, exc, set())
        text = "".join(te.format())
    except Exception:  # never let formatting hide the original error
        return head
    return head + "\n" + text.rstrip("\n")
