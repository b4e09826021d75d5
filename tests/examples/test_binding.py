"""The `pyop` command's ctypes binding (tools/pyop_cli/binding.py) against
include/pyop/pyop.h as the C compiler lays it out: every struct's size and
alignment, each member's offset and size, and the constants the binding
copies (PYOP_MAX_DIMS, the dtype names and sizes, attribute type codes,
capability and flag bits, io kinds, the status codes it names).

Driven by ctest (tests/examples/CMakeLists.txt) through environment variables:

  PYOP_TEST_CC       the C compiler of the build
  PYOP_TEST_INCLUDE  include/ of the source tree and of the build tree
                     (version.h), separated by ':'
  PYOP_TEST_TOOLS    tools/ of the source tree (holds the pyop_cli package)
"""

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ENV = os.environ


def _need(name):
    value = ENV.get(name)
    if not value:
        raise unittest.SkipTest("%s is not set (run through ctest)" % name)
    return value


def _binding():
    sys.path.insert(0, _need("PYOP_TEST_TOOLS"))
    try:
        from pyop_cli import binding
    finally:
        del sys.path[0]
    return binding


def _layouts(b):
    """(ctypes class, C type, [(ctypes field, C member)]) of every struct the
    binding declares; the union's members are those of pyop_attr_value.u."""
    def same(cls):
        return [(f[0], f[0]) for f in cls._fields_]
    return [
        (b.Tensor, "pyop_tensor", same(b.Tensor)),
        (b.TensorList, "pyop_tensor_list", same(b.TensorList)),
        (b.Str, "pyop_str", same(b.Str)),
        (b.IntList, "pyop_int_list", same(b.IntList)),
        (b.AttrValue, "pyop_attr_value", same(b.AttrValue)),
        (b._AttrUnion, "union_u", [("i", "i"), ("f", "f"), ("b", "b"), ("dtype", "dtype"),
                                   ("s", "s"), ("span", "ints"), ("tensor", "tensor")]),
        (b.Attr, "pyop_attr", same(b.Attr)),
        (b.IoInfo, "pyop_io_info", same(b.IoInfo)),
        (b.DtypeSet, "pyop_dtype_set", same(b.DtypeSet)),
        (b.AttrInfo, "pyop_attr_info", same(b.AttrInfo)),
        (b.OpInfo, "pyop_op_info", same(b.OpInfo)),
        (b.ExecCtx, "pyop_exec_ctx", same(b.ExecCtx)),
        (b.OutputList, "pyop_output_list", same(b.OutputList)),
        (b.HostHooks, "pyop_host_hooks", same(b.HostHooks)),
        (b.Options, "pyop_options", same(b.Options)),
    ]


def _constants(b):
    """(name, the binding's value, C expression)."""
    out = [("MAX_DIMS", b.MAX_DIMS, "PYOP_MAX_DIMS"),
           ("EXEC_EXPECT_OUTPUTS", b.EXEC_EXPECT_OUTPUTS, "PYOP_EXEC_EXPECT_OUTPUTS"),
           ("INPUT_MUTATED", b.INPUT_MUTATED, "PYOP_INPUT_MUTATED"),
           ("len(DTYPES)", len(b.DTYPES), "PYOP_DTYPE_COUNT"),
           ("len(FORMATS)", len(b.FORMATS), "PYOP_FORMAT_COUNT"),
           ("PYOP_ENOENT", -3, "PYOP_ENOENT")]
    for k, name in enumerate(b.DTYPES):
        out.append(("DTYPE_SIZE[%s]" % name, b.DTYPE_SIZE[k], "(long long)pyop_dtype_size(%d)"
                    % k))
    for k, kind in enumerate(b.IO_KINDS):
        out.append(("IO_KINDS[%d]" % k, k, "PYOP_IO_%s" % kind.upper()))
    caps = {"infer_meta": "PYOP_CAP_INFER_META", "execute": "PYOP_CAP_EXECUTE",
            "compile": "PYOP_CAP_COMPILE", "declare_launch_args": "PYOP_CAP_LAUNCH"}
    for bit, name in b.CAPS:
        out.append(("CAPS %s" % name, bit, caps[name]))
    attr = {"int": "INT", "float": "FLOAT", "bool": "BOOL", "str": "STR", "DataType": "DTYPE",
            "list[int]": "LIST_INT", "list[float]": "LIST_FLOAT", "list[bool]": "LIST_BOOL",
            "list[str]": "LIST_STR", "list[DataType]": "LIST_DTYPE",
            "list[list[int]]": "LIST_LIST_INT", "Tensor": "TENSOR"}
    for code, name in b.ATTR_TYPES.items():
        out.append(("ATTR_TYPES[%d]" % code, code, "PYOP_ATTR_%s" % attr[name]))
    return out


