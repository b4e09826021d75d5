"""`pyop run`: one op on host buffers, its outputs printed."""

import sys

from .binding import DTYPES
from .errors import CliError
from .host import (_attrs_from_args, compile_options, _inputs_from_args, plugin_output_to_stderr,
                   run_op, set_compile_options, _warn_other_python)
from .values import dump_json, _fmt_values, read_values, shape_text


def run_as_a_host(lib, args, command):
    """Loads the plugins and runs args.op once as a host does: infer_meta,
    compile (with --compile-option), declare_launch_args where the op
    launches, then execute or the launch; the plugins' own output goes to
    stderr. (info, inputs, attrs, RunResult); the run's failure raised."""
    options = compile_options(args)
    with plugin_output_to_stderr():
        lib.load()
        unused = set_compile_options(options)
        if unused:
            sys.stderr.write("pyop: %s: warning: %s\n" % (command, unused))
        info = lib.op_info(args.op)
        inputs = _inputs_from_args(info, args)
        attrs = _attrs_from_args(info, args)
        res = run_op(lib, info, inputs, attrs)
    if res.error is not None:
        raise res.error
    return info, inputs, attrs, res


def cmd_run(lib, args):
    _warn_other_python("run", "run")
    info, _, _, res = run_as_a_host(lib, args, "run")
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
        if o.get("alias"):
            entry["alias"] = o["alias"]
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
        dump_json({"op_type": args.op, "outputs": result, "mutated_inputs": mutated})
    else:
        for r in result:
            alias = " (input %s's buffer)" % r["alias"] if r.get("alias") else ""
            if "tensors" in r:
                print("%s: %d tensors" % (r["name"], len(r["tensors"])))
                for j, t in enumerate(r["tensors"]):
                    print("%s[%d]: %s = %s" % (r["name"], j, shape_text(t["dtype"], t["shape"]),
                                               _fmt_values(t["values"])))
            else:
                print("%s: %s = %s%s" % (r["name"], shape_text(r["dtype"], r["shape"]),
                                         _fmt_values(r["values"]), alias))
        if not result:
            print("(no outputs)")
        for m in mutated:
            print("input %s after the call (mutated): %s = %s"
                  % (m["name"], shape_text(m["dtype"], m["shape"]), _fmt_values(m["values"])))
    return 0
