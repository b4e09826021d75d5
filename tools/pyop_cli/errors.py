"""The failures the command reports (one message, a status name, the op
and the plugin file:line concerned) and the messages about what is
registered."""

import difflib
import os
import re
import sys


class CliError(Exception):
    """A failure the command reports: one message, a status name (a
    PYOP_E... name, or "usage") and, where known, the op, plugin file and
    line. exit_code 2 for bad usage, 1 otherwise."""

    exit_code = 1

    def __init__(self, message, status="PYOP_EINVAL", op=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.op = op

    def to_json(self):
        file, line = _where(self.message)
        return {"status": self.status, "message": self.message,
                "op": self.op or _op_named(self.message), "file": file, "line": line}


class UsageError(CliError):
    """Bad usage: an unknown option, a malformed --input/--attr, an input or
    attribute the op does not have. Exit status 2."""

    exit_code = 2

    def __init__(self, message, op=None):
        super().__init__(message, "usage", op)


class PyopError(CliError):
    """A libpyop call failed: its status name and pyop_last_error(), which
    says what failed on what; `what` stands in when libpyop gave no text."""

    def __init__(self, what, status, detail, strerror=""):
        self.detail = detail
        self.stage = None  # "infer_meta" when infer_meta refused the inputs
        self.origin = None  # a Python exception's origin (plugins.exception_origin)
        text = detail.rstrip() if detail and detail.strip() else \
            "%s failed (%s: %s)" % (what, status, strerror)
        if "ModuleNotFoundError: " in text and "while importing pyop plugin" in text:
            text += ("\n(imported by %s, Python %s: a module installed for another Python "
                     "is not found; install it for this one, or choose another with "
                     "PYOP_PYTHON=/path/to/python)" % (sys.executable, sys.version.split()[0]))
        super().__init__(text, status)


_TB_FRAME = re.compile(r'^  File "([^"]+)", line (\d+)', re.M)


_DEFINED_AT = re.compile(r"\((?:defined at |implementation at |class at )?([^()\s]+\.py):(\d+)\)")


_IMPORTING = re.compile(r"^while importing pyop plugin (.+)$", re.M)


_OP_NAMED = re.compile(r"""(?:\bop '([^']+)'|\bof "([^"]+)"|\bop "([^"]+)"|\bop type "([^"]+)")""")


def _where(message):
    """(file, line) of the plugin code a message points at: the innermost
    traceback frame, else a "(defined at f.py:3)", else the plugin being
    imported (line None); (None, None) when it names none."""
    frames = _TB_FRAME.findall(message)
    if frames:
        return frames[-1][0], int(frames[-1][1])
    m = _DEFINED_AT.search(message)
    if m:
        return m.group(1), int(m.group(2))
    m = _IMPORTING.search(message)
    if m:
        return m.group(1).strip(), None
    return None, None


def _op_named(message):
    m = _OP_NAMED.search(message)
    return next((g for g in m.groups() if g), None) if m else None


def opp_path_note():
    """Why no plugin was loaded, when ASCEND_CUSTOM_OPP_PATH explains it."""
    value = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
    if value is None:
        return "ASCEND_CUSTOM_OPP_PATH is not set, so no plugins were loaded"
    if not value.strip(":"):
        return "ASCEND_CUSTOM_OPP_PATH is empty, so no plugins were loaded"
    return None


def plural(n, word, many=None):
    """'1 op', '2 ops', '0 ops': the count and the word, plural (many, or
    word + "s") unless n is 1. Every count the command prints goes through
    it (tests/examples/test_docs.py holds the sources to that)."""
    return "%d %s" % (n, word if n == 1 else many or word + "s")


def did_you_mean(name, known):
    """'; did you mean "gamma"?' naming the names of known close to name
    (the same but for case first, then difflib's), or "" when none is."""
    close = [k for k in known if k.lower() == name.lower() and k != name]
    close += [k for k in difflib.get_close_matches(name, known, n=3, cutoff=0.6)
              if k not in close and k != name]
    if not close:
        return ""
    return "; did you mean %s?" % " or ".join('"%s"' % k for k in close)


def _is_plugin_entry(directory, name):
    """Whether directory/name is a plugin of directory as the loader finds
    them: a .py file or a package (a directory with __init__.py, whatever
    its name ends with: a package foo.py/ loads too), its name not starting
    with _ or . (docs/op-author-guide.md, "Where plugins go")."""
    if name.startswith(("_", ".")):
        return False
    path = os.path.join(directory, name)
    if name.endswith(".py") and os.path.isfile(path):
        return True
    return os.path.isfile(os.path.join(path, "__init__.py"))


def too_deep_notes(limit=3):
    """One line per ASCEND_CUSTOM_OPP_PATH directory that holds no plugin
    but has .py files one directory down (ops/sub/my_op.py): those files
    are skipped, the line names them and the two fixes (make the directory
    a package with an __init__.py, or list it in ASCEND_CUSTOM_OPP_PATH)."""
    value = os.environ.get("ASCEND_CUSTOM_OPP_PATH") or ""
    notes = []
    for element in value.split(":"):
        if not os.path.isabs(element) or not os.path.isdir(element):
            continue
        try:
            names = sorted(os.listdir(element))
        except OSError:
            continue
        if any(_is_plugin_entry(element, n) for n in names):
            continue
        for n in names:
            sub = os.path.join(element, n)
            if n.startswith(("_", ".")) or not os.path.isdir(sub):
                continue
            try:
                files = sorted(f for f in os.listdir(sub)
                               if f.endswith(".py") and not f.startswith(("_", ".")))
            except OSError:
                continue
            if not files:
                continue
            shown = ", ".join(os.path.join(sub, f) for f in files[:limit])
            if len(files) > limit:
                shown += " and %d more" % (len(files) - limit)
            stems = ", ".join(f[:-3] for f in files)
            notes.append("%s skipped: one directory too deep (the plugins of %s are the .py "
                         "files and packages at its top); make %s a package plugin (add %s "
                         "with `from . import %s`), or list %s in ASCEND_CUSTOM_OPP_PATH"
                         % (shown, element, n, os.path.join(sub, "__init__.py"), stems, sub))
    return notes


def unknown_op_message(op_type, known):
    """'no op "X" is registered', with close names and the path's state."""
    text = 'no op "%s" is registered' % op_type
    text += did_you_mean(op_type, known)
    note = opp_path_note()
    if note:
        text += " (%s)" % note
    elif not known:
        text += " (none are registered from ASCEND_CUSTOM_OPP_PATH=%s)" \
            % os.environ["ASCEND_CUSTOM_OPP_PATH"]
    return text
