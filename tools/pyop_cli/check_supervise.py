"""The command's side of `pyop check`: it runs the plugins in a worker
process (check_worker), reads the stream of what the worker does, and
keeps the report. A worker that dies (os._exit, C exit(), a signal) or
whose current case outlives the per-case limit costs that op (or plugin,
or load), named with the case and the stage it was in; a new worker then
goes on with the rest, so the report still covers every other op. The
normal case is one worker, started once."""

import json
import os
import selectors
import signal
import subprocess
import sys
import time

from . import config
from .check_verdict import checked, _grouped, STAGES
from .check_worker import UNLOADING
from .errors import CliError, plural

DEFAULT_CASE_TIMEOUT = 60.0  # seconds one case (or one load) may take
MAX_WORKERS = 64             # workers started for one check at most


class _Raw:
    """A case as a problem of a dead op's report names it (_grouped)."""

    def __init__(self, label, short):
        self.label, self.short = label or "", short or label or ""


def _self_command():
    """How this command runs itself: the Python running it with its flags,
    then bin/pyop (or the package directory from a source tree)."""
    script = config.SCRIPT or os.path.dirname(os.path.abspath(__file__))
    return [sys.executable] + subprocess._args_from_interpreter_flags() + [script]


def _how_it_ended(status, limit):
    """What ended a worker, said of the op: from its exit status (None: the
    command stopped it at the time limit)."""
    if status is None:
        return "did not finish within %g s (the per-case limit, --case-timeout): a hang?" % limit
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "signal %d" % -status
        return "ended the process running the check: killed by %s" % name
    return ("ended the process running the check: it exited with status %d (os._exit() or "
            "C exit() in plugin code?)" % status)


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
        argv = _self_command() + ["--library", self.lib.path]
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
        rfd, wfd = os.pipe()
        try:
            proc = subprocess.Popen(self._argv(wfd), pass_fds=(wfd,), stdin=subprocess.DEVNULL,
                                    stdout=sys.stderr.fileno(), start_new_session=True)
        except OSError as e:
            os.close(rfd)
            raise CliError("pyop check: cannot start its worker process (%s): %s"
                           % (sys.executable, e), "PYOP_ENOENT") from None
        finally:
            os.close(wfd)
        self.current, self.partial = None, None
        try:
            finished = self._read(proc, rfd)
        except BaseException:
            _stop(proc)  # Ctrl-C (or any failure here) ends the worker too
            raise
        finally:
            os.close(rfd)
        status = None if finished is None else proc.wait()
        if finished:
            return True
        if self.interrupted is not None or self.fatal is not None:
            return True
        return self._died(status)

    def _read(self, proc, rfd):
        """Handles the worker's events until its stream ends: True after
        "done", False when it ended without (a death), None when it
        outlived the limit (then stopped)."""
        sel = selectors.DefaultSelector()
        sel.register(rfd, selectors.EVENT_READ)
        buf, done = b"", False
        deadline = time.monotonic() + self.limit
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    _stop(proc)
                    return None
                if not sel.select(min(left, 1.0)):
                    if done and proc.poll() is not None:
                        return True  # finished; a process it forked holds the stream
                    continue
                chunk = os.read(rfd, 1 << 16)
                if not chunk:
                    return done
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    try:
                        ev = json.loads(line)
                    except ValueError:  # not the worker's (a plugin wrote to the pipe)
                        continue
                    done = self._event(ev) or done
                deadline = time.monotonic() + self.limit
        finally:
            sel.close()

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


def _stop(proc):
    """Ends the worker and whatever it started (its own session)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
