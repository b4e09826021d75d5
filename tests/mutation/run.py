#!/usr/bin/env python3
"""Mutation check: do the tests notice a realistic bug?

Each mutant of tests/mutation/mutants.txt (a flipped comparison, an
off-by-one, a dropped check, an error path returning OK...) is applied
alone to a copy of this tree, rebuilt incrementally in a build tree of its
own, and run against the ctest tests that cover its file. A mutant some
test fails on is killed (the first failing test is named); one every test
passes is a survivor: a behaviour no test looks at. See tests/README.md,
"Mutation check".

The working tree itself is never modified: the copy (<build-dir>/tree) is
synced from it at the start of every run (only files whose content
differs are rewritten, so the build stays incremental), and a mutated file
is restored in the copy after its run, on Ctrl-C too.

A C mutant (.c, .h) that survives is run again, still applied, in a second
build of the copy under ASan+UBSan (<build-dir>/asan, as tools/test-all.sh's
asan stage: CI's suite runs it): a memory error a test reaches there kills
it (stage "asan"). --no-asan measures the release build only.

Usage examples:

  tests/mutation/run.py --check              # every snippet found once? (no build)
  tests/mutation/run.py                      # every mutant (~1-2 hours)
  tests/mutation/run.py --changed            # the files this branch changed vs main
  tests/mutation/run.py --file src/op.c      # one file's mutants
  tests/mutation/run.py 'src.manifest.*'     # mutants by id (shell-style pattern)

Needs Python 3.8+, cmake and ctest (Ninja when present); standard library
only.
"""

import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LIST = os.path.join(HERE, "mutants.txt")

AREAS = (("tools/pyop_cli/", "cli"), ("bridge/python/", "bridge"), ("bridge/", "bridge"),
         ("src/", "src"))
KEYS = ("file", "find", "replace", "after", "why", "tests", "exclude", "equivalent", "targeted")


class ListError(Exception):
    pass


# ------------------------------------------------------------------ the list


class Mutant:
    def __init__(self, mid, line):
        self.id = mid
        self.line = line
        self.fields = {}

    def get(self, key, default=None):
        return self.fields.get(key, default)

    @property
    def file(self):
        return self.fields["file"]

    @property
    def area(self):
        return area_of(self.file)

    @property
    def subarea(self):
        f = self.file
        if f.startswith("bridge/python/"):
            return "bridge (Python: pyop, ge)"
        if f.startswith("bridge/"):
            return "bridge (C)"
        return self.area


def area_of(path):
    for prefix, name in AREAS:
        if path.startswith(prefix):
            return name
    return "other"


def parse_list(path):
    """(groups {name: (tests, exclude)}, files [(glob, tests, exclude)],
    mutants [Mutant]) from the list file; ListError names the line."""
    groups, files, mutants = {}, [], []
    section = None  # (kind, name, dict)
    block_key = None
    seen = set()

    def close():
        if section is None:
            return
        kind, name, d, line = section
        if kind == "group":
            groups[name] = (d.get("tests", "").split(), d.get("exclude", "").split())
        elif kind == "files":
            files.append((name, d.get("tests", "").split(), d.get("exclude", "").split()))
        else:
            m = Mutant(name, line)
            m.fields = d
            for key in ("file", "find", "why"):
                if not d.get(key):
                    raise ListError("%s:%d: [%s] has no %s:" % (path, line, name, key))
            if "replace" not in d:
                raise ListError("%s:%d: [%s] has no replace:" % (path, line, name))
            if d["find"] == d["replace"]:
                raise ListError("%s:%d: [%s]: replace is the same as find" % (path, line, name))
            mutants.append(m)

    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for n, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if block_key is not None:
            if stripped.startswith("|"):
                # The text after "| ", its indentation kept as written.
                text = raw[raw.index("|") + 1:]
                text = text[1:] if text.startswith(" ") else text
                d = section[2]
                d[block_key] = text if d.get(block_key) is None else d[block_key] + "\n" + text
                continue
            block_key = None
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            close()
            head = stripped[1:-1].strip()
            if head.startswith("group "):
                section = ("group", head[6:].strip(), {}, n)
            elif head.startswith("files "):
                section = ("files", head[6:].strip(), {}, n)
            else:
                if not re.fullmatch(r"[A-Za-z0-9_.\-]+", head):
                    raise ListError("%s:%d: bad mutant id [%s]" % (path, n, head))
                if head in seen:
                    raise ListError("%s:%d: mutant [%s] listed twice" % (path, n, head))
                seen.add(head)
                section = ("mutant", head, {}, n)
            continue
        if raw[:1].isspace():
            raise ListError("%s:%d: an indented line that is not a `|` block line" % (path, n))
        m = re.match(r"([a-z_]+):(.*)$", raw)
        if not m or section is None:
            raise ListError("%s:%d: expected `key: value` inside a section" % (path, n))
        key, value = m.group(1), m.group(2).strip()
        if key not in KEYS:
            raise ListError("%s:%d: unknown key %r" % (path, n, key))
        if key in section[2]:
            raise ListError("%s:%d: %s given twice" % (path, n, key))
        if value == "" and key in ("find", "replace"):
            # Block lines may follow; an empty replace is a deletion.
            block_key = key
            section[2][key] = None
            continue
        section[2][key] = value
    close()
    for m in mutants:
        if m.fields.get("replace") is None:
            m.fields["replace"] = ""
        if m.fields.get("find") is None:
            raise ListError("%s:%d: [%s]: find: has no block lines" % (path, m.line, m.id))
    return groups, files, mutants


