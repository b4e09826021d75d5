"""The op contract end to end: libpyop (ctypes) + the real bridge + the
plugins of tests/e2e/plugins/contract.

    python3 test_contract.py LIBPYOP

In-place ops (mutated inputs writable, an output that is an input's
buffer, pyop_op_info's flags and aliases), an op without outputs, dynamic
outputs through pyop_op_infer_meta_list / pyop_op_execute_list, a Tensor
attribute (copied at create), and ops that break their contract:
PYOP_ECONTRACT, never PYOP_OK. Exit 77 (skip) for another Python than the
build's default one unless PYOP_TEST_ANY_PYTHON=1.
"""

import array
import ctypes
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import pyop_cli  # noqa: E402
from pyop_cli import (ALLOC_OUTPUT, ALLOC_WORKSPACE, Attr, ExecCtx,  # noqa: E402
                      OutputList, Tensor, TensorList, EXEC_EXPECT_OUTPUTS)
del sys.path[0]

FLOAT32 = 0
ECONTRACT, EPYTHON, EINVAL = -20, -11, -1
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def tensor_of(buf, shape):
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    t = Tensor()
    t.data = addr
    t.dtype = FLOAT32
    t.ndim = len(shape)
    for i, d in enumerate(shape):
        t.shape[i] = d
    t.nbytes = len(buf) * buf.itemsize
    return t


def floats(t):
    n = 1
    for i in range(t.ndim):
        n *= t.shape[i]
    return list((ctypes.c_float * n).from_address(t.data))


class Host:
    def __init__(self, lib):
        self.lib = lib
        self.c = lib.c
        self.keep = []

    def err(self):
        return self.c.pyop_last_error().decode("utf-8", "replace")

    def create(self, op_type, attrs=()):
        arr = (Attr * max(len(attrs), 1))(*attrs)
        op = ctypes.c_void_p()
        rc = self.c.pyop_op_create(op_type.encode(), arr, len(attrs), ctypes.byref(op))
        check(rc == 0, "create %s: %d %s" % (op_type, rc, self.err()))
        return op

    def ctx(self, flags=0):
        def alloc_output(_user, _index, tp):
            buf = ctypes.create_string_buffer(max(tp.contents.nbytes, 1))
            self.keep.append(buf)
            tp.contents.data = ctypes.addressof(buf)
            return 0

        def alloc_ws(_user, nbytes, out):
            return -1

        a, w = ALLOC_OUTPUT(alloc_output), ALLOC_WORKSPACE(alloc_ws)
        self.keep.extend([a, w])
        return ExecCtx(ctypes.sizeof(ExecCtx), None, a, w, None, flags)


def inputs_of(*tensors):
    slots = (TensorList * len(tensors))()
    keep = []
    for k, t in enumerate(tensors):
        arr = (Tensor * 1)(t)
        keep.append(arr)
        slots[k].items = arr
        slots[k].count = 1
    return slots, keep


def main():
    libpath = sys.argv[1]
    plugins = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins", "contract")
    tmp = tempfile.mkdtemp(prefix="pyop-contract-")
    try:
        shutil.copytree(plugins, os.path.join(tmp, "contract"))
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = os.path.join(tmp, "contract")
        lib = pyop_cli.Lib(libpath)
        try:
            lib.load()
        except pyop_cli.PyopError as e:
            if "no usable bridge" in e.detail and os.environ.get("PYOP_TEST_ANY_PYTHON") != "1":
                print("skip: no bridge for this Python", file=sys.stderr)
                return 77
            raise
        run(lib)
        check(lib.c.pyop_shutdown() == 0, "shutdown")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d failure(s)" % len(failures), file=sys.stderr)
        return 1
    print("ok")
    return 0


