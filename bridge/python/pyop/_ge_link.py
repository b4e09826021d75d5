"""Makes libpyop's `ge` package (CANN GE compatibility, shipped next to
pyop in every bridge artifact: <artifact>/python/ge) importable as `ge`,
the way the bridge makes pyop importable: by putting the package in
sys.modules, nothing added to sys.path.

- A real CANN `ge` already imported is left alone: GE-style plugins then
  import and register with it (libpyop sees none of their ops). The host's
  log says so and `pyop doctor` reports it (status()).
- A `ge` that is only installed (on sys.path, e.g. through PYTHONPATH, not
  yet imported) is not used: libpyop's serves `import ge` while the bridge
  is loaded -- a departure from CANN GE, where that `ge` is GE itself. The
  host's log notes where it is (info) and `pyop doctor` prints it
  (shadowed()).
- uninstall() (pyop shutdown) removes ge and ge.* with pyop, so no module
  of it outlives the bridge and nothing carries over to the next load.
"""

import os
import sys

__all__ = ["install", "uninstall", "status", "shadowed", "GE_DIR"]

GE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ge")
_LOG_WARN = 1
_LOG_INFO = 2

_status = {"state": "not installed", "detail": ""}
_installed = []  # the module install() put in sys.modules


def _ours(mod):
    return getattr(mod, "__pyop_ge__", False) is True


def _log(level, msg):
    native = sys.modules.get("pyop._native")
    log = getattr(native, "log", None)
    if log is not None:
        log(level, msg)


def status():
    """(state, detail): state is "installed" (libpyop's ge), "foreign" (a
    real ge was imported first and is used), "missing" (no ge directory in
    the artifact) or "not installed"."""
    return _status["state"], _status["detail"]


def shadowed():
    """Where a `ge` package other than libpyop's is installed on sys.path
    (its __init__.py, or its directory for a namespace package), or None.
    Looked up on sys.path only, never in sys.modules, so it is found while
    libpyop's is installed."""
    import importlib.machinery
    try:
        spec = importlib.machinery.PathFinder.find_spec("ge")
    except (ImportError, ValueError, OSError):  # an odd sys.path entry: no finding
        return None
    if spec is None:
        return None
    where = spec.origin if spec.origin not in (None, "namespace") else \
        next(iter(spec.submodule_search_locations or ()), None)
    if where is None:
        return None
    try:
        if os.path.samefile(os.path.dirname(where) if spec.origin else where, GE_DIR):
            return None
    except OSError:
        pass
    return where


def install():
    """Installs libpyop's ge as sys.modules['ge'] unless a ge is there."""
    import importlib.util
    existing = sys.modules.get("ge")
    if existing is not None:
        if _ours(existing):
            return
        where = getattr(existing, "__file__", None) or repr(existing)
        _status.update(state="foreign", detail=where)
        _log(_LOG_WARN, "a `ge` package is already imported (%s); it is not replaced "
                        "by libpyop's GE compatibility package, so GE-style plugins register "
                        "with it and libpyop does not see their ops" % where)
        return
    init = os.path.join(GE_DIR, "__init__.py")
    if not os.path.isfile(init):
        _status.update(state="missing", detail=GE_DIR)
        _log(_LOG_WARN, "the GE compatibility package %s is missing; GE-style plugins "
                        "cannot load" % GE_DIR)
        return
    spec = importlib.util.spec_from_file_location("ge", init, submodule_search_locations=[GE_DIR])
    module = importlib.util.module_from_spec(spec)
    sys.modules["ge"] = module
    try:
        spec.loader.exec_module(module)
        from ge import _npu
        from ._loader import meta_path_add
        meta_path_add(_npu.AclFinder, first=False)
    except BaseException:
        for name in [n for n in list(sys.modules) if n == "ge" or n.startswith("ge.")]:
            sys.modules.pop(name, None)
        raise
    _installed[:] = [module]
    _status.update(state="installed", detail=GE_DIR)
    other = shadowed()
    if other is not None:
        _log(_LOG_INFO, "a `ge` package is also installed at %s; libpyop's GE compatibility "
                        "package serves `import ge` while its bridge is loaded (import that "
                        "one before pyop_load to use it instead)" % other)


def uninstall():
    """Removes the ge package install() added, with its submodules; returns
    the modules removed."""
    mod = sys.modules.get("ge")
    mine = _installed[:]
    _installed[:] = []
    if mod is None or not mine or mod is not mine[0]:
        return []
    npu = sys.modules.get("ge._npu")
    finder = getattr(npu, "AclFinder", None)
    if finder is not None:
        from ._loader import meta_path_remove
        try:
            meta_path_remove(finder)
        except TypeError:
            pass  # not iterable: nothing of ours to take off
    removed = [sys.modules.pop(n, None) for n in list(sys.modules)
               if n == "ge" or n.startswith("ge.")]
    _status.update(state="not installed", detail="")
    return [m for m in removed if m is not None]
