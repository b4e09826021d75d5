/*
 * A fake bridge: one source built as many real shared objects, one per
 * FAKE_<VARIANT> definition (see CMakeLists.txt and README.md). It needs no
 * Python: its ops are C callbacks, so the loader, the registry and op
 * instances can be tested without an interpreter.
 *
 * Ops of the GOOD set:
 *   FakeAdd(x, y) -> z, attr alpha: float = 1.0, infer_meta + execute:
 *     infer_meta copies input 0's description to output 0;
 *     execute (float32 only) allocates output 0 through
 *     services->alloc_output and writes x + alpha * y (x + y by default).
 *   FakeIdentity(x) -> y, infer-only (prototype without implementation).
 *
 * Only pyop_bridge_entry is exported (hidden visibility for the rest; the
 * NO_ENTRY variant exports nothing). Messages and descriptor keys carry
 * the variant's name (FAKE_VARIANT_NAME, its directory name).
 */
#include "pyop/bridge_abi.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(FAKE_REGISTRAR_THREADS) || defined(FAKE_SERVICES_KEPT)
#include <pthread.h>
#endif

#ifndef FAKE_VARIANT_NAME
#define FAKE_VARIANT_NAME "GOOD"
#endif

#if defined(FAKE_NO_ENTRY)
#define FAKE_ENTRY_VISIBILITY __attribute__((visibility("hidden")))
#else
#define FAKE_ENTRY_VISIBILITY __attribute__((visibility("default")))
#endif

#if defined(FAKE_ABORT_IN_CONSTRUCTOR)
/* The MISMATCH variant: its manifest does not match, so the loader must
 * never dlopen it. If it does, the test process dies here. */
__attribute__((constructor)) static void fake_constructor(void) {
  fputs("fake bridge " FAKE_VARIANT_NAME ": constructor ran, but a bridge "
        "with a mismatched manifest must never be dlopened\n",
        stderr);
  abort();
}
#endif

#if defined(FAKE_UNRESOLVED)
/* Deliberately never defined anywhere: dlopen(RTLD_NOW) fails with
 * "undefined symbol: pyop_fake_undefined_function". */
extern int pyop_fake_undefined_function(void);
#endif

/* A bridge built for ABI 1.0 (OLD_*): its table ends with shutdown and its
 * views before the 1.1 members, and it answers minor 0. */
#if defined(FAKE_OLD_MINOR) || defined(FAKE_OLD_DYNAMIC)
#define FAKE_PROTO_VIEW_SIZE offsetof(pyop_proto_view, input_flags)
#define FAKE_IMPL_VIEW_SIZE offsetof(pyop_impl_view, source_digest)
#define FAKE_ABI_MINOR 0
#else
#define FAKE_PROTO_VIEW_SIZE sizeof(pyop_proto_view)
#define FAKE_IMPL_VIEW_SIZE sizeof(pyop_impl_view)
#define FAKE_ABI_MINOR PYOP_BRIDGE_ABI_MINOR
#endif

/* Not every variant uses every helper. */
#define FAKE_MAYBE_UNUSED __attribute__((unused))

static const pyop_loader_services *services;

static pyop_str S(const char *s) {
  pyop_str v = {s, strlen(s)};
  return v;
}

/* Records an error through the loader and returns status. */
static int fail(int status, const char *msg) {
  if (services && services->set_error) services->set_error(status, S(msg));
  return status;
}

/* A log line through libpyop, which prefixes a bridge's lines with
 * "bridge: ": msg starts with the variant's name, not "fake bridge". */
FAKE_MAYBE_UNUSED static void say(int level, const char *msg) {
  if (services && services->log) services->log(level, S(msg));
}

/* PYOP_FAKE_TRACE=<file>: each register_custom_ops, reset and shutdown
 * call appends its name as a line, so a test can count what libpyop asked
 * of the bridge (a second load that is idempotent asks nothing; a refused
 * load resets; a bridge refused after its table was negotiated is shut
 * down before it is closed). */
