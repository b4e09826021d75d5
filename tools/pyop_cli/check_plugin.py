"""What `pyop check` reads from the loaded plugins themselves (the bridge's
pyop and ge packages and the plugins live in this very interpreter): the
implementation classes (pyop's and GE's), whether an op declared itself
nondeterministic, its reference and samples, its annotations against the
prototype, and where an exception a callback raised came from."""

import ctypes
import os
import sys

from .binding import ATTR_TYPES, DTYPES, IO_KINDS
from .errors import plural
from .plugins import registrations

_index = [None, {}, {}]  # [plugin modules seen, {impl key: class}, {op_type: ref}]


def _plugin_modules():
    prefix = getattr(sys.modules.get("pyop._loader"), "PLUGIN_PREFIX", "_pyop_plugin_")
    return [(name, mod) for name, mod in list(sys.modules.items())
            if name.startswith(prefix) and mod is not None]


def _ge_key(cls, desc):
    """The implementation key libpyop gives a GE class (plugins.loaded_impls)."""
    ext = sys.modules.get("pyop.ext")
    label = getattr(ext, "module_label", None)
    name = label(cls.__module__) if label is not None else cls.__module__
    return "ge:%s:%s:%s" % (name, cls.__qualname__, desc.op_type)


def _plugin_index():
    """Implementation classes by implementation key (pyop's and GE's) and
    pyop.register_reference functions by op type, indexed once per set of
    loaded plugin modules (an unloaded plugin's modules are gone from
    sys.modules)."""
    mods = _plugin_modules()
    seen = frozenset((name, id(mod)) for name, mod in mods)
    if _index[0] != seen:
        impls, refs = {}, {}
        for _, mod in mods:
            for obj in list(vars(mod).values()):
                if isinstance(obj, type):
                    # Every op type the class was registered for.
                    for desc in registrations(obj, "__pyop_descriptor__",
                                              "__pyop_descriptors__"):
                        if hasattr(desc, "key"):
                            impls.setdefault(desc.key, obj)
                    for ge in registrations(obj, "__ge_op_impl_descriptor__",
                                            "__ge_op_impl_descriptors__"):
                        if hasattr(ge, "op_type"):
                            impls.setdefault(_ge_key(obj, ge), obj)
                op_type = getattr(obj, "__pyop_reference__", None) if callable(obj) else None
                if isinstance(op_type, str):
                    refs.setdefault(op_type, obj)
        _index[:] = [seen, impls, refs]
    return _index[1], _index[2]


def forget_plugins():
    """Drops what was read of the plugins (nothing of them may outlive their
    unload: the bridge warns about objects still referenced at shutdown)."""
    _index[:] = [None, {}, {}]


def impl_class(info):
    """The plugin's implementation class of the loaded op (pyop's, or the
    class a GE plugin decorated), or None."""
    key = info.get("impl_key")
    return _plugin_index()[0].get(key) if key else None


def is_ge(info):
    return (info.get("impl_key") or "").startswith("ge:")


def is_deterministic(info):
    """False when the op's implementation declared itself nondeterministic:
    pyop's or libpyop's ge's register_op_impl(..., deterministic=False), or
    the class attribute __pyop_deterministic__ = False they set."""
    return getattr(impl_class(info), "__pyop_deterministic__", True) is not False


def nondeterministic_hint(info):
    """How this op's implementation declares that its results vary by design."""
    if is_ge(info):
        return ("an op whose results vary by design says so: @register_op_impl(op_type=..., "
                "deterministic=False) from ge.custom_op (libpyop's ge; for a plugin that "
                "CANN GE loads too, the class attribute __pyop_deterministic__ = False)")
    return ("an op whose results vary by design says so: "
            "@pyop.register_op_impl(..., deterministic=False)")


def plugin_samples():
    """{op_type: (fn, "file:line")} registered by the loaded plugins."""
    reg = getattr(sys.modules.get("pyop"), "_registry", None)
    get = getattr(reg, "loaded_samples", None)
    return get() if get is not None else {}


def find_reference(info):
    """(function, (rtol, atol)) registered with pyop.register_reference for
    the op by a loaded plugin, or None."""
    fn = _plugin_index()[1].get(info["op_type"])
    return (fn, getattr(fn, "__pyop_tolerance__", (1e-5, 1e-8))) if fn else None


