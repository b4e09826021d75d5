"""The one ctypes binding of include/pyop/pyop.h: its constants, the structs
a host passes (tensors, attributes, the execution context, op info, host
hooks) and the functions the command calls. tests/examples/test_binding.py
compares every struct's size and member offsets with the header's, compiled
by the C compiler."""

import ctypes
import os

from . import config
from .errors import CliError, PyopError, unknown_op_message


def _find_library():
    """The libpyop the command drives: PYOP_LIBRARY when set; else the one
    of the command's own build or install, config.LIBDIR (filled in by
    bin/pyop at configure time: the install's libdir relative to bin/, or
    absolute), so any libdir layout works; from the source tree (no
    LIBDIR) the dynamic loader's search."""
    env = os.environ.get("PYOP_LIBRARY")
    if env:
        return env
    if config.LIBDIR and config.SCRIPT:
        here = os.path.dirname(os.path.realpath(config.SCRIPT))
        return os.path.normpath(os.path.join(here, config.LIBDIR, "libpyop.so.0"))
    return "libpyop.so.0"


MAX_DIMS = 8


MAX_LANES = 64  # PYOP_MAX_LANES


# Copies of pyop.h's tables (PYOP_DTYPE_MAP, PYOP_FORMAT_MAP, the attribute
# types, io kinds, capabilities), by value; tests/e2e/test_tables.py compares
# them with libpyop's answers (pyop_dtype_name, pyop_dtype_size, ...).
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


class DtypeSet(ctypes.Structure):
    _fields_ = [("mask", ctypes.c_uint64), ("symbol", ctypes.c_char_p)]


class OpInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("op_type", ctypes.c_char_p),
                ("proto_key", ctypes.c_char_p), ("proto_source", ctypes.c_char_p),
                ("impl_key", ctypes.c_char_p), ("impl_source", ctypes.c_char_p),
                ("inputs", ctypes.POINTER(IoInfo)), ("n_inputs", ctypes.c_size_t),
                ("outputs", ctypes.POINTER(IoInfo)), ("n_outputs", ctypes.c_size_t),
                ("attrs", ctypes.POINTER(AttrInfo)), ("n_attrs", ctypes.c_size_t),
                ("capabilities", ctypes.c_uint32),
                ("input_flags", ctypes.POINTER(ctypes.c_uint32)),
                ("output_alias", ctypes.POINTER(ctypes.c_int32)),
                ("serial_reason", ctypes.c_char_p), ("lanes", ctypes.c_uint32),
                ("reserved_", ctypes.c_uint32),
                ("input_dtypes", ctypes.POINTER(DtypeSet)),
                ("output_dtypes", ctypes.POINTER(DtypeSet))]


ALLOC_OUTPUT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.POINTER(Tensor))


ALLOC_WORKSPACE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64,
                                   ctypes.POINTER(ctypes.c_void_p))


class Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("start_python", ctypes.c_bool),
                ("strict_outputs", ctypes.c_bool),
                ("reserved_", ctypes.c_char * (ctypes.sizeof(ctypes.c_size_t) - 2)),
                ("lanes", ctypes.c_uint32), ("reserved_lanes_", ctypes.c_uint32),
                ("start_python_key", ctypes.c_char_p)]


class ExecCtx(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("user", ctypes.c_void_p),
                ("alloc_output", ALLOC_OUTPUT), ("alloc_workspace", ALLOC_WORKSPACE),
                ("stream", ctypes.c_void_p), ("flags", ctypes.c_uint32)]


EXEC_EXPECT_OUTPUTS = 1  # PYOP_EXEC_EXPECT_OUTPUTS


PYOP_EINTR = -22  # interrupted: a KeyboardInterrupt in plugin code



INPUT_MUTATED = 1        # PYOP_INPUT_MUTATED


class OutputList(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(Tensor)), ("capacity", ctypes.c_size_t),
                ("count", ctypes.c_size_t)]


