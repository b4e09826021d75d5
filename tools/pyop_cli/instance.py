"""One op instance run as a host runs it (run, check and bench share it):
infer_meta, then -- once per instance and set of descriptions, as a graph
engine does at graph compile -- compile and declare_launch_args, then
execute (or the declared kernel launch of a launch-only op), every buffer
between guard zones and the op held to the host contract."""

import ctypes

from .binding import (ALLOC_OUTPUT, ALLOC_WORKSPACE, DTYPE_SIZE, EXEC_EXPECT_OUTPUTS, ExecCtx,
                      OutputList, Tensor, TensorList)
from .errors import CliError, PyopError
from .values import Buffers, make_attrs, make_tensor, read_values

CAP_INFER, CAP_EXECUTE, CAP_COMPILE, CAP_LAUNCH = 1, 2, 4, 8


def exec_ctx_with(bufs, alloc_output, keep=()):
    """A pyop_exec_ctx calling alloc_output(user, index, tensor pointer) for
    outputs and allocating workspaces from bufs; the callbacks (and keep)
    live as long as bufs."""

    def alloc_workspace(_user, nbytes, out):
        try:
            out[0] = bufs.alloc(nbytes, "a workspace")
        except CliError:
            return 1
        return 0

    cb_out = ALLOC_OUTPUT(alloc_output)
    cb_ws = ALLOC_WORKSPACE(alloc_workspace)
    bufs.keep.extend([cb_out, cb_ws] + list(keep))
    return ExecCtx(ctypes.sizeof(ExecCtx), None, cb_out, cb_ws, None)


def exec_ctx(bufs, allocated, names=()):
    """A pyop_exec_ctx whose callbacks allocate from bufs (an output's guard
    zones named 'output K "NAME"' after names); records outputs."""

    def alloc_output(_user, index, tp):
        t = tp.contents
        try:
            t.data = bufs.alloc(t.nbytes, "output %d" % index,
                                names[index] if index < len(names) else None)
        except CliError:
            return 1  # refused: the call fails with PYOP_EHOST, bufs.refused says why
        allocated[index] = (t.dtype, list(t.shape[:t.ndim]))
        return 0

    return exec_ctx_with(bufs, alloc_output)


class RunResult:
    """What one run saw. inferred: per output a list of (dtype, shape), or
    None without infer_meta; produced: per output a list of (Tensor, values),
    or None when nothing ran on data; inputs: per input slot the Tensors
    passed; before/after: their bytes around the call; error: the failure
    (PyopError) that ended the run, or None, and failed the stage it
    happened in; ran: "execute", "launch" or None; stages: the stages that
    ran, in order ("infer_meta", "compile", "declare_launch_args",
    "execute", "launch"); declare_error: the failure of a
    declare_launch_args of an op that executes all the same; guessed: the
    output descriptions given to compile/declare/launch were the first
    input's (no infer_meta); attrs_written: [(Tensor attribute, method)]
    the op wrote (check_plugin.AttrWatch fills it)."""

    def __init__(self):
        self.inferred = None
        self.produced = None
        self.inputs = []
        self.before = []
        self.after = []
        self.error = None
        self.failed = None
        self.ran = None
        self.stages = []
        self.declare_error = None
        self.guessed = False
        self.attrs_written = []

    def output_bytes(self):
        """Per output, the bytes of each tensor it produced (None: none ran)."""
        if self.produced is None:
            return None
        return [[_bytes_of(t) for t, _ in tensors] for tensors in self.produced]


def grow_short_lists(lists, n_out, keep):
    """After pyop_op_infer_meta_list failed: whether an output had more
    tensors than its list's room (a dynamic output; every count is then
    set), each such list given room for them (its items kept in keep): the
    call is to be made again, as pyop.h asks of a host."""
    short = [k for k in range(n_out) if lists[k].count > lists[k].capacity]
    for k in short:
        items = (Tensor * lists[k].count)()
        keep.append(items)
        lists[k].items, lists[k].capacity = items, lists[k].count
    return bool(short)


