"""What the code cites is in the repository: every reference to the design
names a section of docs/design.md, nothing cites a document outside the
tree, and the README's layout table names every file of src/, bridge/ and
the ge package."""
import os
import re
import unittest

import support

ROOT = support.ROOT
# Where comments and docs cite the design (build trees excluded).
TREES = ("src", "bridge", "include", "tests", "tools", "bench", "examples", "docs", "cmake")
TOP_FILES = ("README.md", "CMakeLists.txt")
TEXT_SUFFIXES = (".c", ".h", ".py", ".md", ".txt", ".cmake", ".sh", ".in", ".cpp")
# Spelled in pieces so that this file does not cite them itself.
OUTSIDE = ("DES" + "IGN §", "/work/" + "shared")
CITATION = re.compile(r"docs/design\.md((?:,? §[A-Z][\w-]*(?: [a-z][\w-]*)*)+)")


def _text_files():
    for top in TREES:
        for d, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [x for x in dirs if x not in ("__pycache__", "corpus") and not x.startswith(".")]
            for f in files:
                if f.endswith(TEXT_SUFFIXES):
                    yield os.path.join(d, f)
    for f in TOP_FILES:
        yield os.path.join(ROOT, f)


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _design_sections():
    return set(re.findall(r"^## (.+?)\s*$", _read(os.path.join(ROOT, "docs", "design.md")), re.M))


def _repo_files(top, recursive):
    base = os.path.join(ROOT, top)
    out = []
    for d, dirs, files in os.walk(base):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__") if recursive else []
        out += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if not f.endswith(".pyc")]
    return sorted(out)


class DocsTest(unittest.TestCase):
    def test_no_citation_outside_the_repository(self):
        found = []
        for path in _text_files():
            for n, line in enumerate(_read(path).splitlines(), 1):
                if any(o in line for o in OUTSIDE):
                    found.append("%s:%d: %s" % (os.path.relpath(path, ROOT), n, line.strip()))
        self.assertEqual(found, [], "cite docs/design.md (or another file of the tree) instead")

    def test_design_citations_name_a_section(self):
        sections = _design_sections()
        self.assertIn("Registry", sections)
        bad, seen = [], 0
        for path in _text_files():
            for n, line in enumerate(_read(path).splitlines(), 1):
                for m in CITATION.finditer(line):
                    for name in re.findall(r"§([A-Z][\w-]*(?: [a-z][\w-]*)*)", m.group(1)):
                        seen += 1
                        if name not in sections:
                            bad.append("%s:%d: §%s" % (os.path.relpath(path, ROOT), n, name))
        self.assertGreater(seen, 15)
        self.assertEqual(bad, [], "sections of docs/design.md: %s" % sorted(sections))

    def test_readme_layout_names_every_file(self):
        readme = _read(os.path.join(ROOT, "README.md"))
        start = readme.index("## Layout")
        layout = readme[start:readme.index("\n## ", start + 1)]
        named = set(re.findall(r"`([^`]+)`", layout))
        files = (_repo_files("src", False) + _repo_files("bridge", False)
                 + _repo_files(os.path.join("bridge", "python", "ge"), True))
        self.assertIn("src/op.c", files)
        missing = [f for f in files if f not in named]
        self.assertEqual(missing, [], "README.md \"Layout\" must say what each of these holds")

    def test_ge_citations_name_a_section(self):
        # The GE layer's description is docs/ge-plugins.md; the spec files it
        # was written from are not in the tree, so nothing in tests/ or docs/
        # names them, and a citation of the guide names one of its sections.
        spec = "GE_" + "API"
        guide = _read(os.path.join(ROOT, "docs", "ge-plugins.md"))
        sections = set(re.findall(r"^##+ (.+?)\s*$", guide, re.M))
        bad, seen = [], 0
        for path in _text_files():
            rel = os.path.relpath(path, ROOT)
            if not rel.startswith(("tests" + os.sep, "docs" + os.sep)):
                continue
            text = _read(path)
            for n, line in enumerate(text.splitlines(), 1):
                if spec in line:
                    bad.append("%s:%d: %s" % (rel, n, line.strip()))
            for name in re.findall(r'docs/ge-plugins\.md,\s+"([^"]+)"', text):
                seen += 1
                if " ".join(name.split()) not in sections:
                    bad.append("%s: no section \"%s\" in docs/ge-plugins.md" % (rel, name))
        self.assertGreater(seen, 5)
        self.assertEqual(bad, [], "cite docs/ge-plugins.md and one of its sections")

    def test_readme_op_names_its_output_apart_from_its_inputs(self):
        # The README's op is the first thing an op author reads: an output
        # named like an input ("y", the default name) reads as an alias
        # (docs/op-author-guide.md, In-place ops). It mirrors
        # examples/ops/scaled_add.py, which names its output "z".
        readme = _read(os.path.join(ROOT, "README.md"))
        start = readme.index("## A Python op")
        block = re.search(r"```python\n(.*?)```", readme[start:], re.S).group(1)
        ns = {"__name__": "readme_op"}
        exec(compile(block, "README.md", "exec"), ns)
        p = ns["scaled_add"].__pyop_descriptor__
        inputs = [i[0] if isinstance(i, tuple) else i.name for i in p.inputs]
        self.assertEqual(sorted(set(inputs) & set(p.outputs)), [],
                         "README's op: outputs %s named like inputs %s" % (p.outputs, inputs))
        self.assertEqual(p.outputs, ("z",), "README's op names its output as examples/ops does")
        after = readme[start:readme.index("\n## ", start + 1)]
        self.assertIn("# z: float32[3] = [3, 4, 5]", after)


if __name__ == "__main__":
    unittest.main()
