"""`pyop check`: loads the plugins as a host does and runs each op on
generated inputs, its samples or the inputs given, checking it against its
prototype and the host contract."""

import numbers
import os
import re
import shutil
import sys
import tempfile
import threading

from . import config
from .plugins import PENDING_HINT, pending_impls
from .proto import skip_unbound
from .binding import ATTR_TYPES, DTYPES, IO_KINDS
from .errors import CliError, PyopError, UsageError
from .host import (_attrs_from_args, check_paths, _inputs_from_args, Instance,
                   _other_python_note, with_opp_path)
from .values import (check_shape, _default_attr, _descs, dump_json, numel,
                     plugin_attr_value, plugin_tensor_values, _sample_values, shape_text)


# The shapes every generated case is also tried with (where infer_meta
# accepts them), besides float32[2,3] in every data type.
SWEEP_SHAPES = (([0, 3], "empty"), ([], "rank-0"), ([1], "one element"))
THREADS = 4          # threads running one instance at once
THREAD_ROUNDS = 3    # runs per thread
THREAD_TIMEOUT = 120  # seconds before a concurrent run counts as hung
# Exit status when nothing failed but some op could not be run (its
# infer_meta refused every generated input): not a pass, not a failure.
EXIT_INCONCLUSIVE = 3


class Case:
    """One set of inputs and attributes check runs an op on. kind:
    "generated" (float32[2,3]), "sweep" (another data type or shape),
    "samples" or "given"; infer_meta may refuse a generated or sweep case
    (it is then skipped), never a sample or given one. short: how the
    report lists it."""

    __slots__ = ("label", "inputs", "attrs", "kind", "short")

    def __init__(self, label, inputs, attrs, kind, short=None):
        self.label, self.inputs, self.attrs, self.kind = label, inputs, attrs, kind
        self.short = short or label


def _input_counts(info):
    """Generated input sets: every optional present and absent, dynamic with 2."""
    base = []
    has_optional = False
    for i in info["inputs"]:
        if i["kind"] == "dynamic":
            base.append(2)
        elif i["kind"] == "optional":
            base.append(1)
            has_optional = True
        else:
            base.append(1)
    cases = [base]
    if has_optional:
        cases.append([0 if i["kind"] == "optional" else n
                      for i, n in zip(info["inputs"], base)])
    return cases


def _make_case(info, counts, attrs, dtype_name, shape, kind, short, seed=0):
    """dtype_name: one name for every input, or a tuple of one per input."""
    names = dtype_name if isinstance(dtype_name, tuple) else (dtype_name,) * len(counts)
    dtypes = [DTYPES.index(n) for n in names]
    inputs = [[(dtypes[k], list(shape), _sample_values(dtypes[k], numel(shape), seed + k + j))
               for j in range(n)] for k, n in enumerate(counts)]
    label = "inputs %s" % ", ".join(
        "%s=%s" % (i["name"], "absent" if n == 0 else
                   ("%d x " % n if i["kind"] == "dynamic" else "")
                   + shape_text(d, shape))
        for i, n, d in zip(info["inputs"], counts, dtypes))
    return Case(label, inputs, attrs, kind, short)


def _sweep_dtypes(info):
    """The data types of the generated cases, as (data type, per-input
    names, how the report names the inputs' other types: "" or " (y:
    int32)"), the base case first: every data type when no input is
    constrained; else each type some input allows (pyop_dtype_set: list
    --json's "dtypes"), an input that does not allow it getting the first of
    its own, one case per distinct choice; float32 first when it is one."""
    ins = info["inputs"]
    sets = [i.get("dtypes") for i in ins]  # None: any
    wanted = DTYPES if None in sets or not sets else [
        d for d in DTYPES if any(d in s for s in sets)]
    out = []
    for d in sorted(wanted, key=lambda d: d != "float32"):
        pick = tuple(d if s is None or d in s else s[0] for s in sets)
        if pick in [p for _, p, _ in out]:
            continue
        other = ", ".join("%s: %s" % (i["name"], t) for i, t in zip(ins, pick) if t != d)
        out.append((d, pick, " (%s)" % other if other else ""))
    return out


