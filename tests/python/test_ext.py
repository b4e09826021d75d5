"""pyop.ext, the extension point of layers built on pyop (docs/design.md
§Extension): its names are exactly the documented ones, the ge package
reaches pyop through nothing else, and what it offers behaves as stated."""
import ast
import os
import re
import unittest

import support
import pyop
from pyop import TensorDesc, ext
from pyop._registry import collecting

GE_DIR = os.path.join(support.PACKAGE_DIR, "ge")


def _documented_names():
    """The first column of the table in docs/design.md §Extension."""
    with open(os.path.join(support.ROOT, "docs", "design.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Extension\n(.*?)(?=^## )", text, re.M | re.S)
    assert m, "docs/design.md has no section '## Extension'"
    names = []
    for line in m.group(1).splitlines():
        cell = re.match(r"\|\s*`([A-Za-z_][\w, `]*)`\s*\|", line)
        if cell:
            names += [n.strip(" `") for n in cell.group(1).split(",")]
    return names


def _private_uses(path):
    """(line, text) of each place a file reaches into pyop's private parts:
    an import of pyop._x (or from pyop import _x), an import of a pyop
    submodule other than ext, or pyop._x / getattr(pyop, "_x")."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "pyop" and parts[1:] not in ([], ["ext"]):
                    found.append((node.lineno, "import %s" % a.name))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] != "pyop":
                continue
            if parts[1:] not in ([], ["ext"]):
                found.append((node.lineno, "from %s import ..." % node.module))
            elif parts == ["pyop"]:
                for a in node.names:
                    if a.name.startswith("_"):
                        found.append((node.lineno, "from pyop import %s" % a.name))
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and
              node.value.id == "pyop" and node.attr.startswith("_")):
            found.append((node.lineno, "pyop.%s" % node.attr))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
              node.func.id in ("getattr", "hasattr") and len(node.args) >= 2 and
              isinstance(node.args[0], ast.Name) and node.args[0].id == "pyop" and
              isinstance(node.args[1], ast.Constant) and
              str(node.args[1].value).startswith("_")):
            found.append((node.lineno, "%s(pyop, %r)" % (node.func.id, node.args[1].value)))
    return found


class NamesTest(unittest.TestCase):
    def test_names_are_the_documented_list(self):
        documented = _documented_names()
        self.assertIn("add_descriptor", documented)
        self.assertEqual(sorted(ext.__all__), sorted(documented),
                         "pyop.ext.__all__ differs from the table (docs/design.md §Extension)")
        self.assertEqual(len(set(documented)), len(documented), "a name documented twice")

    def test_no_public_name_outside_the_list(self):
        public = sorted(n for n in vars(ext) if not n.startswith("_"))
        self.assertEqual(public, sorted(ext.__all__),
                         "a public name of pyop.ext that is not declared (alias it _name)")

    def test_native_is_the_bridge_module(self):
        self.assertIs(ext.native, pyop._native)


class GeUsesOnlyTheExtensionPoint(unittest.TestCase):
    def test_no_ge_file_reaches_into_pyop(self):
        files = []
        for d, dirs, names in os.walk(GE_DIR):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            files += [os.path.join(d, n) for n in names if n.endswith(".py")]
        self.assertGreater(len(files), 10)
        bad = ["%s:%d: %s" % (os.path.relpath(f, support.PACKAGE_DIR), n, what)
               for f in sorted(files) for n, what in _private_uses(f)]
        self.assertEqual(bad, [], "the ge package uses pyop and pyop.ext only")

    def test_the_check_finds_each_form(self):
        with support.TempDir() as d:
            path = support.write(d, "m.py", """\
                import pyop._registry
                from pyop._types import AttrType
                from pyop import _signature, ext
                from pyop.ext import IoKind
                import pyop
                x = pyop._native
                y = getattr(pyop, "_native", None)
                z = pyop.DataType
                """)
            self.assertEqual([n for n, _ in _private_uses(path)], [1, 2, 3, 6, 7])


class LoadStateTest(unittest.TestCase):
    def test_state_per_load_none_outside(self):
        self.assertIsNone(ext.load_state("layer", dict))
        with collecting():
            st = ext.load_state("layer", dict)
            st["x"] = 1
            self.assertIs(ext.load_state("layer", dict), st)
            self.assertIsNot(ext.load_state("other", dict), st)
        with collecting():
            self.assertEqual(ext.load_state("layer", dict), {})

    def test_add_and_discard_descriptors(self):
        def make(op_type, key):
            return ext.OpProto(op_type, key, __file__, 1, (("x", ext.IoKind.REQUIRED),),
                               ("y",), (), lambda x: x)
        with collecting() as c:
            a, a2, b = make("A", "k:a"), make("A", "k:a2"), make("B", "k:b")
            for d in (a, a2, b):
                ext.add_descriptor(d)
            self.assertEqual(c.all_protos(), [a, b, a2])
            ext.discard_descriptors(lambda d: d.key in ("k:a", "k:a2"))
            self.assertEqual(c.all_protos(), [b])
        ext.add_descriptor(make("C", "k:c"))  # outside a load: nothing, no error
        ext.discard_descriptors(lambda d: True)


class ClassifyTest(unittest.TestCase):
    """The one annotation parser, given a layer's own classes."""

    def test_with_other_tensor_classes(self):
        from typing import List, Optional

        class T:
            pass

        class D(int):
            pass

        def is_t(c):
            return c is T
        self.assertEqual(ext.classify_input(T, is_t), ext.IoKind.REQUIRED)
        self.assertEqual(ext.classify_input(Optional[T], is_t), ext.IoKind.OPTIONAL)
        self.assertEqual(ext.classify_input(List[T], is_t), ext.IoKind.DYNAMIC)
        self.assertIsNone(ext.classify_input(TensorDesc, is_t))
        self.assertIsNone(ext.classify_input(Optional[List[T]], is_t))
        self.assertEqual(ext.classify_output(list[T], is_t), ext.IoKind.DYNAMIC)
        self.assertIsNone(ext.classify_output(Optional[T], is_t))
        self.assertEqual(ext.classify_attr(D, D, is_t), ext.AttrType.DTYPE)
        self.assertEqual(ext.classify_attr(list[D], D, is_t), ext.AttrType.LIST_DTYPE)
        self.assertEqual(ext.classify_attr(T, D, is_t), ext.AttrType.TENSOR)
        self.assertEqual(ext.classify_attr(list[list[int]], D, is_t), ext.AttrType.LIST_LIST_INT)
        self.assertIsNone(ext.classify_attr(list[T], D, is_t))
        self.assertIsNone(ext.classify_attr(pyop.DataType, D, is_t))


if __name__ == "__main__":
    unittest.main()
