"""pyop.testing: `pyop check` from a test (pytest, unittest).

    import pyop.testing

    def test_scaled_add():
        pyop.testing.opcheck("ops/scaled_add.py", "ScaledAdd")

opcheck runs the same checks as `pyop check` (docs/op-author-guide.md,
"Seeing, checking and running your op"): the plugins are loaded by libpyop
as a host loads them, and each op is run on the sweep of generated inputs
(or its samples, or the inputs given), twice on one instance, from several
threads at once, against its prototype, its reference and the host
contract. It runs them in a child process, the installed `pyop` command
(`<prefix>/bin/pyop`, found from where this package is installed, or
PYOP_CLI=/path/to/pyop), so the plugins are imported there, by the build's
Python, never into the test's own process; this module needs only the
standard library and works from the pure-Python package:

    PYTHONPATH=<prefix>/lib/pyop/artifacts/<key>/python python3 -m pytest

opcheck takes what the command takes: several paths or ops, --proto files
(implementation-only GE plugins), compile options, the per-case limit. An
op that fails, is inconclusive or is not found, and a plugin that does not
load, raise OpCheckError (an AssertionError) whose message is the report;
otherwise the report (`pyop check --json`) is returned. What the plugins
print goes to the command's stderr, never into the report.
"""

import json
import os
import signal
import subprocess

__all__ = ["opcheck", "OpCheckError", "find_cli"]


class OpCheckError(AssertionError):
    """opcheck found a problem. report: the `pyop check --json` report (None
    when the command did not run)."""

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report


def find_cli():
    """The `pyop` command: PYOP_CLI, else the bin/pyop of the prefix (or
    build tree) this package is installed in; OpCheckError when there is
    none."""
    env = os.environ.get("PYOP_CLI")
    if env:
        return env
    here = os.path.dirname(os.path.realpath(__file__))
    d = here
    while True:
        cand = os.path.join(d, "bin", "pyop")
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    raise OpCheckError("pyop.testing: no `pyop` command found above %s; set "
                       "PYOP_CLI=/path/to/bin/pyop" % here)


def _attr_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (list, tuple)) for v in value):
            return json.dumps([list(v) for v in value])
        return ",".join(_attr_text(v) for v in value)
    return str(getattr(value, "name", value))


def _arguments(inputs, attrs):
    out = []
    for name, value in (inputs or {}).items():
        for v in (value if isinstance(value, (list, tuple)) else [value]):
            out += ["--input", "%s=%s" % (name, v)]
    for name, value in (attrs or {}).items():
        out += ["--attr", "%s=%s" % (name, _attr_text(value))]
    return out


def _report_text(report):
    lines = []
    err = report.get("load_error")
    if err:
        lines.append("the plugins do not load together: %s" % err["message"])
    for b in report.get("broken_plugins", []):
        lines.append("plugin %s failed to load: %s" % (b["plugin"], b["problem"]))
    for op in report.get("ops", []):
        if op["status"] in ("ok", "infer-only"):
            continue
        lines.append("%s: %s" % (op["op_type"], op["status"]))
        lines.extend("    " + p.replace("\n", "\n    ") for p in op["problems"])
        if op.get("inconclusive"):
            lines.append("    " + op["inconclusive"])
    for name in report.get("missing_ops", []):
        lines.append("%s: not found" % name)
    return "\n".join(lines)


def _many(value):
    """value as a list: one path (str, os.PathLike) or op type, or several."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or hasattr(value, "__fspath__"):
        return [os.fspath(value)]
    return [os.fspath(v) for v in value]


def _command(cli, paths, ops, inputs, attrs, proto, compile_options, case_timeout):
    cmd = [cli, "check", "--json"] + paths + ops + _arguments(inputs, attrs)
    for f in proto:
        cmd += ["--proto", f]
    for key, value in (compile_options or {}).items():
        cmd += ["--compile-option", "%s=%s" % (key, value)]
    if case_timeout is not None:
        cmd += ["--case-timeout", str(case_timeout)]
    return cmd


# Seconds a `pyop check` stopped at opcheck's timeout has to stop its workers.
_STOP_GRACE = 10.0


def _stop(p):
    """Ends the `pyop check` process p and the checks it runs: SIGINT
    first, which the command takes as Ctrl-C and answers by stopping its
    workers (each runs in a session of its own, so killing the command
    alone would leave a hung op's worker running for good), then SIGKILL
    when it has not ended within _STOP_GRACE seconds."""
    try:
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=_STOP_GRACE)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()


def opcheck(path, op_type=None, *, inputs=None, attrs=None, proto=None, compile_options=None,
            case_timeout=None, cli=None, timeout=600):
    """Checks op_type (or every op) of the plugin file or directory path as
    `pyop check PATH [OP] [--input ... --attr ...] [--proto FILE]
    [--compile-option KEY=VALUE] [--case-timeout S]` does: what the command
    takes, opcheck takes. path and op_type: one, or a list; inputs: {name:
    "DTYPE[SHAPE]:VALUES"} (a list of them for a dynamic input); attrs:
    {name: value} (inputs and attrs need exactly one op_type); proto: the
    REG_OP file(s) of implementation-only GE plugins; compile_options:
    {KEY: VALUE} the op's compile reads (OpCompileContext.get_option);
    case_timeout: seconds one case may take (the command's default
    otherwise); timeout: seconds for the whole check (past it the command
    is interrupted as by Ctrl-C, so that it stops the checks it runs, and
    killed if it does not end). Returns the report;
    raises OpCheckError with the problems when anything failed, was
    inconclusive or not found (an infer-only op passes)."""
    paths, ops = _many(path), _many(op_type)
    if (inputs or attrs) and len(ops) != 1:
        raise ValueError("opcheck: inputs/attrs need op_type (exactly one)")
    cmd = _command(cli or find_cli(), paths, ops, inputs, attrs, _many(proto), compile_options,
                   case_timeout)
    what = "pyop check %s" % " ".join(paths + ops)
    env = dict(os.environ)
    env.pop("ASCEND_CUSTOM_OPP_PATH", None)
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, env=env)
    except OSError as e:
        raise OpCheckError("pyop.testing: %s could not run: %s" % (cmd[0], e)) from None
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(p)
        raise OpCheckError("%s did not finish within %g s (opcheck's timeout; each case has "
                           "its own limit, case_timeout)" % (what, timeout)) from None
    except BaseException:
        _stop(p)
        raise
    try:
        report = json.loads(stdout)
    except ValueError:
        raise OpCheckError("%s failed (exit %d) without a report: %s%s" % (
            what, p.returncode, stderr.strip(),
            "\nstdout: %s" % stdout[:2000] if stdout.strip() else ""))
    if "error" in report and "ops" not in report:
        err = report["error"]
        if p.returncode == 2:
            raise ValueError("opcheck: %s" % err["message"])
        raise OpCheckError("pyop check: %s" % err["message"], report)
    if p.returncode != 0:
        raise OpCheckError("%s: %s\n%s" % (
            what, "inconclusive" if p.returncode == 3 else "failed", _report_text(report)),
            report)
    return report
