"""`pyop run`: one op on host buffers, its outputs printed (and the inputs
it generated)."""

import sys

from .binding import DTYPES
from .errors import CliError, plural
from .host import (_attrs_from_args, compile_options, _inputs_from_args,
                   run_op, set_compile_options, _warn_other_python)
from .output import say
from .supervise import activity, LOADING
from .values import decode_values, dump_json, _fmt_values, parse_input, read_values, shape_text


def _inputs_used(info, args, res):
    """Each input tensor the op ran on, as it was before the call: {"name"
    (xs[1] for a tensor of a dynamic input), "dtype", "shape", "values" (as
    the op got them: float16 and bfloat16 rounded), "generated" (its
    --input gave no VALUES, so the command made them)}, in the prototype's
    order."""
    generated = {}
    for text in args.input or []:
        name, _, _, values = parse_input(text)
        generated.setdefault(name, []).append(values is None)
    out = []
    for k, i in enumerate(info["inputs"]):
        for j, t in enumerate(res.inputs[k]):
            name = i["name"] if i["kind"] != "dynamic" else "%s[%d]" % (i["name"], j)
            out.append({"name": name, "dtype": DTYPES[t.dtype], "shape": list(t.shape[:t.ndim]),
                        "values": decode_values(t.dtype, res.before[k][j]),
                        "generated": generated[i["name"]][j]})
    return out


def run_as_a_host(lib, args, command, seen=None):
    """Loads the plugins and runs args.op once as a host does: infer_meta,
    compile (with --compile-option), declare_launch_args where the op
    launches, then execute or the launch; the plugins' own output goes to
    stderr (output.py). When this process is the command's worker
    (supervise.py), each step that runs plugin code is said first. (info,
    inputs, attrs, RunResult); the run's failure raised,
    after seen(info, res) when given (what the run was given, failed or
    not)."""
    options = compile_options(args)
    activity(LOADING)
    lib.load()
    unused = set_compile_options(options)
    if unused:
        sys.stderr.write("pyop: %s: warning: %s\n" % (command, unused))
    info = lib.op_info(args.op)
    inputs = _inputs_from_args(info, args)
    attrs = _attrs_from_args(info, args)
    res = run_op(lib, info, inputs, attrs, stage=lambda name: activity(name, args.op))
    if seen is not None:
        seen(info, res)
    if res.error is not None:
        raise res.error
    return info, inputs, attrs, res


def cmd_run(lib, args):
    _warn_other_python("run", "run")
    used = []

    def generated(info, res):
        # The inputs the command made up (the ones given are on the command
        # line), printed also when the op then fails on them.
        used.extend(_inputs_used(info, args, res) if res.before else [])
        for u in used if not args.json else []:
            if u["generated"]:
                say("input %s (generated): %s = %s" % (u["name"], shape_text(u["dtype"],
                    u["shape"]), _fmt_values(u["values"])))

    info, _, _, res = run_as_a_host(lib, args, "run", generated)
    if res.produced is None:
        raise CliError('op "%s" has no execute implementation (and no kernel launch); '
                       'it has: %s' % (args.op, ", ".join(info["capabilities"]) or "nothing"),
                       "PYOP_EUNSUPPORTED", args.op)
    result = []
    for k, o in enumerate(info["outputs"]):
        tensors = res.produced[k]
        entry = {"name": o["name"], "kind": o["kind"],
                 "tensors": [{"dtype": DTYPES[t.dtype], "shape": list(t.shape[:t.ndim]),
                              "values": vals} for t, vals in tensors]}
        if o["kind"] != "dynamic":  # the one tensor's fields at the top (stable --json)
            entry.update(entry["tensors"][0])
            del entry["tensors"]
        entry["alias"] = o.get("alias")  # the input whose buffer it is, or None
        result.append(entry)
    mutated = []
    for k, i in enumerate(info["inputs"]):
        if not i.get("mutated"):
            continue
        for j, t in enumerate(res.inputs[k]):
            name = i["name"] if i["kind"] != "dynamic" else "%s[%d]" % (i["name"], j)
            mutated.append({"name": name, "dtype": DTYPES[t.dtype],
                            "shape": list(t.shape[:t.ndim]), "values": read_values(t)})
    if args.json:
        dump_json({"op_type": args.op, "inputs": used, "outputs": result,
                   "mutated_inputs": mutated})
    else:
        for r in result:
            alias = " (input %s's buffer)" % r["alias"] if r.get("alias") else ""
            if "tensors" in r:
                say("%s: %s" % (r["name"], plural(len(r["tensors"]), "tensor")))
                for j, t in enumerate(r["tensors"]):
                    say("%s[%d]: %s = %s" % (r["name"], j, shape_text(t["dtype"], t["shape"]),
                                             _fmt_values(t["values"])))
            else:
                say("%s: %s = %s%s" % (r["name"], shape_text(r["dtype"], r["shape"]),
                                       _fmt_values(r["values"]), alias))
        if not result:
            say("(no outputs)")
        for m in mutated:
            say("input %s after the call (mutated): %s = %s"
                % (m["name"], shape_text(m["dtype"], m["shape"]), _fmt_values(m["values"])))
    return 0
