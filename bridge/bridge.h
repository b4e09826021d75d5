/*
 * Internal header of the bridge (libpyop_bridge.so), the only C of the
 * project that includes Python.h. One build per Python; the shared object
 * does not link libpython: Py* symbols resolve against the interpreter that
 * is already in the process, as for a CPython extension module.
 *
 * Files (a section below per file): state.c (pb, below, and the checks of
 * what the loader hands in), entry.c (the exported symbol, the API table,
 * config and lifecycle calls), errors.c (errors and log lines to the
 * loader), exit_watch.c (whether the bridge's interpreter still runs, and
 * whether libpyop started it), gil.c (taking the GIL from any host thread:
 * kept thread states), gil_watch.c (the GIL-wait watch thread), signals.c
 * (signal dispositions around plugins), owned_python.c (the Python libpyop
 * starts and its thread), lanes.c, lane_start.c and lane_pool.c
 * (interpreter lanes: lanes.h), free_threaded.c (call locks, the GIL watch
 * and dropped modules of a free-threaded Python), register.c (a load and
 * reset), package.c (the package set-up), import_guard.c (what a load puts
 * back in the interpreter), views.c (descriptor views and op ctx),
 * native.c, tensor.c and context.c (pyop._native: its module, Tensor and
 * call contexts; native.h), holders.c (op instances' holders), callbacks.c
 * (op callbacks). The inline hot path of a callback (Tensor reuse, frames)
 * is in frames.h, which only callbacks.c, tensor.c and context.c include.
 *
 * Unless a comment says otherwise every function here must be called with
 * the GIL held.
 */
#ifndef PYOP_BRIDGE_H
#define PYOP_BRIDGE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pyop/bridge_abi.h"
/* Element counts, byte sizes and strides: libpyop's own rule and code. */
#include "../src/shape.h"

#ifdef Py_GIL_DISABLED
/*
 * A free-threaded Python (3.13t) has no GIL. What several threads may read
 * and write at once is declared PB_SHARED (a C11 atomic there: every plain
 * access of it is then a sequentially consistent atomic one; a plain field
 * under a GIL). PyMutex and critical sections live in libpython, which a
 * ThreadSanitizer build does not instrument: PB_MUTEX_* and PB_CS_* tell it
 * about each acquire and release, or it would take what they guard for
 * racing.
 */
#define PB_SHARED(type) _Atomic(type)
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PB_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define PB_TSAN 1
#endif
#ifdef PB_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define PB_TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define PB_TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define PB_TSAN_ACQUIRE(p) ((void)0)
#define PB_TSAN_RELEASE(p) ((void)0)
#endif
#define PB_MUTEX_LOCK(m) (PyMutex_Lock(m), PB_TSAN_ACQUIRE(m))
#define PB_MUTEX_UNLOCK(m) (PB_TSAN_RELEASE(m), PyMutex_Unlock(m))
/* A critical section on object o (Py_BEGIN_CRITICAL_SECTION), seen by TSan:
 * nothing inside may block, or CPython suspends it. */
#define PB_CS_BEGIN(o)                                                                         \
  Py_BEGIN_CRITICAL_SECTION(o);                                                                \
  PB_TSAN_ACQUIRE(o)
#define PB_CS_END(o)                                                                           \
  PB_TSAN_RELEASE(o);                                                                          \
  Py_END_CRITICAL_SECTION()
#else
#define PB_SHARED(type) type
#define PB_CS_BEGIN(o) { (void)(o)
#define PB_CS_END(o) }
#endif

#define PB_STR_(x) #x
#define PB_XSTR(x) PB_STR_(x)
/* The word for a count in a message: one for 1, many otherwise (as
 * libpyop's PYOP__PLURAL). */
#define PB_PLURAL(n, one, many) ((n) == 1 ? (one) : (many))

/*
 * Whether versioned struct *s (of type T) holds member m whole, by its
 * struct_size (pyop.h's rule): the one place the bridge writes that check. The loader's
 * tables (services, config, registrar) pass through it once, where they
 * enter the bridge, into full-size copies whose absent members are NULL or
 * 0 (pb_take_*, state.c); after that only a call's own arguments (infer,
 * exec args and exec services, whose size is the call's) ask it.
 */
#define PB_HAS(T, s, m) PYOP_STRUCT_HAS(T, s, m)

#if defined(__GNUC__)
#define PB_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PB_PRINTF(f, a)
#endif

/*
 * A plugin-provided number as a C integer: o (an int, or anything with
 * __index__, which may run plugin code) must be in [lo, hi]. 0 with the
 * value in *out, or -1 with an exception naming what (printf-style, only
 * formatted on failure: "launch argument %zd index") and the range:
 * TypeError when o is not an integer, ValueError when it is out of range.
 * Never wraps, never truncates. An exact int within range costs one call.
 */
int pb_int_in(PyObject *o, int64_t lo, int64_t hi, int64_t *out, const char *what, ...)
    PB_PRINTF(5, 6);
int pb_uint_in(PyObject *o, uint64_t hi, uint64_t *out, const char *what, ...) PB_PRINTF(4, 5);

/*
 * Callback kinds, X(KIND, name) in value order (0..): name is the kind's
 * word in messages and the implementation method's name (callbacks.c).
 * 1..3 are also the values pyop/__init__.py passes to _native.current_ctx()
 * (integration.bridge.basic holds them to this list).
 */
