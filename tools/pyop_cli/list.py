"""`pyop list`: every registered op with its prototype, capabilities and
source."""

import os

from .errors import opp_path_note, plural, too_deep_notes
from .host import with_opp_path
from .output import say
from .plugins import PENDING_HINT, pending_impls
from .proto import skip_unbound
from .values import dump_json


def cmd_list(lib, args):
    """The registered ops, then the implementations waiting for a prototype
    (loaded, not registered: an implementation-only plugin whose REG_OP the
    host has not declared; --json: "pending")."""
    with_opp_path(args.path)
    lib.load()
    types = lib.op_types()
    ops = [i for i in (lib.op_info(t) for t in types) if not skip_unbound(i)]
    pending = [{k: i[k] for k in ("op_type", "impl_key", "impl_source", "capabilities")}
               for i in pending_impls(types)]
    protos = getattr(args, "proto_files", None) or {}
    if args.json:
        dump_json({"ops": ops, "pending": pending})
        return 0
    if not ops and not pending:
        say("no ops registered (%s)" % (opp_path_note() or "ASCEND_CUSTOM_OPP_PATH=%s"
                                        % os.environ.get("ASCEND_CUSTOM_OPP_PATH")))
        for note in too_deep_notes():
            say("  " + note)
    for op in ops:
        say(signature_line(op))
        say("    capabilities: %s" % (", ".join(op["capabilities"]) or "none"))
        src = op["proto_source"]
        if op["op_type"] in protos and op["proto_key"] == "host:" + op["op_type"]:
            src = "%s, the REG_OP of --proto %s" % (src, protos[op["op_type"]])
        say("    prototype: %s (%s)" % (src, op["proto_key"]))
        if op["impl_key"]:
            say("    implementation: %s (%s)" % (op["impl_source"], op["impl_key"]))
        line = dtypes_line(op)
        if line:
            say("    " + line)
        line = lanes_line(op)
        if line:
            say("    " + line)
    for i in pending:
        say("%s: implementation %s" % (i["op_type"], PENDING_HINT))
        say("    capabilities: %s" % (", ".join(i["capabilities"]) or "none"))
        say("    implementation: %s (%s)" % (i["impl_source"], i["impl_key"]))
    return 0


def signature_line(op):
    """Op(x, bias?, xs[], acc (mutated); attr: int = 1) -> y, parts[], acc (input acc's
    buffer): optional inputs end in ?, dynamic inputs and outputs in [],
    inputs execute writes say (mutated), an output that is an input's buffer
    says so; an op without outputs has no arrow."""
    ins = ", ".join(i["name"] + ("?" if i["kind"] == "optional" else
                                 "[]" if i["kind"] == "dynamic" else "")
                    + (" (mutated)" if i.get("mutated") else "")
                    for i in op["inputs"])
    attrs = ", ".join("%s: %s%s" % (a["name"], a["type"],
                                    "" if a["required"] else " = %r" % (a["default"],))
                      for a in op["attrs"])
    outs = ", ".join(o["name"] + ("[]" if o["kind"] == "dynamic" else "")
                     + (" (input %s's buffer)" % o["alias"] if o.get("alias") else "")
                     for o in op["outputs"])
    return "%s(%s%s)%s" % (op["op_type"], ins, ("; " + attrs) if attrs else "",
                           " -> " + outs if outs else "")


def dtypes_line(op):
    """The prototype's data type constraints (pyop_dtype_set), e.g. "data
    types: x, y, z (one type T): float32, float16; idx: int32, int64"; ios
    of one symbol together, in prototype order; None when there are none."""
    groups = []  # [names, symbol, dtypes]
    for io in op["inputs"] + op["outputs"]:
        if not io["dtypes"] and not io["dtype_symbol"]:
            continue
        g = next((g for g in groups if io["dtype_symbol"] and g[1] == io["dtype_symbol"]), None)
        if g:
            g[0].append(io["name"])
        else:
            groups.append([[io["name"]], io["dtype_symbol"], io["dtypes"]])
    if not groups:
        return None
    return "data types: " + "; ".join(
        "%s%s: %s" % (", ".join(names), " (one type %s)" % sym if sym else "",
                      ", ".join(types) if types else "any")
        for names, sym, types in groups)


def lanes_line(op):
    """How the op runs when lanes were asked for (--lanes): "parallel: N
    lanes", or "serial (main interpreter): <why>"; None without lanes."""
    if op["lanes"]:
        return "parallel: %s" % plural(op["lanes"], "lane")
    if op["serial_reason"]:
        return "serial (main interpreter): %s" % op["serial_reason"]
    return None