def _generated_cases(info, sweep=True):
    """The generated cases: [2,3] of the base data type (float32, unless the
    inputs' declared data types exclude it: _sweep_dtypes) everywhere (each
    optional input present and absent), then (sweep) that shape in every
    other data type the inputs allow and the base type in the SWEEP_SHAPES,
    with the optional inputs present."""
    attrs = {a["name"]: _default_attr(a) for a in info["attrs"] if a["required"]}
    all_counts = _input_counts(info)
    choices = _sweep_dtypes(info)
    base_name, base, base_other = choices[0]
    out = []
    for n, counts in enumerate(all_counts):
        short = "%s[2,3]%s" % (base_name, base_other) + (" (optional inputs absent)" if n else "")
        out.append(_make_case(info, counts, attrs, base, [2, 3], "generated", short))
    if not sweep or not info["inputs"]:
        return out
    for name, pick, other in choices[1:]:
        out.append(_make_case(info, all_counts[0], attrs, pick, [2, 3], "sweep",
                              "%s[2,3]%s" % (name, other)))
    for shape, what in SWEEP_SHAPES:
        out.append(_make_case(info, all_counts[0], attrs, base, shape, "sweep",
                              "%s%s (%s)" % (shape_text(base_name, shape), base_other, what)))
    return out


def _sample_tensor(v, what):
    """A sample input value -> (dtype, shape, values): (dtype, shape, values)
    with a DataType or a name, or anything with .dtype/.shape/.tolist() (a
    numpy array)."""
    if isinstance(v, (tuple, list)) and len(v) == 3:
        dtype, shape, values = v
        name = getattr(dtype, "name", dtype)
        if name not in DTYPES:
            raise ValueError("%s: unknown data type %r" % (what, dtype))
        shape = _sample_shape(shape, what)
        check_shape(DTYPES.index(name), shape, what)
        values = list(values)
        if len(values) != numel(shape):
            raise ValueError("%s: %d values for shape [%s]"
                             % (what, len(values), ",".join(map(str, shape))))
        return DTYPES.index(name), shape, plugin_tensor_values(DTYPES.index(name), values,
                                                               what)
    if hasattr(v, "dtype") and hasattr(v, "shape") and hasattr(v, "tolist"):
        name = str(v.dtype)
        if name not in DTYPES:
            raise ValueError("%s: numpy dtype %s has no pyop equivalent" % (what, name))
        shape = _sample_shape(v.shape, what)
        check_shape(DTYPES.index(name), shape, what)
        flat = v.reshape(-1).tolist() if hasattr(v, "reshape") else list(v.tolist())
        return DTYPES.index(name), shape, plugin_tensor_values(DTYPES.index(name), flat, what)
    raise ValueError("%s: expected (dtype, shape, values) or a numpy array, got %r"
                     % (what, type(v).__name__))


def _sample_shape(shape, what):
    """A sample's shape as --input's is read: a sequence of integers (2.5 or
    True is no dim); check_shape then checks the count and the range."""
    if not isinstance(shape, (list, tuple)) and not hasattr(shape, "__len__"):
        raise ValueError("%s: shape %r is not a list of dims" % (what, shape))
    dims = list(shape)
    bad = [d for d in dims if not isinstance(d, numbers.Integral) or isinstance(d, bool)]
    if bad:
        raise ValueError("%s: dim %r is not an integer" % (what, bad[0]))
    return [int(d) for d in dims]


def _sample_cases(info, fn, where):
    """(label, inputs, attrs) of the cases a plugin registered with
    pyop.register_samples: each a dict {"inputs": {name: value}, "attrs":
    {name: value}} (a value is (dtype, shape, values) or a numpy array; a
    list of them for a dynamic input; None or missing for an absent optional
    one); "label" optional."""
    cases = fn()
    if not isinstance(cases, (list, tuple)) or not cases:
        raise ValueError("samples of %s (%s) must be a non-empty list of cases"
                         % (info["op_type"], where))
    out = []
    names = [i["name"] for i in info["inputs"]]
    for n, case in enumerate(cases):
        what = "sample %d of %s (%s)" % (n, info["op_type"], where)
        if not isinstance(case, dict):
            raise ValueError("%s: a case is a dict with 'inputs' and 'attrs'" % what)
        given = dict(case.get("inputs") or {})
        for name in given:
            if name not in names:
                raise ValueError("%s: %r is not an input (inputs: %s)" % (what, name, names))
        inputs = []
        for i in info["inputs"]:
            v = given.get(i["name"])
            if v is None:
                if i["kind"] == "required":
                    raise ValueError("%s: required input %r missing" % (what, i["name"]))
                inputs.append([])
            elif i["kind"] == "dynamic":
                inputs.append([_sample_tensor(x, "%s input %s" % (what, i["name"])) for x in v])
            else:
                inputs.append([_sample_tensor(v, "%s input %s" % (what, i["name"]))])
        attrs = {}
        types = {a["name"]: a["type"] for a in info["attrs"]}
        for name, value in dict(case.get("attrs") or {}).items():
            if name not in types:
                raise ValueError("%s: %r is not an attribute" % (what, name))
            if types[name] == "Tensor":
                attrs[name] = _sample_tensor(value, "%s attr %s" % (what, name))
                continue
            try:
                attrs[name] = plugin_attr_value(value, types[name])
            except ValueError as e:
                raise ValueError("%s: attr %s (%s): %s" % (what, name, types[name], e)) from None
        out.append(Case(case.get("label") or "sample %d" % n, inputs, attrs, "samples"))
    return out


