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
module's init before it refuses the module, and two interpreters running
one at once corrupt the static types the init readies (all interpreters
share them). While lanes serve, the main interpreter's extension modules
are made behind it too (gate_main: the gate alone, nothing recorded).
"""

import _imp

__all__ = ["gate_main", "install", "note", "take"]


def _wrap_makers(refused):
    """Wraps _imp's extension-module makers of this interpreter: each make
    runs between enter() and leave() of _imp._pyop_gate when it is set
    (the bridge's gate functions; leave() only while the same pair is set),
    and with a record (refused, a list) each ImportError it raises is
    appended there, then raised."""
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
                if refused is not None:
                    refused.append((getattr(spec, "name", "?"), "%s: %s" % (type(e).__name__, e)))
                raise
            finally:
                # Given back only to the gate taken: none when the image that
                # set it dropped its package meanwhile (it may be unmapped).
                if gate is not None and getattr(_imp, "_pyop_gate", None) is gate:
                    gate[1]()

        recorded.__name__ = recorded.__qualname__ = name
        setattr(_imp, name, recorded)


def install(enter, leave):
    """A lane's: wraps _imp's extension-module makers (once: the record
    lives on _imp, which outlives the pyop package of one load) and returns
    the record, the list take() empties: the bridge reads its length after
    each call, so that a call whose plugin caught a refusal is seen too.
    enter() and leave() take and give back the extension gate of the image
    that installs (each image's own: _imp._pyop_gate, None once that
    image's package is dropped)."""
    _imp._pyop_gate = (enter, leave)
    if getattr(_imp, "_pyop_refused", None) is not None:
        return _imp._pyop_refused
    refused = []
    _wrap_makers(refused)
    _imp._pyop_refused = refused
    return refused


def gate_main(enter, leave):
    """The main interpreter's, while lanes serve: the same wrappers (once:
    they stay on _imp) with the gate alone, nothing recorded."""
    _imp._pyop_gate = (enter, leave)
    if not getattr(_imp, "_pyop_main_gated", False):
        _wrap_makers(None)
        _imp._pyop_main_gated = True


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
