/*
 * Data type constraints of prototypes (dtypes.h; pyop.h, pyop_dtype_set).
 *
 * Decisions:
 * - a mask of 0 allows any data type; a set bit that is no pyop_dtype is an
 *   invalid descriptor (a host or bridge naming a type libpyop cannot pass).
 * - a symbol is GE's type name: every input and output that names it has
 *   one data type per call (all tensors of a dynamic input too), and all of
 *   them give the same mask. An empty symbol is none. Symbols follow the
 *   identifier rule of io names (descriptor.c).
 * - the copy keeps a side (inputs or outputs) only when some io of it has
 *   a mask or a symbol, so an op without constraints has none at all and
 *   its calls pay one branch (op.c).
 * - inputs are checked in every call that takes them (infer_meta, execute,
 *   compile, declare_launch_args, launch): PYOP_EINVAL, the caller's
 *   mistake. An output the op asks for is checked against its set and
 *   against the inputs of its symbol: PYOP_ECONTRACT, the op's. Outputs of
 *   a symbol no input has are checked against the set only.
 */
#include "dtypes.h"

#include "descriptor.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

const pyop_dtype_set_view *pyop__view_input_dtypes(const pyop_proto_view *v) {
  return PYOP__HAS(pyop_proto_view, v, input_dtypes) ? v->input_dtypes : NULL;
}

const pyop_dtype_set_view *pyop__view_output_dtypes(const pyop_proto_view *v) {
  return PYOP__HAS(pyop_proto_view, v, output_dtypes) ? v->output_dtypes : NULL;
}

const char *pyop__dtype_mask_str(uint64_t mask, char *buf, size_t len) {
  if (!mask) {
    snprintf(buf, len, "any");
    return buf;
  }
  size_t used = 0;
  buf[0] = '\0';
  for (int d = 0; d < 64 && used < len; d++) {
    if (!(mask & PYOP_DTYPE_BIT(d))) continue;
    const char *name = pyop_dtype_name(d);
    int n = name ? snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name)
                 : snprintf(buf + used, len - used, "%sdtype(%d)", used ? ", " : "", d);
    if (n < 0) break;
    used += (size_t)n;
  }
  return buf;
}

/* One io of a view's constraint arrays, by global index g (inputs first). */
typedef struct io_ref {
  const char *what; /* "input" / "output" */
  size_t index;
  pyop_str name;
  const pyop_dtype_set_view *set; /* NULL: unconstrained side */
} io_ref;

static io_ref io_at(const pyop_proto_view *v, size_t g) {
  const pyop_dtype_set_view *in = pyop__view_input_dtypes(v);
  const pyop_dtype_set_view *out = pyop__view_output_dtypes(v);
  if (g < v->n_inputs)
    return (io_ref){"input", g, v->inputs[g].name, in ? &in[g] : NULL};
  g -= v->n_inputs;
  return (io_ref){"output", g, v->outputs[g].name, out ? &out[g] : NULL};
}

/* Checks one io's mask and symbol on their own; false with the reason
 * appended to why. */
static bool set_ok(const io_ref *r, pyop__sb *why) {
  uint64_t unknown = r->set->mask & ~PYOP__DTYPE_KNOWN;
  if (unknown) {
    pyop__sb_printf(why, "%s %zu \"%.*s\": data type set 0x%llx names data type %d, which "
                    "is not a pyop_dtype (0..%d)", r->what, r->index, (int)r->name.len,
                    r->name.data, (unsigned long long)r->set->mask, __builtin_ctzll(unknown),
                    PYOP_DTYPE_COUNT - 1);
    return false;
  }
  pyop_str s = r->set->symbol;
  const char *p = pyop__view_problem(s, false, PYOP__MAX_NAME_LEN);
  if (!p && s.len && !pyop__view_is_identifier(s)) p = "not an identifier";
  if (p) {
    pyop__sb_printf(why, "%s %zu \"%.*s\": data type symbol: %s", r->what, r->index,
                    (int)r->name.len, r->name.data, p);
    return false;
  }
  return true;
}

/*
 * Calls fn(user, g, first) for every io g with a symbol, first being the
 * global index of the first io with the same symbol (g itself for a new
 * one), in order, until fn returns false. Returns the number of distinct
 * symbols, stopping at PYOP_MAX_DTYPE_SYMBOLS + 1 (the view is refused
 * then): each io is compared with at most that many first uses, never
 * with every other io.
 */
