"""Importing plugins by file location (called by the bridge).

- A path is a .py file, or a directory whose .py files and package
  directories (with __init__.py) one level deep are plugins; names starting
  with '_' or '.' are skipped. Plugins are imported in name order. The C
  scan (src/scan.h) decides with the same rule whether to load at all;
  tests/integration/test_loader_cli.py checks that the two agree.
- Each plugin is imported under a unique module name
  "_pyop_plugin_<n>_<stem>" (n grows for the life of the process), never
  under its own name, so a plugin called json.py cannot shadow the standard
  library and a reload never sees a previous load's module objects.
- Nothing is added to sys.path and the cwd is never searched; sys.path is
  restored if a plugin changed it during the load. A package plugin's
  relative imports are served by a finder on sys.meta_path that only answers
  for names under the unique prefix.
- While the plugins of a directory element load, its top-level modules and
  packages can also be imported by their own names (as CANN GE allows:
  `import helper`, `import mypkg.sub`): those names are aliases of the
  unique modules (nothing runs twice), served only for names nothing else
  provides (never a standard-library, installed, `pyop` or `ge` module), and
  removed from sys.modules when the element's load ends
  (docs/ge-plugins.md, "Loading"). A plugin linked into the directory keeps
  the neighbours of its real location. A directory without __init__.py is
  a namespace package there (`import common.utils`), and inside a package
  plugin too, as in Python.
- foo.py beside a package foo/ (two entries that would both be the module
  foo) fail the load naming both (layout_problem). An entry that is a link
  to another entry of its directory is that plugin again: imported once,
  by the first name, its other name an alias of it (as CANN GE, which
  imports a file once by its resolved path).
- Source is always compiled from the file (no .pyc is read or written), so an
  edited plugin is picked up by the next load whatever its mtime.
"""

import importlib
import importlib.machinery
import importlib.util
import itertools
import linecache
import marshal
import os
import sys

from . import _registry

__all__ = ["discover", "layout_problem", "load_plugins", "unload_modules", "shutdown",
           "LoadResult"]

_counter = itertools.count(1)
PLUGIN_PREFIX = _registry.PLUGIN_PREFIX


# A free-threaded CPython (3.13t) makes a code object's constants immortal
# when it loads them from bytecode (marshal), but not when compile() makes
# them: a float or tuple constant of a plugin is then one shared reference
# count that every thread running the plugin's code writes, which keeps two
# host threads from running one op's code at once (docs/host-guide.md,
# "Python ops in parallel"). sys._is_gil_enabled: 3.13+, False only while a
# free-threaded build runs without its GIL.
_gil_enabled = getattr(sys, "_is_gil_enabled", lambda: True)


class _PluginLoader(importlib.machinery.SourceFileLoader):
    """Source loader that never uses bytecode caches."""

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        data = self.get_data(path)
        _registry.note_compiled(path, data)  # what runs, for the lanes' comparison
        code = self.source_to_code(data, path)
        if not _gil_enabled():
            # What loading it from a .pyc would give, without a .pyc.
            code = marshal.loads(marshal.dumps(code))
        return code

    def set_data(self, path, data, *, _mode=0o666):  # never write .pyc
        return None


