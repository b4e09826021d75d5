"""What several commands share: the plugin path, the Python running the
command, and running one op as a host does (run_op)."""

import ctypes
import os
import sys

from . import config
from .binding import (ALLOC_OUTPUT, ALLOC_WORKSPACE, EXEC_EXPECT_OUTPUTS, ExecCtx, OutputList,
                      Tensor, TensorList)
from .errors import CliError, PyopError, UsageError
from .values import (Buffers, make_attrs, make_tensor, numel, parse_attr_text, parse_input,
                     read_values, _sample_values)


def exec_ctx(bufs, allocated):
    """A pyop_exec_ctx whose callbacks allocate from bufs; records outputs."""

    def alloc_output(_user, index, tp):
        t = tp.contents
        try:
            t.data = bufs.alloc(t.nbytes, "output %d" % index)
        except CliError:
            return 1  # refused: the call fails with PYOP_EHOST, bufs.refused says why
        allocated[index] = (t.dtype, list(t.shape[:t.ndim]))
        return 0

    def alloc_workspace(_user, nbytes, out):
        try:
            out[0] = bufs.alloc(nbytes, "a workspace")
        except CliError:
            return 1
        return 0

    cb_out = ALLOC_OUTPUT(alloc_output)
    cb_ws = ALLOC_WORKSPACE(alloc_workspace)
    bufs.keep.extend([cb_out, cb_ws])
    return ExecCtx(ctypes.sizeof(ExecCtx), None, cb_out, cb_ws, None)


def check_paths(paths):
    """Plugin path arguments become ASCEND_CUSTOM_OPP_PATH elements, which ':'
    separates: a path containing one cannot be passed (UsageError)."""
    for p in paths or []:
        if ":" in p:
            raise UsageError("%s: a plugin path cannot contain ':' (it separates "
                             "ASCEND_CUSTOM_OPP_PATH elements); rename it or link it from a "
                             "path without one" % p)


def with_opp_path(paths):
    check_paths(paths)
    if paths:
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = ":".join(os.path.abspath(p) for p in paths)


def ge_status_lines():
    """What serves `import ge` for GE-style plugins in this process (the
    bridge runs in this interpreter): libpyop's compatibility package, or a
    real CANN ge imported before the load (then left alone)."""
    mod = sys.modules.get("ge")
    if mod is not None and getattr(mod, "__pyop_ge__", False) is not True:
        where = getattr(mod, "__file__", None) or repr(mod)
        return ["ge: a CANN `ge` package is already imported (%s); libpyop does not replace "
                "it, so GE-style plugins register with it and libpyop sees none of their ops"
                % where]
    lines = ["ge: libpyop's GE compatibility package (python/ge of the bridge artifact) "
             "serves GE-style plugins (host-only: NPU launches and pyACL are unavailable)"]
    link = sys.modules.get("pyop._ge_link")  # shadowed(): on sys.path, not sys.modules
    other = link.shadowed() if hasattr(link, "shadowed") else None
    if other is None and mod is None:
        try:
            import importlib.util
            spec = importlib.util.find_spec("ge")
        except (ImportError, ValueError):
            spec = None
        other = spec.origin if spec is not None else None
    if other is not None:
        lines.append("ge: note: a `ge` package is installed at %s; it is used instead "
                     "only when the host imports it before pyop_load" % other)
    return lines


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


class RunResult:
    """What one run saw. inferred: per output a list of (dtype, shape), or
    None without infer_meta; produced: per output a list of (Tensor, values),
    or None when nothing ran; inputs: per input slot the Tensors passed;
    before/after: their bytes around the call; error: the failure
    (PyopError) of execute or launch, or None; ran: "execute", "launch" or
    None (infer-only)."""

    def __init__(self):
        self.inferred = None
        self.produced = None
        self.inputs = []
        self.before = []
        self.after = []
        self.error = None
        self.ran = None

    def output_bytes(self):
        """Per output, the bytes of each tensor it produced (None: none ran)."""
        if self.produced is None:
            return None
        return [[_bytes_of(t) for t, _ in tensors] for tensors in self.produced]


