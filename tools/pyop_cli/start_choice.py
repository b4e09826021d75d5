"""Which bridge artifact (and so which libpython) a C host's start_python
starts, as libpyop chooses it (src/start_python.c, src/lanes_floor.h):
the build's default, unless lanes are asked for and its Python cannot run
them; then the first artifact, in the build's order (-DPYOP_PYTHONS) then
by name, whose Python can. `pyop doctor` reports it (doctor.py); the
manifests are read, nothing is opened."""

import os

from . import config

# The bridge ABI whose bridges run lanes (bridge_abi.h 1.6; major as libpyop's).
LANES_ABI = (1, 6)
# CPython 3.12.0 to 3.12.3 cannot end a sub-interpreter safely (gh-119213;
# src/lanes_floor.h): the first fixed release.
LANES_FIXED_312 = 0x030C0400


def read_manifest(path):
    """{key: value} of an artifact's manifest.txt (OSError when unreadable)."""
    with open(path) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f
                    if "=" in line and not line.startswith("#"))


def _int(text, base=10):
    try:
        return int(text, base)
    except (TypeError, ValueError):
        return None


def lanes_unfit(m):
    """Why the Python of the artifact with manifest m cannot run lanes, in
    libpyop's words, or None when it can."""
    tag = m.get("python_tag", "")
    minor = _int(tag[3:]) if tag[:2] == "cp" and tag[2:3].isdigit() and tag[3:].isdigit() \
        else None
    if minor is None or minor > 99:
        return "built for %s, no one CPython version" % tag
    major = int(tag[2])
    if (major, minor) < (3, 12):
        return "Python %d.%d has no per-interpreter GIL" % (major, minor)
    v = _int(m.get("python_version_hex", "0"), 0) or 0
    if 0x030C0000 <= v < LANES_FIXED_312:
        return ("CPython %d.%d.%d cannot end a sub-interpreter safely (CPython gh-119213): "
                "lanes need CPython 3.12.4 or later" % ((v >> 24) & 0xff, (v >> 16) & 0xff,
                                                       (v >> 8) & 0xff))
    if "t" in m.get("abi_flags", ""):
        return ("Python %d.%dt is free-threaded: its threads run Python in parallel "
                "without lanes" % (major, minor))
    if not m.get("libpython"):
        return "its Python has no shared libpython to start"
    abi = (_int(m.get("bridge_abi_major")), _int(m.get("bridge_abi_minor")))
    if abi[0] != LANES_ABI[0] or abi[1] is None or abi[1] < LANES_ABI[1]:
        return "its bridge speaks ABI %s.%s, lanes need %d.%d" % (
            m.get("bridge_abi_major"), m.get("bridge_abi_minor"), LANES_ABI[0], LANES_ABI[1])
    return None


def artifacts(root, order):
    """[(name, manifest)] of the artifacts under root with a readable
    manifest, in order (the build's ';'-list of names) then by name."""
    found = []
    try:
        names = os.listdir(root)
    except OSError:
        return []
    for name in names:
        try:
            m = read_manifest(os.path.join(root, name, "manifest.txt"))
        except (OSError, ValueError):
            continue
        found.append((name, m))
    ranks = {n: k for k, n in enumerate(order)}
    return sorted(found, key=lambda nm: (ranks.get(nm[0], len(ranks)), nm[0]))


def choose(root, lanes, default=None, order=None):
    """(the artifact name start_python starts, a note or None) with lanes
    asked for: libpyop's choice and its words ("starting X instead of the
    build's default D (why)", or why the default cannot run them)."""
    default = config.BUILD_ARTIFACT if default is None else default
    order = [n for n in (config.BUILD_ARTIFACTS if order is None else order).split(";") if n]
    found = artifacts(root, order)
    by_name = dict(found)
    if not lanes or default not in by_name:
        return default, None
    why = lanes_unfit(by_name[default])
    if why is None:
        return default, None
    fit = next((n for n, m in found if lanes_unfit(m) is None), None)
    if fit is not None:
        return fit, ("lanes asked for (%d): starting %s instead of the build's default %s (%s)"
                     % (lanes, fit, default, why))
    return default, ("lanes: %d asked for, but start_python starts %s, the build's default, "
                     "which cannot run them (%s)" % (lanes, default, why))
