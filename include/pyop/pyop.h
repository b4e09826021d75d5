/*
 * libpyop — load custom operators written in Python into a C or C++ host.
 *
 * This is the whole public host API. The library never exposes Python types:
 * everything that crosses is a plain C struct. Every fallible function returns
 * PYOP_OK (0) or a negative PYOP_E... code; the detail of the last failure on
 * the calling thread is pyop_last_error().
 *
 * Thread safety: every function may be called from any thread. libpyop never
 * calls into the bridge, Python or a host hook while it holds one of its own
 * locks. Lifecycle calls (load/unload/shutdown) are serialised: one that finds
 * another in progress waits for it, so do not call them while holding the
 * Python GIL (ctypes.CDLL releases it; ctypes.PyDLL does not). From a host
 * hook run by a lifecycle call (see pyop_host_hooks), a lifecycle call on
 * the same thread fails at once with PYOP_EBUSY instead.
 *
 * A status a bridge returns that is not in PYOP_STATUS_MAP reaches the host
 * as PYOP_EINTERNAL, with what the bridge returned in the message.
 */
#ifndef PYOP_PYOP_H
#define PYOP_PYOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PYOP_BUILDING_LIBRARY)
#define PYOP_API __attribute__((visibility("default")))
#else
#define PYOP_API
#endif

/* PYOP_VERSION_MAJOR/MINOR/PATCH and PYOP_ABI_VERSION (the soname is
 * libpyop.so.PYOP_ABI_VERSION), configured from the CMake project version. */
#include "pyop/version.h"

#define PYOP__STRINGIFY2(x) #x
#define PYOP__STRINGIFY(x) PYOP__STRINGIFY2(x)
/* The header's version as a string literal: "0.1.0". */
#define PYOP_VERSION_STRING                                                   \
  PYOP__STRINGIFY(PYOP_VERSION_MAJOR)                                         \
  "." PYOP__STRINGIFY(PYOP_VERSION_MINOR) "." PYOP__STRINGIFY(PYOP_VERSION_PATCH)

/*
 * The version of the libpyop the process runs ("0.1.0"), static. It may be
 * newer than the header the host was compiled with (PYOP_VERSION_STRING);
 * the soname (PYOP_ABI_VERSION) says what stays compatible.
 */
PYOP_API const char *pyop_version(void);

/*
 * The version of the libpyop the process runs as one number, MAJOR * 10000
 * + MINOR * 100 + PATCH (0.1.0 is 100), to compare with PYOP_VERSION_NUMBER
 * (the header's) or a minimum the host needs:
 * pyop_version_number() >= PYOP_VERSION_NUMBER_OF(0, 2, 0).
 */
PYOP_API int pyop_version_number(void);

/*
 * Versioned structs (those that start with struct_size: pyop_options,
 * pyop_exec_ctx, pyop_host_hooks, pyop_op_info and the bridge ABI's):
 * - they grow only at the end, and never end in padding (an explicit
 *   reserved member fills it), so every added member changes sizeof and a
 *   struct_size tells which version the caller has;
 * - a reader takes a member whole or not at all: a member that struct_size
 *   does not hold whole (an older caller) is not read and has its default;
 * - reserved members are never read and never reused.
 * PYOP_MEMBER_END(type, m) is the struct_size that holds m whole;
 * PYOP_STRUCT_HAS(type, p, m) whether p's struct_size does.
 */
#define PYOP_MEMBER_END(type, m) (offsetof(type, m) + sizeof(((type *)0)->m))
#define PYOP_STRUCT_HAS(type, p, m) ((p)->struct_size >= PYOP_MEMBER_END(type, m))

/* ---------------------------------------------------------------- status */

/*
 * X(NAME, value, message): the one list of status codes.
 *
 * PYOP_EINTR (since 0.1): a KeyboardInterrupt was raised in Python code a
 * call ran (a plugin's import, its constructor or a callback; Ctrl-C in a
 * Python host, or the plugin raising it). When the host itself is Python
 * code on the calling thread (ctypes), the interrupt is also handed back
 * to it (PyErr_SetInterrupt): it sees KeyboardInterrupt when the call
 * returns. A Python exception otherwise is PYOP_EPYTHON.
 */
#define PYOP_STATUS_MAP(X)                                                    \
  X(OK, 0, "success")                                                         \
  X(EINVAL, -1, "invalid argument")                                           \
  X(ENOMEM, -2, "out of memory")                                              \
  X(ENOENT, -3, "no such file, directory or operator")                        \
  X(EIO, -4, "input/output error")                                            \
  X(ENOPYTHON, -5, "no Python runtime in the process")                        \
  X(ENOTINIT, -6, "the Python interpreter is not initialised")                \
  X(ENOBRIDGE, -7, "no usable bridge for the running Python")                 \
  X(EABI, -8, "bridge ABI mismatch")                                          \
  X(EDESCRIPTOR, -9, "invalid operator descriptor")                           \
  X(ECONFLICT, -10, "operator registration conflict")                         \
  X(EPYTHON, -11, "a Python exception was raised")                            \
  X(EPLUGIN, -12, "a plugin failed to load")                                  \
  X(EBUSY, -13, "resource busy")                                              \
  X(ESTATE, -14, "operation not valid in the current state")                  \
  X(EUNSUPPORTED, -15, "operation not supported by this operator")            \
  X(ESECURITY, -16, "refused by the file security policy")                    \
  X(ELAUNCH, -17, "kernel launch plan invalid or failed")                     \
  X(EHOST, -18, "a host callback failed")                                     \
  X(EINTERNAL, -19, "internal error")                                         \
  X(ECONTRACT, -20, "the operator broke its contract")                        \
  X(EFORKED, -21, "libpyop cannot be used in a process forked after a load") \
  X(EINTR, -22, "interrupted: KeyboardInterrupt in Python code")

