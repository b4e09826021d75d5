"""Plugin isolation with the real bridge, in the host's own interpreter.

Run by ctest with the build's default Python (/usr/bin/python3.11), which
loads libpyop through ctypes exactly as a Python host would: libpyop finds
this very interpreter, loads the bridge built for it and imports the plugins
of ASCEND_CUSTOM_OPP_PATH.

    harden.py --list | LIBPYOP ARTIFACT_DIR FIXTURES CASE

The cases are CASES below (each in a fresh process, one ctest
hardening.host_python.<name> each; `--list` prints them for the build,
tests/cases.cmake); run() holds their bodies.

Every case asserts what a user sees (the op list, the warning lines of the
log hook), that no fixture "marker" file was written (each malicious file
writes one into $HARDEN_MARKERS when it runs), and that sys.path is the same
before the load, after it and after shutdown.
"""

import ctypes
import os
import shutil
import sys
import tempfile

LOG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)
OWNS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
ON_REG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
ON_UNREG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)


# The cases: (name, ctest labels, timeout in seconds, variants, what it
# checks). Variant "evil_env": the test runs with PYTHONPATH holding the
# malicious pyop.py and PYTHONSTARTUP set (tests/hardening/CMakeLists.txt).
# An uninstrumented python3 cannot load a sanitizer build of libpyop, hence
# "no-asan".
CASES = [
    ("shadow", "hardening no-asan", 120, "",
     "plugins named os.py / json.py / sitecustomize.py / usercustomize.py and a "
     ".pth file in a plugin directory"),
    ("pythonpath", "hardening no-asan", 120, "evil_env",
     "PYTHONPATH holds a malicious pyop.py (PYTHONSTARTUP is set too): libpyop's "
     "`pyop` is still the artifact directory's"),
    ("foreign_pyop", "hardening no-asan", 120, "evil_env",
     "the host imported the PYTHONPATH `pyop` itself before loading: plugins still "
     "get the real package, the host's module is back after shutdown"),
    ("cwd", "hardening no-asan", 120, "",
     "ASCEND_CUSTOM_OPP_PATH=\":<abs dir>:\" with evil .py files in the cwd: never "
     "imported"),
    ("relative", "hardening no-asan", 120, "",
     "relative elements (\"evil.py\", \".\", \"cwd_evil\") are refused with a "
     "warning through the log hook"),
]


# pyop_host_hooks; tests/examples/test_binding.py holds it to the header.
class Hooks(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("user", ctypes.c_void_p),
                ("owns_op", OWNS), ("on_register", ON_REG),
                ("on_unregister", ON_UNREG), ("log", LOG)]


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Lib:
    def __init__(self, path):
        self.c = ctypes.CDLL(path)
        self.c.pyop_last_error.restype = ctypes.c_char_p
        self.c.pyop_status_name.restype = ctypes.c_char_p
        self.c.pyop_op_list.argtypes = [
            ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)),
            ctypes.POINTER(ctypes.c_size_t)]
        self.c.pyop_free.argtypes = [ctypes.c_void_p]
        self.lines = []
        self._log = LOG(self._on_log)  # kept alive as long as the hooks
        hooks = Hooks()
        hooks.struct_size = ctypes.sizeof(Hooks)
        hooks.log = self._log
        check(self.c.pyop_set_host_hooks(ctypes.byref(hooks)) == 0, "set hooks")

    def _on_log(self, user, level, line):
        self.lines.append(line.decode("utf-8", "replace"))

    def call(self, name):
        rc = getattr(self.c, name)()
        if rc != 0:
            raise Failure("%s: %s: %s" % (name, self.c.pyop_status_name(rc).decode(),
                                          self.c.pyop_last_error().decode()))

    def ops(self):
        arr = ctypes.POINTER(ctypes.c_char_p)()
        n = ctypes.c_size_t()
        check(self.c.pyop_op_list(ctypes.byref(arr), ctypes.byref(n)) == 0, "op list")
        out = [arr[i].decode() for i in range(n.value)]
        self.c.pyop_free(arr)
        return out


def markers(d):
    return sorted(os.listdir(d))


def plugin_modules():
    return sorted(n for n in sys.modules if n.startswith("_pyop_plugin_"))


