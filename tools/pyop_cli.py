#!/usr/bin/env python3
"""pyop — check, list and run Python custom operators through libpyop.

The command drives libpyop (the same library a C host links) through ctypes
from this Python process: libpyop finds this very interpreter, loads the
bridge built for it and imports the plugins of ASCEND_CUSTOM_OPP_PATH (or the
paths given to `check`).

Which Python: the installed command starts with the Python the bridge was
built for (the build's default, the one `pyop_options.start_python` starts
in a C host), so what `pyop check` accepts is what such a host loads.
PYOP_PYTHON=/path/to/python (or `/path/to/python pyop ...`) runs it under
another Python that has a bridge; `pyop doctor` says which one runs.

Exit status: 0 on success; 1 when the command ran and found a problem (a
failed load, a failed op, a missing capability, a disagreement in `check`);
2 for bad usage only (unknown option, malformed --input/--attr, an
attribute or input the op does not have). On failure one message goes to
stderr, `pyop: <command>: <message>`, with the plugin's traceback under it
when there is one. With --json the failure is also printed to stdout as
{"error": {"status", "message", "op", "file", "line"}}.
"""

import argparse
import ctypes
import difflib
import json
import math
import os
import re
import shutil
import struct
import sys
import tempfile
import time

# Filled in by tools/CMakeLists.txt when it makes bin/pyop: the build's
# default Python (its bridge artifact directory name). None when this file
# runs from the source tree.
BUILD_PYTHON = None
BUILD_ARTIFACT = None

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
              10: "list[DataType]", 11: "list[list[int]]", 12: "Tensor"}
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
                ("dtype", ctypes.c_int32), ("s", Str), ("span", _Span),
                ("tensor", ctypes.POINTER(Tensor))]


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
                ("capabilities", ctypes.c_uint32),
                ("input_flags", ctypes.POINTER(ctypes.c_uint32)),
                ("output_alias", ctypes.POINTER(ctypes.c_int32))]


ALLOC_OUTPUT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.POINTER(Tensor))
ALLOC_WORKSPACE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64,
                                   ctypes.POINTER(ctypes.c_void_p))


class ExecCtx(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("user", ctypes.c_void_p),
                ("alloc_output", ALLOC_OUTPUT), ("alloc_workspace", ALLOC_WORKSPACE),
                ("stream", ctypes.c_void_p), ("flags", ctypes.c_uint32)]


EXEC_EXPECT_OUTPUTS = 1  # PYOP_EXEC_EXPECT_OUTPUTS
INPUT_MUTATED = 1        # PYOP_INPUT_MUTATED


class OutputList(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(Tensor)), ("capacity", ctypes.c_size_t),
                ("count", ctypes.c_size_t)]


class CliError(Exception):
    """A failure the command reports: one message, a status name (a
    PYOP_E... name, or "usage") and, where known, the op, plugin file and
    line. exit_code 2 for bad usage, 1 otherwise."""

    exit_code = 1

    def __init__(self, message, status="PYOP_EINVAL", op=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.op = op

    def to_json(self):
        file, line = _where(self.message)
        return {"status": self.status, "message": self.message,
                "op": self.op or _op_named(self.message), "file": file, "line": line}


class UsageError(CliError):
    """Bad usage: an unknown option, a malformed --input/--attr, an input or
    attribute the op does not have. Exit status 2."""

    exit_code = 2

    def __init__(self, message, op=None):
        super().__init__(message, "usage", op)


class PyopError(CliError):
    """A libpyop call failed: its status name and pyop_last_error(), which
    says what failed on what; `what` stands in when libpyop gave no text."""

    def __init__(self, what, status, detail, strerror=""):
        self.detail = detail
        text = detail.rstrip() if detail and detail.strip() else \
            "%s failed (%s: %s)" % (what, status, strerror)
        super().__init__(text, status)


_TB_FRAME = re.compile(r'^  File "([^"]+)", line (\d+)', re.M)
_DEFINED_AT = re.compile(r"\((?:defined at |implementation at |class at )?([^()\s]+\.py):(\d+)\)")
_IMPORTING = re.compile(r"^while importing pyop plugin (.+)$", re.M)
_OP_NAMED = re.compile(r"""(?:\bop '([^']+)'|\bof "([^"]+)"|\bop "([^"]+)"|\bop type "([^"]+)")""")


def _where(message):
    """(file, line) of the plugin code a message points at: the innermost
    traceback frame, else a "(defined at f.py:3)", else the plugin being
    imported (line None); (None, None) when it names none."""
    frames = _TB_FRAME.findall(message)
    if frames:
        return frames[-1][0], int(frames[-1][1])
    m = _DEFINED_AT.search(message)
    if m:
        return m.group(1), int(m.group(2))
    m = _IMPORTING.search(message)
    if m:
        return m.group(1).strip(), None
    return None, None


def _op_named(message):
    m = _OP_NAMED.search(message)
    return next((g for g in m.groups() if g), None) if m else None


class Lib:
    """Thin ctypes binding of include/pyop/pyop.h."""

    def __init__(self, path):
        self.path = path
        self.c = ctypes.CDLL(path)
        c = self.c
        c.pyop_status_name.restype = ctypes.c_char_p
        c.pyop_strerror.restype = ctypes.c_char_p
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
        c.pyop_op_infer_meta_list.argtypes = [ctypes.c_void_p, ctypes.POINTER(TensorList),
                                              ctypes.c_size_t, ctypes.POINTER(OutputList),
                                              ctypes.c_size_t]
        c.pyop_op_execute_list.argtypes = [ctypes.c_void_p, ctypes.POINTER(TensorList),
                                           ctypes.c_size_t, ctypes.POINTER(OutputList),
                                           ctypes.c_size_t, ctypes.POINTER(ExecCtx)]

    def check(self, what, rc):
        if rc != 0:
            name = self.c.pyop_status_name(rc).decode()
            detail = self.c.pyop_last_error().decode("utf-8", "replace")
            raise PyopError(what, name, detail, self.c.pyop_strerror(rc).decode())

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
        rc = self.c.pyop_op_get(op_type.encode(), ctypes.byref(p))
        if rc == -3:  # PYOP_ENOENT: say what is there instead
            raise CliError(unknown_op_message(op_type, self.op_types()), "PYOP_ENOENT",
                           op_type)
        self.check('looking up op "%s"' % op_type, rc)
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
        "inputs": [{"name": _s(i.inputs[k].name), "kind": IO_KINDS[i.inputs[k].kind],
                    "mutated": bool(i.input_flags and i.input_flags[k] & INPUT_MUTATED)}
                   for k in range(i.n_inputs)],
        "outputs": [{"name": _s(i.outputs[k].name), "kind": IO_KINDS[i.outputs[k].kind],
                     "alias": (_s(i.inputs[i.output_alias[k]].name)
                               if i.output_alias and i.output_alias[k] >= 0 else None)}
                    for k in range(i.n_outputs)],
        "attrs": [{"name": _s(i.attrs[k].name),
                   "type": ATTR_TYPES.get(i.attrs[k].type, str(i.attrs[k].type)),
                   "required": bool(i.attrs[k].required),
                   "default": None if i.attrs[k].required
                   else attr_value_to_py(i.attrs[k].default_value)}
                  for k in range(i.n_attrs)],
        "capabilities": [name for bit, name in CAPS if i.capabilities & bit],
    }


