"""Running an op's cases the way a host runs them and reading the verdict:
per case the contract, a second run on the same instance (determinism), the
reference; then one case from several threads at once; which infer_meta
failures are refusals; where a GE op stops because it needs an NPU; and the
op's status with its reason (docs/op-author-guide.md, "Seeing, checking and
running your op", states these rules)."""

import re
import sys
import threading

from .binding import DTYPES
from .check_cases import thread_inputs
from .check_plugin import (AttrWatch, in_plugin_code, is_ge, nondeterministic_hint,
                           reference_problem, tensor_attrs)
from .errors import CliError, plural
from .instance import Instance
from .values import _descs

THREADS = 4          # threads running one instance at once
THREAD_ROUNDS = 3    # runs per thread
THREAD_TIMEOUT = 120  # seconds before a concurrent run counts as hung

# What an infer_meta may raise to refuse a generated case (the op saying
# "not this input"), from a line of the plugin's own files; anything else
# fails infer_meta.
REFUSING = ("TypeError", "ValueError")

SELF_HINT = ("per-call data kept on `self` (an attribute execute sets and reads back) is "
             "the usual cause: keep it in local variables")

STAGES = ("infer_meta", "compile", "declare_launch_args", "execute", "launch")


class Monitor:
    """Where run_cases says what it is doing (the worker streams it to the
    command, which names the op and case a death or a hang happened in);
    this one listens to nothing."""

    def case(self, case):
        pass

    def stage(self, name):
        pass

    def activity(self, what, case=None):
        pass

    def problem(self, case, text):
        pass

    def ran(self, case):
        pass

    def refused(self, case, refusal):
        pass


def _first_line(text):
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


def refusal(err, case):
    """Why infer_meta's failure err refuses case ({"reason": "Type:
    message", "file", "line"}), or None when it is a failure of
    infer_meta: a generated or sweep case is refused by a
    TypeError or ValueError (or a subclass) raised by a line of the plugin's
    own files (a module of the plugin, of its package, or beside it); any
    other exception, one raised inside a library the plugin called (pyop,
    numpy), a non-Python failure, and any failure on samples or given
    inputs, fail infer_meta."""
    origin = getattr(err, "origin", None)
    if case.kind not in ("generated", "sweep") or origin is None:
        return None
    names, file, line, head = origin
    if not set(REFUSING) & set(names) or not in_plugin_code(file):
        return None
    return {"reason": head, "file": file, "line": line}


def npu_stop(info, err):
    """Whether the failed call err of a GE op is where it needs an NPU:
    libpyop's ge raises NotImplementedError for the NPU-only parts
    (AnnotatedArgsContext.add_launch, a declare_launch_args that launches
    nothing, CompilePlatformInfo). One raised by the plugin's own code is
    the op's failure."""
    origin = getattr(err, "origin", None)
    return (is_ge(info) and origin is not None and "NotImplementedError" in origin[0]
            and not in_plugin_code(origin[1]))


