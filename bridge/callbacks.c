/*
 * The op callbacks libpyop calls from any host thread: create/destroy a
 * holder, infer_meta, execute, compile, declare_launch_args.
 *
 * Hot path (execute): take the GIL through the thread's kept thread state,
 * reuse the holder's Tensor objects when nobody kept them (unchanged ones
 * are only marked valid again), fill a stack vector [self, inputs...,
 * attribute values...] and vectorcall the method's function resolved at
 * create_holder with the prebuilt kwnames tuple. No dict, no attribute
 * lookup by name, no argument parsing, no context object unless the op
 * asks for it (pyop.get_execute_ctx), one TLS lookup per call. A GE kernel
 * takes the same path: its class names the type of its input views
 * (__pyop_input_view__, a ViewBase subclass the views are made of) and its
 * execute attribute is the kernel itself.
 *
 * The holders these callbacks run on are made and destroyed in holders.c.
 */
#include "frames.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PB_STACK_ARGS 32

/* --------------------------------------------------------- arguments */

static int slot_kind(const pb_op *op, size_t i) {
  return i < op->n_kinds ? op->input_kinds[i] : -1;
}

_Static_assert(sizeof(((pb_desc_slot *)0)->dims) == sizeof(((pyop_tensor *)0)->shape),
               "pb_desc_slot.dims mirrors pyop_tensor.shape");

/* Whether the slot's shape tuple holds exactly t's dimensions. */
static bool slot_shape_is(const pb_desc_slot *slot, const pyop_tensor *t) {
  if (slot->shape == NULL || slot->ndim != t->ndim)
    return false;
  for (int32_t i = 0; i < t->ndim; i++)
    if (slot->dims[i] != t->shape[i])
      return false;
  return true;
}

/*
 * The shape tuple of t: the slot's when its dimensions are the same, else a
 * new tuple, which then becomes the slot's (slot may be NULL). New
 * reference or NULL.
 */
static PyObject *shape_tuple(const pyop_tensor *t, pb_desc_slot *slot) {
  size_t bytes = (size_t)t->ndim * sizeof t->shape[0];
  if (slot != NULL && slot_shape_is(slot, t))
    return Py_NewRef(slot->shape);
  PyObject *shape = PyTuple_New(t->ndim);
  if (shape == NULL)
    return NULL;
  for (int32_t i = 0; i < t->ndim; i++) {
    PyObject *d = PyLong_FromLongLong(t->shape[i]);
    if (d == NULL) {
      Py_DECREF(shape);
      return NULL;
    }
    PyTuple_SET_ITEM(shape, i, d);
  }
  if (slot != NULL) {
    PyObject *old = slot->shape;
    slot->shape = Py_NewRef(shape);
    slot->ndim = t->ndim;
    memset(slot->dims, 0, sizeof slot->dims); /* desc_to_tensor copies all */
    memcpy(slot->dims, t->shape, bytes);
    Py_XDECREF(old);
  }
  return shape;
}

/*
 * A TensorDesc for a description. New reference or NULL.
 *
 * Its fields (pb_desc) are stored directly: what TensorDesc.__init__ would
 * store for the fields libpyop already checked (non-negative dims, known
 * dtype and format), without its Python-level validation on the hot path.
 * With slot (one input slot of the holder) the slot's TensorDesc is reused
 * when nobody else holds it any more (pb_only_cache_holds; TensorDesc has
 * no __weakref__, pb_package_ensure checks). Its fields are then rewritten
 * only where they differ from t. A TensorDesc a plugin kept is never
 * touched again: the slot takes a new one. A plugin may have assigned the
 * fields of a reused one: they are compared by identity (the slot's shape
 * tuple, the DataType and Format members), so any such change is undone.
 */
static PyObject *make_desc(const pyop_tensor *t, pb_desc_slot *slot) {
  if (t->ndim < 0 || t->ndim > PYOP_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "tensor description with %d dimensions", (int)t->ndim);
    return NULL;
  }
  PyObject *dt = pb_dtype_obj(t->dtype), *fm = pb_format_obj(t->format);
  if (dt == NULL || fm == NULL) {
    PyErr_Format(PyExc_ValueError, "tensor description with unknown dtype %d or format %d",
                 (int)t->dtype, (int)t->format);
    return NULL;
  }
#ifdef Py_GIL_DISABLED
  slot = NULL; /* calls of one holder may run at once: nothing is shared or reused */
