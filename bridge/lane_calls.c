/*
 * Calls into the images of interpreter lanes (lanes.c, docs/design.md
 * §Lanes): the dispatching callbacks of an op that runs in lanes, and the
 * thread state the host's own code runs with when a lane calls out.
 *
 * While a lane's image runs on a thread, the lane's thread state is
 * attached there. What it calls back in libpyop can reach the host: its
 * output allocator (pyop_exec_ctx), its log hook. A host that owns Python
 * writes those in Python (the pyop command: ctypes callbacks, which take the
 * GIL with PyGILState_Ensure); run with a lane's state attached, such a
 * callback would run the host's code and objects in the lane's interpreter,
 * its memory in the lane's allocator (memory corruption that crashes the
 * process later, issue 28). So every call a lane's image makes into libpyop
 * goes through a wrapper here that detaches the lane's state and attaches
 * the one the host had when it called in (the host's own when it keeps the
 * GIL), and back after: the host's code runs as it would without lanes.
 *
 * CPython binds PyGILState's state of a thread to the last state attached
 * there, so while a lane runs a PyGILState_Ensure finds the lane's state.
 * When the host had nothing attached (a ctypes.CDLL call, a C host thread)
 * but the thread's PyGILState state was another interpreter's (a Python
 * thread's own; one the host or the bridge made in the main interpreter),
 * that state is bound again for the call out (attached and detached: its
 * GIL taken for a moment), so the host's PyGILState_Ensure finds it as
 * without lanes. A thread with no PyGILState state, or the lane's own (a
 * host thread that first entered Python in that lane), is left as it is:
 * nothing of the host's to give back (docs/host-guide.md, lanes).
 *
 * The states to give back are this thread's mark, set by whatever enters a
 * lane image (a dispatcher below, or lanes.c's load, reset, start and stop
 * of the lanes). No thread holds two GILs: the lane's is released before
 * another state is attached.
 */
#include "bridge.h"

#ifdef PB_LANES

/* ----------------------------------------------------- the host's state */

static _Thread_local pb_host_mark mark;

pb_host_mark pb_lanes_enter(PyThreadState *host) {
  pb_host_mark old = mark;
  mark.host = host;
  mark.gil_state = PyGILState_GetThisThreadState();
  mark.inside = true;
  return old;
}

void pb_lanes_leave(pb_host_mark old) { mark = old; }

/* Whether the call out needs the host's states back: cur (a lane's) is
 * attached, the host had another state attached or a PyGILState state of
 * another interpreter. */
static bool host_differs(PyThreadState *cur) {
  if (cur == NULL || cur == mark.host)
    return false;
  if (mark.host != NULL)
    return true;
  PyThreadState *g = mark.gil_state;
  return g != NULL && g != cur &&
         PyThreadState_GetInterpreter(g) != PyThreadState_GetInterpreter(cur);
}

pb_host_turn pb_lanes_to_host(void) {
  pb_host_turn t = {NULL, false};
  if (!mark.inside || !host_differs(pb_attached_tstate()))
    return t;
  t.lane = PyEval_SaveThread();
  t.moved = true;
  if (mark.host != NULL) {
    PyEval_RestoreThread(mark.host);
  } else {
    PyEval_RestoreThread(mark.gil_state); /* binds PyGILState to it again */
    PyEval_SaveThread();
  }
  return t;
}

void pb_lanes_from_host(pb_host_turn t) {
  if (!t.moved)
    return;
  if (mark.host != NULL)
    PyEval_SaveThread();
  PyEval_RestoreThread(t.lane);
}

/* A call f(args) out of a lane, with the host's thread state attached. */
#define HOST_CALL(call)                                                                       \
  do {                                                                                        \
    pb_host_turn turn_ = pb_lanes_to_host();                                                  \
    int rc_ = (call);                                                                         \
    pb_lanes_from_host(turn_);                                                                \
    return rc_;                                                                               \
  } while (0)

/* ------------------------------------------------------ the call sinks */