def _c_program(b):
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <pyop/pyop.h>",
             "typedef __typeof__(((pyop_attr_value *)0)->u) union_u;",
             "struct align_probe { char c; union_u u; };", "int main(void) {"]
    for _, ctype, members in _layouts(b):
        lines.append('  printf("%s|%%zu\\n", sizeof(%s));' % (ctype, ctype))
        for _, m in members:
            lines.append('  printf("%s.%s|%%zu %%zu\\n", offsetof(%s, %s), '
                         'sizeof(((%s *)0)->%s));' % (ctype, m, ctype, m, ctype, m))
    for name, _, expr in _constants(b):
        lines.append('  printf("const %s|%%lld\\n", (long long)(%s));' % (name, expr))
    for k in range(len(b.DTYPES)):
        lines.append('  printf("dtype %d|%%s\\n", pyop_dtype_name(%d));' % (k, k))
    for k in range(len(b.FORMATS)):
        lines.append('  printf("format %d|%%s\\n", pyop_format_name(%d));' % (k, k))
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


class BindingTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.b = _binding()
        cc, include = _need("PYOP_TEST_CC"), _need("PYOP_TEST_INCLUDE")
        lib = _need("PYOP_TEST_LIBRARY")
        tmp = tempfile.mkdtemp(prefix="pyop-binding-")
        try:
            src, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
            with open(src, "w") as f:
                f.write(_c_program(cls.b))
            incs = [a for d in include.split(os.pathsep) if d for a in ("-I", d)]
            built = subprocess.run([cc, "-std=c11", *incs, src, "-o", exe, lib,
                                    "-Wl,-rpath," + os.path.dirname(lib)],
                                   capture_output=True, text=True, timeout=120)
            if built.returncode != 0:
                raise AssertionError("compiling the layout program failed:\n" + built.stderr)
            out = subprocess.run([exe], check=True, capture_output=True, text=True,
                                 timeout=60).stdout
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        cls.c = {}
        for line in out.splitlines():
            key, _, value = line.partition("|")
            cls.c[key] = value

    def mismatches(self, cls, ctype, members):
        """What differs between the ctypes class and the C struct."""
        out = []
        if ctypes.sizeof(cls) != int(self.c[ctype]):
            out.append("sizeof(%s): ctypes %d, C %s" % (ctype, ctypes.sizeof(cls), self.c[ctype]))
        if ctypes.alignment(cls) > int(self.c[ctype]):
            out.append("alignment of %s" % ctype)
        for field, member in members:
            off, size = map(int, self.c["%s.%s" % (ctype, member)].split())
            desc = getattr(cls, field, None)
            if desc is None:
                out.append("%s.%s: not bound" % (ctype, member))
            elif (desc.offset, desc.size) != (off, size):
                out.append("%s.%s: ctypes offset %d size %d, C offset %d size %d"
                           % (ctype, member, desc.offset, desc.size, off, size))
        return out

    def test_struct_layouts(self):
        for cls, ctype, members in _layouts(self.b):
            self.assertEqual(self.mismatches(cls, ctype, members), [], ctype)

    def test_constants(self):
        for name, value, expr in _constants(self.b):
            self.assertEqual(value, int(self.c["const " + name]), "%s vs %s" % (name, expr))
        for k, name in enumerate(self.b.DTYPES):
            self.assertEqual(self.c["dtype %d" % k], name)
        for k, name in enumerate(self.b.FORMATS):
            self.assertEqual(self.c["format %d" % k], name)

    def test_the_other_copies_match_the_header(self):
        # ctypes copies of pyop.h structs outside the binding: each is held to
        # the header here, as the binding's own are (one authority, the header).
        import importlib.util
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hardening",
                            "harden.py")
        spec = importlib.util.spec_from_file_location("harden_copy", path)
        harden = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(harden)
        members = {ctype: m for _, ctype, m in _layouts(self.b)}["pyop_host_hooks"]
        self.assertEqual(self.mismatches(harden.Hooks, "pyop_host_hooks", members), [],
                         "tests/hardening/harden.py: Hooks")

    def test_a_wrong_layout_is_caught(self):
        # The comparison can fail: ndim declared 64-bit, or nbytes missing.
        members = [(f[0], f[0]) for f in self.b.Tensor._fields_]

        class Wide(ctypes.Structure):
            _fields_ = [(n, ctypes.c_int64 if n == "ndim" else t)
                        for n, t in self.b.Tensor._fields_]

        class Short(ctypes.Structure):
            _fields_ = [f for f in self.b.Tensor._fields_ if f[0] != "nbytes"]
        self.assertIn("pyop_tensor.ndim: ctypes offset 16 size 8, C offset 16 size 4",
                      self.mismatches(Wide, "pyop_tensor", members))
        self.assertIn("pyop_tensor.nbytes: not bound",
                      self.mismatches(Short, "pyop_tensor", members))


if __name__ == "__main__":
    unittest.main(verbosity=2)