#define PB_KIND_MAP(X)                                                                        \
  X(INFER, "infer_meta") X(EXECUTE, "execute") X(COMPILE, "compile")                          \
  X(LAUNCH, "declare_launch_args")
#define PB_KIND_ENUM(kind, name) PB_##kind,
enum { PB_KIND_MAP(PB_KIND_ENUM) PB_NKINDS };
#undef PB_KIND_ENUM
/* The kinds' names by value (PB_KIND_MAP). */
extern const char *const pb_kind_names[PB_NKINDS];

/*
 * The ctx of one descriptor handed to libpyop (a prototype or an
 * implementation). Owned by the bridge: freed at reset()/shutdown() once no
 * holder refers to it (refs counts the bridge's list plus each holder).
 */
typedef struct pb_op {
  struct pb_op *next;
  bool is_impl;
  bool proto_known;    /* impl: validated against a Python prototype */
  long refs;
  PyObject *desc;      /* OpProto / OpImpl */
  PyObject *callable;  /* proto: infer function; impl: the class */
  char *op_type;
  char *where;         /* "file:line" of the definition */
  char *source_dir;    /* directory of the definition's file */
  int32_t *input_kinds; /* kind per input slot (hints for impls), may be NULL */
  size_t n_kinds;
  long n_outputs;      /* -1: unknown (impl bound to a host prototype) */
  int32_t *output_kinds; /* proto: kind per output (n_outputs of them) */
  uint32_t caps;
  pyop_op_callbacks callbacks;
  /* What interpreter lanes compare (lanes.c): the index of the load's path
   * the descriptor came from (-1: unknown) and the identity of what that
   * path's load compiled (its code_digest; NULL: unknown). */
  long element;
  char *code_digest;
  /* Why it runs in the main interpreter although placed in lanes (a call
   * failed in a lane after an import the lane refused: lane_calls.c), or
   * NULL; set once, any thread. */
  _Atomic(char *) lane_refusal;
  /* Lanes it runs in (lanes.c), 0: serial; per lane the image's ctx and
   * callbacks of the same descriptor (n_lanes entries, owned arrays). */
  uint32_t n_lanes;
  unsigned lanes_epoch; /* pb_lanes_epoch() when they were set */
  void **lane_ctx;
  const pyop_op_callbacks **lane_cb;
} pb_op;

/*
 * A TensorDesc kept for reuse by one input slot of a holder, and the shape
 * tuple last written for that slot. The tuple (immutable, owned) always
 * holds exactly ndim/dims, so a desc whose .shape is still that very tuple
 * needs no rewrite when the next call has the same dimensions.
 */
typedef struct pb_desc_slot {
  PyObject *desc;  /* owned TensorDesc, reused while nobody else holds it */
  PyObject *shape; /* owned tuple equal to dims[0..ndim), or NULL */
  int32_t ndim;
  int64_t dims[PYOP_MAX_DIMS];
} pb_desc_slot;

/* A list-typed attribute of a holder: its value is kept as a tuple (of
 * tuples when nested, for LIST_LIST_INT) and each call gets new lists. */
typedef struct pb_list_attr {
  size_t index; /* in attr_values */
  bool nested;
} pb_list_attr;

#ifdef Py_GIL_DISABLED
/* The lock of a callback in a free-threaded Python (pb_holder.lock). */
typedef struct pb_call_lock {
  PyMutex mutex;
  long users;                /* holders using a shared one (free_threaded.c) */
  PyObject *key;             /* the shared object (owned); NULL for an own_lock */
  struct pb_call_lock *next; /* the shared ones in use (free_threaded.c) */
} pb_call_lock;
#endif

/*
 * Per op instance state made by create_holder: the call targets and the
 * attribute values converted once, plus Tensor and TensorDesc objects kept
 * for reuse.
 */
typedef struct pb_holder {
  pb_op *op;
  PyObject *self;               /* impl instance, NULL for a prototype */
  PyObject *target[PB_NKINDS];  /* infer function / bound methods */
  /* target[k]'s function and instance when target[k] is a plain bound
   * method (of self, or for a GE kernel of the op type's one instance): the
   * call is then func(fself, ...) directly, as the bound method would make
   * it. NULL: call target[k]. fself[k] is borrowed from target[k]. */
  PyObject *func[PB_NKINDS];
  PyObject *fself[PB_NKINDS];
  PyObject *kwnames;            /* tuple of attribute names, NULL if none */
  PyObject **attr_values;       /* n_attrs owned references; lists as tuples */
  size_t n_attrs;
  pb_list_attr *list_attrs;     /* the list-typed ones: a new list per call */
  size_t n_list_attrs;
  PyObject **in_cache;          /* per input slot: a Tensor to reuse, or NULL */
  size_t n_in_cache;
  PyObject **out_cache;         /* per output index */
  size_t n_out_cache;
  pb_desc_slot *desc_cache;     /* per input slot: TensorDesc reuse */
  size_t n_desc_cache;
  /*
   * The class of the execute input views when the implementation class
   * names one in __pyop_input_view__ (a subclass of pyop._native.ViewBase
   * that gives the views its own API: ge.runtime.Tensor), owned; NULL for
   * pyop.Tensor. Such an execute must return None (TypeError otherwise).
   */
  PyTypeObject *in_type;
  /*
   * Tensors whose buffer escaped a call of this instance (a memoryview or
   * array of it still alive when the call returned), NULL when none. While
   * one is still exported every call is refused: plugin code of the
   * instance could write through the view into memory the host freed.
   * See holder_check_escapes (callbacks.c).
   */
  PyObject *escaped;            /* list of Tensors, or NULL */
  char *escaped_why;            /* what the first escape was (malloc'd) */
  bool escape_untracked;        /* one could not be recorded: refuse for good */
#ifdef Py_GIL_DISABLED
  /*
   * A free-threaded Python has no GIL to serialise the calls of one
   * instance: a callback holds *lock while it runs, so the caches and the
   * escape list above, and the plugin's self, see one call at a time.
   * lock is &own_lock, or the lock every instance sharing one
   * implementation object uses (pb_call_lock_bind: GE's one object per op
   * type). See holder_lock (callbacks.c) for the rules that keep two
   * threads from waiting for each other's lock forever.
   */
  pb_call_lock *lock;
  pb_call_lock own_lock;
#endif
} pb_holder;