static void trace(const char *what) {
  const char *path = getenv("PYOP_FAKE_TRACE");
  FILE *f = path && *path ? fopen(path, "a") : NULL;
  if (!f) return;
  fprintf(f, "%s\n", what);
  fclose(f);
}

/* ------------------------------------------------------------ fake ops */

typedef struct holder {
  double alpha;
} holder;

#if defined(FAKE_LANES)
/* pyop_options.lanes as set_config received it. */
static uint32_t lanes_configured;
/* Why FakeIdentity stays serial (tests/unit/test_lifecycle.c repeats it). */
#define FAKE_LANES_REASON \
  "lane 2: ImportError: module _fake does not support loading in subinterpreters"
#endif

static int fake_create_holder(void *ctx, const pyop_attr_view *attrs,
                              size_t n_attrs, void **out_holder) {
  (void)ctx;
  holder *h = malloc(sizeof *h);
  if (!h) return fail(PYOP_ENOMEM, "fake bridge: out of memory");
  h->alpha = 1.0;
  for (size_t i = 0; i < n_attrs; i++) {
    const pyop_attr_view *a = &attrs[i];
    if (a->name.len == 5 && memcmp(a->name.data, "alpha", 5) == 0) {
      if (a->default_value.type == PYOP_ATTR_FLOAT)
        h->alpha = a->default_value.u.f;
      else if (a->default_value.type == PYOP_ATTR_INT)
        h->alpha = (double)a->default_value.u.i;
    }
  }
  *out_holder = h;
  return PYOP_OK;
}

static void fake_destroy_holder(void *h) { free(h); }

#if defined(FAKE_LANES)
/* create_holder in a lane: logs "create_holder_in lane <n>" (the test
 * checks libpyop's placement by it) and makes the holder. */
static int fake_create_holder_in(void *ctx, const pyop_attr_view *attrs, size_t n_attrs,
                                 uint32_t lane, void **out_holder) {
  char line[64];
  snprintf(line, sizeof line, "create_holder_in lane %u", (unsigned)lane);
  say(PYOP_LOG_WARN, line);
  if (lane > lanes_configured)
    return fail(PYOP_EINVAL, "fake bridge: create_holder_in of a lane that does not exist");
  return fake_create_holder(ctx, attrs, n_attrs, out_holder);
}
#define FAKE_CREATE_IN , fake_create_holder_in
#else
#define FAKE_CREATE_IN
#endif

/*
 * Failures on request, through the instance's alpha (every variant):
 * FAKE_ALPHA_SILENT fails infer_meta and execute with PYOP_EPYTHON and no
 * message; FAKE_ALPHA_ODD returns -999 (no libpyop status) and no message.
 */
#define FAKE_ALPHA_SILENT 666.0
#define FAKE_ALPHA_ODD 999.0
static int requested_failure(const void *hp) {
  const holder *h = hp;
  if (h && h->alpha == FAKE_ALPHA_SILENT) return PYOP_EPYTHON;
  if (h && h->alpha == FAKE_ALPHA_ODD) return -999;
  return PYOP_OK;
}

#if defined(FAKE_SERVICES_KEPT)
/* A careless bridge: keeps the exec services and the infer sink of one
 * call and calls them in the next one, and calls the services of a running
 * execute from a thread of its own. Each status is logged. */
static pyop_exec_services kept_svc;
static void *kept_sink_ctx;
static int (*kept_add_output)(void *, size_t, const pyop_tensor *);

static void say_rc(const char *what, int rc) {
  char line[160];
  snprintf(line, sizeof line, FAKE_VARIANT_NAME ": %s returned %d", what, rc);
  say(PYOP_LOG_WARN, line);
}

static void *workspace_thread(void *arg) {
  const pyop_exec_services *svc = arg;
  void *p = NULL;
  say_rc("thread alloc_workspace", svc->alloc_workspace(svc->ctx, 16, &p));
  return NULL;
}
#endif