def _contract_problems(info, label, res):
    """What one run broke: a write into an input not declared in
    mutates_args (bytes compared before and after, so writes through
    data_ptr count), a failed call (an output not produced or not as
    infer_meta said is PYOP_ECONTRACT), output descriptions other than
    infer_meta's, a declared alias that is not the input's buffer."""
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
    if res.error is not None:
        problems.append("%s: %s: %s" % (label, res.error.status, res.error.message))
        return problems
    if res.produced is None:
        return problems
    names = [i["name"] for i in info["inputs"]]
    for k, o in enumerate(info["outputs"]):
        got = [(t.dtype, list(t.shape[:t.ndim])) for t, _ in res.produced[k]]
        if res.inferred is not None and got != res.inferred[k]:
            problems.append("%s: output %s: infer_meta said %s, execute produced %s"
                            % (label, o["name"], _descs(res.inferred[k]), _descs(got)))
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


NONDETERMINISTIC_HINT = ("an op whose results vary by design says so: "
                         "@pyop.register_op_impl(..., deterministic=False)")
SELF_HINT = ("per-call data kept on `self` (an attribute execute sets and reads back) is "
             "the usual cause: keep it in local variables")


def _vary(case, t):
    """The inputs of case for thread t: generated cases get other values per
    thread (a race then shows in the values); samples and given inputs are
    used as they are."""
    if t == 0 or case.kind not in ("generated", "sweep"):
        return case.inputs
    return [[(d, s, _sample_values(d, numel(s), 3 * t + k + j)) for j, (d, s, _) in
             enumerate(slot)] for k, slot in enumerate(case.inputs)]


def _concurrency_problems(lib, info, case, deterministic, n_threads=THREADS,
                          rounds=THREAD_ROUNDS):
    """Runs case from n_threads threads at once on one instance (the host
    contract allows it) and compares each run with the same inputs run
    alone on that instance."""
    try:
        inst = Instance(lib, info, case.attrs)
    except CliError as e:
        return ["%s: creating a second instance failed: %s: %s" % (case.label, e.status,
                                                                   e.message)]
    try:
        variants, alone = [], []
        for t in range(n_threads):
            # Other values per thread where they run alone; the case's own
            # (which ran) where they do not.
            res = None
            for inputs in (_vary(case, t), case.inputs):
                try:
                    res = inst.run(inputs)
                except CliError:
                    continue
                if res.error is None:
                    break
            else:
                return ["%s: the case no longer runs on a fresh instance: %s" % (
                    case.label, res.error.message if res is not None and res.error
                    else "infer_meta refused it")]
            variants.append(inputs)
            alone.append(_result_bytes(info, res))
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
        for t in range(n_threads):
            if isinstance(got[t][0], KeyboardInterrupt):
                raise got[t][0]  # an interrupt in a thread ends the command too
        for t in range(n_threads):
            for r in range(rounds):
                g = got[t][r]
                if isinstance(g, BaseException):
                    return ["%s: thread %d failed: %s: %s; %s"
                            % (what, t, getattr(g, "status", type(g).__name__),
                               getattr(g, "message", g), SELF_HINT)]
                if g is None:
                    continue
                if not deterministic:
                    g = {k: (len(v) if isinstance(v, bytes) else v) for k, v in g.items()}
                    want = {k: (len(v) if isinstance(v, bytes) else v)
                            for k, v in alone[t].items()}
                else:
                    want = alone[t]
                diff = _difference(want, g)
                if diff:
                    return ["%s: thread %d: %s, compared with the same inputs run alone; %s"
                            % (what, t, diff, SELF_HINT)]
        return []
    finally:
        inst.destroy()


