#!/usr/bin/env python3
"""pyop — check, list and run Python custom operators through libpyop.

The command drives libpyop (the same library a C host links) through ctypes
from this Python process: libpyop finds this very interpreter, loads the
bridge built for it and imports the plugins of ASCEND_CUSTOM_OPP_PATH (or the
paths given to `check`).

Exit status: 0 on success; 1 when the command ran and found a problem (a
failed load, a failed op, a disagreement in `check`); 2 for bad usage. On
failure a one-line reason goes to stderr (`pyop: <reason>`), followed by
libpyop's detailed message when there is one.
"""

import argparse
import ctypes
import json
import math
import os
import struct
import sys
import time

# ----------------------------------------------------------------- library


def _find_library():
    """libpyop next to this script: <prefix>/bin/pyop -> <prefix>/lib*/libpyop.so."""
    env = os.environ.get("PYOP_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.realpath(__file__))
    for libdir in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu")):
        cand = os.path.join(here, "..", libdir, "libpyop.so.0")
        if os.path.exists(cand):
            return os.path.normpath(cand)
    return "libpyop.so.0"


MAX_DIMS = 8

DTYPES = ["float32", "float16", "bfloat16", "float64", "int8", "int16", "int32",
          "int64", "uint8", "uint16", "uint32", "uint64", "bool"]
DTYPE_SIZE = [4, 2, 2, 8, 1, 2, 4, 8, 1, 2, 4, 8, 1]
DTYPE_STRUCT = ["f", "e", "H", "d", "b", "h", "i", "q", "B", "H", "I", "Q", "?"]
FORMATS = ["ND", "NCHW", "NHWC", "NC1HWC0", "FRACTAL_NZ"]
IO_KINDS = ["required", "optional", "dynamic"]
ATTR_TYPES = {1: "int", 2: "float", 3: "bool", 4: "str", 5: "DataType",
              6: "list[int]", 7: "list[float]", 8: "list[bool]", 9: "list[str]",
              10: "list[DataType]", 11: "list[list[int]]"}
CAPS = [(1, "infer_meta"), (2, "execute"), (4, "compile"), (8, "declare_launch_args")]


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("format", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("shape", ctypes.c_int64 * MAX_DIMS),
                ("nbytes", ctypes.c_uint64)]


class TensorList(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(Tensor)), ("count", ctypes.c_size_t)]


class Str(ctypes.Structure):
    _fields_ = [("data", ctypes.c_char_p), ("len", ctypes.c_size_t)]


class IntList(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(ctypes.c_int64)), ("count", ctypes.c_size_t)]


class _Span(ctypes.Structure):
    _fields_ = [("items", ctypes.c_void_p), ("count", ctypes.c_size_t)]


class _AttrUnion(ctypes.Union):
    _fields_ = [("i", ctypes.c_int64), ("f", ctypes.c_double), ("b", ctypes.c_bool),
                ("dtype", ctypes.c_int32), ("s", Str), ("span", _Span)]


class AttrValue(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int32), ("reserved", ctypes.c_int32), ("u", _AttrUnion)]


class Attr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", AttrValue)]


class IoInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int32)]


class AttrInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int32),
                ("required", ctypes.c_bool), ("default_value", AttrValue)]


class OpInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("op_type", ctypes.c_char_p),
                ("proto_key", ctypes.c_char_p), ("proto_source", ctypes.c_char_p),
                ("impl_key", ctypes.c_char_p), ("impl_source", ctypes.c_char_p),
                ("inputs", ctypes.POINTER(IoInfo)), ("n_inputs", ctypes.c_size_t),
                ("outputs", ctypes.POINTER(IoInfo)), ("n_outputs", ctypes.c_size_t),
                ("attrs", ctypes.POINTER(AttrInfo)), ("n_attrs", ctypes.c_size_t),
                ("capabilities", ctypes.c_uint32)]


ALLOC_OUTPUT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.POINTER(Tensor))
ALLOC_WORKSPACE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64,
                                   ctypes.POINTER(ctypes.c_void_p))


class ExecCtx(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("user", ctypes.c_void_p),
                ("alloc_output", ALLOC_OUTPUT), ("alloc_workspace", ALLOC_WORKSPACE),
                ("stream", ctypes.c_void_p)]


