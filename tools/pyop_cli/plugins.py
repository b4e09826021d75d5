"""What the loaded plugins define, read in this interpreter (the bridge runs
the plugins in the process of the command): their implementation classes,
pyop's and GE's, with what libpyop does not list -- an implementation still
waiting for a prototype -- and what GE versions disagree on (a legacy
execute(self, ctx), compile)."""

import os
import re
import sys

from .binding import CAPS


# GE's interfaces (OpImplDescriptor.interfaces) -> pyop's capability names.
_GE_INTERFACES = {"eager_execute": "execute", "host_cpu_execute": "execute",
                  "compilable": "compile", "annotated_args": "declare_launch_args"}


def plugin_id(path):
    """What libpyop's loader knows a plugin by, which it imports once
    however often it is reached (a directory listed twice or through a
    link, a link to a plugin file): the device and inode of the file or
    package directory, links followed (pyop._loader._file_id); the path
    itself when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return path
    return (st.st_dev, st.st_ino)


def _plugin_classes():
    """Every class defined at the top level of a loaded plugin module (or
    submodule), once."""
    # pyop._loader's prefix of the unique module names, read from the pyop
    # the bridge imported (none: no plugin is loaded).
    prefix = getattr(sys.modules.get("pyop._loader"), "PLUGIN_PREFIX", None)
    if not prefix:
        return
    seen = set()
    for name, mod in list(sys.modules.items()):
        if not name.startswith(prefix) or mod is None:
            continue
        for obj in list(vars(mod).values()):
            if isinstance(obj, type) and id(obj) not in seen:
                seen.add(id(obj))
                yield obj


def registrations(cls, last, every):
    """Every descriptor a register_op_impl put on cls: the tuple under
    every (one per op type the class was registered for; pyop's and GE's
    layers keep it), else the one under last (the last registration's),
    else none."""
    many = cls.__dict__.get(every)
    if isinstance(many, tuple):
        return many
    one = cls.__dict__.get(last)
    return () if one is None else (one,)


def _ge_legacy(desc):
    """Whether the GE implementation's execute that runs is the legacy
    execute(self, ctx): the ge layer's own rule
    (ge.custom_op.registry.uses_legacy_execute); False when that layer is not
    the one loaded."""
    reg = sys.modules.get("ge.custom_op.registry")
    rule = getattr(reg, "uses_legacy_execute", None)
    return bool(rule(desc)) if rule is not None else False


def loaded_impls():
    """The implementations of the loaded plugins, sorted by op type: dicts
    {op_type, impl_key, impl_source, capabilities, ge, legacy}. legacy: a
    GE execute(self, ctx), which newer GE rejects."""
    out = {}
    ext = sys.modules.get("pyop.ext")
    location = getattr(ext, "class_location", None)
    label = getattr(ext, "module_label", None)
    for cls in _plugin_classes():
        descs = [d for d in registrations(cls, "__pyop_descriptor__", "__pyop_descriptors__")
                 if hasattr(d, "caps") and hasattr(d, "key")]
        for desc in descs:
            out.setdefault((desc.op_type, desc.key), {
                "op_type": desc.op_type, "impl_key": desc.key,
                "impl_source": "%s:%s" % (desc.file, desc.line),
                "capabilities": [n for bit, n in CAPS if desc.caps & bit],
                "ge": False, "legacy": False})
        if descs or location is None or label is None:
            continue
        for desc in registrations(cls, "__ge_op_impl_descriptor__",
                                   "__ge_op_impl_descriptors__"):
            file, line = location(cls)
            key = "ge:%s:%s:%s" % (label(cls.__module__), cls.__qualname__, desc.op_type)
            caps = {_GE_INTERFACES[i] for i in desc.interfaces if i in _GE_INTERFACES}
            out.setdefault(key, {
                "op_type": desc.op_type, "impl_key": key, "impl_source": "%s:%s" % (file, line),
                "capabilities": [n for _, n in CAPS if n in caps], "ge": True,
                "legacy": _ge_legacy(desc)})
    return sorted(out.values(), key=lambda i: (i["op_type"], i["impl_key"]))


def pending_impls(registered):
    """The loaded implementations whose op type is not registered: they
    wait for a prototype (pyop_register_host_prototype, or --proto FILE)."""
    have = set(registered)
    return [i for i in loaded_impls() if i["op_type"] not in have]


PENDING_HINT = ("waiting for a prototype: pyop_op_create fails until the host registers "
                "it (pyop_register_host_prototype); give the command its REG_OP with "
                "--proto FILE (docs/ge-plugins.md)")


def exception_origin(detail=""):
    """The origin of the last exception a callback raised on this thread:
    (its class names, the file and line of its innermost frame, "Type:
    message"), as pyop._errors.last_origin recorded it (consumed by the
    call), else as the bridge's text of it (detail: "Type: message" then the
    traceback) says: a callback that ran in another interpreter (a lane)
    records nothing here, and its text names only the type and the frames
    left after libpyop's were trimmed. None when neither says."""
    get = getattr(sys.modules.get("pyop._errors"), "last_origin", None)
    origin = get() if get is not None else None
    return origin if origin is not None else _origin_of_text(detail)


_FRAME = re.compile(r'^  File "([^"]+)", line (\d+)')
_HEAD = re.compile(r"^([A-Za-z_][\w.]*): ")


def _origin_of_text(detail):
    lines = (detail or "").splitlines()
    frames = [(n, m) for n, m in ((n, _FRAME.match(t)) for n, t in enumerate(lines)) if m]
    if not frames:
        return None
    at, frame = frames[-1]
    head = next((t for t in lines[at + 1:] if _HEAD.match(t)), None)
    if head is None:
        return None
    return ((_HEAD.match(head).group(1).rsplit(".", 1)[-1],), frame.group(1),
            int(frame.group(2)), head)
