/*
 * Conflicts (conflict.h): whether a descriptor that arrives for an op type
 * already held (registered, or earlier in the same load) may stand with
 * the one held: the same content (pyop__proto_same, pyop__impl_same), the
 * same key and the same definition; the PYOP_ECONFLICT message when not.
 */
#include "conflict.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------ same content? */

/* Deep equality of two values of the same declared type (floats by bits). */
static bool same_value(const pyop_attr_value *a, const pyop_attr_value *b) {
  if (a->type != b->type) return false;
  switch (a->type) {
  case PYOP_ATTR_INT: return a->u.i == b->u.i;
  case PYOP_ATTR_FLOAT: return memcmp(&a->u.f, &b->u.f, sizeof(double)) == 0;
  case PYOP_ATTR_BOOL: return a->u.b == b->u.b;
  case PYOP_ATTR_DTYPE: return a->u.dtype == b->u.dtype;
  case PYOP_ATTR_STR: return pyop__str_view_same(a->u.s, b->u.s);
#define PYOP__SAME_LIST(member)                                                 \
  return a->u.member.count == b->u.member.count &&                              \
         (a->u.member.count == 0 ||                                             \
          memcmp(a->u.member.items, b->u.member.items,                          \
                 a->u.member.count * sizeof *a->u.member.items) == 0);
  case PYOP_ATTR_LIST_INT: PYOP__SAME_LIST(ints)
  case PYOP_ATTR_LIST_FLOAT: PYOP__SAME_LIST(floats)
  case PYOP_ATTR_LIST_DTYPE: PYOP__SAME_LIST(dtypes)
#undef PYOP__SAME_LIST
  case PYOP_ATTR_LIST_BOOL:
    if (a->u.bools.count != b->u.bools.count) return false;
    for (size_t i = 0; i < a->u.bools.count; i++)
      if (a->u.bools.items[i] != b->u.bools.items[i]) return false;
    return true;
  case PYOP_ATTR_LIST_STR:
    if (a->u.strs.count != b->u.strs.count) return false;
    for (size_t i = 0; i < a->u.strs.count; i++)
      if (!pyop__str_view_same(a->u.strs.items[i], b->u.strs.items[i])) return false;
    return true;
  case PYOP_ATTR_LIST_LIST_INT:
    if (a->u.int_lists.count != b->u.int_lists.count) return false;
    for (size_t i = 0; i < a->u.int_lists.count; i++) {
      const pyop_int_list *x = &a->u.int_lists.items[i], *y = &b->u.int_lists.items[i];
      if (x->count != y->count) return false;
      if (x->count && memcmp(x->items, y->items, x->count * sizeof *x->items) != 0)
        return false;
    }
    return true;
  }
  return false;
}

static bool same_ios(const pyop_io_info *a, size_t na, const pyop_io_info *b, size_t nb,
                     const char *what, pyop__sb *why) {
  if (na != nb) {
    pyop__sb_printf(why, "%zu %ss vs %zu", na, what, nb);
    return false;
  }
  for (size_t i = 0; i < na; i++) {
    if (strcmp(a[i].name, b[i].name) != 0) {
      pyop__sb_printf(why, "%s %zu: name \"%s\" vs \"%s\"", what, i, a[i].name, b[i].name);
      return false;
    }
    if (a[i].kind != b[i].kind) {
      pyop__sb_printf(why, "%s %zu \"%s\": kind %s vs %s", what, i, a[i].name,
                      pyop__io_kind_name(a[i].kind), pyop__io_kind_name(b[i].kind));
      return false;
    }
  }
  return true;
}

/* The part of pyop__proto_same and pyop__impl_same both have: op type and
 * caps. */
static bool same_head(const char *type_a, uint32_t caps_a, const char *type_b,
                      uint32_t caps_b, pyop__sb *why) {
  char ca[64], cb[64];
  if (strcmp(type_a, type_b) != 0) {
    pyop__sb_printf(why, "op type \"%s\" vs \"%s\"", type_a, type_b);
    return false;
  }
  if (caps_a != caps_b) {
    pyop__sb_printf(why, "capabilities %s vs %s", pyop__caps_str(caps_a, ca, sizeof ca),
                    pyop__caps_str(caps_b, cb, sizeof cb));
    return false;
  }
  return true;
}

