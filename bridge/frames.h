/*
 * The inline hot path of a callback: the Tensor views it hands to Python
 * (reused from a holder's caches when nobody else holds them) and the
 * frame that tracks them until the callback ends. Included only by the
 * files that make or end those views: callbacks.c (the op callbacks),
 * tensor.c and context.c (pyop._native's Tensor and call contexts).
 *
 * As everywhere in the bridge, the GIL must be held (bridge.h).
 */
#ifndef PYOP_BRIDGE_FRAMES_H
#define PYOP_BRIDGE_FRAMES_H

#include "bridge.h"

/* A Tensor a callback handed to Python, released when the callback ends. */
enum { PB_ROLE_INPUT = 0, PB_ROLE_OUTPUT = 1, PB_ROLE_WORKSPACE = 2 };
typedef struct pb_made {
  PyObject *obj;    /* owned */
  PyObject **cache; /* where to keep it for reuse, or NULL */
  int role;
  size_t index;
} pb_made;

/* One callback in progress on this thread (a stack through prev). */
typedef struct pb_frame {
  int kind;
  pb_thread *thread;           /* the thread's pb_tls */
  pb_holder *holder;
  const void *args;            /* pyop_exec_args / compile / declare args */
  /* The call's positional arguments and, after them, its attribute values
   * (argv[0..npos + holder->n_attrs)), valid while the frame runs: what the
   * context's _inputs / _attrs read. */
  PyObject *const *argv;
  size_t npos;
  PyObject *ctx;               /* Context object, made on first request */
  pb_made *made;               /* Tensors handed to Python in this call */
  size_t n_made, cap_made;
  pb_made made_small[8];
  int host_status;             /* latest failure of a host service, 0 if none */
  PyObject *host_exc;          /* the exception raised for it (owned), or NULL */
  struct pb_frame *prev;
} pb_frame;

/* A pyop.Tensor: a view of a host pyop_tensor, valid during one callback. */
typedef struct pb_tensor {
  PyObject_HEAD
  pyop_tensor t;   /* the host's description (ndim clamped to 0..8) */
  /*
   * valid: during its callback. exports: buffers of it alive. A plugin's
   * threads may take and release buffers at once, and one may ask for a
   * buffer as the callback ends: a free-threaded build makes the count
   * atomic, asks for a buffer by counting it first and checking valid after
   * (tensor_getbuffer), and ends a call by clearing valid first and reading
   * the count after (pb_frame_end): whatever the order, the view is either
   * refused or counted.
   */
  PB_SHARED(bool) valid;
  bool writable;
  PB_SHARED(Py_ssize_t) exports;
  /* Bytes this Tensor owns (t.data points into them), freed with it; NULL
   * for a view of host memory. A Tensor attribute owns a copy, so a buffer
   * of it (memoryview, numpy) keeps the bytes alive by keeping the Tensor. */
  void *owned;
  /* A ViewBase's state of its subclass (ViewBase._x: the lazily made
   * ge.runtime.Tensor fields), owned, or NULL; dropped whenever the view
   * ends its call, so a reused view starts afresh. NULL for a pyop.Tensor.
   * Any thread of a plugin may read or set it: a free-threaded build does
   * both in the view's critical section (tensor.c), and the callback's
   * thread drops it there too (pb_frame_end). */
  PB_SHARED(PyObject *) ext;
  Py_ssize_t shape[PYOP_MAX_DIMS];
  Py_ssize_t strides[PYOP_MAX_DIMS];
} pb_tensor;

/*
 * Whether a Tensor holding a (filled from a host struct, ndim clamped) shows
 * exactly what one filled from b would: same data, dtype, format, ndim
 * (and reserved), nbytes and dimensions 0..ndim. Entries of shape past ndim
 * are never read. Inline word compares instead of a memcmp call.
 */