def run(lib, artifact, fixtures, case, marks):
    warnings = lambda: [l for l in lib.lines if ": warn: " in l]  # noqa: E731
    os_before = sys.modules["os"]
    path_before = list(sys.path)
    good = os.path.join(fixtures, "good")
    expect_ops = ["HardenAdd"]

    if case == "shadow":
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = os.path.join(fixtures, "shadow")
        expect_ops = ["ShadowJson", "ShadowOs", "SiteCustomizePlugin", "UserCustomizePlugin"]
    elif case in ("pythonpath", "foreign_pyop"):
        evil = os.path.join(fixtures, "evil_path")
        check(evil in sys.path, "the test needs PYTHONPATH=%s (sys.path %r)" % (evil, sys.path))
        check("pyop" not in sys.modules, "nothing imported pyop before the test")
        if case == "foreign_pyop":
            import pyop as host_pyop  # the host's own (malicious) pyop
            check(getattr(host_pyop, "EVIL", False), "the PYTHONPATH pyop is imported")
            os.unlink(os.path.join(marks, "evil_pyop"))
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = good
    elif case == "cwd":
        check(os.path.isfile(os.path.join(os.getcwd(), "evil.py")), "cwd is cwd_evil")
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = ":" + good + ":"
    elif case == "relative":
        check(os.path.isfile(os.path.join(os.getcwd(), "evil.py")), "cwd is cwd_evil")
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = "evil.py:.::" + good + ":../cwd_evil"
    else:
        raise Failure("unknown case %s" % case)

    lib.call("pyop_load")
    check(lib.ops() == expect_ops, "ops %r, want %r" % (lib.ops(), expect_ops))
    check(sys.path == path_before, "sys.path changed by the load: %r -> %r"
          % (path_before, sys.path))
    check(sys.modules["os"] is os_before, "sys.modules['os'] replaced")
    import json
    check(json.dumps({"a": [1, 2]}) == '{"a": [1, 2]}', "json.dumps works")
    check(os.path.dirname(json.__file__) == os.path.dirname(os.__file__) + "/json",
          "json is the standard library's (%s)" % json.__file__)
    check(not os.__file__.startswith(fixtures), "os is the standard library's")
    for m in ("sitecustomize", "usercustomize", "evil"):
        f = getattr(sys.modules.get(m), "__file__", "") or ""
        check(not f.startswith(fixtures), "%s imported from %s" % (m, f))
    check(not any(p.startswith(fixtures) for p in sys.path if p not in path_before),
          "a fixture directory was added to sys.path: %r" % sys.path)
    strays = [n for n, m in list(sys.modules.items())
              if not n.startswith("_pyop_plugin_") and n != "pyop" and not n.startswith("pyop.")
              and (getattr(m, "__file__", "") or "").startswith(fixtures)]
    check(strays == [], "modules imported from the fixtures: %r" % strays)
    real_pyop = sys.modules.get("pyop")
    check(real_pyop is not None and os.path.realpath(real_pyop.__file__) ==
          os.path.realpath(os.path.join(artifact, "python", "pyop", "__init__.py")),
          "sys.modules['pyop'] is the artifact directory's (%r)" % real_pyop)
    if case != "shadow":
        plug = [sys.modules[n] for n in plugin_modules() if n.endswith("_harden_ops")]
        check(len(plug) == 1, "one harden_ops plugin module: %r" % plugin_modules())
        check(plug[0].PYOP_FILE == real_pyop.__file__,
              "the plugin got pyop from %s" % plug[0].PYOP_FILE)

    if case == "foreign_pyop":
        check(any("sys.modules['pyop'] is another module" in l for l in warnings()),
              "the bridge warned about the host's pyop: %r" % lib.lines)
    if case == "relative":
        for elem in ("evil.py", ".", "../cwd_evil"):
            want = "ASCEND_CUSTOM_OPP_PATH element '%s' skipped: relative path refused" % elem
            check(any(want in l for l in warnings()), "warning %r in %r" % (want, lib.lines))
    elif case != "foreign_pyop":
        check(warnings() == [], "no warning: %r" % warnings())

    check(markers(marks) == [], "malicious files ran: %r" % markers(marks))

    lib.call("pyop_unload")
    check(lib.ops() == [], "unloaded")
    check(plugin_modules() == [], "plugin modules left: %r" % plugin_modules())
    lib.call("pyop_shutdown")
    check(sys.path == path_before, "sys.path changed by unload/shutdown: %r" % sys.path)
    check(sys.modules["os"] is os_before, "os after shutdown")
    if case == "foreign_pyop":
        check(getattr(sys.modules.get("pyop"), "EVIL", False),
              "the host's own pyop is back in sys.modules after shutdown")
    else:
        check("pyop" not in sys.modules, "pyop dropped at shutdown")
    check(markers(marks) == [], "malicious files ran: %r" % markers(marks))


def main(argv):
    if argv[1:] == ["--list"]:
        for name, labels, timeout, variants, _ in CASES:
            print("%s|%s|%d|%s" % (name, labels, timeout, variants))
        return 0
    names = [c[0] for c in CASES]
    if len(argv) != 5 or argv[4] not in names:
        if len(argv) == 5:
            print("harden.py: unknown case '%s'" % argv[4], file=sys.stderr)
        print("usage: harden.py --list | LIBPYOP ARTIFACT_DIR FIXTURES CASE\n  cases: %s"
              % " ".join(names), file=sys.stderr)
        return 2
    libpath, artifact, fixtures, case = argv[1:]
    fixtures = os.path.realpath(fixtures)
    marks = tempfile.mkdtemp(prefix="pyop-harden-")
    os.environ["HARDEN_MARKERS"] = marks
    try:
        # Before anything can import pyop: the pythonpath cases check the
        # host's import sees the malicious one (it writes a marker).
        lib = Lib(libpath)
        run(lib, artifact, fixtures, case, marks)
    except Failure as e:
        print("FAIL: %s: %s" % (case, e), file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(marks, ignore_errors=True)
    print("ok: %s" % case)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