static int fake_infer_meta(void *h, const pyop_infer_args *args) {
  int req = requested_failure(h);
  if (req != PYOP_OK) return req;
#if defined(FAKE_SERVICES_KEPT)
  if (kept_add_output) {
    pyop_tensor d = args->inputs[0].items[0];
    say_rc("late add_output", kept_add_output(kept_sink_ctx, 0, &d));
  }
  kept_sink_ctx = args->sink_ctx;
  kept_add_output = args->add_output;
#endif
  if (!args || args->struct_size < sizeof *args || args->n_inputs < 1 ||
      args->inputs[0].count < 1 || args->n_outputs < 1)
    return fail(PYOP_EINVAL, "fake infer_meta: needs input 0 and output 0");
  pyop_tensor t = args->inputs[0].items[0];
  t.data = NULL;
  args->outputs[0] = t;
  return PYOP_OK;
}

static int64_t numel(const pyop_tensor *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim && i < PYOP_MAX_DIMS; i++) n *= t->shape[i];
  return n;
}

static int fake_execute(void *hp, const pyop_exec_args *args) {
  const holder *h = hp;
  int req = requested_failure(h);
  if (req != PYOP_OK) return req;
  if (!args || args->struct_size < sizeof *args || args->n_inputs < 2 ||
      args->inputs[0].count < 1 || args->inputs[1].count < 1 ||
      args->n_outputs < 1)
    return fail(PYOP_EINVAL, "fake execute: needs inputs 0, 1 and output 0");
  const pyop_exec_services *svc = args->services;
  if (!svc || svc->struct_size < sizeof *svc || !svc->alloc_output)
    return fail(PYOP_EINVAL, "fake execute: no alloc_output service");
  const pyop_tensor *x = &args->inputs[0].items[0];
  const pyop_tensor *y = &args->inputs[1].items[0];
  if (x->dtype != PYOP_DTYPE_FLOAT32 || y->dtype != PYOP_DTYPE_FLOAT32)
    return fail(PYOP_EINVAL, "fake execute: FakeAdd supports float32 only");
  int64_t n = numel(x);
  if (n < 0 || n != numel(y) || !x->data || !y->data)
    return fail(PYOP_EINVAL, "fake execute: inputs differ in size");
  pyop_tensor out = *x;
  out.data = NULL;
  out.nbytes = (uint64_t)n * sizeof(float);
#if defined(FAKE_SERVICES_KEPT)
  if (kept_svc.alloc_output) {
    pyop_tensor late = out;
    say_rc("late alloc_output", kept_svc.alloc_output(kept_svc.ctx, 0, &late));
    void *p = NULL;
    say_rc("late alloc_workspace", kept_svc.alloc_workspace(kept_svc.ctx, 16, &p));
  }
  kept_svc = *svc;
  pthread_t th;
  pthread_create(&th, NULL, workspace_thread, (void *)svc);
  pthread_join(th, NULL);
#endif
  int rc = svc->alloc_output(svc->ctx, 0, &out);
  if (rc != PYOP_OK) return rc;
  if (!out.data && n > 0)
    return fail(PYOP_EINVAL, "fake execute: alloc_output gave no buffer");
  const float *a = x->data, *b = y->data;
  float *z = out.data;
  for (int64_t i = 0; i < n; i++) z[i] = a[i] + (float)(h ? h->alpha : 1.0) * b[i];
  return PYOP_OK;
}

static const pyop_op_callbacks proto_callbacks = {
    sizeof(pyop_op_callbacks), fake_create_holder, fake_destroy_holder,
    fake_infer_meta, NULL, NULL, NULL FAKE_CREATE_IN};
static const pyop_op_callbacks impl_callbacks = {
    sizeof(pyop_op_callbacks), fake_create_holder, fake_destroy_holder,
    NULL, fake_execute, NULL, NULL FAKE_CREATE_IN};

/* ------------------------------------------------------- descriptors */

