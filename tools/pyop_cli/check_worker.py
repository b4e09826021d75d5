"""The worker process of `pyop check`: loads the plugins as a host does,
runs each op's cases (check_verdict) and streams what it is doing and what
it found to the command (check_supervise) as JSON lines on a pipe, so a
plugin that ends the process or never returns costs that op's case, not
the report. The op's own output (print) goes to stderr, never into the
stream or the report."""

import difflib
import json
import os
import shutil
import tempfile
import traceback

from .check_cases import Case, generated_cases, sample_cases
from .check_plugin import (annotation_problems, find_reference, forget_plugins,
                           is_deterministic, plugin_samples)
from .check_verdict import checked, Monitor, op_status, run_cases
from .errors import CliError, PyopError
from .host import (_attrs_from_args, end_now, _inputs_from_args, set_compile_options,
                   stray_threads, with_opp_path)
from .plugins import PENDING_HINT, pending_impls, plugin_id
from .proto import binding_seen, skip_unbound


from .supervise import Stream, UNLOADING  # noqa: F401 (UNLOADING: check_supervise's too)


class StreamMonitor(Monitor):
    """run_cases' monitor that streams the case and stage running (the
    command's per-case time limit and its report of a death read them) and
    each problem as found, paths under the private directories shown as
    the real ones."""

    def __init__(self, stream, plugin, op, real):
        self.stream, self.plugin, self.op, self.real = stream, plugin, op, real
        self.case_label = self.short = None

    def _send(self, event, **kw):
        event = dict(event, plugin=self.plugin, op=self.op, case=self.case_label,
                     short=self.short, **kw)
        self.stream.send(event)

    def case(self, case):
        self.case_label, self.short = self.real(case.label), case.short
        self._send({"e": "activity", "stage": "creating the op"})

    def stage(self, name):
        self._send({"e": "activity", "stage": name})

    def activity(self, what, case=None):
        self.case_label = self.real(case.label) if case is not None else None
        self.short = case.short if case is not None else None
        self._send({"e": "activity", "stage": what})

    def problem(self, case, text):
        self._send({"e": "problem", "text": self.real(text)})

    def ran(self, case):
        self._send({"e": "ran"})

    def refused(self, case, refusal):
        self._send({"e": "refused", "refusal": dict(refusal, reason=self.real(refusal["reason"]),
                                                    file=self.real(refusal["file"]))})


def _plugin_entries(paths):
    """The plugins of paths, each checked on its own: a .py file, or the
    .py files and packages one level deep in a directory (names starting
    with '_' or '.' skipped, as the loader does). A directory named *.py
    is a directory, as libpyop's scan (src/scan.c) and the loader
    (pyop._loader.discover) take it. A plugin reached a second time (a
    path given twice, with a trailing slash or as D/., a link to a
    directory or to a plugin file) is one entry, as the loader imports it
    once, by the first route."""
    entries, seen = [], set()

    def add(path):
        fid = plugin_id(path)
        if fid not in seen:
            seen.add(fid)
            entries.append(path)

    for p in paths:
        p = os.path.abspath(p)
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                full = os.path.join(p, name)
                if name.startswith(("_", ".")):
                    continue
                if (name.endswith(".py") and os.path.isfile(full)) or (
                        os.path.isdir(full) and os.path.isfile(os.path.join(full, "__init__.py"))):
                    add(full)
        else:
            add(p)
    return entries


def _link_dir(parent, names):
    """A private directory standing for parent: links to the entries names
    of parent and to the helpers beside them (names starting with '_',
    which the loader never imports as plugins but a plugin may import).
    The loader looks up a linked plugin's neighbours in its real directory
    too. The caller removes it."""
    holder = tempfile.mkdtemp(prefix="pyop-check-")
    helpers = sorted(n for n in os.listdir(parent)
                     if n.startswith("_") and n != "__pycache__")
    for name in list(dict.fromkeys(names)) + [h for h in helpers if h not in names]:
        os.symlink(os.path.join(parent, name), os.path.join(holder, name))
    return holder


def _as_loaded(paths, holders):
    """The ASCEND_CUSTOM_OPP_PATH elements that load paths (the arguments)
    as a host listing their directories loads them: a directory as it is; a
    .py file as a plugin of its directory, from a _link_dir of it (the
    files given from one directory share one, in the place of the first).
    holders gets {private directory: real directory}."""
    out, files = [], {}  # files: parent -> (its index in out, [file names])
    for p in map(os.path.abspath, paths):
        if not (p.endswith(".py") and os.path.isfile(p)) or \
                os.path.basename(p).startswith(("_", ".")):
            out.append(p)  # (a '_' file is no plugin of its directory: loaded as given)
            continue
        parent = os.path.dirname(p)
        if parent not in files:
            files[parent] = (len(out), [])
            out.append(None)
        files[parent][1].append(os.path.basename(p))
    for parent, (k, names) in files.items():
        out[k] = _link_dir(parent, names)
        holders[out[k]] = parent
    return out


