"""`pyop bench`: the execute (or launch) dispatch time of one op."""

import ctypes
import time

from .binding import (ALLOC_OUTPUT, ALLOC_WORKSPACE, DTYPES, EXEC_EXPECT_OUTPUTS, ExecCtx,
                      OutputList, Tensor, TensorList)
from .errors import CliError, PyopError, UsageError, plural
from .host import _attrs_from_args, _inputs_from_args, run_op, _warn_other_python
from .values import (Buffers, check_shape, _default_attr, dump_json, _fmt_bytes, make_attrs,
                     make_tensor, max_bytes, _sample_values, shape_text)


def _reusing_ctx(bufs):
    """An exec context whose outputs reuse one buffer per index (benchmarks)."""
    slots = {}

    def alloc_output(_user, index, tp):
        t = tp.contents
        buf = slots.get(index)
        if t.nbytes > max_bytes():
            bufs.refused = "output %d of %s refused: more than the %s the command allocates " \
                "(PYOP_CLI_MAX_BYTES)" % (index, _fmt_bytes(t.nbytes), _fmt_bytes(max_bytes()))
            return 1
        if buf is None or ctypes.sizeof(buf) < t.nbytes:
            buf = slots[index] = ctypes.create_string_buffer(max(int(t.nbytes), 1))
        t.data = ctypes.addressof(buf)
        return 0

    def alloc_workspace(_user, nbytes, out):
        try:
            out[0] = bufs.alloc(nbytes, "a workspace")
        except CliError:
            return 1
        return 0

    cb_out = ALLOC_OUTPUT(alloc_output)
    cb_ws = ALLOC_WORKSPACE(alloc_workspace)
    bufs.keep.extend([cb_out, cb_ws, slots])
    return ExecCtx(ctypes.sizeof(ExecCtx), None, cb_out, cb_ws, None)