class PyopError(Exception):
    """A libpyop call failed: status name plus pyop_last_error() text."""

    def __init__(self, what, status, detail):
        self.status = status
        self.detail = detail
        super().__init__("%s failed (%s)" % (what, status))


class Lib:
    """Thin ctypes binding of include/pyop/pyop.h."""

    def __init__(self, path):
        self.path = path
        self.c = ctypes.CDLL(path)
        c = self.c
        c.pyop_status_name.restype = ctypes.c_char_p
        c.pyop_last_error.restype = ctypes.c_char_p
        c.pyop_op_get.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(OpInfo))]
        c.pyop_op_info_release.argtypes = [ctypes.POINTER(OpInfo)]
        c.pyop_op_list.argtypes = [ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)),
                                   ctypes.POINTER(ctypes.c_size_t)]
        c.pyop_free.argtypes = [ctypes.c_void_p]
        c.pyop_doctor.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        c.pyop_op_create.argtypes = [ctypes.c_char_p, ctypes.POINTER(Attr), ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_void_p)]
        c.pyop_op_destroy.argtypes = [ctypes.c_void_p]
        c.pyop_op_capabilities.argtypes = [ctypes.c_void_p]
        c.pyop_op_capabilities.restype = ctypes.c_uint32
        c.pyop_op_infer_meta.argtypes = [ctypes.c_void_p, ctypes.POINTER(TensorList),
                                         ctypes.c_size_t, ctypes.POINTER(Tensor),
                                         ctypes.c_size_t]
        c.pyop_op_execute.argtypes = [ctypes.c_void_p, ctypes.POINTER(TensorList),
                                      ctypes.c_size_t, ctypes.POINTER(Tensor),
                                      ctypes.c_size_t, ctypes.POINTER(ExecCtx)]
        c.pyop_op_launch.argtypes = [ctypes.c_void_p, ctypes.POINTER(TensorList),
                                     ctypes.c_size_t, ctypes.POINTER(Tensor),
                                     ctypes.c_size_t, ctypes.POINTER(ExecCtx)]

    def check(self, what, rc):
        if rc != 0:
            name = self.c.pyop_status_name(rc).decode()
            detail = self.c.pyop_last_error().decode("utf-8", "replace")
            raise PyopError(what, name, detail)

    def load(self):
        self.check("pyop_load", self.c.pyop_load())

    def shutdown(self):
        self.c.pyop_shutdown()

    def doctor(self):
        out = ctypes.c_void_p()
        self.check("pyop_doctor", self.c.pyop_doctor(ctypes.byref(out)))
        text = ctypes.string_at(out.value).decode("utf-8", "replace")
        self.c.pyop_free(out)
        return text

    def op_types(self):
        arr = ctypes.POINTER(ctypes.c_char_p)()
        n = ctypes.c_size_t()
        self.check("pyop_op_list", self.c.pyop_op_list(ctypes.byref(arr), ctypes.byref(n)))
        names = [arr[i].decode() for i in range(n.value)]
        self.c.pyop_free(arr)
        return names

    def op_info(self, op_type):
        p = ctypes.POINTER(OpInfo)()
        self.check('looking up op "%s"' % op_type,
                   self.c.pyop_op_get(op_type.encode(), ctypes.byref(p)))
        try:
            return info_to_dict(p.contents)
        finally:
            self.c.pyop_op_info_release(p)


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