#define IO(name, kind) {sizeof(pyop_io_view), {name, sizeof(name) - 1}, kind}

/* Registers op_type as FakeAdd (prototype + implementation). */
FAKE_MAYBE_UNUSED static int add_fake_add(const pyop_registrar *r, const char *op_type,
                        const char *key, uint32_t line) {
#if defined(FAKE_BAD_VIEW_DUP_INPUT)
  static const pyop_io_view inputs[] = {IO("x", PYOP_IO_REQUIRED),
                                        IO("x", PYOP_IO_REQUIRED)};
#elif defined(FAKE_BAD_VIEW_UNKNOWN_KIND)
  static const pyop_io_view inputs[] = {IO("x", PYOP_IO_REQUIRED),
                                        IO("y", 99)};
#elif defined(FAKE_CONFLICT_B)
  /* Same op type as CONFLICT_A, different content: one input only. */
  static const pyop_io_view inputs[] = {IO("x", PYOP_IO_REQUIRED)};
#else
  static const pyop_io_view inputs[] = {IO("x", PYOP_IO_REQUIRED),
                                        IO("y", PYOP_IO_REQUIRED)};
#endif
#if defined(FAKE_OLD_DYNAMIC)
  /* A 1.0 view cannot declare a list output. */
  static const pyop_io_view outputs[] = {IO("z", PYOP_IO_DYNAMIC)};
#else
  static const pyop_io_view outputs[] = {IO("z", PYOP_IO_REQUIRED)};
#endif
  pyop_attr_view attrs[1];
  memset(attrs, 0, sizeof attrs);
  attrs[0].struct_size = sizeof attrs[0];
  attrs[0].name = S("alpha");
  attrs[0].type = PYOP_ATTR_FLOAT;
  attrs[0].required = 0;
  attrs[0].default_value.type = PYOP_ATTR_FLOAT;
  attrs[0].default_value.u.f = 1.0;

  pyop_proto_view p;
  memset(&p, 0, sizeof p);
  p.struct_size = FAKE_PROTO_VIEW_SIZE;
  p.op_type = S(op_type);
#if defined(FAKE_BAD_VIEW_NULL_DATA)
  p.op_type.data = NULL; /* length stays > 0 */
#elif defined(FAKE_BAD_VIEW_EMBEDDED_NUL)
  p.op_type.data = "Fake\0Nul";
  p.op_type.len = 8;
#elif defined(FAKE_BAD_VIEW_EMPTY_OP_TYPE)
  p.op_type.data = "";
  p.op_type.len = 0;
#endif
  p.key = S(key);
  p.source_file = S(FAKE_VARIANT_NAME "/fake_ops.py");
  p.source_line = line;
  p.caps = PYOP_CAP_INFER_META;
  p.inputs = inputs;
  p.n_inputs = sizeof inputs / sizeof inputs[0];
  p.outputs = outputs;
  p.n_outputs = 1;
  p.attrs = attrs;
  p.n_attrs = 1;
  p.ctx = NULL;
  p.callbacks = &proto_callbacks;
#if defined(FAKE_LANES)
  p.lanes = lanes_configured; /* FakeAdd loads in every lane */
#endif
  int rc = r->add_proto(r->ctx, &p);
  if (rc != PYOP_OK) return rc;

  pyop_impl_view im;
  memset(&im, 0, sizeof im);
  im.struct_size = FAKE_IMPL_VIEW_SIZE;
  im.op_type = p.op_type;
  im.key = S(key);
  im.source_file = p.source_file;
  im.source_line = line + 5;
  im.caps = PYOP_CAP_EXECUTE;
  im.ctx = NULL;
  im.callbacks = &impl_callbacks;
#if defined(FAKE_LANES)
  im.lanes = lanes_configured;
#endif
  return r->add_impl(r->ctx, &im);
}