#endif
  PyTypeObject *tp = (PyTypeObject *)pb.tensor_desc; /* layout: pb_package_ensure */
  pb_desc *r = slot != NULL ? (pb_desc *)slot->desc : NULL;
  /* The common case: the slot's TensorDesc, free and already right. */
  if (r != NULL && pb_only_cache_holds((PyObject *)r) && r->dtype == dt && r->format == fm &&
      r->shape == slot->shape && slot_shape_is(slot, t))
    return Py_NewRef((PyObject *)r);
  if (r != NULL && pb_only_cache_holds((PyObject *)r))
    slot->desc = NULL; /* taken out of the slot: ours while we fill it */
  else
    r = NULL;
  PyObject *shape = shape_tuple(t, slot);
  if (shape == NULL) {
    Py_XDECREF(r);
    return NULL;
  }
  if (r == NULL && (r = (pb_desc *)tp->tp_alloc(tp, 0)) == NULL) {
    Py_DECREF(shape);
    return NULL;
  }
  /* Old values are dropped only once r and the slot are consistent: a
   * destructor may run arbitrary code. */
  PyObject *old[4] = {NULL, NULL, NULL, NULL};
  PyObject **field[3] = {&r->shape, &r->dtype, &r->format};
  PyObject *want[3] = {shape, dt, fm};
  for (int k = 0; k < 3; k++) {
    if (*field[k] != want[k]) {
      old[k] = *field[k];
      *field[k] = Py_NewRef(want[k]);
    }
  }
  Py_DECREF(shape);
  if (slot != NULL && slot->desc != (PyObject *)r) {
    old[3] = slot->desc; /* one a plugin kept (or NULL) */
    slot->desc = Py_NewRef((PyObject *)r);
  }
  for (int k = 0; k < 4; k++)
    Py_XDECREF(old[k]);
  return (PyObject *)r;
}

/* One argument object for a tensor: a Tensor view (tracked in f) or a
 * TensorDesc (as_desc). New reference or NULL. */
static PyObject *one_tensor(pb_frame *f, const pyop_tensor *t, PyObject **cache,
                            pb_desc_slot *slot, size_t index, bool as_desc, bool writable) {
  if (as_desc)
    return make_desc(t, slot);
  PyObject *o = pb_tensor_get(f->holder->in_type, cache, t, writable);
  if (o == NULL)
    return NULL;
  if (pb_frame_track(f, o, cache, PB_ROLE_INPUT, index) < 0)
    return NULL;
  return Py_NewRef(o);
}

/*
 * Positional arguments for the input slots into argv[0..n): a tensor for a
 * required slot, the tensor or None for an optional one, a list for a
 * dynamic one (or when the kind is unknown and count != 1).
 */
static int build_inputs(pb_frame *f, const pyop_tensor_list *inputs, size_t n,
                        PyObject **argv, size_t *built, bool as_desc,
                        const uint32_t *flags) {
  pb_holder *h = f->holder;
  size_t i = 0, flat = 0;
  /*
   * The common case of execute, as one tight loop: a slot of one tensor
   * whose cached Tensor nobody holds and already shows that tensor (see
   * pb_tensor_get): it is only made valid again and tracked. The first slot
   * that is anything else continues in the general loop below (flat == i:
   * every slot before it had one tensor).
   */
  if (!as_desc && n <= h->n_in_cache && n <= h->op->n_kinds && n <= f->cap_made - f->n_made) {
    const int32_t *kinds = h->op->input_kinds;
    pb_made *made = f->made + f->n_made;
    for (; i < n; i++) {
      const pyop_tensor_list *s = &inputs[i];
      pb_tensor *o = (pb_tensor *)h->in_cache[i];
      bool w = flags != NULL && (flags[i] & PYOP_INPUT_MUTATED);
      if (s->count != 1 || s->items == NULL || kinds[i] == PYOP_IO_DYNAMIC || o == NULL ||
          !pb_only_cache_holds((PyObject *)o) || o->writable != w || o->exports != 0 ||
          !pb_tensor_same(&o->t, &s->items[0]))
        break;
      h->in_cache[i] = NULL;
      o->valid = true;
      made[i] = (pb_made){(PyObject *)o, &h->in_cache[i], PB_ROLE_INPUT, i};
      Py_INCREF(o); /* the frame keeps the cache's reference, argv gets one */
      argv[i] = (PyObject *)o;
    }
    f->n_made += i;
    *built += i;
    flat = i;
  }
  for (; i < n; i++) {
    const pyop_tensor_list *s = &inputs[i];
    if (s->count > 0 && s->items == NULL) {
      PyErr_Format(PyExc_ValueError, "input slot %zu has %zu %s and no items", i, s->count,
                   PB_PLURAL(s->count, "tensor", "tensors"));
      return -1;
    }
    int kind = slot_kind(h->op, i);
    PyObject **cache = i < h->n_in_cache ? &h->in_cache[i] : NULL;
    pb_desc_slot *slot = i < h->n_desc_cache ? &h->desc_cache[i] : NULL;
    bool w = flags != NULL && (flags[i] & PYOP_INPUT_MUTATED);
    if (kind != PYOP_IO_DYNAMIC && s->count == 1) {
      argv[i] = one_tensor(f, &s->items[0], cache, slot, flat, as_desc, w);
    } else if (kind != PYOP_IO_DYNAMIC && s->count == 0) {
      argv[i] = Py_NewRef(Py_None);
    } else {
      PyObject *l = PyList_New((Py_ssize_t)s->count);
      if (l != NULL) {
        for (size_t j = 0; j < s->count; j++) {
          PyObject *e = one_tensor(f, &s->items[j], NULL, NULL, flat + j, as_desc, w);
          if (e == NULL) {
            Py_CLEAR(l);
            break;
          }
          PyList_SET_ITEM(l, (Py_ssize_t)j, e);
        }
      }
      argv[i] = l;
    }
    flat += s->count;
    if (argv[i] == NULL)
      return -1;
    (*built)++;
  }
  return 0;
}

