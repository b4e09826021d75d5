/*
 * Interpreter lanes inside the bridge (docs/design.md §Lanes): what the
 * three files of the lanes share. lanes.c configures them and matches,
 * places and dispatches descriptors; lane_start.c starts lanes (or takes
 * kept ones up again) and loads their plugins, in parallel, one worker
 * thread per core; lane_pool.c keeps the lanes' sub-interpreters across
 * shutdown for the next load, and ends them when the host finalizes
 * Python. Included after bridge.h, by those files only; everything below
 * exists only where this Python can have lanes (PB_LANES).
 */
#ifndef PYOP_BRIDGE_LANES_H
#define PYOP_BRIDGE_LANES_H

#include "bridge.h"
#include "os.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <stdint.h>

/* set_config flag a bridge sets for the images of its lanes only (libpyop
 * never does): adopt the interpreter attached on the calling thread. */
#define PB_CONFIG_LANE (1u << 31)

/* pb_lanes_test_seam (the PYOP_TEST_LANES words) and the bridge's system
 * calls: os.h. */

#ifdef PB_LANES

/*
 * The extension gate: one per main image, shared by its lanes' images.
 * CPython 3.12 and 3.13 run a single-phase extension module's init
 * function in a sub-interpreter before they refuse the module there, and
 * such an init readies static types that every interpreter of the process
 * shares: two interpreters readying one at once (each under its own GIL)
 * corrupt it (seen: _ctypes's types, one lane freeing the __new__ wrapper
 * the other made, from the wrong interpreter's allocator). So while lanes
 * serve a main image, every extension module made in its lanes or in the
 * main interpreter is made behind the gate (lane_imports.c; pyop/_lanes.py
 * wraps _imp.create_dynamic and create_builtin). The holder is an
 * interpreter, not a thread: its own threads pass (its GIL orders them,
 * and an init that imports another extension re-enters), the other
 * interpreters wait, their GIL released. The thread that took it passes
 * too, from any interpreter: CPython 3.13 runs a single-phase init of a
 * sub-interpreter's import in the main interpreter, so an extension that
 * init imports is made there, on the holder's thread (it waited for
 * itself). owner is the holding interpreter's id + 1, 0 when free; thread
 * the thread that took it; depth counts the entries; pid is the process
 * the state belongs to (a fork's child starts it afresh: the holder may be
 * a thread it does not have).
 */
typedef struct pb_ext_gate {
  pthread_mutex_t mu;
  pthread_cond_t freed;
  int64_t owner;
  uint64_t depth;
  _Atomic pid_t pid;
  pthread_t thread;
} pb_ext_gate;

/* The main image's gate (lane_imports.c). */
extern pb_ext_gate pb_ext_gate_main;

/* What the main image hands its lanes' images as their loader services:
 * the services, then the gate (struct_size covers both). A lane image
 * takes the gate only with PB_CONFIG_LANE (which libpyop never sets). */
typedef struct pb_lane_services {
  pyop_loader_services base;
  pb_ext_gate *gate;
} pb_lane_services;

/* A lane image's: the gate its main image shares, from set_config. */
void pb_lane_imports_gate(pb_ext_gate *gate);
/* The main image's, before its lanes' first load (main GIL held): the main
 * interpreter's extension modules behind the gate too, until the package's
 * drop. PYOP_OK or a status (error reported). */
int pb_lane_imports_gate_main(void);

/* One descriptor a lane yielded (deep copy of what identifies it). */
typedef struct lane_desc {
  bool impl;
  bool matched; /* a main-interpreter descriptor is the same */
  uint32_t caps;
  size_t element; /* the index of the load's path it came from */
  /* digest: what the lane's load of that path compiled (its code_digest,
   * views.c's lane_digest) */
  char *op_type, *key, *digest;
  void *ctx;
  const pyop_op_callbacks *cb;
} lane_desc;

/*
 * One lane: a sub-interpreter with its own GIL, and the image of the bridge
 * that serves it for the loads of the main image that holds it.
 *
 * interp, interp_id, ts0 and ts0_thread are the interpreter's and outlive
 * images (lane_pool.c keeps them across shutdown). ts0 is the state the
 * interpreter was made with (threading's main thread), detached, made on
 * ts0_thread; it ends the interpreter (lane_pool.c, pb_lane_end). interp
 * NULL: no interpreter yet.
 *
 * fd, handle and api are the image's: fd -1 and handle NULL when there is
 * none; api non-NULL while the image is configured for this main image's
 * loads (a kept image, shut down, has api NULL and stays mapped until the
 * lane is taken up again: lane_pool.c runs code of one at exit).
 */