# ------------------------------------------------------------ host buffers


# The largest buffer the command allocates for one tensor or workspace: a
# shape beyond it is a usage error (or, asked for by an op, a refused
# allocation), not a MemoryError. PYOP_CLI_MAX_BYTES overrides it.
MAX_BYTES_DEFAULT = 1 << 30
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def max_bytes():
    text = os.environ.get("PYOP_CLI_MAX_BYTES")
    if not text:
        return MAX_BYTES_DEFAULT
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if not 0 < value <= INT64_MAX:
        raise UsageError("PYOP_CLI_MAX_BYTES=%s: expected a positive byte count" % text)
    return value


def _fmt_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%g %s" % (round(n / size, 1), unit)
    return "%d bytes" % n


def check_shape(dtype, shape, what):
    """Raises ValueError unless shape is a valid pyop shape (at most
    PYOP_MAX_DIMS dims, each 0..INT64_MAX) whose tensor fits in max_bytes()."""
    if len(shape) > MAX_DIMS:
        raise ValueError("%s: %d dims; a pyop tensor has at most %d (PYOP_MAX_DIMS)"
                         % (what, len(shape), MAX_DIMS))
    for d in shape:
        if d < 0:
            raise ValueError("%s: dim %d is negative" % (what, d))
        if d > INT64_MAX:
            raise ValueError("%s: dim %d does not fit in int64" % (what, d))
    nbytes = numel(shape) * DTYPE_SIZE[dtype]
    limit = max_bytes()
    if nbytes > limit:
        raise ValueError("%s: %s[%s] needs %s, more than the %s the command allocates for "
                         "one tensor (PYOP_CLI_MAX_BYTES)"
                         % (what, DTYPES[dtype], ",".join(map(str, shape)),
                            _fmt_bytes(nbytes), _fmt_bytes(limit)))


class Buffers:
    """Owns every buffer the command hands to libpyop (the host owns memory).
    refused: why an allocation an op asked for was refused (too large)."""

    def __init__(self):
        self.keep = []
        self.refused = None

    @staticmethod
    def shared(keep):
        """A Buffers kept alive by the list keep."""
        b = Buffers()
        keep.append(b)
        return b

    def alloc(self, nbytes, what="a buffer"):
        """A zeroed buffer of nbytes; CliError beyond max_bytes()."""
        if nbytes > max_bytes():
            self.refused = ("%s of %s refused: more than the %s the command allocates "
                            "(PYOP_CLI_MAX_BYTES)" % (what, _fmt_bytes(nbytes),
                                                      _fmt_bytes(max_bytes())))
            raise CliError(self.refused, "PYOP_ENOMEM")
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
            raise UsageError("%d values given for shape %s (%d elements)"
                             % (len(values), list(shape), n))
        try:
            write_values(t, values)
        except (ValueError, OverflowError, struct.error) as e:
            raise UsageError("values %s do not fit %s: %s"
                             % (",".join(map(str, values)), DTYPES[dtype], e)) from None
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


# ------------------------------------------------------------- attributes


def make_attrs(info, given, keep):
    """pyop_attr array from {name: python value}, typed by the op's prototype."""
    types = {a["name"]: a["type"] for a in info["attrs"]}
    attrs = (Attr * max(len(given), 1))()
    for k, (name, value) in enumerate(given.items()):
        if name not in types:
            raise UsageError('op "%s" has no attribute "%s" (it has: %s)'
                             % (info["op_type"], name, ", ".join(types) or "none"),
                             info["op_type"])
        a = attrs[k]
        a.name = name.encode()
        keep.append(a.name)
        set_attr_value(a.value, types[name], value, keep)
    return attrs, len(given)


def _attr_int64(value):
    """An int attribute value (also from samples) that fits int64: ctypes
    would wrap a larger one silently."""
    try:
        return _int64(value)
    except ValueError as e:
        raise CliError("attribute value %s" % e, "PYOP_EINVAL") from None


def _array(ctype, values, keep):
    arr = (ctype * max(len(values), 1))(*values)
    keep.append(arr)
    return ctypes.cast(arr, ctypes.c_void_p), len(values)


def set_attr_value(v, type_name, value, keep):
    code = {n: c for c, n in ATTR_TYPES.items()}[type_name]
    v.type = code
    if type_name == "int":
        v.u.i = _attr_int64(value)
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
        v.u.span.items, v.u.span.count = _array(ctypes.c_int64,
                                                [_attr_int64(x) for x in value], keep)
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
    elif type_name == "Tensor":
        dtype, shape, values = value
        t = make_tensor(Buffers.shared(keep), dtype, shape, values)
        keep.append(t)
        v.u.tensor = ctypes.pointer(t)
    elif type_name == "list[list[int]]":
        inner = []
        for row in value:
            p, n = _array(ctypes.c_int64, [_attr_int64(x) for x in row], keep)
            inner.append(IntList(ctypes.cast(p, ctypes.POINTER(ctypes.c_int64)), n))
        v.u.span.items, v.u.span.count = _array(IntList, inner, keep)
    else:
        raise CliError("unsupported attribute type %s" % type_name, "PYOP_EUNSUPPORTED")


_ATTR_EXAMPLES = {"int": "an integer such as 1 or -2", "float": "a number such as 0.5",
                  "bool": "true or false", "DataType": "a data type such as float32",
                  "list[int]": "e.g. 1,2,3", "list[float]": "e.g. 0.5,1", "list[bool]":
                  "e.g. true,false", "list[str]": "e.g. a,b", "list[DataType]":
                  "e.g. float32,int8", "list[list[int]]": "JSON, e.g. [[1,2],[3]]"}


def parse_tensor_text(text, what):
    """DTYPE[SHAPE]:VALUES (VALUES optional: sample values) -> (dtype, shape, values)."""
    _, dtype, shape, values = parse_input("%s=%s" % (what, text))
    if values is None:
        values = _sample_values(dtype, numel(shape), 0)
    return dtype, shape, values