def _bytes_of(t):
    return ctypes.string_at(t.data, t.nbytes) if t.data and t.nbytes else b""


def _no_stage(_name):
    pass


def _description(dtype, shape):
    """A pyop_tensor describing dtype[shape], with no data (compile and
    declare_launch_args take descriptions)."""
    t = Tensor()
    t.dtype, t.format, t.ndim = dtype, 0, len(shape)
    n = 1
    for k, d in enumerate(shape):
        t.shape[k] = d
        n *= d
    t.nbytes = n * DTYPE_SIZE[dtype]
    return t


class Instance:
    """One op instance (pyop_op_create with attrs), run as a host runs it:
    run() any number of times, from any number of threads at once once it
    is prepared for the descriptions (each run has its own buffers), then
    destroy(). declare: "always" runs declare_launch_args whenever the op
    has it (check: every path), "launch" only when it is the path that runs
    (no execute; run and bench, as a host does)."""

    def __init__(self, lib, info, attrs, declare="launch"):
        self.lib = lib
        self.info = info
        self.keep = []
        self.declare = declare
        self.prepared = None  # the descriptions compile/declare last ran for
        c_attrs, n_attrs = make_attrs(info, attrs, self.keep)
        self.op = ctypes.c_void_p()
        lib.check('creating op "%s"' % info["op_type"],
                  lib.c.pyop_op_create(info["op_type"].encode(), c_attrs, n_attrs,
                                       ctypes.byref(self.op)))
        self.caps = lib.c.pyop_op_capabilities(self.op)

    def destroy(self):
        if self.op:
            self.lib.c.pyop_op_destroy(self.op)
            self.op = ctypes.c_void_p()

    def _descs(self, res, inputs):
        """(dtype, shape) per output for compile/declare/launch: infer_meta's
        (a dynamic output's first tensor; float32[0] when it has none), or
        without infer_meta the first input's, as GE's elementwise samples
        have them (res.guessed)."""
        if res.inferred is not None:
            return [(k[0][0], list(k[0][1])) if k else (0, [0]) for k in res.inferred]
        res.guessed = True
        first = next(((d, list(s)) for slot in inputs for d, s, _ in slot), (0, [1]))
        return [first] * len(self.info["outputs"])

    def prepare(self, slots, n_in, descs, res, stage=_no_stage):
        """compile, then (per self.declare) declare_launch_args, on the
        descriptions descs, as a host does before it runs an op; False when
        the run ends here (res.error set)."""
        lib, op, name = self.lib, self.op, self.info["op_type"]
        n_out = len(descs)
        outs = (Tensor * max(n_out, 1))()
        for k, (dtype, shape) in enumerate(descs):
            outs[k] = _description(dtype, shape)
        res.keep.append(outs)
        if self.caps & CAP_COMPILE:
            stage("compile")
            art, size = ctypes.c_void_p(), ctypes.c_size_t()
            rc = lib.c.pyop_op_compile(op, slots, n_in, outs, n_out, ctypes.byref(art),
                                       ctypes.byref(size))
            res.stages.append("compile")
            if art.value:
                lib.c.pyop_free(art)
            if rc != 0:
                return self._fail(res, "compile", 'compile of "%s"' % name, rc)
        wanted = self.declare == "always" or not self.caps & CAP_EXECUTE
        if self.caps & CAP_LAUNCH and wanted:
            stage("declare_launch_args")
            rc = lib.c.pyop_op_declare_launch_args(op, slots, n_in, outs, n_out)
            res.stages.append("declare_launch_args")
            if rc != 0:
                if not self.caps & CAP_EXECUTE:
                    return self._fail(res, "declare_launch_args",
                                      'declare_launch_args of "%s"' % name, rc)
                try:
                    lib.check('declare_launch_args of "%s"' % name, rc)
                except PyopError as e:
                    res.declare_error = e
        return True

    def _fail(self, res, stage, what, rc):
        try:
            self.lib.check(what, rc)
        except PyopError as e:
            res.error, res.failed = e, stage
        return False

    def run(self, inputs, want_execute=True, capacity=64, stage=_no_stage):
        """infer_meta, compile and declare (prepare; once per set of
        descriptions), then execute (or the kernel launch of a launch-only
        op) through the list forms, so any number of outputs and dynamic ones
        work. When infer_meta exists, execute is held to it
        (PYOP_EXEC_EXPECT_OUTPUTS): a different output is PYOP_ECONTRACT.
        stage(name) is called before each stage runs.

        inputs: list (one per prototype input) of lists of (dtype, shape,
        values). Returns a RunResult (its bufs keep the buffers alive);
        raises PyopError when infer_meta fails (its stage attribute
        "infer_meta"); a later failure is kept in RunResult.error."""
        lib, info, op = self.lib, self.info, self.op
        bufs = Buffers()
        res = RunResult()
        res.bufs, res.keep = bufs, []
        slots = self._input_slots(inputs, bufs, res)
        n_out = len(info["outputs"])
        lists = (OutputList * max(n_out, 1))()
        for k in range(n_out):
            items = (Tensor * capacity)()
            res.keep.append(items)
            lists[k].items, lists[k].capacity, lists[k].count = items, capacity, 0
        if self.caps & CAP_INFER:
            stage("infer_meta")
            res.stages.append("infer_meta")
            rc = lib.c.pyop_op_infer_meta_list(op, slots, len(inputs), lists, n_out)
            if rc != 0 and grow_short_lists(lists, n_out, res.keep):
                rc = lib.c.pyop_op_infer_meta_list(op, slots, len(inputs), lists, n_out)
            try:
                lib.check('infer_meta of "%s"' % info["op_type"], rc)
            except PyopError as e:
                e.stage = "infer_meta"
                raise
            res.inferred = [[(lists[k].items[j].dtype,
                              list(lists[k].items[j].shape[:lists[k].items[j].ndim]))
                             for j in range(lists[k].count)] for k in range(n_out)]
        if not want_execute:
            return res
        descs = self._descs(res, inputs) if self.caps & (CAP_COMPILE | CAP_LAUNCH) else None
        key = repr(descs)
        if descs is not None and self.prepared != key:
            if not self.prepare(slots, len(inputs), descs, res, stage):
                self._finish(res, bufs)
                return res
            self.prepared = key
        res.before = [[_bytes_of(t) for t in slot] for slot in res.inputs]
        if self.caps & CAP_EXECUTE:
            stage("execute")
            ctx = exec_ctx(bufs, {}, [o["name"] for o in info["outputs"]])
            if res.inferred is not None:
                ctx.flags = EXEC_EXPECT_OUTPUTS
            rc = lib.c.pyop_op_execute_list(op, slots, len(inputs), lists, n_out,
                                            ctypes.byref(ctx))
            what, res.ran = 'execute of "%s"' % info["op_type"], "execute"
        elif self.caps & CAP_LAUNCH:
            stage("launch")
            rc = self._launch(slots, len(inputs), lists, descs, bufs, res)
            what, res.ran = 'launch of "%s"' % info["op_type"], "launch"
        else:
            self._finish(res, bufs)
            return res
        res.stages.append(res.ran)
        res.after = [[_bytes_of(t) for t in slot] for slot in res.inputs]
        if not self._finish(res, bufs, what):
            return res
        if rc != 0:
            try:
                lib.check(what, rc)
            except PyopError as e:
                if bufs.refused:
                    e.message = "%s (%s)" % (e.message, bufs.refused)
                if e.status == "PYOP_ECONTRACT" and res.ran == "execute" and ctx.flags:
                    e.message = _held_to_infer_meta(e.message, info)
                res.error, res.failed = e, res.ran
            return res
        res.produced = [[(lists[k].items[j], read_values(lists[k].items[j]))
                         for j in range(lists[k].count)] for k in range(n_out)]
        return res

    def _input_slots(self, inputs, bufs, res):
        """The pyop_tensor_list per input slot, each tensor in a guarded buffer."""
        info = self.info
        slots = (TensorList * max(len(inputs), 1))()
        for k, slot in enumerate(inputs):
            arr = (Tensor * max(len(slot), 1))()
            name = info["inputs"][k]["name"] if k < len(info["inputs"]) else str(k)
            for j, (dtype, shape, values) in enumerate(slot):
                arr[j] = make_tensor(bufs, dtype, shape, values, "input %s%s" % (
                    name, "[%d]" % j if len(slot) > 1 else ""))
            res.keep.append(arr)
            slots[k].items = arr
            slots[k].count = len(slot)
            res.inputs.append([arr[j] for j in range(len(slot))])
        return slots

    def _launch(self, slots, n_in, lists, descs, bufs, res):
        """pyop_op_launch of a launch-only op: its outputs allocated from
        descs, then the declared kernel plan run through libffi (no Python)."""
        info = self.info
        if any(o["kind"] == "dynamic" for o in info["outputs"]):
            raise CliError('op "%s": a launch-only op with a dynamic output cannot be run'
                           % info["op_type"], "PYOP_EUNSUPPORTED", info["op_type"])
        n_out = len(descs)
        outs = (Tensor * max(n_out, 1))()
        for k, (dtype, shape) in enumerate(descs):
            outs[k] = make_tensor(bufs, dtype, shape, what="output %d" % k,
                                  name=info["outputs"][k]["name"])
            lists[k].items[0], lists[k].count = outs[k], 1
        res.keep.append(outs)
        ctx = exec_ctx(bufs, {})
        rc = self.lib.c.pyop_op_launch(self.op, slots, n_in, outs, n_out, ctypes.byref(ctx))
        if rc == 0:
            for k in range(n_out):
                lists[k].items[0] = outs[k]
        return rc

    def _finish(self, res, bufs, what=None):
        """The check after the op ran: a write outside a buffer the host gave
        (an error reported before anything else: the op wrote into guard
        zones). False when the run failed (here or before)."""
        overruns = bufs.overruns()
        if not overruns:
            return res.error is None
        where = what or "%s of \"%s\"" % (res.stages[-1] if res.stages else "a call",
                                           self.info["op_type"])
        ends = {o.endswith("past its end)") for o in overruns}
        how = ("wrote past the end of" if ends == {True} else
               "wrote before the start of" if ends == {False} else "wrote outside")
        res.error = CliError('%s %s %s' % (where, how, ", ".join(overruns)),
                             "PYOP_ECONTRACT", self.info["op_type"])
        res.failed = res.failed or (res.stages[-1] if res.stages else None)
        return False


def _held_to_infer_meta(message, info):
    """message (execute's PYOP_ECONTRACT) with a line after its first saying
    whose expectation the host's is: the command passes infer_meta's
    outputs (PYOP_EXEC_EXPECT_OUTPUTS)."""
    first, nl, rest = message.partition("\n")
    return "%s\n(pyop holds execute to what infer_meta (%s) returned for these inputs)%s%s" % (
        first, info.get("proto_source") or "the prototype", nl, rest)


def run_op(lib, info, inputs, attrs, want_execute=True, capacity=64, stage=_no_stage):
    """Instance.run on a fresh instance, destroyed after; raises PyopError
    when creating the op fails too. stage(name) is called before each
    stage, "creating the op" first."""
    stage("creating the op")
    inst = Instance(lib, info, attrs)
    try:
        return inst.run(inputs, want_execute, capacity, stage)
    finally:
        inst.destroy()