def in_plugin_code(path):
    """Whether path is a file of a loaded plugin: a plugin module, a module
    of a plugin package, or a neighbour a plugin imported (all are imported
    under the loader's unique names)."""
    if not path:
        return False
    real = os.path.realpath(path)
    for _, mod in _plugin_modules():
        f = getattr(mod, "__file__", None)
        if f and os.path.realpath(f) == real:
            return True
    return False


class AttrWatch:
    """Context manager around one run of an op with Tensor attributes: the
    attributes its implementation wrote (written). libpyop copies a Tensor
    attribute into the instance at pyop_op_create and the op gets a
    read-only view of that copy, which no host can see; so the check
    watches the implementation's own methods (a profile function on this
    thread, while the run lasts) and compares each Tensor attribute's bytes
    as the method received them with its bytes when the method returns
    (written: [(attribute, method)]).
    Attributes read through a context (GE's legacy execute(self, ctx)) are
    not seen."""

    def __init__(self, info, names):
        cls = impl_class(info)
        self.names = names
        self.codes = set()
        for m in ("execute", "compile", "declare_launch_args"):
            f = getattr(cls, m, None) if cls is not None else None
            code = getattr(getattr(f, "__func__", f), "__code__", None)
            if code is not None:
                self.codes.add(code)
        self.seen = {}  # id(frame) -> [(name, address, size, bytes)]
        self.written = []

    def _profile(self, frame, event, _arg):
        if frame.f_code not in self.codes:
            return
        if event == "call":
            self.seen[id(frame)] = [w for w in map(self._region, self.names,
                                                   [frame.f_locals.get(n) for n in self.names])
                                    if w is not None]
        elif event == "return":
            for name, addr, size, before in self.seen.pop(id(frame), ()):
                hit = (name, frame.f_code.co_name)
                if ctypes.string_at(addr, size) != before and hit not in self.written:
                    self.written.append(hit)

    @staticmethod
    def _region(name, t):
        addr = getattr(t, "data_ptr", None) or getattr(t, "addr", None)
        size = getattr(t, "nbytes", None) or getattr(t, "size", None)
        if not isinstance(addr, int) or not isinstance(size, int) or not addr or size <= 0:
            return None
        return name, addr, size, ctypes.string_at(addr, size)

    def __enter__(self):
        if self.codes and self.names:
            self.old = sys.getprofile()
            sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc):
        if self.codes and self.names:
            sys.setprofile(self.old)
        return False


def tensor_attrs(info):
    """The names of the op's Tensor attributes."""
    return [a["name"] for a in info["attrs"] if a["type"] == "Tensor"]


_NUMPY_DTYPES = {n: n for n in DTYPES if n != "bfloat16"}


def _reference_args(info, case, np):
    """The reference's positional inputs and keyword attributes for case:
    numpy arrays (a list for a dynamic input, None for an absent optional
    one) and every attribute, the prototype's defaults for those the case
    does not set, as a host passes them."""
    args = []
    for i, slot in zip(info["inputs"], case.inputs):
        arrays = [np.array(v, dtype=_NUMPY_DTYPES[DTYPES[d]]).reshape(s) for d, s, v in slot]
        args.append(arrays if i["kind"] == "dynamic" else (arrays[0] if arrays else None))
    attrs = {a["name"]: a["default"] for a in info["attrs"] if not a["required"]}
    attrs.update(case.attrs)
    attrs = {k: (np.array(v[2], dtype=_NUMPY_DTYPES[DTYPES[v[0]]]).reshape(v[1])
                 if isinstance(v, tuple) and len(v) == 3 else v) for k, v in attrs.items()}
    return args, attrs


def reference_problem(info, case, res, reference):
    """Compares what execute produced (res) with the reference on the same
    inputs and attributes; a message, or None when they agree (or the case
    has bfloat16, which numpy has no type for: an input, an output or a
    Tensor attribute)."""
    fn, (rtol, atol) = reference
    try:
        import numpy as np
    except ImportError as e:
        return "the reference needs numpy, which does not import here (%s)" % e
    if _has_bfloat16(case, res):
        return None
    args, attrs = _reference_args(info, case, np)
    try:
        want = fn(*args, **attrs)
    except Exception as e:
        return "the reference raised %s: %s" % (type(e).__name__, e)
    outs = info["outputs"]
    if len(outs) == 1:
        want = [want]
    elif not isinstance(want, (tuple, list)) or len(want) != len(outs):
        return "the reference returned %r, not %s" % (type(want).__name__,
                                                      plural(len(outs), "output"))
    for k, o in enumerate(outs):
        got = [np.array(vals, dtype=_NUMPY_DTYPES[DTYPES[t.dtype]]).reshape(
            list(t.shape[:t.ndim])) for t, vals in res.produced[k]]
        expect = list(want[k]) if o["kind"] == "dynamic" else [want[k]]
        if len(got) != len(expect):
            return "output %s: %s, the reference %d" % (o["name"], plural(len(got), "tensor"),
                                                         len(expect))
        for j, (g, w) in enumerate(zip(got, expect)):
            text = _compare(np, g, np.asarray(w), "output %s%s" % (
                o["name"], "[%d]" % j if o["kind"] == "dynamic" else ""), rtol, atol)
            if text:
                return text
    return None