def _json_float(x):
    """Non-finite floats as strings: --json output stays strict JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def json_safe(obj):
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [json_safe(v) for v in obj]
    return _json_float(obj)


def dump_json(obj):
    print(json.dumps(json_safe(obj), indent=2, sort_keys=True, allow_nan=False))


def attr_value_to_py(v):
    t = v.type
    u = v.u
    if t == 1:
        return u.i
    if t == 2:
        return u.f
    if t == 3:
        return bool(u.b)
    if t == 4:
        return ctypes.string_at(u.s.data, u.s.len).decode("utf-8", "replace") if u.s.len else ""
    if t == 5:
        return DTYPES[u.dtype] if 0 <= u.dtype < len(DTYPES) else u.dtype
    n = u.span.count
    if n == 0:
        return []
    p = u.span.items
    if t == 6:
        return list(ctypes.cast(p, ctypes.POINTER(ctypes.c_int64))[:n])
    if t == 7:
        return list(ctypes.cast(p, ctypes.POINTER(ctypes.c_double))[:n])
    if t == 8:
        return [bool(x) for x in ctypes.cast(p, ctypes.POINTER(ctypes.c_bool))[:n]]
    if t == 9:
        items = ctypes.cast(p, ctypes.POINTER(Str))
        return [ctypes.string_at(items[i].data, items[i].len).decode("utf-8", "replace")
                if items[i].len else "" for i in range(n)]
    if t == 10:
        return [DTYPES[d] for d in ctypes.cast(p, ctypes.POINTER(ctypes.c_int32))[:n]]
    if t == 11:
        items = ctypes.cast(p, ctypes.POINTER(IntList))
        return [list(items[i].items[:items[i].count]) if items[i].count else []
                for i in range(n)]
    return None


def info_to_dict(i):
    return {
        "op_type": _s(i.op_type),
        "proto_key": _s(i.proto_key),
        "proto_source": _s(i.proto_source),
        "impl_key": _s(i.impl_key),
        "impl_source": _s(i.impl_source),
        "inputs": [{"name": _s(i.inputs[k].name), "kind": IO_KINDS[i.inputs[k].kind]}
                   for k in range(i.n_inputs)],
        "outputs": [{"name": _s(i.outputs[k].name)} for k in range(i.n_outputs)],
        "attrs": [{"name": _s(i.attrs[k].name),
                   "type": ATTR_TYPES.get(i.attrs[k].type, str(i.attrs[k].type)),
                   "required": bool(i.attrs[k].required),
                   "default": None if i.attrs[k].required
                   else attr_value_to_py(i.attrs[k].default_value)}
                  for k in range(i.n_attrs)],
        "capabilities": [name for bit, name in CAPS if i.capabilities & bit],
    }


# ------------------------------------------------------------ host buffers


class Buffers:
    """Owns every buffer the command hands to libpyop (the host owns memory)."""

    def __init__(self):
        self.keep = []

    def alloc(self, nbytes):
        buf = ctypes.create_string_buffer(max(int(nbytes), 1))
        self.keep.append(buf)
        return ctypes.addressof(buf)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _bf16_bits(x):
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


def _bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def make_tensor(bufs, dtype, shape, values=None):
    """A pyop_tensor over a fresh buffer holding values (or zeros)."""
    t = Tensor()
    t.dtype = dtype
    t.format = 0
    t.ndim = len(shape)
    for k, d in enumerate(shape):
        t.shape[k] = d
    n = numel(shape)
    t.nbytes = n * DTYPE_SIZE[dtype]
    t.data = bufs.alloc(t.nbytes)
    if values is not None:
        if len(values) != n:
            raise ValueError("%d values given for shape %s (%d elements)"
                             % (len(values), list(shape), n))
        write_values(t, values)
    return t


def write_values(t, values):
    name = DTYPES[t.dtype]
    if name == "bfloat16":
        values = [_bf16_bits(float(v)) for v in values]
    elif name == "bool":
        values = [bool(v) for v in values]
    elif name.startswith(("int", "uint")):
        values = [int(v) for v in values]
    else:
        values = [float(v) for v in values]
    raw = struct.pack("<%d%s" % (len(values), DTYPE_STRUCT[t.dtype]), *values)
    ctypes.memmove(t.data, raw, len(raw))


def read_values(t):
    n = numel(t.shape[:t.ndim])
    if not t.data or n == 0:
        return []
    raw = ctypes.string_at(t.data, n * DTYPE_SIZE[t.dtype])
    vals = list(struct.unpack("<%d%s" % (n, DTYPE_STRUCT[t.dtype]), raw))
    if DTYPES[t.dtype] == "bfloat16":
        vals = [_bf16_value(v) for v in vals]
    return vals


def tensor_repr(t):
    return "%s%s" % (DTYPES[t.dtype], list(t.shape[:t.ndim]))


def exec_ctx(bufs, allocated):
    """A pyop_exec_ctx whose callbacks allocate from bufs; records outputs."""

    def alloc_output(_user, index, tp):
        t = tp.contents
        t.data = bufs.alloc(t.nbytes)
        allocated[index] = (t.dtype, list(t.shape[:t.ndim]))
        return 0

    def alloc_workspace(_user, nbytes, out):
        out[0] = bufs.alloc(nbytes)
        return 0

    cb_out = ALLOC_OUTPUT(alloc_output)
    cb_ws = ALLOC_WORKSPACE(alloc_workspace)
    bufs.keep.extend([cb_out, cb_ws])
    return ExecCtx(ctypes.sizeof(ExecCtx), None, cb_out, cb_ws, None)


# ------------------------------------------------------------- attributes


def make_attrs(info, given, keep):
    """pyop_attr array from {name: python value}, typed by the op's prototype."""
    types = {a["name"]: a["type"] for a in info["attrs"]}
    attrs = (Attr * max(len(given), 1))()
    for k, (name, value) in enumerate(given.items()):
        if name not in types:
            raise ValueError('op "%s" has no attribute "%s" (it has: %s)'
                             % (info["op_type"], name, ", ".join(types) or "none"))
        a = attrs[k]
        a.name = name.encode()
        keep.append(a.name)
        set_attr_value(a.value, types[name], value, keep)
    return attrs, len(given)


