"""`pyop list`: every registered op with its prototype, capabilities and
source."""

import os

from .errors import opp_path_note
from .host import with_opp_path
from .values import dump_json


def cmd_list(lib, args):
    with_opp_path(args.path)
    lib.load()
    ops = [lib.op_info(t) for t in lib.op_types()]
    if args.json:
        dump_json({"ops": ops})
        return 0
    if not ops:
        print("no ops registered (%s)" % (opp_path_note() or "ASCEND_CUSTOM_OPP_PATH=%s"
                                          % os.environ.get("ASCEND_CUSTOM_OPP_PATH")))
    for op in ops:
        print(signature_line(op))
        print("    capabilities: %s" % (", ".join(op["capabilities"]) or "none"))
        print("    prototype: %s (%s)" % (op["proto_source"], op["proto_key"]))
        if op["impl_key"]:
            print("    implementation: %s (%s)" % (op["impl_source"], op["impl_key"]))
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
