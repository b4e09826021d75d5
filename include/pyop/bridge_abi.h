/*
 * The C ABI between libpyop (the loader) and a bridge shared object
 * (libpyop_bridge.so, one build per Python). Plain C and PODs only.
 *
 * Rules (see docs/bridge-abi.md):
 * - The bridge exports exactly one symbol, PYOP_BRIDGE_ENTRY_SYMBOL, of type
 *   pyop_bridge_entry_fn. The loader passes the highest ABI it speaks; the
 *   bridge answers with the version it will use, or refuses. Same major is
 *   required; a lower minor on either side means the newer side keeps to the
 *   older one's members.
 * - Every struct that crosses starts with struct_size. Structs only grow at
 *   the end and never end in padding (pyop.h, "Versioned structs"); a
 *   reader checks that struct_size holds a member whole before it reads it,
 *   then NULL, then calls.
 * - Strings cross as pyop_str views (pointer, length), not NUL-terminated,
 *   and the receiver deep-copies what it keeps. A view with len > 0 and a NULL
 *   pointer, an embedded NUL, or an empty required string is rejected.
 * - Descriptor views are borrowed only for the duration of the call.
 * - The loader never calls the bridge while holding one of its locks, and
 *   callbacks into the loader (registrar, services) never call the bridge.
 * - The callbacks of one call (the registrar of register_custom_ops, the
 *   exec services and the infer/compile/declare sinks) are valid only during
 *   that call and on its thread; a call after it returned or from another
 *   thread gets PYOP_ESTATE (docs/bridge-abi.md, "The registrar").
 *   pyop_loader_services stay valid until shutdown(), on any thread.
 */
#ifndef PYOP_BRIDGE_ABI_H
#define PYOP_BRIDGE_ABI_H

#include "pyop.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PYOP_BRIDGE_ABI_MAJOR 1
#define PYOP_BRIDGE_ABI_MINOR 7
#define PYOP_BRIDGE_ENTRY_SYMBOL "pyop_bridge_entry"

/* ---------------------------------------------------- descriptor views */

typedef struct pyop_io_view {
  size_t struct_size;
  pyop_str name;
  int32_t kind; /* pyop_io_kind */
#if UINTPTR_MAX > 0xffffffffu
  /* Not read: fills what would be trailing padding (pyop.h, "Versioned
   * structs"); a member added later goes after it. */
  int32_t reserved_;
#endif
} pyop_io_view;

typedef struct pyop_attr_view {
  size_t struct_size;
  pyop_str name;
  int32_t type;     /* pyop_attr_type */
  int32_t required; /* 1: no default; 0: default_value holds the default */
  pyop_attr_value default_value;
} pyop_attr_view;

/*
 * ABI 1.7: the data types one input or output accepts, as pyop_dtype_set
 * (pyop.h) says, with the symbol as a view (empty: none). A plain value
 * (no struct_size): it never grows; a later member would be a new array.
 */
typedef struct pyop_dtype_set_view {
  uint64_t mask;
  pyop_str symbol;
} pyop_dtype_set_view;

typedef struct pyop_op_callbacks pyop_op_callbacks;

/*
 * A prototype: the op's signature. When caps has PYOP_CAP_INFER_META,
 * callbacks->create_holder/destroy_holder/infer_meta are used with ctx.
 * ctx and callbacks are owned by the bridge and stay valid until the bridge's
 * reset() or shutdown().
 *
 * ABI 1.0 views (struct_size up to callbacks) have at least one output, and
 * every output is REQUIRED. ABI 1.1 views (struct_size covering
 * output_alias) may have no output, DYNAMIC outputs (a list whose length
 * infer_meta or execute decide), mutated inputs and aliasing outputs, and
 * attributes of type PYOP_ATTR_TENSOR (required, no default).
 */
