"""libpyop driven from Python with ctypes, end to end.

    python3 test_ctypes.py LIBPYOP PLUGINS_DIR [static|shared]

Loads libpyop (ctypes.CDLL, which releases the GIL around each call) into
this very interpreter: libpyop finds the running Python, loads the bridge
built for it and imports the plugins of ASCEND_CUSTOM_OPP_PATH (a private
copy of PLUGINS_DIR, the integration tests' "basic" plugins). Then it lists,
describes, runs ScaledAdd with a Python alloc_output callback and with
pre-allocated outputs, unloads and shuts down. Last, a load through
ctypes.PyDLL (the GIL kept, held by this Python code) is not said to hold
the GIL while running no Python.

Run by /usr/bin/python3.11 (interpreter statically linked into the
executable) and by pyenv's python3 (shared libpython): one bridge serves
both. The optional third argument states how this interpreter is linked
(checked in /proc/self/maps), so each run proves which case it covered.
Exit 77 (ctest SKIP_RETURN_CODE) when this Python is not CPython 3.11,
unless PYOP_TEST_ANY_PYTHON=1 says the build has a bridge for it too
(tests/multipython).
"""

import ctypes
import os
import shutil
import struct
import sys
import tempfile

SKIP = 77
FLOAT32 = 0
OK, ENOENT, EBUSY = 0, -3, -13


# The struct layouts of include/pyop/pyop.h, as the pyop command binds them
# (one ctypes binding in the tree; this test exercises it too).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
from pyop_cli import (ALLOC_OUTPUT, Attr, ExecCtx, HostHooks, OpInfo,  # noqa: E402
                      Tensor, TensorList)
from pyop_cli.binding import LOG_HOOK  # noqa: E402
del sys.path[0]


failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def bind(lib):
    sig = {
        "pyop_load": (ctypes.c_int, []),
        "pyop_unload": (ctypes.c_int, []),
        "pyop_shutdown": (ctypes.c_int, []),
        "pyop_check_need_load": (ctypes.c_int, [ctypes.POINTER(ctypes.c_bool)]),
        "pyop_last_error": (ctypes.c_char_p, []),
        "pyop_last_status": (ctypes.c_int, []),
        "pyop_status_name": (ctypes.c_char_p, [ctypes.c_int]),
        "pyop_runtime_key": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t]),
        "pyop_op_list": (ctypes.c_int, [ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)),
                                        ctypes.POINTER(ctypes.c_size_t)]),
        "pyop_free": (None, [ctypes.c_void_p]),
        "pyop_op_get": (ctypes.c_int, [ctypes.c_char_p,
                                       ctypes.POINTER(ctypes.POINTER(OpInfo))]),
        "pyop_op_info_release": (None, [ctypes.POINTER(OpInfo)]),
        "pyop_op_create": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(Attr),
                                          ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]),
        "pyop_op_destroy": (None, [ctypes.c_void_p]),
        "pyop_op_execute": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(TensorList),
                                           ctypes.c_size_t, ctypes.POINTER(Tensor),
                                           ctypes.c_size_t, ctypes.POINTER(ExecCtx)]),
        "pyop_op_infer_meta": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(TensorList),
                                              ctypes.c_size_t, ctypes.POINTER(Tensor),
                                              ctypes.c_size_t]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