def cmd_bench(lib, args):
    """Times pyop_op_execute (or, for a launch-only op, pyop_op_launch: the
    declared kernel plan through libffi) from this process through ctypes,
    interleaved with a bare ctypes call into libpyop (pyop_op_capabilities)
    measured the same way, and reports both and their difference: what
    libpyop and the op add over the cost of calling from Python at all.
    bench/run.sh measures libpyop from C against its physical floor."""
    _warn_other_python("bench", "timed")
    lib.load()
    info = lib.op_info(args.op)
    launch = "execute" not in info["capabilities"]
    if launch and "declare_launch_args" not in info["capabilities"]:
        raise CliError('op "%s" has no execute implementation nor kernel launch to time'
                       % args.op, "PYOP_EUNSUPPORTED", args.op)
    if args.input:
        inputs = _inputs_from_args(info, args)
    else:
        dtype = DTYPES.index("float32")
        try:
            check_shape(dtype, [args.size], "--size %d" % args.size)
        except ValueError as e:
            raise UsageError(str(e), args.op) from None
        inputs = [[(dtype, [args.size], _sample_values(dtype, args.size, k))]
                  if i["kind"] != "optional" else [] for k, i in enumerate(info["inputs"])]
    attrs = {a["name"]: _default_attr(a) for a in info["attrs"] if a["required"]}
    attrs.update(_attrs_from_args(info, args))
    dynamic = any(o["kind"] == "dynamic" for o in info["outputs"])
    if launch and dynamic:
        raise CliError('op "%s": a launch-only op with a dynamic output cannot be timed'
                       % args.op, "PYOP_EUNSUPPORTED", args.op)
    # Held to the contract as `run` is: one checked run first (an output
    # other than infer_meta's, a write past a buffer's end, a failed call
    # end the command as they end `run`); the timed calls are held to
    # infer_meta's outputs too (PYOP_EXEC_EXPECT_OUTPUTS).
    res = run_op(lib, info, inputs, attrs)
    if res.error is not None:
        raise res.error
    used = [_input_text(i, k, slot) for i, slot in zip(info["inputs"], inputs)
            for k in range(len(slot))]
    keep = []
    bufs = Buffers()
    c_attrs, n_attrs = make_attrs(info, attrs, keep)
    op = ctypes.c_void_p()
    lib.check("pyop_op_create", lib.c.pyop_op_create(args.op.encode(), c_attrs, n_attrs,
                                                      ctypes.byref(op)))
    try:
        slots = (TensorList * max(len(inputs), 1))()
        for k, slot in enumerate(inputs):
            arr = (Tensor * max(len(slot), 1))(*[make_tensor(bufs, d, s, v) for d, s, v in slot])
            keep.append(arr)
            slots[k].items, slots[k].count = arr, len(slot)
        n_out = len(info["outputs"])
        n_in = len(inputs)
        outs = (Tensor * max(n_out, 1))()
        ctx = _reusing_ctx(bufs)
        ctx_p = ctypes.byref(ctx)
        if launch:
            # Outputs allocated once from infer_meta; the plan is declared by
            # the first launch (outside the timed loops).
            lib.check("infer_meta of %s" % args.op,
                      lib.c.pyop_op_infer_meta(op, slots, n_in, outs, n_out))
            for k in range(n_out):
                outs[k] = make_tensor(bufs, outs[k].dtype, list(outs[k].shape[:outs[k].ndim]))
            ex = lib.c.pyop_op_launch
            call_args = (op, slots, n_in, outs, n_out, ctx_p)
        elif dynamic:
            lists = (OutputList * max(n_out, 1))()
            for k in range(n_out):
                items = (Tensor * 256)()
                keep.append(items)
                lists[k].items, lists[k].capacity = items, 256
            if "infer_meta" in info["capabilities"]:
                lib.check("infer_meta of %s" % args.op,
                          lib.c.pyop_op_infer_meta_list(op, slots, n_in, lists, n_out))
                ctx.flags = EXEC_EXPECT_OUTPUTS
            ex = lib.c.pyop_op_execute_list
            call_args = (op, slots, n_in, lists, n_out, ctx_p)
        else:
            if "infer_meta" in info["capabilities"]:
                lib.check("infer_meta of %s" % args.op,
                          lib.c.pyop_op_infer_meta(op, slots, n_in, outs, n_out))
                ctx.flags = EXEC_EXPECT_OUTPUTS
            ex = lib.c.pyop_op_execute
            call_args = (op, slots, n_in, outs, n_out, ctx_p)
        base = lib.c.pyop_op_capabilities
        what = "%s of %s" % ("launch" if launch else "execute", args.op)

        def run_execute(n):
            t0 = time.perf_counter()
            for _ in range(n):
                rc = ex(*call_args)
                if rc:
                    try:
                        lib.check(what, rc)
                    except PyopError as e:
                        if bufs.refused:
                            e.message = "%s (%s)" % (e.message, bufs.refused)
                        raise
            return (time.perf_counter() - t0) / n

        def run_baseline(n):
            t0 = time.perf_counter()
            for _ in range(n):
                base(op)
            return (time.perf_counter() - t0) / n

        run_execute(min(200, args.calls))  # thread state, caches, the launch plan
        run_baseline(min(200, args.calls))
        ex_t, base_t = [], []
        for _ in range(args.repeat):  # interleaved: drift hits both alike
            ex_t.append(run_execute(args.calls))
            base_t.append(run_baseline(args.calls))
        ex_t.sort()
        base_t.sort()
        med_ex, med_base = ex_t[len(ex_t) // 2], base_t[len(base_t) // 2]
        result = {"op_type": args.op, "calls": args.calls, "repeat": args.repeat,
                  "mode": "launch" if launch else "execute",
                  "execute_ns": round(med_ex * 1e9, 1),
                  "ctypes_call_ns": round(med_base * 1e9, 1),
                  "execute_minus_ctypes_ns": round((med_ex - med_base) * 1e9, 1),
                  "inputs": used, "attrs": attrs_text(attrs)}
    finally:
        lib.c.pyop_op_destroy(op)
    if args.json:
        dump_json(result)
    else:
        print("%s: %s %.0f ns/call, a bare ctypes call %.0f ns, difference %.0f ns "
              "(median of %d x %s from Python; bench/run.sh measures from C)"
              % (args.op, result["mode"], result["execute_ns"], result["ctypes_call_ns"],
                 result["execute_minus_ctypes_ns"], args.repeat, plural(args.calls, "call")))
        print("inputs: %s%s" % (", ".join(used) or "none", "; attrs: %s" % ", ".join(
            "%s=%s" % kv for kv in result["attrs"].items()) if attrs else ""))
    return 0


def _input_text(i, k, slot):
    """How bench says which input it used: x=float32[16], xs[1]=float32[16]."""
    dtype, shape, _ = slot[k]
    name = "%s[%d]" % (i["name"], k) if i["kind"] == "dynamic" else i["name"]
    return "%s=%s" % (name, shape_text(dtype, shape))


def attrs_text(attrs):
    """{name: printable value} of the attributes bench used (a Tensor
    attribute as its description)."""
    out = {}
    for name, value in attrs.items():
        if isinstance(value, tuple) and len(value) == 3:
            out[name] = shape_text(value[0], value[1])
        else:
            out[name] = value
    return out