/*
 * The Python objects the bridge holds, all of them: one row each,
 * X(type, name, dims, image, module, attr). pb.name is a type, or an array
 * of them when dims is [n]; every one is an owned reference or NULL, guarded
 * by the GIL. module/attr (NULL: code sets it, as the comment says): the
 * package set-up (pb_package_ensure) fills it with
 * getattr(sys.modules[module], attr), in table order. pb_package_drop
 * releases them in table order, image 1 last (this image's own module and
 * types, whose code lives here: watched until they are gone);
 * pb_package_forget drops them without touching them. A member added here
 * is declared, released and forgotten with no other change.
 */
#define PB_PY_STATE(X)                                                                        \
  X(PyObject *, fn_load, , 0, "pyop._loader", "load_plugins")                                 \
  X(PyObject *, fn_unload, , 0, "pyop._loader", "unload_modules")                             \
  X(PyObject *, fn_loader_shutdown, , 0, "pyop._loader", "shutdown")                          \
  X(PyObject *, fn_format, , 0, "pyop._errors", "format_exception")                           \
  X(PyObject *, tensor_desc, , 0, "pyop", "TensorDesc")                                       \
  /* DataType / Format members by value (pb_package_ensure) */                                \
  X(PyObject *, dtypes, [PYOP_DTYPE_COUNT], 0, NULL, NULL)                                    \
  X(PyObject *, formats, [PYOP_FORMAT_COUNT], 0, NULL, NULL)                                  \
  /* pb_kind_names, interned (pb_package_ensure) */                                           \
  X(PyObject *, str_method, [PB_NKINDS], 0, NULL, NULL)                                       \
  /* list: plugin modules of every load since reset (pb_package_ensure) */                    \
  X(PyObject *, modules, , 0, NULL, NULL)                                                     \
  /* dict: the plugins a lane image's loads imported since reset, by file                     \
   * identity (load_plugins' seen: a lane loads one path at a time) */                        \
  X(PyObject *, lane_seen, , 0, NULL, NULL)                                                   \
  /* list: a lane image's record of the imports its interpreter refused                       \
   * (pyop._lanes.install; NULL in the main image) */                                         \
  X(PyObject *, lane_refused, , 0, NULL, NULL)                                                \
  /* the pyop package (import_package) */                                                     \
  X(PyObject *, pkg, , 0, NULL, NULL)                                                         \
  /* pyop._native and its types (pb_native_create) */                                         \
  X(PyObject *, native, , 1, NULL, NULL)                                                      \
  X(PyTypeObject *, tensor_type, , 1, NULL, NULL)                                             \
  X(PyTypeObject *, ctx_type, , 1, NULL, NULL)                                                \
  /* pyop._native.ViewBase (see pb_holder.in_type) */                                         \
  X(PyTypeObject *, view_type, , 1, NULL, NULL)                                               \
  /* pyop._native.TensorDescBase: the fields of pyop.TensorDesc (pb_desc) */                  \
  X(PyTypeObject *, desc_type, , 1, NULL, NULL)

/* Everything the bridge keeps: the process-wide C members, then the
 * Python objects (PB_PY_STATE). */
typedef struct pb_state {
  /* The loader's services, normalised at the entry (pb_take_services):
   * a member the loader does not offer, or that needs a later ABI minor
   * than negotiated, is NULL; all NULL before the entry and after
   * shutdown. */
  pyop_loader_services services;
  /* The table the entry was given, as given: a lane image reads its main
   * image's trailer past the services (pb_lane_services, lanes.h). */
  const pyop_loader_services *services_given;
  uint32_t abi_minor;           /* negotiated with the loader (entry.c) */
  char *artifact_dir;
  bool owns_python;
  PyThreadState *main_tstate;   /* ours, saved after start-up */
  pb_op *ops;
#define PB_PY_DECLARE(type, name, dims, image, module, attr) type name dims;
  PB_PY_STATE(PB_PY_DECLARE)
#undef PB_PY_DECLARE
} pb_state;

extern pb_state pb;