/* Each call into a lane gets a copy of libpyop's arguments whose sinks are
 * the wrappers below; their sink_ctx is a frame holding the original
 * arguments and how many times the lane called out (a call that called
 * out can no longer be run again elsewhere). */

typedef struct sink_frame {
  const void *args; /* libpyop's pyop_infer_args, _compile_args or _declare_args */
  unsigned calls;
} sink_frame;

static int w_add_output(void *ctx, size_t index, const pyop_tensor *desc) {
  sink_frame *f = ctx;
  const pyop_infer_args *a = f->args;
  f->calls++;
  HOST_CALL(a->add_output(a->sink_ctx, index, desc));
}

typedef struct exec_frame {
  pyop_exec_args args;
  pyop_exec_services svc;
  const pyop_exec_services *host;
  unsigned calls;
} exec_frame;

static int w_alloc_output(void *ctx, size_t index, pyop_tensor *t) {
  exec_frame *f = ctx;
  f->calls++;
  HOST_CALL(f->host->alloc_output(f->host->ctx, index, t));
}

static int w_alloc_workspace(void *ctx, uint64_t nbytes, void **out) {
  exec_frame *f = ctx;
  f->calls++;
  HOST_CALL(f->host->alloc_workspace(f->host->ctx, nbytes, out));
}

static int w_alias_output(void *ctx, size_t index, size_t input, pyop_tensor *t) {
  exec_frame *f = ctx;
  f->calls++;
  HOST_CALL(f->host->alias_output(f->host->ctx, index, input, t));
}

static int w_set_artifact(void *ctx, const void *data, size_t len) {
  sink_frame *f = ctx;
  const pyop_compile_args *a = f->args;
  f->calls++;
  HOST_CALL(a->set_artifact(a->sink_ctx, data, len));
}

static int w_add_launch(void *ctx, const pyop_launch_view *launch) {
  sink_frame *f = ctx;
  const pyop_declare_args *a = f->args;
  f->calls++;
  HOST_CALL(a->add_launch(a->sink_ctx, launch));
}

static int w_add_workspace(void *ctx, uint64_t nbytes) {
  sink_frame *f = ctx;
  const pyop_declare_args *a = f->args;
  f->calls++;
  HOST_CALL(a->add_workspace(a->sink_ctx, nbytes));
}

/* Copies the first struct_size bytes of args *a (at most size) into *b. */
static void copy_args(void *b, const void *a, size_t a_size, size_t size) {
  memset(b, 0, size);
  memcpy(b, a, a_size < size ? a_size : size);
  *(size_t *)b = a_size < size ? a_size : size;
}

/* ----------------------------------------- attributes kept for later */

/* A block that counts (base NULL) or fills what the copy needs. */
typedef struct block {
  char *base;
  size_t used;
} block;

/* n bytes of src at the next 8-byte boundary of b: their place, or NULL
 * while counting. */
static void *put(block *b, const void *src, size_t n) {
  size_t at = (b->used + 7) & ~(size_t)7;
  b->used = at + n;
  if (b->base == NULL || n == 0)
    return NULL;
  memcpy(b->base + at, src, n);
  return b->base + at;
}

/* The value's own arrays and strings into b (the tensor of a Tensor
 * attribute is libpyop's copy, valid until destroy_holder: kept as is). */
