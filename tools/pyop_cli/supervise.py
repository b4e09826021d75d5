"""Running plugin code in a worker process the command watches, so that an
op that ends the process (os._exit(), C exit(), a signal) or never returns
costs a clear failure naming the op and what it was doing, never a silent
exit 0 or a hang. `check` runs its jobs this way (check_supervise: many
ops, a new worker after a death); `run` and `bench` run their one op this
way (run_in_worker here).

The worker is this command run again (self_command) with a pipe, on which
it writes one JSON object per line: {"e": "activity", "stage": ...,
"calls": N} before each step that runs plugin code (the limit for that
step is N times the per-call limit), and {"e": "done", "code": C} when it
has finished, its result said (on the command's stdout, which is its
own). A worker whose stream ends without "done" died; one silent for
longer than its limit hung and is stopped. A worker ends without waiting
for a thread a plugin left running, as a C host's pyop_shutdown does not.
"""

import json
import os
import selectors
import signal
import subprocess
import sys
import time

from . import config, output
from .errors import CliError

DEFAULT_TIMEOUT = 60.0  # seconds one step (a load, one call of the op) may take
STOP_GRACE = 5.0        # seconds an interrupted worker has to report before it is killed
LOADING = "loading the plugins"      # the activity of a pyop_load
UNLOADING = "unloading the plugins"  # the activity of the pyop_unload at the end


def self_command():
    """How this command runs itself: the Python running it with its flags,
    then bin/pyop (or the package directory from a source tree)."""
    script = config.SCRIPT or os.path.dirname(os.path.abspath(__file__))
    return [sys.executable] + subprocess._args_from_interpreter_flags() + [script]


def how_it_ended(status, limit, limit_text, process_text):
    """What ended a worker, said of the plugin code it ran: from its exit
    status (None: stopped at the time limit, limit seconds; limit_text
    says which limit, process_text which process)."""
    if status is None:
        return "did not finish within %g s (%s): a hang?" % (limit, limit_text)
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "signal %d" % -status
        return "ended %s: killed by %s" % (process_text, name)
    return ("ended %s: it exited with status %d (os._exit() or C exit() in plugin code?)"
            % (process_text, status))


def spawn(argv_of):
    """Starts a worker: argv_of(fd) is its command line given the write end
    of its event pipe. (process, read end of the pipe); stdout is the
    command's result (output.result_fd), in a session of its own."""
    rfd, wfd = os.pipe()
    try:
        proc = subprocess.Popen(argv_of(wfd), pass_fds=(wfd,), stdin=subprocess.DEVNULL,
                                stdout=output.result_fd(), start_new_session=True)
    except OSError as e:
        os.close(rfd)
        raise CliError("cannot start the worker process (%s): %s" % (sys.executable, e),
                       "PYOP_ENOENT") from None
    finally:
        os.close(wfd)
    return proc, rfd


def read_events(proc, rfd, limit, on_event):
    """Hands each event of the worker's stream to on_event (which returns
    True for "done") until the stream ends: True after "done", False when
    it ended without (a death), None when the worker outlived its limit
    (then stopped): limit seconds after the last event, times that event's
    "calls". Anything else on the stream (a half line, a line that is no
    event: a plugin writing to the pipe) does not restart the limit."""
    sel = selectors.DefaultSelector()
    sel.register(rfd, selectors.EVENT_READ)
    buf, done = b"", False
    deadline = time.monotonic() + limit
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                stop(proc)
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
            calls = None  # no event in this chunk: the limit runs on
            for line in lines:
                try:
                    ev = json.loads(line)
                except ValueError:  # not the worker's (a plugin wrote to the pipe)
                    continue
                if not isinstance(ev, dict) or "e" not in ev:
                    continue
                done = on_event(ev) or done
                calls = ev.get("calls", 1) if isinstance(ev.get("calls"), int) else 1
            if calls is not None:
                deadline = time.monotonic() + limit * max(calls, 1)
    finally:
        sel.close()