_MASK = re.compile(r"\b(?:%s|DT_\w+)\b|\d+" % "|".join(DTYPES))


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


def check_cases(lib, info, cases, deterministic=True, threads=THREADS, reference=None):
    """Runs each Case and returns the verdict: {"problems", "warnings",
    "ran": [short], "refused": [short], "inconclusive": None or why}.

    Each case that runs is checked against the contract (_contract_problems)
    and run a second time on the same instance: different bytes fail unless
    the op is nondeterministic. The first case that ran is then run from
    `threads` threads at once on one instance (see _concurrency_problems).
    A generated or sweep case infer_meta refuses (raises) is skipped; when
    it refuses them all the op is inconclusive. A mutated input no run
    wrote is a warning."""
    v = {"problems": [], "warnings": [], "ran": [], "refused": [], "inconclusive": None,
         "threads": 0}
    raw = []  # (case, problem without the case's label)

    def fail(case, text):
        raw.append((case, text[len(case.label) + 2:] if text.startswith(case.label + ": ")
                    else text))
    first_refusal = None
    first_ok = None
    mutated = [k for k, i in enumerate(info["inputs"]) if i.get("mutated")]
    written = {k: 0 for k in mutated}
    runs = {k: 0 for k in mutated}
    for case in cases:
        try:
            inst = Instance(lib, info, case.attrs)
        except CliError as e:
            fail(case, "%s: %s" % (e.status, e.message))
            continue
        try:
            try:
                res = inst.run(case.inputs)
            except CliError as e:
                if getattr(e, "stage", None) == "infer_meta" and e.status == "PYOP_EPYTHON" \
                        and case.kind in ("generated", "sweep"):
                    v["refused"].append(case.short)
                    first_refusal = first_refusal or (case, e)
                    continue
                fail(case, "%s: %s" % (e.status, e.message))
                continue
            v["ran"].append(case.short)
            found = _contract_problems(info, case.label, res)
            for text in found:
                fail(case, text)
            if found or res.produced is None:
                continue
            if reference is not None:
                text = _reference_problem(info, case, res, reference)
                if text:
                    fail(case, text)
                    continue
            for k in mutated:
                for b, a in zip(res.before[k], res.after[k]):
                    if b:
                        runs[k] += 1
                        written[k] += a != b
            try:
                again = inst.run(case.inputs)
            except CliError as e:
                fail(case, "the second run on the same instance failed: %s: %s"
                     % (e.status, e.message))
                continue
            if again.error is not None:
                fail(case, "the first run succeeded, the second on the same instance "
                     "failed: %s: %s" % (again.error.status, again.error.message))
                continue
            diff = _difference(_result_bytes(info, res), _result_bytes(info, again))
            if diff and deterministic:
                fail(case, "run twice on one instance with the same inputs, %s (%s)"
                     % (diff, NONDETERMINISTIC_HINT))
                continue
            first_ok = first_ok or case
        finally:
            inst.destroy()
    v["problems"] = _grouped(raw)
    if first_ok is not None and threads > 1 and not raw:
        v["problems"].extend(_concurrency_problems(lib, info, first_ok, deterministic, threads))
        v["threads"] = threads
    for k in mutated:
        if runs[k] and not written[k]:
            v["warnings"].append("input %s is declared in mutates_args, but none of the %d "
                                 "runs wrote it: if execute never writes it, drop it from "
                                 "mutates_args" % (info["inputs"][k]["name"], runs[k]))
    if not v["ran"] and first_refusal and not v["problems"]:
        case, e = first_refusal
        v["inconclusive"] = ("infer_meta refused every generated input (%s: %s); give inputs "
                             "it accepts with @pyop.register_samples in the plugin, or "
                             "--input/--attr" % (case.short, e.message.splitlines()[-1]
                                                 if e.message.strip() else e.status))
    return v


_index = [None, {}, {}]  # [plugin modules seen, {(op_type, key): class}, {op_type: ref}]


def _plugin_index():
    """What the loaded plugins' modules define that check reads, indexed
    once per set of loaded modules: implementation classes by (op type,
    key) and pyop.register_reference functions by op type. Plugin modules
    only (an unloaded plugin's modules are gone from sys.modules)."""
    mods = [(name, mod) for name, mod in list(sys.modules.items())
            if name.startswith("_pyop_plugin_") and mod is not None]
    seen = frozenset((name, id(mod)) for name, mod in mods)
    if _index[0] != seen:
        impls, refs = {}, {}
        for _, mod in mods:
            for obj in list(vars(mod).values()):
                desc = getattr(obj, "__pyop_descriptor__", None) if isinstance(obj, type) \
                    else None
                if desc is not None and hasattr(desc, "key"):
                    impls.setdefault((getattr(desc, "op_type", None), desc.key), obj)
                op_type = getattr(obj, "__pyop_reference__", None) if callable(obj) else None
                if isinstance(op_type, str):
                    refs.setdefault(op_type, obj)
        _index[:] = [seen, impls, refs]
    return _index[1], _index[2]


