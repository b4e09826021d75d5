"""GE's IR kinds and attribute type names (ge.custom_op._ir_types, private
in GE too): InputType, OutputType (IntEnums with GE's numbers) and
AttrType (the VT_* strings)."""

import enum

__all__ = ["InputType", "OutputType", "AttrType"]


class InputType(enum.IntEnum):
    REQUIRED = 0
    OPTIONAL = 1
    DYNAMIC = 2


class OutputType(enum.IntEnum):
    REQUIRED = 0
    DYNAMIC = 1


class AttrType:
    INT = "VT_INT"
    FLOAT = "VT_FLOAT"
    BOOL = "VT_BOOL"
    STRING = "VT_STRING"
    DATA_TYPE = "VT_DATA_TYPE"
    TENSOR = "VT_TENSOR"
    LIST_INT = "VT_LIST_INT"
    LIST_FLOAT = "VT_LIST_FLOAT"
    LIST_BOOL = "VT_LIST_BOOL"
    LIST_STRING = "VT_LIST_STRING"
    LIST_DATA_TYPE = "VT_LIST_DATA_TYPE"
    LIST_LIST_INT = "VT_LIST_LIST_INT"