def parse_attr_text(text, type_name, name="", op=None):
    """--attr NAME=VALUE text -> Python value of the attribute's type (a
    Tensor attribute as DTYPE[SHAPE]:VALUES); a value that does not parse is
    a UsageError naming the attribute and the type."""
    if type_name == "Tensor":
        return parse_tensor_text(text, name or "attr")
    try:
        if type_name in ("int", "float", "bool", "str", "DataType"):
            return _scalar(text, type_name)
        if type_name == "list[list[int]]":
            value = json.loads(text)
            if not isinstance(value, list) or not all(
                    isinstance(r, list) and all(isinstance(x, int) for x in r) for r in value):
                raise ValueError(text)
            return [[_int64(x) for x in r] for r in value]
        inner = type_name[5:-1]
        body = text.strip()
        if body.startswith("["):
            body = body[1:-1]
        return [_scalar(x.strip(), inner) for x in body.split(",") if x.strip()]
    except ValueError as e:
        why = str(e) if "outside int64" in str(e) else None
        raise UsageError("--attr %s=%s: attribute \"%s\"%s is %s, and %r is not one (%s)"
                         % (name, text, name, ' of "%s"' % op if op else "",
                            "an int" if type_name == "int" else "a " + type_name, text,
                            why or _ATTR_EXAMPLES.get(type_name, type_name)), op) from None


def _int64(value):
    """value as an int64 attribute; ValueError outside int64."""
    value = int(value)
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError("%d is outside int64" % value)
    return value


def _scalar(text, type_name):
    if type_name == "int":
        return _int64(int(text, 0))
    if type_name == "float":
        return float(text)
    if type_name == "bool":
        low = text.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(text)
    if type_name == "DataType":
        if text not in DTYPES:
            raise ValueError(text)
        return text
    return text


def parse_input(text):
    """NAME=DTYPE[SHAPE]:VALUES, e.g. x=float32[2,3]:1,2,3,4,5,6 (VALUES optional)."""
    if "=" not in text:
        raise UsageError("--input %s: expected NAME=DTYPE[SHAPE]:VALUES" % text)
    name, spec = text.split("=", 1)
    values = None
    if "]" not in spec or "[" not in spec:
        raise UsageError("--input %s: expected DTYPE[SHAPE], e.g. float32[2,3]" % text)
    head, _, tail = spec.partition("]")
    dtype_name, _, dims = head.partition("[")
    if dtype_name not in DTYPES:
        raise UsageError("--input %s: unknown data type %r (one of: %s)"
                         % (text, dtype_name, ", ".join(DTYPES)))
    try:
        shape = [int(d) for d in dims.split(",") if d.strip()]
    except ValueError:
        raise UsageError("--input %s: the shape must be integers, e.g. float32[2,3]"
                         % text) from None
    try:
        check_shape(DTYPES.index(dtype_name), shape, "--input %s" % text)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if tail:
        if not tail.startswith(":"):
            raise UsageError("--input %s: expected ':' before the values" % text)
        values = [v for v in tail[1:].split(",") if v.strip()]
    return name.strip(), DTYPES.index(dtype_name), shape, values


# ---------------------------------------------------------------- commands


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


def opp_path_note():
    """Why no plugin was loaded, when ASCEND_CUSTOM_OPP_PATH explains it."""
    value = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
    if value is None:
        return "ASCEND_CUSTOM_OPP_PATH is not set, so no plugins were loaded"
    if not value.strip(":"):
        return "ASCEND_CUSTOM_OPP_PATH is empty, so no plugins were loaded"
    return None


def unknown_op_message(op_type, known):
    """'no op "X" is registered', with close names and the path's state."""
    text = 'no op "%s" is registered' % op_type
    close = [k for k in known if k.lower() == op_type.lower()]
    close += [k for k in difflib.get_close_matches(op_type, known, n=3, cutoff=0.6)
              if k not in close]
    if close:
        text += "; did you mean %s?" % " or ".join(close)
    note = opp_path_note()
    if note:
        text += " (%s)" % note
    elif not known:
        text += " (none are registered from ASCEND_CUSTOM_OPP_PATH=%s)" \
            % os.environ["ASCEND_CUSTOM_OPP_PATH"]
    return text


# ------------------------------------------------------------------ doctor

PATH_VERDICTS = ("python-file", "python-dir", "no-python", "missing-dir", "missing-file",
                 "relative", "unreadable", "not-python", "not-scanned", "unknown")
CAND_STATUSES = ("untried", "invalid path", "unsafe", "manifest invalid",
                 "manifest mismatch", "duplicate", "open failed", "missing symbol",
                 "ABI rejected", "config rejected", "loaded", "unknown")


def _item(line, names):
    """'  <path>: <name>[: <detail>]' -> (path, name, detail) for the
    leftmost of names that fits."""
    best = None
    for name in names:
        for sep in (": %s: " % name, ": %s" % name):
            k = line.find(sep)
            if k > 2 and (sep.endswith(" ") or line.endswith(sep)) and \
                    (best is None or k < best[0]):
                best = (k, name, line[k + len(sep):] if sep.endswith(" ") else None)
    if best is None:
        return line[2:], "unknown", None
    return line[2:best[0]], best[1], best[2]