def _real_paths(text, holders):
    """text with the private directories of holders named as the real ones."""
    for holder, parent in holders.items():
        text = text.replace(holder, parent)
    return text


class Worker:
    """One worker run of a job (check_supervise makes it): {"paths",
    "ops", "given", "phase": "together" or "each", "done": [[plugin, op]],
    "done_plugins": [...], "compile_options": {...}}."""

    def __init__(self, lib, args, job, stream):
        self.lib, self.args, self.job, self.stream = lib, args, job, stream
        self.done = {tuple(k) for k in job["done"]}
        self.holders = {}
        self.warned = False

    def real(self, text):
        return _real_paths(text, self.holders) if text else text

    def run(self):
        job = self.job
        try:
            if job["phase"] == "together" and self._together():
                return
            if job["phase"] == "together":
                self.stream.send({"e": "phase", "phase": "each"})
            for entry in _plugin_entries(job["paths"]):
                if entry not in job["done_plugins"]:
                    self._one_plugin(entry)
                    self.stream.send({"e": "plugin_done", "plugin": entry})
        finally:
            for holder in self.holders:
                shutil.rmtree(holder, ignore_errors=True)

    def _load(self, plugin, what):
        self.stream.send({"e": "activity", "plugin": plugin, "op": None, "case": None,
                          "short": None, "stage": what})
        self.lib.load()
        unused = set_compile_options(self.job["compile_options"])
        if unused and not self.warned:
            self.stream.send({"e": "warning", "text": unused})
            self.warned = True

    def _unload(self, plugin):
        """pyop_unload after the ops of plugin were checked (plugin code runs
        there too: its modules are dropped)."""
        self.stream.send({"e": "activity", "plugin": plugin, "op": None, "case": None,
                          "short": None, "stage": UNLOADING})
        self.lib.c.pyop_unload()

    def _together(self):
        """Everything in one load (the plugins as a host loads them); False
        when that load fails (load_error sent): each plugin is then checked
        on its own. A .py file given as an argument loads as a plugin of its
        directory (_as_loaded), so it imports its neighbours as it does when
        the host lists the directory."""
        job = self.job
        plugin = ":".join(job["paths"])
        with_opp_path(_as_loaded(job["paths"], self.holders) if job["given"] else job["paths"])
        try:
            self._load(plugin, "loading the plugins together")
        except PyopError as e:
            whole = e
        else:
            self._check_loaded(plugin)
            self._unload(plugin)
            return True
        # Outside the except block: a plugin imported now must not get the
        # command's exception as its context (its traceback would show it).
        whole.message = self.real(whole.message)
        self.lib.c.pyop_unload()
        self.stream.send({"e": "load_error", "error": whole.to_json()})
        return False

    def _one_plugin(self, entry):
        """Loads entry alone from a private directory standing for its own
        (_link_dir) and checks its ops."""
        parent = os.path.dirname(entry)
        holder = _link_dir(parent, [os.path.basename(entry)])
        self.holders[holder] = parent
        try:
            with_opp_path([holder])
            try:
                self._load(entry, "loading the plugin alone")
            except PyopError as e:
                self.stream.send({"e": "broken", "plugin": entry,
                                  "problem": self.real(e.message)})
                self.lib.c.pyop_unload()
                return
            self._check_loaded(entry)
            self._unload(entry)
        finally:
            shutil.rmtree(holder, ignore_errors=True)
            del self.holders[holder]

    def _check_loaded(self, plugin):
        """Checks the ops loaded now (those named, or all) and sends each
        op's report."""
        ops = self.job["ops"]
        try:
            types = self.lib.op_types()
            pending = pending_impls(types)
            for i in pending:
                if (not ops or i["op_type"] in ops) and (plugin, i["op_type"]) not in self.done:
                    self._send_op(_pending_entry(i, plugin))
            # A --proto REG_OP no plugin implements is left out (a note says
            # so), unless the command names it. What this load binds is sent
            # before any op runs (an op may end the process): the command
            # says the "not used" notes, once, of every worker's loads.
            unbound = {t for t in types if skip_unbound(self.lib.op_info(t))}
            self.stream.send(dict(binding_seen(), e="protos"))
            for t in types:
                if not (ops and t in ops) and t in unbound:
                    continue
                if (not ops or t in ops) and (plugin, t) not in self.done:
                    self._send_op(self._check_op(t, plugin, pending))
        finally:
            forget_plugins()

    def _send_op(self, entry):
        entry["source"] = self.real(entry["source"])
        for key in ("problems", "warnings", "notes"):
            entry[key] = [self.real(p) for p in entry[key]]
        entry["inconclusive"] = self.real(entry["inconclusive"])
        for r in entry["refusals"]:
            r["reason"], r["file"] = self.real(r["reason"]), self.real(r["file"])
        self.stream.send({"e": "op", "entry": entry})

    def _inputs_kind(self, info):
        """What the op's cases are (_cases): "given" (--input/--attr),
        "samples + generated" (a plugin registered samples for it) or
        "generated"; known before its samples function runs, so that
        op_begin says it (the report of an op the worker dies in)."""
        if self.args.input or self.args.attr:
            return "given"
        return "samples + generated" if info["op_type"] in plugin_samples() else "generated"

    def _cases(self, info):
        """(cases, what they are: _inputs_kind) of the op: the given inputs,
        else its samples followed by the generated sweep, else the sweep. A
        broken samples function (one that raises, or returns a wrong case)
        is a ValueError naming it."""
        kind = self._inputs_kind(info)
        if kind == "given":
            return [Case("given inputs", _inputs_from_args(info, self.args),
                         _attrs_from_args(info, self.args), "given")], "given"
        if kind == "samples + generated":
            fn, where = plugin_samples()[info["op_type"]]
            try:
                given = sample_cases(info, fn, where)
            except Exception as e:  # a broken samples function is the op's problem
                raise ValueError("samples (%s): %s: %s" % (where, type(e).__name__, e)) from None
            return given + generated_cases(info), "samples + generated"
        return generated_cases(info), "generated"

    def _check_op(self, t, plugin, pending):
        info = self.lib.op_info(t)
        self.stream.send({"e": "op_begin", "plugin": plugin, "op": t,
                          "source": self.real(info["proto_source"]),
                          "inputs": self._inputs_kind(info)})
        entry = _entry(t, plugin, info["proto_source"])
        try:
            cases, entry["inputs"] = self._cases(info)  # runs the plugin's samples
        except ValueError as e:
            entry.update(status="failed", inputs="samples", problems=[str(e)])
            return entry
        deterministic = is_deterministic(info)
        reference = find_reference(info)
        mon = StreamMonitor(self.stream, plugin, t, self.real)
        v = run_cases(self.lib, info, cases, mon, deterministic, reference=reference)
        v["problems"][:0] = annotation_problems(info)
        status = op_status(info, v)
        if status in ("infer-only", "inconclusive") and not info.get("impl_key"):
            v["notes"].extend(_typo_notes(t, pending))
        entry.update({k: v[k] for k in ("ran", "refused", "refusals", "problems", "warnings",
                                         "notes", "inconclusive", "why", "stages", "threads")})
        entry.update(status=status, cases=len(cases), deterministic=deterministic,
                     reference=list(reference[1]) if reference else None,
                     checked=checked(v["stages"]))
        return entry


