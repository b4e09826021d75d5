"""What several commands share: the plugin path, the Python running the
command, the inputs and attributes of the command line, and running one op
as a host does (instance.Instance, run_op)."""

import os
import sys
import threading

from . import config, output
from .errors import UsageError, did_you_mean
from .instance import Instance, RunResult, run_op  # noqa: F401 (shared by the commands)
from .values import numel, parse_attr_text, parse_input, _sample_values


# The whitespace libpyop's scan drops around an element (src/scan.c, is_space).
SCAN_SPACE = " \t\n\v\f\r"


def check_paths(paths):
    """Plugin path arguments become ASCEND_CUSTOM_OPP_PATH elements as they
    are (made absolute): one libpyop's scan (src/scan.c) would read as
    another path cannot be passed (UsageError): one containing ':' (it
    separates elements), one starting or ending with whitespace (dropped
    around an element, as GE does), an empty one (ignored: it would never
    mean the current directory)."""
    for p in paths or []:
        if ":" in p:
            raise UsageError("%s: a plugin path cannot contain ':' (it separates "
                             "ASCEND_CUSTOM_OPP_PATH elements); rename it or link it from a "
                             "path without one" % p)
        if not p:
            raise UsageError("an empty plugin path: libpyop ignores an empty "
                             "ASCEND_CUSTOM_OPP_PATH element (it never means the current "
                             "directory); give the directory")
        if p.strip(SCAN_SPACE) != p:
            raise UsageError("%r: a plugin path cannot start or end with whitespace (libpyop "
                             "drops the whitespace around an ASCEND_CUSTOM_OPP_PATH element, "
                             "as GE does, so it would load %r); rename it or link to it from a "
                             "path without such whitespace" % (p, p.strip(SCAN_SPACE)))


def with_opp_path(paths):
    check_paths(paths)
    if paths:
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = ":".join(os.path.abspath(p) for p in paths)


def ge_status_lines(bridge_loaded=True):
    """What serves `import ge` for GE-style plugins in this process (the
    bridge runs in this interpreter): libpyop's compatibility package, or a
    real CANN ge imported before the load (then left alone); nothing of
    libpyop's while no bridge is loaded (the package comes with one)."""
    mod = sys.modules.get("ge")
    if mod is not None and getattr(mod, "__pyop_ge__", False) is not True:
        where = getattr(mod, "__file__", None) or repr(mod)
        return ["ge: a CANN `ge` package is already imported (%s); libpyop does not replace "
                "it, so GE-style plugins register with it and libpyop sees none of their ops"
                % where]
    if not bridge_loaded:
        return ["ge: nothing serves GE-style plugins yet: no bridge is loaded (libpyop's GE "
                "compatibility package, python/ge of the bridge artifact, comes with the "
                "bridge, which a load opens for the Python plugins of "
                "ASCEND_CUSTOM_OPP_PATH)"]
    lines = ["ge: libpyop's GE compatibility package (python/ge of the bridge artifact) "
             "serves GE-style plugins (host-only: NPU launches and pyACL are unavailable)"]
    link = sys.modules.get("pyop._ge_link")  # shadowed(): on sys.path, not sys.modules
    other = link.shadowed() if hasattr(link, "shadowed") else None
    if other is None and mod is None:
        try:
            import importlib.util
            spec = importlib.util.find_spec("ge")
        except (ImportError, ValueError):
            spec = None
        other = spec.origin if spec is not None else None
    if other is not None:
        lines.append("ge: note: a `ge` package is installed at %s; it is used instead "
                     "only when the host imports it before pyop_load" % other)
    return lines


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _inputs_from_args(info, args):
    """One list of (dtype, shape, values) per prototype input from --input
    (run's, bench's, check's: args has no op for check, so every error
    names info's op type)."""
    given = {}
    for text in args.input or []:
        name, dtype, shape, values = parse_input(text)
        if values is None:
            values = _sample_values(dtype, numel(shape), 0)
        given.setdefault(name, []).append((dtype, shape, values))
    names = [i["name"] for i in info["inputs"]]
    for name in given:
        if name not in names:
            raise UsageError('op "%s" has no input "%s" (inputs: %s)%s'
                             % (info["op_type"], name, ", ".join(names) or "none",
                                did_you_mean(name, names)), info["op_type"])
    inputs = []
    for i in info["inputs"]:
        slot = given.get(i["name"], [])
        if i["kind"] == "required" and len(slot) != 1:
            raise UsageError('input "%s" of "%s" is required: give --input %s=DTYPE[SHAPE]:VALUES'
                             % (i["name"], info["op_type"], i["name"]), info["op_type"])
        if i["kind"] == "optional" and len(slot) > 1:
            raise UsageError('input "%s" is optional: give it at most once' % i["name"],
                             info["op_type"])
        inputs.append(slot)
    return inputs