def parse_doctor_report(text):
    """libpyop's pyop_doctor() text as a dict (runtime key, path elements
    with verdicts, artifact root, bridge, candidates with status)."""
    out = {"runtime_key": None, "runtime": None, "opp_path": None, "path": [],
           "artifacts": None, "bridge": None, "candidates": [], "ops_registered": None}
    section = None
    for line in text.splitlines():
        if line.startswith("runtime key: "):
            rest = line[len("runtime key: "):]
            key, _, paren = rest.partition(" (")
            out["runtime_key"] = None if key == "none" else key
            out["runtime"] = paren.rstrip(")")
        elif line.startswith("ASCEND_CUSTOM_OPP_PATH="):
            value = line.split("=", 1)[1]
            out["opp_path"] = None if value == "(unset)" else value
            section = "path"
        elif line.startswith("artifacts: "):
            out["artifacts"] = line[len("artifacts: "):]
            section = None
        elif line.startswith("bridge: "):
            rest = line[len("bridge: "):]
            out["bridge"] = {"loaded": rest.startswith("loaded "),
                             "detail": rest[len("loaded "):] if rest.startswith("loaded ")
                             else rest}
        elif line.startswith("candidates"):
            section = "candidates"
        elif line.startswith("ops registered: "):
            out["ops_registered"] = int(line.split(": ", 1)[1])
            section = None
        elif line.startswith("  error: ") and section == "path":
            out["path_error"] = line[len("  error: "):]
        elif line.startswith("  ") and section == "path":
            path, verdict, detail = _item(line, PATH_VERDICTS)
            out["path"].append({"element": path, "verdict": verdict, "detail": detail})
        elif line.startswith("  ") and section == "candidates":
            path, status, reason = _item(line, CAND_STATUSES)
            out["candidates"].append({"dir": path, "status": status, "reason": reason})
    return out


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def python_report():
    """The interpreter running this command, and how it relates to the
    build's (the one a C host with start_python runs)."""
    try:
        import site
        site_dirs = set(site.getsitepackages() + [site.getusersitepackages()])
    except Exception:  # a stripped-down site module
        site_dirs = set()
    paths = [{"path": p, "site_packages": p in site_dirs or
              os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages")}
             for p in sys.path if p]
    numpy = {"importable": False, "version": None, "error": None}
    try:
        import numpy as np
        numpy.update(importable=True, version=getattr(np, "__version__", None))
    except Exception as e:  # ImportError, or a broken install
        numpy["error"] = "%s: %s" % (type(e).__name__, e)
    same = BUILD_PYTHON is None or _same_file(sys.executable, BUILD_PYTHON)
    return {"executable": sys.executable, "version": sys.version.split()[0],
            "prefix": sys.prefix, "sys_path": paths, "numpy": numpy,
            "build_python": BUILD_PYTHON, "is_build_python": same if BUILD_PYTHON else None}


def start_python_report(artifacts):
    """The libpython start_python would load: the default artifact's manifest."""
    out = {"artifact": BUILD_ARTIFACT, "manifest": None, "libpython": None,
           "verdict": "unknown"}
    if not artifacts or not BUILD_ARTIFACT:
        out["verdict"] = "unknown (run the built or installed command, not the source file)"
        return out
    manifest = os.path.join(artifacts, BUILD_ARTIFACT, "manifest.txt")
    out["manifest"] = manifest
    try:
        with open(manifest) as f:
            fields = dict(l.strip().split("=", 1) for l in f if "=" in l and
                          not l.startswith("#"))
    except OSError as e:
        out["verdict"] = "no manifest: %s" % e.strerror
        return out
    lib = fields.get("libpython")
    out["libpython"] = lib
    if not lib:
        out["verdict"] = "none recorded (the build's Python has no shared libpython)"
    elif not os.path.isfile(lib):
        out["verdict"] = "missing: %s does not exist" % lib
    else:
        out["verdict"] = "present"
    return out


def _plugin_owner(source, plugins):
    """The plugin (file or package dir) a 'file.py:12' source belongs to."""
    path = (source or "").rsplit(":", 1)[0]
    for p in plugins:
        if path == p["plugin"] or path.startswith(p["plugin"] + os.sep):
            return p
    return None


def _discover(element):
    """The plugins of one ASCEND_CUSTOM_OPP_PATH element, as the bridge sees
    them (its own discover() once it is loaded in this process)."""
    loader = sys.modules.get("pyop._loader")
    found = loader.discover(element) if loader else []
    return [{"plugin": pkg or file, "package": pkg is not None} for file, pkg, _ in found]


def _load_alone(lib, plugin):
    """Loads one plugin by itself; (ops, error dict or None)."""
    tmp = None
    try:
        if plugin["package"]:
            # A package is one plugin of its parent directory: load it from
            # a directory that holds only it.
            tmp = tempfile.mkdtemp(prefix="pyop-doctor-")
            os.symlink(plugin["plugin"], os.path.join(tmp, os.path.basename(plugin["plugin"])))
            os.environ["ASCEND_CUSTOM_OPP_PATH"] = tmp
        else:
            os.environ["ASCEND_CUSTOM_OPP_PATH"] = plugin["plugin"]
        try:
            lib.load()
            return lib.op_types(), None
        except CliError as e:
            return [], e.to_json()
        finally:
            lib.c.pyop_unload()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def doctor_report(lib):
    """Everything `pyop doctor` shows, as one dict (--json prints it)."""
    rep = {"python": python_report()}
    opp = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
    load = {"status": "ok", "ops": [], "error": None}
    try:
        lib.load()
        load["ops"] = lib.op_types()
    except CliError as e:
        load.update(status=e.status, error=e.to_json())
    rep.update(parse_doctor_report(lib.doctor()))
    rep["ge"] = ge_status_lines()
    rep["start_python"] = start_python_report(rep["artifacts"])
    rep["load"] = load
    plugins = []
    for el in rep["path"]:
        if el["verdict"] in ("python-file", "python-dir"):
            plugins.extend(_discover(el["element"]))
    if load["status"] == "ok":
        infos = [lib.op_info(t) for t in load["ops"]]
        for p in plugins:
            p.update(verdict="ok", ops=[], error=None)
        for i in infos:
            for src in (i["proto_source"], i["impl_source"]):
                owner = _plugin_owner(src, plugins)
                if owner and i["op_type"] not in owner["ops"]:
                    owner["ops"].append(i["op_type"])
    elif plugins:
        # All or nothing: the load failed as a whole; try each plugin alone.
        lib.c.pyop_unload()
        try:
            for p in plugins:
                ops, err = _load_alone(lib, p)
                p.update(verdict="ok" if err is None else "failed", ops=ops, error=err)
        finally:
            if opp is None:
                os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None)
            else:
                os.environ["ASCEND_CUSTOM_OPP_PATH"] = opp
    rep["plugins"] = plugins
    return rep


def print_doctor(rep):
    py = rep["python"]
    print("python: %s (Python %s)" % (py["executable"], py["version"]))
    if py["build_python"]:
        if py["is_build_python"]:
            print("  the build's Python (what a C host with start_python runs)")
        else:
            print("  NOT the build's Python %s, which a C host with start_python runs:"
                  " ops may import differently there (e.g. numpy); PYOP_PYTHON=%s"
                  " runs this command under it" % (py["build_python"], py["build_python"]))
    np = py["numpy"]
    print("  numpy: %s" % ("importable (%s)" % np["version"] if np["importable"]
                           else "not importable: %s" % np["error"]))
    print("  sys.path:")
    for p in py["sys_path"]:
        print("    %s%s" % (p["path"], "  (site-packages)" if p["site_packages"] else ""))
    print("runtime key: %s (%s)" % (rep["runtime_key"] or "none", rep["runtime"]))
    print("ASCEND_CUSTOM_OPP_PATH=%s" % (rep["opp_path"] if rep["opp_path"] is not None
                                         else "(unset)"))
    for el in rep["path"]:
        print("  %s: %s%s" % (el["element"], el["verdict"],
                              ": " + el["detail"] if el["detail"] else ""))
    if rep.get("path_error"):
        print("  error: %s" % rep["path_error"])
    print("artifacts: %s" % rep["artifacts"])
    for c in rep["candidates"]:
        print("  %s: %s%s" % (c["dir"], c["status"], ": " + c["reason"] if c["reason"] else ""))
    if rep["bridge"]:
        print("bridge: %s%s" % ("loaded " if rep["bridge"]["loaded"] else "",
                                rep["bridge"]["detail"]))
    for line in rep["ge"]:
        print(line)
    sp = rep["start_python"]
    print("start_python would load: %s (%s)" % (sp["libpython"] or "-", sp["verdict"]))
    load = rep["load"]
    if load["status"] == "ok":
        print("load: ok, %d ops registered" % len(load["ops"]))
    else:
        print("load: FAILED (%s)" % load["status"])
        for line in load["error"]["message"].splitlines():
            print("  " + line)
    for p in rep["plugins"]:
        if p["verdict"] == "ok":
            print("  plugin %s: ok (%s)" % (p["plugin"], ", ".join(p["ops"]) or "no ops"))
        else:
            first = p["error"]["message"].splitlines()[0]
            print("  plugin %s: FAILED: %s" % (p["plugin"], first))