static void put_value(block *b, pyop_attr_value *v) {
  switch (v->type) {
  case PYOP_ATTR_STR:
    v->u.s.data = put(b, v->u.s.data, v->u.s.len);
    break;
  case PYOP_ATTR_LIST_INT:
    v->u.ints.items = put(b, v->u.ints.items, v->u.ints.count * sizeof(int64_t));
    break;
  case PYOP_ATTR_LIST_FLOAT:
    v->u.floats.items = put(b, v->u.floats.items, v->u.floats.count * sizeof(double));
    break;
  case PYOP_ATTR_LIST_BOOL:
    v->u.bools.items = put(b, v->u.bools.items, v->u.bools.count * sizeof(bool));
    break;
  case PYOP_ATTR_LIST_DTYPE:
    v->u.dtypes.items = put(b, v->u.dtypes.items, v->u.dtypes.count * sizeof(int32_t));
    break;
  case PYOP_ATTR_LIST_STR: {
    const pyop_str *src = v->u.strs.items;
    pyop_str *dst = put(b, src, v->u.strs.count * sizeof *src);
    for (size_t i = 0; i < v->u.strs.count; i++) {
      const char *d = put(b, src[i].data, src[i].len);
      if (dst != NULL)
        dst[i].data = d;
    }
    v->u.strs.items = dst;
    break;
  }
  case PYOP_ATTR_LIST_LIST_INT: {
    const pyop_int_list *src = v->u.int_lists.items;
    pyop_int_list *dst = put(b, src, v->u.int_lists.count * sizeof *src);
    for (size_t i = 0; i < v->u.int_lists.count; i++) {
      const int64_t *d = put(b, src[i].items, src[i].count * sizeof(int64_t));
      if (dst != NULL)
        dst[i].items = d;
    }
    v->u.int_lists.items = dst;
    break;
  }
  default:
    break;
  }
}

/* The attribute views a[0..n) deep-copied into one malloc'd block (freed
 * with free), or NULL when out of memory (n 0: NULL too). */
static pyop_attr_view *attrs_copy(const pyop_attr_view *a, size_t n) {
  if (n == 0)
    return NULL;
  block b = {NULL, 0};
  for (int pass = 0; pass < 2; pass++) {
    size_t size = b.used;
    b.used = 0;
    if (pass == 1 && (b.base = malloc(size)) == NULL)
      return NULL;
    pyop_attr_view *views = put(&b, a, n * sizeof *a);
    for (size_t i = 0; i < n; i++) {
      pyop_attr_view v = a[i];
      v.name.data = put(&b, a[i].name.data, a[i].name.len);
      put_value(&b, &v.default_value);
      if (views != NULL)
        views[i] = v;
    }
  }
  return (pyop_attr_view *)(void *)b.base;
}

/* ----------------------------------------------------------- dispatch */

/*
 * A holder of an op that runs in lanes: whose callbacks serve it, whether
 * they are a lane's (or the main interpreter's: lane 0), and for a lane's
 * what a holder of the main interpreter is made from if the op falls back
 * there (its descriptor, the attributes: refused, below), then that one.
 */
typedef struct lane_holder {
  const pyop_op_callbacks *cb;
  void *holder;
  bool in_lane;
  unsigned epoch; /* of the lanes it was made in */
  pb_op *op;      /* the main image's descriptor */
  pyop_attr_view *attrs;
  size_t n_attrs;
  _Atomic(void *) main; /* the main interpreter's holder, once made */
} lane_holder;

/* Whether w's lane ended since it was made (Python finalized before
 * pyop_shutdown: lanes.c ended the lanes at exit): then nothing calls into
 * its image again, and the call fails. */
static bool gone(const lane_holder *w) {
  return w->in_lane && w->epoch != pb_lanes_epoch();
}

static int gone_error(const char *what) {
  return pb_error(PYOP_ENOTINIT, "%s: the op's interpreter lane ended when Python finalized "
                                 "(before pyop_shutdown)", what);
}

static const pyop_op_callbacks main_callbacks = {
    sizeof(pyop_op_callbacks), pb_cb_create_holder, pb_cb_destroy_holder, pb_cb_infer_meta,
    pb_cb_execute,             pb_cb_compile,       pb_cb_declare,        NULL};

/* ---- an op that falls back to the main interpreter */

/* The message of this thread's last call that a lane refused
 * (pb_lanes_refused_note), until the dispatcher takes it. */
static _Thread_local char *refused_msg;

void pb_lanes_refused_note(pyop_str m) {
  free(refused_msg);
  refused_msg = strndup(m.data != NULL ? m.data : "", m.len);
}

/* Whether w's op runs in the main interpreter from now on. */
static inline bool fell_back(const lane_holder *w) {
  return w->in_lane && atomic_load_explicit(&w->op->lane_refusal, memory_order_acquire) != NULL;
}

/* w's holder in the main interpreter (made from its attributes the first
 * time) in *out: PYOP_OK, or create_holder's status (error reported). Any
 * thread, no GIL: two that race make one each and keep the first. */