def _impl_class(info):
    """The implementation class of the loaded op (the bridge's pyop package
    and the plugins live in this interpreter): the class whose descriptor
    has the op's implementation key, or None."""
    key = info.get("impl_key")
    return _plugin_index()[0].get((info["op_type"], key)) if key else None


def find_reference(info):
    """(function, (rtol, atol)) registered with pyop.register_reference for
    the op by a loaded plugin, or None."""
    fn = _plugin_index()[1].get(info["op_type"])
    return (fn, getattr(fn, "__pyop_tolerance__", (1e-5, 1e-8))) if fn else None


_NUMPY_DTYPES = {n: n for n in DTYPES if n != "bfloat16"}


def _reference_problem(info, case, res, reference):
    """Compares what execute produced (res) with the reference on the same
    inputs; a message, or None when they agree (or the case has bfloat16,
    which numpy has no type for)."""
    fn, (rtol, atol) = reference
    try:
        import numpy as np
    except ImportError as e:
        return "the reference needs numpy, which does not import here (%s)" % e
    if any(DTYPES[d] == "bfloat16" for slot in case.inputs for d, _, _ in slot):
        return None
    args = []
    for i, slot in zip(info["inputs"], case.inputs):
        arrays = [np.array(v, dtype=_NUMPY_DTYPES[DTYPES[d]]).reshape(s) for d, s, v in slot]
        args.append(arrays if i["kind"] == "dynamic" else (arrays[0] if arrays else None))
    attrs = {k: (np.array(v[2], dtype=_NUMPY_DTYPES[DTYPES[v[0]]]).reshape(v[1])
                 if isinstance(v, tuple) and len(v) == 3 else v) for k, v in case.attrs.items()}
    try:
        want = fn(*args, **attrs)
    except Exception as e:
        return "the reference raised %s: %s" % (type(e).__name__, e)
    outs = info["outputs"]
    if len(outs) == 1:
        want = [want]
    elif not isinstance(want, (tuple, list)) or len(want) != len(outs):
        return "the reference returned %r, not %d outputs" % (type(want).__name__, len(outs))
    for k, o in enumerate(outs):
        got = [np.array(vals, dtype=_NUMPY_DTYPES[DTYPES[t.dtype]]).reshape(
            list(t.shape[:t.ndim])) for t, vals in res.produced[k]]
        expect = list(want[k]) if o["kind"] == "dynamic" else [want[k]]
        if len(got) != len(expect):
            return "output %s: %d tensors, the reference %d" % (o["name"], len(got), len(expect))
        for j, (g, w) in enumerate(zip(got, expect)):
            w = np.asarray(w)
            what = "output %s%s" % (o["name"], "[%d]" % j if o["kind"] == "dynamic" else "")
            if g.shape != w.shape:
                return "%s: shape %s, the reference's %s" % (what, list(g.shape), list(w.shape))
            ok = np.isclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol,
                            equal_nan=True)
            if not ok.all():
                at = int(np.argmin(ok.reshape(-1)))
                return ("%s differs from the reference at element %d: %r, the reference %r "
                        "(rtol=%g, atol=%g)" % (what, at, g.reshape(-1)[at].item(),
                                                w.reshape(-1)[at].item(), rtol, atol))
    return None