# --------------------------------------------------------- finding snippets


def _flex(snippet):
    """A regex matching snippet with any white space where it has some."""
    parts = snippet.split()
    return re.compile(r"\s+".join(re.escape(p) for p in parts))


def find_all(text, snippet):
    """Spans of snippet in text: exact occurrences, else white-space
    flexible ones."""
    spans, i = [], text.find(snippet)
    while i >= 0:
        spans.append((i, i + len(snippet)))
        i = text.find(snippet, i + 1)
    if spans:
        return spans
    return [mo.span() for mo in _flex(snippet.strip()).finditer(text)] if snippet.strip() else []


def locate(text, mutant):
    """(start, end) of the mutant's snippet in text, or (None, why)."""
    find, after = mutant.get("find"), mutant.get("after")
    base = 0
    if after:
        hits = find_all(text, after)
        if len(hits) != 1:
            return None, ("anchor (after:) %s" % ("not found" if not hits else
                                                   "found %d times" % len(hits)))
        base = hits[0][1]
        rest = find_all(text[base:], find)
        if not rest:
            return None, "snippet not found after its anchor"
        s, e = rest[0]
        return (base + s, base + e), None
    hits = find_all(text, find)
    if len(hits) != 1:
        return None, ("snippet not found" if not hits else
                      "snippet found %d times (give an after: anchor)" % len(hits))
    return hits[0], None


def mutated_text(tree, mutant):
    """(original, mutated) text of the mutant's file in tree, or raises
    ListError with the reason (and where else the snippet is)."""
    path = os.path.join(tree, mutant.file)
    if not os.path.isfile(path):
        raise ListError("file not found: %s%s" % (mutant.file, _elsewhere(tree, mutant)))
    with open(path, encoding="utf-8") as f:
        text = f.read()
    span, why = locate(text, mutant)
    if span is None:
        raise ListError("%s in %s%s" % (why, mutant.file,
                                        _elsewhere(tree, mutant) if "not found" in why else ""))
    new = text[:span[0]] + mutant.get("replace") + text[span[1]:]
    if mutant.file.endswith(".py"):
        try:
            compile(new, mutant.file, "exec")
        except SyntaxError as e:
            raise ListError("the mutated %s does not compile: %s (line %s)"
                            % (mutant.file, e.msg, e.lineno))
    return text, new


