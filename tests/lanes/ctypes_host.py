"""A Python program that drives libpyop through ctypes (issue 28 items 1 and
2), as the pyop command does: the host's own callbacks (the output
allocator, the log hook) are Python functions that ctypes enters from inside
libpyop -- here, from inside a lane's execute and load. Run by
tests/lanes/run.sh with the tree's Python:

    python3.X ctypes_host.py LIBPYOP PYOP_CLI_PARENT PLUGINS CASE
    python3.X ctypes_host.py --list

Cases:
  pydll   through ctypes.PyDLL (every call keeps the GIL and this thread's
          state attached): 2 lanes; load (a Python log hook at DEBUG sees
          the lanes' lines), two Scale instances in two lanes each execute
          with a Python allocator, pyop_shutdown; then Python still runs on
          this thread, a load and shutdown again, and the program ends
          normally (Py_FinalizeEx)
  cdll    the same through ctypes.CDLL (every call releases the GIL)
  noshut  as cdll without pyop_shutdown, one instance left alive: the
          program just ends (Python finalizes with the lanes loaded; their
          end is libpyop's atexit callback); an atexit callback of the
          program's, run after that one, executes the instance left
          (PYOP_ENOTINIT: its lane ended), its infer_meta too, destroys it, and new instances
          are refused the same way; exit status 0
  noshut_mapped  as noshut, after a session with 2 lanes whose plugin Pin
          (serial: tests/lanes/plugins/pin) keeps its input Tensor: its
          shutdown keeps the bridge's image mapped and drops the lanes'
          atexit callback, and the noshut load runs in that same image:
          it registers the callback again, which ends the lanes at exit

Where CPython cannot end lanes safely (3.12.0 - 3.12.3, gh-119213) lanes are
forced with the test seam (PYOP_TEST_LANES=force) and the program ends with
os._exit (no finalization, which would crash in CPython there).
"""

import ctypes
import os
import sys
import threading

CASES = ("pydll", "cdll", "noshut", "noshut_mapped")

if sys.argv[1:] == ["--list"]:
    print("\n".join(CASES))
    sys.exit(0)

LIBPYOP, CLI_PARENT, PLUGINS, CASE = sys.argv[1:5]
sys.path.insert(0, CLI_PARENT)
from pyop_cli.binding import (ALLOC_OUTPUT, ALLOC_WORKSPACE, ExecCtx, HostHooks,  # noqa: E402
                              LOG_HOOK, Options, Tensor, TensorList)

UNSAFE_END = (3, 12) <= sys.version_info[:3] < (3, 12, 4)
if UNSAFE_END:
    os.environ["PYOP_TEST_LANES"] = "force"
else:
    os.environ.pop("PYOP_TEST_LANES", None)
os.environ["ASCEND_CUSTOM_OPP_PATH"] = os.path.join(PLUGINS, "pure")

failures = []


def interp_id():
    """The id of the interpreter this code runs in (0: the main one)."""
    try:
        import _interpreters as i  # 3.13
    except ImportError:
        import _xxsubinterpreters as i  # 3.12
    cur = i.get_current()
    return int(cur[0] if isinstance(cur, tuple) else cur)


MAIN = interp_id()
wrong = []  # (callback, interpreter id) of each callback run elsewhere
kept = []  # objects made in the callbacks, kept to the end (then freed)


def check(cond, what):
    if not cond:
        failures.append(what)
        sys.stderr.write("FAIL [%s] %s\n" % (CASE, what))


lib = (ctypes.PyDLL if CASE == "pydll" else ctypes.CDLL)(LIBPYOP)
lib.pyop_last_error.restype = ctypes.c_char_p
lib.pyop_op_create.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t,
                               ctypes.POINTER(ctypes.c_void_p)]
lib.pyop_op_lane.argtypes = [ctypes.c_void_p]
lib.pyop_op_lane.restype = ctypes.c_uint32
lib.pyop_op_destroy.argtypes = [ctypes.c_void_p]
lib.pyop_op_infer_meta.argtypes = [ctypes.c_void_p, ctypes.POINTER(TensorList), ctypes.c_size_t,
                                   ctypes.POINTER(Tensor), ctypes.c_size_t]