def _array(ctype, values, keep):
    arr = (ctype * max(len(values), 1))(*values)
    keep.append(arr)
    return ctypes.cast(arr, ctypes.c_void_p), len(values)


def set_attr_value(v, type_name, value, keep):
    code = {n: c for c, n in ATTR_TYPES.items()}[type_name]
    v.type = code
    if type_name == "int":
        v.u.i = int(value)
    elif type_name == "float":
        v.u.f = float(value)
    elif type_name == "bool":
        v.u.b = bool(value)
    elif type_name == "str":
        b = str(value).encode()
        keep.append(b)
        v.u.s = Str(b, len(b))
    elif type_name == "DataType":
        v.u.dtype = DTYPES.index(value)
    elif type_name == "list[int]":
        v.u.span.items, v.u.span.count = _array(ctypes.c_int64, [int(x) for x in value], keep)
    elif type_name == "list[float]":
        v.u.span.items, v.u.span.count = _array(ctypes.c_double, [float(x) for x in value], keep)
    elif type_name == "list[bool]":
        v.u.span.items, v.u.span.count = _array(ctypes.c_bool, [bool(x) for x in value], keep)
    elif type_name == "list[DataType]":
        v.u.span.items, v.u.span.count = _array(ctypes.c_int32, [DTYPES.index(x) for x in value], keep)
    elif type_name == "list[str]":
        bs = [str(x).encode() for x in value]
        keep.extend(bs)
        v.u.span.items, v.u.span.count = _array(Str, [Str(b, len(b)) for b in bs], keep)
    elif type_name == "list[list[int]]":
        inner = []
        for row in value:
            p, n = _array(ctypes.c_int64, [int(x) for x in row], keep)
            inner.append(IntList(ctypes.cast(p, ctypes.POINTER(ctypes.c_int64)), n))
        v.u.span.items, v.u.span.count = _array(IntList, inner, keep)
    else:
        raise ValueError("unsupported attribute type %s" % type_name)


def parse_attr_text(text, type_name):
    """--attr value text -> Python value of the attribute's type."""
    if type_name in ("int", "float", "bool", "str", "DataType"):
        return _scalar(text, type_name)
    if type_name == "list[list[int]]":
        return json.loads(text)
    inner = type_name[5:-1]
    body = text.strip()
    if body.startswith("["):
        body = body[1:-1]
    return [_scalar(x.strip(), inner) for x in body.split(",") if x.strip()]


def _scalar(text, type_name):
    if type_name == "int":
        return int(text, 0)
    if type_name == "float":
        return float(text)
    if type_name == "bool":
        low = text.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError("not a bool: %r" % text)
    if type_name == "DataType":
        if text not in DTYPES:
            raise ValueError("unknown data type %r (one of: %s)" % (text, ", ".join(DTYPES)))
        return text
    return text


