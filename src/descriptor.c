/*
 * Descriptor views (bridge_abi.h): validation, deep copy and comparison.
 *
 * Everything a view says is checked before it is used (docs/design.md §ABI, §Registry):
 * struct_size before a member is read, every string view, identifiers,
 * uniqueness of names, kinds, attribute types and defaults, caps and
 * callbacks. A valid view is copied into ONE allocation (a two-pass bump
 * arena: measure, then copy), so a copy is one malloc and one free.
 *
 * Decisions:
 * - op types: 1..256 bytes of [A-Za-z_][A-Za-z0-9_.:-]* ("ScaledAdd",
 *   "my.ns:Op"); io and attribute names are identifiers [A-Za-z_][A-Za-z0-9_]*
 *   (1..256 bytes). This is the rule's authority; pyop/_signature.py checks
 *   the same early, and both are tested against tests/names.txt.
 * - keys (required) and source files (optional; empty gives "<unknown>")
 *   may not hold control characters, so they print safely in messages.
 * - an attribute default must have exactly the declared type (no coercion
 *   at registration; coercions are for host values at pyop_op_create).
 * - required must be 0 or 1.
 * - ABI 1.0 views: at least one output, every output REQUIRED. ABI 1.1
 *   views (struct_size covering output_alias): any number of outputs, each
 *   REQUIRED or DYNAMIC (a list); input_flags may mark inputs MUTATED and
 *   output_alias may make a REQUIRED output the buffer of a REQUIRED mutated
 *   input (each input aliased at most once).
 * - a Tensor attribute is required (no default) and a 1.1 feature.
 * - ABI 1.3 views may give a source_digest (optional, at most
 *   PYOP__MAX_DIGEST_LEN bytes, no control characters): opaque, kept as it
 *   is and compared byte for byte by the registry (docs/bridge-abi.md,
 *   "Source digests"). An older view has none (kept as "").
 * - ABI 1.6 views say whether they run in interpreter lanes: lanes (0..
 *   PYOP_MAX_LANES; > 0 needs callbacks->create_holder_in) or a serial
 *   reason (optional, one line, at most PYOP__MAX_REASON_LEN bytes), never
 *   both. Not compared: the same descriptor stays the same op whatever
 *   lanes it runs in. An older view runs serially, with no reason.
 * - ABI 1.7 views may constrain the data types of inputs and outputs
 *   (dtypes.c); an older view constrains none.
 */
#include "descriptor.h"

#include <inttypes.h>
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

/* Bytes of a view up to and including member m (what ABI 1.0 defines). */

/* ------------------------------------------------------------- helpers */

uint64_t pyop__hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

/* FNV-1a of a (pointer, length) view. */
static uint64_t hash_view(const char *s, size_t len) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