static int build_output_descs(const pyop_tensor *outs, size_t n, PyObject **argv,
                              size_t *built) {
  if (n > 0 && outs == NULL) {
    PyErr_SetString(PyExc_ValueError, "output descriptions missing");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    argv[i] = make_desc(&outs[i], NULL);
    if (argv[i] == NULL)
      return -1;
    (*built)++;
  }
  return 0;
}

/* ------------------------------------------------------------ the call */

/* A new list of a kept list attribute (tuple) for one call: of new lists
 * when nested. What the call does to it reaches nothing else. */
static PyObject *call_list(PyObject *tuple, bool nested) {
  Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  PyObject *l = PyList_New(n);
  if (l == NULL)
    return NULL;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *e = PyTuple_GET_ITEM(tuple, i);
    e = nested ? PySequence_List(e) : Py_NewRef(e);
    if (e == NULL) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, i, e);
  }
  return l;
}

typedef struct pb_call {
  pb_frame frame;
  /* [0] spare slot for PY_VECTORCALL_ARGUMENTS_OFFSET, [1] self (when the
   * target is called through its function), [2..] the arguments */
  PyObject *stack[2 + PB_STACK_ARGS];
  PyObject **argv;
  size_t npos;
  size_t built; /* argv[2..2+built) hold references (call_end drops them) */
} pb_call;

/* Whether a Tensor of h->escaped is still exported. */
static bool escaped_alive(const pb_holder *h) {
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(h->escaped); i++)
    if (((pb_tensor *)PyList_GET_ITEM(h->escaped, i))->exports != 0)
      return true;
  return false;
}

/*
 * PYOP_OK when no buffer that escaped an earlier call of h is still exported
 * (the released ones are forgotten), else refuses this call with
 * PYOP_ESTATE: the instance's code could write through the kept view into
 * memory the host has freed. Only called when h has escapes.
 */
static int holder_check_escapes(pb_holder *h, int kind) {
  if (!h->escape_untracked) {
    /* The plugin may have dropped its last reference to a cycle that holds
     * the view: only a collection frees it, and a refused call runs none. */
    bool alive = escaped_alive(h);
    if (alive) {
      pb_collect_garbage();
      alive = h->escaped != NULL && escaped_alive(h);
    }
    if (!alive) {
      Py_CLEAR(h->escaped); /* Tensors: no Python code runs when they go */
      free(h->escaped_why);
      h->escaped_why = NULL;
      return PYOP_OK;
    }
  }
  pb_op *op = h->op;
  return pb_error(PYOP_ESTATE,
                  "%s of op '%s' (%s %s) refused: %s and is still alive; every call of this "
                  "op instance is refused until it is released (del the array or the "
                  "memoryview, or call its release())",
                  pb_kind_names[kind], op->op_type,
                  op->is_impl ? "implementation at" : "defined at", op->where,
                  h->escaped_why != NULL ? h->escaped_why : "a tensor buffer outlived a call");
}

/* Prepares argv with room for npos positional args plus the attributes. */
static int call_begin(pb_call *c, pb_thread *th, pb_holder *h, int kind, const void *args,
                      size_t npos) {
  size_t total = 2 + npos + h->n_attrs;
  c->argv = total <= 2 + PB_STACK_ARGS ? c->stack : calloc(total, sizeof *c->argv);
  if (c->argv == NULL)
    return pb_error(PYOP_ENOMEM, "bridge: out of memory for the arguments of op '%s'",
                    h->op->op_type);
  c->npos = npos;
  c->built = 0;
  pb_frame_begin(&c->frame, th, kind, h, args);
  c->frame.argv = c->argv + 2;
  c->frame.npos = npos;
  return PYOP_OK;
}

/* Vectorcalls h's target of kind on pos[0..npos) and the attribute values
 * after them (pos[-1] is free for the offset convention). */
