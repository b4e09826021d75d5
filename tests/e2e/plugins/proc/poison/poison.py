"""A plugin that breaks interpreter state libpyop relies on, then fails its
import. PROC_POISON (environment) says what it breaks."""
import builtins
import os
import sys

what = os.environ.get("PROC_POISON", "")


class _Refuse:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        raise ImportError("poisoned finder refuses %s" % name)


if what == "pyop_none":
    sys.modules["pyop"] = None
elif what == "pyop_submodules":
    for k in [k for k in sys.modules if k.startswith("pyop.")]:
        sys.modules[k] = None
elif what == "pyop_deleted":
    for k in [k for k in sys.modules if k == "pyop" or k.startswith("pyop.")]:
        del sys.modules[k]
elif what == "meta_path":
    sys.meta_path.insert(0, _Refuse)
elif what == "meta_path_cleared":
    sys.meta_path.clear()
elif what == "path_hooks":
    sys.path_hooks.clear()
    sys.path_importer_cache.clear()
elif what == "import":
    def _no_import(*a, **k):
        raise ImportError("poisoned __import__")
    builtins.__import__ = _no_import
elif what == "sys_path":
    sys.path = None
elif what == "sys_path_deleted":
    del sys.path
elif what == "succeed_pyop_none":
    sys.modules["pyop"] = None
    what = ""  # this variant loads successfully
if what:
    raise RuntimeError("poison plugin: broke %s" % what)