def parse_input(text):
    """NAME=DTYPE[SHAPE]:VALUES, e.g. x=float32[2,3]:1,2,3,4,5,6 (VALUES optional)."""
    if "=" not in text:
        raise ValueError("--input %r: expected NAME=DTYPE[SHAPE]:VALUES" % text)
    name, spec = text.split("=", 1)
    values = None
    if "]" not in spec or "[" not in spec:
        raise ValueError("--input %r: expected DTYPE[SHAPE], e.g. float32[2,3]" % text)
    head, _, tail = spec.partition("]")
    dtype_name, _, dims = head.partition("[")
    if dtype_name not in DTYPES:
        raise ValueError("--input %r: unknown data type %r (one of: %s)"
                         % (text, dtype_name, ", ".join(DTYPES)))
    shape = [int(d) for d in dims.split(",") if d.strip()]
    if tail:
        if not tail.startswith(":"):
            raise ValueError("--input %r: expected ':' before the values" % text)
        values = [v for v in tail[1:].split(",") if v.strip()]
    return name.strip(), DTYPES.index(dtype_name), shape, values


# ---------------------------------------------------------------- commands


def with_opp_path(paths):
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
    if mod is None:
        try:
            import importlib.util
            spec = importlib.util.find_spec("ge")
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            lines.append("ge: note: a `ge` package is installed at %s; it is used instead "
                         "only when the host imports it before pyop_load" % spec.origin)
    return lines


def cmd_doctor(lib, args):
    text = lib.doctor()
    text += "".join(line + "\n" for line in ge_status_lines())
    if args.json:
        dump_json({"report": text.splitlines()})
    else:
        print(text, end="")
    return 0


def cmd_list(lib, args):
    with_opp_path(args.path)
    lib.load()
    ops = [lib.op_info(t) for t in lib.op_types()]
    if args.json:
        dump_json({"ops": ops})
        return 0
    if not ops:
        print("no ops registered (ASCEND_CUSTOM_OPP_PATH=%s)"
              % os.environ.get("ASCEND_CUSTOM_OPP_PATH", ""))
    for op in ops:
        ins = ", ".join(i["name"] + ("?" if i["kind"] == "optional" else
                                     "[]" if i["kind"] == "dynamic" else "")
                        for i in op["inputs"])
        attrs = ", ".join("%s: %s%s" % (a["name"], a["type"],
                                        "" if a["required"] else " = %r" % (a["default"],))
                          for a in op["attrs"])
        outs = ", ".join(o["name"] for o in op["outputs"])
        print("%s(%s%s) -> %s" % (op["op_type"], ins, ("; " + attrs) if attrs else "", outs))
        print("    capabilities: %s" % (", ".join(op["capabilities"]) or "none"))
        print("    prototype: %s (%s)" % (op["proto_source"], op["proto_key"]))
        if op["impl_key"]:
            print("    implementation: %s (%s)" % (op["impl_source"], op["impl_key"]))
    return 0


def _sample_values(dtype, n, seed):
    name = DTYPES[dtype]
    if name == "bool":
        return [(k + seed) % 2 == 0 for k in range(n)]
    if name.startswith("uint") or name.startswith("int"):
        return [(k + seed) % 7 for k in range(n)]
    return [((k + seed) % 11) * 0.5 for k in range(n)]


def _default_attr(a):
    samples = {"int": 1, "float": 1.0, "bool": False, "str": "x", "DataType": "float32",
               "list[int]": [1], "list[float]": [1.0], "list[bool]": [False],
               "list[str]": ["x"], "list[DataType]": ["float32"], "list[list[int]]": [[1]]}
    return samples[a["type"]]