static inline PyObject *call_target(pb_holder *h, int kind, PyObject **pos, size_t npos) {
  if (h->func[kind] != NULL) {
    pos[-1] = h->fself[kind]; /* borrowed */
    return PyObject_Vectorcall(h->func[kind], pos - 1,
                               (npos + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, h->kwnames);
  }
  return PyObject_Vectorcall(h->target[kind], pos, npos | PY_VECTORCALL_ARGUMENTS_OFFSET,
                             h->kwnames);
}

/* call_invoke for a holder with list attributes: a new list for each, made
 * for this call and dropped after it. */
static __attribute__((noinline)) PyObject *call_invoke_lists(pb_call *c, int kind) {
  pb_holder *h = c->frame.holder;
  PyObject **pos = c->argv + 2, **attrs = pos + c->npos;
  size_t made = 0;
  for (; made < h->n_list_attrs; made++) {
    const pb_list_attr *la = &h->list_attrs[made];
    attrs[la->index] = call_list(h->attr_values[la->index], la->nested);
    if (attrs[la->index] == NULL)
      break;
  }
  PyObject *res = made == h->n_list_attrs ? call_target(h, kind, pos, c->npos) : NULL;
  /* The callee leaves the argument array as it found it (args[-1] aside). */
  for (size_t j = 0; j < made; j++)
    Py_DECREF(attrs[h->list_attrs[j].index]);
  return res;
}

/*
 * Calls the target with the attribute values after the positional args:
 * the holder's own objects (immutable), except for list attributes, which
 * each call gets as new lists (call_invoke_lists). Returns the result (new
 * ref) or NULL with an exception.
 */
static PyObject *call_invoke(pb_call *c, int kind) {
  pb_holder *h = c->frame.holder;
  PyObject **pos = c->argv + 2;
  for (size_t i = 0; i < h->n_attrs; i++)
    pos[c->npos + i] = h->attr_values[i]; /* borrowed: the holder owns them */
  if (h->n_list_attrs != 0)
    return call_invoke_lists(c, kind);
  return call_target(h, kind, pos, c->npos);
}

/*
 * The status of a call of f that ends with the pending exception: the host
 * service's failure when that exception is the one raised for it (the op
 * let it through), else PYOP_EPYTHON: the op caught the refusal and failed
 * on its own, what finally failed is the op. Drops f->host_exc. Cold.
 */
static __attribute__((noinline, cold)) int frame_failure_status(pb_frame *f) {
  int status = PYOP_EPYTHON;
  if (f->host_exc != NULL) {
    PyObject *exc = pb_exc_fetch();
    if (exc == f->host_exc)
      status = f->host_status;
    pb_exc_restore(exc);
  }
  Py_CLEAR(f->host_exc);
  return status;
}

/*
 * Ends the call: drops the positional arguments, reports a pending Python
 * error (rc is then the error status) and releases every tensor; a view
 * that outlived the call fails it. Returns the final status.
 */
static int call_end(pb_call *c, int kind, int rc) {
  pb_holder *h = c->frame.holder;
  pb_op *op = h->op;
  if (PyErr_Occurred()) {
    int status = frame_failure_status(&c->frame);
    rc = pb_error_python(status, "%s of op '%s' (%s %s) failed", pb_kind_names[kind], op->op_type,
                         op->is_impl ? "implementation at" : "defined at", op->where);
  } else if (__builtin_expect(c->frame.host_exc != NULL, 0)) {
    Py_CLEAR(c->frame.host_exc); /* the op recovered from the refusal */
  }
  for (size_t i = 0; i < c->built; i++)
    Py_DECREF(c->argv[2 + i]);
  if (c->argv != c->stack)
    free(c->argv);
  char *why = NULL;
  if (!pb_frame_end(&c->frame, &why) && rc == PYOP_OK)
    rc = pb_error(PYOP_EPYTHON, "%s of op '%s' (%s): %s", pb_kind_names[kind], op->op_type,
                  op->where, why != NULL ? why : "a tensor view outlived the callback");
  free(why);
  if (rc == PYOP_EINTR)
    pb_interrupt_caller();
  else if (rc == PYOP_OK && pb_lanes_image())
    rc = pb_lane_imports_done(rc); /* the plugin caught an import the lane refused? */
  return rc;
}

/*
 * What holder_lock took: the call lock (NULL: none taken) and the one this
 * thread held before it (given back for the time of this call, taken again
 * by holder_unlock), or NULL.
 */
#ifdef Py_GIL_DISABLED
/* Takes l for thread th (a call of kind of op), the wait marked for the
 * GIL-wait watch, which names one that lasts (gil_watch.c). */
static inline void call_lock_take(pb_thread *th, pb_call_lock *l, int kind, const pb_op *op) {
  pb_wait_begin(th, PB_WAIT_CALL_LOCK + kind, op);
  PB_MUTEX_LOCK(&l->mutex);
  pb_wait_end(th);
  th->held = l;
}
#endif

typedef struct pb_locked {
#ifdef Py_GIL_DISABLED
  pb_call_lock *lock, *outer;
#else
  char none;
#endif
} pb_locked;

/*
 * Takes h's call lock for a call on thread th (a free-threaded Python: see
 * pb_holder.lock). Called attached, after pb_enter_on: a wait for it
 * detaches, as a wait for the GIL would. Nothing in a build with a GIL.
 *
 * A thread holds at most one call lock, its innermost callback's, and
 * never waits for one while it holds another: a callback that calls
 * another instance (a host service such as alloc_output executing another
 * op, plugin code calling libpyop) gives its own lock back until that call
 * returns. Two threads that nest into each other's instances therefore
 * never wait for each other forever; the outer instance may see a call from
 * another thread while it waits for the inner one (docs/host-guide.md,
 * "Free-threaded Python"). A call of the lock this thread already holds
 * (the same instance, or one sharing its object) takes nothing: it does
 * not wait for itself, as under the GIL.
 */
static inline pb_locked holder_lock(pb_holder *h, pb_thread *th, int kind) {
#ifdef Py_GIL_DISABLED
  pb_call_lock *l = h->lock, *outer = th->held;
  assert(l != NULL);
  if (outer == l)
    return (pb_locked){NULL, NULL};
  if (outer != NULL) {
    th->held = NULL;
    PB_MUTEX_UNLOCK(&outer->mutex);
  }
  call_lock_take(th, l, kind, h->op);
  return (pb_locked){l, outer};
#else
  (void)h;
  (void)th;
  (void)kind;
  return (pb_locked){0};
#endif
}

/* Gives back what holder_lock took, then takes the outer call's lock
 * again (holding none while it waits for it). */
static inline void holder_unlock(pb_thread *th, pb_locked k) {
#ifdef Py_GIL_DISABLED
  if (k.lock == NULL)
    return;
  assert(th->held == k.lock);
  PB_MUTEX_UNLOCK(&k.lock->mutex);
  th->held = NULL;
  if (k.outer != NULL) {
    const pb_frame *f = th->frame; /* the outer call's */
    call_lock_take(th, k.outer, f != NULL ? f->kind : -1, f != NULL ? f->holder->op : NULL);
  }
#else
  (void)th;
  (void)k;
#endif
}

/* A call refused because the op's interpreter is gone (cold path). */
static __attribute__((noinline, cold)) int no_python(const pb_holder *h, int kind) {
  char what[160];
  snprintf(what, sizeof what, "%s of op '%s'", pb_kind_names[kind], h->op->op_type);
  return pb_error_no_python(what);
}

static bool args_ok(const void *args, size_t size, size_t need) {
  return args != NULL && size >= need;
}

/* The arguments of infer_meta and execute as a loader of ABI 1.0 sends
 * them: the members added since (add_output, input_flags) are read only
 * where struct_size holds them (PB_HAS), as the bridge negotiated 1.0 with
 * such a loader (compile's and declare_launch_args' have not grown). */
#define PB_INFER_ARGS_1_0 PYOP_MEMBER_END(pyop_infer_args, n_outputs)
#define PB_EXEC_ARGS_1_0 PYOP_MEMBER_END(pyop_exec_args, stream)

/* The value of a DataType/Format member (identity with the package's
 * members), else of any int in [0, n); 0, or -1 with an exception naming
 * what. */
static int enum_value(PyObject *o, PyObject *const *members, long n, size_t index,
                      const char *what, int32_t *out) {
  for (long i = 0; i < n; i++)
    if (members[i] == o) {
      *out = (int32_t)i;
      return 0;
    }
  int64_t v = 0;
  if (pb_int_in(o, 0, n - 1, &v, "infer_meta output %zu %s", index, what) < 0)
    return -1;
  *out = (int32_t)v;
  return 0;
}

/*
 * Reads .shape/.dtype/.format of a TensorDesc-like result into t. A shape
 * tuple that is one of h's input slots' (a result sharing an input's
 * shape) is known without reading its items.
 */
static int desc_to_tensor(const pb_holder *h, PyObject *o, pyop_tensor *t, size_t index) {
  memset(t, 0, sizeof *t);
  PyObject *shape = NULL, *dtype = NULL, *format = NULL;
#ifndef Py_GIL_DISABLED
  if (Py_IS_TYPE(o, (PyTypeObject *)pb.tensor_desc)) {
    /* What getattr would return; an unset field (NULL) is reported as
     * getattr's AttributeError would be. (Free-threaded: another thread may
     * be assigning them, so the member descriptors read them.) */
    const pb_desc *d = (const pb_desc *)o;
    shape = Py_XNewRef(d->shape);
    dtype = Py_XNewRef(d->dtype);
    format = Py_XNewRef(d->format);
  } else
#endif
  {
    shape = PyObject_GetAttr(o, pb_desc_names.shape);
    dtype = shape ? PyObject_GetAttr(o, pb_desc_names.dtype) : NULL;
    format = dtype ? PyObject_GetAttr(o, pb_desc_names.format) : NULL;
  }
  int rc = -1;
  if (shape == NULL || dtype == NULL || format == NULL) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "infer_meta output %zu: expected a TensorDesc, got %s", index,
                 Py_TYPE(o)->tp_name);
    goto out;
  }
  for (size_t i = 0; i < h->n_desc_cache; i++) {
    const pb_desc_slot *slot = &h->desc_cache[i];
    if (slot->shape == shape) {
      t->ndim = slot->ndim;
      memcpy(t->shape, slot->dims, sizeof t->shape); /* zero past ndim */
      goto dims_done;
    }
  }
  /* A tuple of the dimensions (a list is copied: converting an item may run
   * code that changes it). */
  PyObject *seq;
  if (PyTuple_Check(shape)) {
    seq = Py_NewRef(shape);
  } else {
    PyObject *fast = PySequence_Fast(shape, "shape must be a sequence");
    if (fast == NULL)
      goto out;
    seq = PyList_Check(fast) ? PyList_AsTuple(fast) : Py_NewRef(fast);
    Py_DECREF(fast);
    if (seq == NULL)
      goto out;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  if (n > PYOP_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "infer_meta output %zu: %zd dimensions (at most %d)", index,
                 n, PYOP_MAX_DIMS);
    Py_DECREF(seq);
    goto out;
  }
  t->ndim = (int32_t)n;
  for (Py_ssize_t i = 0; i < n; i++) {
    /* A negative one is libpyop's to name; beyond int64_t is refused here. */
    if (pb_int_in(PyTuple_GET_ITEM(seq, i), INT64_MIN, INT64_MAX, &t->shape[i],
                  "infer_meta output %zu dimension %zd", index, i) < 0) {
      Py_DECREF(seq);
      goto out;
    }
  }
  Py_DECREF(seq);
