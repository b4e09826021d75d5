"""--proto FILE: the C++ prototypes (GE's REG_OP) an implementation-only
plugin binds to, registered with libpyop as host prototypes before the
load, as a GE-style engine registers them (docs/ge-plugins.md, "Checking
an implementation-only plugin with pyop").

The file -- a C++ header (FILE.h) or the Python-statement form -- is read
by libpyop's own reader, ge.custom_op.host_proto.read, from the python/
directory of the bridge artifact this Python would load (pure Python,
imported for the reading only and removed from sys.modules after it, so
the bridge's load imports its packages afresh). Each declaration's info()
becomes a pyop_op_info for pyop_register_host_prototype, its TensorType /
DATATYPE sets the info's input_dtypes/output_dtypes; its default values
are range-checked as every number the command reads
(values.plugin_attr_value). A REG_OP libpyop has no form for is not
registered, and one no loaded plugin implements is left out of list and
check: each with a note on stderr naming FILE:LINE (note_unused)."""

import ctypes
import os
import sys
import traceback

from .binding import ATTR_TYPES, AttrInfo, DtypeSet, IoInfo, OpInfo
from .errors import CliError, UsageError
from .values import plugin_attr_value, set_attr_value

# Candidate statuses (src/candidates.c) of a bridge this Python may load.
_USABLE = ("untried", "loaded", "duplicate")


def _python_dir(lib):
    """The python/ directory (holding ge/custom_op/host_proto.py) of the
    first bridge artifact libpyop would try for this Python."""
    from .doctor import parse_doctor_report  # doctor imports list, which imports this
    rep = parse_doctor_report(lib.doctor())
    for c in rep["candidates"]:
        d = os.path.join(c["dir"], "python")
        if c["status"] in _USABLE and os.path.isfile(
                os.path.join(d, "ge", "custom_op", "host_proto.py")):
            return d
    raise CliError("--proto: no bridge artifact for this Python has the REG_OP reader "
                   "(python/ge/custom_op/host_proto.py); pyop doctor lists the candidates",
                   "PYOP_ENOENT")


def _ours(name):
    return name in ("pyop", "ge") or name.startswith(("pyop.", "ge."))


def read_declarations(lib, path):
    """[info dict] of the REG_OP declarations in path (UsageError when it
    cannot be read; CliError naming the file and the declaration when its
    content is wrong)."""
    if not os.path.isfile(path):
        raise UsageError("--proto %s: no such file" % path)
    if any(_ours(n) for n in sys.modules):
        # The bridge's packages are loaded (a second read in one command):
        # the reader is theirs.
        from ge.custom_op import host_proto
        return _read(host_proto, path)
    pydir = _python_dir(lib)
    saved = list(sys.path)
    sys.path.insert(0, pydir)
    try:
        from ge.custom_op import host_proto
        return _read(host_proto, path)
    finally:
        sys.path[:] = saved
        for n in [n for n in sys.modules if _ours(n)]:
            del sys.modules[n]


def _read(host_proto, path):
    try:
        return [r.info() for r in host_proto.read(path)]
    except OSError as e:
        raise UsageError("--proto %s: %s" % (path, e.strerror or e)) from None
    except UnicodeDecodeError as e:
        raise CliError("--proto %s: not UTF-8 text (%s)" % (path, e), "PYOP_EDESCRIPTOR") \
            from None
    except Exception as e:  # the file's own error: say where in it (exit(): main's)
        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == path]
        line = getattr(e, "line", None) if isinstance(e, host_proto.ReadError) else None
        if line is None and isinstance(e, SyntaxError) and e.lineno:
            line = e.lineno
        if line is None and frames:
            line = frames[-1].lineno
        at = " (%s:%d)" % (path, line) if line else ""
        what = str(e) if isinstance(e, host_proto.ReadError) else "%s: %s" % (type(e).__name__, e)
        raise CliError("--proto %s: %s%s" % (path, what, at), "PYOP_EDESCRIPTOR") from None


def _dtype_sets(sets, n, keep):
    """A pyop_dtype_set array of the (mask, symbol) pairs, or None."""
    if sets is None:
        return None
    arr = (DtypeSet * max(n, 1))()
    for k, (mask, symbol) in enumerate(sets):
        arr[k].mask = mask
        arr[k].symbol = symbol.encode() if symbol else None
        keep.append(arr[k].symbol)
    keep.append(arr)
    return arr