static inline bool pb_tensor_same(const pyop_tensor *a, const pyop_tensor *b) {
  if (a->data != b->data || a->dtype != b->dtype || a->format != b->format ||
      a->ndim != b->ndim || a->reserved != b->reserved || a->nbytes != b->nbytes)
    return false;
  for (int32_t i = 0; i < a->ndim; i++) /* a->ndim is 0..8 */
    if (a->shape[i] != b->shape[i])
      return false;
  return true;
}

/*
 * Whether the object a holder's cache keeps (a Tensor or a TensorDesc) is
 * free to be refilled for the next call: the cache's reference is the only
 * one. Nothing else then reaches it (neither plugin code, nor a memoryview,
 * nor a traceback: each of those holds a reference; Tensor and TensorDesc
 * take no weak references), so changing it in place is invisible.
 *
 * A free-threaded Python splits the count: a local part only the thread
 * that made the object changes, and a shared part other threads add to
 * atomically. The object is the cache's alone when this thread made it,
 * the local part is that one reference and no other thread holds any
 * (shared part 0, not merged). No other thread can be taking one as it is
 * read: the only pointer to it is the cache, used under the holder's lock
 * (pb_holder.lock). An object another thread made is not reused (that
 * thread's call makes its own).
 */
static inline bool pb_only_cache_holds(PyObject *o) {
#ifdef Py_GIL_DISABLED
  return _Py_IsOwnedByCurrentThread(o) && o->ob_ref_local == 1 &&
         _Py_atomic_load_ssize_relaxed(&o->ob_ref_shared) == 0;
#else
  return Py_REFCNT(o) == 1;
#endif
}

/* pb_tensor_get's general case: fills (a reusable *cache or) a new Tensor
 * of type tp (NULL: pyop.Tensor; else a subclass of pb.view_type). */
PyObject *pb_tensor_make(PyTypeObject *tp, PyObject **cache, const pyop_tensor *t,
                         bool writable);
/* A read-only Tensor that owns a copy of t's bytes (t: a valid description
 * with data of at least its size): for Tensor attributes. */
PyObject *pb_tensor_own_copy(const pyop_tensor *t);

/*
 * A read-only (or writable) Tensor over t, reusing *cache when nobody else
 * holds it (pb_only_cache_holds). New reference or NULL
 * (exception). A reused Tensor last filled from an equivalent host struct
 * (pb_tensor_same) is only marked valid again: its shape/strides are t's.
 */
static inline PyObject *pb_tensor_get(PyTypeObject *tp, PyObject **cache, const pyop_tensor *t,
                                      bool writable) {
  if (cache != NULL && *cache != NULL && pb_only_cache_holds(*cache)) {
    pb_tensor *self = (pb_tensor *)*cache;
    if (self->writable == writable && self->exports == 0 && pb_tensor_same(&self->t, t)) {
      *cache = NULL;
      self->valid = true;
      return (PyObject *)self;
    }
  }
  return pb_tensor_make(tp, cache, t, writable);
}

/*
 * Drops t's ext (a view's state for its call). In a free-threaded build in
 * the view's critical section, where ViewBase._x is read and set: after
 * t->valid was cleared, a set either came before (and is dropped here) or
 * comes after and is refused (view_x_set, tensor.c).
 */
static inline void pb_tensor_drop_ext(pb_tensor *t) {
#ifdef Py_GIL_DISABLED
  PyObject *x;
  PB_CS_BEGIN((PyObject *)t);
  x = t->ext;
  t->ext = NULL;
  PB_CS_END((PyObject *)t);
  Py_XDECREF(x);
#else
  Py_CLEAR(t->ext);
#endif
}

/* pb_frame_track when made[] is full: grows it. */
int pb_frame_track_grow(pb_frame *f, PyObject *t, PyObject **cache, int role, size_t index);

