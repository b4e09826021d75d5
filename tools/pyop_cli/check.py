"""`pyop check`: loads the plugins as a host does and runs each op on
generated inputs, its samples or the inputs given, checking it against its
prototype and the host contract. The plugins run in a worker process
(check_worker) that the command supervises (check_supervise), so an op
that ends the process or hangs is reported as such and the others are
still checked; the cases are in check_cases, the rules of a verdict in
check_verdict."""

import os
import sys

from . import config
from .check_supervise import DEFAULT_CASE_TIMEOUT, Supervisor
from .errors import CliError, UsageError, plural, too_deep_notes
from .host import check_paths, compile_options, _other_python_note, SCAN_SPACE
from .output import say
from .proto import note_unused
from .values import dump_json

# Exit status when nothing failed but some op never ran on data (its
# infer_meta refused every generated input, it waits for a prototype, it
# needs an NPU, ...): not a pass, not a failure.
EXIT_INCONCLUSIVE = 3


def _check_target_kind(t):
    return "path" if (not t or os.path.exists(t) or os.sep in t or t.endswith(".py")) else "op"


def _job(lib, args):
    """What the workers do: the paths (the arguments, else the elements of
    ASCEND_CUSTOM_OPP_PATH), the ops named, the compile options."""
    targets = args.target or []
    paths = [t for t in targets if _check_target_kind(t) == "path"]
    ops = [t for t in targets if _check_target_kind(t) == "op"]
    if (args.input or args.attr) and len(ops) != 1:
        raise UsageError("--input/--attr need exactly one OP to check")
    check_paths(paths)
    given = bool(paths)
    if given:
        value = ":".join(os.path.abspath(p) for p in paths)
    else:
        value = os.environ.get("ASCEND_CUSTOM_OPP_PATH", "")
    paths, skipped = _scanned(lib, value)
    if not paths and skipped:
        raise CliError("nothing to check: %s" % "; ".join(skipped), "PYOP_ENOENT")
    if not paths:
        raise UsageError("nothing to check: give plugin paths or set ASCEND_CUSTOM_OPP_PATH")
    return {"paths": paths, "ops": ops, "given": given, "phase": "together", "done": [],
            "done_plugins": [], "compile_options": compile_options(args),
            "skipped": skipped}


# The verdicts of elements libpyop's scan skips with a warning (src/scan.c
# mark_skipped): a load never imports them.
_SKIPPED = ("relative", "unreadable", "not-python", "missing-dir")


def _scanned(lib, value):
    """The ASCEND_CUSTOM_OPP_PATH value as libpyop's own scan reads it (the
    elements of pyop_doctor: split at ':', the whitespace around each
    dropped, empty ones ignored, relative ones refused): (the elements a
    load takes, in order, the texts of those it skips, in libpyop's words:
    "ASCEND_CUSTOM_OPP_PATH element 'ops' skipped: relative path refused
    (...)")."""
    from .doctor import parse_doctor_report  # doctor imports host, which check imports
    if not value.strip(":" + SCAN_SPACE):
        return [], []
    saved = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
    os.environ["ASCEND_CUSTOM_OPP_PATH"] = value
    try:
        elements = parse_doctor_report(lib.doctor())["path"]
    finally:
        if saved is None:
            del os.environ["ASCEND_CUSTOM_OPP_PATH"]
        else:
            os.environ["ASCEND_CUSTOM_OPP_PATH"] = saved
    taken = [e["element"] for e in elements if e["verdict"] not in _SKIPPED]
    skipped = ["ASCEND_CUSTOM_OPP_PATH element '%s' skipped: %s"
               % (e["element"], e["detail"] or e["verdict"])
               for e in elements if e["verdict"] in _SKIPPED]
    return taken, skipped


def _case_timeout(args):
    limit = getattr(args, "case_timeout", None)
    if limit is None:
        return DEFAULT_CASE_TIMEOUT
    if not 0 < limit <= 86400:
        raise UsageError("--case-timeout %g: expected seconds, more than 0 (at most a day)"
                         % limit)
    return limit


def cmd_check(lib, args):
    if getattr(args, "_worker", None) is not None:
        from .check_worker import serve
        serve(lib, args)  # never returns: the worker ends its process
    job = _job(lib, args)
    sup = Supervisor(lib, args, job, _case_timeout(args))
    sup.run()
    sup.warnings[:0] = job["skipped"]  # as libpyop's load warns of them
    note_unused("check")  # before the report's last line; each once, of every worker
    if sup.interrupted is not None:
        raise KeyboardInterrupt(sup.interrupted)
    if sup.fatal is not None:
        err = sup.fatal["error"]
        if sup.fatal.get("exit") == 2:
            raise UsageError(err["message"], err.get("op"))
        raise CliError(err["message"], err["status"], err.get("op"))
    return _report(args, job, sup)


def _load_error(sup):
    """The combined load's failure to show, or None: not when a plugin that
    fails alone is that failure (it is reported in full). With no op loaded
    at all it is the command's error (raised)."""
    err = sup.load_error
    if err is None:
        return None
    if not sup.ops:
        raise CliError(err["message"], err["status"], err.get("op"))
    lines = err["message"].splitlines()
    first = lines[0] if lines else ""
    if any(b["problem"].splitlines()[:1] == [first] for b in sup.broken):
        return None
    return err