static int main_holder(lane_holder *w, void **out) {
  void *m = atomic_load_explicit(&w->main, memory_order_acquire);
  if (m == NULL) {
    void *made = NULL;
    int rc = pb_cb_create_holder(w->op, w->attrs, w->n_attrs, &made);
    if (rc != PYOP_OK)
      return rc;
    if (atomic_compare_exchange_strong(&w->main, &m, made))
      m = made;
    else
      pb_cb_destroy_holder(made);
  }
  *out = m;
  return PYOP_OK;
}

/*
 * A call of w in its lane failed after an import the lane refused and the
 * main interpreter makes (a lazy import of asyncio on 3.12, _ctypes,
 * numpy: lane_imports.c), or, caught, succeeded with the plugin going on
 * without the module (its fallback path, where the main interpreter runs
 * the accelerated one): the op runs in the main interpreter from now on,
 * said once. retry NULL (a call that succeeded): its result stands,
 * PYOP_OK. Else *retry: the main holder to run this call again with, when
 * the lane called out nothing (calls 0); else the call fails saying so.
 */
static int refused(lane_holder *w, const char *what, bool caught, unsigned calls, void **retry) {
  char *msg = refused_msg != NULL ? refused_msg : pb_strdupf("(no detail)");
  refused_msg = NULL;
  pb_op *op = w->op;
  size_t n = msg != NULL ? strcspn(msg, "\n") : 0;
  char *why = pb_strdupf("an import was refused in its interpreter lane (%.*s): it runs in the "
                         "main interpreter from then on", (int)(n < 400 ? n : 400),
                         msg != NULL ? msg : "");
  char *none = NULL;
  if (why != NULL && atomic_compare_exchange_strong(&op->lane_refusal, &none, why))
    pb_log(PYOP_LOG_WARN, "lanes: %s '%s' (%s) runs in the main interpreter from now on: %s "
           "%s in its lane after an import the lane refused: %.*s",
           op->is_impl ? "implementation" : "prototype", op->op_type, op->where, what,
           caught ? "went on" : "failed", (int)n, msg != NULL ? msg : "");
  else
    free(why);
  int rc = PYOP_OK;
  if (retry == NULL) {
    free(msg);
    return rc;
  }
  *retry = NULL;
  if (calls == 0)
    rc = main_holder(w, retry);
  else
    rc = pb_error(PYOP_EPYTHON, "%s (after it had called out, so this call is not run again: "
                  "the op's later calls run in the main interpreter)", msg != NULL ? msg : "");
  free(msg);
  return rc;
}

/* After a call of w in its lane returned rc: rc itself, or, when the lane
 * refused an import during it, refused()'s answer (a caught refusal keeps
 * the call's result); *main is the holder to run the call again with in
 * the main interpreter, NULL when it is not run again. */
static int lane_outcome(lane_holder *w, const char *what, int rc, unsigned calls, void **main) {
  *main = NULL;
  if (rc == PB_STATUS_LANE_CAUGHT)
    return refused(w, what, true, calls, NULL);
  if (rc == PB_STATUS_LANE_REFUSED)
    return refused(w, what, false, calls, main);
  return rc;
}

/* A holder made by cb (a lane's when in_lane) from ctx and the attributes:
 * PYOP_OK and *out, or the callback's status. */