def stop(proc):
    """Ends the worker and whatever it started (its own session)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


class Stream:
    """The worker's end of the event stream: one JSON object per line."""

    def __init__(self, fd):
        self.fd = fd

    def send(self, event):
        data = (json.dumps(event, sort_keys=True) + "\n").encode("utf-8", "backslashreplace")
        while data:
            n = os.write(self.fd, data)
            data = data[n:]


# ------------------------------------------------------- run and bench

_worker = None  # the Stream of this process when it is run's or bench's worker


def become_worker(fd):
    """This process is the worker of a `run` or `bench` (--_worker FD)."""
    global _worker
    _worker = Stream(fd)


def activity(stage, op=None, calls=1):
    """Says what the worker starts doing (nothing when this process is no
    worker): a step that runs plugin code, calls calls of the op long."""
    if _worker is not None:
        _worker.send({"e": "activity", "stage": stage, "op": op, "calls": max(int(calls), 1)})


def worker_done(code):
    """The end of a worker of run or bench: says "done" with its exit
    status, then ends the process at once (output.flush first), waiting
    for no thread a plugin left running. Returns when this process is no
    worker."""
    if _worker is None:
        return
    _worker.send({"e": "done", "code": code})
    output.flush()
    os._exit(code)


def run_in_worker(args, argv, limit):
    """The command (run or bench) as the parent of its worker: the worker is
    this command line with --_worker FD; its result (and its failure, said
    on stderr and with --json on stdout) is the command's. The exit status:
    the worker's own once it said "done" and then ended (a code it did not
    give is 1); otherwise a CliError naming the op and the step it was in
    (it ended the process without "done", or outlived limit seconds per
    call, even after "done": its output may not be all written). Ctrl-C reaches the worker too (SIGINT; it says where
    it was and ends with its own status), killed after STOP_GRACE."""
    state = {"code": None, "current": None}

    def on_event(ev):
        if ev["e"] == "done":
            state["code"] = ev.get("code", 1) if isinstance(ev.get("code"), int) else 1
            return True
        if ev["e"] == "activity":
            state["current"] = ev
        return False

    k = argv.index(args.command)
    proc, rfd = spawn(lambda fd: self_command() + argv[:k + 1] + ["--_worker", str(fd)]
                      + argv[k + 1:])
    try:
        try:
            finished = read_events(proc, rfd, limit, on_event)
        except KeyboardInterrupt:
            _signal(proc, signal.SIGINT)  # in its own session, it did not get the terminal's
            read_events(proc, rfd, STOP_GRACE, on_event)
            if state["code"] is None:
                raise
            return state["code"]
        if finished is False:  # its stream ended: the process is ending
            try:
                proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                pass
    finally:
        stop(proc)
        os.close(rfd)
    if finished and state["code"] is not None:
        return state["code"]
    raise _unfinished(args, state["current"], None if finished is None else proc.returncode,
                      limit)


def _signal(proc, sig):
    """Sends sig to the worker's session (nothing when it has ended)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass


def _unfinished(args, cur, status, limit):
    """The CliError of a worker of run/bench that ended (or hung) before it
    finished: the step it was in (cur, its last activity) named. At the
    unload its result was said already: the error (result_said) goes to
    stderr only, never a second JSON object."""
    how = how_it_ended(status, limit, "the per-call limit, --timeout",
                       "the process running it")
    verb = "run" if args.command == "run" else "benchmark"
    stage = cur["stage"] if cur else "starting"
    if stage == UNLOADING:
        err = CliError("while %s after the %s, the plugin code %s; the command did not finish"
                       % (stage, verb, how), "PYOP_EPLUGIN", args.op)
        err.result_said = True
        return err
    if cur is not None and cur.get("op") is not None:
        return CliError('%s of "%s" %s; the %s did not finish' % (stage, cur["op"], how, verb),
                        "PYOP_EPLUGIN", cur["op"])
    return CliError('op "%s": while %s, the plugin code %s; the %s did not finish'
                    % (args.op, stage, how, verb), "PYOP_EPLUGIN", args.op)