/* Records t (reference stolen) in f; -1 with MemoryError (t dropped). */
static inline int pb_frame_track(pb_frame *f, PyObject *t, PyObject **cache, int role,
                                 size_t index) {
  if (f->n_made == f->cap_made)
    return pb_frame_track_grow(f, t, cache, role, index);
  f->made[f->n_made++] = (pb_made){t, cache, role, index};
  return 0;
}

/* Invalidates and drops f's context (f->ctx != NULL). */
void pb_frame_ctx_end(pb_frame *f);
/* Records in f's holder that m's buffer outlived the call (see
 * pb_holder.escaped); returns the message for it (malloc'd, may be NULL). */
char *pb_frame_escaped(pb_frame *f, const pb_made *m);
/*
 * gc.collect() (a full collection, also when a plugin disabled the
 * collector), keeping a pending exception: a view held only by a reference
 * cycle (a recursive inner function closing over it, sys.exc_info() kept
 * in a local) is released then. Runs finalizers: any code. Cold.
 */
void pb_collect_garbage(void);
/* pb_frame_end from made[from], the first Tensor still exported: collects
 * garbage, then records each Tensor still exported. Cold. */
bool pb_frame_end_exported(pb_frame *f, size_t from, char **why);

/* Starts a frame of kind on thread th (&pb_tls; made = made_small). */
static inline void pb_frame_begin(pb_frame *f, pb_thread *th, int kind, pb_holder *h,
                                  const void *args) {
  f->kind = kind;
  f->thread = th;
  f->holder = h;
  f->args = args;
  f->argv = NULL;
  f->npos = 0;
  f->ctx = NULL;
  f->made = f->made_small;
  f->n_made = 0;
  f->cap_made = sizeof f->made_small / sizeof f->made_small[0];
  f->host_status = 0;
  f->host_exc = NULL;
  f->prev = th->frame;
  th->frame = f;
}

/*
 * Pops the frame, invalidates its context (if one was made) and every
 * tensor it handed out; each Tensor nobody else holds goes back to its
 * cache (which takes the reference) or is dropped. Returns false when a
 * buffer export outlived the call (the holder then refuses calls until it
 * is released); *why (malloc'd) then says which tensor. An export still
 * there when the call returns is judged only after a garbage collection
 * (pb_frame_end_exported): a view held by nothing but a reference cycle is
 * not an escape.
 */
static inline bool pb_frame_end(pb_frame *f, char **why) {
  f->thread->frame = f->prev;
  if (f->ctx != NULL)
    pb_frame_ctx_end(f);
  *why = NULL;
  for (size_t i = 0; i < f->n_made; i++) {
    pb_made *m = &f->made[i];
    pb_tensor *t = (pb_tensor *)m->obj;
    t->valid = false; /* before the count is read: see pb_tensor.exports */
    if (__builtin_expect(t->exports != 0, 0))
      return pb_frame_end_exported(f, i, why);
#ifdef Py_GIL_DISABLED
    /* Another thread may be setting a view's _x: see pb_tensor_drop_ext. */
    if (Py_TYPE(t) != pb.tensor_type)
#else
    if (__builtin_expect(t->ext != NULL, 0))
#endif
      pb_tensor_drop_ext(t); /* a view's state: also breaks its cycle through the view */
    if (m->cache != NULL && *m->cache == NULL && pb_only_cache_holds(m->obj)) {
      *m->cache = m->obj;
      continue;
    }
    Py_DECREF(m->obj);
  }
  if (f->made != f->made_small)
    free(f->made);
  f->made = NULL;
  f->n_made = 0;
  return true;
}
/* DataType / Format member for a value; borrowed, NULL if unknown. */
static inline PyObject *pb_dtype_obj(int32_t dtype) {
  return dtype >= 0 && dtype < PYOP_DTYPE_COUNT ? pb.dtypes[dtype] : NULL;
}
static inline PyObject *pb_format_obj(int32_t format) {
  return format >= 0 && format < PYOP_FORMAT_COUNT ? pb.formats[format] : NULL;
}

#endif /* PYOP_BRIDGE_FRAMES_H */
