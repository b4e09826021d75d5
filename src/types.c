/*
 * Small public helpers over the data-type, format and attribute-type maps of
 * pyop.h. The tables are generated from the X-macro lists so they cannot
 * drift from the enums.
 */
#include "core.h"
#include "shape.h"

#include <string.h>

/* "float32" for PYOP_DTYPE_FLOAT32; NULL for a value outside the map. */
const char *pyop_dtype_name(int dtype) {
  switch (dtype) {
#define PYOP__DTYPE_NAME(name, value, str, size) \
  case value:                                    \
    return str;
    PYOP_DTYPE_MAP(PYOP__DTYPE_NAME)
#undef PYOP__DTYPE_NAME
  }
  return NULL;
}

/* Bytes per element; 0 for a value outside the map. */
size_t pyop_dtype_size(int dtype) {
  switch (dtype) {
#define PYOP__DTYPE_SIZE(name, value, str, size) \
  case value:                                    \
    return size;
    PYOP_DTYPE_MAP(PYOP__DTYPE_SIZE)
#undef PYOP__DTYPE_SIZE
  }
  return 0;
}

/*
 * Parses an exact numpy-style name ("float32", "bool"); no aliases, case
 * sensitive. PYOP_EINVAL (with a message listing the known names) when name
 * is NULL or unknown; *out_dtype is untouched then.
 */
int pyop_dtype_from_name(const char *name, int *out_dtype) {
  if (!name || !out_dtype)
    return pyop__error(PYOP_EINVAL, "pyop_dtype_from_name: name or out_dtype is NULL");
#define PYOP__DTYPE_PARSE(nm, value, str, size) \
  if (strcmp(name, str) == 0) {                 \
    *out_dtype = value;                         \
    return PYOP_OK;                             \
  }
  PYOP_DTYPE_MAP(PYOP__DTYPE_PARSE)
#undef PYOP__DTYPE_PARSE
#define PYOP__DTYPE_LIST(nm, value, str, size) " " str
  return pyop__error(PYOP_EINVAL, "unknown data type \"%.64s\" (known:%s)", name,
                     PYOP_DTYPE_MAP(PYOP__DTYPE_LIST));
#undef PYOP__DTYPE_LIST
}

/* "ND", "NCHW", ...; NULL for a value outside the map. */
const char *pyop_format_name(int format) {
  switch (format) {
#define PYOP__FORMAT_NAME(name, value, str) \
  case value:                               \
    return str;
    PYOP_FORMAT_MAP(PYOP__FORMAT_NAME)
#undef PYOP__FORMAT_NAME
  }
  return NULL;
}

/* Python spelling of an attribute type ("int", "list[list[int]]"); NULL when
 * unknown. */
const char *pyop_attr_type_name(int type) {
  switch (type) {
  case PYOP_ATTR_INT: return "int";
  case PYOP_ATTR_FLOAT: return "float";
  case PYOP_ATTR_BOOL: return "bool";
  case PYOP_ATTR_STR: return "str";
  case PYOP_ATTR_DTYPE: return "DataType";
  case PYOP_ATTR_LIST_INT: return "list[int]";
  case PYOP_ATTR_LIST_FLOAT: return "list[float]";
  case PYOP_ATTR_LIST_BOOL: return "list[bool]";
  case PYOP_ATTR_LIST_STR: return "list[str]";
  case PYOP_ATTR_LIST_DTYPE: return "list[DataType]";
  case PYOP_ATTR_LIST_LIST_INT: return "list[list[int]]";
  case PYOP_ATTR_TENSOR: return "Tensor";
  }
  return NULL;
}

/*
 * Product of shape[0..ndim) (1 for ndim 0) by shape.h's rule: 0 when a
 * dimension is 0, whatever the others. -1 when t is NULL, ndim is out of
 * 0..PYOP_MAX_DIMS, a dimension is negative, or a non-empty tensor's count
 * exceeds INT64_MAX.
 */
int64_t pyop_tensor_numel(const pyop_tensor *t) {
  if (!t || t->ndim < 0 || t->ndim > PYOP_MAX_DIMS) return -1;
  uint64_t n;
  if (pyop__shape_size(t->shape, t->ndim, 1, INT64_MAX, &n) != PYOP__SHAPE_OK) return -1;
  return (int64_t)n;
}

const char *pyop_version(void) { return PYOP_VERSION_STRING; }

int pyop_version_number(void) { return PYOP_VERSION_NUMBER; }