typedef struct pyop_proto_view {
  size_t struct_size;
  pyop_str op_type;
  pyop_str key;         /* descriptor key, e.g. "pyop:plugin_a.scaled_add" */
  pyop_str source_file; /* Python file of the definition */
  uint32_t source_line;
  uint32_t caps;        /* subset of PYOP_CAP_INFER_META */
  const pyop_io_view *inputs;
  size_t n_inputs;
  const pyop_io_view *outputs;
  size_t n_outputs;
  const pyop_attr_view *attrs;
  size_t n_attrs;
  void *ctx;
  const pyop_op_callbacks *callbacks;
  /* ---- ABI 1.1 */
  /* n_inputs entries of PYOP_INPUT_* bits, or NULL: no input is mutated. */
  const uint32_t *input_flags;
  /*
   * n_outputs entries: the input output i aliases (a REQUIRED output
   * aliasing a REQUIRED, mutated input), or -1; NULL: no alias.
   */
  const int32_t *output_alias;
  /* ---- ABI 1.3 */
  /* The identity of source_file's content (e.g. "sha256:" and the hex
   * digest of its bytes), or empty: unknown. Opaque to libpyop, which
   * compares it byte for byte (docs/bridge-abi.md, "Source digests"). */
  pyop_str source_digest;
  /* ---- ABI 1.6 (interpreter lanes, docs/bridge-abi.md "Lanes") */
  /*
   * Why the descriptor runs only in the main interpreter although lanes
   * were configured, or empty: it runs in every lane (lanes > 0), or no
   * lanes were asked for.
   */
  pyop_str serial_reason;
  /* The configured lane count when the descriptor's plugin yielded it in
   * every lane (create_holder_in then places holders there), else 0. */
  uint32_t lanes;
#if UINTPTR_MAX > 0xffffffffu
  uint32_t reserved_; /* Not read: fills what would be trailing padding. */
#endif
  /* ---- ABI 1.7 (data type constraints, docs/bridge-abi.md "ABI 1.7") */
  /* n_inputs / n_outputs entries, or NULL: that side is unconstrained. */
  const pyop_dtype_set_view *input_dtypes;
  const pyop_dtype_set_view *output_dtypes;
} pyop_proto_view;

/*
 * An implementation of op_type. caps is a non-empty subset of
 * PYOP_CAP_EXECUTE | PYOP_CAP_COMPILE | PYOP_CAP_LAUNCH; the matching
 * callbacks must be non-NULL (and only those).
 */
typedef struct pyop_impl_view {
  size_t struct_size;
  pyop_str op_type;
  pyop_str key;
  pyop_str source_file;
  uint32_t source_line;
  uint32_t caps;
  void *ctx;
  const pyop_op_callbacks *callbacks;
  /* ---- ABI 1.3 */
  pyop_str source_digest; /* as in pyop_proto_view */
  /* ---- ABI 1.6: as in pyop_proto_view */
  pyop_str serial_reason;
  uint32_t lanes;
#if UINTPTR_MAX > 0xffffffffu
  uint32_t reserved_; /* Not read: fills what would be trailing padding. */
#endif
} pyop_impl_view;

/* ------------------------------------------------------ call arguments */

typedef struct pyop_infer_args {
  size_t struct_size;
  const pyop_tensor_list *inputs; /* one slot per prototype input */
  size_t n_inputs;
  /* filled by the callee, one per prototype output (a DYNAMIC output's
   * entry is not used: its tensors go through add_output) */
  pyop_tensor *outputs;
  size_t n_outputs;
  /* ---- ABI 1.1 */
  void *sink_ctx;
  /* Appends one description to DYNAMIC output `index` (copied). */
  int (*add_output)(void *sink_ctx, size_t index, const pyop_tensor *desc);
} pyop_infer_args;

/*
 * Output/workspace allocation the bridge calls from inside execute; they
 * route to the host's pyop_exec_ctx (libpyop checks index, sizes, shapes).
 */
typedef struct pyop_exec_services {
  size_t struct_size;
  void *ctx;
  /* t: dtype/format/ndim/shape set; on success t->data and t->nbytes set.
   * For a DYNAMIC output (ABI 1.1) each call appends the next tensor. */
  int (*alloc_output)(void *ctx, size_t index, pyop_tensor *t);
  int (*alloc_workspace)(void *ctx, uint64_t nbytes, void **out);
  /* ---- ABI 1.1 */
  /* Makes output `index` the buffer of input slot `input` (a declared
   * alias); on success *t is that input's tensor. */
  int (*alias_output)(void *ctx, size_t index, size_t input, pyop_tensor *t);
} pyop_exec_services;

typedef struct pyop_exec_args {
  size_t struct_size;
  const pyop_tensor_list *inputs;
  size_t n_inputs;
  size_t n_outputs;
  const pyop_exec_services *services;
  void *stream;
  /* ---- ABI 1.1 */
  /* n_inputs entries of PYOP_INPUT_* bits, or NULL: hand an input with
   * PYOP_INPUT_MUTATED writable, every other one read-only. */
  const uint32_t *input_flags;
} pyop_exec_args;

typedef struct pyop_compile_args {
  size_t struct_size;
  const pyop_tensor_list *inputs; /* descriptions */
  size_t n_inputs;
  const pyop_tensor *outputs; /* descriptions */
  size_t n_outputs;
  void *sink_ctx;
  /* Stores the compiled artefact (copied by the loader). */
  int (*set_artifact)(void *sink_ctx, const void *data, size_t len);
} pyop_compile_args;

