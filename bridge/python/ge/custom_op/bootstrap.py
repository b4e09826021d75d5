"""ge.custom_op.bootstrap: the names of GE's module of that name.

GE's C++ runtime loads the plugins of ASCEND_CUSTOM_OPP_PATH through this
module; on libpyop the host does (pyop_load, or the pyop command), with the
loader rules of docs/ge-plugins.md ("Loading"), so load_custom_op_plugins
is not offered from Python. The registry readers return what GE's do:
dicts (fresh copies, so a caller that edits one changes nothing).
"""

from .registry import get_registered_op_impl_dicts

__all__ = ["ENV_PY_CUSTOM_OP_PATH", "load_custom_op_plugins", "get_registered_op_impls",
           "get_registered_op_protos"]

ENV_PY_CUSTOM_OP_PATH = "ASCEND_CUSTOM_OPP_PATH"


def load_custom_op_plugins():
    """Refused: on libpyop the host loads the plugins (see the module)."""
    raise NotImplementedError(
        "ge.custom_op.bootstrap.load_custom_op_plugins: on libpyop the plugins of %s are "
        "loaded by the host (pyop_load from C, or `pyop list/check/run` from a shell), not "
        "from Python" % ENV_PY_CUSTOM_OP_PATH)


def get_registered_op_impls():
    """The implementations registered in the load in progress, as dicts."""
    return get_registered_op_impl_dicts()


def get_registered_op_protos():
    """The prototypes registered in the load in progress, as dicts sorted by
    op type (GE's bootstrap returns dicts; ge.custom_op.proto's function of
    the same name returns the descriptors)."""
    from .proto import get_registered_op_proto_dicts
    return get_registered_op_proto_dicts()
