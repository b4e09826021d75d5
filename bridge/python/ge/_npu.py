"""pyACL on a host: `import acl` (the NPU runtime GE samples use inside
execute) fails where it is written, with a ModuleNotFoundError that names
acl, the op running on this thread and says it needs an NPU. The finder sits
at the end of sys.meta_path, so a real pyACL, if installed, is still found
first."""

import sys

__all__ = ["AclFinder", "NPU_MODULES"]

NPU_MODULES = frozenset(("acl",))


class AclFinder:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname not in NPU_MODULES:
            return None
        where = "while the plugins load"
        ctxmod = sys.modules.get("ge.custom_op.context")
        op = ctxmod.current_op() if ctxmod is not None else None
        if op is not None:
            where = "in op %r" % op
        raise ModuleNotFoundError(
            "No module named %r: pyACL needs an NPU and the CANN toolkit; libpyop runs GE "
            "plugins on the host (imported %s; see docs/ge-plugins.md)" % (fullname, where),
            name=fullname)

    @classmethod
    def invalidate_caches(cls):
        pass
