"""`pyop check`: loads the plugins as a host does and runs each op on
generated inputs, its samples or the inputs given, checking it against its
prototype and the host contract."""

import os
import shutil
import sys
import tempfile

from . import config
from .binding import DTYPES
from .errors import CliError, PyopError, UsageError
from .host import (_attrs_from_args, check_paths, _inputs_from_args, _other_python_note,
                   run_op, with_opp_path)
from .values import check_shape, _default_attr, _descs, dump_json, numel, _sample_values


def _check_cases(info):
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


def _generated_cases(info, dtype_name="float32", shape=(2, 3)):
    """(label, inputs, attrs) of the generated cases: float32[2,3] everywhere."""
    attrs = {a["name"]: _default_attr(a) for a in info["attrs"] if a["required"]}
    dtype = DTYPES.index(dtype_name)
    out = []
    for counts in _check_cases(info):
        inputs = [[(dtype, list(shape), _sample_values(dtype, numel(shape), k + j))
                   for j in range(n)] for k, n in enumerate(counts)]
        label = "inputs %s" % ", ".join(
            "%s=%s" % (i["name"], "absent" if n == 0 else
                       ("%d x " % n if i["kind"] == "dynamic" else "")
                       + "%s%s" % (dtype_name, list(shape)))
            for i, n in zip(info["inputs"], counts))
        out.append((label, inputs, attrs))
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
        shape = [int(d) for d in shape]
        check_shape(DTYPES.index(name), shape, what)
        values = list(values)
        if len(values) != numel(shape):
            raise ValueError("%s: %d values for shape %s" % (what, len(values), shape))
        return DTYPES.index(name), shape, values
    if hasattr(v, "dtype") and hasattr(v, "shape") and hasattr(v, "tolist"):
        name = str(v.dtype)
        if name not in DTYPES:
            raise ValueError("%s: numpy dtype %s has no pyop equivalent" % (what, name))
        shape = [int(d) for d in v.shape]
        check_shape(DTYPES.index(name), shape, what)
        flat = v.reshape(-1).tolist() if hasattr(v, "reshape") else list(v.tolist())
        return DTYPES.index(name), shape, flat
    raise ValueError("%s: expected (dtype, shape, values) or a numpy array, got %r"
                     % (what, type(v).__name__))


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
            attrs[name] = (_sample_tensor(value, "%s attr %s" % (what, name))
                           if types[name] == "Tensor" else value)
        out.append((case.get("label") or "sample %d" % n, inputs, attrs))
    return out


def check_cases(lib, info, cases):
    """Runs each (label, inputs, attrs) case; returns the problems found:
    a failed call (an output not produced or not as infer_meta said is
    PYOP_ECONTRACT), output descriptions other than infer_meta's, a write
    into an input not declared in mutates_args (bytes compared before and
    after, so writes through data_ptr count), a declared alias that is not
    the input's buffer."""
    problems = []
    for label, inputs, attrs in cases:
        try:
            res = run_op(lib, info, inputs, attrs)
        except CliError as e:
            problems.append("%s: %s: %s" % (label, e.status, e.message))
            continue
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
            continue
        if res.produced is None:
            continue
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