def run_op(lib, info, inputs, attrs, want_execute=True):
    """Creates the op, runs infer_meta and execute.

    inputs: list (one per prototype input) of lists of (dtype, shape, values).
    Returns (inferred, produced): lists of (dtype, shape) and of Tensor.
    """
    keep = []
    bufs = Buffers()
    c_attrs, n_attrs = make_attrs(info, attrs, keep)
    op = ctypes.c_void_p()
    lib.check('creating op "%s"' % info["op_type"],
              lib.c.pyop_op_create(info["op_type"].encode(), c_attrs, n_attrs,
                                   ctypes.byref(op)))
    try:
        slots = (TensorList * max(len(inputs), 1))()
        for k, slot in enumerate(inputs):
            arr = (Tensor * max(len(slot), 1))()
            for j, (dtype, shape, values) in enumerate(slot):
                arr[j] = make_tensor(bufs, dtype, shape, values)
            keep.append(arr)
            slots[k].items = arr
            slots[k].count = len(slot)
        n_out = len(info["outputs"])
        inferred = None
        caps = lib.c.pyop_op_capabilities(op)
        if caps & 1:
            descs = (Tensor * max(n_out, 1))()
            lib.check('infer_meta of "%s"' % info["op_type"],
                      lib.c.pyop_op_infer_meta(op, slots, len(inputs), descs, n_out))
            inferred = [(descs[k].dtype, list(descs[k].shape[:descs[k].ndim]))
                        for k in range(n_out)]
        produced = None
        if want_execute and caps & 2:
            outs = (Tensor * max(n_out, 1))()
            allocated = {}
            ctx = exec_ctx(bufs, allocated)
            lib.check('execute of "%s"' % info["op_type"],
                      lib.c.pyop_op_execute(op, slots, len(inputs), outs, n_out,
                                            ctypes.byref(ctx)))
            produced = [outs[k] if k in allocated else None for k in range(n_out)]
            produced = [(t, read_values(t)) if t is not None else None for t in produced]
        elif want_execute and caps & 8 and inferred is not None:
            # Launch-only op: outputs allocated from infer_meta, then the
            # declared kernel plan runs through libffi (no Python).
            outs = (Tensor * max(n_out, 1))()
            for k, (dtype, shape) in enumerate(inferred):
                outs[k] = make_tensor(bufs, dtype, shape)
            ctx = exec_ctx(bufs, {})
            lib.check('launch of "%s"' % info["op_type"],
                      lib.c.pyop_op_launch(op, slots, len(inputs), outs, n_out,
                                           ctypes.byref(ctx)))
            produced = [(outs[k], read_values(outs[k])) for k in range(n_out)]
        return inferred, produced
    finally:
        lib.c.pyop_op_destroy(op)


def cmd_run(lib, args):
    lib.load()
    info = lib.op_info(args.op)
    given = {}
    for text in args.input or []:
        name, dtype, shape, values = parse_input(text)
        if values is None:
            values = _sample_values(dtype, numel(shape), 0)
        given.setdefault(name, []).append((dtype, shape, values))
    names = [i["name"] for i in info["inputs"]]
    for name in given:
        if name not in names:
            raise ValueError('op "%s" has no input "%s" (inputs: %s)'
                             % (args.op, name, ", ".join(names)))
    inputs = []
    for i in info["inputs"]:
        slot = given.get(i["name"], [])
        if i["kind"] == "required" and len(slot) != 1:
            raise ValueError('input "%s" of "%s" is required: give --input %s=DTYPE[SHAPE]:VALUES'
                             % (i["name"], args.op, i["name"]))
        if i["kind"] == "optional" and len(slot) > 1:
            raise ValueError('input "%s" is optional: give it at most once' % i["name"])
        inputs.append(slot)
    types = {a["name"]: a["type"] for a in info["attrs"]}
    attrs = {}
    for text in args.attr or []:
        if "=" not in text:
            raise ValueError("--attr %r: expected NAME=VALUE" % text)
        name, value = text.split("=", 1)
        if name not in types:
            raise ValueError('op "%s" has no attribute "%s" (it has: %s)'
                             % (args.op, name, ", ".join(types) or "none"))
        attrs[name] = parse_attr_text(value, types[name])
    inferred, produced = run_op(lib, info, inputs, attrs)
    if produced is None:
        raise ValueError('op "%s" has no execute implementation (and no kernel launch)' % args.op)
    result = []
    for k, o in enumerate(info["outputs"]):
        if produced[k] is None:
            result.append({"name": o["name"], "allocated": False})
            continue
        t, vals = produced[k]
        result.append({"name": o["name"], "dtype": DTYPES[t.dtype],
                       "shape": list(t.shape[:t.ndim]), "values": vals})
    if args.json:
        dump_json({"op_type": args.op, "outputs": result})
    else:
        for r in result:
            if not r.get("allocated", True):
                print("%s: not produced" % r["name"])
            else:
                print("%s: %s%s = %s" % (r["name"], r["dtype"], r["shape"],
                                         _fmt_values(r["values"])))
    return 0


def _fmt_values(vals):
    out = []
    for v in vals:
        if isinstance(v, float):
            out.append("%g" % v if math.isfinite(v) else str(v))
        else:
            out.append(str(v))
    return "[" + ", ".join(out) + "]"