typedef enum pyop_status {
#define PYOP__STATUS_ENUM(name, value, msg) PYOP_##name = (value),
  PYOP_STATUS_MAP(PYOP__STATUS_ENUM)
#undef PYOP__STATUS_ENUM
} pyop_status;

/* "PYOP_EINVAL" for PYOP_EINVAL; "PYOP_UNKNOWN" for a value not in the map. */
PYOP_API const char *pyop_status_name(int status);
/* A short static description of the code ("invalid argument"). */
PYOP_API const char *pyop_strerror(int status);
/*
 * The full message of the last failure on the calling thread: what failed,
 * where, and why. "" when nothing failed yet. The string stays valid until the
 * next libpyop call on this thread that fails.
 */
PYOP_API const char *pyop_last_error(void);
/* The last failure's status on this thread (PYOP_OK when none). */
PYOP_API int pyop_last_status(void);

/* ------------------------------------------------------------- logging */

typedef enum pyop_log_level {
  PYOP_LOG_ERROR = 0,
  PYOP_LOG_WARN = 1,
  PYOP_LOG_INFO = 2,
  PYOP_LOG_DEBUG = 3
} pyop_log_level;

/*
 * Sets the process's log level: lines at level or more severe (a lower
 * value) are logged, the others cost one atomic load. It replaces what
 * PYOP_LOG says (read at the first log line or pyop_get_log_level, unless
 * this was called first). Any thread, any time; calls in progress on other
 * threads see it at their next line. PYOP_EINVAL for a level outside
 * PYOP_LOG_ERROR..PYOP_LOG_DEBUG (the level is then unchanged).
 */
PYOP_API int pyop_set_log_level(int level);
/* The log level in force (PYOP_LOG's, warn by default, or the last
 * pyop_set_log_level). */
PYOP_API int pyop_get_log_level(void);

/* ----------------------------------------------------------- data types */

/* Element types. Names follow numpy: pyop_dtype_name() gives "float32". */
#define PYOP_DTYPE_MAP(X)                                                     \
  X(FLOAT32, 0, "float32", 4)                                                 \
  X(FLOAT16, 1, "float16", 2)                                                 \
  X(BFLOAT16, 2, "bfloat16", 2)                                               \
  X(FLOAT64, 3, "float64", 8)                                                 \
  X(INT8, 4, "int8", 1)                                                       \
  X(INT16, 5, "int16", 2)                                                     \
  X(INT32, 6, "int32", 4)                                                     \
  X(INT64, 7, "int64", 8)                                                     \
  X(UINT8, 8, "uint8", 1)                                                     \
  X(UINT16, 9, "uint16", 2)                                                   \
  X(UINT32, 10, "uint32", 4)                                                  \
  X(UINT64, 11, "uint64", 8)                                                  \
  X(BOOL, 12, "bool", 1)

typedef enum pyop_dtype {
#define PYOP__DTYPE_ENUM(name, value, str, size) PYOP_DTYPE_##name = (value),
  PYOP_DTYPE_MAP(PYOP__DTYPE_ENUM)
#undef PYOP__DTYPE_ENUM
  PYOP_DTYPE_COUNT
} pyop_dtype;

/* "float32"; NULL for an unknown value. */
PYOP_API const char *pyop_dtype_name(int dtype);
/* Bytes per element; 0 for an unknown value. */
PYOP_API size_t pyop_dtype_size(int dtype);
/* Parses a numpy-style name; PYOP_EINVAL when unknown. */
PYOP_API int pyop_dtype_from_name(const char *name, int *out_dtype);

/* Memory layouts a tensor may declare. Names as pyop.Format in Python. */
#define PYOP_FORMAT_MAP(X)                                                    \
  X(ND, 0, "ND")                                                              \
  X(NCHW, 1, "NCHW")                                                          \
  X(NHWC, 2, "NHWC")                                                          \
  X(NC1HWC0, 3, "NC1HWC0")                                                    \
  X(FRACTAL_NZ, 4, "FRACTAL_NZ")

typedef enum pyop_format {
#define PYOP__FORMAT_ENUM(name, value, str) PYOP_FORMAT_##name = (value),
  PYOP_FORMAT_MAP(PYOP__FORMAT_ENUM)
#undef PYOP__FORMAT_ENUM
  PYOP_FORMAT_COUNT
} pyop_format;

PYOP_API const char *pyop_format_name(int format);

#define PYOP_MAX_DIMS 8

/*
 * A tensor as it crosses every boundary: a plain struct, copied by value.
 * For a description (infer_meta) data is NULL. nbytes is the size of the
 * buffer data points to; the host owns that memory.
 */
typedef struct pyop_tensor {
  void *data;
  int32_t dtype;  /* pyop_dtype */
  int32_t format; /* pyop_format */
  int32_t ndim;   /* 0 .. PYOP_MAX_DIMS */
  int32_t reserved;
  int64_t shape[PYOP_MAX_DIMS];
  uint64_t nbytes;
} pyop_tensor;

/*
 * Number of elements of shape[0..ndim) (1 for a scalar, 0 when a dim is 0,
 * whatever the other dims: {0, 2^62, 2^62} and {2^62, 2^62, 0} are both 0);
 * -1 for a bad shape (t NULL, ndim outside 0..PYOP_MAX_DIMS, any negative
 * dim, wherever it is) or when a non-empty shape's product overflows
 * int64_t. Every size libpyop computes follows this rule.
 */
PYOP_API int64_t pyop_tensor_numel(const pyop_tensor *t);

/*
 * One input slot: a required input has count 1, an absent optional input
 * count 0, a dynamic input any count.
 */