/* What the bridge keeps per host thread (one TLS block: one lookup). */
typedef struct pb_thread {
  PyThreadState *ts; /* kept thread state (gil.c), NULL if none */
  unsigned gen;      /* generation ts belongs to */
  /* The state this image's PyGILState_Ensure made for this thread, kept
   * past a shutdown (gil.c: keep_thread_state takes it again in a later
   * session once its mark confirms it is still that state). */
  PyThreadState *made;
  struct pb_frame *frame; /* innermost callback in progress (frames.h) */
  /*
   * The GIL-wait watch (gil_watch.c): wait_seq is odd while this thread waits
   * for the GIL in pb_enter_on (or, free-threaded, for a call lock: then
   * wait_kind is the kind + PB_WAIT_CALL_LOCK), wait_kind/wait_op then say
   * for which call (wait_op NULL when not waiting). Written only by this thread; read by
   * the watch thread while this thread is on its list (watch_next).
   */
  atomic_uint wait_seq;
  atomic_int wait_kind;
  _Atomic(const struct pb_op *) wait_op;
  struct pb_thread *watch_next;
  bool watched;
  long tid;          /* gettid(), for log lines */
#ifdef Py_GIL_DISABLED
  /* The call lock this thread holds (its innermost callback's), or NULL:
   * a thread holds at most one (holder_lock, callbacks.c). */
  struct pb_call_lock *held;
#endif
} pb_thread;
extern _Thread_local pb_thread pb_tls;

/* &pb_tls, looked up once: the empty asm keeps the compiler from
 * recomputing the address (another __tls_get_addr) at each use. */
static inline pb_thread *pb_thread_self(void) {
  pb_thread *t = &pb_tls;
#if defined(__GNUC__)
  __asm__("" : "+r"(t));
#endif
  return t;
}

/*
 * How pb_enter took the GIL, so that pb_leave undoes exactly that.
 * Invariant: when pb_enter returns, the calling thread holds the GIL, and
 *   PB_GIL_HELD     it held it already (a callback that called back into
 *                   libpyop): pb_leave does nothing;
 *   PB_GIL_KEPT     it attached the thread's kept thread state (pb_tls.ts):
 *                   pb_leave detaches it (PyEval_SaveThread);
 *   PB_GIL_ENSURED  PyGILState_Ensure took it (a thread with a thread state
 *                   of its own in the bridge's interpreter, or one for
 *                   which none could be kept): pb_leave calls
 *                   PyGILState_Release(ensured).
 * and, whatever how says, when other is not NULL the thread had a thread
 * state of another interpreter attached (a sub-interpreter the host runs on
 * it): pb_enter_on detached it first and pb_leave attaches it again.
 * Returned by value (two words, in registers).
 */
typedef enum pb_gil_how { PB_GIL_HELD, PB_GIL_KEPT, PB_GIL_ENSURED } pb_gil_how;
typedef struct pb_gil {
  pb_gil_how how;
  PyGILState_STATE ensured; /* PB_GIL_ENSURED only */
  PyThreadState *other;     /* another interpreter's state to attach again, or NULL */
} pb_gil;

/* The pending exception, normalised, with its traceback; clears it. NULL
 * when none. */
static inline PyObject *pb_exc_fetch(void) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyErr_GetRaisedException();
#else
  PyObject *type = NULL, *value = NULL, *tb = NULL;
  PyErr_Fetch(&type, &value, &tb);
  if (type == NULL)
    return NULL;
  PyErr_NormalizeException(&type, &value, &tb);
  if (value != NULL && tb != NULL)
    PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
#endif
}

/* Sets exc (stolen; NULL: nothing) as the pending exception. */
static inline void pb_exc_restore(PyObject *exc) {
  if (exc == NULL)
    return;
#if PY_VERSION_HEX >= 0x030C0000
  PyErr_SetRaisedException(exc);
#else
  PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
#endif
}

/*
 * A pyop.TensorDesc: a Python subclass of pyop._native.TensorDescBase (in
 * pb.desc_type) that adds no field, no __dict__ and no __weakref__
 * (pb_package_ensure checks), so the bridge reads and writes its fields
 * here. NULL: not set (getattr raises AttributeError).
 */
typedef struct pb_desc {
  PyObject_HEAD
  PyObject *shape;  /* tuple of ints */
  PyObject *dtype;  /* DataType member */
  PyObject *format; /* Format member */
} pb_desc;

/* ---- state.c (pb, above, is defined there too) */
/*
 * Normalising what the loader hands in (see PB_HAS): each returns a
 * full-size copy with every member the given table holds whole, the others
 * NULL / 0. Services: minor is the negotiated ABI minor (a member of a later
 * minor stays NULL); s NULL, or too small to hold set_error: all NULL.
 * Config: c must hold flags (its ABI 1.0 members; the caller checks).
 * Registrar: false when r is NULL, too small or without add_proto and
 * add_impl (its required members).
 */
pyop_loader_services pb_take_services(const pyop_loader_services *s, uint32_t minor);
pyop_bridge_config pb_take_config(const pyop_bridge_config *c);
bool pb_take_registrar(const pyop_registrar *r, pyop_registrar *out);
/* A pyop_str that is NUL-free, non-NULL when len > 0 and (required) non-empty. */
bool pb_str_ok(pyop_str s, bool required);

/* ---- errors.c */
/* Sends a message to services->set_error and returns status (no GIL needed). */
int pb_error(int status, const char *fmt, ...) PB_PRINTF(2, 3);
/*
 * With a Python exception set: clears it and reports "<prefix>: <Type>:
 * <message>\n<traceback>" with status, or with PYOP_EINTR for a
 * KeyboardInterrupt (re-raised for a Python caller on this thread: see
 * errors.c). Returns the status reported.
 */