/* One argument of a kernel launch. */
typedef enum pyop_launch_arg_kind {
  PYOP_LAUNCH_ARG_INPUT = 1,     /* data pointer of input `index` (flattened slots) */
  PYOP_LAUNCH_ARG_OUTPUT = 2,    /* data pointer of output `index` */
  PYOP_LAUNCH_ARG_WORKSPACE = 3, /* pointer to workspace `index` */
  PYOP_LAUNCH_ARG_SCALAR = 4,    /* a typed scalar value */
  PYOP_LAUNCH_ARG_STREAM = 5     /* the exec context's stream pointer */
} pyop_launch_arg_kind;

typedef enum pyop_scalar_type {
  PYOP_SCALAR_INT8 = 1,
  PYOP_SCALAR_INT16,
  PYOP_SCALAR_INT32,
  PYOP_SCALAR_INT64,
  PYOP_SCALAR_UINT8,
  PYOP_SCALAR_UINT16,
  PYOP_SCALAR_UINT32,
  PYOP_SCALAR_UINT64,
  PYOP_SCALAR_FLOAT,
  PYOP_SCALAR_DOUBLE,
  PYOP_SCALAR_BOOL,
  PYOP_SCALAR_POINTER
} pyop_scalar_type;

typedef struct pyop_launch_arg_view {
  size_t struct_size;
  int32_t kind;        /* pyop_launch_arg_kind */
  int32_t scalar_type; /* pyop_scalar_type, for SCALAR */
  uint32_t index;      /* for INPUT, OUTPUT, WORKSPACE */
  union {
    int64_t i;
    uint64_t u;
    double f;
    uintptr_t p;
  } value;
} pyop_launch_arg_view;

typedef struct pyop_launch_view {
  size_t struct_size;
  pyop_str library; /* path of the kernel shared library */
  pyop_str symbol;  /* kernel function name */
  const pyop_launch_arg_view *args;
  size_t n_args;
} pyop_launch_view;

typedef struct pyop_declare_args {
  size_t struct_size;
  const pyop_tensor_list *inputs; /* descriptions */
  size_t n_inputs;
  const pyop_tensor *outputs; /* descriptions */
  size_t n_outputs;
  void *sink_ctx;
  /* Appends one launch to the plan (validated and copied by the loader). */
  int (*add_launch)(void *sink_ctx, const pyop_launch_view *launch);
  /* Declares workspace `index` = the next one, of nbytes bytes. */
  int (*add_workspace)(void *sink_ctx, uint64_t nbytes);
} pyop_declare_args;

/*
 * Callbacks of an op, shared by prototypes and implementations. Each returns
 * PYOP_OK or a negative status after calling services->set_error().
 * holder: per-instance state made by create_holder from the resolved
 * attributes (every prototype attribute, in prototype order, defaults
 * applied). A PYOP_ATTR_TENSOR value points to a copy libpyop owns, valid
 * (and unchanged) until destroy_holder.
 */
struct pyop_op_callbacks {
  size_t struct_size;
  int (*create_holder)(void *ctx, const pyop_attr_view *attrs, size_t n_attrs,
                       void **out_holder);
  void (*destroy_holder)(void *holder);
  int (*infer_meta)(void *holder, const pyop_infer_args *args);
  int (*execute)(void *holder, const pyop_exec_args *args);
  int (*compile)(void *holder, const pyop_compile_args *args);
  int (*declare_launch_args)(void *holder, const pyop_declare_args *args);
  /* ---- ABI 1.6 */
  /*
   * create_holder in lane `lane` (1..the view's lanes; 0: the main
   * interpreter, as create_holder): every later call on the holder runs in
   * that lane. Required (non-NULL, struct_size covering it) when the view's
   * lanes > 0.
   */
  int (*create_holder_in)(void *ctx, const pyop_attr_view *attrs, size_t n_attrs,
                          uint32_t lane, void **out_holder);
};

/* ------------------------------------------------- loader <-> bridge */

/* What the loader offers the bridge. Valid until the bridge's shutdown(). */
typedef struct pyop_loader_services {
  size_t struct_size;
  /* Records the calling thread's failure detail (copied). For a failed op
   * callback it is the whole message: it names the callback and the op, and
   * libpyop adds nothing to it (docs/bridge-abi.md, "Evolving the ABI"). */
  void (*set_error)(int status, pyop_str message);
  /* A log line at pyop_log_level (copied). */
  void (*log)(int level, pyop_str message);
  /* ---- ABI 1.2 */
  /*
   * The prototype libpyop has registered for op_type (one the host gave
   * with pyop_register_host_prototype, or one of an earlier load), as
   * pyop_op_get describes it: *out is a reference the bridge gives back
   * with release_proto (it stays valid until then). PYOP_ENOENT (and *out
   * NULL, no error recorded) when there is none. Takes no libpyop lock
   * across the call and never calls the bridge: callable from
   * register_custom_ops and from any callback.
   */
  int (*find_proto)(pyop_str op_type, const pyop_op_info **out);
  void (*release_proto)(const pyop_op_info *info);
  /* ---- ABI 1.4 */
  /*
   * Why the service of the loader's that this thread called last failed
   * (an exec service, a sink of infer/compile/declare, the registrar):
   * libpyop's message as pyop_last_error() gives it, saying what it refused
   * and why or how the host's callback failed. The view (NUL-terminated
   * too) stays valid until this thread's next call into the loader; empty
   * when nothing failed. For the exception the op sees.
   */
  pyop_str (*last_error)(void);
} pyop_loader_services;

