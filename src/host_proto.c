/*
 * Host prototypes (pyop_register_host_prototype, pyop.h): the host's
 * pyop_op_info converted into a prototype view, validated like a bridge's
 * and registered at once as a one-op host transaction (registry.h), kept
 * across pyop_unload; an implementation that waited for it is bound then.
 */
#include "registry.h"

#include <stddef.h>
#include <string.h>

/* "host:<op_type>" as the default key of a host prototype. */
static char *host_key(const char *op_type) {
  size_t len = strlen(op_type);
  if (len > PYOP__MAX_KEY_LEN) len = PYOP__MAX_KEY_LEN; /* validation rejects it anyway */
  char *k = pyop__malloc(len + 6);
  if (k) {
    memcpy(k, "host:", 5);
    memcpy(k + 5, op_type, len);
    k[len + 5] = '\0';
  }
  return k;
}

static pyop_str view_of(const char *s) {
  pyop_str v = {s, s ? strlen(s) : 0};
  return v;
}

/*
 * The host's constraint arrays of info as views, in dv (room for n_inputs +
 * n_outputs): each side it gives (struct_size covering it, non-NULL) is
 * converted, the other stays NULL in v.
 */
static void host_dtypes(const pyop_op_info *info, pyop_dtype_set_view *dv, pyop_proto_view *v) {
  const pyop_dtype_set *in = PYOP_OP_INFO_HAS(info, input_dtypes) ? info->input_dtypes : NULL;
  const pyop_dtype_set *out =
      PYOP_OP_INFO_HAS(info, output_dtypes) ? info->output_dtypes : NULL;
  for (size_t i = 0; in && i < info->n_inputs; i++)
    dv[i] = (pyop_dtype_set_view){in[i].mask, view_of(in[i].symbol)};
  for (size_t i = 0; out && i < info->n_outputs; i++)
    dv[info->n_inputs + i] = (pyop_dtype_set_view){out[i].mask, view_of(out[i].symbol)};
  v->input_dtypes = in ? dv : NULL;
  v->output_dtypes = out ? dv + info->n_inputs : NULL;
}

/*
 * Converts the host's description into a prototype view, validates it like
 * a bridge's and registers it at once (a one-op transaction). Kept across
 * pyop_unload.
 */
int pyop_register_host_prototype(const pyop_op_info *info) {
  PYOP__FORK_GUARD();
  if (!info || info->struct_size < offsetof(pyop_op_info, n_attrs) + sizeof info->n_attrs)
    return pyop__error(PYOP_EINVAL, "pyop_register_host_prototype: info is NULL or its "
                                    "struct_size is too small");
  /* Each count is checked on its own, so the message names the one that is
   * wrong (the views below are sized from them). */
  static const char *const count_names[] = {"n_inputs", "n_outputs", "n_attrs"};
  const size_t counts[] = {info->n_inputs, info->n_outputs, info->n_attrs};
  for (size_t i = 0; i < PYOP__ARRAY_LEN(counts); i++)
    if (counts[i] > PYOP__MAX_IOS)
      return pyop__error(PYOP_EDESCRIPTOR,
                         "pyop_register_host_prototype(\"%.256s\"): %s %zu is more "
                         "than the %d allowed",
                         info->op_type ? info->op_type : "(null)", count_names[i],
                         counts[i], PYOP__MAX_IOS);
  size_t n_io = info->n_inputs + info->n_outputs;
  size_t n_at = info->n_attrs;
  pyop_io_view *ios = pyop__calloc(n_io ? n_io : 1, sizeof *ios);
  pyop_attr_view *ats = pyop__calloc(n_at ? n_at : 1, sizeof *ats);
  pyop_dtype_set_view *dts = pyop__calloc(n_io ? n_io : 1, sizeof *dts);
  char *key = info->proto_key || !info->op_type ? NULL : host_key(info->op_type);
  pyop__txn *t = NULL;
  (void)pyop__txn_begin_host(&t);
  int rc = PYOP_OK;
  if (!ios || !ats || !dts || !t || (!info->proto_key && info->op_type && !key)) {
    rc = pyop__error(PYOP_ENOMEM, "pyop_register_host_prototype: out of memory");
    goto out;
  }
  pyop_proto_view v;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.op_type = view_of(info->op_type);
  v.key = view_of(info->proto_key ? info->proto_key : key);
  v.n_inputs = info->n_inputs;
  v.n_outputs = info->n_outputs;
  v.n_attrs = info->n_attrs;
  for (size_t i = 0; i < info->n_inputs && info->inputs; i++) {
    ios[i].struct_size = sizeof ios[i];
    ios[i].name = view_of(info->inputs[i].name);
    ios[i].kind = info->inputs[i].kind;
  }
  for (size_t i = 0; i < info->n_outputs && info->outputs; i++) {
    pyop_io_view *o = &ios[info->n_inputs + i];
    o->struct_size = sizeof *o;
    o->name = view_of(info->outputs[i].name);
    o->kind = info->outputs[i].kind;
  }
  for (size_t i = 0; i < info->n_attrs && info->attrs; i++) {
    ats[i].struct_size = sizeof ats[i];
    ats[i].name = view_of(info->attrs[i].name);
    ats[i].type = info->attrs[i].type;
    ats[i].required = info->attrs[i].required ? 1 : 0;
    ats[i].default_value = info->attrs[i].default_value;
  }
  v.inputs = info->inputs ? ios : NULL;
  v.outputs = info->outputs ? ios + info->n_inputs : NULL;
  v.attrs = info->attrs ? ats : NULL;
  if (PYOP_OP_INFO_HAS(info, input_flags)) v.input_flags = info->input_flags;
  if (PYOP_OP_INFO_HAS(info, output_alias)) v.output_alias = info->output_alias;
  host_dtypes(info, dts, &v);
  rc = pyop__txn_add_proto(t, &v);
  if (rc == PYOP_OK) {
    rc = pyop__txn_commit(t);
    t = NULL;
    if (rc == PYOP_OK) pyop__registry_bind_pending(info->op_type);
  }
out:
  pyop__txn_abort(t);
  pyop__free(key);
  pyop__free(ios);
  pyop__free(ats);
  pyop__free(dts);
  return rc;
}