def _check_cases(info):
    """Input sets to try: every optional present and absent, dynamic with 2."""
    base = []
    has_optional = False
    for i in info["inputs"]:
        if i["kind"] == "dynamic":
            base.append(2)
        elif i["kind"] == "optional":
            base.append(1)
            has_optional = True
        else:
            base.append(1)
    cases = [base]
    if has_optional:
        cases.append([0 if i["kind"] == "optional" else n
                      for i, n in zip(info["inputs"], base)])
    return cases


def check_op(lib, info, dtype_name="float32", shape=(2, 3)):
    """Runs infer_meta and execute on generated inputs; returns problems."""
    problems = []
    attrs = {a["name"]: _default_attr(a) for a in info["attrs"] if a["required"]}
    dtype = DTYPES.index(dtype_name)
    for counts in _check_cases(info):
        inputs = [[(dtype, list(shape), _sample_values(dtype, numel(shape), k + j))
                   for j in range(n)] for k, n in enumerate(counts)]
        label = "inputs %s" % ", ".join(
            "%s=%s" % (i["name"], "absent" if n == 0 else
                       ("%d x " % n if i["kind"] == "dynamic" else "")
                       + "%s%s" % (dtype_name, list(shape)))
            for i, n in zip(info["inputs"], counts))
        try:
            inferred, produced = run_op(lib, info, inputs, attrs)
        except PyopError as e:
            problems.append("%s: %s: %s" % (label, e, e.detail))
            continue
        if inferred is None or produced is None:
            continue
        for k, o in enumerate(info["outputs"]):
            want = inferred[k]
            if produced[k] is None:
                problems.append("%s: output %s: infer_meta promised %s%s but execute "
                                "did not produce it" % (label, o["name"], DTYPES[want[0]],
                                                        want[1]))
                continue
            t = produced[k][0]
            got = (t.dtype, list(t.shape[:t.ndim]))
            if got != want:
                problems.append("%s: output %s: infer_meta promised %s%s, execute "
                                "produced %s%s" % (label, o["name"], DTYPES[want[0]],
                                                   want[1], DTYPES[got[0]], got[1]))
    return problems


def cmd_check(lib, args):
    with_opp_path(args.path)
    lib.load()
    report = []
    failed = 0
    for t in lib.op_types():
        info = lib.op_info(t)
        problems = check_op(lib, info)
        status = "ok" if not problems else "FAILED"
        if problems:
            failed += 1
        checked = [c for c in ("infer_meta", "execute", "declare_launch_args")
                   if c in info["capabilities"]]
        report.append({"op_type": t, "status": status.lower(), "checked": checked,
                       "problems": problems, "source": info["proto_source"]})
    if args.json:
        dump_json({"ops": report, "failed": failed})
    else:
        for r in report:
            print("%-24s %s (%s)" % (r["op_type"], r["status"],
                                      ", ".join(r["checked"]) or "prototype only"))
            for p in r["problems"]:
                print("    " + p)
        print("%d ops checked, %d failed" % (len(report), failed))
    if failed:
        sys.stderr.write("pyop: check: %d of %d ops failed\n" % (failed, len(report)))
        return 1
    return 0


def _reusing_ctx(bufs):
    """An exec context whose outputs reuse one buffer per index (benchmarks)."""
    slots = {}

    def alloc_output(_user, index, tp):
        t = tp.contents
        buf = slots.get(index)
        if buf is None or ctypes.sizeof(buf) < t.nbytes:
            buf = slots[index] = ctypes.create_string_buffer(max(int(t.nbytes), 1))
        t.data = ctypes.addressof(buf)
        return 0

    def alloc_workspace(_user, nbytes, out):
        out[0] = bufs.alloc(nbytes)
        return 0

    cb_out = ALLOC_OUTPUT(alloc_output)
    cb_ws = ALLOC_WORKSPACE(alloc_workspace)
    bufs.keep.extend([cb_out, cb_ws, slots])
    return ExecCtx(ctypes.sizeof(ExecCtx), None, cb_out, cb_ws, None)