def run(lib):
    h = Host(lib)
    c = lib.c

    # In place: x is writable and the output is x's buffer.
    info = lib.op_info("AddInto")
    check(info["inputs"][0]["mutated"] and not info["inputs"][1]["mutated"],
          "AddInto mutated inputs: %r" % info["inputs"])
    check(info["outputs"][0]["alias"] == "x", "AddInto alias: %r" % info["outputs"])
    x, y = array.array("f", [1, 2, 3]), array.array("f", [10, 20, 30])
    slots, keep = inputs_of(tensor_of(x, [3]), tensor_of(y, [3]))
    op = h.create("AddInto")
    out = (Tensor * 1)()
    rc = c.pyop_op_execute(op, slots, 2, out, 1, ctypes.byref(h.ctx()))
    check(rc == 0, "AddInto execute: %d %s" % (rc, h.err()))
    check(list(x) == [11, 22, 33] and list(y) == [10, 20, 30], "AddInto wrote %r %r" % (x, y))
    check(out[0].data == slots[0].items[0].data, "AddInto output aliases x")
    c.pyop_op_destroy(op)

    # No outputs, in place.
    op = h.create("Zero")
    slots, keep = inputs_of(tensor_of(x, [3]))
    check(c.pyop_op_infer_meta(op, slots, 1, None, 0) == 0, "Zero infer: " + h.err())
    rc = c.pyop_op_execute(op, slots, 1, None, 0, ctypes.byref(h.ctx()))
    check(rc == 0 and list(x) == [0, 0, 0], "Zero execute: %d %s %r" % (rc, h.err(), x))
    c.pyop_op_destroy(op)

    # A dynamic output: counts after infer_meta, tensors after execute.
    info = lib.op_info("Split")
    check(info["outputs"][0]["kind"] == "dynamic", "Split output kind %r" % info["outputs"])
    a = pyop_cli.Attr()
    a.name = b"n"
    a.value.type = 1
    a.value.u.i = 3
    op = h.create("Split", [a])
    data = array.array("f", range(6))
    slots, keep = inputs_of(tensor_of(data, [6]))
    one = (Tensor * 1)()
    rc = c.pyop_op_infer_meta(op, slots, 1, one, 1)
    check(rc == EINVAL and "pyop_op_infer_meta_list" in h.err(), "plain infer refused")
    items = (Tensor * 1)()
    lists = (OutputList * 1)()
    lists[0].items, lists[0].capacity = items, 1
    rc = c.pyop_op_infer_meta_list(op, slots, 1, lists, 1)
    check(rc == EINVAL and lists[0].count == 3, "too small: %d count %d" % (rc, lists[0].count))
    items = (Tensor * 3)()
    lists[0].items, lists[0].capacity = items, 3
    rc = c.pyop_op_infer_meta_list(op, slots, 1, lists, 1)
    check(rc == 0 and lists[0].count == 3 and items[2].shape[0] == 2,
          "Split infer: %d %s" % (rc, h.err()))
    rc = c.pyop_op_execute_list(op, slots, 1, lists, 1,
                                ctypes.byref(h.ctx(EXEC_EXPECT_OUTPUTS)))
    check(rc == 0 and lists[0].count == 3, "Split execute: %d %s" % (rc, h.err()))
    if rc == 0:
        check([floats(items[k]) for k in range(3)] == [[0, 1], [2, 3], [4, 5]],
              "Split values")
    c.pyop_op_destroy(op)

    # A mix: tuple[TensorDesc, list[TensorDesc]].
    op = h.create("HeadTail")
    data = array.array("f", [7, 8, 9])
    slots, keep = inputs_of(tensor_of(data, [3]))
    head, tail = (Tensor * 1)(), (Tensor * 4)()
    lists = (OutputList * 2)()
    lists[0].items, lists[0].capacity = head, 1
    lists[1].items, lists[1].capacity = tail, 4
    rc = c.pyop_op_execute_list(op, slots, 1, lists, 2, ctypes.byref(h.ctx()))
    check(rc == 0 and lists[0].count == 1 and lists[1].count == 2,
          "HeadTail: %d %s" % (rc, h.err()))
    if rc == 0:
        check(floats(head[0]) == [7] and floats(tail[1]) == [9], "HeadTail values")
    c.pyop_op_destroy(op)

    # A Tensor attribute, copied at create.
    w = array.array("f", [2, 3, 4])
    wt = tensor_of(w, [3])
    a = pyop_cli.Attr()
    a.name = b"w"
    a.value.type = 12
    a.value.u.tensor = ctypes.pointer(wt)
    op = h.create("Scale", [a])
    w[0] = 100  # after create: the op has its own copy
    data = array.array("f", [1, 1, 2])
    slots, keep = inputs_of(tensor_of(data, [3]))
    out = (Tensor * 1)()
    check(c.pyop_op_infer_meta(op, slots, 1, out, 1) == 0, "Scale infer: " + h.err())
    rc = c.pyop_op_execute(op, slots, 1, out, 1, ctypes.byref(h.ctx(EXEC_EXPECT_OUTPUTS)))
    check(rc == 0 and floats(out[0]) == [2, 3, 8], "Scale: %d %s" % (rc, h.err()))
    c.pyop_op_destroy(op)

    # Broken contracts.
    data = array.array("f", [1, 2, 3])
    slots, keep = inputs_of(tensor_of(data, [3]))
    op = h.create("Lazy")
    out = (Tensor * 1)()
    rc = c.pyop_op_execute(op, slots, 1, out, 1, ctypes.byref(h.ctx()))
    check(rc == ECONTRACT and 'without producing output 0 "y"' in h.err(),
          "Lazy: %d %s" % (rc, h.err()))
    c.pyop_op_destroy(op)
    op = h.create("Wrong")
    check(c.pyop_op_execute(op, slots, 1, out, 1, ctypes.byref(h.ctx())) == 0,
          "Wrong without expectations: " + h.err())
    check(c.pyop_op_infer_meta(op, slots, 1, out, 1) == 0, "Wrong infer")
    rc = c.pyop_op_execute(op, slots, 1, out, 1, ctypes.byref(h.ctx(EXEC_EXPECT_OUTPUTS)))
    check(rc == ECONTRACT and "expected float32[3], the op asked for float16[6]" in h.err(),
          "Wrong: %d %s" % (rc, h.err()))
    c.pyop_op_destroy(op)
    op = h.create("Sneaky")
    rc = c.pyop_op_execute(op, slots, 1, out, 1, ctypes.byref(h.ctx()))
    check(rc == EPYTHON and "read-only" in h.err() and list(data) == [1, 2, 3],
          "Sneaky: %d %s %r" % (rc, h.err(), data))
    c.pyop_op_destroy(op)


if __name__ == "__main__":
    sys.exit(main())
