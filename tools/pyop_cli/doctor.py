"""`pyop doctor`: the Python, path verdicts, bridge candidates, a trial load
with each plugin's verdict."""

import ctypes
import os
import shutil
import sys
import tempfile

from . import config, start_choice
from .binding import HostHooks, LOG_HOOK
from .errors import CliError, plural, too_deep_notes
from .host import ge_status_lines, _same_file
from .list import lanes_line
from .plugins import loaded_impls, PENDING_HINT, plugin_id
from .output import say
from .values import dump_json


# The names pyop_doctor prints: copies of pyop__path_verdict_name (src/scan.c)
# and pyop__cand_status_name (src/candidates.c), held to them by
# tests/e2e/test_tables.py.
PATH_VERDICTS = ("python-file", "python-dir", "no-python", "missing-dir", "missing-file",
                 "relative", "unreadable", "not-python", "not-scanned", "unknown")


CAND_STATUSES = ("untried", "invalid path", "unsafe", "manifest invalid",
                 "manifest mismatch", "duplicate", "open failed", "missing symbol",
                 "ABI rejected", "config rejected", "loaded", "unknown")


def _item(line, names):
    """'  <path>: <name>[: <detail>]' -> (path, name, detail) for the
    leftmost of names that fits."""
    best = None
    for name in names:
        for sep in (": %s: " % name, ": %s" % name):
            k = line.find(sep)
            if k > 2 and (sep.endswith(" ") or line.endswith(sep)) and \
                    (best is None or k < best[0]):
                best = (k, name, line[k + len(sep):] if sep.endswith(" ") else None)
    if best is None:
        return line[2:], "unknown", None
    return line[2:best[0]], best[1], best[2]


def parse_doctor_report(text):
    """libpyop's pyop_doctor() text as a dict (runtime key, path elements
    with verdicts, artifact root, bridge, candidates with status)."""
    out = {"runtime_key": None, "runtime": None, "opp_path": None, "path": [],
           "artifacts": None, "bridge": None, "candidates": [], "ops_registered": None}
    section = None
    for line in text.splitlines():
        if line.startswith("runtime key: "):
            rest = line[len("runtime key: "):]
            key, _, paren = rest.partition(" (")
            out["runtime_key"] = None if key == "none" else key
            out["runtime"] = paren.rstrip(")")
        elif line.startswith("ASCEND_CUSTOM_OPP_PATH="):
            value = line.split("=", 1)[1]
            out["opp_path"] = None if value == "(unset)" else value
            section = "path"
        elif line.startswith("artifacts: "):
            out["artifacts"] = line[len("artifacts: "):]
            section = None
        elif line.startswith("bridge: "):
            rest = line[len("bridge: "):]
            out["bridge"] = {"loaded": rest.startswith("loaded "),
                             "detail": rest[len("loaded "):] if rest.startswith("loaded ")
                             else rest}
        elif line.startswith("candidates"):
            section = "candidates"
        elif line.startswith("ops registered: "):
            out["ops_registered"] = int(line.split(": ", 1)[1])
            section = None
        elif line.startswith("  error: ") and section == "path":
            out["path_error"] = line[len("  error: "):]
        elif line.startswith("  ") and section == "path":
            path, verdict, detail = _item(line, PATH_VERDICTS)
            out["path"].append({"element": path, "verdict": verdict, "detail": detail})
        elif line.startswith("  ") and section == "candidates":
            path, status, reason = _item(line, CAND_STATUSES)
            out["candidates"].append({"dir": path, "status": status, "reason": reason})
    return out