typedef struct pyop_tensor_list {
  const pyop_tensor *items;
  size_t count;
} pyop_tensor_list;

/* --------------------------------------------------------- attributes */

typedef enum pyop_attr_type {
  PYOP_ATTR_INT = 1,
  PYOP_ATTR_FLOAT = 2,
  PYOP_ATTR_BOOL = 3,
  PYOP_ATTR_STR = 4,
  PYOP_ATTR_DTYPE = 5,
  PYOP_ATTR_LIST_INT = 6,
  PYOP_ATTR_LIST_FLOAT = 7,
  PYOP_ATTR_LIST_BOOL = 8,
  PYOP_ATTR_LIST_STR = 9,
  PYOP_ATTR_LIST_DTYPE = 10,
  PYOP_ATTR_LIST_LIST_INT = 11,
  /*
   * A constant tensor (weights, a lookup table): u.tensor points to a
   * description with data. pyop_op_create copies the bytes (shape x dtype)
   * into the instance, so the host's buffer may be freed after the call; the
   * op sees a read-only Tensor valid for the instance's life. A Tensor
   * attribute is always required (no default).
   */
  PYOP_ATTR_TENSOR = 12
} pyop_attr_type;

/* "int", "list[float]", "Tensor", ...; NULL when unknown. */
PYOP_API const char *pyop_attr_type_name(int type);

/* A string as a (pointer, length) view; never NUL-terminated by contract. */
typedef struct pyop_str {
  const char *data;
  size_t len;
} pyop_str;

typedef struct pyop_int_list {
  const int64_t *items;
  size_t count;
} pyop_int_list;

/*
 * A typed attribute value. Only the member selected by type is read:
 *   INT i, FLOAT f, BOOL b, STR s, DTYPE dtype,
 *   LIST_INT ints, LIST_FLOAT floats, LIST_BOOL bools, LIST_STR strs,
 *   LIST_DTYPE dtypes, LIST_LIST_INT int_lists, TENSOR tensor.
 * Values are borrowed: the receiver copies what it keeps.
 */
typedef struct pyop_attr_value {
  int32_t type; /* pyop_attr_type */
  int32_t reserved;
  union {
    int64_t i;
    double f;
    bool b;
    int32_t dtype;
    pyop_str s;
    struct { const int64_t *items; size_t count; } ints;
    struct { const double *items; size_t count; } floats;
    struct { const bool *items; size_t count; } bools;
    struct { const pyop_str *items; size_t count; } strs;
    struct { const int32_t *items; size_t count; } dtypes;
    struct { const pyop_int_list *items; size_t count; } int_lists;
    const pyop_tensor *tensor;
  } u;
} pyop_attr_value;

/* A named attribute as the host passes it when creating an op instance. */
typedef struct pyop_attr {
  const char *name;
  pyop_attr_value value;
} pyop_attr;

/* ------------------------------------------------ building values inline */

/*
 * Helpers that build tensors and attributes in one expression, the same in
 * C and C++ (no designated initializers needed):
 *
 *   int64_t shape[] = {2, 3};
 *   pyop_tensor x = pyop_tensor_of(buf, PYOP_DTYPE_FLOAT32, 2, shape);
 *   pyop_attr attrs[] = {pyop_attr_float("alpha", 2.0), pyop_attr_int("axis", 1)};
 *
 * Everything they take is borrowed, as for every value the host passes:
 * names, strings and arrays must stay valid for the call they are passed to.
 */

/* A tensor with nothing set: data NULL, FLOAT32, ND, a scalar (ndim 0). */
#define PYOP_TENSOR_INIT {NULL, 0, 0, 0, 0, {0, 0, 0, 0, 0, 0, 0, 0}, 0}

/*
 * A tensor over data (NULL for a description) of ndim dimensions copied
 * from shape (at most PYOP_MAX_DIMS are copied; a larger ndim is kept and
 * refused by the call it is passed to). nbytes is the element count times
 * the dtype's size, 0 when unknown or on overflow. Format ND.
 */
static inline pyop_tensor pyop_tensor_of(void *data, int32_t dtype, int32_t ndim,
                                         const int64_t *shape) {
  pyop_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = dtype;
  t.format = PYOP_FORMAT_ND;
  t.ndim = ndim;
  for (int32_t i = 0; shape != NULL && i < ndim && i < PYOP_MAX_DIMS; i++)
    t.shape[i] = shape[i];
  int64_t n = pyop_tensor_numel(&t);
  size_t size = pyop_dtype_size(dtype);
  if (n >= 0 && size != 0 && (uint64_t)n <= UINT64_MAX / size)
    t.nbytes = (uint64_t)n * size;
  return t;
}

/* One input slot of count tensors (1 for a required input). */
static inline pyop_tensor_list pyop_tensor_list_of(const pyop_tensor *items, size_t count) {
  pyop_tensor_list l;
  l.items = items;
  l.count = count;
  return l;
}

/* A pyop_str over a NUL-terminated string (NULL gives an empty string). */
static inline pyop_str pyop_str_of(const char *s) {
  pyop_str v;
  v.data = s;
  v.len = s != NULL ? strlen(s) : 0;
  return v;
}

/* An attribute of the given type, its value zero (set the member of u). */
static inline pyop_attr pyop_attr_of_type(const char *name, int32_t type) {
  pyop_attr a;
  memset(&a, 0, sizeof a);
  a.name = name;
  a.value.type = type;
  return a;
}