LOG_HOOK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class HostHooks(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("user", ctypes.c_void_p),
                ("owns_op", ctypes.c_void_p), ("on_register", ctypes.c_void_p),
                ("on_unregister", ctypes.c_void_p), ("log", LOG_HOOK)]


def cmd_doctor(lib, args):
    # The doctor loads several times: each log line is shown once, after.
    lines = []
    hook = LOG_HOOK(lambda _u, _lv, line: lines.append(line.decode("utf-8", "replace")))
    hooks = HostHooks(ctypes.sizeof(HostHooks), None, None, None, None, hook)
    lib.c.pyop_set_host_hooks(ctypes.byref(hooks))
    try:
        rep = doctor_report(lib)
    finally:
        lib.c.pyop_set_host_hooks(None)
        for line in dict.fromkeys(lines):
            sys.stderr.write(line + "\n")
    if args.json:
        if rep["load"]["error"]:
            rep["error"] = rep["load"]["error"]
        dump_json(rep)
    else:
        print_doctor(rep)
    if rep["load"]["status"] != "ok":
        sys.stderr.write("pyop: doctor: the load failed (%s)\n" % rep["load"]["status"])
        return 1
    return 0


def cmd_list(lib, args):
    with_opp_path(args.path)
    lib.load()
    ops = [lib.op_info(t) for t in lib.op_types()]
    if args.json:
        dump_json({"ops": ops})
        return 0
    if not ops:
        print("no ops registered (%s)" % (opp_path_note() or "ASCEND_CUSTOM_OPP_PATH=%s"
                                          % os.environ.get("ASCEND_CUSTOM_OPP_PATH")))
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
               "list[str]": ["x"], "list[DataType]": ["float32"], "list[list[int]]": [[1]],
               "Tensor": (0, [2, 3], _sample_values(0, 6, 0))}
    return samples[a["type"]]


class RunResult:
    """What run_op saw. inferred: per output a list of (dtype, shape), or None
    without infer_meta; produced: per output a list of (Tensor, values), or
    None when nothing ran; inputs: per input slot the Tensors passed;
    before/after: their bytes around the call; status/detail: the failure
    (PyopError) of execute, or None."""

    def __init__(self):
        self.inferred = None
        self.produced = None
        self.inputs = []
        self.before = []
        self.after = []
        self.error = None


def _bytes_of(t):
    return ctypes.string_at(t.data, t.nbytes) if t.data and t.nbytes else b""


def run_op(lib, info, inputs, attrs, want_execute=True, capacity=64, launch=None):
    """Creates the op, runs infer_meta and execute (or the kernel launch of a
    launch-only op) through the list forms, so any number of outputs and
    dynamic ones work. When infer_meta exists, execute is held to it
    (PYOP_EXEC_EXPECT_OUTPUTS): a different output is PYOP_ECONTRACT.

    inputs: list (one per prototype input) of lists of (dtype, shape, values).
    Returns a RunResult (its bufs keep the buffers alive); raises PyopError
    when creating the op or infer_meta fails; an execute/launch failure is
    kept in RunResult.error."""
    keep = []
    bufs = Buffers()
    c_attrs, n_attrs = make_attrs(info, attrs, keep)
    op = ctypes.c_void_p()
    lib.check('creating op "%s"' % info["op_type"],
              lib.c.pyop_op_create(info["op_type"].encode(), c_attrs, n_attrs,
                                   ctypes.byref(op)))
    res = RunResult()
    res.bufs = bufs
    try:
        slots = (TensorList * max(len(inputs), 1))()
        for k, slot in enumerate(inputs):
            arr = (Tensor * max(len(slot), 1))()
            for j, (dtype, shape, values) in enumerate(slot):
                arr[j] = make_tensor(bufs, dtype, shape, values)
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
        caps = lib.c.pyop_op_capabilities(op)
        if caps & 1:
            lib.check('infer_meta of "%s"' % info["op_type"],
                      lib.c.pyop_op_infer_meta_list(op, slots, len(inputs), lists, n_out))
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
        elif caps & 8 and res.inferred is not None:
            # Launch-only op: outputs allocated from infer_meta, then the
            # declared kernel plan runs through libffi (no Python).
            if any(o["kind"] == "dynamic" for o in info["outputs"]):
                raise CliError('op "%s": a launch-only op with a dynamic output cannot '
                               'be run' % info["op_type"], "PYOP_EUNSUPPORTED", info["op_type"])
            outs = (Tensor * max(n_out, 1))()
            for k in range(n_out):
                dtype, shape = res.inferred[k][0]
                outs[k] = make_tensor(bufs, dtype, shape)
                lists[k].items[0], lists[k].count = outs[k], 1
            keep.append(outs)
            ctx = exec_ctx(bufs, {})
            rc = lib.c.pyop_op_launch(op, slots, len(inputs), outs, n_out, ctypes.byref(ctx))
            if rc == 0:
                for k in range(n_out):
                    lists[k].items[0] = outs[k]
            what = 'launch of "%s"' % info["op_type"]
        else:
            return res
        res.after = [[_bytes_of(t) for t in slot] for slot in res.inputs]
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
    finally:
        lib.c.pyop_op_destroy(op)


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


