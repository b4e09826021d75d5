"""A plugin that breaks the import system, then fails to load
(tests/integration/bridge_harness.c, case clobber): every change is undone."""
import builtins
import sys

_import = builtins.__import__


class _List(list):
    pass


class _Cache(dict):
    pass


class _Finder:
    @staticmethod
    def find_spec(*args):
        return None


sys.meta_path.insert(0, _Finder)  # the same list changed: put back in place
sys.path_hooks = _List(sys.path_hooks)  # not a list: a new list goes back
sys.path_importer_cache = _Cache(sys.path_importer_cache)  # not a dict: a new dict goes back
builtins.__import__ = lambda *a, **k: _import(*a, **k)
del sys.modules["_edge_host_module"]  # the host's entry: put back
sys.modules["pyop._clobbered"] = None  # a package entry that is no module: dropped
raise RuntimeError("clobbered the import system")