bool pyop__proto_same(const pyop__proto *a, const pyop__proto *b, pyop__sb *why) {
  if (!same_head(a->op_type, a->caps, b->op_type, b->caps, why)) return false;
  if (!same_ios(a->inputs, a->n_inputs, b->inputs, b->n_inputs, "input", why))
    return false;
  if (!same_ios(a->outputs, a->n_outputs, b->outputs, b->n_outputs, "output", why))
    return false;
  for (size_t i = 0; i < a->n_inputs; i++) {
    uint32_t fa = a->input_flags ? a->input_flags[i] : 0;
    uint32_t fb = b->input_flags ? b->input_flags[i] : 0;
    if (fa != fb) {
      pyop__sb_printf(why, "input %zu \"%s\": %s vs %s", i, a->inputs[i].name,
                      fa & PYOP_INPUT_MUTATED ? "mutated" : "read-only",
                      fb & PYOP_INPUT_MUTATED ? "mutated" : "read-only");
      return false;
    }
  }
  for (size_t i = 0; i < a->n_outputs; i++) {
    int32_t xa = a->output_alias ? a->output_alias[i] : -1;
    int32_t xb = b->output_alias ? b->output_alias[i] : -1;
    if (xa != xb) {
      pyop__sb_printf(why, "output %zu \"%s\": aliases input %d vs %d", i,
                      a->outputs[i].name, (int)xa, (int)xb);
      return false;
    }
  }
  if (!pyop__dtypes_same(&a->dtypes, &b->dtypes, a->inputs, a->n_inputs, a->outputs,
                         a->n_outputs, why))
    return false;
  if (a->n_attrs != b->n_attrs) {
    pyop__sb_printf(why, "%zu %s vs %zu", a->n_attrs,
                    PYOP__PLURAL(a->n_attrs, "attr", "attrs"), b->n_attrs);
    return false;
  }
  for (size_t i = 0; i < a->n_attrs; i++) {
    const pyop_attr_info *x = &a->attrs[i], *y = &b->attrs[i];
    if (strcmp(x->name, y->name) != 0) {
      pyop__sb_printf(why, "attr %zu: name \"%s\" vs \"%s\"", i, x->name, y->name);
      return false;
    }
    if (x->type != y->type) {
      pyop__sb_printf(why, "attr %zu \"%s\": type %s vs %s", i, x->name,
                      pyop_attr_type_name(x->type), pyop_attr_type_name(y->type));
      return false;
    }
    if (x->required != y->required) {
      pyop__sb_printf(why, "attr %zu \"%s\": %s vs %s", i, x->name,
                      x->required ? "required" : "optional",
                      y->required ? "required" : "optional");
      return false;
    }
    if (!x->required && !same_value(&x->default_value, &y->default_value)) {
      pyop__sb_printf(why, "attr %zu \"%s\": different default values", i, x->name);
      return false;
    }
  }
  return true;
}

bool pyop__impl_same(const pyop__impl *a, const pyop__impl *b, pyop__sb *why) {
  return same_head(a->op_type, a->caps, b->op_type, b->caps, why);
}

/* --------------------------------------------------- same definition? */

/*
 * Records the conflict of a new descriptor with an existing one. kind is
 * "prototype" or "implementation"; where says where the other one is.
 */
static int conflict(const char *kind, const char *op_type, const char *new_key,
                    const char *new_src, const char *old_key, const char *old_src,
                    const char *where, const char *reason, const char *detail) {
  return pyop__error(PYOP_ECONFLICT,
                     "op type \"%s\": %s \"%s\" (%s) conflicts with %s \"%s\" (%s) %s: "
                     "%s%s%s%s",
                     op_type, kind, new_key, new_src, kind, old_key, old_src, where,
                     reason, detail ? " (" : "", detail ? detail : "", detail ? ")" : "");
}

/*
 * Identity of two definitions with the same descriptor key and content
 * (docs/op-author-guide.md, "Registering the same op twice"): the bridge
 * hands over each one's source digest (bridge ABI 1.3, the identity of its
 * source file's bytes). When both have one, they are one definition when
 * they sit on the same line of files with the same digest (one plugin
 * installed in two directories, or one file loaded twice); a bridge that
 * gives none leaves only the same "file:line" for one definition. Anything
 * else is two definitions, whose code may differ though the signatures
 * agree, and so a conflict. The registry reads no file: the comparison is
 * of strings only, so a commit makes it under the lock.
 */

/* What identifies one descriptor in a conflict check. */
typedef struct ident {
  const char *key, *source, *digest;
  uint32_t line;
} ident;

static ident proto_ident(const pyop__proto *p) {
  return (ident){p->key, p->source, p->digest, p->line};
}
static ident impl_ident(const pyop__impl *p) {
  return (ident){p->key, p->source, p->digest, p->line};
}

/* See above: NULL when a and b are one definition, else why not (static). */
static const char *other_definition(const ident *a, const ident *b) {
  if (a->digest[0] && b->digest[0]) {
    if (a->line != b->line) return "defined at different lines";
    if (strcmp(a->digest, b->digest) != 0) return "the source files differ";
    return NULL;
  }
  if (strcmp(a->source, b->source) == 0) return NULL;
  return "different sources, and no source digest to tell the same file by";
}

/*
 * PYOP_OK when a new descriptor n may stand with an earlier one o whose
 * content compared same or not (why: the first difference); else the
 * conflict, recorded.
 */
static int check_same(const char *kind, const char *op_type, const ident *n,
                      const ident *o, const char *where, bool same, const pyop__sb *why) {
  const char *w = why->oom ? "(out of memory)" : pyop__sb_str(why), *reason;
  bool same_key = strcmp(n->key, o->key) == 0;
  if (same_key && same) {
    w = other_definition(n, o);
    if (!w) return PYOP_OK;
    reason = "same descriptor key and content but two different definitions";
  } else if (!same_key) {
    reason = same ? "different descriptor key" : "different descriptor key and content";
    if (same) w = NULL;
  } else {
    reason = "same descriptor key, different content";
  }
  return conflict(kind, op_type, n->key, n->source, o->key, o->source, where, reason, w);
}

/* A prototype n against the held o (conflict.h). */
int pyop__check_protos(const pyop__proto *n, const pyop__proto *o, const char *where) {
  pyop__sb why = PYOP__SB_INIT;
  bool same = pyop__proto_same(n, o, &why);
  ident in = proto_ident(n), io = proto_ident(o);
  int rc = check_same("prototype", n->op_type, &in, &io, where, same, &why);
  pyop__sb_free(&why);
  return rc;
}

/* An implementation n against the held o (conflict.h). */
int pyop__check_impls(const pyop__impl *n, const pyop__impl *o, const char *where) {
  pyop__sb why = PYOP__SB_INIT;
  bool same = pyop__impl_same(n, o, &why);
  ident in = impl_ident(n), io = impl_ident(o);
  int rc = check_same("implementation", n->op_type, &in, &io, where, same, &why);
  pyop__sb_free(&why);
  return rc;
}

