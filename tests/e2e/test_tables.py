"""The Python copies of libpyop's tables, tested against the one authority.

    python3 test_tables.py LIBPYOP

pyop.h's X-macro lists are the authority for data types (value, name,
size), formats and attribute types, and project(pyop VERSION) for the
version. libpyop generates pyop_dtype_name/pyop_dtype_size/... from those
lists; this test reads them through that API (ctypes, no bridge needed) and
compares every Python copy: the pyop package (DataType, its itemsize,
Format, the attribute-type names of _signature) and the pyop command's binding module
(DTYPES, DTYPE_SIZE, DTYPE_STRUCT, FORMATS, ATTR_TYPES, IO_KINDS, CAPS and
the flag bits). The names `pyop doctor` parses (path verdicts, candidate
statuses) have their authority in libpyop's internal X-macro lists, read
here from src/scan.h and src/candidates.h. A table that drifts fails here
with the value, the copy and both answers.
"""

import ctypes
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bridge", "python"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.dont_write_bytecode = True

import pyop  # noqa: E402
from pyop import DataType, Format  # noqa: E402
from pyop._signature import ATTR_TYPE_NAMES  # noqa: E402
from pyop_cli import binding as pyop_cli  # noqa: E402  (the tables)
from pyop_cli import doctor as pyop_cli_doctor  # noqa: E402  (the doctor names)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def bind(lib):
    for name, res, args in (
            ("pyop_dtype_name", ctypes.c_char_p, [ctypes.c_int]),
            ("pyop_dtype_size", ctypes.c_size_t, [ctypes.c_int]),
            ("pyop_dtype_from_name", ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
            ("pyop_format_name", ctypes.c_char_p, [ctypes.c_int]),
            ("pyop_attr_type_name", ctypes.c_char_p, [ctypes.c_int]),
            ("pyop_version", ctypes.c_char_p, [])):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args


def known(fn, first=0, beyond=64):
    """{value: name} of a libpyop name function (None past the table)."""
    out = {}
    for v in range(first - 2, beyond):
        name = fn(v)
        if name is not None:
            out[v] = name.decode()
    return out


def test_dtypes(lib):
    c = known(lib.pyop_dtype_name)
    check(sorted(c) == list(range(len(c))), "libpyop dtypes are 0..N-1: %s" % sorted(c))
    py = {d.value: d.name for d in DataType}
    check(py == c, "pyop.DataType %s != pyop.h %s" % (py, c))
    check(pyop_cli.DTYPES == [c[v] for v in sorted(c)],
          "pyop_cli.DTYPES %s != pyop.h %s" % (pyop_cli.DTYPES, c))
    for table in ("DTYPE_SIZE", "DTYPE_STRUCT"):
        n = len(getattr(pyop_cli, table))
        check(n == len(c), "pyop_cli.%s has %d entries, pyop.h %d dtypes" % (table, n, len(c)))
    for v, name in sorted(c.items()):
        size = lib.pyop_dtype_size(v)
        check(size > 0, "pyop_dtype_size(%d) is 0" % v)
        if v in py:
            got = DataType(v).itemsize
            check(got == size, "DataType.%s.itemsize %d != pyop_dtype_size %d" % (name, got, size))
        if v < len(pyop_cli.DTYPE_SIZE):
            got = pyop_cli.DTYPE_SIZE[v]
            check(got == size, "pyop_cli.DTYPE_SIZE[%s] %d != pyop_dtype_size %d" % (name, got, size))
        if v < len(pyop_cli.DTYPE_STRUCT):
            fmt = pyop_cli.DTYPE_STRUCT[v]
            got = struct.calcsize("<" + fmt)
            check(got == size, "pyop_cli.DTYPE_STRUCT[%s] %r packs %d bytes, pyop_dtype_size %d"
                  % (name, fmt, got, size))
        out = ctypes.c_int(-1)
        rc = lib.pyop_dtype_from_name(name.encode(), ctypes.byref(out))
        check(rc == 0 and out.value == v, "pyop_dtype_from_name(%r): rc %d, %d" % (name, rc, out.value))
    for v in (-1, len(c), len(c) + 1):
        check(lib.pyop_dtype_size(v) == 0, "pyop_dtype_size(%d) of an unknown value is not 0" % v)


def test_formats(lib):
    c = known(lib.pyop_format_name)
    py = {f.value: f.name for f in Format}
    check(py == c, "pyop.Format %s != pyop.h %s" % (py, c))
    check(pyop_cli.FORMATS == [c[v] for v in sorted(c)],
          "pyop_cli.FORMATS %s != pyop.h %s" % (pyop_cli.FORMATS, c))


def test_attr_types(lib):
    c = known(lib.pyop_attr_type_name)
    py = {int(t): n for t, n in ATTR_TYPE_NAMES.items()}
    check(py == c, "pyop._signature.ATTR_TYPE_NAMES %s != libpyop %s" % (py, c))
    check(pyop_cli.ATTR_TYPES == c, "pyop_cli.ATTR_TYPES %s != libpyop %s" % (pyop_cli.ATTR_TYPES, c))


def test_codes():
    from pyop import _types
    py = [k.name.lower() for k in sorted(_types.IoKind)]
    check(pyop_cli.IO_KINDS == py, "pyop_cli.IO_KINDS %s != pyop.IoKind %s" % (pyop_cli.IO_KINDS, py))
    caps = [(_types.CAP_INFER_META, "infer_meta"), (_types.CAP_EXECUTE, "execute"),
            (_types.CAP_COMPILE, "compile"), (_types.CAP_LAUNCH, "declare_launch_args")]
    check(pyop_cli.CAPS == caps, "pyop_cli.CAPS %s != pyop's %s" % (pyop_cli.CAPS, caps))
    check(pyop_cli.INPUT_MUTATED == _types.INPUT_MUTATED,
          "pyop_cli.INPUT_MUTATED %d != pyop's %d" % (pyop_cli.INPUT_MUTATED, _types.INPUT_MUTATED))
    # pyop_cli.MAX_DIMS is held to PYOP_MAX_DIMS by tests/examples/test_binding.py.
    check(pyop_cli.MAX_DIMS == _types.MAX_DIMS,
          "pyop_cli.MAX_DIMS %d != pyop's MAX_DIMS %d" % (pyop_cli.MAX_DIMS, _types.MAX_DIMS))
    with open(os.path.join(ROOT, "include", "pyop", "pyop.h")) as f:
        header = f.read()
    m = re.search(r"#define PYOP_EXEC_EXPECT_OUTPUTS \(1u << (\d+)\)", header)
    check(m is not None and pyop_cli.EXEC_EXPECT_OUTPUTS == 1 << int(m.group(1)),
          "pyop_cli.EXEC_EXPECT_OUTPUTS %d != pyop.h's PYOP_EXEC_EXPECT_OUTPUTS"
          % pyop_cli.EXEC_EXPECT_OUTPUTS)


def _x_names(header, macro):
    """(header, the names of an X(NAME, value, "name") list) of libpyop's
    X-macro list `macro` in src/<header>: the list the enum and its name
    function are generated from."""
    with open(os.path.join(ROOT, "src", header), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"#define %s\(X\)((?:[^\n]*\\\n)*[^\n]*)" % macro, text)
    if not m:
        return "src/" + header, ()
    rows = re.findall(r'X\((\w+), (\d+), "([^"]*)"\)', m.group(1))
    # The name functions' answer for any value outside the list (the doctor
    # parses it too).
    return "src/" + header, tuple(name for _, _, name in rows) + ("unknown",)


def test_doctor_names():
    for copy, header, macro in ((pyop_cli_doctor.PATH_VERDICTS, "scan.h", "PYOP__PATH_VERDICT_MAP"),
                                (pyop_cli_doctor.CAND_STATUSES, "candidates.h",
                                 "PYOP__CAND_STATUS_MAP")):
        path, c = _x_names(header, macro)
        check(len(c) > 5, "%s: not found in %s, or it lists no names" % (macro, path))
        check(sorted(copy) == sorted(c), "pyop_cli's copy %s != %s of %s %s"
              % (sorted(copy), macro, path, sorted(c)))


def test_version(lib):
    v = lib.pyop_version().decode()
    check(pyop.__version__ == v, "pyop.__version__ %r != pyop_version() %r (project(pyop VERSION))"
          % (pyop.__version__, v))


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    lib = ctypes.CDLL(sys.argv[1])
    bind(lib)
    for t in (test_dtypes, test_formats, test_attr_types, test_version):
        t(lib)
    test_codes()
    test_doctor_names()
    if failures:
        print("%d table check(s) failed" % len(failures), file=sys.stderr)
        return 1
    print("tables: dtypes, formats, attribute types and the version agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
