"""GE's enums with GE's member names and numbers (CANN metadef types.h):
DataType (DT_*), Format (FORMAT_*), Placement and AttrValueType (VT_*).

These are libpyop's host-only compatibility copies: the numbers are GE's,
not pyop's. ge._convert translates to and from pyop.DataType / pyop.Format
by member name, never by number or position.
"""

import enum

__all__ = ["DataType", "Format", "Placement", "AttrValueType"]


def _members(prefix, names, start=0, skip=()):
    out = []
    value = start
    for n in names.split():
        while value in skip:
            value += 1
        out.append((prefix + n, value))
        value += 1
    return out


DataType = enum.IntEnum("DataType", _members("DT_", """
    FLOAT FLOAT16 INT8 INT32 UINT8 INT16 UINT16 UINT32 INT64 UINT64 DOUBLE
    BOOL STRING DUAL_SUB_INT8 DUAL_SUB_UINT8 COMPLEX64 COMPLEX128 QINT8 QINT16
    QINT32 QUINT8 QUINT16 RESOURCE STRING_REF DUAL VARIANT BF16 UNDEFINED INT4
    UINT1 INT2 UINT2 COMPLEX32 HIFLOAT8 FLOAT8_E5M2 FLOAT8_E4M3FN FLOAT8_E8M0
    FLOAT6_E3M2 FLOAT6_E2M3 FLOAT4_E2M1 FLOAT4_E1M2 HIFLOAT4 MAX""", skip=(5,)),
    module=__name__)
DataType.__doc__ = "GE element types (DT_MAX is a boundary, never a valid type)."

Format = enum.IntEnum("Format", _members("FORMAT_", """
    NCHW NHWC ND NC1HWC0 FRACTAL_Z NC1C0HWPAD NHWC1C0 FSR_NCHW FRACTAL_DECONV
    C1HWNC0 FRACTAL_DECONV_TRANSPOSE FRACTAL_DECONV_SP_STRIDE_TRANS NC1HWC0_C04
    FRACTAL_Z_C04 CHWN FRACTAL_DECONV_SP_STRIDE8_TRANS HWCN NC1KHKWHWC0
    BN_WEIGHT FILTER_HWCK HASHTABLE_LOOKUP_LOOKUPS HASHTABLE_LOOKUP_KEYS
    HASHTABLE_LOOKUP_VALUE HASHTABLE_LOOKUP_OUTPUT HASHTABLE_LOOKUP_HITS
    C1HWNCoC0 MD NDHWC FRACTAL_ZZ FRACTAL_NZ NCDHW DHWCN NDC1HWC0 FRACTAL_Z_3D
    CN NC DHWNC FRACTAL_Z_3D_TRANSPOSE FRACTAL_ZN_LSTM FRACTAL_Z_G RESERVED ALL
    NULL ND_RNN_BIAS FRACTAL_ZN_RNN NYUV NYUV_A NCL FRACTAL_Z_WINO C1HWC0
    FRACTAL_NZ_C0_16 FRACTAL_NZ_C0_32 END MAX"""), module=__name__)
Format.__doc__ = "GE memory formats (FORMAT_END and FORMAT_MAX are boundaries)."

Placement = enum.IntEnum("Placement", [("PLACEMENT_HOST", 0), ("PLACEMENT_DEVICE", 1)],
                         module=__name__)

AttrValueType = enum.IntEnum("AttrValueType", [
    ("VT_NONE", 0), ("VT_STRING", 1), ("VT_FLOAT", 2), ("VT_BOOL", 3), ("VT_INT", 4),
    ("VT_TENSOR_DESC", 5), ("VT_TENSOR", 6), ("VT_BYTES", 7), ("VT_GRAPH", 8),
    ("VT_NAMED_ATTRS", 9), ("VT_LIST_LIST_INT", 10), ("VT_DATA_TYPE", 11),
    ("VT_LIST_LIST_FLOAT", 12), ("VT_LIST_BASE", 1000), ("VT_LIST_STRING", 1001),
    ("VT_LIST_FLOAT", 1002), ("VT_LIST_BOOL", 1003), ("VT_LIST_INT", 1004),
    ("VT_LIST_TENSOR_DESC", 1005), ("VT_LIST_TENSOR", 1006), ("VT_LIST_BYTES", 1007),
    ("VT_LIST_GRAPH", 1008), ("VT_LIST_NAMED_ATTRS", 1009), ("VT_LIST_DATA_TYPE", 1011),
], module=__name__)