def cmd_run(lib, args):
    _warn_other_python("run", "run")
    lib.load()
    info = lib.op_info(args.op)
    inputs = _inputs_from_args(info, args)
    attrs = _attrs_from_args(info, args)
    res = run_op(lib, info, inputs, attrs)
    if res.error is not None:
        raise res.error
    if res.produced is None:
        raise CliError('op "%s" has no execute implementation (and no kernel launch); '
                       'it has: %s' % (args.op, ", ".join(info["capabilities"]) or "nothing"),
                       "PYOP_EUNSUPPORTED", args.op)
    result = []
    for k, o in enumerate(info["outputs"]):
        tensors = res.produced[k]
        entry = {"name": o["name"], "kind": o["kind"],
                 "tensors": [{"dtype": DTYPES[t.dtype], "shape": list(t.shape[:t.ndim]),
                              "values": vals} for t, vals in tensors]}
        if o["kind"] != "dynamic":  # the one tensor's fields at the top (stable --json)
            entry.update(entry["tensors"][0])
            del entry["tensors"]
        if o.get("alias"):
            entry["alias"] = o["alias"]
        result.append(entry)
    mutated = []
    for k, i in enumerate(info["inputs"]):
        if not i.get("mutated"):
            continue
        for j, t in enumerate(res.inputs[k]):
            name = i["name"] if i["kind"] != "dynamic" else "%s[%d]" % (i["name"], j)
            mutated.append({"name": name, "dtype": DTYPES[t.dtype],
                            "shape": list(t.shape[:t.ndim]), "values": read_values(t)})
    if args.json:
        dump_json({"op_type": args.op, "outputs": result, "mutated_inputs": mutated})
    else:
        for r in result:
            alias = " (input %s's buffer)" % r["alias"] if r.get("alias") else ""
            if "tensors" in r:
                print("%s: %d tensors" % (r["name"], len(r["tensors"])))
                for j, t in enumerate(r["tensors"]):
                    print("%s[%d]: %s%s = %s" % (r["name"], j, t["dtype"], t["shape"],
                                                 _fmt_values(t["values"])))
            else:
                print("%s: %s%s = %s%s" % (r["name"], r["dtype"], r["shape"],
                                           _fmt_values(r["values"]), alias))
        if not result:
            print("(no outputs)")
        for m in mutated:
            print("input %s after the call (mutated): %s%s = %s"
                  % (m["name"], m["dtype"], m["shape"], _fmt_values(m["values"])))
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
    """Generated input sets: every optional present and absent, dynamic with 2."""
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


def _generated_cases(info, dtype_name="float32", shape=(2, 3)):
    """(label, inputs, attrs) of the generated cases: float32[2,3] everywhere."""
    attrs = {a["name"]: _default_attr(a) for a in info["attrs"] if a["required"]}
    dtype = DTYPES.index(dtype_name)
    out = []
    for counts in _check_cases(info):
        inputs = [[(dtype, list(shape), _sample_values(dtype, numel(shape), k + j))
                   for j in range(n)] for k, n in enumerate(counts)]
        label = "inputs %s" % ", ".join(
            "%s=%s" % (i["name"], "absent" if n == 0 else
                       ("%d x " % n if i["kind"] == "dynamic" else "")
                       + "%s%s" % (dtype_name, list(shape)))
            for i, n in zip(info["inputs"], counts))
        out.append((label, inputs, attrs))
    return out


def _sample_tensor(v, what):
    """A sample input value -> (dtype, shape, values): (dtype, shape, values)
    with a DataType or a name, or anything with .dtype/.shape/.tolist() (a
    numpy array)."""
    if isinstance(v, (tuple, list)) and len(v) == 3:
        dtype, shape, values = v
        name = getattr(dtype, "name", dtype)
        if name not in DTYPES:
            raise ValueError("%s: unknown data type %r" % (what, dtype))
        shape = [int(d) for d in shape]
        check_shape(DTYPES.index(name), shape, what)
        values = list(values)
        if len(values) != numel(shape):
            raise ValueError("%s: %d values for shape %s" % (what, len(values), shape))
        return DTYPES.index(name), shape, values
    if hasattr(v, "dtype") and hasattr(v, "shape") and hasattr(v, "tolist"):
        name = str(v.dtype)
        if name not in DTYPES:
            raise ValueError("%s: numpy dtype %s has no pyop equivalent" % (what, name))
        shape = [int(d) for d in v.shape]
        check_shape(DTYPES.index(name), shape, what)
        flat = v.reshape(-1).tolist() if hasattr(v, "reshape") else list(v.tolist())
        return DTYPES.index(name), shape, flat
    raise ValueError("%s: expected (dtype, shape, values) or a numpy array, got %r"
                     % (what, type(v).__name__))


def _sample_cases(info, fn, where):
    """(label, inputs, attrs) of the cases a plugin registered with
    pyop.register_samples: each a dict {"inputs": {name: value}, "attrs":
    {name: value}} (a value is (dtype, shape, values) or a numpy array; a
    list of them for a dynamic input; None or missing for an absent optional
    one); "label" optional."""
    cases = fn()
    if not isinstance(cases, (list, tuple)) or not cases:
        raise ValueError("samples of %s (%s) must be a non-empty list of cases"
                         % (info["op_type"], where))
    out = []
    names = [i["name"] for i in info["inputs"]]
    for n, case in enumerate(cases):
        what = "sample %d of %s (%s)" % (n, info["op_type"], where)
        if not isinstance(case, dict):
            raise ValueError("%s: a case is a dict with 'inputs' and 'attrs'" % what)
        given = dict(case.get("inputs") or {})
        for name in given:
            if name not in names:
                raise ValueError("%s: %r is not an input (inputs: %s)" % (what, name, names))
        inputs = []
        for i in info["inputs"]:
            v = given.get(i["name"])
            if v is None:
                if i["kind"] == "required":
                    raise ValueError("%s: required input %r missing" % (what, i["name"]))
                inputs.append([])
            elif i["kind"] == "dynamic":
                inputs.append([_sample_tensor(x, "%s input %s" % (what, i["name"])) for x in v])
            else:
                inputs.append([_sample_tensor(v, "%s input %s" % (what, i["name"]))])
        attrs = {}
        types = {a["name"]: a["type"] for a in info["attrs"]}
        for name, value in dict(case.get("attrs") or {}).items():
            if name not in types:
                raise ValueError("%s: %r is not an attribute" % (what, name))
            attrs[name] = (_sample_tensor(value, "%s attr %s" % (what, name))
                           if types[name] == "Tensor" else value)
        out.append((case.get("label") or "sample %d" % n, inputs, attrs))
    return out


def check_cases(lib, info, cases):
    """Runs each (label, inputs, attrs) case; returns the problems found:
    a failed call (an output not produced or not as infer_meta said is
    PYOP_ECONTRACT), output descriptions other than infer_meta's, a write
    into an input not declared in mutates_args (bytes compared before and
    after, so writes through data_ptr count), a declared alias that is not
    the input's buffer."""
    problems = []
    for label, inputs, attrs in cases:
        try:
            res = run_op(lib, info, inputs, attrs)
        except CliError as e:
            problems.append("%s: %s: %s" % (label, e.status, e.message))
            continue
        for k, i in enumerate(info["inputs"]):
            if i.get("mutated") or not res.after:
                continue
            for j, (b, a) in enumerate(zip(res.before[k], res.after[k])):
                if a != b:
                    problems.append("%s: input %s%s was written, but it is not declared in "
                                    "mutates_args" % (label, i["name"],
                                                      "[%d]" % j if i["kind"] == "dynamic"
                                                      else ""))
        if res.error is not None:
            problems.append("%s: %s: %s" % (label, res.error.status, res.error.message))
            continue
        if res.produced is None:
            continue
        names = [i["name"] for i in info["inputs"]]
        for k, o in enumerate(info["outputs"]):
            got = [(t.dtype, list(t.shape[:t.ndim])) for t, _ in res.produced[k]]
            if res.inferred is not None and got != res.inferred[k]:
                problems.append("%s: output %s: infer_meta said %s, execute produced %s"
                                % (label, o["name"], _descs(res.inferred[k]), _descs(got)))
            if o.get("alias"):
                src = res.inputs[names.index(o["alias"])]
                if not res.produced[k] or not src or res.produced[k][0][0].data != src[0].data:
                    problems.append("%s: output %s is declared as input %s's buffer but is "
                                    "not" % (label, o["name"], o["alias"]))
    return problems


