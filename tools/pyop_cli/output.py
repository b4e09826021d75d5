"""Where the command's output goes, for every subcommand alike: its result
(a listing, a report, a run's values, --json) to stdout; everything else
to stderr -- above all whatever plugin code prints, through print() or C
writes to fd 1, in any thread and at any moment (an import, a callback,
an unload, a thread it left running).

main() holds command_output() for the whole command: while it is active
fd 1 and sys.stdout are stderr's, and the command writes its result with
say() (dump_json too) to a private copy of the original stdout. When a
thread (a plugin's daemon thread) is still running at its end, they stay
stderr's: what it prints while the process ends goes to stderr too. A
worker process the command starts gets result_fd() as its stdout, so what
it says is the command's result, and holds its own command_output() in
turn. Before an exec (PYOP_PYTHON), release() gives fd 1 back.
"""

import io
import os
import sys
import threading

_result = None  # the result's text stream while command_output() is active
_saved = None   # sys.stdout as it was before command_output()


def say(text=""):
    """One line of the command's result (print()'s place in the commands)."""
    write("%s\n" % (text,))


def write(text):
    """Text of the command's result, as it is (argparse's --help)."""
    (_result if _result is not None else sys.stdout).write(text)


def result_fd():
    """The file descriptor the result goes to (a worker's stdout)."""
    if _result is not None:
        _result.flush()
        return _result.fileno()
    sys.stdout.flush()
    return sys.stdout.fileno()


def flush():
    """Flushes the result, stdout and stderr (before the process ends)."""
    for f in (_result, sys.stdout, sys.stderr):
        try:
            if f is not None:
                f.flush()
        except (OSError, ValueError):
            pass


def discard():
    """The reader of the result went away (`pyop list | head`): whatever is
    still written to it is dropped, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, result_fd() if _result is None else _result.fileno())
    os.close(devnull)


def release():
    """Ends command_output() early: the result flushed, fd 1 and sys.stdout
    the original stdout again (before an exec). A no-op when inactive."""
    global _result
    if _result is None:
        return
    result, _result = _result, None
    for f in (result, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):  # a reader gone: nothing more to say
            pass
    sys.stdout = _saved
    os.dup2(result.fileno(), 1)
    try:
        result.close()
    except (OSError, ValueError):
        pass


class command_output:
    """Context manager: the result to the original stdout (say), every other
    write to fd 1 or sys.stdout to stderr; on exit the result is flushed
    and closed, and fd 1 and sys.stdout are stdout again unless a thread
    other than this one is still running (it could print)."""

    def __enter__(self):
        global _result, _saved
        assert _result is None, "command_output is not reentrant"
        sys.stdout.flush()
        _saved = sys.stdout
        fd = os.dup(1)
        _result = io.TextIOWrapper(io.FileIO(fd, "w"), encoding=sys.stdout.encoding,
                                   errors=sys.stdout.errors, line_buffering=True)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        return self

    def __exit__(self, *exc):
        global _result
        if threading.active_count() <= 1:
            release()
            return False
        result, _result = _result, None
        if result is not None:
            try:
                result.flush()
                result.close()
            except (OSError, ValueError):  # a reader gone: nothing more to say
                pass
        return False