def annotation_problems(info):
    """The implementation's annotations against the prototype: an input
    annotated as another kind (x: list[Tensor] for a single input), an
    attribute annotated as another type (factor: int for a float one). The
    load accepts both (it checks names and order); a host passes what the
    prototype says. Unannotated parameters are not compared. Uses the
    bridge's own annotation readers (pyop._signature, in this interpreter)."""
    cls = _impl_class(info)
    sig = sys.modules.get("pyop._signature")
    if cls is None or sig is None or not (info.get("impl_key") or "").startswith("pyop:"):
        return []
    try:
        params, resolve = sig._method_params, sig._resolve
        input_kind, attr_type = sig._input_kind, sig._attr_type
    except AttributeError:  # another bridge version: nothing to compare with
        return []
    out = []
    attr_types = {a["name"]: a["type"] for a in info["attrs"]}
    for method in ("execute", "compile", "declare_launch_args"):
        if method not in info["capabilities"]:
            continue
        try:
            fn, pos, kw, _, _ = params(cls, method, method)
        except TypeError:
            continue
        code = getattr(fn, "__code__", None)
        at = " (%s:%d)" % (code.co_filename, code.co_firstlineno) if code else ""

        def ann_of(p):
            try:
                return resolve(p.annotation, fn, method)
            except TypeError:
                return p.empty
        for p, i in zip(pos, info["inputs"]):
            if p.annotation is p.empty:
                continue
            kind = input_kind(ann_of(p))
            if kind is not None and IO_KINDS[int(kind)] != i["kind"]:
                out.append("%s()%s: parameter %s is annotated %s (a %s input), but the "
                           "prototype's input %s is %s"
                           % (method, at, p.name, _ann_text(p.annotation), IO_KINDS[int(kind)],
                              i["name"], _KIND_TEXT[i["kind"]]))
        for p in kw:
            if p.annotation is p.empty or p.name not in attr_types:
                continue
            t = attr_type(ann_of(p))
            name = ATTR_TYPES.get(int(t)) if t is not None else None
            if name is not None and name != attr_types[p.name]:
                out.append("%s()%s: attribute %s is annotated %s, but the prototype's %s is "
                           "%s (the host passes a %s)"
                           % (method, at, p.name, _ann_text(p.annotation), p.name,
                              attr_types[p.name], attr_types[p.name]))
    return out


_KIND_TEXT = {"required": "required (one tensor)", "optional": "optional (a tensor or None)",
              "dynamic": "dynamic (a list of tensors)"}


def _ann_text(ann):
    if isinstance(ann, str):
        return ann
    if isinstance(ann, type):
        return ann.__name__
    return repr(ann).replace("typing.", "").replace("pyop._native.", "").replace("pyop.", "")


def is_deterministic(info):
    """False when the op's implementation declared
    register_op_impl(..., deterministic=False)."""
    cls = _impl_class(info)
    return getattr(cls, "__pyop_deterministic__", True) is not False


def _plugin_samples():
    """{op_type: (fn, "file:line")} registered by the loaded plugins (the
    bridge's pyop package lives in this very interpreter)."""
    pkg = sys.modules.get("pyop")
    reg = getattr(pkg, "_registry", None) if pkg is not None else None
    get = getattr(reg, "loaded_samples", None)
    return get() if get is not None else {}


def _plugin_entries(paths):
    """The plugins of paths, each checked on its own: a .py file, or the
    .py files and packages one level deep in a directory (names starting
    with '_' or '.' skipped, as the loader does)."""
    entries = []
    for p in paths:
        p = os.path.abspath(p)
        if os.path.isdir(p) and not p.endswith(".py"):
            for name in sorted(os.listdir(p)):
                full = os.path.join(p, name)
                if name.startswith(("_", ".")):
                    continue
                if (name.endswith(".py") and os.path.isfile(full)) or (
                        os.path.isdir(full) and os.path.isfile(os.path.join(full, "__init__.py"))):
                    entries.append(full)
        else:
            entries.append(p)
    return entries


def _check_target_kind(t):
    return "path" if (os.path.exists(t) or os.sep in t or t.endswith(".py")) else "op"