static inline pyop_attr pyop_attr_int(const char *name, int64_t v) {
  pyop_attr a = pyop_attr_of_type(name, PYOP_ATTR_INT);
  a.value.u.i = v;
  return a;
}
static inline pyop_attr pyop_attr_float(const char *name, double v) {
  pyop_attr a = pyop_attr_of_type(name, PYOP_ATTR_FLOAT);
  a.value.u.f = v;
  return a;
}
static inline pyop_attr pyop_attr_bool(const char *name, bool v) {
  pyop_attr a = pyop_attr_of_type(name, PYOP_ATTR_BOOL);
  a.value.u.b = v;
  return a;
}
/* s is NUL-terminated; its bytes are borrowed. */
static inline pyop_attr pyop_attr_str(const char *name, const char *s) {
  pyop_attr a = pyop_attr_of_type(name, PYOP_ATTR_STR);
  a.value.u.s = pyop_str_of(s);
  return a;
}
static inline pyop_attr pyop_attr_dtype(const char *name, int32_t dtype) {
  pyop_attr a = pyop_attr_of_type(name, PYOP_ATTR_DTYPE);
  a.value.u.dtype = dtype;
  return a;
}
static inline pyop_attr pyop_attr_ints(const char *name, const int64_t *items, size_t count) {
  pyop_attr a = pyop_attr_of_type(name, PYOP_ATTR_LIST_INT);
  a.value.u.ints.items = items;
  a.value.u.ints.count = count;
  return a;
}
static inline pyop_attr pyop_attr_floats(const char *name, const double *items, size_t count) {
  pyop_attr a = pyop_attr_of_type(name, PYOP_ATTR_LIST_FLOAT);
  a.value.u.floats.items = items;
  a.value.u.floats.count = count;
  return a;
}
static inline pyop_attr pyop_attr_bools(const char *name, const bool *items, size_t count) {
  pyop_attr a = pyop_attr_of_type(name, PYOP_ATTR_LIST_BOOL);
  a.value.u.bools.items = items;
  a.value.u.bools.count = count;
  return a;
}
static inline pyop_attr pyop_attr_strs(const char *name, const pyop_str *items, size_t count) {
  pyop_attr a = pyop_attr_of_type(name, PYOP_ATTR_LIST_STR);
  a.value.u.strs.items = items;
  a.value.u.strs.count = count;
  return a;
}
static inline pyop_attr pyop_attr_dtypes(const char *name, const int32_t *items, size_t count) {
  pyop_attr a = pyop_attr_of_type(name, PYOP_ATTR_LIST_DTYPE);
  a.value.u.dtypes.items = items;
  a.value.u.dtypes.count = count;
  return a;
}
static inline pyop_attr pyop_attr_int_lists(const char *name, const pyop_int_list *items,
                                            size_t count) {
  pyop_attr a = pyop_attr_of_type(name, PYOP_ATTR_LIST_LIST_INT);
  a.value.u.int_lists.items = items;
  a.value.u.int_lists.count = count;
  return a;
}

/* ------------------------------------------------------- op prototypes */

typedef enum pyop_io_kind {
  PYOP_IO_REQUIRED = 0,
  PYOP_IO_OPTIONAL = 1,
  PYOP_IO_DYNAMIC = 2
} pyop_io_kind;

/* Capability bits of an operator (union of its prototype and its impl). */
#define PYOP_CAP_INFER_META (1u << 0)
#define PYOP_CAP_EXECUTE (1u << 1)
#define PYOP_CAP_COMPILE (1u << 2)
#define PYOP_CAP_LAUNCH (1u << 3)
#define PYOP_CAP_ALL 0xFu

typedef struct pyop_io_info {
  const char *name;
  int32_t kind; /* pyop_io_kind */
} pyop_io_info;

/*
 * The data types one input or output accepts: a GE REG_OP's TensorType set
 * (.INPUT(x, TensorType({DT_FLOAT, DT_FLOAT16}))), or the DATATYPE set of
 * the type name it shares with others (.INPUT(x, "T") .INPUT(y, "T")
 * .DATATYPE(T, TensorType({DT_FLOAT}))). A plain value, never versioned:
 * pyop_op_info carries arrays of it.
 * - mask: PYOP_DTYPE_BIT(d) for each allowed pyop_dtype d; 0: any data type.
 *   A bit of no pyop_dtype (d >= PYOP_DTYPE_COUNT) is refused at
 *   registration (PYOP_EDESCRIPTOR).
 * - symbol: the type name ("T"), or NULL (or ""): the io has a set of its
 *   own. Every input and output with the same symbol has the same data
 *   type in one call (all tensors of a dynamic one too), as in GE; they
 *   must give the same mask. At most PYOP_MAX_DTYPE_SYMBOLS symbols per op.
 * What libpyop does with it: docs/host-guide.md, "Data type constraints".
 */
typedef struct pyop_dtype_set {
  uint64_t mask;
  const char *symbol;
} pyop_dtype_set;

/* The mask bit of data type d (a pyop_dtype). */
#define PYOP_DTYPE_BIT(d) ((uint64_t)1 << (d))
/* Distinct symbols (type names) one op may use. */
#define PYOP_MAX_DTYPE_SYMBOLS 64

/* Bits of pyop_op_info.input_flags. */
#define PYOP_INPUT_MUTATED (1u << 0) /* execute writes into this input */

typedef struct pyop_attr_info {
  const char *name;
  int32_t type; /* pyop_attr_type */
  bool required;
  pyop_attr_value default_value; /* valid when !required */
} pyop_attr_info;

/*
 * A read-only view of one registered operator. Obtained with pyop_op_get(),
 * released with pyop_op_info_release(); it stays valid (and unchanged) until
 * released, even across pyop_unload(). Strings are NUL-terminated.
 *
 * Outputs: n_outputs may be 0 (an in-place or side-effect op). An output of
 * kind PYOP_IO_DYNAMIC is a list whose length is known after infer_meta or
 * execute (use pyop_op_infer_meta_list / pyop_op_execute_list). Members are
 * only ever appended; those after capabilities came after the first layout
 * (every libpyop 0.1.0 has them): read them, and any later one, only when
 * struct_size covers them (PYOP_OP_INFO_HAS(info, member)).
 */