/* Registers op_type as an infer-only identity prototype. */
FAKE_MAYBE_UNUSED static int add_identity(const pyop_registrar *r, const char *op_type,
                        const char *key, uint32_t line) {
  static const pyop_io_view inputs[] = {IO("x", PYOP_IO_REQUIRED)};
  static const pyop_io_view outputs[] = {IO("y", PYOP_IO_REQUIRED)};
  pyop_proto_view p;
  memset(&p, 0, sizeof p);
  p.struct_size = FAKE_PROTO_VIEW_SIZE;
  p.op_type = S(op_type);
  p.key = S(key);
  p.source_file = S(FAKE_VARIANT_NAME "/fake_ops.py");
  p.source_line = line;
  p.caps = PYOP_CAP_INFER_META;
  p.inputs = inputs;
  p.n_inputs = 1;
  p.outputs = outputs;
  p.n_outputs = 1;
  p.callbacks = &proto_callbacks;
#if defined(FAKE_LANES)
  /* FakeIdentity's plugin fails in lane 2: it stays serial. */
  if (lanes_configured) p.serial_reason = S(FAKE_LANES_REASON);
#endif
  return r->add_proto(r->ctx, &p);
}

/* --------------------------------------------------------- the table */

static char artifact_dir[4096];

static int fake_set_config(const pyop_bridge_config *config) {
  if (!config || config->struct_size < sizeof *config)
    return fail(PYOP_EINVAL, "fake bridge: bad config");
  size_t n = config->artifact_dir.len;
  if (n >= sizeof artifact_dir) n = sizeof artifact_dir - 1;
  if (n) memcpy(artifact_dir, config->artifact_dir.data, n);
  artifact_dir[n] = '\0';
#if defined(FAKE_LANES)
  lanes_configured = config->lanes;
#endif
#if defined(FAKE_CONFIG_FAIL)
  return fail(PYOP_EPYTHON, "fake bridge " FAKE_VARIANT_NAME
                           ": cannot start the interpreter (configuration "
                           "refused on purpose)");
#else
  /* A status the test chose (no libpyop status when positive), no message. */
  const char *st = getenv("PYOP_FAKE_CONFIG_STATUS");
  if (st && *st) return atoi(st);
  say(PYOP_LOG_DEBUG, FAKE_VARIANT_NAME ": configured");
  return PYOP_OK;
#endif
}

#if defined(FAKE_REGISTRAR_KEPT)
/* A careless bridge: keeps a copy of the registrar and calls it after
 * register_custom_ops returned (from reset, and from the next call). Each
 * late call's status is logged as "late add_proto (<when>) returned <rc>". */
static pyop_registrar kept;
static int kept_n;

static void late_add(const char *when) {
  if (!kept.add_proto) return;
  char op_type[32], line[160];
  snprintf(op_type, sizeof op_type, "FakeLate%d", kept_n++);
  int rc = add_identity(&kept, op_type, "fake:" FAKE_VARIANT_NAME ".late", 40);
  snprintf(line, sizeof line, FAKE_VARIANT_NAME ": late add_proto (%s) returned %d",
           when, rc);
  say(PYOP_LOG_WARN, line);
}
#endif

#if defined(FAKE_REGISTRAR_THREADS)
/* A bridge that registers from 4 threads of its own during the call. */
enum { FAKE_NTHREADS = 4, FAKE_PER_THREAD = 50 };
static const pyop_registrar *thread_reg;
static int thread_rc[FAKE_NTHREADS];

static void *register_thread(void *arg) {
  int k = (int)(intptr_t)arg;
  thread_rc[k] = PYOP_OK;
  for (int i = 0; i < FAKE_PER_THREAD; i++) {
    char op_type[32];
    snprintf(op_type, sizeof op_type, "FakeThread%d_%02d", k, i);
    int rc = add_identity(thread_reg, op_type, "fake:" FAKE_VARIANT_NAME ".thread", 50);
    if (rc != PYOP_OK) thread_rc[k] = rc;
  }
  return NULL;
}
#endif

