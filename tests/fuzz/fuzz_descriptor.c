/*
 * libFuzzer target: descriptor views (docs/design.md §ABI, §Registry).
 *
 * Decodes the fuzzer's bytes into a pyop_proto_view and a pyop_impl_view —
 * strings (including NULL data with a length and embedded NULs), struct
 * sizes, counts, io kinds, attribute types, required flags and default
 * values, caps and callback tables — then runs the validators and a
 * transaction add + abort (or commit + unload). Nothing may crash, leak or
 * read out of bounds: every pointer the decoder hands out is backed by
 * memory of the size the view claims, except the deliberate "NULL data with
 * len > 0" and "count > 0 with NULL items" cases the validator must reject
 * before reading.
 *
 * Input layout (every read past the end yields zeros):
 *   u8 flags            bit0 short proto struct_size, bit1 short impl
 *                       struct_size, bit2 commit + unload instead of abort,
 *                       bit3 impl reuses the proto's op type
 *   proto: str op_type, str key, str file, u8 line, u8 caps, u8 callbacks,
 *          u8 n_inputs + ios, u8 n_outputs + ios, u8 n_attrs + attrs
 *   impl:  [str op_type], str key, str file, u8 line, u8 caps, u8 callbacks
 *   digests (ABI 1.3): str proto source_digest, str impl source_digest;
 *          a proto that was added is added again with the impl's digest
 *          (a repeat: the same definition or a conflict)
 *   dtypes (ABI 1.7): per side (inputs, outputs) u8 sel; sel < 128: NULL;
 *          else one entry per io of that side (only when its io array is
 *          real): u8 m (m < 200: mask m | m << 5, else a bit 13..63
 *          beside bit 0), str symbol
 *   str:   u8 b; b == 0xFF: NULL data with length (next u8)+1;
 *          else length b % 48, bytes taken from the input
 *   io:    u8 size_sel, str name, u8 kind (as int8)
 *   attr:  u8 size_sel, str name, u8 type % 13, u8 required % 3,
 *          u8 default type (0: the declared type, else % 13), value
 *   count: u8 c; c == 0xFF: a huge count with a NULL array; else c % 6
 *
 * Build with -fsanitize=fuzzer; -DPYOP_FUZZ_STANDALONE gives a main() that
 * runs the files named on the command line (for valgrind or plain gcc).
 */
#include "registry.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ decoding */

typedef struct reader {
  const uint8_t *p;
  size_t n;
} reader;

static uint8_t u8(reader *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}

/* A bump pool for the decoded arrays of one input. */
static _Alignas(max_align_t) unsigned char pool[1 << 16];
static size_t pool_used;

static void *take(size_t n) {
  size_t off = (pool_used + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
  if (off + n > sizeof pool) return NULL;
  pool_used = off + n;
  memset(pool + off, 0, n);
  return pool + off;
}

static pyop_str rd_str(reader *r) {
  uint8_t b = u8(r);
  if (b == 0xFF) return (pyop_str){NULL, (size_t)u8(r) + 1};
  size_t len = b % 48;
  if (len > r->n) len = r->n;
  pyop_str s = {(const char *)r->p, len};
  r->p += len;
  r->n -= len;
  if (!len) s.data = (r->n & 1) ? NULL : "";
  return s;
}

static size_t rd_count(reader *r, bool *huge) {
  uint8_t c = u8(r);
  *huge = c == 0xFF;
  return *huge ? (size_t)2000 + r->n : c % 6;
}

/* A struct size: the real one mostly, sometimes short or bigger. */
static size_t rd_size(reader *r, size_t real) {
  uint8_t s = u8(r);
  if (s < 200) return real;
  if (s < 230) return s % (real ? real : 1);
  return real + s; /* a newer minor: only known members are read */
}

static int64_t rd_i64(reader *r) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = (v << 8) | u8(r);
  return (int64_t)v;
}