int pb_error_python(int status, const char *fmt, ...) PB_PRINTF(2, 3);
/* Reports why the bridge cannot use Python for what ("execute of op
 * 'X'"); returns PYOP_ENOTINIT. */
int pb_error_no_python(const char *what);
/*
 * After a call that failed with PYOP_EINTR, the last thing before the GIL
 * is released: when Python code is the caller on this thread (a Python
 * host calling through ctypes: a frame is below the bridge's call), raises
 * the interrupt again for it (PyErr_SetInterrupt: its main thread sees
 * KeyboardInterrupt, as for Ctrl-C). A C host only gets the status, so no
 * later Python code of its sees a stray interrupt. Nothing may run Python
 * code after it (the interrupt would be consumed there).
 */
void pb_interrupt_caller(void);
/* "Type: message\n<traceback>" of exc (pyop._errors.format_exception when
 * the package is imported); malloc'd, NULL on failure. */
char *pb_describe_exception(PyObject *exc);
/* A log line through services->log (no GIL needed). */
void pb_log(int level, const char *fmt, ...) PB_PRINTF(2, 3);
/*
 * Why the loader service this thread called last failed, as the loader
 * says it (loader service last_error, ABI 1.4): NUL-terminated, valid until
 * the thread's next call into the loader; NULL when the loader is older or
 * says nothing. Cold paths only.
 */
const char *pb_loader_last_error(void);
/* "PYOP_EINVAL" for a status of PYOP_STATUS_MAP, NULL for any other. */
const char *pb_status_name(int status);
/* The message of a status of PYOP_STATUS_MAP ("invalid argument"), NULL
 * for any other. */
const char *pb_status_message(int status);
/* malloc'd printf; NULL on failure. */
char *pb_strdupf(const char *fmt, ...) PB_PRINTF(1, 2);

/* ---- exit_watch.c */
/*
 * True once the interpreter the bridge's Python objects belong to has been
 * finalized without the bridge (the host's Py_FinalizeEx: the exit watch,
 * a capsule in that interpreter's state dict, sets it when the dict is
 * cleared). From then on no Python object the bridge holds may be touched,
 * even in a Python the host initialised again: every call fails with
 * PYOP_ENOTINIT and shutdown only frees C memory. Cleared when the bridge
 * shuts down.
 */
extern atomic_bool pb_lost;
/* Whether the bridge may take the GIL and use its objects: its interpreter
 * was not finalized (pb_lost) and a Python is initialised (also false
 * during a finalization, before the watch fires). No GIL needed. */
static inline bool pb_python_usable(void) {
  return !atomic_load_explicit(&pb_lost, memory_order_relaxed) && Py_IsInitialized();
}
/* Whether the running Python is one libpyop started (pb_python_start; this
 * bridge image or an earlier one): read when the exit watch is registered. */
extern atomic_bool pb_python_ours;
/* Registers / unregisters the exit watch that sets pb_lost (GIL held;
 * register: -1 with an exception). */
int pb_exit_watch_register(void);
void pb_exit_watch_unregister(void);
/* Forgets the exit watch without touching it: it died with its
 * interpreter's state dict (no GIL). */
void pb_exit_watch_forget(void);
/* Marks the running interpreter as libpyop's in its state dict, for every
 * later bridge image, and sets pb_python_ours (GIL held). */
void pb_python_mark_ours(void);

/* ---- gil.c */
/* Takes the GIL from any host thread (keeps one thread state per thread). */
pb_gil pb_enter(void);
/*
 * pb_enter with this thread's &pb_tls already at hand (one TLS lookup), for
 * a call of kind (PB_INFER...; -1: another bridge entry) on op (may be
 * NULL), which the GIL-wait watch names if the wait lasts.
 */
pb_gil pb_enter_on(pb_thread *t, int kind, const pb_op *op);
void pb_leave(pb_gil g);
/* The host thread inside libpyop holding the GIL, for the watch:
 * gettid() << 4 | (kind + 1), 0 when none (no GIL needed). */
long pb_gil_holder(void);
/* Creates (once) / deletes the pthread key whose destructor ends a host
 * thread's kept thread state (no GIL needed). */
void pb_kept_key_create(void);
void pb_kept_key_delete(void);
/* Retires every kept thread state: their interpreter is gone or the bridge
 * shuts down, so no destructor touches one (no GIL needed). */
void pb_kept_retire(void);
/* The interpreter a lane image's objects live in (lanes.c; NULL: the main
 * one). Set at set_config, no GIL needed. */
void pb_gil_set_home(PyInterpreterState *interp);
/* A lane image's shutdown, no thread state attached on this thread (no
 * GIL held): clears and deletes every thread state it keeps for any thread
 * (its sub-interpreter can then end). */
void pb_kept_end_all(void);
/* The thread state attached to this thread (holding the GIL), or NULL. */
static inline PyThreadState *pb_attached_tstate(void) {
#if PY_VERSION_HEX >= 0x030D0000
  return PyThreadState_GetUnchecked();
#else
  return _PyThreadState_UncheckedGet();
#endif
}

/* ---- gil_watch.c */
/* Waits until the watch thread reads no pb_op (called before one is freed;
 * no GIL needed). */
void pb_watch_barrier(void);
/* Puts t (this thread's) on the watch list, starting the watch thread. */
void pb_watch_add(pb_thread *t);
/* Takes t off the watch list if it is on it (its thread exits). */
void pb_watch_remove(pb_thread *t);
/* Stops the watch thread and empties the list (bridge shutdown). */
void pb_watch_stop_all(void);
/* At each load, with the GIL taken as how says: warns when this thread
 * held the GIL while running no Python, and records it for the watch's
 * line. */