static int hold(const pyop_op_callbacks *cb, bool in_lane, pb_op *op, void *ctx,
                const pyop_attr_view *attrs, size_t n, void **out) {
  lane_holder *w = calloc(1, sizeof *w);
  if (w == NULL)
    return pb_error(PYOP_ENOMEM, "create_holder: out of memory");
  *w = (lane_holder){cb, NULL, in_lane, pb_lanes_epoch(), op, NULL, 0, NULL};
  if (in_lane && n > 0 && (w->attrs = attrs_copy(attrs, n)) == NULL) {
    free(w);
    return pb_error(PYOP_ENOMEM, "create_holder: out of memory");
  }
  w->n_attrs = n;
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  int rc = cb->create_holder(ctx, attrs, n, &w->holder);
  bool caught = rc == PB_STATUS_LANE_CAUGHT;
  if (caught) { /* its constructor went on without what the lane refused: not kept */
    cb->destroy_holder(w->holder);
    w->holder = NULL;
  }
  pb_lanes_leave(m);
  if (rc == PB_STATUS_LANE_REFUSED || caught) { /* its constructor imported what the lane refused */
    void *main = NULL;
    rc = refused(w, "create_holder", caught, 0, &main);
    if (rc == PYOP_OK) { /* the instance is the main interpreter's from the start */
      free(w->attrs);
      *w = (lane_holder){&main_callbacks, main, false, w->epoch, op, NULL, 0, NULL};
    }
  }
  if (rc != PYOP_OK) {
    free(w->attrs);
    free(w);
    return rc;
  }
  *out = w;
  return PYOP_OK;
}

static int disp_create(void *ctx, const pyop_attr_view *attrs, size_t n, void **out) {
  return hold(&main_callbacks, false, ctx, ctx, attrs, n, out);
}

static int disp_create_in(void *ctx, const pyop_attr_view *attrs, size_t n, uint32_t lane,
                          void **out) {
  pb_op *op = ctx;
  if (lane == 0 || atomic_load_explicit(&op->lane_refusal, memory_order_acquire) != NULL)
    return disp_create(ctx, attrs, n, out);
  if (lane > op->n_lanes)
    return pb_error(PYOP_EINVAL, "create_holder of op '%s': lane %u does not exist (%u %s)",
                    op->op_type, (unsigned)lane, (unsigned)op->n_lanes,
                    PB_PLURAL(op->n_lanes, "lane", "lanes"));
  if (op->lanes_epoch != pb_lanes_epoch())
    return gone_error("create_holder");
  return hold(op->lane_cb[lane - 1], true, op, op->lane_ctx[lane - 1], attrs, n, out);
}

static void disp_destroy(void *h) {
  lane_holder *w = h;
  void *main = atomic_load_explicit(&w->main, memory_order_acquire);
  if (main != NULL)
    pb_cb_destroy_holder(main);
  if (!gone(w)) { /* else its holder went with the lane */
    pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
    w->cb->destroy_holder(w->holder);
    pb_lanes_leave(m);
  }
  free(w->attrs);
  free(w);
}

/* The holder of the main interpreter a lane's holder w runs in now (its op
 * fell back), *rc its failure; NULL: w still runs in its lane. */
static void *now_main(lane_holder *w, int *rc) {
  void *m = NULL;
  *rc = fell_back(w) ? main_holder(w, &m) : PYOP_OK;
  return m;
}

static int disp_infer(void *h, const pyop_infer_args *a) {
  lane_holder *w = h;
  if (!w->in_lane)
    return w->cb->infer_meta(w->holder, a);
  if (gone(w))
    return gone_error("infer_meta");
  int rc;
  void *main = now_main(w, &rc);
  if (main != NULL || rc != PYOP_OK)
    return main != NULL ? pb_cb_infer_meta(main, a) : rc;
  pyop_infer_args b;
  sink_frame f = {a, 0};
  copy_args(&b, a, a->struct_size, sizeof b);
  if (PB_HAS(pyop_infer_args, &b, add_output) && b.add_output != NULL) {
    b.sink_ctx = &f;
    b.add_output = w_add_output;
  }
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  rc = w->cb->infer_meta(w->holder, &b);
  pb_lanes_leave(m);
  rc = lane_outcome(w, "infer_meta", rc, f.calls, &main);
  return main != NULL ? pb_cb_infer_meta(main, a) : rc;
}