dims_done:;
  if (enum_value(dtype, pb.dtypes, PYOP_DTYPE_COUNT, index, "dtype", &t->dtype) < 0 ||
      enum_value(format, pb.formats, PYOP_FORMAT_COUNT, index, "format", &t->format) < 0)
    goto out;
  rc = 0;
out:
  Py_XDECREF(shape);
  Py_XDECREF(dtype);
  Py_XDECREF(format);
  return rc;
}

/* A list/tuple as a tuple (a list is copied: reading an item may run code
 * that changes it); NULL with TypeError naming what when it is neither. */
static PyObject *as_tuple(PyObject *o, const char *what, size_t index) {
  if (PyTuple_Check(o))
    return Py_NewRef(o);
  if (PyList_Check(o))
    return PyList_AsTuple(o);
  PyErr_Format(PyExc_TypeError, "infer_meta output %zu: %s, got %s", index, what,
               Py_TYPE(o)->tp_name);
  return NULL;
}

/* The tensors of dynamic output index (a list of TensorDesc) through
 * add_output. */
static int store_dynamic(const pb_holder *h, PyObject *item, const pyop_infer_args *args,
                         size_t index) {
  if (!PB_HAS(pyop_infer_args, args, add_output) || args->add_output == NULL) {
    PyErr_Format(PyExc_RuntimeError, "infer_meta output %zu is a list, but the host's libpyop "
                 "does not take dynamic outputs (bridge ABI 1.0)", index);
    return -1;
  }
  PyObject *seq = as_tuple(item, "a dynamic output must be a list of TensorDesc", index);
  if (seq == NULL)
    return -1;
  int rc = 0;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(seq) && rc == 0; k++) {
    pyop_tensor t;
    rc = desc_to_tensor(h, PyTuple_GET_ITEM(seq, k), &t, index);
    if (rc == 0 && args->add_output(args->sink_ctx, index, &t) != PYOP_OK) {
      PyErr_Format(PyExc_RuntimeError, "infer_meta output %zu: the host refused tensor %zd",
                   index, k);
      rc = -1;
    }
  }
  Py_DECREF(seq);
  return rc;
}