def _entry(op_type, plugin, source):
    return {"op_type": op_type, "status": "failed", "checked": [], "inputs": "generated",
            "cases": 0, "ran": [], "refused": [], "refusals": [], "problems": [],
            "warnings": [], "notes": [], "inconclusive": None, "why": None, "stages": {},
            "deterministic": None, "reference": None, "threads": 0, "source": source,
            "plugin": plugin}


def _pending_entry(i, plugin):
    """An implementation loaded with no prototype: a host cannot run it until
    it has one; not a pass (nothing ran), not a failure of the op."""
    e = _entry(i["op_type"], plugin, i["impl_source"])
    e.update(status="inconclusive", inputs="no prototype", pending=True,
             why="an implementation waiting for a prototype",
             inconclusive="its implementation (%s) is %s; GE fails such a load with "
                          "\"canonical IR not found\"" % (i["impl_source"], PENDING_HINT))
    return e


def _typo_notes(op_type, pending):
    """A prototype with no implementation beside an implementation waiting
    for a prototype of a close name: probably one op with a typo."""
    names = [i["op_type"] for i in pending]
    close = difflib.get_close_matches(op_type, names, n=3, cutoff=0.6)
    close += [n for n in names if n.lower() == op_type.lower() and n not in close]
    return ["no implementation is loaded for %s, and one waits for a prototype of %s (%s): "
            "a typo in an op_type?" % (op_type, n, next(i["impl_source"] for i in pending
                                                        if i["op_type"] == n))
            for n in close]


def serve(lib, args):
    """The worker's main (cmd_check with --_worker FD): runs the job of
    --_job, streams the events, then ends the process, never waiting for a
    thread a plugin left running (named in a warning event), as a C host's
    pyop_shutdown does not."""
    stream = Stream(args._worker)
    code = 0
    try:
        Worker(lib, args, json.loads(args._job), stream).run()
        stream.send({"e": "done"})
    except KeyboardInterrupt as e:
        stream.send({"e": "interrupted", "text": str(e).strip() or
                     lib.interrupt_detail() or ""})
        code = 130
    except CliError as e:
        stream.send({"e": "fatal", "error": e.to_json(), "exit": e.exit_code})
        code = e.exit_code
    except BaseException:  # noqa: BLE001 (the command must hear of it, then the process ends)
        stream.send({"e": "fatal", "exit": 1, "error": {
            "status": "PYOP_EINTERNAL", "message": "pyop check's worker failed:\n"
            + traceback.format_exc().rstrip(), "op": None, "file": None, "line": None}})
        code = 1
    left = stray_threads()
    if left:
        stream.send({"e": "threads", "names": [t.name for t in left]})
    end_now(code)