class Lib:
    """Thin ctypes binding of include/pyop/pyop.h."""

    def __init__(self, path):
        self.path = path
        self.c = ctypes.CDLL(path)
        c = self.c
        c.pyop_status_name.restype = ctypes.c_char_p
        c.pyop_strerror.restype = ctypes.c_char_p
        c.pyop_last_error.restype = ctypes.c_char_p
        c.pyop_last_status.restype = ctypes.c_int
        c.pyop_op_get.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(OpInfo))]
        c.pyop_set_options.argtypes = [ctypes.POINTER(Options)]
        c.pyop_op_info_release.argtypes = [ctypes.POINTER(OpInfo)]
        c.pyop_register_host_prototype.argtypes = [ctypes.POINTER(OpInfo)]
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
        c.pyop_op_compile.argtypes = [ctypes.c_void_p, ctypes.POINTER(TensorList),
                                      ctypes.c_size_t, ctypes.POINTER(Tensor), ctypes.c_size_t,
                                      ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.POINTER(ctypes.c_size_t)]
        c.pyop_op_declare_launch_args.argtypes = [ctypes.c_void_p, ctypes.POINTER(TensorList),
                                                  ctypes.c_size_t, ctypes.POINTER(Tensor),
                                                  ctypes.c_size_t]

    def check(self, what, rc):
        """Raises PyopError for a failed call; an interrupted one
        (PYOP_EINTR: a KeyboardInterrupt in plugin code) raises
        KeyboardInterrupt, so no handler of failures takes it for one and
        the command ends (main)."""
        if rc != 0:
            name = self.c.pyop_status_name(rc).decode()
            detail = self.c.pyop_last_error().decode("utf-8", "replace")
            if rc == PYOP_EINTR:
                raise KeyboardInterrupt(detail.splitlines()[0] if detail.strip() else what)
            err = PyopError(what, name, detail, self.c.pyop_strerror(rc).decode())
            from .plugins import exception_origin  # the plugins run in this interpreter
            origin = exception_origin(detail)
            err.origin = origin if name == "PYOP_EPYTHON" else None
            raise err

    def interrupt_detail(self):
        """The first line of this thread's last error when the last failure
        was PYOP_EINTR (what was interrupted), else None."""
        if self.c.pyop_last_status() != PYOP_EINTR:
            return None
        text = self.c.pyop_last_error().decode("utf-8", "replace").strip()
        return text.splitlines()[0] if text else None

    def load(self):
        self.check("pyop_load", self.c.pyop_load())

    def set_lanes(self, n):
        """pyop_options.lanes = n for the next load (the other options at
        their defaults)."""
        if not 0 <= n <= 0xFFFFFFFF:
            # ctypes would wrap it into the uint32_t (2**32: no lanes, 2**32 + 2:
            # two): refused as libpyop refuses any count past PYOP_MAX_LANES.
            raise CliError("pyop_set_options: lanes %d is out of range (0..%d)"
                           % (n, MAX_LANES), "PYOP_EINVAL")
        o = Options(ctypes.sizeof(Options), False, False, b"", n, 0)
        self.check("pyop_set_options", self.c.pyop_set_options(ctypes.byref(o)))

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
            from .plugins import pending_impls
            detail = self.c.pyop_last_error().decode("utf-8", "replace")
            waiting = [i for i in pending_impls(self.op_types()) if i["op_type"] == op_type]
            if waiting:  # libpyop's message says what is missing; the hint how to give it
                raise CliError("%s (pyop: give it its REG_OP with --proto FILE: "
                               "docs/ge-plugins.md)" % detail.rstrip(), "PYOP_ENOENT", op_type)
            raise CliError(unknown_op_message(op_type, self.op_types()), "PYOP_ENOENT",
                           op_type)
        self.check('looking up op "%s"' % op_type, rc)
        try:
            return info_to_dict(p.contents)
        finally:
            self.c.pyop_op_info_release(p)


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


def _str_value(s):
    """The text of a pyop_str (data, len) as libpyop gave it, NULs included:
    read at its data pointer (the field Str.data, a c_char_p, reads as a
    bytes copy cut at the first NUL, too short for len)."""
    if not s.len:
        return ""
    data = ctypes.c_void_p.from_address(ctypes.addressof(s) + Str.data.offset).value
    return ctypes.string_at(data, s.len).decode("utf-8", "replace")


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
        return _str_value(u.s)
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
        return [_str_value(items[i]) for i in range(n)]
    if t == 10:
        return [DTYPES[d] for d in ctypes.cast(p, ctypes.POINTER(ctypes.c_int32))[:n]]
    if t == 11:
        items = ctypes.cast(p, ctypes.POINTER(IntList))
        return [list(items[i].items[:items[i].count]) if items[i].count else []
                for i in range(n)]
    return None


def dtype_names(mask):
    """The dtype names of a PYOP_DTYPE_BIT mask, in pyop_dtype order; None
    for 0 (any)."""
    return [n for k, n in enumerate(DTYPES) if mask >> k & 1] or None


def _dtypes(sets, k):
    """{"dtypes", "dtype_symbol"} of io k of a pyop_dtype_set array (NULL:
    unconstrained)."""
    if not sets:
        return {"dtypes": None, "dtype_symbol": None}
    return {"dtypes": dtype_names(sets[k].mask), "dtype_symbol": _s(sets[k].symbol)}


def info_to_dict(i):
    return {
        "op_type": _s(i.op_type),
        "proto_key": _s(i.proto_key),
        "proto_source": _s(i.proto_source),
        "impl_key": _s(i.impl_key),
        "impl_source": _s(i.impl_source),
        "inputs": [dict({"name": _s(i.inputs[k].name), "kind": IO_KINDS[i.inputs[k].kind],
                         "mutated": bool(i.input_flags and i.input_flags[k] & INPUT_MUTATED)},
                        **_dtypes(i.input_dtypes, k))
                   for k in range(i.n_inputs)],
        "outputs": [dict({"name": _s(i.outputs[k].name), "kind": IO_KINDS[i.outputs[k].kind],
                          "alias": (_s(i.inputs[i.output_alias[k]].name)
                                    if i.output_alias and i.output_alias[k] >= 0 else None)},
                         **_dtypes(i.output_dtypes, k))
                    for k in range(i.n_outputs)],
        "attrs": [{"name": _s(i.attrs[k].name),
                   "type": ATTR_TYPES.get(i.attrs[k].type, str(i.attrs[k].type)),
                   "required": bool(i.attrs[k].required),
                   "default": None if i.attrs[k].required
                   else attr_value_to_py(i.attrs[k].default_value)}
                  for k in range(i.n_attrs)],
        "capabilities": [name for bit, name in CAPS if i.capabilities & bit],
        "lanes": i.lanes,
        "serial_reason": _s(i.serial_reason) or None,
    }


LOG_HOOK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class HostHooks(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("user", ctypes.c_void_p),
                ("owns_op", ctypes.c_void_p), ("on_register", ctypes.c_void_p),
                ("on_unregister", ctypes.c_void_p), ("log", LOG_HOOK)]