def _bytes_of(t):
    return ctypes.string_at(t.data, t.nbytes) if t.data and t.nbytes else b""


class Instance:
    """One op instance (pyop_op_create with attrs), run as a host runs it:
    run() any number of times, from any number of threads at once (each run
    has its own buffers), then destroy()."""

    def __init__(self, lib, info, attrs):
        self.lib = lib
        self.info = info
        self.keep = []
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

    def run(self, inputs, want_execute=True, capacity=64):
        """infer_meta and execute (or the kernel launch of a launch-only op)
        through the list forms, so any number of outputs and dynamic ones
        work. When infer_meta exists, execute is held to it
        (PYOP_EXEC_EXPECT_OUTPUTS): a different output is PYOP_ECONTRACT.

        inputs: list (one per prototype input) of lists of (dtype, shape,
        values). Returns a RunResult (its bufs keep the buffers alive);
        raises PyopError when infer_meta fails (its stage attribute
        "infer_meta"); an execute/launch failure is kept in RunResult.error."""
        lib, info, op = self.lib, self.info, self.op
        keep = []
        bufs = Buffers()
        res = RunResult()
        res.bufs = bufs
        res.keep = keep
        slots = (TensorList * max(len(inputs), 1))()
        for k, slot in enumerate(inputs):
            arr = (Tensor * max(len(slot), 1))()
            name = info["inputs"][k]["name"] if k < len(info["inputs"]) else str(k)
            for j, (dtype, shape, values) in enumerate(slot):
                arr[j] = make_tensor(bufs, dtype, shape, values, "input %s%s" % (
                    name, "[%d]" % j if len(slot) > 1 else ""))
            keep.append(arr)
            slots[k].items = arr
            slots[k].count = len(slot)
            res.inputs.append([arr[j] for j in range(len(slot))])
        n_out = len(info["outputs"])
        lists = (OutputList * max(n_out, 1))()
        for k in range(n_out):
            items = (Tensor * capacity)()
            keep.append(items)
            lists[k].items, lists[k].capacity, lists[k].count = items, capacity, 0
        caps = self.caps
        if caps & 1:
            try:
                lib.check('infer_meta of "%s"' % info["op_type"],
                          lib.c.pyop_op_infer_meta_list(op, slots, len(inputs), lists, n_out))
            except PyopError as e:
                e.stage = "infer_meta"
                raise
            res.inferred = [[(lists[k].items[j].dtype,
                              list(lists[k].items[j].shape[:lists[k].items[j].ndim]))
                             for j in range(lists[k].count)] for k in range(n_out)]
        if not want_execute:
            return res
        res.before = [[_bytes_of(t) for t in slot] for slot in res.inputs]
        if caps & 2:
            ctx = exec_ctx(bufs, {})
            if res.inferred is not None:
                ctx.flags = EXEC_EXPECT_OUTPUTS
            rc = lib.c.pyop_op_execute_list(op, slots, len(inputs), lists, n_out,
                                            ctypes.byref(ctx))
            what = 'execute of "%s"' % info["op_type"]
            res.ran = "execute"
        elif caps & 8 and res.inferred is not None:
            # Launch-only op: outputs allocated from infer_meta, then the
            # declared kernel plan runs through libffi (no Python).
            if any(o["kind"] == "dynamic" for o in info["outputs"]):
                raise CliError('op "%s": a launch-only op with a dynamic output cannot '
                               'be run' % info["op_type"], "PYOP_EUNSUPPORTED", info["op_type"])
            outs = (Tensor * max(n_out, 1))()
            for k in range(n_out):
                dtype, shape = res.inferred[k][0]
                outs[k] = make_tensor(bufs, dtype, shape, what="output %d" % k)
                lists[k].items[0], lists[k].count = outs[k], 1
            keep.append(outs)
            ctx = exec_ctx(bufs, {})
            rc = lib.c.pyop_op_launch(op, slots, len(inputs), outs, n_out, ctypes.byref(ctx))
            if rc == 0:
                for k in range(n_out):
                    lists[k].items[0] = outs[k]
            what = 'launch of "%s"' % info["op_type"]
            res.ran = "launch"
        else:
            return res
        res.after = [[_bytes_of(t) for t in slot] for slot in res.inputs]
        overruns = bufs.overruns()
        if overruns:
            # Reported before anything else: the op wrote outside the
            # memory the host gave it (here into guard zones).
            res.error = CliError('%s wrote past the end of %s' % (what, ", ".join(overruns)),
                                 "PYOP_ECONTRACT", info["op_type"])
            return res
        if rc != 0:
            try:
                lib.check(what, rc)
            except PyopError as e:
                if bufs.refused:
                    e.message = "%s (%s)" % (e.message, bufs.refused)
                res.error = e
            return res
        res.produced = [[(lists[k].items[j], read_values(lists[k].items[j]))
                         for j in range(lists[k].count)] for k in range(n_out)]
        return res


