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
        ins = ", ".join(i["name"] + ("?" if i["kind"] == "optional" else
                                     "[]" if i["kind"] == "dynamic" else "")
                        for i in op["inputs"])
        attrs = ", ".join("%s: %s%s" % (a["name"], a["type"],
                                        "" if a["required"] else " = %r" % (a["default"],))
                          for a in op["attrs"])
        outs = ", ".join(o["name"] for o in op["outputs"])
        print("%s(%s%s) -> %s" % (op["op_type"], ins, ("; " + attrs) if attrs else "", outs))
        print("    capabilities: %s" % (", ".join(op["capabilities"]) or "none"))
        print("    prototype: %s (%s)" % (op["proto_source"], op["proto_key"]))
        if op["impl_key"]:
            print("    implementation: %s (%s)" % (op["impl_source"], op["impl_key"]))
    return 0