void pb_watch_note_load(pb_gil how);
/* Added to the kind of a wait for a call lock rather than the GIL (a
 * free-threaded Python: holder_lock, callbacks.c), so the watch says so. */
#define PB_WAIT_CALL_LOCK 16
/* Marks the start and the end of a wait for the GIL (owner thread only:
 * plain loads and stores, no read-modify-write). */
static inline void pb_wait_begin(pb_thread *t, int kind, const pb_op *op) {
  unsigned seq = atomic_load_explicit(&t->wait_seq, memory_order_relaxed);
  atomic_store_explicit(&t->wait_kind, kind, memory_order_relaxed);
  atomic_store_explicit(&t->wait_op, op, memory_order_relaxed);
  atomic_store_explicit(&t->wait_seq, seq + 1, memory_order_release);
}

static inline void pb_wait_end(pb_thread *t) {
  unsigned seq = atomic_load_explicit(&t->wait_seq, memory_order_relaxed);
  atomic_store_explicit(&t->wait_op, NULL, memory_order_release);
  atomic_store_explicit(&t->wait_seq, seq + 1, memory_order_release);
}

/* ---- signals.c */
/* Saves the signal dispositions before plugins run (once per load). */
void pb_signals_save(void);
/* Restores the saved dispositions of signals a plugin's Python code
 * replaced (GIL held; see signals.c). */
void pb_signals_restore(void);
/* At a shutdown after the host finalized the interpreter the saved
 * dispositions were taken for: forgets them, touching no disposition (a
 * Python the host started since may have installed its own), so that the
 * next session of this image (it stays mapped when a plugin kept a Tensor)
 * saves afresh at its load. */
void pb_signals_forget(void);
/* On the interpreter thread of a Python libpyop started, before any
 * plugin: imports signal and gives SIGINT back to the host (GIL held). */
void pb_signals_keep_host_sigint(void);

/* ---- owned_python.c */
/* Starts an isolated Python that the bridge owns on the interpreter thread;
 * the GIL is left released. PYOP_OK or status (error reported). */
int pb_python_start(void);
/* Ends the interpreter thread (Python stays initialised). */
void pb_python_finish(void);
/* The live non-daemon Python threads of the attached state's interpreter,
 * other than the calling one and that interpreter's main thread
 * ("'name' (ident N), ...", "" when none), malloc'd; NULL when Python could
 * not tell, *why (malloc'd or NULL) then says why. GIL held; never waits
 * for a thread (owned_python.c; lanes.c before ending a lane). */
char *pb_threads_running(char **why);
/* What pyop_shutdown does to a Python libpyop started (GIL held, after the
 * package is dropped): flushes sys.stdout/stderr, names the plugin threads
 * left running. */
void pb_python_leave_ours(void);

/* ---- lanes.c (interpreter lanes, bridge ABI 1.6) */
/* Takes the lane count of config (when it has one; no GIL): PYOP_OK, or
 * PYOP_EINVAL out of range (error reported). Logs why lanes cannot run
 * here. For a lane's image (a private flag): adopts the interpreter
 * attached on this thread. */
int pb_lanes_configure(const pyop_bridge_config *config);
/* Whether this image runs a lane (no GIL). */
bool pb_lanes_image(void);
/* In a lane image, whether the pending exception of a failed plugin import
 * is an ImportError (the plugin's descriptors then stay serial). */
bool pb_lanes_refused_import(void);
/* Before the main interpreter's load (main GIL held): starts the lanes the
 * first time, and loads every element of paths in each lane. PYOP_OK or a
 * status (error reported; the lanes then hold no plugin). */
int pb_lanes_load(const pyop_str *paths, size_t n);
/*
 * The lanes members of op's view (key: its descriptor key): *lanes the
 * lanes it runs in (its callbacks then dispatch to the lanes' images) or 0
 * with *reason why it is serial (valid until pb_lanes_reset; empty when no
 * lanes were asked for). 0, or -1 with an exception: a lane yields other
 * descriptors than the main interpreter.
 */
int pb_lanes_view(pb_op *op, pyop_str key, pyop_str *reason, uint32_t *lanes);
/* After the main load: PYOP_OK, or a status (error reported) when a lane
 * yielded a descriptor the main interpreter did not. */
int pb_lanes_check_all_matched(void);
/* Drops every lane's plugins (reset of each image). No GIL needed. */
void pb_lanes_reset(void);
/* Shuts every lane's image down and keeps the lanes' interpreters for the
 * next load (lane_pool.c); any thread state the caller has attached is
 * detached meanwhile. */
void pb_lanes_stop(void);
/* Unregisters the atexit callback that ends the lanes when Python
 * finalizes first (main GIL held, or Python gone: then only forgets it). */
void pb_lanes_exit_hook_drop(void);
/* Grows each time the lanes end (no GIL): what refers to lanes of an
 * earlier epoch must not call into them. */
unsigned pb_lanes_epoch(void);

/* ---- lane_calls.c (calls into the lanes' images) */
#if PY_VERSION_HEX >= 0x030C0000 && !defined(Py_GIL_DISABLED)
#define PB_LANES 1 /* this Python can have lanes */
#endif
/* This thread's mark while it runs in a lane's image: the thread state the
 * host had attached when it called in (NULL: none) and the thread's
 * PyGILState state then. */