/*
 * infer_meta's result: None for an op without outputs; for one output its
 * value; for several a tuple/list with one item per output. The value of a
 * required output is a TensorDesc, of a dynamic one a list of them.
 */
static int store_infer_result(const pb_holder *h, PyObject *res, const pyop_infer_args *args) {
  pyop_tensor *outs = args->outputs;
  size_t n = args->n_outputs;
  const int32_t *kinds = h->op->output_kinds; /* n of them (a prototype's holder) */
  if (n == 0) {
    if (res == Py_None)
      return 0;
    PyErr_Format(PyExc_TypeError, "infer_meta of an op without outputs must return None, got %s",
                 Py_TYPE(res)->tp_name);
    return -1;
  }
  if (n == 1 && kinds[0] == PYOP_IO_DYNAMIC)
    return store_dynamic(h, res, args, 0);
  if (n == 1 && !PyTuple_Check(res) && !PyList_Check(res))
    return desc_to_tensor(h, res, &outs[0], 0);
  if (!PyTuple_Check(res) && !PyList_Check(res)) {
    PyErr_Format(PyExc_TypeError, "infer_meta must return a tuple of %zu outputs, got %s", n,
                 Py_TYPE(res)->tp_name);
    return -1;
  }
  /* A list is copied: reading an item may run code that changes it. */
  PyObject *seq = PyList_Check(res) ? PyList_AsTuple(res) : Py_NewRef(res);
  if (seq == NULL)
    return -1;
  if ((size_t)PyTuple_GET_SIZE(seq) != n) {
    PyErr_Format(PyExc_ValueError, "infer_meta returned %zd %s, the op has %zu",
                 PyTuple_GET_SIZE(seq), PB_PLURAL(PyTuple_GET_SIZE(seq), "output", "outputs"), n);
    Py_DECREF(seq);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    PyObject *item = PyTuple_GET_ITEM(seq, i);
    int r = kinds[i] == PYOP_IO_DYNAMIC ? store_dynamic(h, item, args, i)
                                        : desc_to_tensor(h, item, &outs[i], i);
    if (r < 0) {
      Py_DECREF(seq);
      return -1;
    }
  }
  Py_DECREF(seq);
  return 0;
}