static size_t each_symbol(const pyop_proto_view *v,
                          bool (*fn)(void *user, size_t g, size_t first), void *user) {
  size_t n = v->n_inputs + v->n_outputs, distinct = 0;
  size_t firsts[PYOP_MAX_DTYPE_SYMBOLS];
  for (size_t g = 0; g < n; g++) {
    io_ref r = io_at(v, g);
    if (!r.set || !r.set->symbol.len) continue;
    size_t k = 0;
    while (k < distinct && !pyop__str_view_same(io_at(v, firsts[k]).set->symbol, r.set->symbol)) k++;
    if (k == distinct) {
      if (distinct == PYOP_MAX_DTYPE_SYMBOLS) return distinct + 1;
      firsts[distinct++] = g;
    }
    if (!fn(user, g, firsts[k])) break;
  }
  return distinct;
}

typedef struct sym_check {
  const pyop_proto_view *v;
  pyop__sb *why;
  bool ok;
} sym_check;

/* One symbol, one mask. */
static bool sym_same_mask(void *user, size_t g, size_t first) {
  sym_check *c = user;
  io_ref r = io_at(c->v, g), f = io_at(c->v, first);
  if (r.set->mask == f.set->mask) return true;
  char a[200], b[200];
  pyop__sb_printf(c->why, "%s %zu \"%.*s\": data type symbol \"%.*s\" allows %s here but "
                  "%s at %s %zu \"%.*s\" (one symbol has one set)", r.what, r.index,
                  (int)r.name.len, r.name.data, (int)r.set->symbol.len, r.set->symbol.data,
                  pyop__dtype_mask_str(r.set->mask, a, sizeof a),
                  pyop__dtype_mask_str(f.set->mask, b, sizeof b), f.what, f.index,
                  (int)f.name.len, f.name.data);
  c->ok = false;
  return false;
}

/* dtypes.h */
bool pyop__dtypes_check_view(const pyop_proto_view *v, pyop__sb *why) {
  size_t total = v->n_inputs + v->n_outputs;
  for (size_t g = 0; g < total; g++) {
    io_ref r = io_at(v, g);
    if (r.set && !set_ok(&r, why)) return false;
  }
  sym_check c = {v, why, true};
  size_t distinct = each_symbol(v, sym_same_mask, &c);
  if (!c.ok) return false;
  if (distinct > PYOP_MAX_DTYPE_SYMBOLS) {
    pyop__sb_printf(why, "more than %d data type symbols", PYOP_MAX_DTYPE_SYMBOLS);
    return false;
  }
  return true;
}

/* Whether any io of a side (n entries of set, NULL: none) is constrained. */
static bool side_constrained(const pyop_dtype_set_view *set, size_t n) {
  for (size_t i = 0; set && i < n; i++)
    if (set[i].mask || set[i].symbol.len) return true;
  return false;
}

/*
 * The layout of a view's copy: both sides' pyop_dtype_set arrays, the
 * inputs' allow masks, both int8 symbol index arrays, then the symbol strings (room for one per
 * io that names one; each distinct symbol is copied once). Offsets of each
 * part, and the total. A side is kept only when constrained; a side that
 * is not names no symbol.
 */
typedef struct layout {
  bool in, out;
  size_t sets_out, allow_in, sym_in, sym_out, strs, total;
} layout;

static layout layout_of(const pyop_proto_view *v) {
  layout l = {0};
  l.in = side_constrained(pyop__view_input_dtypes(v), v->n_inputs);
  l.out = side_constrained(pyop__view_output_dtypes(v), v->n_outputs);
  if (!l.in && !l.out) return l;
  size_t ni = l.in ? v->n_inputs : 0, no = l.out ? v->n_outputs : 0;
  l.sets_out = ni * sizeof(pyop_dtype_set);
  l.allow_in = l.sets_out + no * sizeof(pyop_dtype_set);
  l.sym_in = l.allow_in + ni * sizeof(uint64_t);
  l.sym_out = l.sym_in + ni;
  l.strs = l.sym_out + no;
  l.total = l.strs;
  for (size_t g = 0; g < v->n_inputs + v->n_outputs; g++) {
    io_ref r = io_at(v, g);
    if (r.set && r.set->symbol.len) l.total += r.set->symbol.len + 1;
  }
  return l;
}

size_t pyop__dtypes_size(const pyop_proto_view *v) { return layout_of(v).total; }

/* Copies one side's sets (symbols set later); the symbol indexes -1. */
static void copy_side(const pyop_dtype_set_view *src, size_t n, pyop_dtype_set *sets,
                      int8_t *sym) {
  for (size_t i = 0; i < n; i++) {
    sets[i] = (pyop_dtype_set){src[i].mask, NULL};
    sym[i] = -1;
  }
}