def cmd_bench(lib, args):
    """Times pyop_op_execute from this process through ctypes, interleaved
    with a bare ctypes call into libpyop (pyop_op_capabilities) measured the
    same way, and reports both and their difference: what libpyop and the op
    add over the cost of calling from Python at all. bench/run.sh measures
    libpyop from C against its physical floor."""
    lib.load()
    info = lib.op_info(args.op)
    if "execute" not in info["capabilities"]:
        raise ValueError('op "%s" has no execute implementation to time' % args.op)
    dtype = DTYPES.index("float32")
    inputs = [[(dtype, [args.size], _sample_values(dtype, args.size, k))]
              if i["kind"] != "optional" else [] for k, i in enumerate(info["inputs"])]
    attrs = {a["name"]: _default_attr(a) for a in info["attrs"] if a["required"]}
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
        outs = (Tensor * max(n_out, 1))()
        ctx = _reusing_ctx(bufs)
        ctx_p = ctypes.byref(ctx)
        ex, base = lib.c.pyop_op_execute, lib.c.pyop_op_capabilities
        n_in = len(inputs)

        def run_execute(n):
            t0 = time.perf_counter()
            for _ in range(n):
                rc = ex(op, slots, n_in, outs, n_out, ctx_p)
                if rc:
                    lib.check("execute of %s" % args.op, rc)
            return (time.perf_counter() - t0) / n

        def run_baseline(n):
            t0 = time.perf_counter()
            for _ in range(n):
                base(op)
            return (time.perf_counter() - t0) / n

        run_execute(min(200, args.calls))  # thread state, caches
        run_baseline(min(200, args.calls))
        ex_t, base_t = [], []
        for _ in range(args.repeat):  # interleaved: drift hits both alike
            ex_t.append(run_execute(args.calls))
            base_t.append(run_baseline(args.calls))
        ex_t.sort()
        base_t.sort()
        med_ex, med_base = ex_t[len(ex_t) // 2], base_t[len(base_t) // 2]
        result = {"op_type": args.op, "calls": args.calls, "repeat": args.repeat,
                  "execute_ns": round(med_ex * 1e9, 1),
                  "ctypes_call_ns": round(med_base * 1e9, 1),
                  "execute_minus_ctypes_ns": round((med_ex - med_base) * 1e9, 1)}
    finally:
        lib.c.pyop_op_destroy(op)
    if args.json:
        dump_json(result)
    else:
        print("%s: execute %.0f ns/call, a bare ctypes call %.0f ns, difference %.0f ns "
              "(median of %d x %d calls from Python; bench/run.sh measures from C)"
              % (args.op, result["execute_ns"], result["ctypes_call_ns"],
                 result["execute_minus_ctypes_ns"], args.repeat, args.calls))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="pyop", description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", help="libpyop.so to use (default: next to this command)")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("doctor", help="runtime key, path verdicts, bridge candidates")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("list", help="every registered op with prototype, capabilities, source")
    p.add_argument("--json", action="store_true")
    p.add_argument("path", nargs="*", help="plugin files/dirs (default: ASCEND_CUSTOM_OPP_PATH)")
    p = sub.add_parser("check", help="import, validate, run infer_meta and execute, compare")
    p.add_argument("--json", action="store_true")
    p.add_argument("path", nargs="*", help="plugin files/dirs (default: ASCEND_CUSTOM_OPP_PATH)")
    p = sub.add_parser("run", help="run one op on host buffers and print the outputs")
    p.add_argument("op")
    p.add_argument("--input", action="append", metavar="NAME=DTYPE[SHAPE]:VALUES")
    p.add_argument("--attr", action="append", metavar="NAME=VALUE")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("bench", help="execute dispatch time of one op")
    p.add_argument("op")
    p.add_argument("--json", action="store_true")
    p.add_argument("--size", type=int, default=16)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    try:
        lib = Lib(args.library or _find_library())
    except OSError as e:
        sys.stderr.write("pyop: cannot load libpyop: %s\n" % e)
        return 1
    handlers = {"doctor": cmd_doctor, "list": cmd_list, "check": cmd_check,
                "run": cmd_run, "bench": cmd_bench}
    try:
        return handlers[args.command](lib, args)
    except PyopError as e:
        sys.stderr.write("pyop: %s: %s\n" % (args.command, e))
        if e.detail:
            sys.stderr.write(e.detail.rstrip() + "\n")
        return 1
    except ValueError as e:
        sys.stderr.write("pyop: %s: %s\n" % (args.command, e))
        return 2
    finally:
        lib.shutdown()


if __name__ == "__main__":
    sys.exit(main())