/* Whether res is what a coroutine function, an async generator function
 * or a generator function returns when called: an object whose body has
 * not run. */
static inline bool unrun_result(PyObject *res) {
  return PyCoro_CheckExact(res) || PyGen_CheckExact(res) || PyAsyncGen_CheckExact(res);
}

/* A callback returned res with unrun_result(res): the plugin made it async
 * def or a generator after registration (the decorators refuse those, see
 * pyop/_signature.py, whose unawaited_result says the same). Closes it
 * unrun and raises TypeError: the call fails, it never "succeeds" doing
 * nothing. Takes res. */
static __attribute__((noinline, cold)) void refuse_unrun(const pb_holder *h, int kind,
                                                          PyObject *res) {
  if (!PyAsyncGen_CheckExact(res)) { /* an unstarted async generator needs no close */
    PyObject *r = PyObject_CallMethod(res, "close", NULL);
    Py_XDECREF(r);
  }
  const char *type = Py_TYPE(res)->tp_name;
  if (!PyErr_Occurred())
    PyErr_Format(PyExc_TypeError,
                 "%s of op '%s' returned %s %s instead of running: libpyop calls it "
                 "synchronously, so its body would never run (async def and generator "
                 "callbacks are refused at registration; this one was set after it)",
                 pb_kind_names[kind], h->op->op_type, strchr("aeiou", type[0]) ? "an" : "a",
                 type);
  Py_DECREF(res);
}

/* An execute with input views (h->in_type: GE's schema-bound execute)
 * returned res, not None: TypeError, the call fails. Takes res. */
static __attribute__((noinline, cold)) void refuse_result(const pb_holder *h, PyObject *res) {
  PyErr_Format(PyExc_TypeError, "execute must return None (op '%s' returned %s)",
               h->op->op_type, Py_TYPE(res)->tp_name);
  Py_DECREF(res);
}

/*
 * infer_meta (kind PB_INFER: TensorDesc inputs, the result stored into outs)
 * and execute (PB_EXECUTE: Tensor inputs, the result ignored). Inlined into
 * each with kind constant, so each keeps only its own branch.
 */
static inline __attribute__((always_inline)) int
call_with_inputs(pb_holder *h, int kind, const void *args, const pyop_tensor_list *inputs,
                 size_t n_in) {
  if (h->target[kind] == NULL)
    return pb_error(PYOP_EUNSUPPORTED, "op '%s' has no %s", h->op->op_type, pb_kind_names[kind]);
  if (!pb_python_usable())
    return no_python(h, kind);
  pb_thread *th = pb_thread_self();
  pb_gil st = pb_enter_on(th, kind, h->op);
  pb_locked locked = holder_lock(h, th, kind);
  if (__builtin_expect(h->escaped != NULL || h->escape_untracked, 0)) {
    int refused = holder_check_escapes(h, kind);
    if (refused != PYOP_OK) {
      holder_unlock(th, locked);
      pb_leave(st);
      return refused;
    }
  }
  pb_call c;
  int rc = call_begin(&c, th, h, kind, args, n_in);
  if (rc != PYOP_OK) {
    holder_unlock(th, locked);
    pb_leave(st);
    return rc;
  }
  rc = PYOP_EPYTHON; /* until the call succeeds */
  const uint32_t *flags = NULL;
  if (kind == PB_EXECUTE) {
    const pyop_exec_args *ea = args;
    if (PB_HAS(pyop_exec_args, ea, input_flags))
      flags = ea->input_flags;
  }
  if (build_inputs(&c.frame, inputs, n_in, c.argv + 2, &c.built, kind == PB_INFER, flags) ==
      0) {
    PyObject *res = call_invoke(&c, kind);
    if (res != NULL && res != Py_None && __builtin_expect(unrun_result(res), 0)) {
      refuse_unrun(h, kind, res);
      res = NULL;
    } else if (kind == PB_EXECUTE && res != NULL && res != Py_None && h->in_type != NULL) {
      refuse_result(h, res);
      res = NULL;
    }
    if (res != NULL) {
      if (kind != PB_INFER || store_infer_result(h, res, args) == 0)
        rc = PYOP_OK;
      Py_DECREF(res);
    }
  }
  rc = call_end(&c, kind, rc);
  holder_unlock(th, locked);
#ifdef Py_GIL_DISABLED
  if (rc != PYOP_EINTR) /* no Python after pb_interrupt_caller */
    pb_gil_watch_after(kind, h->op);
#endif
  pb_leave(st);
  return rc;
}