def cmd_check(lib, args):
    targets = args.target or []
    paths = [t for t in targets if _check_target_kind(t) == "path"]
    ops = [t for t in targets if _check_target_kind(t) == "op"]
    if (args.input or args.attr) and len(ops) != 1:
        raise UsageError("--input/--attr need exactly one OP to check")
    check_paths(paths)
    if not paths:
        env = os.environ.get("ASCEND_CUSTOM_OPP_PATH", "")
        paths = [p for p in env.split(":") if p]
    if not paths:
        raise UsageError("nothing to check: give plugin paths or set ASCEND_CUSTOM_OPP_PATH")
    report = []
    broken = []
    load_error = None
    # Everything in one load first (the plugins as a host loads them); when
    # that load fails, each plugin on its own, so a broken one is reported
    # and the others are still checked. What check accepts is what a host
    # loads: a failed combined load fails the check, whatever its status
    # (a conflict between directories, foo.py beside a package foo/, a
    # plugin that fails to import), naming the cause. A .py file given as
    # an argument loads as a plugin of its directory (_as_loaded), so it
    # imports its neighbours as it does when the host lists the directory.
    given = bool(args.target) and any(_check_target_kind(t) == "path" for t in args.target)
    holders = {}
    try:
        with_opp_path(_as_loaded(paths, holders) if given else paths)
        try:
            lib.load()
            whole = None
        except PyopError as e:
            whole = e
            whole.message = _real_paths(whole.message, holders)
        if whole is not None:
            # Outside the except block: a plugin imported now must not get the
            # command's exception as its context (its traceback would show it).
            lib.c.pyop_unload()
            for entry in _plugin_entries(paths):
                _check_one_plugin(lib, args, ops, entry, report, broken)
            if not report:
                raise whole  # nothing loaded at all: the load's own error
            # Shown unless a plugin that fails alone is that failure (it is
            # reported below, in full).
            first = whole.message.splitlines()[0] if whole.message else ""
            if not any(b["problem"].splitlines()[:1] == [first] for b in broken):
                load_error = whole
        else:
            _check_loaded(lib, args, ops, ":".join(paths), report, holders)
            lib.c.pyop_unload()
    finally:
        for holder in holders:
            shutil.rmtree(holder, ignore_errors=True)
    missing = [o for o in ops if o not in {r["op_type"] for r in report}]
    failed = sum(1 for r in report if r["status"] == "failed")
    inconclusive = sum(1 for r in report if r["status"] == "inconclusive")
    other = _other_python_note()
    if args.json:
        dump_json({"ops": report, "failed": failed, "inconclusive": inconclusive,
                   "broken_plugins": broken,
                   "load_error": load_error.to_json() if load_error else None,
                   "missing_ops": missing,
                   "python": {"executable": sys.executable,
                              "is_build_python": other is None if config.BUILD_PYTHON else None}})
    else:
        if other:
            print("note: " + other)
        if load_error:
            print("load of all plugins together: FAILED (%s)" % load_error.status)
            print("    " + load_error.message.rstrip().replace("\n", "\n    "))
            print("    (a host loads them together and refuses them; each plugin is "
                  "checked alone below)")
        for b in broken:
            print("plugin %s: FAILED to load" % b["plugin"])
            print("    " + b["problem"].rstrip().replace("\n", "\n    "))
        for r in report:
            print("%-24s %s (%s; %s)" % (r["op_type"], r["status"],
                                          ", ".join(r["checked"]) or (
                                              "implementation only" if r.get("pending")
                                              else "prototype only"), r["inputs"]))
            for line in _report_lines(r):
                print("    " + line.rstrip("\n").replace("\n", "\n      "))
        for o in missing:
            print("%-24s not found" % o)
        print("%d ops checked, %d failed%s%s%s"
              % (len(report), failed,
                 ", %d inconclusive" % inconclusive if inconclusive else "",
                 ", %d plugins failed to load" % len(broken) if broken else "",
                 ", the plugins do not load together" if load_error else ""))
    if failed or broken or missing or not report or load_error:
        why = ("%d plugins failed to load" % len(broken) if broken else
               "the plugins do not load together: %s"
               % load_error.message.splitlines()[0] if load_error else
               "%d of %d ops failed" % (failed, len(report)) if failed else
               "op(s) not found: %s" % ", ".join(missing) if missing else "0 ops checked")
        sys.stderr.write("pyop: check: %s\n" % why)
        return 1
    if inconclusive:
        # Not a pass: nothing failed, but some op was never run.
        sys.stderr.write("pyop: check: %d of %d ops inconclusive (infer_meta refused every "
                         "generated input): give samples or --input\n"
                         % (inconclusive, len(report)))
        return EXIT_INCONCLUSIVE
    return 0


def _report_lines(r):
    """The lines under an op's verdict: problems, then what ran, what
    infer_meta refused, warnings; an inconclusive op's reason."""
    lines = list(r["problems"])
    if r.get("inconclusive"):
        lines.append("inconclusive: " + r["inconclusive"])
    if r.get("ran"):
        ref = r.get("reference")
        how = "" if "execute" not in r["checked"] and "declare_launch_args" not in \
            r["checked"] else (" (each twice on one instance%s%s%s)"
                               % ("" if r.get("deterministic", True)
                                  else "; nondeterministic: values not compared",
                                  "; compared with the reference, rtol=%g atol=%g"
                                  % tuple(ref) if ref else "",
                                  ", and from %d threads at once" % r["threads"]
                                  if r.get("threads") else ""))
        lines.append("ran: %s%s" % (", ".join(r["ran"]), how))
    if r.get("refused") and r.get("ran"):
        lines.append("infer_meta refused: %s" % ", ".join(r["refused"]))
    lines.extend("warning: " + w for w in r.get("warnings", []))
    return lines


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