void pyop__dtypes_build(const pyop_proto_view *v, void *mem, pyop__dtypes *out) {
  memset(out, 0, sizeof *out);
  layout l = layout_of(v);
  if (!l.total) return;
  char *m = mem;
  if (l.in) {
    out->inputs = (pyop_dtype_set *)(void *)m;
    out->in_allow = (uint64_t *)(void *)(m + l.allow_in);
    out->in_sym = (int8_t *)(m + l.sym_in);
    copy_side(pyop__view_input_dtypes(v), v->n_inputs, out->inputs, out->in_sym);
    for (size_t i = 0; i < v->n_inputs; i++)
      out->in_allow[i] = out->inputs[i].mask ? out->inputs[i].mask : ~0ull;
  }
  if (l.out) {
    out->outputs = (pyop_dtype_set *)(void *)(m + l.sets_out);
    out->out_sym = (int8_t *)(m + l.sym_out);
    copy_side(pyop__view_output_dtypes(v), v->n_outputs, out->outputs, out->out_sym);
  }
  const char *placed[PYOP_MAX_DTYPE_SYMBOLS];
  char *str = m + l.strs;
  for (size_t g = 0; g < v->n_inputs + v->n_outputs; g++) {
    io_ref r = io_at(v, g);
    if (!r.set || !r.set->symbol.len) continue;
    uint32_t k = 0;
    while (k < out->n_symbols &&
           !(strlen(placed[k]) == r.set->symbol.len &&
             memcmp(placed[k], r.set->symbol.data, r.set->symbol.len) == 0))
      k++;
    if (k == out->n_symbols) {
      assert(k < PYOP_MAX_DTYPE_SYMBOLS); /* validated */
      memcpy(str, r.set->symbol.data, r.set->symbol.len);
      str[r.set->symbol.len] = '\0';
      placed[out->n_symbols++] = str;
      str += r.set->symbol.len + 1;
    }
    bool input = g < v->n_inputs;
    if (input) out->in_symbols = true;
    (input ? out->inputs : out->outputs)[r.index].symbol = placed[k];
    (input ? out->in_sym : out->out_sym)[r.index] = (int8_t)k;
  }
  assert((size_t)(str - m) <= l.total);
}

/* ---------------------------------------------------------- comparison */

static const pyop_dtype_set none_set = {0, NULL};

