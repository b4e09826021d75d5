"""Importing plugins by file location (called by the bridge).

- A path is a .py file, or a directory whose .py files and package
  directories (with __init__.py) one level deep are plugins; names starting
  with '_' or '.' are skipped. Plugins are imported in name order.
- Each plugin is imported under a unique module name
  "_pyop_plugin_<n>_<stem>" (n grows for the life of the process), never
  under its own name, so a plugin called json.py cannot shadow the standard
  library and a reload never sees a previous load's module objects.
- Nothing is added to sys.path and the cwd is never searched; sys.path is
  restored if a plugin changed it during the load. A package plugin's
  relative imports are served by a finder on sys.meta_path that only answers
  for names under the unique prefix.
- Source is always compiled from the file (no .pyc is read or written), so an
  edited plugin is picked up by the next load whatever its mtime.
"""

import importlib
import importlib.machinery
import importlib.util
import itertools
import linecache
import os
import sys

from . import _registry

__all__ = ["discover", "load_plugins", "unload_modules", "shutdown", "LoadResult"]

_counter = itertools.count(1)
PLUGIN_PREFIX = _registry.PLUGIN_PREFIX


class _PluginLoader(importlib.machinery.SourceFileLoader):
    """Source loader that never uses bytecode caches."""

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)

    def set_data(self, path, data, *, _mode=0o666):  # never write .pyc
        return None


class _PluginFinder:
    """Finds submodules of plugin packages (names under PLUGIN_PREFIX) in the
    parent package's __path__, loading them with _PluginLoader."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if not fullname.startswith(PLUGIN_PREFIX) or "." not in fullname or not path:
            return None
        last = fullname.rpartition(".")[2]
        for d in path:
            pkg_init = os.path.join(d, last, "__init__.py")
            if os.path.isfile(pkg_init):
                return _spec(fullname, pkg_init, os.path.join(d, last))
            mod = os.path.join(d, last + ".py")
            if os.path.isfile(mod):
                return _spec(fullname, mod, None)
        return None

    @classmethod
    def invalidate_caches(cls):
        pass


def _spec(name, file, package_dir):
    loader = _PluginLoader(name, file)
    return importlib.util.spec_from_file_location(
        name, file, loader=loader,
        submodule_search_locations=[package_dir] if package_dir else None)


def _install_finder():
    if _PluginFinder not in sys.meta_path:
        sys.meta_path.insert(0, _PluginFinder)


def shutdown():
    """Removes the finder (the bridge calls this before dropping the package)."""
    while _PluginFinder in sys.meta_path:
        sys.meta_path.remove(_PluginFinder)


def _skipped(name):
    return name.startswith("_") or name.startswith(".")


def discover(path):
    """The plugins of one path as (file, package_dir or None, stem), sorted by
    name. A missing .py file raises FileNotFoundError; a missing directory
    yields nothing."""
    path = os.fspath(path)
    if not os.path.isabs(path):
        raise ValueError("plugin path %r is not absolute" % path)
    if path.endswith(".py") and not os.path.isdir(path):
        if not os.path.isfile(path):
            raise FileNotFoundError("plugin file %s does not exist" % path)
        return [(path, None, os.path.basename(path)[:-3])]
    if not os.path.isdir(path):
        return []
    found = []
    for name in sorted(os.listdir(path)):
        if _skipped(name):
            continue
        full = os.path.join(path, name)
        if name.endswith(".py") and os.path.isfile(full):
            found.append((full, None, name[:-3]))
        elif os.path.isdir(full) and os.path.isfile(os.path.join(full, "__init__.py")):
            found.append((os.path.join(full, "__init__.py"), full, name))
    return found


def _unique_name(stem):
    safe = "".join(c if (c.isalnum() or c == "_") else "_" for c in stem)
    return "%s%d_%s" % (PLUGIN_PREFIX, next(_counter), safe)


def _import(name, file, package_dir):
    spec = _spec(name, file, package_dir)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:
        if hasattr(e, "add_note"):
            e.add_note("while importing pyop plugin %s" % (package_dir or file))
        raise


class LoadResult:
    """What one load produced: descriptors and the module names it added."""

    __slots__ = ("protos", "impls", "modules")

    def __init__(self, protos, impls, modules):
        self.protos = protos
        self.impls = impls
        self.modules = modules


def load_plugins(paths):
    """Imports every plugin of paths and returns a LoadResult. On any
    exception (BaseException included) every module of this load is removed
    from sys.modules before it propagates."""
    importlib.invalidate_caches()
    _install_finder()
    saved_path = list(sys.path)
    roots = []
    with _registry.collecting() as coll:
        try:
            for p in paths:
                for file, package_dir, stem in discover(p):
                    name = _unique_name(stem)
                    roots.append(name)  # before exec: a failure removes it too
                    _import(name, file, package_dir)
            coll.finalize()
        except BaseException:
            unload_modules(roots)
            raise
        finally:
            if sys.path != saved_path:
                sys.path[:] = saved_path
    modules = _with_submodules(roots)
    return LoadResult(coll.all_protos(), coll.all_impls(), modules)


def _with_submodules(roots):
    out = []
    for r in roots:
        out.append(r)
        prefix = r + "."
        out.extend(sorted(n for n in list(sys.modules) if n.startswith(prefix)))
    return out


def unload_modules(names):
    """Removes the modules (and their submodules) from sys.modules."""
    for r in list(names):
        sys.modules.pop(r, None)
        prefix = r + "."
        for n in [n for n in list(sys.modules) if n.startswith(prefix)]:
            sys.modules.pop(n, None)
    importlib.invalidate_caches()
    linecache.clearcache()
