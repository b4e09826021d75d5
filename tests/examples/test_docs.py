"""The docs' ops and commands as written: what a reader pastes must work.

Each complete op of README.md and docs/*.md (DOC_OPS, one row per op) is
extracted as written -- the first ```python block under its heading, saved
under the file name and directory the block and the section's ```sh block
give -- then `pyop check` must pass it, and every `pyop run` command of that
sh block must print what the comment after it says. A complete op (a block
that imports, has both register_op and register_op_impl and no `...`) that
no row names fails the test, so a new example cannot escape it.

The README's documented --json schemas ("The pyop command") are parsed
from the README and held to what each command prints: every member the
README names is present in the output (an optional one in some case),
and every member printed is named (so the two cannot drift apart again).

Driven by ctest (tests/examples/CMakeLists.txt):

  PYOP_TEST_CLI    the build tree's bin/pyop
  PYOP_TEST_OPS    examples/ops
  PYOP_TEST_ROOT   the source tree

Needs only the standard library.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

ENV = os.environ

# (document, heading of the section): the complete ops of the docs.
DOC_OPS = [
    ("README.md", "## A Python op"),
    ("docs/op-author-guide.md", "## The shortest complete op"),
    ("docs/ge-plugins.md", "## Reading shapes, samples and the execute context"),
    ("docs/ge-plugins.md", "### A HOST kernel"),
]

# How the docs spell the command: replaced by the build's bin/pyop.
PYOP_SPELLINGS = ("build/quick/install/bin/pyop", "pyop")


def _need(name):
    value = ENV.get(name)
    if not value:
        raise unittest.SkipTest("%s is not set (run through ctest)" % name)
    return value


def run_pyop(cli, args, opp):
    """bin/pyop ARGS with ASCEND_CUSTOM_OPP_PATH=opp, under its own Python."""
    env = dict(ENV, PYTHONDONTWRITEBYTECODE="1", ASCEND_CUSTOM_OPP_PATH=opp)
    env.pop("PYOP_PYTHON", None)
    return subprocess.run([cli] + args, capture_output=True, text=True, env=env, timeout=600)


def read_doc(root, doc):
    with open(os.path.join(root, doc), encoding="utf-8") as f:
        return f.read()


def section(text, heading):
    """The text of the section that starts with the line `heading`, up to
    the next heading of the same or a higher level (outside code blocks,
    where `# ...` is a comment)."""
    level = len(heading) - len(heading.lstrip("#"))
    lines, out, inside, fenced = text.splitlines(keepends=True), None, False, False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,%d} " % level, line):
            if inside:
                break
            inside = line.rstrip() == heading
            if inside:
                out = []
            continue
        if inside:
            out.append(line)
    if out is None:
        raise AssertionError("no heading %r" % heading)
    return "".join(out)


def blocks(text, lang):
    """The ```lang blocks of text, in order."""
    return re.findall(r"(?ms)^```%s\n(.*?)^```\s*$" % re.escape(lang), text)


def sh_commands(block):
    """(command, expected) for each command of an sh block: continuation
    lines joined; expected is the comment after the command (on its last
    line, or the next line when that is a comment alone), or None."""
    lines = block.splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [line]
        while parts[-1].rstrip().endswith("\\") and i < len(lines):
            parts[-1] = parts[-1].rstrip()[:-1]
            parts.append(lines[i])
            i += 1
        cmd, expected = " ".join(p.strip() for p in parts), None
        if " # " in cmd:
            cmd, expected = cmd.split(" # ", 1)
        elif i < len(lines) and lines[i].startswith("# "):
            expected = lines[i][2:]
            i += 1
        out.append((cmd.strip(), expected.strip() if expected else None))
    return out


def doc_op(root, doc, heading):
    """(plugin file name, plugin directory name, source, sh commands) of a
    documented op: the file from the block's first comment line
    (`# ops/scaled_add.py`) or its ASCEND_CUSTOM_OPP_PATH, the directory
    from the `export ASCEND_CUSTOM_OPP_PATH=$PWD/<dir>` of the section."""
    sec = section(read_doc(root, doc), heading)
    py = blocks(sec, "python")
    if not py:
        raise AssertionError("%s, %r: no ```python block" % (doc, heading))
    source = py[0]
    first = source.splitlines()[0]
    m = re.match(r"#\s*(?:(\S+)/)?(\w+\.py)\b", first)
    if not m:
        raise AssertionError("%s, %r: the block's first line names no file "
                             "(# dir/name.py): %r" % (doc, heading, first))
    cmds = [c for b in blocks(sec, "sh") for c in sh_commands(b)]
    dirname = m.group(1)
    for cmd, _ in cmds:
        e = re.match(r"export ASCEND_CUSTOM_OPP_PATH=\$PWD/(\S+)$", cmd)
        if e:
            dirname = e.group(1)
    return m.group(2), dirname or "ops", source, cmds


def complete_ops(root):
    """(document, first line) of every ```python block of the docs that is a
    complete op: it imports, registers a prototype and an implementation
    (pyop's or GE's decorators) and elides nothing (a fragment without its
    imports is an illustration, not a file to paste)."""
    found = []
    docs = ["README.md"] + ["docs/" + f for f in sorted(os.listdir(os.path.join(root, "docs")))
                            if f.endswith(".md")]
    for doc in docs:
        for b in blocks(read_doc(root, doc), "python"):
            if ("register_op(" in b and "register_op_impl(" in b and "..." not in b
                    and re.search(r"(?m)^(import|from) ", b)):
                found.append((doc, b.splitlines()[0]))
    return found


class DocOpsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cli = _need("PYOP_TEST_CLI")
        cls.root = _need("PYOP_TEST_ROOT")
        cls.tmp = tempfile.mkdtemp(prefix="pyop-docs-test-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pyop(self, args, opp):
        return run_pyop(self.cli, args, opp)

    def test_every_complete_op_of_the_docs_is_tested(self):
        tested = set()
        for doc, heading in DOC_OPS:
            src = doc_op(self.root, doc, heading)[2]
            tested.add((doc, src.splitlines()[0]))
        untested = [x for x in complete_ops(self.root) if x not in tested]
        self.assertEqual(untested, [], "complete ops of the docs missing from DOC_OPS")
        self.assertGreaterEqual(len(tested), len(DOC_OPS))

    def test_doc_ops_pass_check_and_run_as_documented(self):
        for doc, heading in DOC_OPS:
            with self.subTest(doc=doc, heading=heading):
                self.check_doc_op(doc, heading)

    def check_doc_op(self, doc, heading):
        name, dirname, source, cmds = doc_op(self.root, doc, heading)
        where = "%s, %s" % (doc, heading)
        d = os.path.join(self.tmp, re.sub(r"\W", "_", where), dirname)
        os.makedirs(d)
        with open(os.path.join(d, name), "w") as f:
            f.write(source)
        r = self.pyop(["check"], d)
        self.assertEqual(r.returncode, 0, "%s: pyop check of the op as written:\n%s%s"
                         % (where, r.stdout, r.stderr))
        self.assertRegex(r.stdout, r"(?m)^\S+ +ok \(")
        self.assertNotRegex(r.stdout, r"(?m)^\S+ +(failed|inconclusive)")
        runs = [(c, e) for c, e in cmds if re.match(r"(\S*/)?pyop run ", c)]
        self.assertTrue(runs, "%s: no `pyop run` command" % where)
        for cmd, expected in runs:
            self.assertIsNotNone(expected, "%s: `%s` says nothing of its output" % (where, cmd))
            argv = shlex.split(cmd)
            self.assertIn(argv[0], PYOP_SPELLINGS, cmd)
            r = self.pyop(argv[1:], d)
            self.assertEqual(r.returncode, 0, "%s: `%s`:\n%s%s" % (where, cmd, r.stdout, r.stderr))
            self.assertIn(expected, r.stdout.splitlines(),
                          "%s: `%s` printed\n%s" % (where, cmd, r.stdout))


# ------------------------------------------------------- --json schemas

_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(\.\.\.)|([{}\[\]:,|?])|([^\s{}\[\]:,|?"]+))')


def _tokens(text):
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip():
                raise AssertionError("schema: cannot read %r" % text[pos:pos + 30])
            break
        pos = m.end()
        out.append(next(g for g in m.groups() if g is not None))
    return out


class Schema:
    """The README's notation of a --json object (see "The pyop command"):
    {"a", "b"?: V, ...} objects, [V | W] lists, V | W forms, and values not
    spelled out ("ok", N, null, [...], {...})."""

    def __init__(self, text):
        self.toks = _tokens(text)
        self.i = 0
        self.value = self.alternatives()
        if self.i != len(self.toks):
            raise AssertionError("schema: trailing %r" % self.toks[self.i:])

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want=None):
        t = self.peek()
        if want is not None and t != want:
            raise AssertionError("schema: %r where %r was expected" % (t, want))
        self.i += 1
        return t

    def alternatives(self):
        forms = [self.primary()]
        while self.peek() == "|":
            self.take()
            forms.append(self.primary())
        return forms

    def primary(self):
        t = self.peek()
        if t == "{":
            return self.obj()
        if t == "[":
            self.take()
            if self.peek() == "...":
                self.take()
                self.take("]")
                return ("list", None)
            items = self.alternatives()
            self.take("]")
            return ("list", items)
        self.take()
        return ("scalar", t)

    def obj(self):
        self.take("{")
        if self.peek() == "...":
            self.take()
            self.take("}")
            return ("object", None)
        members = {}
        while self.peek() != "}":
            name = self.take()
            if not name.startswith('"'):
                raise AssertionError("schema: member %r is not quoted" % name)
            optional = self.peek() == "?"
            if optional:
                self.take()
            value = None
            if self.peek() == ":":
                self.take()
                value = self.alternatives()
            members[name.strip('"')] = (optional, value)
            if self.peek() == ",":
                self.take()
        self.take("}")
        return ("object", members)


def readme_schemas(root):
    """{command: parsed schema} of the README's --json block."""
    text = read_doc(root, "README.md")
    start = text.index("`--json` output is stable")
    block = blocks(text[start:], "text")[0]
    out = {}
    for chunk in re.split(r"(?m)^(?=\w+:\s)", block):
        if chunk.strip():
            name, _, body = chunk.partition(":")
            out[name.strip()] = Schema(body).value
    return out


def mismatches(value, forms, where, seen):
    """Where value does not have the members one of forms names (a list of
    ("object"|"list"|"scalar", ...)); records every member path met in seen."""
    if isinstance(value, dict):
        objs = [f for f in forms if f[0] == "object"]
        if not objs:
            return ["%s: an object where the README has %s" % (where, forms)]
        if any(f[1] is None for f in objs):
            return []
        keys = set(value)
        best = None
        for f in objs:
            need = {k for k, (opt, _) in f[1].items() if not opt}
            if need <= keys <= set(f[1]):
                best = f
                break
        if best is None:
            f = min(objs, key=lambda f: len(keys ^ set(f[1])))
            need = {k for k, (opt, _) in f[1].items() if not opt}
            return ["%s: members %s not in the README, %s missing" % (
                where, sorted(keys - set(f[1])), sorted(need - keys))]
        problems = []
        for k, v in value.items():
            seen.add("%s.%s" % (where, k))
            sub = best[1][k][1]
            if sub is not None:
                problems += mismatches(v, sub, "%s.%s" % (where, k), seen)
        return problems
    if isinstance(value, list):
        lists = [f for f in forms if f[0] == "list"]
        if not lists:
            return ["%s: a list where the README has %s" % (where, forms)]
        items = lists[0][1]
        if items is None:
            return []
        problems = []
        for v in value:
            problems += mismatches(v, items, where + "[]", seen)
        return problems
    return []


def documented_members(forms, where, out):
    """Every member path the schema names (optional ones marked)."""
    for f in forms:
        if f[0] == "object" and f[1]:
            for k, (opt, sub) in f[1].items():
                out.add("%s.%s" % (where, k))
                if sub:
                    documented_members(sub, "%s.%s" % (where, k), out)
        elif f[0] == "list" and f[1]:
            documented_members(f[1], where + "[]", out)
    return out


class JsonSchemaTest(unittest.TestCase):
    """What each command prints with --json has the README's members."""

    @classmethod
    def setUpClass(cls):
        cls.cli = _need("PYOP_TEST_CLI")
        cls.root = _need("PYOP_TEST_ROOT")
        cls.ops = _need("PYOP_TEST_OPS")
        cls.tmp = tempfile.mkdtemp(prefix="pyop-json-test-")
        cls.broken = os.path.join(cls.tmp, "broken")
        os.makedirs(cls.broken)
        with open(os.path.join(cls.broken, "broken.py"), "w") as f:
            f.write("raise RuntimeError('broken on purpose')\n")
        cls.pending = os.path.join(cls.root, "tests", "ge", "impl_only")
        # ScaledAdd defined again elsewhere: the combined load conflicts.
        cls.conflict = os.path.join(cls.tmp, "conflict")
        os.makedirs(cls.conflict)
        with open(os.path.join(cls.ops, "scaled_add.py")) as f:
            source = f.read()
        with open(os.path.join(cls.conflict, "scaled_add.py"), "w") as f:
            f.write("# a second definition\n" + source)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def json_of(self, args, opp):
        r = run_pyop(self.cli, args + ["--json"], opp)
        try:
            return json.loads(r.stdout)
        except ValueError:
            raise AssertionError("%s: not JSON: %s%s" % (args, r.stdout, r.stderr)) from None

    def test_readme_block_is_read(self):
        schemas = readme_schemas(self.root)
        self.assertEqual(sorted(schemas), ["bench", "check", "doctor", "error", "list", "run"])
        bad = Schema('{"a", "b"?: [{"c"}], "d": "x" | "y"}').value
        self.assertEqual(mismatches({"a": 1, "b": [{"c": 1}], "d": "x"}, bad, "", set()), [])
        self.assertTrue(mismatches({"a": 1, "e": 2, "d": 1}, bad, "", set()))
        self.assertTrue(mismatches({"b": [], "d": 1}, bad, "", set()))
        self.assertTrue(mismatches({"a": 1, "b": [{"c": 1, "z": 0}], "d": 1}, bad, "", set()))

    def test_each_command_prints_the_documented_members(self):
        schemas = readme_schemas(self.root)
        ops, pend = self.ops, self.pending
        both = ops + ":" + self.broken
        cases = [
            ("list", ["list"], ops), ("list", ["list"], pend), ("list", ["--lanes", "2", "list"], ops),
            ("check", ["check", "ScaledAdd", "SplitEven", "NoSuchOp"], ops),
            ("check", ["check"], pend), ("check", ["check", ops, self.broken], ""),
            ("check", ["check", "ScaledAdd", ops, self.conflict], ""),
            ("bench", ["bench", "ScaledAdd", "--calls", "3", "--repeat", "1",
                       "--attr", "alpha=2"], ops),
            ("run", ["run", "ScaledAdd", "--input", "x=float32[2]", "--input",
                     "y=float32[2]:1,2"], ops),
            ("run", ["run", "SplitEven", "--input", "x=float32[4]"], ops),
            ("run", ["run", "AddInto", "--input", "x=int32[2]:1,2", "--input", "y=int32[2]"], ops),
            ("doctor", ["doctor"], ops), ("doctor", ["doctor"], pend),
            ("doctor", ["--lanes", "2", "doctor"], ops), ("doctor", ["doctor"], both),
            ("doctor", ["doctor"], "relative/ops"),
            ("doctor", ["doctor"], os.path.join(self.tmp, "no_such_plugin.py")),
            ("error", ["run", "NoSuchOp"], ops), ("error", ["list", "--bogus"], ops),
        ]
        seen = {name: set() for name in schemas}
        problems = []
        for name, args, opp in cases:
            out = self.json_of(args, opp)
            problems += ["%s (%s): %s" % (name, " ".join(args), p)
                         for p in mismatches(out, schemas[name], "", seen[name])]
        self.assertEqual(problems, [], "README.md's --json schemas and the commands disagree")
        for name, forms in schemas.items():
            never = sorted(documented_members(forms, "", set()) - seen[name])
            self.assertEqual(never, [], "%s: documented members no case printed" % name)


if __name__ == "__main__":
    unittest.main()