def _contract_problems(info, label, res):
    """What one run broke: a write into an input not declared in
    mutates_args (bytes compared before and after, so writes through
    data_ptr count), a Tensor attribute written, a failed call (an output
    not produced or not as infer_meta said is PYOP_ECONTRACT), output
    descriptions other than infer_meta's, a declared alias that is not the
    input's buffer."""
    problems = []
    for k, i in enumerate(info["inputs"]):
        if i.get("mutated") or not res.after:
            continue
        for j, (b, a) in enumerate(zip(res.before[k], res.after[k])):
            if a != b:
                problems.append("%s: input %s%s was written, but it is not declared in "
                                "mutates_args" % (label, i["name"],
                                                  "[%d]" % j if i["kind"] == "dynamic"
                                                  else ""))
    for name, method in res.attrs_written:
        problems.append("%s: attribute %s (a Tensor attribute, read-only for the op) was "
                        "written by %s" % (label, name, method))
    if res.error is not None:
        problems.append("%s: %s: %s" % (label, res.error.status, res.error.message))
        return problems
    if res.declare_error is not None and not npu_stop(info, res.declare_error):
        e = res.declare_error
        problems.append("%s: %s: %s (a host that launches the op instead of executing it "
                        "fails here)" % (label, e.status, e.message))
    if res.produced is None:
        return problems
    names = [i["name"] for i in info["inputs"]]
    for k, o in enumerate(info["outputs"]):
        got = [(t.dtype, list(t.shape[:t.ndim])) for t, _ in res.produced[k]]
        if res.inferred is not None and got != res.inferred[k]:
            problems.append("%s: output %s: infer_meta said %s, %s produced %s"
                            % (label, o["name"], _descs(res.inferred[k]), res.ran,
                               _descs(got)))
        if o.get("alias"):
            src = res.inputs[names.index(o["alias"])]
            if not res.produced[k] or not src or res.produced[k][0][0].data != src[0].data:
                problems.append("%s: output %s is declared as input %s's buffer but is "
                                "not" % (label, o["name"], o["alias"]))
    return problems


def _result_bytes(info, res):
    """What a run produced, to compare runs: {what: bytes} of every output
    tensor and every mutated input after the call."""
    out = {}
    for k, tensors in enumerate(res.output_bytes() or []):
        name = info["outputs"][k]["name"]
        out["output %s" % name] = len(tensors)
        for j, b in enumerate(tensors):
            out["output %s%s" % (name, "[%d]" % j if len(tensors) > 1 else "")] = b
    for k, i in enumerate(info["inputs"]):
        if i.get("mutated") and res.after:
            for j, b in enumerate(res.after[k]):
                out["input %s%s (mutated)" % (i["name"], "[%d]" % j if j else "")] = b
    return out


def _difference(first, second):
    """The first thing two _result_bytes differ in, said briefly, or None."""
    for what in list(first) + [w for w in second if w not in first]:
        a, b = first.get(what), second.get(what)
        if a == b:
            continue
        if isinstance(a, int) or isinstance(b, int):
            return "%s has %s tensors, then %s" % (what, a, b)
        if a is None or b is None:
            return "%s is missing from one run" % what
        at = next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return "%s differs from byte %d" % (what, at)
    return None


def _shapes_only(result):
    return {k: (len(v) if isinstance(v, bytes) else v) for k, v in result.items()}


def _alone_runs(inst, info, case, n_threads):
    """Each thread's inputs (thread_inputs, or the case's own where those do
    not run alone) and their result run alone on inst, or a problem text."""
    variants, alone = [], []
    for t in range(n_threads):
        res = None
        for inputs in (thread_inputs(case, t), case.inputs):
            try:
                res = inst.run(inputs)
            except CliError:
                continue
            if res.error is None:
                break
        else:
            return None, None, ("the case no longer runs on a fresh instance: %s" % (
                res.error.message if res is not None and res.error else "infer_meta refused it"))
        variants.append(inputs)
        alone.append(_result_bytes(info, res))
    return variants, alone, None


