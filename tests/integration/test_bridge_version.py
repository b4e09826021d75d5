"""A bridge runs only in the Python it was built for: loaded into a CPython
of another minor version (the process's own symbols satisfy it), its
set_config refuses with PYOP_EABI naming both versions; in its own Python
set_config succeeds (the control).

Usage: test_bridge_version.py BRIDGE_SO BUILD_PYTHON. The other Python is
the first CPython 3.x of another minor found in $PYENV_ROOT/versions or as
/usr/bin/python3.N (never PATH's python3); exit 77 (skipped, saying so) when
there is none. Drives the bridge ABI through ctypes (include/pyop/
bridge_abi.h: the request, the loader services, the API table, the config).
"""

import ctypes
import glob
import os
import re
import subprocess
import sys

PYOP_EABI = -8  # include/pyop/pyop.h, PYOP_STATUS_MAP


class Str(ctypes.Structure):
    _fields_ = [("data", ctypes.c_char_p), ("len", ctypes.c_size_t)]


SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_int, Str)
LOG = ctypes.CFUNCTYPE(None, ctypes.c_int, Str)


class Services(ctypes.Structure):  # ABI 1.0's members: set_error, log
    _fields_ = [("struct_size", ctypes.c_size_t), ("set_error", SET_ERROR), ("log", LOG)]


class Request(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("abi_major", ctypes.c_uint32),
                ("abi_minor", ctypes.c_uint32), ("services", ctypes.POINTER(Services))]


class Config(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("artifact_dir", Str),
                ("manifest_libpython", Str), ("flags", ctypes.c_uint32),
                ("reserved_", ctypes.c_uint32), ("lanes", ctypes.c_uint32),
                ("reserved_lanes_", ctypes.c_uint32)]


class Api(ctypes.Structure):  # its first members: enough for set_config
    _fields_ = [("struct_size", ctypes.c_size_t), ("abi_major", ctypes.c_uint32),
                ("abi_minor", ctypes.c_uint32), ("build_info", Str),
                ("set_config", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Config)))]


def configure(bridge):
    """In this process: (set_config's status, the error it recorded), or
    (None, why) when the bridge cannot even be loaded here (a Python that
    lacks a symbol it uses)."""
    errors = []
    set_error = SET_ERROR(lambda status, msg: errors.append(msg.data[:msg.len].decode()))
    log = LOG(lambda level, msg: None)
    services = Services(ctypes.sizeof(Services), set_error, log)
    try:
        lib = ctypes.CDLL(bridge)
    except OSError as e:
        return None, "not loadable: %s" % e
    entry = lib.pyop_bridge_entry
    entry.restype = ctypes.c_int
    entry.argtypes = [ctypes.POINTER(Request), ctypes.POINTER(ctypes.POINTER(Api))]
    req = Request(ctypes.sizeof(Request), 1, 0, ctypes.pointer(services))
    api = ctypes.POINTER(Api)()
    rc = entry(ctypes.byref(req), ctypes.byref(api))
    if rc != 0:
        return rc, "pyop_bridge_entry: %d %s" % (rc, errors)
    d = os.path.dirname(bridge).encode()
    cfg = Config(ctypes.sizeof(Config), Str(d, len(d)), Str(None, 0), 0, 0, 0, 0)
    rc = api.contents.set_config(ctypes.byref(cfg))
    return rc, errors[-1] if errors else ""


def other_pythons(build_python):
    """CPython 3.x executables of other minor versions than build_python,
    newer ones first (an older one may lack symbols the bridge uses)."""
    def minor(exe):
        r = subprocess.run([exe, "-c", "import sys; print(sys.implementation.name, "
                            "sys.version_info[1], sys.abiflags)"],
                           capture_output=True, text=True, timeout=60)
        return r.stdout.split() if r.returncode == 0 else None
    mine = minor(build_python)
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = sorted(glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3.*")) +
                   glob.glob("/usr/bin/python3.*"))
    out, seen = [], {mine[1]}
    for exe in found:
        if not re.fullmatch(r"python3\.\d+", os.path.basename(exe)) or \
                not os.access(exe, os.X_OK):
            continue
        m = minor(exe)
        if m and m[0] == "cpython" and len(m) == 2 and m[1] not in seen:
            seen.add(m[1])
            out.append((exe, m[1]))
    return sorted(out, key=lambda em: -int(em[1]))


def main():
    bridge, build_python = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3 and sys.argv[3] == "--configure":
        rc, msg = configure(bridge)
        print("%s %s" % ("unloadable" if rc is None else rc, msg))
        return 0
    me = os.path.abspath(__file__)
    own = subprocess.run([build_python, me, bridge, build_python, "--configure"],
                         capture_output=True, text=True, timeout=120)
    print("in %s: %s%s" % (build_python, own.stdout.strip(), own.stderr.strip()))
    if own.returncode != 0 or not own.stdout.startswith("0 "):
        print("FAIL: the bridge refused the Python it was built for")
        return 1
    tried = 0
    for exe, minor in other_pythons(build_python):
        other = subprocess.run([exe, me, bridge, build_python, "--configure"],
                               capture_output=True, text=True, timeout=120)
        print("in %s: %s%s" % (exe, other.stdout.strip(), other.stderr.strip()))
        if other.stdout.startswith("unloadable "):
            continue  # refused by the dynamic loader already: not what is tested here
        tried += 1
        want = "but the process runs Python 3.%s" % minor
        if other.returncode != 0 or not other.stdout.startswith("%d " % PYOP_EABI) or \
                "bridge built for Python 3." not in other.stdout or want not in other.stdout:
            print("FAIL: in Python 3.%s the bridge did not refuse with PYOP_EABI (%s)"
                  % (minor, want))
            return 1
    if not tried:
        print("skip: no CPython of another minor version than %s loads the bridge here"
              % build_python)
        return 77
    print("ok (%d other Pythons)" % tried)
    return 0


if __name__ == "__main__":
    sys.exit(main())