static bool same_symbol(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* One side of pyop__dtypes_same. */
static bool same_side(const pyop_dtype_set *a, const pyop_dtype_set *b, const pyop_io_info *ios,
                      size_t n, const char *what, pyop__sb *why) {
  for (size_t i = 0; i < n; i++) {
    const pyop_dtype_set *x = a ? &a[i] : &none_set, *y = b ? &b[i] : &none_set;
    if (x->mask == y->mask && same_symbol(x->symbol, y->symbol)) continue;
    char ma[200], mb[200];
    pyop__sb_printf(why, "%s %zu \"%s\": data types %s%s%s vs %s%s%s", what, i, ios[i].name,
                    pyop__dtype_mask_str(x->mask, ma, sizeof ma), x->symbol ? " as " : "",
                    x->symbol ? x->symbol : "", pyop__dtype_mask_str(y->mask, mb, sizeof mb),
                    y->symbol ? " as " : "", y->symbol ? y->symbol : "");
    return false;
  }
  return true;
}

bool pyop__dtypes_same(const pyop__dtypes *a, const pyop__dtypes *b, const pyop_io_info *ins,
                       size_t n_inputs, const pyop_io_info *outs, size_t n_outputs,
                       pyop__sb *why) {
  return same_side(a->inputs, b->inputs, ins, n_inputs, "input", why) &&
         same_side(a->outputs, b->outputs, outs, n_outputs, "output", why);
}

/* -------------------------------------------------------------- checks */

/* " tensor 2" for tensor k of a dynamic input, "" otherwise. */
static const char *tensor_of(const pyop_io_info *io, size_t k, char *buf, size_t len) {
  buf[0] = '\0';
  if (io->kind == PYOP_IO_DYNAMIC) snprintf(buf, len, " tensor %zu", k);
  return buf;
}

/* PYOP_EINVAL: tensor k of input i is outside its set. */
static int input_outside(const pyop__proto *p, const char *call, size_t i, size_t k,
                         int32_t dtype) {
  const pyop_dtype_set *set = &p->dtypes.inputs[i];
  char allowed[300], t[32], sym[300] = "";
  if (set->symbol) snprintf(sym, sizeof sym, " (type %s)", set->symbol);
  return pyop__error(PYOP_EINVAL, "%s of \"%s\": input %zu \"%s\"%s is %s; its prototype "
                     "(%s) allows %s%s", call, p->op_type, i, p->inputs[i].name,
                     tensor_of(&p->inputs[i], k, t, sizeof t), pyop_dtype_name(dtype),
                     p->source, pyop__dtype_mask_str(set->mask, allowed, sizeof allowed), sym);
}

/* PYOP_EINVAL: tensor k of input i disagrees with tensor fk of input fi,
 * both of one symbol. */
static int input_disagrees(const pyop__proto *p, const char *call, size_t i, size_t k,
                           int32_t dtype, size_t fi, size_t fk, int32_t first) {
  char t[32], ft[32];
  return pyop__error(PYOP_EINVAL, "%s of \"%s\": input %zu \"%s\"%s is %s, but input %zu "
                     "\"%s\"%s is %s: both are of type %s, which is one data type per call "
                     "(prototype %s)", call, p->op_type, i, p->inputs[i].name,
                     tensor_of(&p->inputs[i], k, t, sizeof t), pyop_dtype_name(dtype), fi,
                     p->inputs[fi].name, tensor_of(&p->inputs[fi], fk, ft, sizeof ft),
                     pyop_dtype_name(first), p->dtypes.inputs[i].symbol, p->source);
}

int pyop__dtypes_check_inputs(const pyop__proto *p, const pyop_tensor_list *inputs,
                              size_t n_inputs, const char *call) {
  const pyop__dtypes *d = &p->dtypes;
  if (!d->inputs) return PYOP_OK;
  /* The first tensor of each symbol: its data type, input and index. */
  int32_t sym_dtype[PYOP_MAX_DTYPE_SYMBOLS];
  uint32_t sym_input[PYOP_MAX_DTYPE_SYMBOLS], sym_k[PYOP_MAX_DTYPE_SYMBOLS];
  for (uint32_t s = 0; s < d->n_symbols; s++) sym_dtype[s] = -1;
  for (size_t i = 0; i < n_inputs; i++) {
    uint64_t mask = d->inputs[i].mask;
    int s = d->in_sym[i];
    for (size_t k = 0; k < inputs[i].count; k++) {
      int32_t dt = inputs[i].items[k].dtype;
      assert(dt >= 0 && dt < PYOP_DTYPE_COUNT); /* a valid description */
      if (mask && !(mask & PYOP_DTYPE_BIT(dt))) return input_outside(p, call, i, k, dt);
      if (s < 0) continue;
      if (sym_dtype[s] < 0) {
        sym_dtype[s] = dt;
        sym_input[s] = (uint32_t)i;
        sym_k[s] = (uint32_t)k;
      } else if (sym_dtype[s] != dt) {
        return input_disagrees(p, call, i, k, dt, sym_input[s], sym_k[s], sym_dtype[s]);
      }
    }
  }
  return PYOP_OK;
}

int pyop__dtypes_check_output(const pyop__proto *p, const pyop_tensor_list *inputs,
                              size_t index, int32_t dtype, const char *impl_source) {
  const pyop__dtypes *d = &p->dtypes;
  if (!d->outputs) return PYOP_OK;
  const pyop_dtype_set *set = &d->outputs[index];
  char allowed[300];
  if (set->mask && !(set->mask & PYOP_DTYPE_BIT(dtype)))
    return pyop__error(PYOP_ECONTRACT, "execute of \"%s\" (%s): output %zu \"%s\" asked for "
                       "as %s; its prototype (%s) allows %s", p->op_type, impl_source, index,
                       p->outputs[index].name, pyop_dtype_name(dtype), p->source,
                       pyop__dtype_mask_str(set->mask, allowed, sizeof allowed));
  int s = d->out_sym[index];
  for (size_t i = 0; s >= 0 && d->inputs && i < p->n_inputs; i++) {
    if (d->in_sym[i] != s || inputs[i].count == 0) continue;
    int32_t want = inputs[i].items[0].dtype; /* the inputs agree: checked before */
    if (want == dtype) return PYOP_OK;
    return pyop__error(PYOP_ECONTRACT, "execute of \"%s\" (%s): output %zu \"%s\" asked for "
                       "as %s, but it is of type %s, which input %zu \"%s\" makes %s "
                       "(prototype %s)", p->op_type, impl_source, index,
                       p->outputs[index].name, pyop_dtype_name(dtype), set->symbol, i,
                       p->inputs[i].name, pyop_dtype_name(want), p->source);
  }
  return PYOP_OK;
}