def _concurrency_problems(lib, info, case, deterministic, mon, n_threads=THREADS,
                          rounds=THREAD_ROUNDS):
    """Runs case from n_threads threads at once on one instance (the host
    contract allows it), each thread with inputs of its own, and compares
    each run with that thread's inputs run alone on that instance."""
    mon.activity("run from %d threads at once on one instance" % n_threads, case)
    try:
        inst = Instance(lib, info, case.attrs, declare="always")
    except CliError as e:
        return ["%s: creating a second instance failed: %s: %s" % (case.label, e.status,
                                                                   e.message)]
    try:
        variants, alone, why = _alone_runs(inst, info, case, n_threads)
        if why:
            return ["%s: %s" % (case.label, why)]
        got = [[None] * rounds for _ in range(n_threads)]
        barrier = threading.Barrier(n_threads)

        def work(t):
            try:
                barrier.wait(timeout=THREAD_TIMEOUT)
                for r in range(rounds):
                    res = inst.run(variants[t])
                    got[t][r] = res.error or _result_bytes(info, res)
            except BaseException as e:  # reported below, with the thread it came from
                got[t][0] = e
        threads = [threading.Thread(target=work, args=(t,), daemon=True)
                   for t in range(n_threads)]
        old = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # switch threads often: a race shows sooner
        try:
            for th in threads:
                th.start()
            for th in threads:
                th.join(THREAD_TIMEOUT)
        finally:
            sys.setswitchinterval(old)
        what = "%s: run from %d threads at once on one instance" % (case.label, n_threads)
        if any(th.is_alive() for th in threads):
            return ["%s: did not finish within %d s (a deadlock?)" % (what, THREAD_TIMEOUT)]
        return _thread_problems(got, alone, deterministic, what)
    finally:
        inst.destroy()


def _thread_problems(got, alone, deterministic, what):
    for t, results in enumerate(got):
        if isinstance(results[0], KeyboardInterrupt):
            raise results[0]  # an interrupt in a thread ends the command too
        for g in results:
            if isinstance(g, BaseException):
                return ["%s: thread %d failed: %s: %s; %s"
                        % (what, t, getattr(g, "status", type(g).__name__),
                           getattr(g, "message", g), SELF_HINT)]
            if g is None:
                continue
            want = alone[t] if deterministic else _shapes_only(alone[t])
            diff = _difference(want, g if deterministic else _shapes_only(g))
            if diff:
                return ["%s: thread %d: %s, compared with its inputs run alone; %s"
                        % (what, t, diff, SELF_HINT)]
    return []


# What two failures of different cases may differ in and still be "the same
# failure": the data type names, and numbers standing alone (shapes, byte
# counts, element indices) -- never digits that are part of a name (x1,
# output0) or a source line (file.py:12, line 12).
_MASK = re.compile(r"\b(?:%s|DT_\w+)\b|(?<![\w:])(?<!line )\d+" % "|".join(DTYPES))


def _grouped(raw):
    """Problems from (case, text): one per distinct failure; the same
    failure in other cases (another data type, say) is one more line
    naming those cases instead of a repeat."""
    groups = {}
    for case, text in raw:
        key = _MASK.sub("#", text.replace(case.label, ""))
        groups.setdefault(key, []).append((case, text))
    out = []
    for items in groups.values():
        case, text = items[0]
        line = "%s: %s" % (case.label, text)
        if len(items) > 1:
            line += "\n(the same failure with %s)" % ", ".join(c.short for c, _ in items[1:])
        out.append(line)
    return out


def checked(stages):
    """The capabilities the runs exercised (stages: {stage: calls}), in the
    order a host calls them (a kernel launch exercises declare_launch_args)."""
    ran = set(stages) | ({"declare_launch_args"} if "launch" in stages else set())
    return [s for s in ("infer_meta", "compile", "declare_launch_args", "execute") if s in ran]


def _new_verdict():
    return {"problems": [], "warnings": [], "notes": [], "ran": [], "refused": [],
            "refusals": [], "stages": {}, "npu": [], "threads": 0, "guessed": False,
            "inconclusive": None, "why": None}