static int disp_execute(void *h, const pyop_exec_args *a) {
  lane_holder *w = h;
  if (!w->in_lane)
    return w->cb->execute(w->holder, a);
  if (gone(w))
    return gone_error("execute");
  int rc;
  void *main = now_main(w, &rc);
  if (main != NULL || rc != PYOP_OK)
    return main != NULL ? pb_cb_execute(main, a) : rc;
  exec_frame f;
  copy_args(&f.args, a, a->struct_size, sizeof f.args);
  f.calls = 0;
  const pyop_exec_services *s = a->services;
  if (s != NULL) {
    copy_args(&f.svc, s, s->struct_size, sizeof f.svc);
    f.host = s;
    f.svc.ctx = &f;
    f.svc.alloc_output = s->alloc_output != NULL ? w_alloc_output : NULL;
    f.svc.alloc_workspace = s->alloc_workspace != NULL ? w_alloc_workspace : NULL;
    if (PB_HAS(pyop_exec_services, &f.svc, alias_output) && f.svc.alias_output != NULL)
      f.svc.alias_output = w_alias_output;
    f.args.services = &f.svc;
  }
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  rc = w->cb->execute(w->holder, &f.args);
  pb_lanes_leave(m);
  rc = lane_outcome(w, "execute", rc, f.calls, &main);
  return main != NULL ? pb_cb_execute(main, a) : rc;
}

static int disp_compile(void *h, const pyop_compile_args *a) {
  lane_holder *w = h;
  if (!w->in_lane)
    return w->cb->compile(w->holder, a);
  if (gone(w))
    return gone_error("compile");
  int rc;
  void *main = now_main(w, &rc);
  if (main != NULL || rc != PYOP_OK)
    return main != NULL ? pb_cb_compile(main, a) : rc;
  pyop_compile_args b;
  sink_frame f = {a, 0};
  copy_args(&b, a, a->struct_size, sizeof b);
  if (b.set_artifact != NULL) {
    b.sink_ctx = &f;
    b.set_artifact = w_set_artifact;
  }
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  rc = w->cb->compile(w->holder, &b);
  pb_lanes_leave(m);
  rc = lane_outcome(w, "compile", rc, f.calls, &main);
  return main != NULL ? pb_cb_compile(main, a) : rc;
}

static int disp_declare(void *h, const pyop_declare_args *a) {
  lane_holder *w = h;
  if (!w->in_lane)
    return w->cb->declare_launch_args(w->holder, a);
  if (gone(w))
    return gone_error("declare_launch_args");
  int rc;
  void *main = now_main(w, &rc);
  if (main != NULL || rc != PYOP_OK)
    return main != NULL ? pb_cb_declare(main, a) : rc;
  pyop_declare_args b;
  sink_frame f = {a, 0};
  copy_args(&b, a, a->struct_size, sizeof b);
  b.sink_ctx = &f;
  b.add_launch = a->add_launch != NULL ? w_add_launch : NULL;
  b.add_workspace = a->add_workspace != NULL ? w_add_workspace : NULL;
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  rc = w->cb->declare_launch_args(w->holder, &b);
  pb_lanes_leave(m);
  rc = lane_outcome(w, "declare_launch_args", rc, f.calls, &main);
  return main != NULL ? pb_cb_declare(main, a) : rc;
}

void pb_lanes_dispatch(pb_op *op) {
  pyop_op_callbacks *cb = &op->callbacks;
  cb->create_holder = disp_create;
  cb->create_holder_in = disp_create_in;
  cb->destroy_holder = disp_destroy;
  if (cb->infer_meta != NULL)
    cb->infer_meta = disp_infer;
  if (cb->execute != NULL)
    cb->execute = disp_execute;
  if (cb->compile != NULL)
    cb->compile = disp_compile;
  if (cb->declare_launch_args != NULL)
    cb->declare_launch_args = disp_declare;
}

#else
/* No lanes in this Python: nothing calls these. */
pb_host_mark pb_lanes_enter(PyThreadState *host) {
  (void)host;
  return (pb_host_mark){NULL, NULL, false};
}
void pb_lanes_leave(pb_host_mark old) { (void)old; }
pb_host_turn pb_lanes_to_host(void) { return (pb_host_turn){NULL, false}; }
void pb_lanes_from_host(pb_host_turn t) { (void)t; }
void pb_lanes_dispatch(pb_op *op) { (void)op; }
void pb_lanes_refused_note(pyop_str m) { (void)m; }
#endif /* PB_LANES */