typedef struct pb_host_mark {
  PyThreadState *host;
  PyThreadState *gil_state;
  bool inside;
} pb_host_mark;
/* Before calling into a lane's image: marks this thread with host; the old
 * mark, for pb_lanes_leave after the call. */
pb_host_mark pb_lanes_enter(PyThreadState *host);
void pb_lanes_leave(pb_host_mark old);
/* Around a lane image's call out to libpyop (which may run host code):
 * the lane's state detached and the mark's host state attached, and back. */
typedef struct pb_host_turn {
  PyThreadState *lane;
  bool moved;
} pb_host_turn;
pb_host_turn pb_lanes_to_host(void);
void pb_lanes_from_host(pb_host_turn turn);
/* Makes op's callbacks the dispatchers to the lanes' images (op->lane_cb,
 * lane_ctx, n_lanes set). */
void pb_lanes_dispatch(pb_op *op);
/* The main image's lane services take a lane image's failed call with
 * PB_STATUS_LANE_REFUSED: its message (copied), for the dispatcher. */
void pb_lanes_refused_note(pyop_str message);

/* ---- lane_imports.c (a lane image: what its interpreter refused to import) */
/*
 * A lane image's private status between it and the main image (never
 * libpyop's): a call failed after an import the lane refused, which the
 * main interpreter would have made (lane_calls.c then runs the op there).
 */
#define PB_STATUS_LANE_REFUSED (-1000)
/* The other: a call succeeded, but its plugin caught the ImportError of an
 * import the lane refused and went on without the module (a lazy optional
 * extension), so the lane ran another path than the main interpreter would
 * (lane_calls.c: the result stands, the op runs there from then on). A
 * create_holder that answers it has made its holder. */
#define PB_STATUS_LANE_CAUGHT (-1001)
/* Starts recording refused imports in this lane's interpreter (its package
 * import; GIL held): 0, or -1 with an exception. */
int pb_lane_imports_watch(void);
/* At the package's drop in a lane image (GIL held): the wrappers stop
 * calling into this image (the gate's functions; lanes.h). */
void pb_lane_imports_unwatch(void);
/* Around a lane image's load of one path element (GIL held): end returns
 * rc, or PYOP_EUNSUPPORTED (error reported) when rc is PYOP_OK and an
 * import was refused during the load. End with PYOP_OK is the check
 * before the descriptors are handed over and leaves the load going on
 * (the load ends with end(another rc), whatever happened). */
void pb_lane_imports_load_begin(void);
int pb_lane_imports_load_end(int rc);
/* A failed call's status in a lane image (pb_error_python): a call's
 * PYOP_EPYTHON becomes PB_STATUS_LANE_REFUSED when an import was refused
 * since the last look (taken). */
int pb_lane_imports_status(int status);
/* A call's status in a lane image when it succeeded (GIL held): PYOP_OK, or
 * PB_STATUS_LANE_CAUGHT (reported, the refusals taken) when an import was
 * refused since the last look. A list length read when none was. */
int pb_lane_imports_done(int status);

/* ---- free_threaded.c (a free-threaded Python only) */
#ifdef Py_GIL_DISABLED
/*
 * Binds h's call lock once its self exists: its own (h->own_lock, set by
 * holder_new), or the one every holder whose self has the same
 * __pyop_shared__ object uses (None or absent: its own). 0, or -1 with an
 * exception.
 */
int pb_call_lock_bind(pb_holder *h);
/* Gives h's lock back: a shared one goes with its last holder (python
 * false: without touching its object, whose interpreter is gone). */
void pb_call_lock_unbind(pb_holder *h, bool python);
/*
 * The GIL watch: modules is the interpreter's sys.modules while the GIL is
 * off and has not been reported (else NULL), size its size when the watch
 * last looked. Read after every call (pb_gil_watch_after).
 */
typedef struct pb_gil_watch_state {
  _Atomic(PyObject *) modules; /* borrowed: the interpreter's own dict */
  _Atomic(Py_ssize_t) size;
} pb_gil_watch_state;
extern pb_gil_watch_state pb_gil_watch;
/* sys._is_gil_enabled(): 1, 0, or -1 when it cannot be told (no exception
 * left). */
int pb_gil_enabled(void);
/* After a load that began with the GIL off: warns when it is on now,
 * naming the extension modules not in before (a copy of sys.modules from
 * before the load), else starts watching (no exception left). */
void pb_gil_watch_load(PyObject *before);
/* sys.modules changed size since the watch looked: warns once if the GIL is
 * on now (after a call of kind, -1: create, of op), else looks again. */
void pb_gil_watch_changed(int kind, const pb_op *op);
/* Stops the watch (shutdown; python false: the interpreter is gone). */
void pb_gil_watch_stop(bool python);
/* After a call (attached, no exception pending): two relaxed loads and a
 * compare unless sys.modules changed size. */
static inline void pb_gil_watch_after(int kind, const pb_op *op) {
  PyObject *m = atomic_load_explicit(&pb_gil_watch.modules, memory_order_relaxed);
  if (__builtin_expect(m != NULL && PyDict_GET_SIZE(m) != atomic_load_explicit(
                                                               &pb_gil_watch.size,
                                                               memory_order_relaxed),
                       0))
    pb_gil_watch_changed(kind, op);
}
/* Clears the dict of each module of modules (a list of the module objects
 * pyop._loader.unload_modules removed from sys.modules) that CPython made
 * immortal: nothing else would free what it holds. */