def _descs(ds):
    return ", ".join("%s%s" % (DTYPES[d], s) for d, s in ds) or "nothing"


def check_op(lib, info, dtype_name="float32", shape=(2, 3)):
    """Runs infer_meta and execute on generated inputs; returns problems."""
    return check_cases(lib, info, _generated_cases(info, dtype_name, shape))


def _plugin_samples():
    """{op_type: (fn, "file:line")} registered by the loaded plugins (the
    bridge's pyop package lives in this very interpreter)."""
    pkg = sys.modules.get("pyop")
    reg = getattr(pkg, "_registry", None) if pkg is not None else None
    get = getattr(reg, "loaded_samples", None)
    return get() if get is not None else {}


def _plugin_entries(paths):
    """The plugins of paths, each checked on its own: a .py file, or the
    .py files and packages one level deep in a directory (names starting
    with '_' or '.' skipped, as the loader does)."""
    entries = []
    for p in paths:
        p = os.path.abspath(p)
        if os.path.isdir(p) and not p.endswith(".py"):
            for name in sorted(os.listdir(p)):
                full = os.path.join(p, name)
                if name.startswith(("_", ".")):
                    continue
                if (name.endswith(".py") and os.path.isfile(full)) or (
                        os.path.isdir(full) and os.path.isfile(os.path.join(full, "__init__.py"))):
                    entries.append(full)
        else:
            entries.append(p)
    return entries


def _check_target_kind(t):
    return "path" if (os.path.exists(t) or os.sep in t or t.endswith(".py")) else "op"


def _other_python_note(verb="checked"):
    """A line saying this command runs under another Python than the build's
    (the one a C host with start_python runs), or None."""
    if BUILD_PYTHON is None or _same_file(sys.executable, BUILD_PYTHON):
        return None
    return ("%s under %s, NOT the build's Python %s, which a C host with "
            "start_python runs: ops may import (and time) differently there (e.g. "
            "numpy); PYOP_PYTHON=%s runs this command under it"
            % (verb, sys.executable, BUILD_PYTHON, BUILD_PYTHON))


def _warn_other_python(command, verb):
    """run and bench: the note on stderr (their stdout is the result)."""
    note = _other_python_note(verb)
    if note:
        sys.stderr.write("pyop: %s: note: %s\n" % (command, note))


def cmd_check(lib, args):
    targets = args.target or []
    paths = [t for t in targets if _check_target_kind(t) == "path"]
    ops = [t for t in targets if _check_target_kind(t) == "op"]
    if (args.input or args.attr) and len(ops) != 1:
        raise UsageError("--input/--attr need exactly one OP to check")
    check_paths(paths)
    if not paths:
        env = os.environ.get("ASCEND_CUSTOM_OPP_PATH", "")
        paths = [p for p in env.split(":") if p]
    if not paths:
        raise UsageError("nothing to check: give plugin paths or set ASCEND_CUSTOM_OPP_PATH")
    report = []
    broken = []
    load_error = None
    # Everything in one load first (the plugins as a host loads them); when
    # that load fails, each plugin on its own, so a broken one is reported
    # and the others are still checked. What check accepts is what a host
    # loads: a combined load that fails although no plugin fails alone (two
    # plugins defining one op differently) fails the check, naming why.
    with_opp_path(paths)
    try:
        lib.load()
    except PyopError as whole:
        lib.c.pyop_unload()
        for entry in _plugin_entries(paths):
            _check_one_plugin(lib, args, ops, entry, report, broken)
        if not report:
            raise whole  # nothing loaded at all: the load's own error
        if not broken or whole.status == "PYOP_ECONFLICT":
            load_error = whole
    else:
        _check_loaded(lib, args, ops, ":".join(paths), report)
        lib.c.pyop_unload()
    missing = [o for o in ops if o not in {r["op_type"] for r in report}]
    failed = sum(1 for r in report if r["status"] != "ok")
    other = _other_python_note()
    if args.json:
        dump_json({"ops": report, "failed": failed, "broken_plugins": broken,
                   "load_error": load_error.to_json() if load_error else None,
                   "missing_ops": missing,
                   "python": {"executable": sys.executable,
                              "is_build_python": other is None if BUILD_PYTHON else None}})
    else:
        if other:
            print("note: " + other)
        if load_error:
            print("load of all plugins together: FAILED (%s)" % load_error.status)
            print("    " + load_error.message.rstrip().replace("\n", "\n    "))
            print("    (a host loads them together and refuses them; each plugin is "
                  "checked alone below)")
        for b in broken:
            print("plugin %s: FAILED to load" % b["plugin"])
            print("    " + b["problem"].rstrip().replace("\n", "\n    "))
        for r in report:
            print("%-24s %s (%s; %s)" % (r["op_type"], r["status"],
                                          ", ".join(r["checked"]) or "prototype only",
                                          r["inputs"]))
            for p in r["problems"]:
                print("    " + p)
        for o in missing:
            print("%-24s not found" % o)
        print("%d ops checked, %d failed%s%s" % (len(report), failed,
                                                 ", %d plugins failed to load" % len(broken)
                                                 if broken else "",
                                                 ", the plugins do not load together"
                                                 if load_error else ""))
    if failed or broken or missing or not report or load_error:
        why = ("the plugins do not load together: %s"
               % load_error.message.splitlines()[0] if load_error else
               "%d of %d ops failed" % (failed, len(report)) if failed else
               "%d plugins failed to load" % len(broken) if broken else
               "op(s) not found: %s" % ", ".join(missing) if missing else "0 ops checked")
        sys.stderr.write("pyop: check: %s\n" % why)
        return 1
    return 0