typedef struct pyop_op_info {
  size_t struct_size;
  const char *op_type;
  const char *proto_key;    /* descriptor key of the prototype */
  const char *proto_source; /* "file.py:12", or "<host>" */
  const char *impl_key;     /* NULL for an infer-only op */
  const char *impl_source;  /* NULL for an infer-only op */
  const pyop_io_info *inputs;
  size_t n_inputs;
  const pyop_io_info *outputs;
  size_t n_outputs;
  const pyop_attr_info *attrs;
  size_t n_attrs;
  uint32_t capabilities; /* PYOP_CAP_* */
  /*
   * n_inputs entries of PYOP_INPUT_* bits (PYOP_INPUT_MUTATED: execute
   * writes into that input in place; every other input is read-only), or
   * NULL when no input is mutated.
   */
  const uint32_t *input_flags;
  /*
   * n_outputs entries: the index of the input whose buffer output i is (an
   * alias of a mutated input: after execute outputs[i].data is that
   * input's data), or -1 for an output with its own buffer. NULL when no
   * output aliases an input.
   */
  const int32_t *output_alias;
  /* ---- added with interpreter lanes (read only when struct_size covers it) */
  /*
   * Why this op's instances run serially in the main interpreter although
   * the host asked for lanes (pyop_options.lanes): "" when they run in lanes
   * or when no lanes were asked for. E.g. "lane 1: loading Python plugins
   * failed: ImportError: module _ctypes does not support loading in
   * subinterpreters" (its plugin's path element could not be imported in
   * lane 1), or "Python 3.11 has no per-interpreter GIL (lanes need
   * CPython 3.12 or later)".
   */
  const char *serial_reason;
  /* The lanes its instances are placed in (round-robin), 0: serial, in the
   * main interpreter under its GIL. */
  uint32_t lanes;
#if UINTPTR_MAX > 0xffffffffu
  uint32_t reserved_; /* Not read: fills what would be trailing padding. */
#endif
  /* ---- added with data type constraints (read only when struct_size
   * covers them; pyop_register_host_prototype reads each one it covers) */
  /*
   * n_inputs entries: the data types each input accepts, or NULL: no
   * input is constrained (see pyop_dtype_set). pyop_op_infer_meta,
   * pyop_op_execute, pyop_op_compile, pyop_op_declare_launch_args and
   * pyop_op_launch refuse an input outside them with PYOP_EINVAL before the
   * op runs, naming the input, the given and the allowed types.
   */
  const pyop_dtype_set *input_dtypes;
  /*
   * n_outputs entries, or NULL. An execute whose op asks for an output of
   * another data type (or of another than its symbol has from the inputs)
   * fails with PYOP_ECONTRACT.
   */
  const pyop_dtype_set *output_dtypes;
} pyop_op_info;

/* Whether info (of struct_size bytes) has member m. */
#define PYOP_OP_INFO_HAS(info, m) PYOP_STRUCT_HAS(pyop_op_info, info, m)

/* Takes a reference to the operator's description; PYOP_ENOENT if unknown. */
PYOP_API int pyop_op_get(const char *op_type, const pyop_op_info **out);
PYOP_API void pyop_op_info_release(const pyop_op_info *info);

/*
 * The registered op types, sorted. *out_types is one allocation holding the
 * array and the strings; free it with pyop_free().
 */
PYOP_API int pyop_op_list(char ***out_types, size_t *out_count);
PYOP_API void pyop_free(void *p);

/*
 * Registers a prototype the host owns (no Python): op_type, inputs, outputs
 * and attrs are read from info, and input_flags/output_alias and
 * input_dtypes/output_dtypes (the REG_OP's TensorType/DATATYPE sets) when
 * struct_size covers them (other members are ignored; proto_key may be
 * NULL and then defaults to "host:<op_type>"). The strings and arrays are
 * copied. A Python implementation may
 * bind to it: one loaded later binds at the load, and one already loaded
 * without any prototype (pyop_op_create of it fails with PYOP_ENOENT
 * saying so) binds now. Stays registered across pyop_unload; same rules of
 * conflict as for Python prototypes.
 */
PYOP_API int pyop_register_host_prototype(const pyop_op_info *info);

/* -------------------------------------------------------- lifecycle */

/*
 * Scans ASCEND_CUSTOM_OPP_PATH and sets *need_load to true when it holds at
 * least one Python entry. Cheap when there is none (one readdir a directory).
 * An element it skips (relative, missing, unreadable) is warned about once:
 * here when nothing is to be loaded, else by the pyop_load that follows.
 */
PYOP_API int pyop_check_need_load(bool *need_load);

/*
 * Finds the running Python, loads the matching bridge and registers every op
 * the plugins declare. Idempotent: returns PYOP_OK at once when loaded,
 * unless the interpreter the ops were loaded into was finalized: then
 * PYOP_ENOTINIT while no Python runs, and in a new one it unloads them,
 * closes the bridge and loads afresh (PYOP_EBUSY while op instances live;
 * docs/host-guide.md, "A Python the host finalizes"). On failure the
 * registry is exactly as before the call (after such a retirement: as
 * after pyop_shutdown).
 */
PYOP_API int pyop_load(void);

/*
 * Drops every op registered by pyop_load and the plugins' Python state; the
 * bridge stays loaded so a following pyop_load re-imports the plugins.
 * Refuses with PYOP_EBUSY while any op instance is alive (destroy them
 * first): an unload never leaves an instance pointing at freed state.
 * PYOP_OK when nothing is loaded.
 */