def _elsewhere(tree, mutant):
    """' (found in X: update its file:)' when the snippet is, once, in
    another file of the same top directory (a file split or renamed)."""
    top = mutant.file.split("/")[0]
    ext = os.path.splitext(mutant.file)[1]
    found = []
    for root, dirs, names in os.walk(os.path.join(tree, top)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            if not name.endswith(ext):
                continue
            p = os.path.join(root, name)
            rel = os.path.relpath(p, tree)
            if rel == mutant.file:
                continue
            try:
                with open(p, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                continue
            if locate(text, mutant)[0] is not None:
                found.append(rel)
    if not found:
        return " (nowhere else in %s/ either)" % top
    return " (found in %s: update its file:)" % ", ".join(sorted(found))


# ------------------------------------------------------------------ the copy


def tree_files(tree):
    """The tree's source files (relative paths): git's tracked and
    untracked-not-ignored files, else a walk without build*/ and .git."""
    try:
        out = subprocess.run(["git", "-C", tree, "ls-files", "-co", "--exclude-standard", "-z"],
                             capture_output=True, check=True, timeout=120).stdout
        names = [n.decode("utf-8", "surrogateescape") for n in out.split(b"\0") if n]
        return sorted(n for n in names if os.path.isfile(os.path.join(tree, n)))
    except (OSError, subprocess.SubprocessError):
        pass
    names = []
    for root, dirs, files in os.walk(tree):
        rel_root = os.path.relpath(root, tree)
        dirs[:] = [d for d in dirs if not (d.startswith("build") and rel_root == ".")
                   and d not in (".git", "__pycache__")]
        names.extend(os.path.normpath(os.path.join(rel_root, f)) for f in files)
    return sorted(names)


def same_content(a, b):
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def sync_copy(tree, copy):
    """Makes copy hold exactly tree's source files. A file is rewritten
    (with the current time, so the build notices) only when its content
    differs; returns how many were written and removed."""
    files = tree_files(tree)
    wanted = set(files)
    written = removed = 0
    for rel in files:
        src, dst = os.path.join(tree, rel), os.path.join(copy, rel)
        if not same_content(src, dst):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.exists(dst):
                os.unlink(dst)
            shutil.copyfile(src, dst)
            written += 1
        if (os.stat(src).st_mode & 0o7777) != (os.stat(dst).st_mode & 0o7777):
            shutil.copymode(src, dst)
    for root, dirs, names in os.walk(copy, topdown=False):
        for name in names:
            rel = os.path.relpath(os.path.join(root, name), copy)
            if rel not in wanted and "__pycache__" not in rel.split(os.sep):
                os.unlink(os.path.join(root, name))
                removed += 1
        if root != copy and not os.listdir(root):
            os.rmdir(root)
    return written, removed


def write_text(path, text):
    """Rewrites path (new mtime: the build sees the change)."""
    tmp = path + ".mutation-tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    shutil.copymode(path, tmp)
    os.replace(tmp, path)


# ------------------------------------------------------------- processes


class Interrupted(Exception):
    pass


def run_logged(cmd, log, cwd=None, timeout=None, env=None):
    """Runs cmd in its own process group with output to log; (rc, seconds,
    timed_out). The group is killed on timeout or interruption."""
    t0 = time.monotonic()
    with open(log, "w") as out:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True, env=env)
        try:
            rc = p.wait(timeout=timeout)
            return rc, time.monotonic() - t0, False
        except subprocess.TimeoutExpired:
            _kill(p)
            return -1, time.monotonic() - t0, True
        except BaseException:
            _kill(p)
            raise


def _kill(p):
    try:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    except ProcessLookupError:
        pass


def tail(path, n=15, pattern=None):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    if pattern:
        hits = [l for l in lines if re.search(pattern, l)]
        if hits:
            return "\n".join(hits[:n])
    return "\n".join(lines[-n:])


# ------------------------------------------------------------------ build


# The ASan stage mirrors tools/test-all.sh's run_asan: a Debug build with
# -DPYOP_SANITIZE=ON, these options, and every covering test but those
# labelled no-asan.
ASAN_ENV = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
NO_ASAN_LABEL = "no-asan"


class Build:
    """One build of the copy: stage "release" (BUILD/build, RelWithDebInfo)
    or "asan" (BUILD/asan, Debug, -DPYOP_SANITIZE=ON, run under ASAN_ENV)."""

    def __init__(self, args, tree, stage="release"):
        self.tree = tree
        self.stage = stage
        self.dir = os.path.abspath(args.build_dir or os.path.join(tree, "build", "mutation"))
        self.copy = os.path.join(self.dir, "tree")
        self.build = os.path.join(self.dir, "build" if stage == "release" else "asan")
        self.logs = os.path.join(self.dir, "logs")
        self.jobs = args.jobs
        self.cmake_args = args.cmake_arg or []
        # ".asan" in the names of this stage's logs (<id>.asan.build.log...).
        self.tag = "" if stage == "release" else "." + stage
        self.env = None if stage == "release" else dict(os.environ, **ASAN_ENV)
        os.makedirs(self.logs, exist_ok=True)

    def configure(self):
        if os.path.isfile(os.path.join(self.build, "CMakeCache.txt")):
            return
        cmd = ["cmake", "-S", self.copy, "-B", self.build]
        if self.stage == "release":
            cmd += ["-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
        else:
            cmd += ["-DCMAKE_BUILD_TYPE=Debug", "-DPYOP_SANITIZE=ON"]
        cmd += ["-DPYOP_WERROR=OFF"]
        if shutil.which("ninja"):
            cmd += ["-G", "Ninja"]
        cmd += self.cmake_args
        log = os.path.join(self.logs, "configure%s.log" % self.tag)
        rc, _, _ = run_logged(cmd, log)
        if rc != 0:
            raise BuildError("configuring %s failed (see %s):\n%s"
                             % (self.build, log, tail(log)))

    def make(self, log, timeout):
        """(ok, seconds, first error lines)."""
        rc, secs, timed_out = run_logged(
            ["cmake", "--build", self.build, "-j", str(self.jobs)], log, timeout=timeout)
        if timed_out:
            return False, secs, "build timed out after %.0f s" % secs
        return rc == 0, secs, "" if rc == 0 else tail(log, 6, r"error|Error|FAILED")

    def tests(self):
        """{ctest name: set of labels}, in ctest order."""
        out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=self.build,
                             capture_output=True, text=True, check=True, timeout=300).stdout
        got = {}
        for t in json.loads(out).get("tests", []):
            labels = set()
            for p in t.get("properties", []):
                if p.get("name") == "LABELS":
                    labels.update(p.get("value") or [])
            got[t["name"]] = labels
        return got

    def test_names(self):
        return list(self.tests())


class BuildError(Exception):
    pass


# "  3/9 Test  #12: unit.test_x ....   Passed    0.21 sec", "...***Failed",
# "***Timeout", "***Skipped", "***Exception: SegFault", "***Not Run".
_RESULT = re.compile(r"Test\s+#\d+:\s+(\S+)\s+\.*\s*(\*{3})?(\S.*?)\s+([\d.]+)\s+sec\s*$")


def ctest_regex(names):
    esc = [re.sub(r"([.+*?()\[\]{}|^$\\])", r"\\\1", n) for n in names]
    return "^(%s)$" % "|".join(esc)


def run_ctest(build, names, log, jobs, timeout, stop):
    """{test: (status, seconds)} of running names; status "Passed",
    "Skipped" or a failure word; (results, timed_out, seconds)."""
    cmd = ["ctest", "-R", ctest_regex(names), "-j", str(jobs), "--output-on-failure",
           "--timeout", str(max(60, int(timeout)))]
    if stop:
        cmd.append("--stop-on-failure")
    # Without cost data ctest starts tests in the order they are declared
    # (the fast unit tests first), not the slowest first.
    cost = os.path.join(build.build, "Testing", "Temporary", "CTestCostData.txt")
    if os.path.exists(cost):
        os.unlink(cost)
    rc, secs, timed_out = run_logged(cmd, log, cwd=build.build, timeout=timeout, env=build.env)
    results = {}
    with open(log, errors="replace") as f:
        for line in f:
            m = _RESULT.search(line)
            if m:
                status = m.group(3).strip()
                results[m.group(1)] = ("Passed" if status == "Passed" else
                                       "Skipped" if status.startswith("Skipped") else status,
                                       float(m.group(4)))
    if rc != 0 and not timed_out and not any(s not in ("Passed", "Skipped")
                                             for s, _ in results.values()):
        # ctest failed without a failing test line (it could not run):
        # every test that did not report is counted as failed.
        for n in names:
            results.setdefault(n, ("Not Run", 0.0))
    return results, timed_out, secs


def run_phases(b, m, tests, log, budget, stop):
    """Runs a mutant's tests: first those named after its file (unit.test_
    manifest for src/manifest.c: the likely killers, seconds), then, unless
    one failed and stop, the rest. (results, timed_out, seconds)."""
    stem = os.path.splitext(os.path.basename(m.file))[0].lstrip("_")
    first = [n for n in tests if stem and stem in n]
    rest = [n for n in tests if n not in first]
    got, t_out, secs = {}, False, 0.0
    for k, part in enumerate(p for p in (first, rest) if p):
        r, t_out, s = run_ctest(b, part, "%s%s.ctest%d.log" % (log, b.tag, k + 1), b.jobs,
                                max(30.0, budget - secs), stop)
        got.update(r)
        secs += s
        if t_out or (stop and any(v[0] not in ("Passed", "Skipped") for v in r.values())):
            break
    return got, t_out, secs


# -------------------------------------------------------------- selection


def resolve_tests(mutant, groups, files, all_names):
    """The ctest names that cover mutant (its tests:, else its file's
    [files] section), in ctest order."""
    tokens = mutant.get("tests", "").split()
    excludes = mutant.get("exclude", "").split()
    if not tokens:
        for glob, tests, exclude in files:
            if fnmatch.fnmatch(mutant.file, glob):
                tokens, excludes = tests, excludes + exclude
                break
    if not tokens:
        raise ListError("no [files] section matches %s and it has no tests:" % mutant.file)
    inc, exc = [], [re.compile(x) for x in excludes]
    for t in tokens:
        if t.startswith("@"):
            if t[1:] not in groups:
                raise ListError("unknown test group %s" % t)
            g_inc, g_exc = groups[t[1:]]
            inc.append(([re.compile(x) for x in g_inc], [re.compile(x) for x in g_exc]))
        else:
            inc.append(([re.compile(t)], []))
    out = []
    for n in all_names:
        if any(any(r.search(n) for r in rs) and not any(x.search(n) for x in xs)
               for rs, xs in inc) and not any(x.search(n) for x in exc):
            out.append(n)
    return out


def changed_files(tree, base):
    def git(*a):
        return subprocess.run(["git", "-C", tree] + list(a), capture_output=True, text=True,
                              timeout=120)
    r = git("rev-parse", "--verify", "-q", base)
    if r.returncode != 0:
        raise SystemExit("mutation: --changed %s: no such revision" % base)
    mb = git("merge-base", base, "HEAD").stdout.strip() or base
    names = set()
    for a in (("diff", "--name-only", mb, "HEAD"), ("diff", "--name-only"),
              ("diff", "--name-only", "--cached"),
              ("ls-files", "--others", "--exclude-standard")):
        names.update(l for l in git(*a).stdout.splitlines() if l)
    return names


# ------------------------------------------------------------ the stages


def is_c(m):
    """A mutant of C code (src/, bridge/: .c or .h): the ASan stage's."""
    return m.file.endswith((".c", ".h"))


def judge(res, tests, got, t_out, budget):
    """Sets res's status (killed or survived), killer and detail from one
    stage's run of tests."""
    failed = [n for n in tests if n in got and got[n][0] not in ("Passed", "Skipped")]
    res["killer"] = res["detail"] = None
    if failed:
        # A test that failed (or crashed) before the run ran out of time is
        # the killer, not the clock.
        res["status"], res["killer"] = "killed", failed[0]
        said = ["also " + ", ".join(failed[1:])] if len(failed) > 1 else []
        if t_out:
            said.append("then the tests ran past their budget (%.0f s)" % budget)
        if said:
            res["detail"] = "; ".join(said)
    elif t_out:
        res["status"] = "killed"
        res["killer"] = "timeout (%.0f s)" % budget
        res["detail"] = "tests ran past their budget; none failed before"
    else:
        res["status"] = "survived"


class AsanStage:
    """The ASan build (BUILD/asan) and its unmutated baseline, made the
    first time a C survivor needs them (prepare: the copy must then be
    unmutated)."""

    BASELINE_BUDGET = 7200  # ASan runs the tests about 2-3x slower

    def __init__(self, args, tree, groups, files, mutants):
        self.b = Build(args, tree, "asan")
        self.groups, self.files = groups, files
        self.mutants = mutants
        self.ready = False
        self.error = None
        self.cover, self.base, self.usable, self.broken = {}, {}, set(), None
        self.seconds = None

    def prepare(self):
        """True when the stage can run; tried once."""
        if self.ready or self.error:
            return self.ready
        t0 = time.monotonic()
        print("mutation: asan stage: first C survivor; building the unmutated copy in %s"
              % self.b.build, flush=True)
        try:
            self.b.configure()
        except BuildError as e:
            self.error = str(e)
            print("mutation: asan stage off: %s" % e, flush=True)
            return False
        ok, bsecs, err = self.b.make(os.path.join(self.b.logs, "baseline.asan.build.log"),
                                     3600)
        if not ok:
            self.error = "the unmutated tree does not build under asan:\n%s" % err
            print("mutation: asan stage off: %s" % self.error, flush=True)
            return False
        tests = self.b.tests()
        covering = set()
        for m in self.mutants:
            try:
                got = resolve_tests(m, self.groups, self.files, list(tests))
            except ListError:
                got = []
            covering.update(got)
            self.cover[m.id] = [n for n in got if NO_ASAN_LABEL not in tests[n]]
        union = [n for n in tests if n in covering and NO_ASAN_LABEL not in tests[n]]
        no_asan = [n for n in covering if NO_ASAN_LABEL in tests[n]]
        base, timed_out, tsecs = run_ctest(
            self.b, union, os.path.join(self.b.logs, "baseline.asan.ctest.log"), self.b.jobs,
            self.BASELINE_BUDGET, stop=False)
        if timed_out:
            self.error = "the asan baseline tests ran past %d s" % self.BASELINE_BUDGET
            print("mutation: asan stage off: %s" % self.error, flush=True)
            return False
        self.base = base
        self.broken = sorted(n for n, (s, _) in base.items() if s not in ("Passed", "Skipped"))
        missing = sorted(n for n in union if n not in base)
        self.usable = set(n for n in union if n in base and n not in self.broken)
        print("mutation: asan baseline build %.0f s, tests %.0f s: %d tests (%d covering "
              "ones labelled %s left out), %d fail unmutated%s%s" % (
                  bsecs, tsecs, len(union), len(no_asan), NO_ASAN_LABEL,
                  len(self.broken),
                  (" (left out: %s)" % ", ".join(self.broken)) if self.broken else "",
                  (" (%d did not report: %s)" % (len(missing), ", ".join(missing)))
                  if missing else ""), flush=True)
        self.ready = True
        self.seconds = round(time.monotonic() - t0, 1)
        return True


def asan_stage(asan, m, res, path, original, new, log, stop):
    """Runs a C mutant that survived release under ASan+UBSan (the copy
    holds it): KILLED with stage "asan" when a test fails there."""
    if not asan.ready and not asan.error:
        # The baseline is of the unmutated copy.
        write_text(path, original)
        asan.prepare()
        write_text(path, new)
    if not asan.ready:
        res["asan"] = "unavailable"
        res["detail"] = "asan stage not run (%s)" % asan.error.splitlines()[0]
        return
    tests = [n for n in asan.cover.get(m.id, []) if n in asan.usable]
    res["asan_tests"] = len(tests)
    if not tests:
        res["asan"] = "no-test"
        res["detail"] = "no usable test covers it under asan"
        return
    ok, res["asan_build_s"], err = asan.b.make(log + ".asan.build.log", 1800)
    if not ok:
        # Built in release, not under asan: not a kill; the release verdict
        # (survived) stands, reported as stillborn-asan.
        res["asan"] = "stillborn"
        lines = (err or "").splitlines() or ["build failed"]
        res["asan_detail"] = next((l for l in lines if "error" in l), lines[0]).strip()
        return
    budget = sum(asan.base[n][1] for n in tests) * 3 / asan.b.jobs + 120
    got, t_out, res["asan_test_s"] = run_phases(asan.b, m, tests, log, budget, stop)
    judge(res, tests, got, t_out, budget)
    res["stage"] = "asan"
    res["asan"] = res["status"]


# ----------------------------------------------------------------- report


def summary(results, out=sys.stdout):
    """Per area: the counts, the kill rate, and (column asan) how many of the
    kills came from the asan stage: killed - asan is the release-only count."""
    rows = {}
    for r in results:
        for key in (r["area"], r["subarea"]) if r["subarea"] != r["area"] else (r["area"],):
            rows.setdefault(key, []).append(r)
    order = ["src", "bridge", "bridge (C)", "bridge (Python: pyop, ge)", "cli", "other"]
    keys = sorted(rows, key=lambda k: order.index(k) if k in order else 99)
    head = "%-27s %4s %6s %4s %8s %5s %9s %6s  %-7s %s" % (
        "area", "all", "killed", "asan", "survived", "equiv", "stillborn", "!found", "killed%",
        "killed% (not targeted)")
    print(head, file=out)
    for k in keys:
        rs = rows[k]
        c = {s: sum(1 for r in rs if r["status"] == s)
             for s in ("killed", "survived", "equivalent", "stillborn", "not-found")}
        by_asan = sum(1 for r in rs if r["status"] == "killed" and r.get("stage") == "asan")
        nt = [r for r in rs if not r["targeted"]]
        kn = sum(1 for r in nt if r["status"] == "killed")
        sn = sum(1 for r in nt if r["status"] == "survived")
        an = sum(1 for r in nt if r["status"] == "killed" and r.get("stage") == "asan")
        print("%-27s %4d %6d %4d %8d %5d %9d %6d  %-7s %s" % (
            k, len(rs), c["killed"], by_asan, c["survived"], c["equivalent"], c["stillborn"],
            c["not-found"], _pct(c["killed"], c["killed"] + c["survived"]),
            "%s (%d of %d%s)" % (_pct(kn, kn + sn), kn, kn + sn,
                                 "; %d by asan" % an if an else "")), file=out)


def _pct(a, b):
    return "%.0f%%" % (100.0 * a / b) if b else "-"


# ------------------------------------------------------------------- main


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See tests/README.md, \"Mutation check\".")
    ap.add_argument("ids", nargs="*", help="mutant ids or shell-style patterns (default: all)")
    ap.add_argument("--list-file", default=DEFAULT_LIST, help="the mutant list (%(default)s)")
    ap.add_argument("--tree", default=os.path.dirname(os.path.dirname(HERE)),
                    help="the source tree (default: the one holding this script)")
    ap.add_argument("--build-dir", help="copy and build tree (default: TREE/build/mutation)")
    ap.add_argument("--file", action="append", help="only mutants of this file (repeatable)")
    ap.add_argument("--area", action="append", choices=("src", "bridge", "cli"),
                    help="only mutants of this area (repeatable)")
    ap.add_argument("--changed", nargs="?", const="main", metavar="BASE",
                    help="only mutants of files changed since the merge base with BASE "
                         "(default main), including uncommitted and untracked files")
    ap.add_argument("--survivors", metavar="RESULTS_JSON",
                    help="only the mutants that survived in an earlier run's results")
    ap.add_argument("--list", action="store_true", help="list the selected mutants and exit")
    ap.add_argument("--check", action="store_true",
                    help="only check that every selected snippet is found once (no build)")
    ap.add_argument("--verify-equivalent", action="store_true",
                    help="also run the mutants marked equivalent (they must survive)")
    ap.add_argument("--no-asan", action="store_true",
                    help="release build only: do not run C survivors again under "
                         "ASan+UBSan (BUILD/asan, as tools/test-all.sh's asan stage)")
    ap.add_argument("--all-killers", action="store_true",
                    help="run every covering test (name all the killers), not up to the first")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="build and ctest jobs (2)")
    ap.add_argument("--cmake-arg", action="append", help="extra argument for the first configure")
    ap.add_argument("--json", help="also write the results here (always: BUILD/results.json)")
    ap.add_argument("--fail-under", type=float, metavar="PCT",
                    help="exit 1 when an area kills less than PCT%% of its non-equivalent "
                         "mutants")
    args = ap.parse_args(argv)
    tree = os.path.abspath(args.tree)

    try:
        groups, files, mutants = parse_list(args.list_file)
    except (OSError, ListError) as e:
        raise SystemExit("mutation: %s" % e)
    sel = mutants
    if args.ids:
        sel = [m for m in sel if any(fnmatch.fnmatchcase(m.id, p) for p in args.ids)]
    if args.file:
        want = {os.path.normpath(f) for f in args.file}
        sel = [m for m in sel if os.path.normpath(m.file) in want]
    if args.area:
        sel = [m for m in sel if m.area in args.area]
    if args.changed:
        changed = changed_files(tree, args.changed)
        sel = [m for m in sel if m.file in changed]
    if args.survivors:
        with open(args.survivors) as f:
            alive = {r["id"] for r in json.load(f)["mutants"] if r["status"] == "survived"}
        sel = [m for m in sel if m.id in alive]
    if not sel:
        print("mutation: no mutant selected")
        return 0

    if args.list or args.check:
        bad = 0
        for m in sel:
            try:
                mutated_text(tree, m)
                state = "ok"
            except ListError as e:
                state, bad = str(e), bad + 1
            flags = ("equivalent " if m.get("equivalent") else "") + \
                    ("targeted " if m.get("targeted") else "")
            if args.list or state != "ok":
                print("%-48s %-28s %s%s" % (m.id, m.file, flags, state))
        if args.check:
            print("%d mutants, %d whose snippet is not found once" % (len(sel), bad))
        return 1 if bad else 0

    b = Build(args, tree)
    started = time.monotonic()
    print("mutation: %d mutants; copy of %s in %s" % (len(sel), tree, b.copy), flush=True)
    os.makedirs(b.copy, exist_ok=True)
    w, r = sync_copy(tree, b.copy)
    print("mutation: copy synced (%d files written, %d removed)" % (w, r), flush=True)
    try:
        b.configure()
    except BuildError as e:
        raise SystemExit("mutation: %s" % e)
    ok, secs, err = b.make(os.path.join(b.logs, "baseline.build.log"), 3600)
    if not ok:
        raise SystemExit("mutation: the unmutated tree does not build:\n%s" % err)
    print("mutation: baseline build %.0f s" % secs, flush=True)
    names = b.test_names()
    cover = {}
    for m in sel:
        try:
            cover[m.id] = resolve_tests(m, groups, files, names)
        except ListError as e:
            raise SystemExit("mutation: [%s]: %s" % (m.id, e))
    union = [n for n in names if any(n in c for c in cover.values())]
    base, timed_out, secs = run_ctest(b, union, os.path.join(b.logs, "baseline.ctest.log"),
                                      b.jobs, 3600, stop=False)
    broken = sorted(n for n, (s, _) in base.items() if s not in ("Passed", "Skipped"))
    missing = sorted(n for n in union if n not in base)
    if timed_out:
        raise SystemExit("mutation: the baseline tests timed out")
    print("mutation: baseline tests %.0f s: %d tests, %d fail unmutated%s%s" % (
        secs, len(union), len(broken), (" (left out: %s)" % ", ".join(broken)) if broken else "",
        (" (%d did not report: %s)" % (len(missing), ", ".join(missing))) if missing else ""),
        flush=True)
    usable = set(n for n in union if n in base and n not in broken)

    # The ASan stage (tools/test-all.sh's run_asan): a C mutant that every
    # release test passes is built again in BUILD/asan and run against its
    # covering tests there. Its unmutated baseline is made the first time a
    # survivor needs it.
    asan = None if args.no_asan else AsanStage(args, tree, groups, files,
                                               [m for m in sel if is_c(m)])
    if asan is not None and asan.mutants:
        print("mutation: asan stage on for C survivors (%s; --no-asan: release only)"
              % asan.b.build, flush=True)

    results = []
    current = {"path": None, "text": None, "res": None}

    def on_signal(signum, frame):
        raise Interrupted()
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    interrupted = False
    try:
        for k, m in enumerate(sel, 1):
            res = {"id": m.id, "file": m.file, "area": m.area, "subarea": m.subarea,
                   "why": m.get("why"), "targeted": bool(m.get("targeted")),
                   "equivalent": m.get("equivalent"), "killer": None, "detail": None,
                   "stage": None, "asan": None, "build_s": 0.0, "test_s": 0.0}
            results.append(res)
            tests = [n for n in cover[m.id] if n in usable]
            if m.get("equivalent") and not args.verify_equivalent:
                res["status"] = "equivalent"
                _line(k, len(sel), res)
                continue
            try:
                original, new = mutated_text(b.copy, m)
            except ListError as e:
                res["status"], res["detail"] = "not-found", str(e)
                _line(k, len(sel), res)
                continue
            if not tests:
                res["status"], res["detail"] = "survived", "no usable test covers it"
                _line(k, len(sel), res)
                continue
            path = os.path.join(b.copy, m.file)
            current["path"], current["text"], current["res"] = path, original, res
            try:
                write_text(path, new)
                log = os.path.join(b.logs, m.id)
                ok, res["build_s"], err = b.make(log + ".build.log", 1800)
                if not ok:
                    res["status"], res["detail"] = "stillborn", err
                else:
                    budget = sum(base[n][1] for n in tests) * 3 / b.jobs + 120
                    got, t_out, res["test_s"] = run_phases(b, m, tests, log, budget,
                                                           not args.all_killers)
                    judge(res, tests, got, t_out, budget)
                    res["stage"] = "release"
                    if res["status"] == "survived" and asan is not None and is_c(m):
                        asan_stage(asan, m, res, path, original, new, log,
                                   not args.all_killers)
                    if res["status"] == "survived" and m.get("equivalent"):
                        res["detail"] = "; ".join(filter(None, [
                            "equivalent, as the list says", res["detail"]]))
                    if m.get("equivalent") and res["status"] == "killed":
                        res["detail"] = "marked equivalent, but %s kills it%s" % (
                            res["killer"], " (asan)" if res["stage"] == "asan" else "")
            finally:
                write_text(path, original)
                current["path"] = None
            res["tests"] = len(tests)
            current["res"] = None
            _line(k, len(sel), res)
    except (KeyboardInterrupt, Interrupted):
        interrupted = True
        if current["path"]:
            write_text(current["path"], current["text"])
        # The mutant in progress has no verdict (its release one, when the
        # asan stage was interrupted, is not the whole of it).
        results = [r for r in results if "status" in r and r is not current["res"]]
        print("\nmutation: interrupted; the copy is restored", flush=True)
    finally:
        for s, h in old.items():
            signal.signal(s, h)

    total = time.monotonic() - started
    print("\nmutation: %d mutants in %.0f s (%.1f min)\n" % (len(results), total, total / 60))
    summary(results)
    surv = [r for r in results if r["status"] == "survived"]
    if surv:
        print("\nsurvivors (behaviours no covering test looks at):")
        for r in surv:
            print("  %-46s %s%s%s" % (r["id"], r["why"], " [targeted]" if r["targeted"] else "",
                                      " [stillborn-asan]" if r["asan"] == "stillborn" else ""))
    odd = [r for r in results if r["status"] in ("not-found", "stillborn")]
    odd_asan = [r for r in results if r["asan"] == "stillborn"]
    if odd or odd_asan:
        print("\nnot run:")
        for r in odd:
            print("  %-46s %s: %s" % (r["id"], r["status"], (r["detail"] or "").splitlines()[0]
                                      if r["detail"] else ""))
        for r in odd_asan:
            print("  %-46s stillborn-asan (survived release; counted survived): %s"
                  % (r["id"], r["asan_detail"]))
    if asan is not None and asan.error:
        print("\nmutation: the asan stage did not run: %s" % asan.error)
    doc = {"tree": tree, "seconds": round(total, 1), "baseline_failures": broken,
           "asan_stage": asan is not None,
           "asan_baseline_failures": asan.broken if asan is not None else None,
           "asan_error": asan.error if asan is not None else None,
           "asan_baseline_s": asan.seconds if asan is not None else None,
           "interrupted": interrupted, "mutants": results}
    for p in filter(None, [os.path.join(b.dir, "results.json"), args.json]):
        with open(p, "w") as f:
            json.dump(doc, f, indent=1)
    print("\nresults: %s" % os.path.join(b.dir, "results.json"))
    if interrupted:
        return 130
    if args.fail_under is not None:
        for area in ("src", "bridge", "cli"):
            rs = [r for r in results if r["area"] == area]
            k = sum(1 for r in rs if r["status"] == "killed")
            s = sum(1 for r in rs if r["status"] == "survived")
            if k + s and 100.0 * k / (k + s) < args.fail_under:
                return 1
    return 1 if odd or odd_asan or (asan is not None and asan.error) else 0