class _PluginFinder:
    """Finds submodules of plugin packages (names under PLUGIN_PREFIX) in the
    parent package's __path__, loading them with _PluginLoader."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if not fullname.startswith(PLUGIN_PREFIX) or "." not in fullname or not path:
            return None
        file, package_dir, portions = _locate(fullname.rpartition(".")[2], path)
        if file is not None:
            return _spec(fullname, file, package_dir)
        return _namespace_spec(fullname, portions) if portions else None

    @classmethod
    def invalidate_caches(cls):
        pass


def _locate(name, dirs):
    """Where module `name` is in the directories dirs, as Python's path
    finder looks: (file, package dir or None, []) for the first package
    (name/__init__.py) or module (name.py), a package before a module in one
    directory; else (None, None, portions): the directories name/ without
    __init__.py, the portions of a namespace package (none: not found)."""
    portions = []
    for d in dirs:
        pkg_dir = os.path.join(d, name)
        pkg_init = os.path.join(pkg_dir, "__init__.py")
        if os.path.isfile(pkg_init):
            return pkg_init, pkg_dir, []
        mod = os.path.join(d, name + ".py")
        if os.path.isfile(mod):
            return mod, None, []
        if os.path.isdir(pkg_dir):
            portions.append(pkg_dir)
    return None, None, portions


def _namespace_spec(name, portions):
    """The spec of a namespace package (no __init__.py) made of portions."""
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = list(portions)
    return spec


def _spec(name, file, package_dir):
    loader = _PluginLoader(name, file)
    return importlib.util.spec_from_file_location(
        name, file, loader=loader,
        submodule_search_locations=[package_dir] if package_dir else None)


class _AliasLoader:
    """Loader of an alias: the module is the unique-named one, not run again."""

    def __init__(self, module, owner):
        self.module = module
        self.spec = getattr(module, "__spec__", None)
        self.owner = owner

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        if self.spec is not None:
            module.__spec__ = self.spec  # module_from_spec replaced it
        self.owner.aliases.append(self.spec_name)


# Never sibling aliases: libpyop's packages and the names the site
# machinery imports by itself.
_PROTECTED = frozenset(("pyop", "ge", "sitecustomize", "usercustomize"))


def _protected(name):
    std = getattr(sys, "stdlib_module_names", ())
    return (name in _PROTECTED or name in std or name in sys.builtin_module_names or
            name.startswith(PLUGIN_PREFIX))


class _SiblingFinder:
    """The absolute names of one directory element during its load.

    Two instances share the state: `top` sits at the END of sys.meta_path and
    answers top-level names no other finder found (so nothing importable
    otherwise is shadowed); `sub` sits at the front and answers submodules of
    the aliases it made (so `mypkg.sub` is the unique package's submodule,
    not a second copy found through mypkg.__path__).
    """

    def __init__(self, directory, assigned, extra_roots, top):
        self.dirs = _sibling_dirs(directory)
        self.assigned = assigned  # stem -> unique name of this element's plugins
        self.extra_roots = extra_roots  # unique names of helpers loaded on demand
        self.top = top
        self.aliases = [] if top else None
        self.roots = {} if top else None  # alias top-level name -> unique name
        self.peer = None

    def find_spec(self, fullname, path=None, target=None):
        state = self if self.top else self.peer
        if self.top:
            if "." in fullname or not fullname.isidentifier() or _protected(fullname):
                return None
            file, package_dir, portions = _locate(fullname, self.dirs)
            if file is None and not portions:
                return None
            unique = self.assigned.get(fullname)
            if unique is None:  # a helper that is not a plugin (_helper.py, common/)
                unique = self.assigned[fullname] = _unique_name(fullname)
                self.extra_roots.append(unique)
            if unique not in sys.modules:
                if file is not None:
                    _import(unique, file, package_dir)
                else:
                    _import_namespace(unique, portions)
            module = sys.modules[unique]
            state.roots[fullname] = unique
        else:
            top, dot, rest = fullname.partition(".")
            unique = state.roots.get(top) if dot else None
            if unique is None:
                return None
            target_name = unique + "." + rest
            try:
                module = importlib.import_module(target_name)
            except ModuleNotFoundError as e:
                if e.name == target_name:
                    return None
                raise
        loader = _AliasLoader(module, state)
        loader.spec_name = fullname
        return importlib.util.spec_from_loader(fullname, loader)

    def invalidate_caches(self):
        pass


def _sibling_dirs(directory):
    """Where a directory element's siblings are looked up: the directory,
    then the real directories of the plugins linked into it (a plugin
    linked from elsewhere, as `pyop check` does to check one plugin alone,
    keeps its own neighbours)."""
    dirs = [directory]
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return dirs
    for name in names:
        full = os.path.join(directory, name)
        if not _skipped(name) and os.path.islink(full):
            real = os.path.dirname(os.path.realpath(full))
            if real not in dirs:
                dirs.append(real)
    return dirs


class _Siblings:
    """Context manager: the sibling finders of one directory element."""

    def __init__(self, directory, assigned, extra_roots):
        self.directory = directory
        self.top = _SiblingFinder(directory, assigned, extra_roots, True)
        self.sub = _SiblingFinder(directory, assigned, extra_roots, False)
        self.sub.peer = self.top

    def __enter__(self):
        meta_path_add(self.sub, first=True)
        meta_path_add(self.top, first=False)
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            meta_path_remove(self.sub, self.top)
        except TypeError as e:
            if exc_type is None:
                raise TypeError("%s (a plugin of %s replaced it)" % (e, self.directory)) from None
            # The plugin's own exception is the one to report; the bridge
            # puts sys.meta_path back after the failed load.
        for name in self.top.aliases:
            sys.modules.pop(name, None)
        return False


# Every list object libpyop put a finder on. A plugin that replaces
# sys.meta_path (by a tuple, a new list) leaves the list it replaced alive
# elsewhere: CPython keeps the sys module's first dict in a shallow copy, so
# the list sys.meta_path started as outlives any replacement. Finders are
# taken off these too, or they (and the package they hold) would outlive
# the bridge.
_meta_lists = []


def _meta_path():
    """sys.meta_path as a list libpyop can change in place. A plugin may have
    replaced it by a tuple or a list subclass, which Python's import system
    accepts (it only iterates it): it is replaced by a plain list of the same
    finders, so a subclass's own insert or remove is never relied on.
    TypeError when it is not iterable."""
    mp = sys.meta_path
    if type(mp) is not list:
        try:
            mp = list(mp)
        except TypeError:
            raise TypeError("sys.meta_path is %s, not a list of finders (a plugin replaced "
                            "it): libpyop cannot add or remove its import finders"
                            % type(mp).__name__) from None
        sys.meta_path = mp
    return mp


def meta_path_add(finder, first):
    """Puts finder on sys.meta_path once, at its start or its end."""
    mp = _meta_path()
    if not any(m is mp for m in _meta_lists):
        _meta_lists.append(mp)
    if not any(f is finder for f in mp):
        if first:
            mp.insert(0, finder)
        else:
            mp.append(finder)


def meta_path_remove(*finders):
    """Takes every occurrence of finders off sys.meta_path and off the lists
    libpyop put finders on (compared by identity: a finder's __eq__ is not
    asked). TypeError, after the lists, when sys.meta_path is not iterable."""
    error = None
    try:
        lists = [_meta_path()]
    except TypeError as e:
        error, lists = e, []
    lists += [m for m in _meta_lists if not any(m is n for n in lists)]
    for mp in lists:
        if any(f is g for f in mp for g in finders):
            mp[:] = [f for f in mp if not any(f is g for g in finders)]
    if error is not None:
        raise error


def _install_finder():
    meta_path_add(_PluginFinder, first=True)


def shutdown():
    """Removes the finder and libpyop's ge package (the bridge calls this
    before dropping the package); returns the ge modules removed. A
    sys.meta_path that is not iterable any more keeps nothing of libpyop's
    to remove; the ge package is removed all the same."""
    try:
        meta_path_remove(_PluginFinder)
    except TypeError:
        pass
    from . import _ge_link
    try:
        return _ge_link.uninstall()
    finally:
        _meta_lists.clear()


def _skipped(name):
    return name.startswith("_") or name.startswith(".")


def discover(path):
    """The plugins of one path as (file, package_dir or None, stem), sorted by
    name. A missing .py file raises FileNotFoundError; a missing directory
    yields nothing. (What a load refuses in that list: layout_problem.)"""
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


def layout_problem(path, found):
    """Why the plugins `found` of directory path cannot load together, or
    None (docs/op-author-guide.md, "Plugin files and packages"): two of its
    entries would be one module -- foo.py beside a package foo/ (both are
    module foo; Python itself would import only the package). The message
    names both entries. (An entry that is a link to another is no problem:
    load_plugins imports that file once.)"""
    by_stem = {}  # stem -> the entry's path
    for file, package_dir, stem in found:
        full = package_dir or file
        other = by_stem.get(stem)
        if other is not None:
            return ("plugin directory %s: %s and %s are both the module %r (Python itself "
                    "would import only the package): rename or remove one"
                    % (path, _entry_label(other), _entry_label(full), stem))
        by_stem[stem] = full
    return None


def _file_id(path):
    """(st_dev, st_ino) of path (links followed), or None when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _entry_label(full):
    """An entry of a plugin directory as a message names it: foo.py, foo/."""
    name = os.path.basename(full)
    return name + "/" if os.path.isdir(full) else name


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
        sys.modules.pop(name, None)  # as a failed import does: never half a module
        if hasattr(e, "add_note"):
            e.add_note("while importing pyop plugin %s" % (package_dir or file))
        raise