def _report(args, job, sup):
    """Prints the report; the exit status."""
    report, broken = sup.ops, sup.broken
    load_error = _load_error(sup)
    missing = [o for o in job["ops"] if o not in {r["op_type"] for r in report}]
    count = {s: sum(1 for r in report if r["status"] == s)
             for s in ("failed", "inconclusive", "infer-only")}
    other = _other_python_note()
    if args.json:
        dump_json({"ops": report, "failed": count["failed"],
                   "inconclusive": count["inconclusive"], "infer_only": count["infer-only"],
                   "broken_plugins": broken, "load_error": load_error,
                   "missing_ops": missing, "warnings": sup.warnings,
                   "python": {"executable": sys.executable,
                              "is_build_python": other is None if config.BUILD_PYTHON else None}})
    else:
        _print_text(report, broken, load_error, missing, sup.warnings, other, count)
    if count["failed"] or broken or missing or not report or load_error:
        why = ("%s failed to load" % plural(len(broken), "plugin") if broken else
               "the plugins do not load together: %s"
               % load_error["message"].splitlines()[0] if load_error else
               "%d of %s failed" % (count["failed"], plural(len(report), "op"))
               if count["failed"] else
               "op(s) not found: %s" % ", ".join(missing) if missing else "0 ops checked")
        sys.stderr.write("pyop: check: %s\n" % why)
        return 1
    if count["inconclusive"]:
        # Not a pass: nothing failed, but some op never ran on data.
        whys = ["%s (%s)" % (r["op_type"], r["why"]) for r in report
                if r["status"] == "inconclusive"]
        sys.stderr.write("pyop: check: %d of %s inconclusive: %s\n"
                         % (count["inconclusive"], plural(len(report), "op"), "; ".join(whys)))
        return EXIT_INCONCLUSIVE
    return 0


def _print_text(report, broken, load_error, missing, warnings, other, count):
    """The report as text: notes, load failures, each op and its lines, the
    summary."""
    if other:
        say("note: " + other)
    if load_error:
        say("load of all plugins together: FAILED (%s)" % load_error["status"])
        say("    " + load_error["message"].rstrip().replace("\n", "\n    "))
        say("    (a host loads them together and refuses them; each plugin is "
            "checked alone below)")
    for b in broken:
        say("plugin %s: FAILED to load" % b["plugin"])
        say("    " + b["problem"].rstrip().replace("\n", "\n    "))
    for r in report:
        say("%-24s %s (%s; %s)" % (r["op_type"], r["status"],
                                    ", ".join(r["checked"]) or (
                                        "implementation only" if r.get("pending")
                                        else "nothing ran"), r["inputs"]))
        for line in _report_lines(r):
            say("    " + line.rstrip("\n").replace("\n", "\n      "))
    for o in missing:
        say("%-24s not found" % o)
    for w in warnings:
        say("warning: " + w)
    # (infer-only ops count as neither: their own lines say what ran)
    say("%s checked, %d failed%s%s%s"
        % (plural(len(report), "op"), count["failed"],
           ", %d inconclusive" % count["inconclusive"] if count["inconclusive"] else "",
           ", %s failed to load" % plural(len(broken), "plugin") if broken else "",
           ", the plugins do not load together" if load_error else ""))
    if not report:
        for note in too_deep_notes():
            say("  " + note)


def _ran_line(r):
    """ran: the stages that ran, on which cases, and how."""
    stages = [s for s in ("infer_meta", "compile", "declare_launch_args", "execute",
                          "launch") if r["stages"].get(s)]
    ref = r.get("reference")
    how = "" if not (r["stages"].get("execute") or r["stages"].get("launch")) else (
        " (each twice on one instance%s%s%s)"
        % ("" if r.get("deterministic", True) is not False
           else "; nondeterministic: values not compared",
           "; compared with the reference, rtol=%g atol=%g" % tuple(ref) if ref else "",
           ", and from %d threads at once" % r["threads"] if r.get("threads") else ""))
    return "ran: %s%s%s" % ("%s on " % ", ".join(stages) if stages else "",
                            ", ".join(r["ran"]), how)


def _refused_line(r):
    """infer_meta refused: the cases, grouped by where the refusal was
    raised, with the first of its messages."""
    by = {}
    for x in r.get("refusals") or []:
        by.setdefault((x["file"], x["line"], x["reason"].split(":", 1)[0]), []).append(x)
    return "infer_meta refused: %s" % "; ".join(
        "%s (%s, %s:%d)" % (", ".join(x["case"] for x in group), group[0]["reason"],
                            file, line) for (file, line, _), group in by.items())


def _report_lines(r):
    """The lines under an op's verdict: problems, the reason it is
    inconclusive or infer-only, what ran, what infer_meta refused and why,
    notes, warnings."""
    lines = list(r["problems"])
    if r.get("inconclusive"):
        lines.append("inconclusive: " + r["inconclusive"])
    if r["status"] == "infer-only":
        lines.append("infer-only: no implementation is loaded; infer_meta ran and its "
                     "outputs were held to the prototype (a host plans with it and computes "
                     "elsewhere: nothing ran on data)")
    if r.get("ran"):
        lines.append(_ran_line(r))
    if r.get("refusals") and r.get("ran"):
        lines.append(_refused_line(r))
    lines.extend("note: " + n for n in r.get("notes", []))
    lines.extend("warning: " + w for w in r.get("warnings", []))
    return lines