def _line(k, n, r):
    st = r["status"].upper()
    extra = r["killer"] or ""
    if r["status"] == "killed" and r.get("stage") == "asan":
        st, extra = "KILLED (asan)", "by " + r["killer"]
    if r["status"] in ("not-found", "stillborn"):
        extra = (r["detail"] or "").splitlines()[0] if r["detail"] else ""
    elif r["status"] == "equivalent":
        extra = "(not run) " + (r["equivalent"] or "")[:60]
    elif r["status"] == "survived":
        extra = "; ".join(filter(None, [
            {"survived": "release and asan",
             "stillborn": "release; stillborn-asan: %s" % r.get("asan_detail")}.get(
                r.get("asan")), r.get("detail")]))
    if r["status"] == "killed" and r.get("detail") and r.get("stage") == "asan":
        extra += " (" + r["detail"] + ")"
    times = ""
    if r["build_s"] or r["test_s"]:
        times = " (build %.0f s, tests %.0f s" % (r["build_s"], r["test_s"])
        if r.get("asan_build_s") is not None:
            times += "; asan build %.0f s, tests %.0f s" % (r["asan_build_s"],
                                                          r.get("asan_test_s") or 0.0)
        times += ")"
    print("[%3d/%d] %-13s %-46s %s%s" % (k, n, st, r["id"], extra, times), flush=True)


if __name__ == "__main__":
    sys.exit(main())