PYOP_API int pyop_unload(void);

/*
 * Unloads, shuts the bridge down and closes it. If op instances are still
 * alive it unloads nothing, logs an error and returns PYOP_EBUSY. A later
 * pyop_load starts again from the scan.
 */
PYOP_API int pyop_shutdown(void);

/* Loader options. Initialise with PYOP_OPTIONS_INIT. */
typedef struct pyop_options {
  size_t struct_size;
  /*
   * When no Python interpreter is initialised in the process, start the
   * build's default Python (or the one start_python_key or lanes choose,
   * below) with an isolated configuration (no environment, no cwd on
   * sys.path), owned by libpyop. pyop_shutdown() releases the
   * ops, the plugins' modules and the pyop package but never finalizes that
   * Python (numpy and plugin threads cannot survive a Py_FinalizeEx): it
   * stays initialised and idle, and the next pyop_load uses it again. It
   * installs no signal handlers (SIGINT stays the host's). See
   * docs/host-guide.md.
   * Off by default: loading then requires a running interpreter.
   */
  bool start_python;
  /*
   * Development aid, costly: before every pyop_op_execute /
   * pyop_op_execute_list, run the op's infer_meta on the inputs and hold
   * the execute to what it says (as PYOP_EXEC_EXPECT_OUTPUTS does with
   * descriptions the host gives). Also switched on by the environment
   * variable PYOP_STRICT_OUTPUTS=1 (read at pyop_load). Ops without
   * infer_meta are not affected.
   */
  bool strict_outputs;
  /* Not read: fills what would be trailing padding (see "Versioned structs"). */
  char reserved_[sizeof(size_t) - 2 * sizeof(bool)];
  /* ---- added with interpreter lanes (read only when struct_size covers it) */
  /*
   * Interpreter lanes: run Python ops in parallel across host threads. 0
   * (the default): every Python op runs in the one interpreter the bridge
   * found or started, under its GIL, as before. 1..PYOP_MAX_LANES: on
   * CPython 3.12+ (not free-threaded) the bridge also starts that many
   * sub-interpreters with their own GIL, imports the plugins in each, and
   * every op instance of an op that loads in all of them is placed in one
   * lane for its life (round-robin; pyop_op_lane). An op whose plugin
   * cannot be imported in a lane (an extension that refuses
   * sub-interpreters: numpy, single-phase modules) stays serial in the main
   * interpreter; pyop_op_info.lanes and .serial_reason say which and why.
   * On a Python without per-interpreter GILs the load works as with 0, a
   * warning names the reason and every op reports serial. Fixed while the
   * bridge is open (as start_python). See docs/host-guide.md, "Python ops
   * in parallel".
   */
  uint32_t lanes;
#if UINTPTR_MAX > 0xffffffffu
  /* Not read: fills what would be trailing padding (see "Versioned structs"). */
  uint32_t reserved_lanes_;
#define PYOP__OPTIONS_LANES_INIT , 0, 0
#else
#define PYOP__OPTIONS_LANES_INIT , 0
#endif
  /* ---- added with the start_python choice (read only when struct_size covers it) */
  /*
   * Which Python start_python starts: the runtime key of one of this
   * libpyop's bridges, which is the name of its artifact directory
   * (<libdir>/pyop/artifacts/cp312-x86_64: "cp312-x86_64"; `pyop doctor`
   * lists them). NULL or "" (the default): the build's default Python (the
   * first of -DPYOP_PYTHONS), unless lanes are asked for and that Python
   * cannot run them (older than 3.12, or free-threaded): then the first
   * bridge of the build, in -DPYOP_PYTHONS order, whose Python can (an info
   * line names it); when none can, a warning names the bridges there are
   * and how to build one that can. Copied by pyop_set_options (at most 63
   * characters of [A-Za-z0-9_.-]); read only when start_python starts a
   * Python: a Python already in the process is used as it is (a warning
   * says so when it is not this one). Fixed while the bridge is open, as
   * start_python.
   */
  const char *start_python_key;
} pyop_options;

/* The largest pyop_options.lanes. */
#define PYOP_MAX_LANES 64u

#define PYOP_OPTIONS_INIT \
  {sizeof(pyop_options), false, false, {0} PYOP__OPTIONS_LANES_INIT, NULL}

/*
 * Sets the options of the next pyop_load. While ops are loaded it returns
 * PYOP_ESTATE (call pyop_unload first). After pyop_unload the bridge stays
 * open: strict_outputs may change then (it applies at the next pyop_load),
 * start_python, start_python_key and lanes may not (PYOP_ESTATE naming it:
 * call pyop_shutdown first, they choose how the bridge starts). A malformed
 * start_python_key is PYOP_EINVAL.
 */
PYOP_API int pyop_set_options(const pyop_options *options);

/* -------------------------------------------------------- op instances */

/*
 * Execution context of one execute/launch call. Initialise with
 * PYOP_EXEC_CTX_INIT. The host owns all memory:
 * - alloc_output(user, index, t): t arrives with dtype, format, ndim, shape
 *   and nbytes set; the host sets t->data (and may keep its own bookkeeping).
 *   Return 0, or non-zero to fail the call with PYOP_EHOST. For a dynamic
 *   output it is called once per tensor of the list, with the output's
 *   index.
 *   When alloc_output is NULL the host must pass outputs already allocated,
 *   and an op asking for output i gets outputs[i] if its shape and dtype
 *   match what it asks for.
 * - alloc_workspace(user, nbytes, &p): scratch memory valid for the call.
 * - flags (PYOP_EXEC_CTX_INIT sets 0; read as 0 when struct_size does not
 *   cover it):
 *   PYOP_EXEC_EXPECT_OUTPUTS: the outputs passed in describe what the host
 *   expects of each output (dtype, format, shape; typically what
 *   pyop_op_infer_meta just returned; for pyop_op_execute_list also the
 *   count of a dynamic output). An op that asks for anything else fails the
 *   call with PYOP_ECONTRACT, naming the op, the output, what was expected
 *   and what was asked.
 */