lib.pyop_op_execute.argtypes = [ctypes.c_void_p, ctypes.POINTER(TensorList), ctypes.c_size_t,
                                ctypes.POINTER(Tensor), ctypes.c_size_t,
                                ctypes.POINTER(ExecCtx)]


def ok(what, rc):
    check(rc == 0, "%s: %d %s" % (what, rc, lib.pyop_last_error().decode(errors="replace")))


lines = []


def log(_user, _level, line):
    if interp_id() != MAIN:
        wrong.append(("log", interp_id()))
    lines.append(line.decode("utf-8", "replace"))


hook = LOG_HOOK(log)
hooks = HostHooks(ctypes.sizeof(HostHooks), None, None, None, None, hook)
ok("pyop_set_host_hooks", lib.pyop_set_host_hooks(ctypes.byref(hooks)))
ok("pyop_set_log_level", lib.pyop_set_log_level(3))
ok("pyop_set_options", lib.pyop_set_options(ctypes.byref(
    Options(ctypes.sizeof(Options), False, False, b"", 2, 0))))
NOSHUT = CASE in ("noshut", "noshut_mapped")
if CASE == "noshut_mapped":
    # A session with lanes (their atexit callback registered) whose Pin,
    # serial, keeps its input Tensor past pyop_shutdown: the bridge's image
    # stays mapped for the next load.
    os.environ["ASCEND_CUSTOM_OPP_PATH"] = os.pathsep.join(
        os.path.join(PLUGINS, d) for d in ("pure", "pin"))
    ok("pyop_load (pinned)", lib.pyop_load())
    check(any("GIL ready" in ln for ln in lines), "no lanes in the pinned session: %r" % lines)
    pin = ctypes.c_void_p()
    ok("pyop_op_create Pin", lib.pyop_op_create(b"Pin", None, 0, ctypes.byref(pin)))
    check(lib.pyop_op_lane(pin) == 0, "Pin in lane %d" % lib.pyop_op_lane(pin))
    px, py = (ctypes.c_float * 2)(1, 2), (ctypes.c_float * 2)()
    ptx = Tensor(ctypes.cast(px, ctypes.c_void_p), 0, 0, 1)
    ptx.shape[0], ptx.nbytes = 2, 8
    pty = Tensor(ctypes.cast(py, ctypes.c_void_p), 0, 0, 1)
    pty.shape[0], pty.nbytes = 2, 8
    ok("Pin execute", lib.pyop_op_execute(pin, ctypes.byref(TensorList(ctypes.pointer(ptx), 1)),
                                          1, ctypes.byref(pty), 1,
                                          ctypes.byref(ExecCtx(ctypes.sizeof(ExecCtx)))))
    check(list(py) == [1.0, 2.0], "Pin: %r" % list(py))
    lib.pyop_op_destroy(pin)
    del lines[:]
    ok("pyop_shutdown (pinned)", lib.pyop_shutdown())
    check(any("the bridge stays mapped" in ln for ln in lines),
          "the bridge was not kept mapped: %r" % lines)
    os.environ["ASCEND_CUSTOM_OPP_PATH"] = os.path.join(PLUGINS, "pure")