def check_op(lib, info, dtype_name="float32", shape=(2, 3)):
    """Runs infer_meta and execute on generated inputs; returns problems."""
    return check_cases(lib, info, _generated_cases(info, dtype_name, shape))


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
    # loads: a combined load that fails although no plugin fails alone (two
    # plugins defining one op differently) fails the check, naming why.
    with_opp_path(paths)
    try:
        lib.load()
    except PyopError as whole:
        lib.c.pyop_unload()
        for entry in _plugin_entries(paths):
            _check_one_plugin(lib, args, ops, entry, report, broken)
        if not report:
            raise whole  # nothing loaded at all: the load's own error
        if not broken or whole.status == "PYOP_ECONFLICT":
            load_error = whole
    else:
        _check_loaded(lib, args, ops, ":".join(paths), report)
        lib.c.pyop_unload()
    missing = [o for o in ops if o not in {r["op_type"] for r in report}]
    failed = sum(1 for r in report if r["status"] != "ok")
    other = _other_python_note()
    if args.json:
        dump_json({"ops": report, "failed": failed, "broken_plugins": broken,
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
                                          ", ".join(r["checked"]) or "prototype only",
                                          r["inputs"]))
            for p in r["problems"]:
                print("    " + p)
        for o in missing:
            print("%-24s not found" % o)
        print("%d ops checked, %d failed%s%s" % (len(report), failed,
                                                 ", %d plugins failed to load" % len(broken)
                                                 if broken else "",
                                                 ", the plugins do not load together"
                                                 if load_error else ""))
    if failed or broken or missing or not report or load_error:
        why = ("the plugins do not load together: %s"
               % load_error.message.splitlines()[0] if load_error else
               "%d of %d ops failed" % (failed, len(report)) if failed else
               "%d plugins failed to load" % len(broken) if broken else
               "op(s) not found: %s" % ", ".join(missing) if missing else "0 ops checked")
        sys.stderr.write("pyop: check: %s\n" % why)
        return 1
    return 0


def _check_one_plugin(lib, args, ops, entry, report, broken):
    """Loads entry alone from a private directory standing for its own (a
    link to it, and links to the helpers beside it: names starting with
    '_', which the loader never imports as plugins but a plugin may import)
    and checks its ops. Paths under the private directory are reported as
    the real ones."""
    parent = os.path.dirname(entry)
    holder = tempfile.mkdtemp(prefix="pyop-check-")
    try:
        for name in [os.path.basename(entry)] + sorted(
                n for n in os.listdir(parent) if n.startswith("_") and n != "__pycache__"):
            os.symlink(os.path.join(parent, name), os.path.join(holder, name))
        with_opp_path([holder])
        try:
            lib.load()
        except PyopError as e:
            broken.append({"plugin": entry,
                           "problem": ("%s: %s" % (e, e.detail)).replace(holder, parent)})
            lib.c.pyop_unload()
            return
        start = len(report)
        _check_loaded(lib, args, ops, entry, report)
        lib.c.pyop_unload()
        for r in report[start:]:
            r["source"] = r["source"].replace(holder, parent)
            r["problems"] = [p.replace(holder, parent) for p in r["problems"]]
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def _check_loaded(lib, args, ops, plugin, report):
    """Checks the ops loaded now (those named in ops, or all) into report."""
    samples = _plugin_samples()
    for t in lib.op_types():
        if ops and t not in ops:
            continue
        info = lib.op_info(t)
        if args.input or args.attr:
            cases, origin = [("given inputs",) + _given_case(info, args)], "given"
        elif t in samples:
            fn, where = samples[t]
            try:
                cases, origin = _sample_cases(info, fn, where), "samples"
            except Exception as e:  # a broken samples function is the op's problem
                report.append({"op_type": t, "status": "failed", "checked": [],
                               "inputs": "samples", "source": info["proto_source"],
                               "plugin": plugin,
                               "problems": ["samples (%s): %s: %s"
                                            % (where, type(e).__name__, e)]})
                continue
        else:
            cases, origin = _generated_cases(info), "generated float32[2,3]"
        problems = check_cases(lib, info, cases)
        checked = [c for c in ("infer_meta", "execute", "declare_launch_args")
                   if c in info["capabilities"]]
        report.append({"op_type": t, "status": "failed" if problems else "ok",
                       "checked": checked, "inputs": origin, "cases": len(cases),
                       "problems": problems, "source": info["proto_source"],
                       "plugin": plugin})


def _given_case(info, args):
    """(inputs, attrs) from --input/--attr, as `pyop run` reads them."""
    return _inputs_from_args(info, args), _attrs_from_args(info, args)