def _import_namespace(name, portions):
    """Makes the namespace package `name` of portions (nothing runs)."""
    sys.modules[name] = importlib.util.module_from_spec(_namespace_spec(name, portions))


def _import_all(found, assigned):
    for file, package_dir, stem in found:
        name = assigned[stem]
        if name not in sys.modules:  # else a sibling imported it already
            _import(name, file, package_dir)


class LoadResult:
    """What one load produced: descriptors and the module names it added."""

    __slots__ = ("protos", "impls", "modules")

    def __init__(self, protos, impls, modules):
        self.protos = protos
        self.impls = impls
        self.modules = modules


def load_plugins(paths, seen=None):
    """Imports every plugin of paths and returns a LoadResult. A plugin file
    or package that an earlier entry of the load already imported (a
    directory listed twice, a link from a second directory or from its own)
    is imported once, by the first. seen: a dict the caller keeps across
    calls that are one load (an interpreter lane loads one path at a time):
    what earlier calls imported counts as imported by an earlier path; a
    successful call adds its plugins. On any exception (BaseException
    included) every module of this load is removed from sys.modules before
    it propagates."""
    importlib.invalidate_caches()
    _install_finder()
    saved_path = list(sys.path)
    roots = []
    # (st_dev, st_ino) of a plugin of this load -> its unique name
    by_file = dict(seen) if seen is not None else {}
    with _registry.collecting() as coll:
        try:
            for coll.element, p in enumerate(paths):
                found = discover(p)
                if not found:
                    continue
                problem = layout_problem(p, found)
                if problem is not None:
                    raise ImportError(problem, path=p)
                assigned = {}
                for file, package_dir, stem in found:
                    fid = _file_id(package_dir or file)
                    if fid in by_file:  # an earlier entry's plugin (listed twice, a link)
                        assigned[stem] = by_file[fid]  # imported once; here its name aliases it
                        continue
                    assigned[stem] = _unique_name(stem)
                    roots.append(assigned[stem])  # before exec: a failure removes it too
                    if fid is not None:
                        by_file[fid] = assigned[stem]
                extra = []
                try:
                    if os.path.isdir(p):
                        with _Siblings(os.fspath(p), assigned, extra):
                            _import_all(found, assigned)
                    else:
                        _import_all(found, assigned)
                finally:
                    roots.extend(extra)
            coll.finalize()
            coll.seal()
        except BaseException:
            unload_modules(roots)
            raise
        finally:
            # The one place sys.path is put back (the bridge's guard leaves it
            # to this): after every load, failed or not.
            if not isinstance(getattr(sys, "path", None), list):
                sys.path = saved_path  # a plugin replaced or deleted it
            elif sys.path != saved_path:
                sys.path[:] = saved_path
    modules = _with_submodules(roots)
    _registry._samples.update(coll.samples)
    if seen is not None:
        seen.update(by_file)
    return LoadResult(coll.all_protos(), coll.all_impls(), modules)