static int fake_register(const pyop_registrar *r, const pyop_str *paths,
                         size_t n_paths) {
  (void)paths;
  (void)n_paths;
  trace("register_custom_ops");
  if (!r || r->struct_size < sizeof *r || !r->add_proto || !r->add_impl)
    return fail(PYOP_EINVAL, "fake bridge: bad registrar");
#if defined(FAKE_REGISTER_FAIL_HALFWAY)
  int rc = add_identity(r, "FakeHalfA", "fake:" FAKE_VARIANT_NAME ".a", 3);
  if (rc == PYOP_OK)
    rc = add_identity(r, "FakeHalfB", "fake:" FAKE_VARIANT_NAME ".b", 9);
  if (rc != PYOP_OK) return rc;
  return fail(PYOP_EPYTHON, "fake bridge " FAKE_VARIANT_NAME
                           ": plugin raised after two prototypes");
#elif defined(FAKE_CONFLICT_A)
  return add_fake_add(r, "FakeConflict", "fake:" FAKE_VARIANT_NAME ".op", 10);
#elif defined(FAKE_CONFLICT_B)
  return add_fake_add(r, "FakeConflict", "fake:" FAKE_VARIANT_NAME ".op", 20);
#elif defined(FAKE_MANY_OPS)
  unsigned long n = 1000;
  const char *env = getenv("PYOP_FAKE_NOPS");
  if (env && *env) n = strtoul(env, NULL, 10);
  for (unsigned long i = 0; i < n; i++) {
    char op_type[32], key[64];
    snprintf(op_type, sizeof op_type, "FakeMany%05lu", i);
    snprintf(key, sizeof key, "fake:" FAKE_VARIANT_NAME ".op%05lu", i);
    int rc = add_fake_add(r, op_type, key, (uint32_t)(i + 1));
    if (rc != PYOP_OK) return rc;
  }
  return PYOP_OK;
#elif defined(FAKE_REGISTRAR_THREADS)
  /* Ignores what the registrar answers its threads: returns PYOP_OK. */
  thread_reg = r;
  pthread_t th[FAKE_NTHREADS];
  for (int k = 0; k < FAKE_NTHREADS; k++)
    pthread_create(&th[k], NULL, register_thread, (void *)(intptr_t)k);
  for (int k = 0; k < FAKE_NTHREADS; k++) pthread_join(th[k], NULL);
  char line[160];
  snprintf(line, sizeof line, FAKE_VARIANT_NAME ": thread statuses %d %d %d %d",
           thread_rc[0], thread_rc[1], thread_rc[2], thread_rc[3]);
  say(PYOP_LOG_WARN, line);
  return PYOP_OK;
#elif defined(FAKE_REGISTRAR_KEPT)
  late_add("next call");
  kept = *r;
  return add_identity(r, "FakeIdentity", "fake:" FAKE_VARIANT_NAME ".fake_identity", 30);
#elif defined(FAKE_ODD_STATUS)
  /* A status libpyop does not define, with and without a message. */
  if (getenv("PYOP_FAKE_ODD_SILENT")) return -999;
  /* A status libpyop defines, with no message. */
  if (getenv("PYOP_FAKE_KNOWN_SILENT")) return PYOP_EPYTHON;
  /* A positive status once an op is registered: no success either. */
  if (getenv("PYOP_FAKE_ODD_POSITIVE")) {
    int rc = add_identity(r, "FakeIdentity", "fake:" FAKE_VARIANT_NAME ".fake_identity", 30);
    return rc != PYOP_OK ? rc : 1;
  }
  return fail(-999, "fake bridge " FAKE_VARIANT_NAME ": odd status on purpose");
#else
#if defined(FAKE_LOGGY)
  say(PYOP_LOG_WARN, FAKE_VARIANT_NAME ": registering (a log line "
                     "during registration)");
#endif
  int rc = add_fake_add(r, "FakeAdd", "fake:" FAKE_VARIANT_NAME ".fake_add", 7);
  if (rc != PYOP_OK) return rc;
  return add_identity(r, "FakeIdentity",
                      "fake:" FAKE_VARIANT_NAME ".fake_identity", 30);
#endif
}