typedef struct pb_lane {
  uint32_t index; /* 1..n_lanes */
  PyInterpreterState *interp;
  int64_t interp_id;
  PyThreadState *ts0;
  pthread_t ts0_thread;
  int fd;       /* the image's memfd */
  void *handle; /* the image */
  const pyop_bridge_api *api;
  lane_desc *descs;
  size_t n_descs, cap_descs;
  char **serial_why; /* per path element of the load: why it stays serial, or NULL */
  size_t element;    /* the path element its image loads now (collect) */
} pb_lane;

/* ---- lanes.c */
/* (pb_lane_own_file and pb_lane_image_copy: os.h, lane_files.c.) */
/* Lanes cannot start in this process (no /proc, memfd_create refused, the
 * bridge's file replaced): every descriptor serial with that reason, one
 * warning, no error recorded; PYOP_EUNSUPPORTED. The loading thread. */
int pb_lanes_unavailable(const char *fmt, ...) PB_PRINTF(1, 2);
/* The collecting registrar's entries (ctx: the pb_lane). */
int pb_lane_collect_proto(void *ctx, const pyop_proto_view *v);
int pb_lane_collect_impl(void *ctx, const pyop_impl_view *v);


/* ---- lane_start.c */
/*
 * Runs the lanes' part of a load on worker threads (one per core, at most
 * one per lane; the caller waits, main GIL released, no thread state
 * attached): for each lane of lanes[0..n), when start, its interpreter
 * made (or, a kept one, its new image configured: pb_lane.interp set),
 * then every element of paths loaded into it (serial_why[i] set for an
 * element the lane refused with ImportError). Errors and log lines of the
 * workers are handed to this thread: the log lines in lane order, then the
 * error of the lowest lane that failed (reported; its status returned). A
 * worker never calls a host hook. *started_all: every lane has a
 * configured image (api set) when this returns. PYOP_EUNSUPPORTED, no
 * error recorded, when that lane's image cannot be made in this process
 * (pb_lane_jobs_unavailable says why).
 */
int pb_lane_jobs_run(pb_lane *lanes, uint32_t n, bool start, int src, const pyop_str *paths,
                     char *const *path_names, size_t n_paths, bool *started_all);
/* Why the last pb_lane_jobs_run answered PYOP_EUNSUPPORTED. */
const char *pb_lane_jobs_unavailable(void);
/* Closes l's image (dlclose, close), if any: at once, or on a worker of
 * pb_lane_jobs_run once every worker is done (it forgets it at once); no GIL
 * needed. */
void pb_lane_image_close(pb_lane *l);

/* ---- lane_pool.c */
/*
 * Takes the lanes a previous main image kept (lane_pool.c; main GIL held):
 * up to max of them into out[0..) in their lane order (interp, interp_id,
 * ts0, ts0_thread and their image, shut down, in fd/handle; api NULL),
 * removed from the pool and their exit hook unregistered. Kept lanes whose
 * interpreter no longer exists, or that another process kept (a fork's
 * parent), are dropped. Returns how many; 0 without a pool.
 */
uint32_t pb_lane_pool_take(pb_lane *out, uint32_t max);
/*
 * Keeps lanes[0..n) (their images shut down: api NULL) for the next main
 * image's loads, and registers in the main interpreter's atexit a hook
 * that ends them when the host finalizes Python (its code in one of their
 * images, which therefore stays mapped). Main GIL held. PYOP_OK, or a
 * status (logged) when they cannot be kept: the caller ends them.
 */
int pb_lane_pool_put(const pb_lane *lanes, uint32_t n);
/* Ends l's sub-interpreter (after every state of its image is gone; no
 * thread state attached; waits for its non-daemon Python threads, as
 * Py_EndInterpreter does). */
void pb_lane_end(PyInterpreterState *interp, PyThreadState *ts0, pthread_t ts0_thread);

#endif /* PB_LANES */
#endif /* PYOP_BRIDGE_LANES_H */