def _op_info(info, path, keep):
    """The pyop_op_info of one declaration (its arrays kept alive by keep)."""
    op = info["op_type"]
    where = "%s:%d" % (path, info["line"]) if info.get("line") else path
    what = "--proto %s: REG_OP(%r)" % (where, op)

    def ios(items):
        arr = (IoInfo * max(len(items), 1))()
        for k, (name, kind) in enumerate(items):
            arr[k].name = name.encode()
            arr[k].kind = int(kind)
            keep.append(arr[k].name)
        keep.append(arr)
        return arr, len(items)

    ins, n_in = ios(info["inputs"])
    outs, n_out = ios(info["outputs"])
    attrs = (AttrInfo * max(len(info["attrs"]), 1))()
    for k, (name, atype, required, default) in enumerate(info["attrs"]):
        type_name = ATTR_TYPES.get(int(atype))
        if type_name is None:
            raise CliError("%s attr %r: attribute type %d has no pyop form"
                           % (what, name, int(atype)), "PYOP_EDESCRIPTOR", op)
        a = attrs[k]
        a.name = name.encode()
        keep.append(a.name)
        a.type = int(atype)
        a.required = bool(required)
        if not required:
            try:
                value = plugin_attr_value(default, type_name)
            except ValueError as e:
                raise CliError("%s ATTR(%r): default %s" % (what, name, e),
                               "PYOP_EDESCRIPTOR", op) from None
            set_attr_value(a.default_value, type_name, value, keep)
    keep.append(attrs)
    o = OpInfo()
    o.struct_size = ctypes.sizeof(OpInfo)
    o.op_type = op.encode()
    keep.append(o.op_type)
    o.inputs, o.n_inputs = ins, n_in
    o.outputs, o.n_outputs = outs, n_out
    o.attrs, o.n_attrs = attrs, len(info["attrs"])
    o.input_dtypes = _dtype_sets(info.get("input_dtypes"), n_in, keep)
    o.output_dtypes = _dtype_sets(info.get("output_dtypes"), n_out, keep)
    return o


# The REG_OPs of this command's --proto files: op type -> "file:line";
# those seen without an implementation in a load, and those seen with one.
_declared, _unbound, _bound = {}, set(), set()
_noted = set()  # the REG_OPs note_unused named already


def _note(command, text):
    sys.stderr.write("pyop: %snote: %s\n" % ("%s: " % command if command else "", text))


def register_protos(lib, files, command=None, notes=True):
    """Registers the REG_OPs of every --proto file with
    pyop_register_host_prototype, before the load (they stay registered
    across the command's unloads); one libpyop has no form for is left out
    with a note (notes False: quietly). Returns {op_type: file}."""
    done = {}
    for path in files or []:
        path = os.path.abspath(path)
        for info in read_declarations(lib, path):
            where = "%s:%d" % (path, info["line"]) if info.get("line") else path
            if info["op_type"] in done:
                raise CliError("--proto %s: REG_OP(%r) is declared in %s too"
                               % (where, info["op_type"], _declared[info["op_type"]]),
                               "PYOP_ECONFLICT", info["op_type"])
            if info.get("unusable"):
                if notes:
                    _note(command, "--proto %s: REG_OP(%s) is not registered: %s"
                          % (where, info["op_type"], info["unusable"]))
                continue
            keep = []
            lib.check("registering REG_OP(%r) of --proto %s" % (info["op_type"], where),
                      lib.c.pyop_register_host_prototype(
                          ctypes.byref(_op_info(info, path, keep))))
            done[info["op_type"]] = path
            _declared[info["op_type"]] = where
    return done


def skip_unbound(info):
    """Whether list/check leave the op of info out: a --proto REG_OP that no
    plugin of this load implements (a header declares more ops than the
    plugins need; note_unused names them)."""
    op = info["op_type"]
    if op not in _declared or info["proto_key"] != "host:" + op:
        return False
    if info["impl_key"]:
        _bound.add(op)
        return False
    _unbound.add(op)
    return True


def binding_seen():
    """What skip_unbound saw in this process's loads: {"bound": [...],
    "unbound": [...]} (a check worker sends it to the command: merge_binding)."""
    return {"bound": sorted(_bound), "unbound": sorted(_unbound)}


def merge_binding(seen):
    """Adds what another process (a check worker) saw: binding_seen()."""
    _bound.update(seen.get("bound", ()))
    _unbound.update(seen.get("unbound", ()))


def note_unused(command):
    """One note per --proto REG_OP that list/check left out in every load
    (of this process and of the workers merged in): each said once."""
    for op in [o for o in _declared if o in _unbound and o not in _bound and o not in _noted]:
        _noted.add(op)  # file order
        _note(command, "--proto %s: REG_OP(%s) is not used: no loaded plugin implements it"
              % (_declared[op], op))
