"""What an interpreter lane refuses to import, recorded (the bridge's lane
images only: bridge/lane_imports.c, docs/design.md §Lanes).

A sub-interpreter with its own GIL refuses extension modules that do not
support one (numpy, every single-phase module, _ctypes on 3.12): importing
one raises ImportError there, where the main interpreter imports it. A
plugin that catches that ImportError (the optional-extension pattern: `try:
import ext / except ImportError: ext = None`) would run another code path in
the lanes than in the main interpreter, and one that imports lazily, inside
execute, would fail there on every call. So in a lane every ImportError
raised while an extension module is made (_imp.create_dynamic,
create_builtin) is recorded, whatever the plugin does with it; the bridge
takes the record after each path element's load (the element then stays
serial) and after each call, failed or not (the op then runs in the main
interpreter).

The wrappers also make every extension module of a lane behind the
bridge's extension gate (bridge/lanes.h): CPython runs a single-phase
module's init before it refuses the module, and two lanes running one at
once corrupt the static types the init readies (all interpreters share
them).
"""

import _imp

__all__ = ["install", "note", "take"]


def install(enter, leave):
    """Wraps _imp's extension-module makers of this interpreter (once: the
    record lives on _imp, which outlives the pyop package of one load) and
    returns the record, the list take() empties: the bridge reads its
    length after each call, so that a call whose plugin caught a refusal
    is seen too. enter() and leave() take and give back the extension gate
    of the image that installs (each image's own: _imp._pyop_gate, None
    once that image's package is dropped)."""
    _imp._pyop_gate = (enter, leave)
    if getattr(_imp, "_pyop_refused", None) is not None:
        return _imp._pyop_refused
    refused = []
    for name in ("create_dynamic", "create_builtin"):
        make = getattr(_imp, name, None)
        if make is None:
            continue

        def recorded(spec, *args, _make=make):
            gate = getattr(_imp, "_pyop_gate", None)
            if gate is not None:
                gate[0]()
            try:
                return _make(spec, *args)
            except ImportError as e:
                refused.append((getattr(spec, "name", "?"), "%s: %s" % (type(e).__name__, e)))
                raise
            finally:
                if gate is not None:
                    gate[1]()

        recorded.__name__ = recorded.__qualname__ = name
        setattr(_imp, name, recorded)
    _imp._pyop_refused = refused
    return refused


def note(name, text):
    """Records a refusal of the bridge's own (asyncio on 3.12)."""
    refused = getattr(_imp, "_pyop_refused", None)
    if refused is not None:
        refused.append((name, text))


def take():
    """The refusals recorded since the last take: [(module name, "ImportError:
    message")], oldest first; the record is emptied."""
    refused = getattr(_imp, "_pyop_refused", None)
    if not refused:
        return []
    out = list(refused)
    del refused[:]
    return out