/*
 * Receives the descriptors of one load (a transaction). Valid only during
 * the register_custom_ops call it is passed to, and only on the thread that
 * call runs on: a call after that call returned, or from another thread,
 * returns PYOP_ESTATE and changes nothing (from another thread during the
 * call it also fails the whole load). See docs/bridge-abi.md, "The
 * registrar".
 */
typedef struct pyop_registrar {
  size_t struct_size;
  void *ctx;
  int (*add_proto)(void *ctx, const pyop_proto_view *proto);
  int (*add_impl)(void *ctx, const pyop_impl_view *impl);
} pyop_registrar;

#define PYOP_BRIDGE_START_PYTHON (1u << 0)
/* pyop_bridge_config.flags bit 31 is a bridge's own (it configures the
 * images of its interpreter lanes with it: docs/bridge-abi.md, "ABI 1.6");
 * libpyop never sets it. */

typedef struct pyop_bridge_config {
  size_t struct_size;
  pyop_str artifact_dir; /* directory the bridge was loaded from */
  pyop_str manifest_libpython; /* libpython recorded at build (for start-up) */
  uint32_t flags;        /* PYOP_BRIDGE_START_PYTHON */
#if UINTPTR_MAX > 0xffffffffu
  /* Not read: fills what would be trailing padding (pyop.h, "Versioned
   * structs"). */
  uint32_t reserved_;
#endif
  /* ---- ABI 1.6 */
  /* pyop_options.lanes (0..PYOP_MAX_LANES): interpreter lanes to start at
   * the first register_custom_ops; 0: none. A bridge that cannot run lanes
   * accepts the config, logs why and hands out views with lanes 0. */
  uint32_t lanes;
#if UINTPTR_MAX > 0xffffffffu
  uint32_t reserved_lanes_; /* Not read: fills what would be trailing padding. */
#endif
} pyop_bridge_config;

typedef struct pyop_bridge_api {
  size_t struct_size;
  uint32_t abi_major; /* what the bridge will use */
  uint32_t abi_minor;
  pyop_str build_info; /* free text: compiler, Python headers version */
  /* Applies configuration; may start Python when asked to. */
  int (*set_config)(const pyop_bridge_config *config);
  /*
   * Imports the plugins found in paths (each an ASCEND_CUSTOM_OPP_PATH
   * element, absolute) and hands their descriptors to registrar, on this
   * thread and before returning (registrar is dead afterwards). On failure
   * the bridge keeps no plugin state of this call.
   */
  int (*register_custom_ops)(const pyop_registrar *registrar,
                             const pyop_str *paths, size_t n_paths);
  /* Drops every plugin module and the ctx of every descriptor it handed out. */
  void (*reset)(void);
  /* Last call before dlclose: releases everything. A Python it started stays
   * initialised and idle (never finalized; the next bridge uses it). */
  void (*shutdown)(void);
  /* ---- ABI 1.5 */
  /*
   * PYOP_OK while the interpreter the bridge's objects belong to (the one
   * set_config found or started) still runs; PYOP_ENOTINIT once it was
   * finalized, even when the host has initialised a new one since, and
   * while no Python is initialised. Cheap: takes no GIL, runs no Python,
   * records no error. Callable from any thread between set_config and
   * shutdown. NULL (or an older minor): the loader cannot tell.
   */
  int (*interpreter_status)(void);
} pyop_bridge_api;

/* The members of pyop_bridge_api a loader requires non-NULL (all of ABI
 * 1.0), X(member), in table order: libpyop refuses a bridge whose table
 * leaves one NULL, naming the first. */
#define PYOP_BRIDGE_API_REQUIRED(X) X(set_config) X(register_custom_ops) X(reset) X(shutdown)

typedef struct pyop_bridge_request {
  size_t struct_size;
  uint32_t abi_major; /* highest the loader speaks */
  uint32_t abi_minor;
  const pyop_loader_services *services;
} pyop_bridge_request;

/*
 * The one exported function. Returns PYOP_OK and sets *out_api, or PYOP_EABI
 * when it cannot speak request->abi_major.
 */
typedef int (*pyop_bridge_entry_fn)(const pyop_bridge_request *request,
                                    const pyop_bridge_api **out_api);

#ifdef __cplusplus
}
#endif

#endif /* PYOP_BRIDGE_ABI_H */