def python_report():
    """The interpreter running this command, and how it relates to the
    build's (the one a C host with start_python runs)."""
    try:
        import site
        site_dirs = set(site.getsitepackages() + [site.getusersitepackages()])
    except Exception:  # a stripped-down site module
        site_dirs = set()
    paths = [{"path": p, "site_packages": p in site_dirs or
              os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages")}
             for p in sys.path if p]
    numpy = {"importable": False, "version": None, "error": None}
    try:
        import numpy as np
        numpy.update(importable=True, version=getattr(np, "__version__", None))
    except Exception as e:  # ImportError, or a broken install
        numpy["error"] = "%s: %s" % (type(e).__name__, e)
    same = config.BUILD_PYTHON is None or _same_file(sys.executable, config.BUILD_PYTHON)
    return {"executable": sys.executable, "version": sys.version.split()[0],
            "prefix": sys.prefix, "sys_path": paths, "numpy": numpy,
            "build_python": config.BUILD_PYTHON, "is_build_python": same if config.BUILD_PYTHON else None}


def start_python_report(artifacts, lanes=0):
    """The libpython start_python would load with lanes asked for, as
    libpyop chooses it (start_choice): that artifact's manifest, the
    build's default artifact and libpyop's note on the choice (None
    without one)."""
    out = {"artifact": config.BUILD_ARTIFACT, "default": config.BUILD_ARTIFACT,
           "manifest": None, "libpython": None, "verdict": "unknown", "note": None}
    if not artifacts or not config.BUILD_ARTIFACT:
        out["verdict"] = "unknown (run the built or installed command, not the source file)"
        return out
    out["artifact"], out["note"] = start_choice.choose(artifacts, lanes)
    manifest = os.path.join(artifacts, out["artifact"], "manifest.txt")
    out["manifest"] = manifest
    try:
        fields = start_choice.read_manifest(manifest)
    except OSError as e:
        out["verdict"] = "no manifest: %s" % e.strerror
        return out
    except ValueError as e:  # not text (UnicodeDecodeError): libpyop refuses it too
        out["verdict"] = "unreadable manifest: %s" % e
        return out
    lib = fields.get("libpython")
    out["libpython"] = lib
    if not lib:
        out["verdict"] = "none recorded (the build's Python has no shared libpython)"
    elif not os.path.isfile(lib):
        out["verdict"] = "missing: %s does not exist" % lib
    else:
        out["verdict"] = "present"
    return out


def _plugin_owner(source, plugins):
    """The plugin (file or package dir) a 'file.py:12' source belongs to."""
    path = (source or "").rsplit(":", 1)[0]
    for p in plugins:
        if path == p["plugin"] or path.startswith(p["plugin"] + os.sep):
            return p
    return None


def _discover(element):
    """The plugins of one ASCEND_CUSTOM_OPP_PATH element, as the bridge sees
    them (its own discover() once it is loaded in this process)."""
    loader = sys.modules.get("pyop._loader")
    found = loader.discover(element) if loader else []
    return [{"plugin": pkg or file, "package": pkg is not None} for file, pkg, _ in found]


def _load_alone(lib, plugin):
    """Loads one plugin by itself; (ops, error dict or None, _impl_notes)."""
    tmp = None
    try:
        if plugin["package"]:
            # A package is one plugin of its parent directory: load it from
            # a directory that holds only it.
            tmp = tempfile.mkdtemp(prefix="pyop-doctor-")
            os.symlink(plugin["plugin"], os.path.join(tmp, os.path.basename(plugin["plugin"])))
            os.environ["ASCEND_CUSTOM_OPP_PATH"] = tmp
        else:
            os.environ["ASCEND_CUSTOM_OPP_PATH"] = plugin["plugin"]
        try:
            lib.load()
            types = lib.op_types()
            return types, None, _impl_notes(types)
        except CliError as e:
            return [], e.to_json(), []
        finally:
            lib.c.pyop_unload()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _rss():
    """This process's resident memory in bytes, or None where the system
    does not say (no /proc)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _rss_without_lanes(lib, lanes):
    """The resident memory after a load without lanes, the bridge then shut
    down and lanes set again for the trial load: (bytes or None, why not)."""
    try:
        lib.set_lanes(0)
        lib.load()
        rss = _rss()
        return rss, None if rss is not None else "this system does not report resident memory"
    except CliError as e:
        return None, "the load without lanes failed (%s)" % e.status
    finally:
        lib.shutdown()
        lib.set_lanes(lanes)


def _lane_memory(base, why, lanes, load, infos):
    """What a lane costs: the resident memory of the trial load (with
    `lanes` lanes) minus that of the same load without them, per lane."""
    if why is None and load["status"] != "ok":
        why = "the load with lanes failed"
    if why is None and not any(i["lanes"] for i in infos):
        why = "no op runs in lanes"
    now = _rss() if why is None else None
    if why is None and now is None:
        why = "this system does not report resident memory"
    per = max(0, now - base) // lanes if why is None else None
    return {"bytes_per_lane": per, "why": why}


def doctor_report(lib, lanes=0):
    """Everything `pyop doctor` shows, as one dict (--json prints it)."""
    rep = {"python": python_report()}
    opp = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
    load = {"status": "ok", "ops": [], "error": None}
    base, why = _rss_without_lanes(lib, lanes) if lanes else (None, None)
    try:
        lib.load()
        load["ops"] = lib.op_types()
    except CliError as e:
        load.update(status=e.status, error=e.to_json())
    rep.update(parse_doctor_report(lib.doctor()))
    rep["ge"] = ge_status_lines(bool(rep["bridge"] and rep["bridge"]["loaded"]))
    rep["start_python"] = start_python_report(rep["artifacts"], lanes)
    rep["load"] = load
    rep["lanes_asked"] = lanes
    plugins, seen = [], set()
    for el in rep["path"]:
        if el["verdict"] in ("python-file", "python-dir"):
            for p in _discover(el["element"]):
                # A directory listed twice (with a trailing slash, as D/.,
                # through a link) holds the same plugins, and a link to a
                # plugin file is that plugin: libpyop loads each once.
                fid = plugin_id(p["plugin"])
                if fid not in seen:
                    seen.add(fid)
                    plugins.append(p)
    impls = []
    infos = []
    if load["status"] == "ok":
        impls = _impl_notes(load["ops"])
        infos = [lib.op_info(t) for t in load["ops"]]
        rep["lanes"] = [{k: i[k] for k in ("op_type", "lanes", "serial_reason")}
                        for i in infos if lanes_line(i)]
        for p in plugins:
            p.update(verdict="ok", ops=[], error=None)
        for i in infos:
            for src in (i["proto_source"], i["impl_source"]):
                owner = _plugin_owner(src, plugins)
                if owner and i["op_type"] not in owner["ops"]:
                    owner["ops"].append(i["op_type"])
    if lanes:
        rep["lane_memory"] = _lane_memory(base, why, lanes, load, infos)
    if load["status"] != "ok" and plugins:
        # All or nothing: the load failed as a whole; try each plugin alone.
        lib.c.pyop_unload()
        try:
            for p in plugins:
                ops, err, notes = _load_alone(lib, p)
                p.update(verdict="ok" if err is None else "failed", ops=ops, error=err)
                impls.extend(n for n in notes if n not in impls)
        finally:
            if opp is None:
                os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None)
            else:
                os.environ["ASCEND_CUSTOM_OPP_PATH"] = opp
    for p in plugins:
        p["pending"] = sorted({i["op_type"] for i in impls if i["pending"] and
                               _plugin_owner(i["impl_source"], [p])})
    rep["plugins"] = plugins
    rep["implementations"] = impls
    return rep


def _impl_notes(registered):
    """The loaded implementations worth a line (plugins.loaded_impls): one
    waiting for a prototype ("pending"), a GE legacy execute(self, ctx)
    ("legacy": newer GE rejects it), one with compile."""
    out = []
    for i in loaded_impls():
        i["pending"] = i["op_type"] not in registered
        if i["pending"] or i["legacy"] or "compile" in i["capabilities"]:
            out.append(i)
    return out


def print_doctor(rep):
    py = rep["python"]
    say("python: %s (Python %s)" % (py["executable"], py["version"]))
    if py["build_python"]:
        if py["is_build_python"]:
            say("  the build's Python (what a C host with start_python runs)")
        else:
            say("  NOT the build's Python %s, which a C host with start_python runs:"
                " ops may import differently there (e.g. numpy); PYOP_PYTHON=%s"
                " runs this command under it" % (py["build_python"], py["build_python"]))
    np = py["numpy"]
    say("  numpy: %s" % ("importable (%s)" % np["version"] if np["importable"]
                         else "not importable: %s" % np["error"]))
    say("  sys.path:")
    for p in py["sys_path"]:
        say("    %s%s" % (p["path"], "  (site-packages)" if p["site_packages"] else ""))
    say("runtime key: %s (%s)" % (rep["runtime_key"] or "none", rep["runtime"]))
    say("ASCEND_CUSTOM_OPP_PATH=%s" % (rep["opp_path"] if rep["opp_path"] is not None
                                       else "(unset)"))
    for el in rep["path"]:
        say("  %s: %s%s" % (el["element"], el["verdict"],
                            ": " + el["detail"] if el["detail"] else ""))
    for note in too_deep_notes():
        say("  note: " + note)
    if rep.get("path_error"):
        say("  error: %s" % rep["path_error"])
    say("artifacts: %s" % rep["artifacts"])
    for c in rep["candidates"]:
        say("  %s: %s%s" % (c["dir"], c["status"], ": " + c["reason"] if c["reason"] else ""))
    if rep["bridge"]:
        say("bridge: %s%s" % ("loaded " if rep["bridge"]["loaded"] else "",
                              rep["bridge"]["detail"]))
    for line in rep["ge"]:
        say(line)
    sp = rep["start_python"]
    say("start_python would load: %s (%s)%s" % (
        sp["libpython"] or "-", sp["verdict"],
        "" if sp["artifact"] == sp["default"] else ", the bridge %s" % sp["artifact"]))
    if sp["note"]:
        say("  " + sp["note"])
    load = rep["load"]
    if load["status"] == "ok":
        say("load: ok, %s registered" % plural(len(load["ops"]), "op"))
        if rep["lanes_asked"]:
            say("lanes: %d asked for (pyop_options.lanes); how each op runs:"
                % rep["lanes_asked"])
            mem = rep.get("lane_memory") or {}
            if mem.get("bytes_per_lane") is not None:
                say("  memory: each lane adds %.1f MB (resident memory of this load minus "
                    "the same load without lanes, divided by %d)"
                    % (mem["bytes_per_lane"] / 1048576.0, rep["lanes_asked"]))
            else:
                say("  memory per lane: not measured: %s" % mem.get("why"))
        else:
            say("lanes: none asked for: every Python op runs in the main interpreter, "
                "one at a time under its GIL (`pyop --lanes N doctor` shows which ops "
                "could run in parallel in N lanes; docs/host-guide.md, \"Python ops in "
                "parallel\")")
        for i in rep.get("lanes", []):
            say("  op %s: %s" % (i["op_type"], lanes_line(i)))
    else:
        say("load: FAILED (%s)" % load["status"])
        for line in load["error"]["message"].splitlines():
            say("  " + line)
    for p in rep["plugins"]:
        if p["verdict"] == "ok":
            say("  plugin %s: ok (%s%s)" % (p["plugin"], ", ".join(p["ops"]) or "no ops",
                                           "; waiting for a prototype: %s"
                                           % ", ".join(p["pending"]) if p["pending"] else ""))
        else:
            first = p["error"]["message"].splitlines()[0]
            say("  plugin %s: FAILED: %s" % (p["plugin"], first))
    for i in rep["implementations"]:
        if i["pending"]:
            say("  op %s (%s): implementation %s" % (i["op_type"], i["impl_source"],
                                                    PENDING_HINT))
        if i["legacy"]:
            say("  op %s (%s): legacy execute(self, ctx): runs here, as on GE master and "
                "develop, but is rejected by newer GE: write a schema-bound execute(self, "
                "<inputs>, *, <attrs>) -> None" % (i["op_type"], i["impl_source"]))
        if "compile" in i["capabilities"]:
            say("  op %s (%s): has compile: it runs where the host compiles the op "
                "(pyop_op_compile)%s" % (i["op_type"], i["impl_source"],
                                         "; CompilePlatformInfo queries need an NPU"
                                         if i["ge"] else ""))


def cmd_doctor(lib, args):
    # The doctor loads several times: each log line is shown once, after.
    lines = []
    hook = LOG_HOOK(lambda _u, _lv, line: lines.append(line.decode("utf-8", "replace")))
    hooks = HostHooks(ctypes.sizeof(HostHooks), None, None, None, None, hook)
    lib.c.pyop_set_host_hooks(ctypes.byref(hooks))
    try:
        rep = doctor_report(lib, getattr(args, "lanes", 0) or 0)
    finally:
        lib.c.pyop_set_host_hooks(None)
        for line in dict.fromkeys(lines):
            sys.stderr.write(line + "\n")
    if args.json:
        if rep["load"]["error"]:
            rep["error"] = rep["load"]["error"]
        dump_json(rep)
    else:
        print_doctor(rep)
    if rep["load"]["status"] != "ok":
        sys.stderr.write("pyop: doctor: the load failed (%s)\n" % rep["load"]["status"])
        return 1
    return 0