void pb_modules_release(PyObject *modules);
#endif

/* ---- register.c */
int pb_register(const pyop_registrar *registrar, const pyop_str *paths, size_t n);
/* Drops plugin modules and every op ctx; the caller holds the GIL
 * (asserted). `_locked` in the bridge means only "holds the mutex". */
void pb_reset_gil(void);

/* ---- package.c */
/* Ensures the package and native module are imported. PYOP_OK or status
 * (error reported). */
int pb_package_ensure(void);
/* Drops the package, the native module and cached objects. */
void pb_package_drop(void);
/* pb_lost: forgets every Python object the bridge holds without touching
 * them (no GIL) and frees the op ctx's C memory. */
void pb_package_forget(void);

/* ---- import_guard.c */
/*
 * What a load relies on in the interpreter and a plugin can break: the
 * sys.modules entries (the pyop package and its submodules, and the
 * standard modules the loader uses), sys.meta_path, sys.path_hooks,
 * sys.path_importer_cache and builtins.__import__. Saved before the plugins
 * run. After a failed load every one of them is put back (sys.modules
 * entries that existed are restored by identity, "pyop.*" entries the load
 * added that are not modules are removed); after a successful load only
 * the package's own entries are (a plugin may add finders or modules on
 * purpose, but "pyop" is libpyop's). Nothing here is interpreted: the saved
 * objects are put back as they were. sys.path is not here: its one owner is
 * the loader (pyop/_loader.py, load_plugins), which puts it back after
 * every load, failed or not.
 */
typedef struct pb_guard {
  PyObject *modules;       /* copy of sys.modules */
  PyObject *lists[2];      /* copies of sys.meta_path, sys.path_hooks */
  PyObject *importer_cache; /* copy of sys.path_importer_cache */
  PyObject *import_fn;     /* builtins.__import__ */
} pb_guard;
/* Saves what *g guards: 0, or -1 with an exception (nothing kept). */
int pb_guard_save(pb_guard *g);
/* Puts back what g saved: everything after a failed load (all), else the
 * package's own sys.modules entries; keeps a pending exception. */
void pb_guard_restore(const pb_guard *g, bool all);
/* Releases what g saved. */
void pb_guard_free(pb_guard *g);

/* ---- views.c */
/*
 * How pb_view_add_proto/_impl ended. Two different failures, two values: a
 * Python error (an exception is pending, nothing reached the registrar) is
 * reported by the caller; a registrar refusal already has its detail
 * recorded by the registrar (libpyop), and its status is in *status.
 */
typedef enum {
  PB_ADD_OK = 0,      /* the registrar took the descriptor */
  PB_ADD_PY_ERROR,    /* converting the descriptor raised */
  PB_ADD_REFUSED,     /* the registrar returned *status (< 0) */
} pb_add_result;
/* Builds the proto (impl) view of desc and calls the registrar's add_proto
 * (add_impl); the op ctx joins *list when the registrar took it. */
pb_add_result pb_view_add_proto(const pyop_registrar *reg, PyObject *desc, pb_op **list,
                                int *status);
pb_add_result pb_view_add_impl(const pyop_registrar *reg, PyObject *desc, pb_op **list,
                               int *status);
/* Drops one reference of op (freed with its last). */
void pb_op_decref(pb_op *op);
/* Drops the list's reference of each op of list (linked through next). */
void pb_ops_free(pb_op *list);

/* ---- native.c */
/* Creates pyop._native (types included). New reference or NULL (exception). */
PyObject *pb_native_create(void);
#ifdef Py_GIL_DISABLED
/*
 * Tensors and contexts alive (made and not yet deallocated). A free-threaded
 * Python makes the module and its types immortal once a second thread
 * exists, so their weak references never tell whether a plugin kept one of
 * their objects; this count does (pb_package_drop).
 */
extern atomic_long pb_live_objects;
#endif


/* ---- holders.c */
/* _native.registered_proto(op_type) (loader service of ABI 1.2). */
PyObject *pb_registered_proto(PyObject *self, PyObject *op_type);
int pb_cb_create_holder(void *ctx, const pyop_attr_view *attrs, size_t n_attrs,
                        void **out_holder);
void pb_cb_destroy_holder(void *holder);
/*
 * The attribute names of a TensorDesc, interned once for desc_to_tensor
 * (callbacks.c) reading a result that is not exactly a pyop.TensorDesc (a
 * subclass, any object with the three attributes), kept while any holder
 * lives (holders counts them). Holders only live while the package is
 * loaded (unload and shutdown refuse while an op instance lives), so the
 * names never outlive their interpreter. Guarded by the GIL (and
 * holders.c's holders_lock).
 */
typedef struct pb_desc_names_t {
  long holders;
  PyObject *shape, *dtype, *format;
} pb_desc_names_t;
extern pb_desc_names_t pb_desc_names;

/* ---- callbacks.c (the inline part of their hot path: frames.h) */
int pb_cb_infer_meta(void *holder, const pyop_infer_args *args);
int pb_cb_execute(void *holder, const pyop_exec_args *args);
int pb_cb_compile(void *holder, const pyop_compile_args *args);
int pb_cb_declare(void *holder, const pyop_declare_args *args);

#endif /* PYOP_BRIDGE_H */