def run_op(lib, info, inputs, attrs, want_execute=True, capacity=64):
    """Instance.run on a fresh instance, destroyed after; raises PyopError
    when creating the op fails too."""
    inst = Instance(lib, info, attrs)
    try:
        return inst.run(inputs, want_execute, capacity)
    finally:
        inst.destroy()


def _inputs_from_args(info, args):
    """One list of (dtype, shape, values) per prototype input from --input."""
    given = {}
    for text in args.input or []:
        name, dtype, shape, values = parse_input(text)
        if values is None:
            values = _sample_values(dtype, numel(shape), 0)
        given.setdefault(name, []).append((dtype, shape, values))
    names = [i["name"] for i in info["inputs"]]
    for name in given:
        if name not in names:
            raise UsageError('op "%s" has no input "%s" (inputs: %s)'
                             % (info["op_type"], name, ", ".join(names)), info["op_type"])
    inputs = []
    for i in info["inputs"]:
        slot = given.get(i["name"], [])
        if i["kind"] == "required" and len(slot) != 1:
            raise UsageError('input "%s" of "%s" is required: give --input %s=DTYPE[SHAPE]:VALUES'
                             % (i["name"], info["op_type"], i["name"]), info["op_type"])
        if i["kind"] == "optional" and len(slot) > 1:
            raise UsageError('input "%s" is optional: give it at most once' % i["name"],
                             args.op)
        inputs.append(slot)
    return inputs


def _attrs_from_args(info, args):
    """{name: value} from --attr NAME=VALUE (a Tensor attribute as
    DTYPE[SHAPE]:VALUES)."""
    types = {a["name"]: a["type"] for a in info["attrs"]}
    attrs = {}
    for text in args.attr or []:
        if "=" not in text:
            raise UsageError("--attr %s: expected NAME=VALUE" % text, args.op)
        name, value = text.split("=", 1)
        if name not in types:
            raise UsageError('op "%s" has no attribute "%s" (it has: %s)'
                             % (info["op_type"], name, ", ".join(types) or "none"),
                             info["op_type"])
        attrs[name] = parse_attr_text(value, types[name], name, info["op_type"])
    return attrs


def _other_python_note(verb="checked"):
    """A line saying this command runs under another Python than the build's
    (the one a C host with start_python runs), or None."""
    if config.BUILD_PYTHON is None or _same_file(sys.executable, config.BUILD_PYTHON):
        return None
    return ("%s under %s, NOT the build's Python %s, which a C host with "
            "start_python runs: ops may import (and time) differently there (e.g. "
            "numpy); PYOP_PYTHON=%s runs this command under it"
            % (verb, sys.executable, config.BUILD_PYTHON, config.BUILD_PYTHON))


def _warn_other_python(command, verb):
    """run and bench: the note on stderr (their stdout is the result)."""
    note = _other_python_note(verb)
    if note:
        sys.stderr.write("pyop: %s: note: %s\n" % (command, note))