typedef struct pyop_exec_ctx {
  size_t struct_size;
  void *user;
  int (*alloc_output)(void *user, size_t index, pyop_tensor *t);
  int (*alloc_workspace)(void *user, uint64_t nbytes, void **out);
  void *stream; /* passed through to kernels as an opaque value */
  uint32_t flags; /* PYOP_EXEC_*; other bits are refused (PYOP_EINVAL) */
#if UINTPTR_MAX > 0xffffffffu
  /* Not read: fills what would be trailing padding (see "Versioned structs"). */
  uint32_t reserved_;
#define PYOP__EXEC_CTX_RESERVED_INIT , 0
#else
#define PYOP__EXEC_CTX_RESERVED_INIT
#endif
} pyop_exec_ctx;

#define PYOP_EXEC_EXPECT_OUTPUTS (1u << 0)
/* Every flag this libpyop knows. */
#define PYOP_EXEC_KNOWN_FLAGS PYOP_EXEC_EXPECT_OUTPUTS

#define PYOP_EXEC_CTX_INIT                                                    \
  {sizeof(pyop_exec_ctx), NULL, NULL, NULL, NULL, 0 PYOP__EXEC_CTX_RESERVED_INIT}

/*
 * One output slot of pyop_op_infer_meta_list / pyop_op_execute_list: room
 * for capacity tensors (host memory); count is set by the call (1 for a
 * required output, the list's length for a dynamic one). With
 * PYOP_EXEC_EXPECT_OUTPUTS, items[0..count) on entry are the expectations.
 */
typedef struct pyop_output_list {
  pyop_tensor *items;
  size_t capacity;
  size_t count;
} pyop_output_list;

/* A live instance of an operator (one node of the host's graph). */
typedef struct pyop_op pyop_op;

/*
 * Creates an instance of op_type with the given attributes (names must exist;
 * missing optional ones take their defaults; ints are accepted for floats).
 * While any instance lives, pyop_unload refuses with PYOP_EBUSY.
 */
PYOP_API int pyop_op_create(const char *op_type, const pyop_attr *attrs,
                            size_t n_attrs, pyop_op **out);
/* Destroys an instance; NULL is ignored. */
PYOP_API void pyop_op_destroy(pyop_op *op);
/* The instance's operator description (borrowed, valid while op lives). */
PYOP_API const pyop_op_info *pyop_op_get_info(const pyop_op *op);
/* PYOP_CAP_* bits the instance supports. */
PYOP_API uint32_t pyop_op_capabilities(const pyop_op *op);
/* The interpreter lane the instance runs in for its life: 1..lanes, or 0
 * for the main interpreter (serial ops, no lanes asked for, NULL). */
PYOP_API uint32_t pyop_op_lane(const pyop_op *op);

/*
 * Shape/dtype inference: inputs carry descriptions (data may be NULL); fills
 * outputs[0..n_outputs) (data NULL). n_outputs must equal the op's output
 * count (0 for an op without outputs: outputs may then be NULL). An op with
 * a dynamic output needs pyop_op_infer_meta_list (PYOP_EINVAL here).
 */
PYOP_API int pyop_op_infer_meta(pyop_op *op, const pyop_tensor_list *inputs,
                                size_t n_inputs, pyop_tensor *outputs,
                                size_t n_outputs);

/*
 * Runs the op on host buffers. PYOP_OK only when the op returned normally
 * and produced every output (an output it never asked for, or one aliasing
 * an input it never bound, fails the call with PYOP_ECONTRACT); on success
 * outputs[i] describes output i as allocated through ctx (or as passed in,
 * see pyop_exec_ctx), an aliasing output the input it aliases. An op with
 * a dynamic output needs pyop_op_execute_list (PYOP_EINVAL here).
 */
PYOP_API int pyop_op_execute(pyop_op *op, const pyop_tensor_list *inputs,
                             size_t n_inputs, pyop_tensor *outputs,
                             size_t n_outputs, const pyop_exec_ctx *ctx);

/*
 * pyop_op_infer_meta for any op, dynamic outputs included: one
 * pyop_output_list per output. On success outputs[i].count holds the
 * number of tensors of output i and items[0..count) their descriptions.
 * When an output has more tensors than its capacity the call fails with
 * PYOP_EINVAL, naming it, and sets every count to what is needed (call
 * again with room for them).
 */
PYOP_API int pyop_op_infer_meta_list(pyop_op *op, const pyop_tensor_list *inputs,
                                     size_t n_inputs, pyop_output_list *outputs,
                                     size_t n_outputs);

/*
 * pyop_op_infer_meta_list for a host whose graph fixes how many tensors each
 * dynamic output has (a GE-style engine: a node's output anchors): for a
 * dynamic output, outputs[i].count on entry states that count (at most
 * capacity; required outputs' counts are not read). When infer_meta returns
 * another count the call fails with PYOP_ECONTRACT naming the output, the
 * count stated and the count returned, in GE's words ("instance count
 * mismatch"; GE's InferMeta raises TypeError there). Otherwise as
 * pyop_op_infer_meta_list.
 */
PYOP_API int pyop_op_infer_meta_expect(pyop_op *op, const pyop_tensor_list *inputs,
                                       size_t n_inputs, pyop_output_list *outputs,
                                       size_t n_outputs);

