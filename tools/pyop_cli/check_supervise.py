"""The command's side of `pyop check`: it runs the plugins in a worker
process (check_worker), reads the stream of what the worker does, and
keeps the report. A worker that dies (os._exit, C exit(), a signal) or
whose current case outlives the per-case limit costs that op (or plugin,
or load), named with the case and the stage it was in; a new worker then
goes on with the rest, so the report still covers every other op. The
normal case is one worker, started once."""

import json
import os

from .check_verdict import checked, _grouped, STAGES
from .check_worker import UNLOADING
from .errors import plural
from .proto import merge_binding
from .supervise import DEFAULT_TIMEOUT, how_it_ended, read_events, self_command, spawn, stop

DEFAULT_CASE_TIMEOUT = DEFAULT_TIMEOUT  # seconds one case (or one load) may take
MAX_WORKERS = 64             # workers started for one check at most


class _Raw:
    """A case as a problem of a dead op's report names it (_grouped)."""

    def __init__(self, label, short):
        self.label, self.short = label or "", short or label or ""


def _how_it_ended(status, limit):
    """What ended a worker, said of the op (None: stopped at the limit)."""
    return how_it_ended(status, limit, "the per-case limit, --case-timeout",
                        "the process running the check")


class Supervisor:
    """Runs the check's job in workers until every op and plugin has been
    reported; collects the report."""

    def __init__(self, lib, args, job, limit):
        self.lib, self.args, self.job, self.limit = lib, args, job, limit
        self.ops, self.broken, self.warnings = [], [], []
        self.load_error = None
        self.interrupted = None
        self.fatal = None
        self.current = None   # the last activity event
        self.partial = None   # the op running: {"begin", "ran", "problems"}

    def _argv(self, wfd):
        argv = self_command() + ["--library", self.lib.path]
        if getattr(self.args, "lanes", 0):
            argv += ["--lanes", str(self.args.lanes)]
        argv += ["check", "--_worker", str(wfd), "--_job", json.dumps(self.job)]
        for flag, values in (("--proto", self.args.proto), ("--input", self.args.input),
                             ("--attr", self.args.attr)):
            for v in values or []:
                argv += [flag, v]
        return argv

    def run(self):
        """The report: the job run to its end, worker after worker (after
        MAX_WORKERS deaths, what is left unchecked is a broken plugin entry:
        the report still shows everything seen)."""
        for _ in range(MAX_WORKERS):
            if self._one_worker():
                return
        self.broken.append({"plugin": ":".join(self.job["paths"]), "problem": (
            "%s running the check died; the ops not reported above were not "
            "checked" % plural(MAX_WORKERS, "process", "processes"))})

    def _one_worker(self):
        """Runs one worker; True when the job is done (or cannot go on)."""
        proc, rfd = spawn(self._argv)
        self.current, self.partial = None, None
        try:
            finished = read_events(proc, rfd, self.limit, self._event)
        except BaseException:
            stop(proc)  # Ctrl-C (or any failure here) ends the worker too
            raise
        finally:
            os.close(rfd)
        status = None if finished is None else proc.wait()
        if finished:
            return True
        if self.interrupted is not None or self.fatal is not None:
            return True
        return self._died(status)

    def _event(self, ev):
        """Takes one event; True for "done"."""
        kind = ev["e"]
        if kind == "op_begin":
            self.partial = {"begin": ev, "ran": [], "problems": [], "stages": {},
                            "refusals": []}
            self.current = dict(ev, e="activity", case=None, short=None,
                                stage="preparing its cases (its samples function runs here)")
        elif kind == "activity" and self.partial is not None and ev.get("stage") in STAGES:
            self.current = ev
            stages = self.partial["stages"]
            stages[ev["stage"]] = stages.get(ev["stage"], 0) + 1
        elif kind == "activity":
            self.current = ev
        elif kind == "ran" and self.partial is not None:
            self.partial["ran"].append(ev["short"])
        elif kind == "refused" and self.partial is not None:
            self.partial["refusals"].append(ev["refusal"])
        elif kind == "problem" and self.partial is not None:
            self.partial["problems"].append((_Raw(ev["case"], ev["short"]), ev["text"]))
        elif kind == "op":
            self.ops.append(ev["entry"])
            self.job["done"].append([ev["entry"]["plugin"], ev["entry"]["op_type"]])
            self.partial = None
            self.current = {"e": "activity", "plugin": ev["entry"]["plugin"], "op": None,
                            "stage": None, "between": True}
        elif kind == "broken":
            self.broken.append({"plugin": ev["plugin"], "problem": ev["problem"]})
        elif kind == "plugin_done":
            self.job["done_plugins"].append(ev["plugin"])
        elif kind == "load_error":
            self.load_error = ev["error"]
        elif kind == "phase":
            self.job["phase"] = ev["phase"]
        elif kind == "protos":
            merge_binding(ev)
        elif kind == "warning":
            self.warnings.append(ev["text"])
        elif kind == "threads":
            self.warnings.append(
                "a plugin left %s running (%s): the check did not wait for %s, as a C "
                "host's pyop_shutdown does not" % (
                    "a thread" if len(ev["names"]) == 1 else "%d threads" % len(ev["names"]),
                    ", ".join(ev["names"]), "it" if len(ev["names"]) == 1 else "them"))
        elif kind == "interrupted":
            self.interrupted = ev["text"]
        elif kind == "fatal":
            self.fatal = ev
        return kind == "done"

    def _died(self, status):
        """The worker ended before "done" (status None: stopped at the
        limit): blames what it was doing and lets the next worker go on
        without it. True when nothing can go on."""
        cur, how = self.current, _how_it_ended(status, self.limit)
        if cur is None:
            self.fatal = {"exit": 1, "error": {
                "status": "PYOP_EINTERNAL", "op": None, "file": None, "line": None,
                "message": "pyop check: its worker process %s before it reported anything"
                           % how.replace("ended the process running the check: ", "")}}
            return True
        if cur.get("op") is not None:
            self._op_died(cur, how)
        elif cur.get("stage") == UNLOADING:  # its ops were all checked and reported
            self.broken.append({"plugin": cur["plugin"], "problem": (
                "while it was unloaded after its check, the plugin %s" % how)})
            if self.job["phase"] == "together":
                return True
            self.job["done_plugins"].append(cur["plugin"])
        elif cur.get("between"):
            self.broken.append({"plugin": cur["plugin"], "problem": (
                "between the checks of two of its ops (a thread the plugin started?), the "
                "plugin %s" % how)})
        elif self.job["phase"] == "together":
            self.load_error = {"status": "PYOP_EPLUGIN", "op": None, "file": None,
                               "line": None, "message": "the plugins, imported together (%s), "
                               "%s" % (cur["plugin"], how)}
            self.job["phase"] = "each"
        else:
            self.broken.append({"plugin": cur["plugin"],
                                "problem": "imported alone, the plugin %s" % how})
            self.job["done_plugins"].append(cur["plugin"])
        return False

    def _op_died(self, cur, how):
        """The report of the op whose check the worker died in (or hung):
        failed, naming the case and the stage, with the cases that ran
        before and the problems already found."""
        partial = self.partial or {"begin": cur, "ran": [], "problems": [], "stages": {},
                                   "refusals": []}
        stage = cur.get("stage") or "its check"
        if cur.get("case") and stage.startswith("run from"):
            text = "%s: the op %s" % (stage, how)  # the concurrency run of that case
        elif cur.get("case"):
            text = "%s %s" % (stage, how)
        else:
            text = "while %s, the op %s" % (stage, how)
        case = _Raw(cur.get("case") or "op %s" % cur["op"], cur.get("short"))
        raw = partial["problems"] + [(case, text)]
        refusals = partial["refusals"]
        entry = {"op_type": cur["op"], "status": "failed", "checked": checked(partial["stages"]),
                 "inputs": partial["begin"].get("inputs", "generated"), "cases": 0,
                 "ran": partial["ran"], "refused": [r["case"] for r in refusals],
                 "refusals": refusals,
                 "problems": _grouped(raw), "warnings": [], "notes": [
                     "the check of this op stopped there; the other ops were checked in a "
                     "new process"], "inconclusive": None, "why": None, "stages": partial["stages"],
                 "deterministic": None, "reference": None, "threads": 0,
                 "source": partial["begin"].get("source"), "plugin": cur["plugin"]}
        self.ops.append(entry)
        self.job["done"].append([cur["plugin"], cur["op"]])