def _check_one_plugin(lib, args, ops, entry, report, broken):
    """Loads entry alone from a private directory standing for its own
    (_link_dir) and checks its ops. Paths under the private directory are
    reported as the real ones."""
    parent = os.path.dirname(entry)
    holder = _link_dir(parent, [os.path.basename(entry)])
    holders = {holder: parent}
    try:
        with_opp_path([holder])
        try:
            lib.load()
        except PyopError as e:
            broken.append({"plugin": entry, "problem": _real_paths(e.message, holders)})
            lib.c.pyop_unload()
            return
        _check_loaded(lib, args, ops, entry, report, holders)
        lib.c.pyop_unload()
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def _check_loaded(lib, args, ops, plugin, report, holders=None):
    """Checks the ops loaded now (those named in ops, or all) into report;
    paths under the private directories of holders are reported as the
    real ones."""
    start = len(report)
    try:
        _check_loaded_ops(lib, args, ops, plugin, report)
    finally:
        # Nothing of the plugins may outlive their unload (the bridge warns
        # about objects still referenced at shutdown).
        _index[:] = [None, {}, {}]
    for r in report[start:]:
        r["source"] = _real_paths(r["source"], holders or {})
        for key in ("problems", "warnings"):
            r[key] = [_real_paths(p, holders or {}) for p in r[key]]
        if r["inconclusive"]:
            r["inconclusive"] = _real_paths(r["inconclusive"], holders or {})


def _check_loaded_ops(lib, args, ops, plugin, report):
    samples = _plugin_samples()
    types = lib.op_types()
    for i in pending_impls(types):
        # Loaded, but a host cannot run it until it has a prototype: not a
        # pass (nothing ran), not a failure of the op.
        if ops and i["op_type"] not in ops:
            continue
        report.append({"op_type": i["op_type"], "status": "inconclusive", "checked": [],
                       "inputs": "no prototype", "source": i["impl_source"],
                       "plugin": plugin, "ran": [], "refused": [], "warnings": [],
                       "problems": [], "pending": True,
                       "inconclusive": "its implementation (%s) is %s; GE fails such a "
                       "load with \"canonical IR not found\""
                       % (i["impl_source"], PENDING_HINT)})
    for t in types:
        if ops and t not in ops:
            continue
        info = lib.op_info(t)
        if skip_unbound(info):  # a --proto REG_OP no plugin implements (a note says so)
            continue
        if args.input or args.attr:
            cases, origin = [Case("given inputs", *_given_case(info, args), "given")], "given"
        elif t in samples:
            fn, where = samples[t]
            try:
                cases, origin = _sample_cases(info, fn, where), "samples"
            except Exception as e:  # a broken samples function is the op's problem
                report.append({"op_type": t, "status": "failed", "checked": [],
                               "inputs": "samples", "source": info["proto_source"],
                               "plugin": plugin, "ran": [], "refused": [], "warnings": [],
                               "inconclusive": None,
                               "problems": ["samples (%s): %s: %s"
                                            % (where, type(e).__name__, e)]})
                continue
        else:
            cases, origin = _generated_cases(info), "generated"
        deterministic = is_deterministic(info)
        reference = find_reference(info)
        v = check_cases(lib, info, cases, deterministic, reference=reference)
        v["problems"][:0] = annotation_problems(info)
        checked = [c for c in ("infer_meta", "execute", "declare_launch_args")
                   if c in info["capabilities"]]
        status = "failed" if v["problems"] else "inconclusive" if v["inconclusive"] else "ok"
        report.append({"op_type": t, "status": status, "checked": checked, "inputs": origin,
                       "cases": len(cases), "ran": v["ran"], "refused": v["refused"],
                       "problems": v["problems"], "warnings": v["warnings"],
                       "inconclusive": v["inconclusive"], "deterministic": deterministic,
                       "reference": list(reference[1]) if reference else None,
                       "threads": v["threads"],
                       "source": info["proto_source"], "plugin": plugin})


def _given_case(info, args):
    """(inputs, attrs) from --input/--attr, as `pyop run` reads them."""
    return _inputs_from_args(info, args), _attrs_from_args(info, args)
