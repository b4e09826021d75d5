/*
 * Descriptors (descriptor.c; docs/design.md §Registry): validation of the
 * views a bridge hands over, their deep copies (pyop__proto, pyop__impl, one
 * allocation each) and the comparison of two copies.
 */
#ifndef PYOP_DESCRIPTOR_H
#define PYOP_DESCRIPTOR_H

#include "core.h"
#include "dtypes.h"
#include "hashmap.h"
#include "pyop/bridge_abi.h"
#include "str_view.h"

/* Sanity limits of a descriptor (PYOP_EDESCRIPTOR beyond them). */
#define PYOP__MAX_IOS 1024          /* inputs, outputs, attrs: each */
#define PYOP__MAX_NAME_LEN 256      /* op type, io and attr names */
#define PYOP__MAX_KEY_LEN 1024      /* descriptor keys */
#define PYOP__MAX_SOURCE_LEN 4096   /* source file paths */
#define PYOP__MAX_DIGEST_LEN 256    /* source digests (bridge ABI 1.3) */
#define PYOP__MAX_REASON_LEN 1024   /* serial reasons of lanes (bridge ABI 1.6) */
#define PYOP__MAX_LIST_LEN (1u << 20) /* elements of a list attribute value */
#define PYOP__MAX_STR_VALUE_LEN (1u << 20)

/*
 * Descriptor validation (also the fuzz target): checks struct_size, every
 * string view (NULL data with len > 0, embedded NUL, empty required string),
 * names are identifiers and unique across inputs/outputs/attrs, known kinds,
 * attribute types and default values, caps and callbacks consistent.
 * Returns PYOP_OK or PYOP_EDESCRIPTOR with a message naming the op type (when
 * readable), the field and the reason.
 */
int pyop__validate_proto_view(const pyop_proto_view *v);
/* Whether a proto view's struct_size covers the members of bridge ABI 1.1. */
bool pyop__proto_view_v11(const pyop_proto_view *v);
int pyop__validate_impl_view(const pyop_impl_view *v);

/*
 * A validated deep copy of a prototype view, in one allocation (free with
 * pyop__proto_free). Strings are NUL-terminated; ctx/callbacks are the
 * bridge's (host prototypes: NULL).
 */
typedef struct pyop__proto {
  char *op_type;
  char *key;
  char *source; /* "file.py:12", or "<host>" */
  uint32_t line; /* the 12 of source; 0 for a host prototype */
  char *digest;  /* the view's source_digest, "" when none */
  char *serial_reason; /* the view's (ABI 1.6), "" when none */
  uint32_t lanes;      /* the view's lanes (ABI 1.6): 0 serial */
  bool host;     /* registered with pyop_register_host_prototype */
  uint32_t caps;
  pyop_io_info *inputs;
  size_t n_inputs;
  pyop_io_info *outputs;
  size_t n_outputs;
  pyop_attr_info *attrs;
  size_t n_attrs;
  uint32_t *input_flags;  /* NULL when no input is mutated */
  int32_t *output_alias;  /* NULL when no output aliases an input */
  bool dynamic_outputs;   /* some output is PYOP_IO_DYNAMIC */
  size_t n_tensor_attrs;  /* attributes of type PYOP_ATTR_TENSOR */
  pyop__dtypes dtypes;     /* data type constraints (ABI 1.7 views) */
  /* attr name -> attr index + 1 (hashmap.h; fixed slots in the copy). */
  pyop__hmap attr_index;
  void *ctx;
  const pyop_op_callbacks *callbacks;
} pyop__proto;

/* A validated deep copy of an implementation view (one allocation). */
typedef struct pyop__impl {
  char *op_type;
  char *key;
  char *source;
  uint32_t line;
  char *digest; /* "" when none */
  char *serial_reason; /* as in pyop__proto */
  uint32_t lanes;
  uint32_t caps;
  void *ctx;
  const pyop_op_callbacks *callbacks;
} pyop__impl;

/* Validates v and deep-copies it. host: a host prototype (source "<host>").
 * PYOP_EDESCRIPTOR / PYOP_ENOMEM. */
int pyop__proto_copy(const pyop_proto_view *v, bool host, pyop__proto **out);
int pyop__impl_copy(const pyop_impl_view *v, pyop__impl **out);
void pyop__proto_free(pyop__proto *p);
void pyop__impl_free(pyop__impl *p);
/* "infer_meta|execute" (or "none") for caps, into buf; returns buf. */
const char *pyop__caps_str(uint32_t caps, char *buf, size_t n);
/* "required", "optional", "dynamic" or "unknown" (static). */
const char *pyop__io_kind_name(int32_t kind);
/* Index of the attr named name (NUL-terminated), or -1. O(1). */
long pyop__proto_attr_find(const pyop__proto *p, const char *name);
/*
 * Checks an attribute value of a known type: string views (NULL data with
 * len > 0, embedded NUL, length), list pointers and lengths, dtypes in range.
 * True when valid; else false with the reason appended to why.
 */
bool pyop__attr_value_check(const pyop_attr_value *v, pyop__sb *why);
/*
 * The string rules of descriptor views, for the other validators
 * (dtypes.c): NULL when s is a well-formed view of at most max bytes
 * without NUL (and non-empty when required), else the reason; whether s is
 * an identifier (the rule of io and attribute names).
 */
const char *pyop__view_problem(pyop_str s, bool required, size_t max);
bool pyop__view_is_identifier(pyop_str s);
/* FNV-1a of a NUL-terminated string. */
uint64_t pyop__hash_str(const char *s);

#endif