def _attrs_from_args(info, args):
    """{name: value} from --attr NAME=VALUE (a Tensor attribute as
    DTYPE[SHAPE]:VALUES)."""
    types = {a["name"]: a["type"] for a in info["attrs"]}
    attrs = {}
    for text in args.attr or []:
        if "=" not in text:
            raise UsageError("--attr %s: expected NAME=VALUE" % text, info["op_type"])
        name, value = text.split("=", 1)
        if name not in types:
            raise UsageError('op "%s" has no attribute "%s" (it has: %s)%s'
                             % (info["op_type"], name, ", ".join(types) or "none",
                                did_you_mean(name, list(types))), info["op_type"])
        attrs[name] = parse_attr_text(value, types[name], name, info["op_type"])
    return attrs


def _other_python_note(verb="checked"):
    """A line saying this command runs under another Python than the build's
    (the one a C host with start_python runs), or None."""
    if config.BUILD_PYTHON is None or _same_file(sys.executable, config.BUILD_PYTHON):
        return None
    return ("%s under %s, NOT the build's Python %s, which a C host with "
            "start_python runs: ops may import (and time) differently there (e.g. "
            "numpy); PYOP_PYTHON=%s runs this command under it"
            % (verb, sys.executable, config.BUILD_PYTHON, config.BUILD_PYTHON))


def _warn_other_python(command, verb):
    """run and bench: the note on stderr (their stdout is the result)."""
    note = _other_python_note(verb)
    if note:
        sys.stderr.write("pyop: %s: note: %s\n" % (command, note))


def compile_options(args):
    """{KEY: VALUE} of --compile-option KEY=VALUE (UsageError when one has no
    '=' or an empty key; the last of a key wins, as a dict does)."""
    out = {}
    for text in getattr(args, "compile_option", None) or []:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise UsageError("--compile-option %s: expected KEY=VALUE" % text)
        out[key] = value
    return out


def set_compile_options(options):
    """Gives the loaded plugins the compile options as a GE host gives them
    (ge.custom_op.context.set_compile_options: OpCompileContext.get_option
    reads them); a warning text when options were given and no GE plugin is
    loaded to read them (pyop's own compile context takes no options), else
    None. Called after each load, before any compile."""
    if not options:
        return None
    ctx = sys.modules.get("ge.custom_op.context")
    if ctx is None or not hasattr(ctx, "set_compile_options"):
        return ("--compile-option: no GE plugin is loaded, so no compile reads the options "
                "(pyop's own compile context takes none)")
    ctx.set_compile_options(dict(options))
    return None


def stray_threads():
    """The threads still running that keep a Python process alive at exit
    (not daemon threads): what a plugin started and left running."""
    return [t for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon and t.is_alive()]


def end_now(code):
    """Ends the process with code at once, stdout and stderr flushed first,
    waiting for no thread a plugin left running (os._exit)."""
    output.flush()
    os._exit(code)
