"""`pyop bench`: the execute (or launch) dispatch time of one op."""

import ctypes
import sys
import time

from .binding import DTYPES, EXEC_EXPECT_OUTPUTS, OutputList, Tensor, TensorList
from .errors import CliError, PyopError, UsageError, plural
from .host import (_attrs_from_args, compile_options, _inputs_from_args, Instance,
                   set_compile_options, _warn_other_python)
from .instance import exec_ctx_with, grow_short_lists
from .output import say
from .supervise import activity, LOADING
from .values import (Buffers, check_shape, _default_attr, dump_json, _fmt_bytes, make_tensor,
                     max_bytes, _sample_values, shape_text)


def _reusing_ctx(bufs):
    """An exec context whose outputs reuse one buffer per index (benchmarks;
    the tensors of a dynamic output share their index's). A buffer too small
    for a later tensor is replaced and kept alive with bufs: an earlier
    tensor of that output, in the same call, still points into it."""
    slots = {}

    def alloc_output(_user, index, tp):
        t = tp.contents
        buf = slots.get(index)
        if t.nbytes > max_bytes():
            bufs.refused = "output %d of %s refused: more than the %s the command allocates " \
                "(PYOP_CLI_MAX_BYTES)" % (index, _fmt_bytes(t.nbytes), _fmt_bytes(max_bytes()))
            return 1
        if buf is None or ctypes.sizeof(buf) < t.nbytes:
            if buf is not None:
                bufs.keep.append(buf)  # never freed under a tensor the op holds
            buf = slots[index] = ctypes.create_string_buffer(max(int(t.nbytes), 1))
        t.data = ctypes.addressof(buf)
        return 0

    return exec_ctx_with(bufs, alloc_output, [slots])


def cmd_bench(lib, args):
    """Times pyop_op_execute (or, for a launch-only op, pyop_op_launch: the
    declared kernel plan through libffi) from this process through ctypes,
    interleaved with a bare ctypes call into libpyop (pyop_op_capabilities)
    measured the same way, and reports both and their difference: what
    libpyop and the op add over the cost of calling from Python at all.
    bench/run.sh measures libpyop from C against its physical floor. The
    timed instance was prepared as a host prepares one (compile, with
    --compile-option, and the kernel plan) by one checked run first."""
    _warn_other_python("bench", "timed")
    options = compile_options(args)
    activity(LOADING)
    lib.load()
    unused = set_compile_options(options)
    if unused:
        sys.stderr.write("pyop: bench: warning: %s\n" % unused)
    result, attrs = _bench(lib, args)
    if args.json:
        dump_json(result)
    else:
        say("%s: %s %.0f ns/call, a bare ctypes call %.0f ns, difference %.0f ns "
            "(median of %d x %s from Python; bench/run.sh measures from C)"
            % (args.op, result["mode"], result["execute_ns"], result["ctypes_call_ns"],
               result["execute_minus_ctypes_ns"], args.repeat, plural(args.calls, "call")))
        say("inputs: %s%s" % (", ".join(result["inputs"]) or "none", "; attrs: %s" % ", ".join(
            "%s=%s" % kv for kv in result["attrs"].items()) if attrs else ""))
    return 0


def _bench_inputs(info, args):
    if args.input:
        return _inputs_from_args(info, args)
    dtype = DTYPES.index("float32")
    try:
        check_shape(dtype, [args.size], "--size %d" % args.size)
    except ValueError as e:
        raise UsageError(str(e), args.op) from None
    return [[(dtype, [args.size], _sample_values(dtype, args.size, k))]
            if i["kind"] != "optional" else [] for k, i in enumerate(info["inputs"])]