#if defined(FAKE_REGISTRAR_KEPT)
FAKE_MAYBE_UNUSED static void fake_reset(void) {
  trace("reset");
  late_add("reset");
}
#else
FAKE_MAYBE_UNUSED static void fake_reset(void) { trace("reset"); }
#endif

static void fake_shutdown(void) {
  trace("shutdown");
#if defined(FAKE_REGISTRAR_KEPT)
  late_add("shutdown");
  memset(&kept, 0, sizeof kept);
  kept_n = 0;
#endif
  services = NULL;
  artifact_dir[0] = '\0';
}

/* ABI 1.5: the "interpreter" is gone while PYOP_FAKE_PYTHON_GONE is set;
 * set to "odd", the answer is a status that says neither (7). */
static int fake_interpreter_status(void) {
  const char *gone = getenv("PYOP_FAKE_PYTHON_GONE");
  if (gone && strcmp(gone, "odd") == 0) return 7;
  return gone ? PYOP_ENOTINIT : PYOP_OK;
}

FAKE_MAYBE_UNUSED static const pyop_bridge_api api = {
#if defined(FAKE_SHORT_SIZE)
    offsetof(pyop_bridge_api, set_config), /* too small for ABI 1.0 */
#elif defined(FAKE_OLD_MINOR) || defined(FAKE_OLD_DYNAMIC)
    PYOP_MEMBER_END(pyop_bridge_api, shutdown), /* ABI 1.0's table: the smallest taken */
#else
    sizeof(pyop_bridge_api),
#endif
#if defined(FAKE_WRONG_MAJOR)
    2,
#else
    PYOP_BRIDGE_ABI_MAJOR,
#endif
#if defined(FAKE_NEWER_MINOR)
    PYOP_BRIDGE_ABI_MINOR + 1, /* newer than this libpyop, whatever its minor */
#else
    FAKE_ABI_MINOR,
#endif
    {"fake bridge " FAKE_VARIANT_NAME, sizeof("fake bridge " FAKE_VARIANT_NAME) - 1},
    fake_set_config,
    fake_register,
#if defined(FAKE_NULL_FN)
    NULL, /* reset */
#else
    fake_reset,
#endif
    fake_shutdown,
    fake_interpreter_status,
};

#if defined(FAKE_DATA_ENTRY)
/* The entry symbol is a data object: called, it would jump into .rodata. */
FAKE_ENTRY_VISIBILITY const unsigned char pyop_bridge_entry[16] = {0xff};
#define pyop_bridge_entry fake_bridge_entry_unexported
#define FAKE_ENTRY_DEF static __attribute__((unused))
#else
#define FAKE_ENTRY_DEF FAKE_ENTRY_VISIBILITY
#endif

FAKE_ENTRY_DEF int pyop_bridge_entry(const pyop_bridge_request *request,
                                     const pyop_bridge_api **out_api);

FAKE_ENTRY_DEF int pyop_bridge_entry(const pyop_bridge_request *request,
                                     const pyop_bridge_api **out_api) {
#if defined(FAKE_UNRESOLVED)
  if (!request) return pyop_fake_undefined_function();
#endif
  if (!request || !out_api || request->struct_size < sizeof *request)
    return PYOP_EINVAL;
  services = request->services;
#if defined(FAKE_REFUSE)
  return fail(PYOP_EABI,
              "fake bridge " FAKE_VARIANT_NAME ": will not speak any bridge ABI");
#else
  if (request->abi_major != PYOP_BRIDGE_ABI_MAJOR)
    return fail(PYOP_EABI, "fake bridge: loader speaks another ABI major");
  *out_api = &api;
  /* A status the test chose, with the table filled in all the same. */
  const char *st = getenv("PYOP_FAKE_ENTRY_STATUS");
  if (st && *st) return atoi(st);
  return PYOP_OK;
#endif
}
