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

/* Whether struct s (its struct_size) has member m of type T. */
#define HAS(T, s, m) ((s)->struct_size >= offsetof(T, m) + sizeof((s)->m))

/* ------------------------------------------------------ the call sinks */

/* Each call into a lane gets a copy of libpyop's arguments whose sinks are
 * the wrappers below; their sink_ctx is the original arguments. */

static int w_add_output(void *ctx, size_t index, const pyop_tensor *desc) {
  const pyop_infer_args *a = ctx;
  HOST_CALL(a->add_output(a->sink_ctx, index, desc));
}

typedef struct exec_frame {
  pyop_exec_args args;
  pyop_exec_services svc;
  const pyop_exec_services *host;
} exec_frame;

static int w_alloc_output(void *ctx, size_t index, pyop_tensor *t) {
  const pyop_exec_services *s = ((const exec_frame *)ctx)->host;
  HOST_CALL(s->alloc_output(s->ctx, index, t));
}

static int w_alloc_workspace(void *ctx, uint64_t nbytes, void **out) {
  const pyop_exec_services *s = ((const exec_frame *)ctx)->host;
  HOST_CALL(s->alloc_workspace(s->ctx, nbytes, out));
}

static int w_alias_output(void *ctx, size_t index, size_t input, pyop_tensor *t) {
  const pyop_exec_services *s = ((const exec_frame *)ctx)->host;
  HOST_CALL(s->alias_output(s->ctx, index, input, t));
}

static int w_set_artifact(void *ctx, const void *data, size_t len) {
  const pyop_compile_args *a = ctx;
  HOST_CALL(a->set_artifact(a->sink_ctx, data, len));
}

static int w_add_launch(void *ctx, const pyop_launch_view *launch) {
  const pyop_declare_args *a = ctx;
  HOST_CALL(a->add_launch(a->sink_ctx, launch));
}

static int w_add_workspace(void *ctx, uint64_t nbytes) {
  const pyop_declare_args *a = ctx;
  HOST_CALL(a->add_workspace(a->sink_ctx, nbytes));
}

/* Copies the first struct_size bytes of args *a (at most size) into *b. */
static void copy_args(void *b, const void *a, size_t a_size, size_t size) {
  memset(b, 0, size);
  memcpy(b, a, a_size < size ? a_size : size);
  *(size_t *)b = a_size < size ? a_size : size;
}

/* ----------------------------------------------------------- dispatch */

/* A holder of an op that runs in lanes: whose callbacks serve it, and
 * whether they are a lane's (or the main interpreter's: lane 0). */
typedef struct lane_holder {
  const pyop_op_callbacks *cb;
  void *holder;
  bool in_lane;
  unsigned epoch; /* of the lanes it was made in */
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

/* A holder made by cb (a lane's when in_lane) from ctx and the attributes:
 * PYOP_OK and *out, or the callback's status. */
static int hold(const pyop_op_callbacks *cb, bool in_lane, void *ctx,
                const pyop_attr_view *attrs, size_t n, void **out) {
  lane_holder *w = malloc(sizeof *w);
  if (w == NULL)
    return pb_error(PYOP_ENOMEM, "create_holder: out of memory");
  *w = (lane_holder){cb, NULL, in_lane, pb_lanes_epoch()};
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  int rc = cb->create_holder(ctx, attrs, n, &w->holder);
  pb_lanes_leave(m);
  if (rc != PYOP_OK) {
    free(w);
    return rc;
  }
  *out = w;
  return PYOP_OK;
}

static int disp_create(void *ctx, const pyop_attr_view *attrs, size_t n, void **out) {
  return hold(&main_callbacks, false, ctx, attrs, n, out);
}

static int disp_create_in(void *ctx, const pyop_attr_view *attrs, size_t n, uint32_t lane,
                          void **out) {
  pb_op *op = ctx;
  if (lane == 0)
    return disp_create(ctx, attrs, n, out);
  if (lane > op->n_lanes)
    return pb_error(PYOP_EINVAL, "create_holder of op '%s': lane %u does not exist (%u lanes)",
                    op->op_type, (unsigned)lane, (unsigned)op->n_lanes);
  if (op->lanes_epoch != pb_lanes_epoch())
    return gone_error("create_holder");
  return hold(op->lane_cb[lane - 1], true, op->lane_ctx[lane - 1], attrs, n, out);
}

static void disp_destroy(void *h) {
  lane_holder *w = h;
  if (gone(w)) {
    free(w); /* its holder went with the lane */
    return;
  }
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  w->cb->destroy_holder(w->holder);
  pb_lanes_leave(m);
  free(w);
}

static int disp_infer(void *h, const pyop_infer_args *a) {
  lane_holder *w = h;
  if (!w->in_lane)
    return w->cb->infer_meta(w->holder, a);
  if (gone(w))
    return gone_error("infer_meta");
  pyop_infer_args b;
  copy_args(&b, a, a->struct_size, sizeof b);
  if (HAS(pyop_infer_args, &b, add_output) && b.add_output != NULL) {
    b.sink_ctx = (void *)a;
    b.add_output = w_add_output;
  }
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  int rc = w->cb->infer_meta(w->holder, &b);
  pb_lanes_leave(m);
  return rc;
}

static int disp_execute(void *h, const pyop_exec_args *a) {
  lane_holder *w = h;
  if (gone(w))
    return gone_error("execute");
  if (!w->in_lane || a->services == NULL)
    return w->cb->execute(w->holder, a);
  exec_frame f;
  copy_args(&f.args, a, a->struct_size, sizeof f.args);
  const pyop_exec_services *s = a->services;
  copy_args(&f.svc, s, s->struct_size, sizeof f.svc);
  f.host = s;
  f.svc.ctx = &f;
  f.svc.alloc_output = s->alloc_output != NULL ? w_alloc_output : NULL;
  f.svc.alloc_workspace = s->alloc_workspace != NULL ? w_alloc_workspace : NULL;
  if (HAS(pyop_exec_services, &f.svc, alias_output) && f.svc.alias_output != NULL)
    f.svc.alias_output = w_alias_output;
  f.args.services = &f.svc;
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  int rc = w->cb->execute(w->holder, &f.args);
  pb_lanes_leave(m);
  return rc;
}

static int disp_compile(void *h, const pyop_compile_args *a) {
  lane_holder *w = h;
  if (!w->in_lane)
    return w->cb->compile(w->holder, a);
  if (gone(w))
    return gone_error("compile");
  pyop_compile_args b;
  copy_args(&b, a, a->struct_size, sizeof b);
  if (b.set_artifact != NULL) {
    b.sink_ctx = (void *)a;
    b.set_artifact = w_set_artifact;
  }
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  int rc = w->cb->compile(w->holder, &b);
  pb_lanes_leave(m);
  return rc;
}

static int disp_declare(void *h, const pyop_declare_args *a) {
  lane_holder *w = h;
  if (!w->in_lane)
    return w->cb->declare_launch_args(w->holder, a);
  if (gone(w))
    return gone_error("declare_launch_args");
  pyop_declare_args b;
  copy_args(&b, a, a->struct_size, sizeof b);
  b.sink_ctx = (void *)a;
  b.add_launch = a->add_launch != NULL ? w_add_launch : NULL;
  b.add_workspace = a->add_workspace != NULL ? w_add_workspace : NULL;
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  int rc = w->cb->declare_launch_args(w->holder, &b);
  pb_lanes_leave(m);
  return rc;
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
#endif /* PB_LANES */