def _bench(lib, args):
    """(the result, the attributes used) of timing args.op."""
    info = lib.op_info(args.op)
    launch = "execute" not in info["capabilities"]
    if launch and "declare_launch_args" not in info["capabilities"]:
        raise CliError('op "%s" has no execute implementation nor kernel launch to time'
                       % args.op, "PYOP_EUNSUPPORTED", args.op)
    inputs = _bench_inputs(info, args)
    attrs = {a["name"]: _default_attr(a) for a in info["attrs"] if a["required"]}
    attrs.update(_attrs_from_args(info, args))
    dynamic = any(o["kind"] == "dynamic" for o in info["outputs"])
    if launch and dynamic:
        raise CliError('op "%s": a launch-only op with a dynamic output cannot be timed'
                       % args.op, "PYOP_EUNSUPPORTED", args.op)
    # Held to the contract as `run` is: one checked run first on the timed
    # instance (an output other than infer_meta's, a write outside a buffer,
    # a failed call end the command as they end `run`); the timed calls are
    # held to infer_meta's outputs too (PYOP_EXEC_EXPECT_OUTPUTS).
    activity("creating the op", args.op)
    inst = Instance(lib, info, attrs)
    try:
        res = inst.run(inputs, stage=lambda name: activity(name, args.op))
        if res.error is not None:
            raise res.error
        used = [_input_text(i, k, slot) for i, slot in zip(info["inputs"], inputs)
                for k in range(len(slot))]
        ex, call_args, bufs = _timed_call(lib, info, inst.op, inputs, launch, dynamic)
        ex_t, base_t = _time(lib, args, inst.op, ex, call_args, bufs, launch)
    finally:
        inst.destroy()
    med_ex, med_base = ex_t[len(ex_t) // 2], base_t[len(base_t) // 2]
    return {"op_type": args.op, "calls": args.calls, "repeat": args.repeat,
            "mode": "launch" if launch else "execute",
            "execute_ns": round(med_ex * 1e9, 1),
            "ctypes_call_ns": round(med_base * 1e9, 1),
            "execute_minus_ctypes_ns": round((med_ex - med_base) * 1e9, 1),
            "inputs": used, "attrs": attrs_text(attrs)}, attrs


def _timed_call(lib, info, op, inputs, launch, dynamic):
    """(the function timed, its arguments, the buffers they use)."""
    keep = []
    bufs = Buffers()
    bufs.keep.append(keep)
    slots = (TensorList * max(len(inputs), 1))()
    for k, slot in enumerate(inputs):
        arr = (Tensor * max(len(slot), 1))(*[make_tensor(bufs, d, s, v) for d, s, v in slot])
        keep.append(arr)
        slots[k].items, slots[k].count = arr, len(slot)
    keep.append(slots)
    n_out = len(info["outputs"])
    n_in = len(inputs)
    outs = (Tensor * max(n_out, 1))()
    keep.append(outs)
    ctx = _reusing_ctx(bufs)
    keep.append(ctx)
    ctx_p = ctypes.byref(ctx)
    name = info["op_type"]
    if launch:
        # Outputs allocated once from infer_meta; the plan was declared by
        # the checked run.
        lib.check("infer_meta of %s" % name,
                  lib.c.pyop_op_infer_meta(op, slots, n_in, outs, n_out))
        for k in range(n_out):
            outs[k] = make_tensor(bufs, outs[k].dtype, list(outs[k].shape[:outs[k].ndim]))
        return lib.c.pyop_op_launch, (op, slots, n_in, outs, n_out, ctx_p), bufs
    if dynamic:
        lists = (OutputList * max(n_out, 1))()
        keep.append(lists)
        for k in range(n_out):
            items = (Tensor * 256)()
            keep.append(items)
            lists[k].items, lists[k].capacity = items, 256
        if "infer_meta" in info["capabilities"]:
            rc = lib.c.pyop_op_infer_meta_list(op, slots, n_in, lists, n_out)
            if rc != 0 and grow_short_lists(lists, n_out, keep):  # again, with room
                lib.check("infer_meta of %s" % name,
                          lib.c.pyop_op_infer_meta_list(op, slots, n_in, lists, n_out))
            else:
                lib.check("infer_meta of %s" % name, rc)
            ctx.flags = EXEC_EXPECT_OUTPUTS
        return lib.c.pyop_op_execute_list, (op, slots, n_in, lists, n_out, ctx_p), bufs
    if "infer_meta" in info["capabilities"]:
        lib.check("infer_meta of %s" % name,
                  lib.c.pyop_op_infer_meta(op, slots, n_in, outs, n_out))
        ctx.flags = EXEC_EXPECT_OUTPUTS
    return lib.c.pyop_op_execute, (op, slots, n_in, outs, n_out, ctx_p), bufs


def _time(lib, args, op, ex, call_args, bufs, launch):
    """The sorted per-call times of ex and of the bare ctypes call, args.repeat each."""
    base = lib.c.pyop_op_capabilities
    what = "%s of %s" % ("launch" if launch else "execute", args.op)

    def run_execute(n):
        activity("timed %s (%s)" % ("launch" if launch else "execute", plural(n, "call")),
                 args.op, n)
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
    return sorted(ex_t), sorted(base_t)


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