def f32(values, buf=None):
    n = len(values)
    if buf is None:
        buf = (ctypes.c_float * n)(*values)
    t = Tensor()
    t.data = ctypes.cast(buf, ctypes.c_void_p)
    t.dtype = FLOAT32
    t.ndim = 1
    t.shape[0] = n
    t.nbytes = 4 * n
    return t, buf


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    libpath, plugins = sys.argv[1], sys.argv[2]
    expect = sys.argv[3] if len(sys.argv) == 4 else None
    impl = sys.implementation.name
    any_python = os.environ.get("PYOP_TEST_ANY_PYTHON") == "1"
    if impl != "cpython" or (sys.version_info[:2] != (3, 11) and not any_python):
        print("skip: %s is %s %d.%d, the bridge is built for CPython 3.11"
              % (sys.executable, impl, *sys.version_info[:2]))
        return SKIP
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "libpython" in line})
    linked = "shared" if libs else "static"
    print("python: %s %s (interpreter %s)" % (
        sys.executable, sys.version.split()[0],
        "in " + libs[0] if libs else "statically linked into the executable"))
    if expect is not None and expect != linked:
        print("FAIL: expected a %s interpreter, this one is %s" % (expect, linked),
              file=sys.stderr)
        return 1

    tmp = tempfile.mkdtemp(prefix="pyop-e2e-ctypes-")
    try:
        opp = os.path.join(tmp, "basic")
        shutil.copytree(plugins, opp)
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = opp
        return run(libpath, opp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(libpath, opp):
    lib = ctypes.CDLL(libpath)
    bind(lib)

    def err():
        return lib.pyop_last_error().decode(errors="replace")

    def name(rc):
        return lib.pyop_status_name(rc).decode()

    key = ctypes.create_string_buffer(64)
    check(lib.pyop_runtime_key(key, 64) == OK, "runtime key: " + err())
    want_key = ("cp%d%d-x86_64" % sys.version_info[:2]).encode()
    check(key.value == want_key, "runtime key %r, expected %r" % (key.value, want_key))

    need = ctypes.c_bool(False)
    check(lib.pyop_check_need_load(ctypes.byref(need)) == OK and need.value, "need_load")

    rc = lib.pyop_load()
    if rc != OK:
        check(False, "pyop_load: %s: %s" % (name(rc), err()))
        return 1

    types = ctypes.POINTER(ctypes.c_char_p)()
    count = ctypes.c_size_t()
    check(lib.pyop_op_list(ctypes.byref(types), ctypes.byref(count)) == OK, "list: " + err())
    names = [types[i].decode() for i in range(count.value)]
    lib.pyop_free(types)
    check(names == ["IoKinds", "PkgDouble", "ScaledAdd", "ShadowJson"], "ops %r" % names)

    info = ctypes.POINTER(OpInfo)()
    check(lib.pyop_op_get(b"ScaledAdd", ctypes.byref(info)) == OK, "get: " + err())
    i = info.contents
    src = i.proto_source.decode()
    check(src.startswith(os.path.join(opp, "ops_file.py") + ":"), "source %s" % src)
    check(i.n_inputs == 2 and i.inputs[0].name == b"x" and i.inputs[1].name == b"y",
          "inputs")
    check(i.n_attrs == 1 and i.attrs[0].name == b"alpha" and not i.attrs[0].required
          and i.attrs[0].default_value.u.f == 1.0, "attr alpha")
    check(i.capabilities == 3, "caps %d" % i.capabilities)
    lib.pyop_op_info_release(info)

    # ScaledAdd(alpha=2): an int given for a float attribute.
    attr = Attr()
    attr.name = b"alpha"
    attr.value.type = 1  # PYOP_ATTR_INT
    attr.value.u.i = 2
    op = ctypes.c_void_p()
    rc = lib.pyop_op_create(b"ScaledAdd", ctypes.byref(attr), 1, ctypes.byref(op))
    check(rc == OK and op.value, "create: %s: %s" % (name(rc), err()))
    tx, bx = f32([1.0, 2.0, 3.0, 4.0])
    ty, by = f32([10.0, 20.0, 30.0, 40.0])
    ins = (TensorList * 2)()
    ins[0].items, ins[0].count = ctypes.pointer(tx), 1
    ins[1].items, ins[1].count = ctypes.pointer(ty), 1
    want = [1 + 20.0, 2 + 40.0, 3 + 60.0, 4 + 80.0]

    # 1. Outputs allocated by a Python callback (re-entered from the bridge
    # while the plugin's execute runs on this thread).
    keep = []
    calls = []

    def alloc_output(user, index, t):
        calls.append((index, t.contents.nbytes, tuple(t.contents.shape[:t.contents.ndim])))
        buf = ctypes.create_string_buffer(t.contents.nbytes)
        keep.append(buf)
        t.contents.data = ctypes.cast(buf, ctypes.c_void_p)
        return 0

    ctx = ExecCtx()
    ctx.struct_size = ctypes.sizeof(ExecCtx)
    ctx.alloc_output = ALLOC_OUTPUT(alloc_output)
    outs = (Tensor * 1)()
    rc = lib.pyop_op_execute(op, ins, 2, outs, 1, ctypes.byref(ctx))
    check(rc == OK, "execute (callback): %s: %s" % (name(rc), err()))
    check(calls == [(0, 16, (4,))], "alloc_output calls %r" % calls)
    if rc == OK:
        got = list(struct.unpack("=4f", ctypes.string_at(outs[0].data, 16)))
        check(got == want, "callback output %r, expected %r" % (got, want))

    # 2. Pre-allocated output (alloc_output NULL).
    pctx = ExecCtx()
    pctx.struct_size = ctypes.sizeof(ExecCtx)
    to, bo = f32([0.0] * 4)
    outs[0] = to
    rc = lib.pyop_op_execute(op, ins, 2, outs, 1, ctypes.byref(pctx))
    check(rc == OK, "execute (pre-allocated): %s: %s" % (name(rc), err()))
    check(list(bo) == want, "pre-allocated output %r" % list(bo))

    # 3. The host callback fails: PYOP_EHOST, and the next call works.
    def refuse(user, index, t):
        return 5

    rctx = ExecCtx()
    rctx.struct_size = ctypes.sizeof(ExecCtx)
    rctx.alloc_output = ALLOC_OUTPUT(refuse)
    rc = lib.pyop_op_execute(op, ins, 2, outs, 1, ctypes.byref(rctx))
    check(name(rc) == "PYOP_EHOST" and "alloc_output" in err(),
          "refusing callback: %s: %s" % (name(rc), err()))
    rc = lib.pyop_op_execute(op, ins, 2, outs, 1, ctypes.byref(ctx))
    check(rc == OK, "execute after a refused allocation: %s" % err())

    # 4. A Python exception in infer_meta, seen from this Python.
    short_y, bs = f32([1.0])
    ins[1].items = ctypes.pointer(short_y)
    rc = lib.pyop_op_infer_meta(op, ins, 2, outs, 1)
    check(name(rc) == "PYOP_EPYTHON" and "ValueError" in err() and "shapes differ" in err(),
          "infer_meta raising: %s: %s" % (name(rc), err()))
    check(sys.exc_info() == (None, None, None), "an exception leaked into the host Python")

    # 5. Unload refuses while the instance lives; then everything goes.
    rc = lib.pyop_unload()
    check(rc == EBUSY and "ScaledAdd" in err(), "unload with a live op: %s: %s"
          % (name(rc), err()))
    lib.pyop_op_destroy(op)
    check(lib.pyop_unload() == OK, "unload: " + err())
    check(lib.pyop_op_get(b"ScaledAdd", ctypes.byref(info)) == ENOENT, "gone after unload")
    plugin_modules = [m for m in sys.modules if m.startswith("_pyop_plugin_")]
    check(not plugin_modules, "plugin modules left in sys.modules: %r" % plugin_modules)

    # 6. Load again, then shut down: the interpreter (ours) keeps running.
    check(lib.pyop_load() == OK, "second load: " + err())
    check(lib.pyop_shutdown() == OK, "shutdown: " + err())
    check(lib.pyop_load() == OK, "load after shutdown: " + err())
    check(lib.pyop_shutdown() == OK, "second shutdown: " + err())
    check(sum(range(10)) == 45, "the interpreter is still usable")

    # 7. A KeyboardInterrupt raised in plugin code is an interrupt: the call's
    # status is PYOP_EINTR and this Python (the host) gets KeyboardInterrupt
    # as the call returns, as for Ctrl-C (issue 17, item 7).
    intr = os.path.join(os.path.dirname(opp), "interrupt")
    os.mkdir(intr)
    with open(os.path.join(intr, "kbd.py"), "w") as f:
        f.write("import pyop\n"
                "from pyop import TensorDesc\n\n"
                "@pyop.register_op(op_type='Kbd')\n"
                "def kbd(x: TensorDesc) -> TensorDesc:\n"
                "    raise KeyboardInterrupt('interrupted in a plugin')\n")
    os.environ["ASCEND_CUSTOM_OPP_PATH"] = intr
    check(lib.pyop_load() == OK, "load of the interrupting plugin: " + err())
    kop = ctypes.c_void_p()
    check(lib.pyop_op_create(b"Kbd", None, 0, ctypes.byref(kop)) == OK, "create Kbd: " + err())
    kins = (TensorList * 1)()
    kins[0].items, kins[0].count = ctypes.pointer(tx), 1
    kouts = (Tensor * 1)()
    interrupted = False
    try:
        lib.pyop_op_infer_meta(kop, kins, 1, kouts, 1)
        for _ in range(100):  # a pending interrupt is raised here at the latest
            pass
    except KeyboardInterrupt:
        interrupted = True
    status = name(lib.pyop_last_status())
    check(interrupted, "the host Python did not get the plugin's KeyboardInterrupt "
          "(status %s: %s)" % (status, err()))
    check(status == "PYOP_EINTR" and "KeyboardInterrupt: interrupted in a plugin" in err()
          and "kbd.py" in err(), "interrupted infer_meta: %s: %s" % (status, err()))
    lib.pyop_op_destroy(kop)
    check(lib.pyop_shutdown() == OK, "shutdown after the interrupt: " + err())
    check(sum(range(10)) == 45, "the interpreter is still usable after the interrupt")

    # 8. The same at load: a plugin whose import raises KeyboardInterrupt
    # fails the load with PYOP_EINTR, registers nothing, and this Python gets
    # the KeyboardInterrupt as pyop_load returns.
    intr_load = os.path.join(os.path.dirname(opp), "interrupt_load")
    os.mkdir(intr_load)
    with open(os.path.join(intr_load, "kbd_import.py"), "w") as f:
        f.write("raise KeyboardInterrupt('interrupted while imported')\n")
    os.environ["ASCEND_CUSTOM_OPP_PATH"] = intr_load
    interrupted = False
    try:
        lib.pyop_load()
        for _ in range(100):  # a pending interrupt is raised here at the latest
            pass
    except KeyboardInterrupt:
        interrupted = True
    status = name(lib.pyop_last_status())
    check(interrupted, "the host Python did not get the import's KeyboardInterrupt "
          "(status %s: %s)" % (status, err()))
    check(status == "PYOP_EINTR" and "interrupted while imported" in err(),
          "interrupted load: %s: %s" % (status, err()))
    check(lib.pyop_op_create(b"Kbd", None, 0, ctypes.byref(kop)) != OK,
          "an interrupted load registered an op")
    check(lib.pyop_shutdown() == OK, "shutdown after the interrupted load: " + err())

    # 9. pyop_load through ctypes.PyDLL: this thread holds the GIL, but it
    # runs Python code (this one) that called libpyop, so the load does not
    # warn that the loading thread keeps the GIL while running no Python
    # (batch 18 survivor, session 15).
    os.environ["ASCEND_CUSTOM_OPP_PATH"] = opp
    pylib = ctypes.PyDLL(libpath)
    bind(pylib)
    lines = []

    def log(_user, level, line):
        lines.append((level, line.decode(errors="replace")))

    hooks = HostHooks(ctypes.sizeof(HostHooks), None, None, None, None, LOG_HOOK(log))
    check(pylib.pyop_set_host_hooks(ctypes.byref(hooks)) == OK, "log hook: " + err())
    level = pylib.pyop_get_log_level()
    check(pylib.pyop_set_log_level(3) == OK, "log level: " + err())
    check(pylib.pyop_load() == OK, "load through ctypes.PyDLL: " + err())
    check(pylib.pyop_shutdown() == OK, "shutdown through ctypes.PyDLL: " + err())
    pylib.pyop_set_log_level(level)
    pylib.pyop_set_host_hooks(None)
    check(lines, "the log hook got no line at the debug level")
    warned = [ln for _, ln in lines if "holds the GIL" in ln]
    check(not warned, "a load called from Python code through ctypes.PyDLL was said to hold "
          "the GIL while running no Python: %r" % warned)

    if failures:
        print("%d failures" % len(failures), file=sys.stderr)
        return 1
    print("ctypes e2e: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
