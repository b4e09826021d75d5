"""The pyop command with --lanes (issue 28 item 2): every subcommand that
takes it works with it, under the tree's Python (the command is a Python
program driving libpyop through ctypes: its allocator and log hook are
Python callbacks that lanes call out to). Run by tests/lanes/run.sh:

    python3.X cli_host.py PYOP PLUGINS CASE
    python3.X cli_host.py --list

Each case runs one subcommand with --lanes 2 on tests/lanes/plugins/copy
(LaneCopy, which `pyop check` passes): exit status 0, nothing from the C
library or CPython on stderr (free(), double free, Fatal Python error), and
the lanes verdict where the subcommand gives one: "parallel: 2 lanes", or
on CPython 3.12.0 - 3.12.3 the serial reason naming the version.
"""

import json
import os
import subprocess
import sys

CASES = ("list", "list_json", "doctor", "doctor_json", "check", "run", "bench")

if sys.argv[1:] == ["--list"]:
    print("\n".join(CASES))
    sys.exit(0)

PYOP, PLUGINS, CASE = sys.argv[1:4]
UNSAFE_END = (3, 12) <= sys.version_info[:3] < (3, 12, 4)
VERDICT = ("serial (main interpreter): CPython %d.%d.%d cannot end a sub-interpreter safely"
           % sys.version_info[:3] if UNSAFE_END else "parallel: 2 lanes")

ARGS = {
    "list": ["list"],
    "list_json": ["list", "--json"],
    "doctor": ["doctor"],
    "doctor_json": ["doctor", "--json"],
    "check": ["check"],
    "run": ["run", "LaneCopy", "--input", "x=int32[2]:7,-8"],
    "bench": ["bench", "LaneCopy", "--calls", "200", "--repeat", "2"],
}

env = dict(os.environ, ASCEND_CUSTOM_OPP_PATH=os.path.join(PLUGINS, "copy"))
env.pop("PYOP_TEST_LANES", None)
env.pop("PYOP_PYTHON", None)
p = subprocess.run([PYOP, "--lanes", "2"] + ARGS[CASE], env=env, capture_output=True,
                   text=True, timeout=240)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        sys.stderr.write("FAIL [%s] %s\n" % (CASE, what))


check(p.returncode == 0, "exit status %d" % p.returncode)
for bad in ("free()", "double free", "Fatal Python error", "Segmentation fault", "Traceback"):
    check(bad not in p.stderr, "stderr says %r" % bad)
if CASE in ("list", "doctor"):
    check(VERDICT in p.stdout, "no %r in:\n%s" % (VERDICT, p.stdout))
elif CASE.endswith("_json"):
    out = json.loads(p.stdout)
    ops = out["ops"] if CASE == "list_json" else out["lanes"]
    copy = [o for o in ops if o["op_type"] == "LaneCopy"]
    check(len(copy) == 1, "LaneCopy in %r" % ops)
    for o in copy:
        check(o["lanes"] == (0 if UNSAFE_END else 2), "lanes %r" % o["lanes"])
        check((o["serial_reason"] or "").startswith(VERDICT[len("serial (main interpreter): "):])
              if UNSAFE_END else not o["serial_reason"], "serial_reason %r" % o["serial_reason"])
elif CASE == "check":
    check("LaneCopy" in p.stdout and "1 op checked, 0 failed" in p.stdout, p.stdout)
elif CASE == "run":
    check("y: int32[2] = [7, -8]" in p.stdout, p.stdout)
elif CASE == "bench":
    check("LaneCopy: execute" in p.stdout, p.stdout)
if failures:
    sys.stderr.write("--- stdout:\n%s--- stderr:\n%s" % (p.stdout, p.stderr))
sys.stderr.write("[%s] %d failures\n" % (CASE, len(failures)))
sys.exit(1 if failures else 0)