static void rd_value(reader *r, int32_t type, pyop_attr_value *v) {
  memset(v, 0, sizeof *v);
  v->type = type;
  bool huge;
  size_t n;
  switch (type) {
  case PYOP_ATTR_INT: v->u.i = rd_i64(r); break;
  case PYOP_ATTR_FLOAT: {
    int64_t bits = rd_i64(r);
    memcpy(&v->u.f, &bits, sizeof v->u.f);
    break;
  }
  case PYOP_ATTR_BOOL: v->u.b = u8(r) & 1; break;
  case PYOP_ATTR_DTYPE: v->u.dtype = (int8_t)u8(r); break;
  case PYOP_ATTR_STR: v->u.s = rd_str(r); break;
  case PYOP_ATTR_LIST_INT: {
    n = rd_count(r, &huge);
    int64_t *items = huge ? NULL : take(n * sizeof *items);
    for (size_t i = 0; items && i < n; i++) items[i] = (int8_t)u8(r);
    v->u.ints.items = items;
    v->u.ints.count = items || huge ? n : 0;
    break;
  }
  case PYOP_ATTR_LIST_FLOAT: {
    n = rd_count(r, &huge);
    double *items = huge ? NULL : take(n * sizeof *items);
    for (size_t i = 0; items && i < n; i++) items[i] = (double)(int8_t)u8(r) / 4;
    v->u.floats.items = items;
    v->u.floats.count = items || huge ? n : 0;
    break;
  }
  case PYOP_ATTR_LIST_BOOL: {
    n = rd_count(r, &huge);
    bool *items = huge ? NULL : take(n * sizeof *items);
    for (size_t i = 0; items && i < n; i++) items[i] = u8(r) & 1;
    v->u.bools.items = items;
    v->u.bools.count = items || huge ? n : 0;
    break;
  }
  case PYOP_ATTR_LIST_STR: {
    n = rd_count(r, &huge);
    pyop_str *items = huge ? NULL : take(n * sizeof *items);
    for (size_t i = 0; items && i < n; i++) items[i] = rd_str(r);
    v->u.strs.items = items;
    v->u.strs.count = items || huge ? n : 0;
    break;
  }
  case PYOP_ATTR_LIST_DTYPE: {
    n = rd_count(r, &huge);
    int32_t *items = huge ? NULL : take(n * sizeof *items);
    for (size_t i = 0; items && i < n; i++) items[i] = (int8_t)u8(r);
    v->u.dtypes.items = items;
    v->u.dtypes.count = items || huge ? n : 0;
    break;
  }
  case PYOP_ATTR_LIST_LIST_INT: {
    n = rd_count(r, &huge);
    pyop_int_list *lists = huge ? NULL : take(n * sizeof *lists);
    for (size_t i = 0; lists && i < n; i++) {
      bool inner_huge;
      size_t m = rd_count(r, &inner_huge);
      int64_t *items = inner_huge ? NULL : take(m * sizeof *items);
      for (size_t k = 0; items && k < m; k++) items[k] = (int8_t)u8(r);
      lists[i].items = items;
      lists[i].count = items || inner_huge ? m : 0;
    }
    v->u.int_lists.items = lists;
    v->u.int_lists.count = lists || huge ? n : 0;
    break;
  }
  default: /* an unknown type: the payload is never read */
    v->u.i = rd_i64(r);
    break;
  }
}

static const pyop_io_view *rd_ios(reader *r, size_t *count) {
  bool huge;
  size_t n = rd_count(r, &huge);
  pyop_io_view *ios = huge ? NULL : take(n * sizeof *ios);
  for (size_t i = 0; ios && i < n; i++) {
    ios[i].struct_size = rd_size(r, sizeof *ios);
    ios[i].name = rd_str(r);
    ios[i].kind = (int8_t)u8(r);
  }
  *count = ios || huge ? n : 0;
  return ios;
}

static const pyop_attr_view *rd_attrs(reader *r, size_t *count) {
  bool huge;
  size_t n = rd_count(r, &huge);
  pyop_attr_view *at = huge ? NULL : take(n * sizeof *at);
  for (size_t i = 0; at && i < n; i++) {
    at[i].struct_size = rd_size(r, sizeof *at);
    at[i].name = rd_str(r);
    at[i].type = u8(r) % 13;
    at[i].required = u8(r) % 3;
    uint8_t dt = u8(r);
    rd_value(r, dt ? dt % 13 : at[i].type, &at[i].default_value);
  }
  *count = at || huge ? n : 0;
  return at;
}

/* The constraint array of one side (n ios backed by ios), or NULL. */
static const pyop_dtype_set_view *rd_dtypes(reader *r, const pyop_io_view *ios, size_t n) {
  uint8_t sel = u8(r);
  if (sel < 128 || !ios) return NULL;
  pyop_dtype_set_view *sets = take(n * sizeof *sets + 1);
  for (size_t i = 0; sets && i < n; i++) {
    uint8_t m = u8(r);
    sets[i].mask = m < 200 ? (uint64_t)m | (uint64_t)m << 5 : 1u | 1ull << (13 + m % 51);
    sets[i].symbol = rd_str(r);
  }
  return sets;
}

/* ------------------------------------------------------ fake callbacks */

static int f_create(void *c, const pyop_attr_view *a, size_t n, void **o) {
  (void)c; (void)a; (void)n;
  *o = NULL;
  return PYOP_OK;
}
static void f_destroy(void *h) { (void)h; }
static int f_infer(void *h, const pyop_infer_args *a) { (void)h; (void)a; return PYOP_OK; }
static int f_exec(void *h, const pyop_exec_args *a) { (void)h; (void)a; return PYOP_OK; }
static int f_compile(void *h, const pyop_compile_args *a) { (void)h; (void)a; return PYOP_OK; }
static int f_declare(void *h, const pyop_declare_args *a) { (void)h; (void)a; return PYOP_OK; }