/*
 * pyop_op_execute for any op, dynamic outputs included: one
 * pyop_output_list per output. With ctx->alloc_output each tensor the op
 * asks for is allocated by the host and stored in items[k] (at most
 * capacity of them: one more fails the call); without it items[0..capacity)
 * must hold buffers, of which the op uses the first ones in order. On
 * success count holds the number of tensors produced. A dynamic output may
 * have zero tensors.
 */
PYOP_API int pyop_op_execute_list(pyop_op *op, const pyop_tensor_list *inputs,
                                  size_t n_inputs, pyop_output_list *outputs,
                                  size_t n_outputs, const pyop_exec_ctx *ctx);

/*
 * Compiles the op for these descriptions (PYOP_CAP_COMPILE). On success
 * *artifact (allocated; free with pyop_free; NULL when empty) and *len hold
 * what the op's compile stored with ctx.set_artifact().
 */
PYOP_API int pyop_op_compile(pyop_op *op, const pyop_tensor_list *inputs,
                             size_t n_inputs, const pyop_tensor *outputs,
                             size_t n_outputs, void **artifact, size_t *len);

/*
 * Declares the op's kernel launches for these descriptions (PYOP_CAP_LAUNCH):
 * runs the op's declare_launch_args, validates the plan (kernel library and
 * symbol, argument kinds, indices, scalar types) and keeps it in the
 * instance, replacing an earlier one. A wrong plan is an error here, never a
 * crash at launch: a kernel symbol must be a function (ELF STT_FUNC or
 * STT_GNU_IFUNC) defined in the kernel library itself; a data object, or a
 * function found only in one of its dependencies (libc's exit), is
 * PYOP_ELAUNCH naming the symbol, the library and why.
 */
PYOP_API int pyop_op_declare_launch_args(pyop_op *op,
                                         const pyop_tensor_list *inputs,
                                         size_t n_inputs,
                                         const pyop_tensor *outputs,
                                         size_t n_outputs);

/*
 * Runs the declared plan with libffi on host buffers: outputs must already
 * be allocated (data set); workspaces come from ctx->alloc_workspace. When
 * no plan is declared yet it declares one first from these tensors (a call
 * into Python); after that no Python runs. Scalars in a plan are fixed at
 * declare time: declare again when shapes change.
 */
PYOP_API int pyop_op_launch(pyop_op *op, const pyop_tensor_list *inputs,
                            size_t n_inputs, const pyop_tensor *outputs,
                            size_t n_outputs, const pyop_exec_ctx *ctx);

/*
 * Concurrency of one instance: infer_meta and execute may run on the same
 * instance from several threads at once, and so may launch once a plan is
 * declared; compile and declare_launch_args must not run concurrently with
 * other calls on the same instance. Different instances are independent.
 */

/* ----------------------------------------------------------- host hooks */

/*
 * Optional host hooks. Initialise with PYOP_HOST_HOOKS_INIT; NULL members are
 * skipped. Hooks are never called with a libpyop lock held and may call any
 * libpyop function, except that a lifecycle call (pyop_load, pyop_unload,
 * pyop_shutdown, pyop_set_options, the GE entries) from a hook that a
 * lifecycle call runs (owns_op, on_register, on_unregister, and log during
 * load/unload/shutdown) returns PYOP_EBUSY at once. A hook's own failures do
 * not replace the last error of the call that ran it. A line logged while
 * the log hook runs on the same thread goes to stderr, not to the hook.
 */
typedef struct pyop_host_hooks {
  size_t struct_size;
  void *user;
  /* Non-zero when the host already owns op_type: registering it conflicts. */
  int (*owns_op)(void *user, const char *op_type);
  /* Called once per op after a load committed (mirror into host factories). */
  void (*on_register)(void *user, const pyop_op_info *info);
  /* Called once per op when an unload removed it. */
  void (*on_unregister)(void *user, const char *op_type);
  /* Receives every log line at or above the PYOP_LOG level. */
  void (*log)(void *user, int level, const char *line);
} pyop_host_hooks;

#define PYOP_HOST_HOOKS_INIT {sizeof(pyop_host_hooks), NULL, NULL, NULL, NULL, NULL}

/*
 * Installs hooks (copied; a member the struct_size does not hold whole stays
 * NULL); NULL removes them. When it returns, no call of the previous hooks
 * is running or will start, so their user data may be freed — except when
 * called from inside a hook: it then returns without waiting for the hook
 * calls other threads had started (none starts after it returns). See
 * docs/host-guide.md, "Hooks".
 */
PYOP_API int pyop_set_host_hooks(const pyop_host_hooks *hooks);

/* -------------------------------------------------------- diagnostics */

/*
 * The runtime key of the Python in this process, as one line
 * ("cp311-x86_64"), written NUL-terminated into buf.
 */
PYOP_API int pyop_runtime_key(char *buf, size_t len);

/*
 * A multi-line report: the runtime key, each ASCEND_CUSTOM_OPP_PATH element
 * and its verdict, each bridge candidate and its status. *out is allocated;
 * free it with pyop_free().
 */
PYOP_API int pyop_doctor(char **out);

/* -------------------------------------------------- graph-engine entries */

/* Wrappers over pyop_check_need_load / pyop_load / pyop_unload / pyop_shutdown
 * with the names and C linkage a GE-style engine calls. 0 = success. */
PYOP_API int CheckNeedLoadPythonCustomOps(bool *need_load);
PYOP_API int LoadPythonCustomOps(void);
PYOP_API void UnloadPythonCustomOps(void);
PYOP_API void ShutdownPythonCustomOpsForProcess(void);

#ifdef __cplusplus
}
#endif

#endif /* PYOP_PYOP_H */