def _has_bfloat16(case, res):
    """Whether a tensor the reference would get or be compared with is
    bfloat16: an input, a Tensor attribute (dtype, shape, values), an
    output produced."""
    dtypes = [d for slot in case.inputs for d, _, _ in slot]
    dtypes += [v[0] for v in case.attrs.values() if isinstance(v, tuple) and len(v) == 3]
    dtypes += [t.dtype for out in res.produced for t, _ in out]
    return any(0 <= d < len(DTYPES) and DTYPES[d] == "bfloat16" for d in dtypes)


def _compare(np, g, w, what, rtol, atol):
    if g.shape != w.shape:
        return "%s: shape %s, the reference's %s" % (what, list(g.shape), list(w.shape))
    ok = np.isclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol,
                    equal_nan=True)
    if ok.all():
        return None
    at = int(np.argmin(ok.reshape(-1)))
    return ("%s differs from the reference at element %d: %r, the reference %r "
            "(rtol=%g, atol=%g)" % (what, at, g.reshape(-1)[at].item(),
                                    w.reshape(-1)[at].item(), rtol, atol))


def _ann_text(ann):
    if isinstance(ann, str):
        return ann
    if isinstance(ann, type):
        return ann.__name__
    return repr(ann).replace("typing.", "").replace("pyop._native.", "").replace("pyop.", "")


_KIND_TEXT = {"required": "required (one tensor)", "optional": "optional (a tensor or None)",
              "dynamic": "dynamic (a list of tensors)"}


def annotation_problems(info):
    """The implementation's annotations against the prototype: an input
    annotated as another kind (x: list[Tensor] for a single input), an
    attribute annotated as another type (factor: int for a float one). The
    load accepts both (it checks names and order); a host passes what the
    prototype says. Unannotated parameters are not compared. Uses the
    bridge's own annotation readers (pyop._signature, in this interpreter)."""
    cls = impl_class(info)
    sig = sys.modules.get("pyop._signature")
    if cls is None or sig is None or not (info.get("impl_key") or "").startswith("pyop:"):
        return []
    try:
        params, resolve = sig._method_params, sig._resolve
        input_kind, attr_type = sig._input_kind, sig._attr_type
    except AttributeError:  # another bridge version: nothing to compare with
        return []
    out = []
    attr_types = {a["name"]: a["type"] for a in info["attrs"]}
    for method in ("execute", "compile", "declare_launch_args"):
        if method not in info["capabilities"]:
            continue
        try:
            fn, pos, kw, _, _ = params(cls, method, method)
        except TypeError:
            continue
        code = getattr(fn, "__code__", None)
        at = " (%s:%d)" % (code.co_filename, code.co_firstlineno) if code else ""

        def ann_of(p):
            try:
                return resolve(p.annotation, fn, method)
            except TypeError:
                return p.empty
        for p, i in zip(pos, info["inputs"]):
            if p.annotation is p.empty:
                continue
            kind = input_kind(ann_of(p))
            if kind is not None and IO_KINDS[int(kind)] != i["kind"]:
                out.append("%s()%s: parameter %s is annotated %s (a %s input), but the "
                           "prototype's input %s is %s"
                           % (method, at, p.name, _ann_text(p.annotation), IO_KINDS[int(kind)],
                              i["name"], _KIND_TEXT[i["kind"]]))
        for p in kw:
            if p.annotation is p.empty or p.name not in attr_types:
                continue
            t = attr_type(ann_of(p))
            name = ATTR_TYPES.get(int(t)) if t is not None else None
            if name is not None and name != attr_types[p.name]:
                out.append("%s()%s: attribute %s is annotated %s, but the prototype's %s is "
                           "%s (the host passes a %s)"
                           % (method, at, p.name, _ann_text(p.annotation), p.name,
                              attr_types[p.name], attr_types[p.name]))
    return out