#define CB_SIZE sizeof(pyop_op_callbacks)
static const pyop_op_callbacks cbs[] = {
    {CB_SIZE, f_create, f_destroy, f_infer, NULL, NULL, NULL},          /* proto */
    {CB_SIZE, f_create, f_destroy, NULL, f_exec, NULL, NULL},           /* execute */
    {CB_SIZE, f_create, f_destroy, NULL, f_exec, f_compile, f_declare}, /* all impl */
    {CB_SIZE, NULL, f_destroy, f_infer, f_exec, NULL, NULL},            /* no create */
    {8, f_create, f_destroy, f_infer, NULL, NULL, NULL},                /* short */
    {CB_SIZE + 64, f_create, NULL, NULL, NULL, f_compile, NULL},        /* bigger, no destroy */
};

static const pyop_op_callbacks *rd_callbacks(reader *r) {
  uint8_t c = u8(r) % (PYOP__ARRAY_LEN(cbs) + 1);
  return c == PYOP__ARRAY_LEN(cbs) ? NULL : &cbs[c];
}

/* --------------------------------------------------------------- target */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size};
  pool_used = 0;
  uint8_t flags = u8(&r);

  pyop_proto_view p;
  memset(&p, 0, sizeof p);
  p.struct_size = (flags & 1) ? u8(&r) % sizeof p : sizeof p;
  p.op_type = rd_str(&r);
  p.key = rd_str(&r);
  p.source_file = rd_str(&r);
  p.source_line = u8(&r);
  p.caps = u8(&r) & 0x1F;
  p.callbacks = rd_callbacks(&r);
  p.inputs = rd_ios(&r, &p.n_inputs);
  p.outputs = rd_ios(&r, &p.n_outputs);
  p.attrs = rd_attrs(&r, &p.n_attrs);

  pyop_impl_view i;
  memset(&i, 0, sizeof i);
  i.struct_size = (flags & 2) ? u8(&r) % sizeof i : sizeof i;
  i.op_type = (flags & 8) ? p.op_type : rd_str(&r);
  i.key = rd_str(&r);
  i.source_file = rd_str(&r);
  i.source_line = u8(&r);
  i.caps = u8(&r) & 0x1F;
  i.callbacks = rd_callbacks(&r);
  p.source_digest = rd_str(&r);
  i.source_digest = rd_str(&r);
  p.input_dtypes = rd_dtypes(&r, p.inputs, p.n_inputs);
  p.output_dtypes = rd_dtypes(&r, p.outputs, p.n_outputs);

  int vp = pyop__validate_proto_view(&p);
#ifdef PYOP_FUZZ_STANDALONE
  if (getenv("PYOP_FUZZ_VERBOSE")) fprintf(stderr, "proto: %d %s\n", vp, pyop_last_error());
#endif
  int vi = pyop__validate_impl_view(&i);
#ifdef PYOP_FUZZ_STANDALONE
  if (getenv("PYOP_FUZZ_VERBOSE")) fprintf(stderr, "impl: %d %s\n", vi, pyop_last_error());
#endif
  if (vp != PYOP_OK && vp != PYOP_EDESCRIPTOR && vp != PYOP_ENOMEM) abort();
  if (vi != PYOP_OK && vi != PYOP_EDESCRIPTOR) abort();

  pyop__txn *t;
  if (pyop__txn_begin(&t) != PYOP_OK) return 0;
  int rp = pyop__txn_add_proto(t, &p);
  int ri = pyop__txn_add_impl(t, &i);
  if ((rp == PYOP_OK) != (vp == PYOP_OK) && rp != PYOP_ENOMEM) abort();
  if ((ri == PYOP_OK) != (vi == PYOP_OK) && ri != PYOP_ENOMEM && ri != PYOP_ECONFLICT) abort();
  if (rp == PYOP_OK) {
    pyop_proto_view again = p;
    again.source_digest = i.source_digest;
    int ra = pyop__txn_add_proto(t, &again);
    if (ra != PYOP_OK && ra != PYOP_ECONFLICT && ra != PYOP_EDESCRIPTOR && ra != PYOP_ENOMEM)
      abort();
  }
  if (flags & 4) {
    int rc = pyop__txn_commit(t);
#ifdef PYOP_FUZZ_STANDALONE
    if (getenv("PYOP_FUZZ_VERBOSE"))
      fprintf(stderr, "commit: %d (%zu ops) %s\n", rc, pyop__registry_count(),
              rc ? pyop_last_error() : "");
#endif
    /* A valid prototype is registered; an implementation alone waits for
     * one outside the op table (docs/bridge-abi.md, ABI 1.2). */
    if (rc == PYOP_OK && pyop__registry_count() == 0 && rp == PYOP_OK) abort();
    if (pyop__registry_unload() != PYOP_OK) abort();
  } else {
    pyop__txn_abort(t);
  }
  if (pyop__registry_count() != 0) abort();
  return 0;
}

#ifdef PYOP_FUZZ_STANDALONE
/* Runs every file named on the command line through the target. */
int main(int argc, char **argv) {
  for (int a = 1; a < argc; a++) {
    FILE *f = fopen(argv[a], "rb");
    if (!f) {
      perror(argv[a]);
      return 1;
    }
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    uint8_t *copy = malloc(n ? n : 1); /* exact size: out-of-bounds reads show */
    memcpy(copy, buf, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
  }
  printf("ran %d inputs\n", argc - 1);
  return 0;
}
#endif