static bool is_alpha_(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* descriptor.h */
const char *pyop__caps_str(uint32_t caps, char *buf, size_t n) {
  static const char *const names[] = {"infer_meta", "execute", "compile", "launch"};
  size_t used = 0;
  buf[0] = '\0';
  for (unsigned i = 0; i < 4; i++) {
    if (!(caps & (1u << i))) continue;
    int w = snprintf(buf + used, n - used, "%s%s", used ? "|" : "", names[i]);
    if (w < 0 || (size_t)w >= n - used) return buf;
    used += (size_t)w;
  }
  if (caps & ~PYOP_CAP_ALL)
    snprintf(buf + used, n - used, "%s0x%x", used ? "|" : "", caps & ~PYOP_CAP_ALL);
  else if (!used)
    snprintf(buf, n, "none");
  return buf;
}

/* descriptor.h */
const char *pyop__io_kind_name(int32_t k) {
  switch (k) {
  case PYOP_IO_REQUIRED: return "required";
  case PYOP_IO_OPTIONAL: return "optional";
  case PYOP_IO_DYNAMIC: return "dynamic";
  }
  return "unknown";
}

/* ---------------------------------------------------------- validation */

/* The state of one validation: what is validated and, once readable, its
 * op type and source (the message prefix is only built on failure). */
typedef struct vctx {
  const char *what; /* "prototype" / "implementation" */
  pyop_str op_type; /* len 0 until validated */
  pyop_str file;    /* len 0 until validated */
  uint32_t line;
} vctx;

static int vfail(const vctx *c, const char *fmt, ...) PYOP__PRINTF(2, 3);
static int vfail(const vctx *c, const char *fmt, ...) {
  char prefix[700], msg[1024];
  if (c->op_type.len && c->file.len)
    snprintf(prefix, sizeof prefix, "%s \"%.*s\" (%.*s:%u)", c->what, (int)c->op_type.len,
             c->op_type.data, (int)(c->file.len > 512 ? 512 : c->file.len), c->file.data,
             (unsigned)c->line);
  else if (c->op_type.len)
    snprintf(prefix, sizeof prefix, "%s \"%.*s\"", c->what, (int)c->op_type.len,
             c->op_type.data);
  else
    snprintf(prefix, sizeof prefix, "%s", c->what);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return pyop__error(PYOP_EDESCRIPTOR, "%s: %s", prefix, msg);
}

static bool has_control(pyop_str s) {
  for (size_t i = 0; i < s.len; i++) {
    unsigned char ch = (unsigned char)s.data[i];
    if (ch < 0x20 || ch == 0x7f) return true;
  }
  return false;
}

static bool is_identifier(pyop_str s) {
  if (s.len == 0 || !is_alpha_(s.data[0])) return false;
  for (size_t i = 1; i < s.len; i++)
    if (!is_alpha_(s.data[i]) && !is_digit(s.data[i])) return false;
  return true;
}

const char *pyop__view_problem(pyop_str s, bool required, size_t max) {
  return pyop__str_view_problem(s, required, max);
}

bool pyop__view_is_identifier(pyop_str s) { return is_identifier(s); }

static bool is_op_type(pyop_str s) {
  if (s.len == 0 || !is_alpha_(s.data[0])) return false;
  for (size_t i = 1; i < s.len; i++) {
    char ch = s.data[i];
    if (!is_alpha_(ch) && !is_digit(ch) && ch != '.' && ch != ':' && ch != '-')
      return false;
  }
  return true;
}

/* Checks op_type, source and key of a view; records in c what is readable
 * for messages. The caller has checked struct_size. */
static int check_head(vctx *c, pyop_str op_type, pyop_str key, pyop_str file,
                      uint32_t line) {
  const char *why = pyop__str_view_problem(op_type, true, PYOP__MAX_NAME_LEN);
  if (why) return vfail(c, "op_type: %s", why);
  if (!is_op_type(op_type))
    return vfail(c, "op_type: \"%.*s\" is not a valid op type "
                 "([A-Za-z_][A-Za-z0-9_.:-]*)",
                 has_control(op_type) ? 0 : (int)op_type.len, op_type.data);
  c->op_type = op_type;
  why = pyop__str_view_problem(file, false, PYOP__MAX_SOURCE_LEN);
  if (!why && has_control(file)) why = "control character";
  if (why) return vfail(c, "source_file: %s", why);
  c->file = file;
  c->line = line;
  why = pyop__str_view_problem(key, true, PYOP__MAX_KEY_LEN);
  if (!why && has_control(key)) why = "control character";
  if (why) return vfail(c, "key: %s", why);
  return PYOP_OK;
}

/* Checks a source digest (optional). */
static int check_digest(const vctx *c, pyop_str digest) {
  const char *why = pyop__str_view_problem(digest, false, PYOP__MAX_DIGEST_LEN);
  if (!why && has_control(digest)) why = "control character";
  if (why) return vfail(c, "source_digest: %s", why);
  return PYOP_OK;
}

/* The source_digest of a view; empty when the view predates ABI 1.3. */
#define PROTO_DIGEST(v)                                                     \
  (PYOP__HAS(pyop_proto_view, v, source_digest) ? (v)->source_digest        \
                                                : (pyop_str){NULL, 0})
#define IMPL_DIGEST(v)                                                      \
  (PYOP__HAS(pyop_impl_view, v, source_digest) ? (v)->source_digest         \
                                               : (pyop_str){NULL, 0})

/* The lanes members of a view (ABI 1.6); none (serial, no reason) before. */
#define PROTO_REASON(v)                                                     \
  (PYOP__HAS(pyop_proto_view, v, serial_reason) ? (v)->serial_reason        \
                                                : (pyop_str){NULL, 0})
#define PROTO_LANES(v) (PYOP__HAS(pyop_proto_view, v, lanes) ? (v)->lanes : 0u)
#define IMPL_REASON(v)                                                      \
  (PYOP__HAS(pyop_impl_view, v, serial_reason) ? (v)->serial_reason         \
                                               : (pyop_str){NULL, 0})
#define IMPL_LANES(v) (PYOP__HAS(pyop_impl_view, v, lanes) ? (v)->lanes : 0u)

/*
 * Checks the lanes members: lanes at most PYOP_MAX_LANES, a serial reason
 * (optional, no control characters) only when lanes is 0, and a
 * create_holder_in to place holders when lanes > 0.
 */
static int check_lanes(const vctx *c, uint32_t caps, uint32_t lanes, pyop_str reason,
                       const pyop_op_callbacks *cb) {
  const char *why = pyop__str_view_problem(reason, false, PYOP__MAX_REASON_LEN);
  if (!why && has_control(reason)) why = "control character";
  if (why) return vfail(c, "serial_reason: %s", why);
  if (lanes > PYOP_MAX_LANES)
    return vfail(c, "lanes: %" PRIu32 " is out of range (0..%u)", lanes, PYOP_MAX_LANES);
  if (lanes && reason.len) return vfail(c, "lanes: %" PRIu32 " with a serial_reason", lanes);
  if (lanes && caps &&
      (cb->struct_size < PYOP__MEMBER_END(pyop_op_callbacks, create_holder_in) ||
       !cb->create_holder_in))
    return vfail(c, "lanes: %" PRIu32 " but callbacks have no create_holder_in", lanes);
  return PYOP_OK;
}

/* Checks a string value of an attribute (may be empty); the reason,
 * prefixed by what, appended to why when not. */
static bool value_str_ok(pyop_str s, const char *what, pyop__sb *why) {
  const char *p = pyop__str_view_problem(s, false, PYOP__MAX_STR_VALUE_LEN);
  if (p) pyop__sb_printf(why, "%s: %s", what, p);
  return p == NULL;
}

/* Checks a list's length and items pointer; the reason appended to why
 * when not. */
static bool list_ok(const void *items, size_t count, pyop__sb *why) {
  if (count > PYOP__MAX_LIST_LEN) {
    pyop__sb_printf(why, "list of %zu items (at most %u)", count, PYOP__MAX_LIST_LEN);
    return false;
  }
  if (count > 0 && !items) {
    pyop__sb_printf(why, "list of %zu %s with NULL items", count,
                    PYOP__PLURAL(count, "item", "items"));
    return false;
  }
  return true;
}

static bool dtype_ok(int32_t d) { return d >= 0 && d < PYOP_DTYPE_COUNT; }

/* descriptor.h */
bool pyop__attr_value_check(const pyop_attr_value *v, pyop__sb *why) {
  switch (v->type) {
  case PYOP_ATTR_INT:
  case PYOP_ATTR_FLOAT:
  case PYOP_ATTR_BOOL:
    return true;
  case PYOP_ATTR_TENSOR:
    if (!v->u.tensor) pyop__sb_puts(why, "tensor value is NULL");
    return v->u.tensor != NULL;
  case PYOP_ATTR_DTYPE:
    if (!dtype_ok(v->u.dtype)) pyop__sb_printf(why, "data type %d out of range", (int)v->u.dtype);
    return dtype_ok(v->u.dtype);
  case PYOP_ATTR_STR:
    return value_str_ok(v->u.s, "string", why);
  case PYOP_ATTR_LIST_INT:
    return list_ok(v->u.ints.items, v->u.ints.count, why);
  case PYOP_ATTR_LIST_FLOAT:
    return list_ok(v->u.floats.items, v->u.floats.count, why);
  case PYOP_ATTR_LIST_BOOL:
    return list_ok(v->u.bools.items, v->u.bools.count, why);
  case PYOP_ATTR_LIST_DTYPE:
    if (!list_ok(v->u.dtypes.items, v->u.dtypes.count, why)) return false;
    for (size_t i = 0; i < v->u.dtypes.count; i++)
      if (!dtype_ok(v->u.dtypes.items[i])) {
        pyop__sb_printf(why, "item %zu: data type %d out of range", i,
                        (int)v->u.dtypes.items[i]);
        return false;
      }
    return true;
  case PYOP_ATTR_LIST_STR:
    if (!list_ok(v->u.strs.items, v->u.strs.count, why)) return false;
    for (size_t i = 0; i < v->u.strs.count; i++) {
      char item[32];
      snprintf(item, sizeof item, "item %zu", i);
      if (!value_str_ok(v->u.strs.items[i], item, why)) return false;
    }
    return true;
  case PYOP_ATTR_LIST_LIST_INT:
    if (!list_ok(v->u.int_lists.items, v->u.int_lists.count, why)) return false;
    for (size_t i = 0; i < v->u.int_lists.count; i++) {
      const pyop_int_list *l = &v->u.int_lists.items[i];
      if (l->count > PYOP__MAX_LIST_LEN || (l->count > 0 && !l->items)) {
        pyop__sb_printf(why, "item %zu: ", i);
        return list_ok(l->items, l->count, why);
      }
    }
    return true;
  }
  pyop__sb_printf(why, "unknown attribute type %d", (int)v->type);
  return false;
}

/* Where global name index g (inputs, then outputs, then attrs) lives. */
static void name_place(size_t g, size_t n_in, size_t n_out, char *buf, size_t n) {
  if (g < n_in) snprintf(buf, n, "input %zu", g);
  else if (g < n_in + n_out) snprintf(buf, n, "output %zu", g - n_in);
  else snprintf(buf, n, "attr %zu", g - n_in - n_out);
}

static pyop_str name_at(const pyop_proto_view *v, size_t g) {
  if (g < v->n_inputs) return v->inputs[g].name;
  g -= v->n_inputs;
  if (g < v->n_outputs) return v->outputs[g].name;
  return v->attrs[g - v->n_outputs].name;
}

/* True when global name index g is an output. */
static bool is_output_at(const pyop_proto_view *v, size_t g) {
  return g >= v->n_inputs && g < v->n_inputs + v->n_outputs;
}

/* Two names clash when equal and in the same namespace: inputs and attrs
 * share one (they are the parameters of one Python signature), outputs have
 * their own (an output "y" next to an input "y" is fine). */
static bool names_clash(const pyop_proto_view *v, size_t i, size_t j) {
  return is_output_at(v, i) == is_output_at(v, j) &&
         pyop__str_view_same(name_at(v, i), name_at(v, j));
}

/* hashmap.h's eq of check_unique: name i of v clashes with the one a slot
 * holds (its index + 1). */
typedef struct name_key {
  const pyop_proto_view *v;
  size_t i;
} name_key;

static bool name_clashes(const void *key, uintptr_t val) {
  const name_key *k = key;
  return names_clash(k->v, val - 1, k->i);
}

/* Names (already valid identifiers) are unique within their namespace.
 * Pairwise for a handful, else a hash set: never quadratic. */
static int check_unique(const vctx *c, const pyop_proto_view *v) {
  size_t total = v->n_inputs + v->n_outputs + v->n_attrs;
  char here[48], there[48];
  if (total <= 16) {
    for (size_t i = 1; i < total; i++)
      for (size_t j = 0; j < i; j++)
        if (names_clash(v, i, j)) {
          name_place(i, v->n_inputs, v->n_outputs, here, sizeof here);
          name_place(j, v->n_inputs, v->n_outputs, there, sizeof there);
          pyop_str s = name_at(v, i);
          return vfail(c, "%s name: duplicate name \"%.*s\" (also %s)", here,
                       (int)s.len, s.data, there);
        }
    return PYOP_OK;
  }
  pyop__hmap set = {0};
  if (pyop__hmap_reserve(&set, total) != PYOP_OK)
    return pyop__error(PYOP_ENOMEM, "%s \"%.*s\": out of memory checking names", c->what,
                       (int)c->op_type.len, c->op_type.data);
  int rc = PYOP_OK;
  for (size_t i = 0; i < total && rc == PYOP_OK; i++) {
    pyop_str s = name_at(v, i);
    uint64_t h = hash_view(s.data, s.len);
    name_key k = {v, i};
    size_t slot = pyop__hmap_find(&set, h, name_clashes, &k);
    if (!set.slots[slot].val) {
      pyop__hmap_set(&set, slot, h, i + 1);
      continue;
    }
    size_t j = set.slots[slot].val - 1;
    name_place(i, v->n_inputs, v->n_outputs, here, sizeof here);
    name_place(j, v->n_inputs, v->n_outputs, there, sizeof there);
    rc = vfail(c, "%s name: duplicate name \"%.*s\" (also %s)", here, (int)s.len, s.data,
               there);
  }
  pyop__hmap_free(&set);
  return rc;
}

static int check_ios(const vctx *c, const pyop_io_view *ios, size_t n,
                     const char *what) {
  if (n > PYOP__MAX_IOS)
    return vfail(c, "%ss: %zu of them (at most %d)", what, n, PYOP__MAX_IOS);
  if (n > 0 && !ios) return vfail(c, "%ss: %zu of them but the array is NULL", what, n);
  for (size_t i = 0; i < n; i++) {
    const pyop_io_view *io = &ios[i];
    if (io->struct_size < PYOP__MEMBER_END(pyop_io_view, kind))
      return vfail(c, "%s %zu: struct_size %zu is smaller than %zu", what, i,
                   io->struct_size, PYOP__MEMBER_END(pyop_io_view, kind));
    const char *why = pyop__str_view_problem(io->name, true, PYOP__MAX_NAME_LEN);
    if (why) return vfail(c, "%s %zu name: %s", what, i, why);
    if (!is_identifier(io->name))
      return vfail(c, "%s %zu name: \"%.*s\" is not an identifier", what, i,
                   has_control(io->name) ? 0 : (int)io->name.len, io->name.data);
    if (io->kind != PYOP_IO_REQUIRED && io->kind != PYOP_IO_OPTIONAL &&
        io->kind != PYOP_IO_DYNAMIC)
      return vfail(c, "%s %zu \"%.*s\": unknown kind %d", what, i, (int)io->name.len,
                   io->name.data, (int)io->kind);
  }
  return PYOP_OK;
}

static int check_attrs(const vctx *c, const pyop_attr_view *attrs, size_t n, bool v11) {
  if (n > PYOP__MAX_IOS)
    return vfail(c, "attrs: %zu of them (at most %d)", n, PYOP__MAX_IOS);
  if (n > 0 && !attrs) return vfail(c, "attrs: %zu of them but the array is NULL", n);
  for (size_t i = 0; i < n; i++) {
    const pyop_attr_view *a = &attrs[i];
    if (a->struct_size < PYOP__MEMBER_END(pyop_attr_view, default_value))
      return vfail(c, "attr %zu: struct_size %zu is smaller than %zu", i,
                   a->struct_size, PYOP__MEMBER_END(pyop_attr_view, default_value));
    const char *why = pyop__str_view_problem(a->name, true, PYOP__MAX_NAME_LEN);
    if (why) return vfail(c, "attr %zu name: %s", i, why);
    if (!is_identifier(a->name))
      return vfail(c, "attr %zu name: \"%.*s\" is not an identifier", i,
                   has_control(a->name) ? 0 : (int)a->name.len, a->name.data);
    const char *tname = pyop_attr_type_name(a->type);
    if (!tname)
      return vfail(c, "attr %zu \"%.*s\": unknown type %d", i, (int)a->name.len,
                   a->name.data, (int)a->type);
    if (a->required != 0 && a->required != 1)
      return vfail(c, "attr %zu \"%.*s\": required is %d (0 or 1)", i,
                   (int)a->name.len, a->name.data, (int)a->required);
    if (a->type == PYOP_ATTR_TENSOR && !v11)
      return vfail(c, "attr %zu \"%.*s\": a Tensor attribute needs bridge ABI 1.1", i,
                   (int)a->name.len, a->name.data);
    if (a->type == PYOP_ATTR_TENSOR && !a->required)
      return vfail(c, "attr %zu \"%.*s\": a Tensor attribute cannot have a default", i,
                   (int)a->name.len, a->name.data);
    if (a->required) continue;
    if (a->default_value.type != a->type) {
      const char *dname = pyop_attr_type_name(a->default_value.type);
      char num[16];
      snprintf(num, sizeof num, "%d", (int)a->default_value.type);
      return vfail(c, "attr %zu \"%.*s\": default value has type %s, declared %s", i,
                   (int)a->name.len, a->name.data, dname ? dname : num, tname);
    }
    pyop__sb vwhy = PYOP__SB_INIT;
    if (!pyop__attr_value_check(&a->default_value, &vwhy)) {
      int rc = vfail(c, "attr %zu \"%.*s\": default value: %s", i, (int)a->name.len,
                     a->name.data, vwhy.oom ? "(out of memory)" : pyop__sb_str(&vwhy));
      pyop__sb_free(&vwhy);
      return rc;
    }
  }
  return PYOP_OK;
}

static int check_callbacks(const vctx *c, uint32_t caps, const pyop_op_callbacks *cb) {
  char cs[64];
  if (!cb) {
    if (caps) return vfail(c, "callbacks: NULL but caps is %s", pyop__caps_str(caps, cs, sizeof cs));
    return PYOP_OK;
  }
  size_t min = PYOP__MEMBER_END(pyop_op_callbacks, declare_launch_args);
  if (cb->struct_size < min)
    return vfail(c, "callbacks: struct_size %zu is smaller than %zu", cb->struct_size, min);
  struct {
    bool set;
    uint32_t bit;
    const char *fn, *cap;
  } pairs[] = {
      {cb->infer_meta != NULL, PYOP_CAP_INFER_META, "infer_meta", "INFER_META"},
      {cb->execute != NULL, PYOP_CAP_EXECUTE, "execute", "EXECUTE"},
      {cb->compile != NULL, PYOP_CAP_COMPILE, "compile", "COMPILE"},
      {cb->declare_launch_args != NULL, PYOP_CAP_LAUNCH, "declare_launch_args", "LAUNCH"},
  };
  for (size_t i = 0; i < PYOP__ARRAY_LEN(pairs); i++) {
    bool want = (caps & pairs[i].bit) != 0;
    if (want && !pairs[i].set)
      return vfail(c, "callbacks: %s is NULL but caps has %s", pairs[i].fn, pairs[i].cap);
    if (!want && pairs[i].set)
      return vfail(c, "callbacks: %s is set but caps lacks %s", pairs[i].fn, pairs[i].cap);
  }
  if (caps && !cb->create_holder) return vfail(c, "callbacks: create_holder is NULL");
  if (caps && !cb->destroy_holder) return vfail(c, "callbacks: destroy_holder is NULL");
  return PYOP_OK;
}

bool pyop__proto_view_v11(const pyop_proto_view *v) {
  return v->struct_size >= PYOP__MEMBER_END(pyop_proto_view, output_alias);
}

/* Output kinds: REQUIRED only in a 1.0 view; REQUIRED or DYNAMIC in 1.1. */
static int check_output_kinds(const vctx *c, const pyop_proto_view *v, bool v11) {
  for (size_t i = 0; i < v->n_outputs; i++) {
    int32_t k = v->outputs[i].kind;
    if (k == PYOP_IO_REQUIRED || (v11 && k == PYOP_IO_DYNAMIC)) continue;
    return vfail(c, "output %zu \"%.*s\": kind %s %s", i, (int)v->outputs[i].name.len,
                 v->outputs[i].name.data, pyop__io_kind_name(k),
                 k == PYOP_IO_DYNAMIC ? "needs bridge ABI 1.1"
                                      : "is not supported for outputs (required or dynamic)");
  }
  return PYOP_OK;
}

/* input_flags and output_alias of a 1.1 view. */
static int check_refs(const vctx *c, const pyop_proto_view *v) {
  if (v->input_flags) {
    for (size_t i = 0; i < v->n_inputs; i++)
      if (v->input_flags[i] & ~PYOP_INPUT_MUTATED)
        return vfail(c, "input %zu \"%.*s\": unknown flags 0x%x", i,
                     (int)v->inputs[i].name.len, v->inputs[i].name.data,
                     (unsigned)(v->input_flags[i] & ~PYOP_INPUT_MUTATED));
  }
  if (!v->output_alias) return PYOP_OK;
  for (size_t i = 0; i < v->n_outputs; i++) {
    int32_t a = v->output_alias[i];
    const pyop_io_view *o = &v->outputs[i];
    if (a == -1) continue;
    if (a < 0 || (size_t)a >= v->n_inputs)
      return vfail(c, "output %zu \"%.*s\": aliases input %d, the op has %zu %s", i,
                   (int)o->name.len, o->name.data, (int)a, v->n_inputs,
                   PYOP__PLURAL(v->n_inputs, "input", "inputs"));
    const pyop_io_view *in = &v->inputs[a];
    if (o->kind != PYOP_IO_REQUIRED || in->kind != PYOP_IO_REQUIRED)
      return vfail(c, "output %zu \"%.*s\": only a required output can alias a required "
                   "input (input \"%.*s\" is %s, the output %s)", i, (int)o->name.len,
                   o->name.data, (int)in->name.len, in->name.data, pyop__io_kind_name(in->kind),
                   pyop__io_kind_name(o->kind));
    if (!v->input_flags || !(v->input_flags[a] & PYOP_INPUT_MUTATED))
      return vfail(c, "output %zu \"%.*s\": aliases input \"%.*s\", which is not "
                   "mutated (declare it in mutates_args)", i, (int)o->name.len,
                   o->name.data, (int)in->name.len, in->name.data);
    for (size_t j = 0; j < i; j++)
      if (v->output_alias[j] == a)
        return vfail(c, "output %zu \"%.*s\": input \"%.*s\" is already aliased by "
                     "output %zu", i, (int)o->name.len, o->name.data, (int)in->name.len,
                     in->name.data, j);
  }
  return PYOP_OK;
}

int pyop__validate_proto_view(const pyop_proto_view *v) {
  vctx c = {.what = "prototype"};
  if (!v) return vfail(&c, "the view is NULL");
  size_t min = PYOP__MEMBER_END(pyop_proto_view, callbacks);
  if (v->struct_size < min)
    return vfail(&c, "struct_size %zu is smaller than the %zu bytes of bridge ABI 1.0",
                 v->struct_size, min);
  int rc = check_head(&c, v->op_type, v->key, v->source_file, v->source_line);
  if (rc != PYOP_OK) return rc;
  char cs[64];
  if (v->caps & ~PYOP_CAP_INFER_META)
    return vfail(&c, "caps: %s is not a subset of infer_meta",
                 pyop__caps_str(v->caps, cs, sizeof cs));
  bool v11 = pyop__proto_view_v11(v);
  if ((rc = check_ios(&c, v->inputs, v->n_inputs, "input")) != PYOP_OK) return rc;
  if (v->n_outputs == 0 && !v11)
    return vfail(&c, "outputs: none (bridge ABI 1.0 needs at least one; no outputs "
                 "needs 1.1)");
  if ((rc = check_ios(&c, v->outputs, v->n_outputs, "output")) != PYOP_OK) return rc;
  if ((rc = check_output_kinds(&c, v, v11)) != PYOP_OK) return rc;
  if (v11 && (rc = check_refs(&c, v)) != PYOP_OK) return rc;
  if ((rc = check_digest(&c, PROTO_DIGEST(v))) != PYOP_OK) return rc;
  if ((rc = check_attrs(&c, v->attrs, v->n_attrs, v11)) != PYOP_OK) return rc;
  if ((rc = check_unique(&c, v)) != PYOP_OK) return rc;
  pyop__sb why = PYOP__SB_INIT;
  if (!pyop__dtypes_check_view(v, &why)) {
    rc = vfail(&c, "%s", why.oom ? "(out of memory)" : pyop__sb_str(&why));
    pyop__sb_free(&why);
    return rc;
  }
  if ((rc = check_callbacks(&c, v->caps, v->callbacks)) != PYOP_OK) return rc;
  return check_lanes(&c, v->caps, PROTO_LANES(v), PROTO_REASON(v), v->callbacks);
}

int pyop__validate_impl_view(const pyop_impl_view *v) {
  vctx c = {.what = "implementation"};
  if (!v) return vfail(&c, "the view is NULL");
  size_t min = PYOP__MEMBER_END(pyop_impl_view, callbacks);
  if (v->struct_size < min)
    return vfail(&c, "struct_size %zu is smaller than the %zu bytes of bridge ABI 1.0",
                 v->struct_size, min);
  int rc = check_head(&c, v->op_type, v->key, v->source_file, v->source_line);
  if (rc != PYOP_OK) return rc;
  char cs[64];
  const uint32_t allowed = PYOP_CAP_EXECUTE | PYOP_CAP_COMPILE | PYOP_CAP_LAUNCH;
  if (v->caps == 0) return vfail(&c, "caps: empty (needs execute, compile or launch)");
  if (v->caps & ~allowed)
    return vfail(&c, "caps: %s is not a subset of execute|compile|launch",
                 pyop__caps_str(v->caps, cs, sizeof cs));
  if ((rc = check_digest(&c, IMPL_DIGEST(v))) != PYOP_OK) return rc;
  if ((rc = check_callbacks(&c, v->caps, v->callbacks)) != PYOP_OK) return rc;
  return check_lanes(&c, v->caps, IMPL_LANES(v), IMPL_REASON(v), v->callbacks);
}

/* ---------------------------------------------------------- deep copy */

/*
 * A bump arena used twice, so that a deep copy is one malloc: a first pass
 * with base NULL only measures (every take returns NULL, nothing is
 * written), a second pass with a block of the measured size copies.
 * Invariant: a build function (build_proto, build_impl) makes exactly the
 * same takes, in the same order and with the same sizes, in both passes;
 * it writes into the arena only through what a take returned (NULL while
 * measuring), and it returns NULL in the measuring pass (its first take is
 * the struct itself). Overflow of the size arithmetic marks the arena and is refused
 * after the measuring pass.
 */
typedef struct arena {
  char *base;
  size_t used;
  bool overflow;
} arena;

static void *arena_take(arena *a, size_t n, size_t align) {
  size_t off = (a->used + align - 1) & ~(align - 1);
  if (off < a->used || off + n < off) {
    a->overflow = true;
    return NULL;
  }
  a->used = off + n;
  return a->base && !a->overflow ? a->base + off : NULL;
}

static void *arena_array(arena *a, size_t count, size_t size, size_t align) {
  if (count && size > SIZE_MAX / count) {
    a->overflow = true;
    return NULL;
  }
  return arena_take(a, count * size, align);
}

static char *arena_str(arena *a, const char *s, size_t len) {
  if (len == SIZE_MAX) {
    a->overflow = true;
    return NULL;
  }
  char *p = arena_take(a, len + 1, 1);
  if (p) {
    if (len) memcpy(p, s, len);
    p[len] = '\0';
  }
  return p;
}

/* Copies a validated value; list and string payloads go into the arena. */
static void copy_value(arena *a, const pyop_attr_value *src, pyop_attr_value *dst) {
  memset(dst, 0, sizeof *dst);
  dst->type = src->type;
  switch (src->type) {
  case PYOP_ATTR_INT: dst->u.i = src->u.i; break;
  case PYOP_ATTR_FLOAT: dst->u.f = src->u.f; break;
  case PYOP_ATTR_BOOL: dst->u.b = src->u.b; break;
  case PYOP_ATTR_DTYPE: dst->u.dtype = src->u.dtype; break;
  case PYOP_ATTR_STR:
    dst->u.s.data = arena_str(a, src->u.s.data, src->u.s.len);
    dst->u.s.len = src->u.s.len;
    break;
#define PYOP__COPY_LIST(member, T)                                             \
  {                                                                            \
    T *items = arena_array(a, src->u.member.count, sizeof(T), alignof(T));     \
    if (items && src->u.member.count)                                          \
      memcpy(items, src->u.member.items, src->u.member.count * sizeof(T));     \
    dst->u.member.items = items;                                               \
    dst->u.member.count = src->u.member.count;                                 \
  }
  case PYOP_ATTR_LIST_INT: PYOP__COPY_LIST(ints, int64_t) break;
  case PYOP_ATTR_LIST_FLOAT: PYOP__COPY_LIST(floats, double) break;
  case PYOP_ATTR_LIST_BOOL: PYOP__COPY_LIST(bools, bool) break;
  case PYOP_ATTR_LIST_DTYPE: PYOP__COPY_LIST(dtypes, int32_t) break;
#undef PYOP__COPY_LIST
  case PYOP_ATTR_LIST_STR: {
    size_t n = src->u.strs.count;
    pyop_str *items = arena_array(a, n, sizeof *items, alignof(pyop_str));
    for (size_t i = 0; i < n; i++) {
      char *s = arena_str(a, src->u.strs.items[i].data, src->u.strs.items[i].len);
      if (items) {
        items[i].data = s;
        items[i].len = src->u.strs.items[i].len;
      }
    }
    dst->u.strs.items = items;
    dst->u.strs.count = n;
    break;
  }
  case PYOP_ATTR_LIST_LIST_INT: {
    size_t n = src->u.int_lists.count;
    pyop_int_list *lists = arena_array(a, n, sizeof *lists, alignof(pyop_int_list));
    for (size_t i = 0; i < n; i++) {
      const pyop_int_list *in = &src->u.int_lists.items[i];
      int64_t *items = arena_array(a, in->count, sizeof *items, alignof(int64_t));
      if (items && in->count) memcpy(items, in->items, in->count * sizeof *items);
      if (lists) {
        lists[i].items = items;
        lists[i].count = in->count;
      }
    }
    dst->u.int_lists.items = lists;
    dst->u.int_lists.count = n;
    break;
  }
  }
}

static pyop_io_info *copy_ios(arena *a, const pyop_io_view *v, size_t n) {
  pyop_io_info *ios = arena_array(a, n, sizeof *ios, alignof(pyop_io_info));
  for (size_t i = 0; i < n; i++) {
    char *name = arena_str(a, v[i].name.data, v[i].name.len);
    if (ios) {
      ios[i].name = name;
      ios[i].kind = v[i].kind;
    }
  }
  return ios;
}

/* Room for a formatted source: the longest file, ':' and a uint32. */
#define PYOP__SOURCE_BUF (PYOP__MAX_SOURCE_LEN + 16)

/* Writes "file.py:12" of a validated view into buf (PYOP__SOURCE_BUF bytes);
 * "<host>" for a host prototype, "<unknown>" when the bridge gave no file.
 * Returns the length. */
static size_t format_source(char *buf, bool host, pyop_str file, uint32_t line) {
  const char *fixed = host ? "<host>" : file.len == 0 ? "<unknown>" : NULL;
  if (fixed) {
    size_t n = strlen(fixed);
    memcpy(buf, fixed, n + 1);
    return n;
  }
  memcpy(buf, file.data, file.len);
  size_t n = file.len;
  buf[n++] = ':';
  char digits[10];
  size_t k = 0;
  do {
    digits[k++] = (char)('0' + line % 10);
    line /= 10;
  } while (line);
  while (k) buf[n++] = digits[--k];
  buf[n] = '\0';
  return n;
}

/* Lays a validated proto view out in a (measuring or copying) arena; see
 * the arena's invariant: every take comes first, the writes after. */
static pyop__proto *build_proto(arena *a, const pyop_proto_view *v, bool host,
                                const char *src, size_t src_len) {
  pyop__proto *p = arena_take(a, sizeof *p, alignof(pyop__proto));
  pyop_io_info *in = copy_ios(a, v->inputs, v->n_inputs);
  pyop_io_info *out = copy_ios(a, v->outputs, v->n_outputs);
  pyop_attr_info *attrs = arena_array(a, v->n_attrs, sizeof *attrs, alignof(pyop_attr_info));
  for (size_t i = 0; i < v->n_attrs; i++) {
    const pyop_attr_view *av = &v->attrs[i];
    char *name = arena_str(a, av->name.data, av->name.len);
    pyop_attr_value dv;
    if (av->required) {
      memset(&dv, 0, sizeof dv);
      dv.type = av->type;
    } else {
      copy_value(a, &av->default_value, &dv);
    }
    if (attrs) {
      attrs[i].name = name;
      attrs[i].type = av->type;
      attrs[i].required = av->required != 0;
      attrs[i].default_value = dv;
    }
  }
  bool v11 = pyop__proto_view_v11(v);
  bool mutated = false, aliased = false;
  for (size_t i = 0; v11 && v->input_flags && i < v->n_inputs; i++)
    if (v->input_flags[i]) mutated = true;
  for (size_t i = 0; v11 && v->output_alias && i < v->n_outputs; i++)
    if (v->output_alias[i] != -1) aliased = true;
  uint32_t *flags = mutated ? arena_array(a, v->n_inputs, sizeof *flags, alignof(uint32_t))
                            : NULL;
  int32_t *alias = aliased ? arena_array(a, v->n_outputs, sizeof *alias, alignof(int32_t))
                           : NULL;
  size_t slots = v->n_attrs ? pyop__hmap_slots_for(v->n_attrs) : 0; /* 0: no index */
  pyop__hslot *index = arena_array(a, slots, sizeof *index, alignof(pyop__hslot));
  char *op_type = arena_str(a, v->op_type.data, v->op_type.len);
  char *key = arena_str(a, v->key.data, v->key.len);
  char *source = arena_str(a, src, src_len);
  pyop_str dg = PROTO_DIGEST(v);
  char *digest = arena_str(a, dg.data, dg.len);
  pyop_str rs = PROTO_REASON(v);
  char *reason = arena_str(a, rs.data, rs.len);
  size_t dsize = pyop__dtypes_size(v);
  void *dmem = dsize ? arena_take(a, dsize, alignof(pyop_dtype_set)) : NULL;
  if (!p) return NULL; /* the measuring pass ends here */
  pyop__dtypes_build(v, dmem, &p->dtypes);
  if (slots) memset(index, 0, slots * sizeof *index);
  p->op_type = op_type;
  p->key = key;
  p->source = source;
  p->line = host ? 0 : v->source_line;
  p->digest = digest;
  p->serial_reason = reason;
  p->lanes = PROTO_LANES(v);
  p->host = host;
  p->caps = v->caps;
  p->inputs = in;
  p->n_inputs = v->n_inputs;
  p->outputs = out;
  p->n_outputs = v->n_outputs;
  p->attrs = attrs;
  p->n_attrs = v->n_attrs;
  p->input_flags = flags;
  if (flags) memcpy(flags, v->input_flags, v->n_inputs * sizeof *flags);
  p->output_alias = alias;
  if (alias) memcpy(alias, v->output_alias, v->n_outputs * sizeof *alias);
  p->dynamic_outputs = false;
  for (size_t i = 0; i < v->n_outputs; i++)
    if (out[i].kind == PYOP_IO_DYNAMIC) p->dynamic_outputs = true;
  p->n_tensor_attrs = 0;
  for (size_t i = 0; i < v->n_attrs; i++)
    if (attrs[i].type == PYOP_ATTR_TENSOR) p->n_tensor_attrs++;
  if (slots) pyop__hmap_init_fixed(&p->attr_index, index, slots);
  else p->attr_index = (pyop__hmap){.fixed = true};
  p->ctx = v->ctx;
  p->callbacks = v->caps ? v->callbacks : NULL;
  for (size_t i = 0; i < v->n_attrs; i++) {
    uint64_t h = pyop__hash_str(attrs[i].name);
    pyop__hmap_set(&p->attr_index, pyop__hmap_free_slot(&p->attr_index, h), h, i + 1);
  }
  return p;
}

int pyop__proto_copy(const pyop_proto_view *v, bool host, pyop__proto **out) {
  *out = NULL;
  int rc = pyop__validate_proto_view(v);
  if (rc != PYOP_OK) return rc;
  char src[PYOP__SOURCE_BUF];
  size_t src_len = format_source(src, host, v->source_file, v->source_line);
  arena a = {0};
  build_proto(&a, v, host, src, src_len);
  if (a.overflow)
    return pyop__error(PYOP_EDESCRIPTOR, "prototype \"%.*s\": too large to copy",
                       (int)v->op_type.len, v->op_type.data);
  char *block = pyop__malloc(a.used);
  if (!block)
    return pyop__error(PYOP_ENOMEM, "prototype \"%.*s\": out of memory copying it",
                       (int)v->op_type.len, v->op_type.data);
  a = (arena){.base = block};
  *out = build_proto(&a, v, host, src, src_len);
  return PYOP_OK;
}

static pyop__impl *build_impl(arena *a, const pyop_impl_view *v, const char *src,
                              size_t src_len) {
  pyop__impl *p = arena_take(a, sizeof *p, alignof(pyop__impl));
  char *op_type = arena_str(a, v->op_type.data, v->op_type.len);
  char *key = arena_str(a, v->key.data, v->key.len);
  char *source = arena_str(a, src, src_len);
  pyop_str dg = IMPL_DIGEST(v);
  char *digest = arena_str(a, dg.data, dg.len);
  pyop_str rs = IMPL_REASON(v);
  char *reason = arena_str(a, rs.data, rs.len);
  if (!p) return NULL; /* the measuring pass ends here */
  p->op_type = op_type;
  p->key = key;
  p->source = source;
  p->line = v->source_line;
  p->digest = digest;
  p->serial_reason = reason;
  p->lanes = IMPL_LANES(v);
  p->caps = v->caps;
  p->ctx = v->ctx;
  p->callbacks = v->callbacks;
  return p;
}

int pyop__impl_copy(const pyop_impl_view *v, pyop__impl **out) {
  *out = NULL;
  int rc = pyop__validate_impl_view(v);
  if (rc != PYOP_OK) return rc;
  char src[PYOP__SOURCE_BUF];
  size_t src_len = format_source(src, false, v->source_file, v->source_line);
  arena a = {0};
  build_impl(&a, v, src, src_len);
  char *block = pyop__malloc(a.used);
  if (!block)
    return pyop__error(PYOP_ENOMEM, "implementation \"%.*s\": out of memory copying it",
                       (int)v->op_type.len, v->op_type.data);
  a = (arena){.base = block};
  *out = build_impl(&a, v, src, src_len);
  return PYOP_OK;
}

void pyop__proto_free(pyop__proto *p) { pyop__free(p); }
void pyop__impl_free(pyop__impl *p) { pyop__free(p); }

/* What pyop__proto_attr_find looks for. */
typedef struct attr_key {
  const pyop__proto *p;
  const char *name;
} attr_key;

static bool attr_is(const void *key, uintptr_t val) {
  const attr_key *k = key;
  return strcmp(k->p->attrs[val - 1].name, k->name) == 0;
}

long pyop__proto_attr_find(const pyop__proto *p, const char *name) {
  if (!name) return -1;
  attr_key k = {p, name};
  uintptr_t pos = pyop__hmap_get(&p->attr_index, pyop__hash_str(name), attr_is, &k);
  return pos ? (long)pos - 1 : -1;
}