int pb_cb_infer_meta(void *holder, const pyop_infer_args *args) {
  if (holder == NULL || !args_ok(args, args ? args->struct_size : 0, PB_INFER_ARGS_1_0) ||
      (args->n_inputs > 0 && args->inputs == NULL) ||
      (args->n_outputs > 0 && args->outputs == NULL))
    return pb_error(PYOP_EINVAL, "bridge infer_meta: invalid arguments");
  pb_holder *h = holder;
  if (h->op->is_impl || (size_t)h->op->n_outputs != args->n_outputs)
    return pb_error(PYOP_EINVAL, "bridge infer_meta of op '%s': %zu %s asked, the "
                    "prototype has %ld", h->op->op_type, args->n_outputs,
                    PB_PLURAL(args->n_outputs, "output", "outputs"), h->op->n_outputs);
  return call_with_inputs(holder, PB_INFER, args, args->inputs, args->n_inputs);
}

int pb_cb_execute(void *holder, const pyop_exec_args *args) {
  if (holder == NULL || !args_ok(args, args ? args->struct_size : 0, PB_EXEC_ARGS_1_0) ||
      (args->n_inputs > 0 && args->inputs == NULL))
    return pb_error(PYOP_EINVAL, "bridge execute: invalid arguments");
  return call_with_inputs(holder, PB_EXECUTE, args, args->inputs, args->n_inputs);
}

/* compile and declare_launch_args: inputs then outputs, as descriptions. */
static int call_with_descs(pb_holder *h, int kind, const void *args,
                           const pyop_tensor_list *inputs, size_t n_in,
                           const pyop_tensor *outputs, size_t n_out) {
  if (h->target[kind] == NULL)
    return pb_error(PYOP_EUNSUPPORTED, "op '%s' has no %s", h->op->op_type, pb_kind_names[kind]);
  if (!pb_python_usable())
    return no_python(h, kind);
  pb_thread *th = pb_thread_self();
  pb_gil st = pb_enter_on(th, kind, h->op);
  pb_locked locked = holder_lock(h, th, kind);
  if (h->escaped != NULL || h->escape_untracked) {
    int refused = holder_check_escapes(h, kind);
    if (refused != PYOP_OK) {
      holder_unlock(th, locked);
      pb_leave(st);
      return refused;
    }
  }
  pb_call c;
  int rc = call_begin(&c, th, h, kind, args, n_in + n_out);
  if (rc != PYOP_OK) {
    holder_unlock(th, locked);
    pb_leave(st);
    return rc;
  }
  rc = PYOP_EPYTHON; /* until the call succeeds */
  if (build_inputs(&c.frame, inputs, n_in, c.argv + 2, &c.built, true, NULL) == 0 &&
      build_output_descs(outputs, n_out, c.argv + 2 + n_in, &c.built) == 0) {
    PyObject *res = call_invoke(&c, kind);
    if (res != NULL && res != Py_None && unrun_result(res)) {
      refuse_unrun(h, kind, res);
      res = NULL;
    }
    if (res != NULL) {
      rc = PYOP_OK;
      Py_DECREF(res);
    }
  }
  rc = call_end(&c, kind, rc);
  holder_unlock(th, locked);
#ifdef Py_GIL_DISABLED
  if (rc != PYOP_EINTR) /* no Python after pb_interrupt_caller */
    pb_gil_watch_after(kind, h->op);
#endif
  pb_leave(st);
  return rc;
}

int pb_cb_compile(void *holder, const pyop_compile_args *args) {
  if (holder == NULL || !args_ok(args, args ? args->struct_size : 0, sizeof *args) ||
      (args->n_inputs > 0 && args->inputs == NULL))
    return pb_error(PYOP_EINVAL, "bridge compile: invalid arguments");
  return call_with_descs(holder, PB_COMPILE, args, args->inputs, args->n_inputs, args->outputs,
                         args->n_outputs);
}

int pb_cb_declare(void *holder, const pyop_declare_args *args) {
  if (holder == NULL || !args_ok(args, args ? args->struct_size : 0, sizeof *args) ||
      (args->n_inputs > 0 && args->inputs == NULL))
    return pb_error(PYOP_EINVAL, "bridge declare_launch_args: invalid arguments");
  return call_with_descs(holder, PB_LAUNCH, args, args->inputs, args->n_inputs, args->outputs,
                         args->n_outputs);
}
