"""`pyop list`: every registered op with its prototype, capabilities and
source."""

import os

from .errors import opp_path_note
from .host import plugin_output_to_stderr, with_opp_path
from .plugins import PENDING_HINT, pending_impls
from .values import dump_json


def cmd_list(lib, args):
    """The registered ops, then the implementations waiting for a prototype
    (loaded, not registered: an implementation-only plugin whose REG_OP the
    host has not declared; --json: "pending")."""
    with_opp_path(args.path)
    with plugin_output_to_stderr():  # stdout (--json) holds the listing only
        lib.load()
    types = lib.op_types()
    ops = [lib.op_info(t) for t in types]
    pending = [{k: i[k] for k in ("op_type", "impl_key", "impl_source", "capabilities")}
               for i in pending_impls(types)]
    protos = getattr(args, "proto_files", None) or {}
    if args.json:
        dump_json({"ops": ops, "pending": pending})
        return 0
    if not ops and not pending:
        print("no ops registered (%s)" % (opp_path_note() or "ASCEND_CUSTOM_OPP_PATH=%s"
                                          % os.environ.get("ASCEND_CUSTOM_OPP_PATH")))
    for op in ops:
        print(signature_line(op))
        print("    capabilities: %s" % (", ".join(op["capabilities"]) or "none"))
        src = op["proto_source"]
        if op["op_type"] in protos and op["proto_key"] == "host:" + op["op_type"]:
            src = "%s, the REG_OP of --proto %s" % (src, protos[op["op_type"]])
        print("    prototype: %s (%s)" % (src, op["proto_key"]))
        if op["impl_key"]:
            print("    implementation: %s (%s)" % (op["impl_source"], op["impl_key"]))
        line = lanes_line(op)
        if line:
            print("    " + line)
    for i in pending:
        print("%s: implementation %s" % (i["op_type"], PENDING_HINT))
        print("    capabilities: %s" % (", ".join(i["capabilities"]) or "none"))
        print("    implementation: %s (%s)" % (i["impl_source"], i["impl_key"]))
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


def lanes_line(op):
    """How the op runs when lanes were asked for (--lanes): "parallel: N
    lanes", or "serial (main interpreter): <why>"; None without lanes."""
    if op["lanes"]:
        return "parallel: %d lanes" % op["lanes"]
    if op["serial_reason"]:
        return "serial (main interpreter): %s" % op["serial_reason"]
    return None