class _Run:
    """The state of one op's run_cases."""

    def __init__(self, lib, info, mon, deterministic, reference):
        self.lib, self.info, self.mon = lib, info, mon
        self.deterministic, self.reference = deterministic, reference
        self.v = _new_verdict()
        self.raw = []  # (case, problem without the case's label)
        self.first_ok = None
        self.mutated = [k for k, i in enumerate(info["inputs"]) if i.get("mutated")]
        self.tensor_attrs = tensor_attrs(info)
        self.written = {k: 0 for k in self.mutated}
        self.runs = {k: 0 for k in self.mutated}

    def fail(self, case, text):
        text = text[len(case.label) + 2:] if text.startswith(case.label + ": ") else text
        self.raw.append((case, text))
        self.mon.problem(case, text)

    def count(self, res):
        for s in res.stages:
            self.v["stages"][s] = self.v["stages"].get(s, 0) + 1
        self.v["guessed"] = self.v["guessed"] or res.guessed

    def one(self, case):
        """Runs case on a fresh instance (twice, when the first run passes)."""
        self.mon.case(case)
        try:
            inst = Instance(self.lib, self.info, case.attrs, declare="always")
        except CliError as e:
            return self.fail(case, "%s: %s" % (e.status, e.message))
        try:
            try:
                res = self.watched(inst, case.inputs)
            except CliError as e:
                infer = getattr(e, "stage", None) == "infer_meta"
                if infer:  # it ran, and raised
                    self.v["stages"]["infer_meta"] = self.v["stages"].get("infer_meta", 0) + 1
                why = refusal(e, case) if infer else None
                if why is None:
                    return self.fail(case, "%s: %s" % (e.status, e.message))
                self.v["refused"].append(case.short)
                self.v["refusals"].append(dict(why, case=case.short))
                self.mon.refused(case, self.v["refusals"][-1])
                return None
            self.count(res)
            if res.stages:  # something ran (not so for an op with nothing to run)
                self.v["ran"].append(case.short)
                self.mon.ran(case)
            self.checked(inst, case, res)
        finally:
            inst.destroy()
        return None

    def watched(self, inst, inputs):
        """inst.run(inputs), its Tensor attributes watched (AttrWatch)."""
        if not self.tensor_attrs:
            return inst.run(inputs, stage=self.mon.stage)
        with AttrWatch(self.info, self.tensor_attrs) as watch:
            res = inst.run(inputs, stage=self.mon.stage)
        res.attrs_written = watch.written
        return res

    def checked(self, inst, case, res):
        """The checks of a case that ran: contract, reference, mutation, a
        second run on the same instance."""
        info = self.info
        if res.error is not None and npu_stop(info, res.error):
            self.v["npu"].append((res.failed, case.short, _first_line(res.error.message)))
            return
        if res.declare_error is not None and npu_stop(info, res.declare_error):
            self.v["npu"].append(("declare_launch_args", case.short,
                                  _first_line(res.declare_error.message)))
        found = _contract_problems(info, case.label, res)
        for text in found:
            self.fail(case, text)
        if found or res.produced is None:
            return
        if self.reference is not None:
            text = reference_problem(info, case, res, self.reference)
            if text:
                return self.fail(case, text)
        for k in self.mutated:
            for b, a in zip(res.before[k], res.after[k]):
                if b:
                    self.runs[k] += 1
                    self.written[k] += a != b
        self.again(inst, case, res)

    def again(self, inst, case, res):
        self.mon.stage("second run")
        try:
            again = self.watched(inst, case.inputs)
        except CliError as e:
            return self.fail(case, "the second run on the same instance failed: %s: %s"
                             % (e.status, e.message))
        self.count(again)
        if again.error is not None:
            return self.fail(case, "the first run succeeded, the second on the same instance "
                             "failed: %s: %s" % (again.error.status, again.error.message))
        found = _contract_problems(self.info, "the second run on the same instance", again)
        for text in found:
            self.fail(case, text)
        if found:
            return None
        diff = _difference(_result_bytes(self.info, res), _result_bytes(self.info, again))
        if diff and self.deterministic:
            return self.fail(case, "run twice on one instance with the same inputs, %s (%s)"
                             % (diff, nondeterministic_hint(self.info)))
        self.first_ok = self.first_ok or case
        return None