def _check_one_plugin(lib, args, ops, entry, report, broken):
    """Loads entry alone from a private directory standing for its own (a
    link to it, and links to the helpers beside it: names starting with
    '_', which the loader never imports as plugins but a plugin may import)
    and checks its ops. Paths under the private directory are reported as
    the real ones."""
    parent = os.path.dirname(entry)
    holder = tempfile.mkdtemp(prefix="pyop-check-")
    try:
        for name in [os.path.basename(entry)] + sorted(
                n for n in os.listdir(parent) if n.startswith("_") and n != "__pycache__"):
            os.symlink(os.path.join(parent, name), os.path.join(holder, name))
        with_opp_path([holder])
        try:
            lib.load()
        except PyopError as e:
            broken.append({"plugin": entry,
                           "problem": ("%s: %s" % (e, e.detail)).replace(holder, parent)})
            lib.c.pyop_unload()
            return
        start = len(report)
        _check_loaded(lib, args, ops, entry, report)
        lib.c.pyop_unload()
        for r in report[start:]:
            r["source"] = r["source"].replace(holder, parent)
            r["problems"] = [p.replace(holder, parent) for p in r["problems"]]
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def _check_loaded(lib, args, ops, plugin, report):
    """Checks the ops loaded now (those named in ops, or all) into report."""
    samples = _plugin_samples()
    for t in lib.op_types():
        if ops and t not in ops:
            continue
        info = lib.op_info(t)
        if args.input or args.attr:
            cases, origin = [("given inputs",) + _given_case(info, args)], "given"
        elif t in samples:
            fn, where = samples[t]
            try:
                cases, origin = _sample_cases(info, fn, where), "samples"
            except Exception as e:  # a broken samples function is the op's problem
                report.append({"op_type": t, "status": "failed", "checked": [],
                               "inputs": "samples", "source": info["proto_source"],
                               "plugin": plugin,
                               "problems": ["samples (%s): %s: %s"
                                            % (where, type(e).__name__, e)]})
                continue
        else:
            cases, origin = _generated_cases(info), "generated float32[2,3]"
        problems = check_cases(lib, info, cases)
        checked = [c for c in ("infer_meta", "execute", "declare_launch_args")
                   if c in info["capabilities"]]
        report.append({"op_type": t, "status": "failed" if problems else "ok",
                       "checked": checked, "inputs": origin, "cases": len(cases),
                       "problems": problems, "source": info["proto_source"],
                       "plugin": plugin})


def _given_case(info, args):
    """(inputs, attrs) from --input/--attr, as `pyop run` reads them."""
    return _inputs_from_args(info, args), _attrs_from_args(info, args)


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
            ex = lib.c.pyop_op_execute_list
            call_args = (op, slots, n_in, lists, n_out, ctx_p)
        else:
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
                  "execute_minus_ctypes_ns": round((med_ex - med_base) * 1e9, 1)}
    finally:
        lib.c.pyop_op_destroy(op)
    if args.json:
        dump_json(result)
    else:
        print("%s: %s %.0f ns/call, a bare ctypes call %.0f ns, difference %.0f ns "
              "(median of %d x %d calls from Python; bench/run.sh measures from C)"
              % (args.op, result["mode"], result["execute_ns"], result["ctypes_call_ns"],
                 result["execute_minus_ctypes_ns"], args.repeat, args.calls))
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (so --json can report it) instead of
    exiting."""

    def error(self, message):
        raise UsageError("%s (see %s --help)" % (message, self.prog))


def _count(least):
    """An argparse type: an integer >= least (and at most INT64_MAX)."""

    def parse(text):
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not an integer" % text) from None
        if not least <= value <= INT64_MAX:
            raise argparse.ArgumentTypeError("%d is not an integer >= %d" % (value, least))
        return value

    return parse


def run_under_requested_python(argv):
    """PYOP_PYTHON=/path/to/python: runs this command under that Python
    instead (once; a no-op when it already is that Python)."""
    want = os.environ.get("PYOP_PYTHON")
    if not want or os.environ.get("PYOP__REEXECUTED") == want:
        return
    exe = shutil.which(want) if os.sep not in want else want
    if not exe or not os.path.isfile(exe):
        raise UsageError("PYOP_PYTHON=%s: no such Python" % want)
    if _same_file(exe, sys.executable):
        return
    os.environ["PYOP__REEXECUTED"] = want
    sys.stdout.flush()
    os.execv(exe, [exe, os.path.abspath(__file__)] + list(argv))


def report_failure(command, err, as_json):
    """One message on stderr (and the error object on stdout with --json)."""
    where = "pyop: %s: " % command if command else "pyop: "
    lines = err.message.splitlines() or [""]
    sys.stderr.write(where + lines[0] + "\n")
    for line in lines[1:]:
        sys.stderr.write(line + "\n")
    if as_json:
        dump_json({"error": err.to_json()})
    return err.exit_code


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in argv
    ap = _Parser(prog="pyop", description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", help="libpyop.so to use (default: next to this command)")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("doctor", help="the Python, path verdicts, bridge candidates, "
                       "a trial load with each plugin's verdict")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("list", help="every registered op with prototype, capabilities, source")
    p.add_argument("--json", action="store_true")
    p.add_argument("path", nargs="*", help="plugin files/dirs (default: ASCEND_CUSTOM_OPP_PATH)")
    p = sub.add_parser("check", help="import, validate, run infer_meta and execute, compare")
    p.add_argument("--json", action="store_true")
    p.add_argument("target", nargs="*", metavar="PATH|OP",
                   help="plugin files/dirs (default: ASCEND_CUSTOM_OPP_PATH) and/or op types "
                        "to check (default: every op)")
    p.add_argument("--input", action="append", metavar="NAME=DTYPE[SHAPE]:VALUES",
                   help="inputs of the one OP to check (as for run)")
    p.add_argument("--attr", action="append", metavar="NAME=VALUE")
    p = sub.add_parser("run", help="run one op on host buffers and print the outputs")
    p.add_argument("op")
    p.add_argument("--input", action="append", metavar="NAME=DTYPE[SHAPE]:VALUES")
    p.add_argument("--attr", action="append", metavar="NAME=VALUE")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("bench", help="execute dispatch time of one op")
    p.add_argument("op")
    p.add_argument("--json", action="store_true")
    p.add_argument("--size", type=_count(0), default=16,
                   help="float32[SIZE] for every input when no --input is given")
    p.add_argument("--input", action="append", metavar="NAME=DTYPE[SHAPE]:VALUES")
    p.add_argument("--attr", action="append", metavar="NAME=VALUE")
    p.add_argument("--calls", type=_count(1), default=2000)
    p.add_argument("--repeat", type=_count(1), default=5)
    command = next((a for a in argv if a in ("doctor", "list", "check", "run", "bench")), None)
    try:
        run_under_requested_python(argv)
        args = ap.parse_args(argv)
    except UsageError as e:
        return report_failure(command, e, as_json)
    try:
        lib = Lib(args.library or _find_library())
    except OSError as e:
        return report_failure(args.command, CliError(
            "cannot load libpyop: %s" % e, "PYOP_ENOENT"), args.json)
    handlers = {"doctor": cmd_doctor, "list": cmd_list, "check": cmd_check,
                "run": cmd_run, "bench": cmd_bench}
    try:
        return handlers[args.command](lib, args)
    except CliError as e:
        return report_failure(args.command, e, args.json)
    finally:
        lib.shutdown()


if __name__ == "__main__":
    sys.exit(main())