def _with_submodules(roots):
    """roots (top-level names), each followed by its submodules in
    sys.modules, sorted. One pass over sys.modules, whatever the number of
    roots."""
    wanted = set(roots)
    subs = {}
    for n in list(sys.modules):
        top, dot, _ = n.partition(".")
        if dot and top in wanted:
            subs.setdefault(top, []).append(n)
    out = []
    for r in roots:
        out.append(r)
        out.extend(sorted(subs.get(r, ())))
    return out


def _under(name, gone):
    """Whether module name is in gone or a submodule of a name in gone."""
    if name in gone:
        return True
    i = name.find(".")
    while i >= 0:
        if name[:i] in gone:
            return True
        i = name.find(".", i + 1)
    return False


def unload_modules(names):
    """Removes the modules (and their submodules) from sys.modules, and the
    samples they registered; returns the module objects removed (the bridge
    clears those a free-threaded Python made immortal)."""
    gone = set(names)
    for op_type, (fn, _) in list(_registry._samples.items()):
        mod = getattr(fn, "__module__", "") or ""
        if mod in gone or mod.split(".")[0] in gone:
            del _registry._samples[op_type]
    removed = [sys.modules.pop(n, None) for n in list(sys.modules) if _under(n, gone)]
    try:
        importlib.invalidate_caches()
    except Exception:
        # It asks every finder on sys.meta_path: a plugin's finder that
        # raises, or a sys.meta_path a plugin made None, must not stop an
        # unload (nor hide the exception of the load it cleans up after).
        pass
    linecache.clearcache()
    return [m for m in removed if m is not None]