def run_cases(lib, info, cases, mon=None, deterministic=True, threads=THREADS,
              reference=None):
    """Runs each Case as a host does and returns the verdict: {"problems",
    "warnings", "notes", "ran": [short], "refused": [short], "refusals":
    [{"case", "reason"}], "stages": {stage: calls}, "npu": [(stage, case,
    message)], "threads", "guessed", "inconclusive": None or why, "why":
    the short why}.

    Each case that runs is checked against the contract and run a second
    time on the same instance: different bytes fail unless the op is
    nondeterministic. The first case that passed is then run from `threads`
    threads at once on one instance. A generated or sweep case infer_meta
    refuses (refusal) is skipped. A mutated input no run wrote is a
    warning. op_status gives the status."""
    run = _Run(lib, info, mon or Monitor(), deterministic, reference)
    for case in cases:
        run.one(case)
    v = run.v
    v["problems"] = _grouped(run.raw)
    if run.first_ok is not None and threads > 1 and not run.raw:
        v["problems"].extend(_concurrency_problems(lib, info, run.first_ok, deterministic,
                                                   run.mon, threads))
        v["threads"] = threads
    for k in run.mutated:
        if run.runs[k] and not run.written[k]:
            v["warnings"].append("input %s is declared in mutates_args, but none of the %d "
                                 "runs wrote it: if execute never writes it, drop it from "
                                 "mutates_args" % (info["inputs"][k]["name"], run.runs[k]))
    _notes(info, v)
    return v


def _notes(info, v):
    if v["guessed"]:
        v["notes"].append("no infer_meta: compile, declare_launch_args and a launch were "
                          "given the first input's description for every output (a host "
                          "infers them with its own prototype)")
    stops = [n for n in v["npu"] if n[0] == "declare_launch_args"]
    if stops and v["stages"].get("execute"):
        v["notes"].append("declare_launch_args ran on %s and stopped where it needs an "
                          "NPU (%s): the launch path is not checked here; execute ran"
                          % (plural(len(stops), "case"), stops[0][2]))


def _refused_all(v):
    first = v["refusals"][0]
    return ("infer_meta refused every generated input (%s: %s, %s:%d); give inputs it "
            "accepts with @pyop.register_samples in the plugin, or --input/--attr"
            % (first["case"], first["reason"], first["file"], first["line"]),
            "infer_meta refused every generated input")


def _why_nothing_ran(info, v):
    """(reason, short reason) an op none of whose cases ran on data is
    inconclusive, or None when it is an infer-only op (a prototype with
    infer_meta and no implementation, whose infer_meta ran)."""
    stages, caps = v["stages"], info["capabilities"]
    if not v["ran"] and v["refusals"]:
        return _refused_all(v)
    if v["npu"]:
        stage, case, message = v["npu"][0]
        return ("%s stopped where it needs an NPU on every case that ran (%s: %s): nothing "
                "ran on data here" % (stage, case, message), "%s needs an NPU" % stage)
    if stages.get("compile"):
        return ("only compile ran (%s): the op has neither execute nor "
                "declare_launch_args, so nothing a host runs on data was checked"
                % plural(stages["compile"], "case"), "compile only")
    if not info.get("impl_key") and stages.get("infer_meta"):
        return None
    if not caps:
        return ("nothing ran: the prototype (%s) has no infer_meta and no implementation is "
                "loaded for op type %r" % (info.get("proto_source") or "the host's",
                                           info["op_type"]), "no implementation")
    return ("nothing ran on data (capabilities: %s)" % ", ".join(caps), "nothing ran")


def op_status(info, v):
    """The op's status from its verdict v: "failed" (a problem), "ok" (a
    case ran on data, execute or a kernel launch, and nothing failed),
    "infer-only" (a prototype with no implementation whose infer_meta ran
    and passed: a valid op a host can plan with, with nothing to run), or
    "inconclusive" (nothing failed and nothing ran on data), with
    v["inconclusive"] and v["why"] set to the reason."""
    if v["problems"]:
        return "failed"
    if v["stages"].get("execute") or v["stages"].get("launch"):
        return "ok"
    why = _why_nothing_ran(info, v)
    if why is None:
        return "infer-only"
    v["inconclusive"], v["why"] = why
    return "inconclusive"