if NOSHUT:
    import atexit

    def after_lanes():  # registered first: runs after libpyop's callback
        out = (ctypes.c_float * 4)()
        ty = Tensor(ctypes.cast(out, ctypes.c_void_p), 0, 0, 1)
        ty.shape[0], ty.nbytes = 4, 16
        tx = Tensor(ctypes.cast(x, ctypes.c_void_p), 0, 0, 1)
        tx.shape[0], tx.nbytes = 4, 16
        ins = TensorList(ctypes.pointer(tx), 1)
        rc = lib.pyop_op_execute(ops[0], ctypes.byref(ins), 1, ctypes.byref(ty), 1,
                                 ctypes.byref(ExecCtx(ctypes.sizeof(ExecCtx))))
        err = lib.pyop_last_error().decode(errors="replace")
        check(rc != 0 and "interpreter lane ended" in err,
              "execute after the lanes ended: %d %s" % (rc, err))
        # infer_meta of that instance too (lifetime pass, session 15).
        ti = Tensor(None, 0, 0, 1)
        rc = lib.pyop_op_infer_meta(ops[0], ctypes.byref(ins), 1, ctypes.byref(ti), 1)
        err = lib.pyop_last_error().decode(errors="replace")
        check(rc != 0 and "infer_meta: the op's interpreter lane ended" in err,
              "infer_meta after the lanes ended: %d %s" % (rc, err))
        lib.pyop_op_destroy(ops[0])
        # A new instance of an op that ran in the ended lanes (each lane's
        # turn) is refused too, never made in an ended lane's image
        # (lifetime pass, session 15).
        for i in range(2):
            op = ctypes.c_void_p()
            rc = lib.pyop_op_create(b"Scale", None, 0, ctypes.byref(op))
            err = lib.pyop_last_error().decode(errors="replace")
            check(rc != 0 and not op.value and "create_holder: the op's interpreter lane ended"
                  in err, "instance %d made after the lanes ended: %d %s" % (i, rc, err))
            if op.value:
                lib.pyop_op_destroy(op)
        sys.stderr.write("[%s] at exit: %d failures\n" % (CASE, len(failures)))
        sys.stderr.flush()
        if failures:
            os._exit(1)

    atexit.register(after_lanes)
ok("pyop_load", lib.pyop_load())
check(any("lane" in ln for ln in lines), "no log line from the lanes reached the Python hook")

ops, buffers, lanes = [], [], []
x = (ctypes.c_float * 4)(1, 2, 3, 4)
for i in range(2):
    op = ctypes.c_void_p()
    ok("pyop_op_create", lib.pyop_op_create(b"Scale", None, 0, ctypes.byref(op)))
    ops.append(op)
    lanes.append(lib.pyop_op_lane(op))
check(lanes[0] != 0 and lanes[0] != lanes[1], "instances in lanes %r" % lanes)

for round_ in range(3):
    for op in ops:
        out = (ctypes.c_float * 4)()
        buffers.append(out)

        def alloc(_user, index, tp, out=out):
            if interp_id() != MAIN:
                wrong.append(("alloc_output", interp_id()))
            tp.contents.data = ctypes.cast(out, ctypes.c_void_p)  # Python, in the lane's call
            kept.append(["output %d" % index] * 10)
            return 0

        cb_out, cb_ws = ALLOC_OUTPUT(alloc), ALLOC_WORKSPACE()
        tx = Tensor(ctypes.cast(x, ctypes.c_void_p), 0, 0, 1)
        tx.shape[0], tx.nbytes = 4, 16
        ty = Tensor(None, 0, 0, 1)
        ty.shape[0], ty.nbytes = 4, 16
        ins = TensorList(ctypes.pointer(tx), 1)
        ctx = ExecCtx(ctypes.sizeof(ExecCtx), None, cb_out, cb_ws, None)
        ok("pyop_op_execute", lib.pyop_op_execute(op, ctypes.byref(ins), 1, ctypes.byref(ty), 1,
                                                  ctypes.byref(ctx)))
        check(list(out) == [2.0, 4.0, 6.0, 8.0], "Scale: %r" % list(out))
for op in ops if not NOSHUT else ops[1:]:
    lib.pyop_op_destroy(op)
check(not wrong, "the host's Python callbacks ran in another interpreter than the host's "
      "(%d): %r" % (MAIN, sorted(set(wrong))))

if not NOSHUT:
    ok("pyop_shutdown", lib.pyop_shutdown())
    # This thread's state is still this interpreter's, attached and usable.
    check(threading.current_thread() is threading.main_thread(), "main thread")
    t = threading.Thread(target=lambda: lines.append("thread ran"))
    t.start()
    t.join()
    check(lines[-1] == "thread ran", "a Python thread after pyop_shutdown")
    import gc
    del kept[:]
    gc.collect()
    ok("pyop_load (again)", lib.pyop_load())
    ok("pyop_shutdown (again)", lib.pyop_shutdown())
ok("pyop_set_host_hooks(NULL)", lib.pyop_set_host_hooks(None))

sys.stderr.write("[%s] %d failures\n" % (CASE, len(failures)))
sys.stderr.flush()
sys.stdout.flush()
if UNSAFE_END:
    os._exit(1 if failures else 0)
sys.exit(1 if failures else 0)
