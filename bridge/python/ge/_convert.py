"""Translation between GE's enums and pyop's, by member name (never by
number: the two numberings differ, see docs/ge-plugins.md)."""

import pyop
from .graph.types import DataType, Format

__all__ = ["dtype_to_pyop", "dtype_from_pyop", "format_to_pyop", "format_from_pyop",
           "HOST_DTYPES", "HOST_FORMATS"]

# GE DataType member -> pyop DataType member name.
_DT_NAMES = {
    "DT_FLOAT": "float32", "DT_FLOAT16": "float16", "DT_BF16": "bfloat16",
    "DT_DOUBLE": "float64", "DT_INT8": "int8", "DT_INT16": "int16",
    "DT_INT32": "int32", "DT_INT64": "int64", "DT_UINT8": "uint8",
    "DT_UINT16": "uint16", "DT_UINT32": "uint32", "DT_UINT64": "uint64",
    "DT_BOOL": "bool",
}
_FMT_NAMES = {
    "FORMAT_ND": "ND", "FORMAT_NCHW": "NCHW", "FORMAT_NHWC": "NHWC",
    "FORMAT_NC1HWC0": "NC1HWC0", "FORMAT_FRACTAL_NZ": "FRACTAL_NZ",
}

_DT_TO = {DataType[g]: pyop.DataType[p] for g, p in _DT_NAMES.items()}
_DT_FROM = {p: g for g, p in _DT_TO.items()}
_FMT_TO = {Format[g]: pyop.Format[p] for g, p in _FMT_NAMES.items()}
_FMT_FROM = {p: g for g, p in _FMT_TO.items()}

HOST_DTYPES = frozenset(_DT_TO)
HOST_FORMATS = frozenset(_FMT_TO)


def ge_dtype(value, what="data type"):
    """A GE DataType from a DataType or an int (TypeError / ValueError)."""
    if isinstance(value, DataType):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be a ge DataType, got %s" % (what, type(value).__name__))
    try:
        return DataType(value)
    except ValueError:
        raise ValueError("%s %d is not a ge DataType" % (what, value)) from None


def ge_format(value, what="format"):
    """A GE Format from a Format or an int."""
    if isinstance(value, Format):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be a ge Format, got %s" % (what, type(value).__name__))
    try:
        return Format(value)
    except ValueError:
        raise ValueError("%s %d is not a ge Format" % (what, value)) from None


def dtype_to_pyop(dt, what="data type"):
    """pyop.DataType for a GE DataType; TypeError naming the member when
    it has no host form in libpyop."""
    dt = ge_dtype(dt, what)
    try:
        return _DT_TO[dt]
    except KeyError:
        raise TypeError("%s DataType.%s has no host form in libpyop (host dtypes: %s)"
                        % (what, dt.name, ", ".join(sorted(d.name for d in _DT_TO)))) from None


def dtype_from_pyop(dt):
    return _DT_FROM[pyop.DataType(dt)]


def format_to_pyop(fmt, what="format"):
    fmt = ge_format(fmt, what)
    try:
        return _FMT_TO[fmt]
    except KeyError:
        raise TypeError("%s Format.%s has no host form in libpyop (host formats: %s)"
                        % (what, fmt.name, ", ".join(sorted(f.name for f in _FMT_TO)))) from None


def format_from_pyop(fmt):
    return _FMT_FROM[pyop.Format(fmt)]
