/*
 * Loading bridges: every candidate status reached by a real fake-bridge
 * variant (tests/fake_bridge), the one message listing every candidate,
 * the services table, and fault injection over find + load.
 */
#define PYOP__STR(x) #x
#define PYOP__XSTR(x) PYOP__STR(x)
#include "testutil.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fake_bridge/fake_bridge_util.h"
#include "bridge_loader.h"
#include "build_facts.h"

static pyop__runtime_key key;

/* Finds the candidates of root and loads; returns the load status. */
static int find_and_load(const char *root, pyop__candidates *c, pyop__bridge *b) {
  pyop__artifacts_set_root(root);
  assert_int_equal(pyop__candidates_find(&key, c), PYOP_OK);
  return pyop__bridge_load(c, 0, 0, b);
}

static const pyop__candidate *cand(const pyop__candidates *c, const char *root,
                                   const char *name) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/%s", root, name);
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->items[i].dir, dir) == 0) return &c->items[i];
  fail_msg("no candidate %s", dir);
  return NULL;
}

/* ------------------------------------------------ a recording registrar */

typedef struct rec {
  char types[64][64];
  size_t n_protos, n_impls;
  pyop_proto_view first_proto; /* shallow: valid until the bridge resets */
  pyop_impl_view first_impl;
  pyop_io_view first_inputs[4];
  const char *first_input_names[4];
} rec;

static int rec_proto(void *ctx, const pyop_proto_view *p) {
  rec *r = ctx;
  if (r->n_protos == 0) {
    r->first_proto = *p;
    for (size_t i = 0; i < p->n_inputs && i < 4; i++) r->first_inputs[i] = p->inputs[i];
  }
  if (r->n_protos < 64)
    snprintf(r->types[r->n_protos], sizeof r->types[0], "%.*s",
             p->op_type.data ? (int)p->op_type.len : 0,
             p->op_type.data ? p->op_type.data : "");
  r->n_protos++;
  return PYOP_OK;
}

static int rec_impl(void *ctx, const pyop_impl_view *im) {
  rec *r = ctx;
  if (r->n_impls == 0) r->first_impl = *im;
  r->n_impls++;
  return PYOP_OK;
}

static int run_register(const pyop__bridge *b, rec *r) {
  memset(r, 0, sizeof *r);
  pyop_registrar reg = {sizeof reg, r, rec_proto, rec_impl};
  pyop__error_clear();
  return b->api->register_custom_ops(&reg, NULL, 0);
}

/* --------------------------------------------------------------- tests */

static float out_buf[4];
static int alloc_out(void *ctx, size_t index, pyop_tensor *t) {
  (void)ctx;
  assert_int_equal(index, 0);
  assert_int_equal(t->nbytes, sizeof out_buf);
  t->data = out_buf;
  return PYOP_OK;
}

static void test_load_good_and_run_fake_op(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  fb_link(root, "good", "GOOD");
  pyop__candidates c;
  pyop__bridge b;
  assert_int_equal(find_and_load(root, &c, &b), PYOP_OK);
  assert_int_equal(c.items[0].status, PYOP__CAND_LOADED);
  assert_null(c.items[0].reason);
  char *vdir = fb_variant("GOOD");
  char *real = fb_real(vdir);
  char *so = fb_join(real, "libpyop_bridge.so");
  assert_string_equal(b.dir, real);
  assert_string_equal(b.path, so);
  assert_string_equal(c.items[0].bridge_path, so);
  assert_int_equal(b.abi_major, PYOP_BRIDGE_ABI_MAJOR);
  assert_int_equal(b.abi_minor, PYOP_BRIDGE_ABI_MINOR);
  assert_string_equal(b.api->build_info.data, "fake bridge GOOD");

  rec r;
  assert_int_equal(run_register(&b, &r), PYOP_OK);
  assert_int_equal(r.n_protos, 2);
  assert_int_equal(r.n_impls, 1);
  assert_string_equal(r.types[0], "FakeAdd");
  assert_string_equal(r.types[1], "FakeIdentity");

  /* The fake op works without Python: holder, infer_meta, execute. */
  const pyop_op_callbacks *pcb = r.first_proto.callbacks;
  const pyop_op_callbacks *icb = r.first_impl.callbacks;
  assert_non_null(pcb->infer_meta);
  assert_null(pcb->execute);
  assert_non_null(icb->execute);
  assert_null(icb->infer_meta);
  pyop_attr_view alpha;
  memset(&alpha, 0, sizeof alpha);
  alpha.struct_size = sizeof alpha;
  alpha.name.data = "alpha";
  alpha.name.len = 5;
  alpha.type = PYOP_ATTR_FLOAT;
  alpha.default_value.type = PYOP_ATTR_FLOAT;
  alpha.default_value.u.f = 1.0;
  void *holder = NULL;
  assert_int_equal(icb->create_holder(r.first_impl.ctx, &alpha, 1, &holder), PYOP_OK);
  float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
  pyop_tensor tx = {x, PYOP_DTYPE_FLOAT32, PYOP_FORMAT_ND, 2, 0, {2, 2}, sizeof x};
  pyop_tensor ty = tx;
  ty.data = y;
  pyop_tensor_list ins[2] = {{&tx, 1}, {&ty, 1}};
  pyop_tensor desc;
  pyop_infer_args ia = {sizeof ia, ins, 2, &desc, 1};
  assert_int_equal(pcb->infer_meta(holder, &ia), PYOP_OK);
  assert_int_equal(desc.ndim, 2);
  assert_int_equal(desc.shape[1], 2);
  assert_null(desc.data);
  pyop_exec_services svc = {sizeof svc, NULL, alloc_out, NULL};
  pyop_exec_args ea = {sizeof ea, ins, 2, 1, &svc, NULL};
  assert_int_equal(icb->execute(holder, &ea), PYOP_OK);
  assert_true(out_buf[0] == 11 && out_buf[3] == 44);
  icb->destroy_holder(holder);

  b.api->reset();
  pyop__bridge_close(&b);
  assert_null(b.handle);
  assert_null(b.api);
  pyop__bridge_close(&b); /* closing a zeroed bridge is harmless */
  pyop__candidates_free(&c);
  free(so);
  free(real);
  free(vdir);
  fb_rmtree(root);
  free(root);
}

/* Lanes need bridge ABI 1.6: a bridge of 1.5 (the last minor before) or
 * older gives the load a serial reason, 1.6 and later none; without lanes
 * asked for there is never one. */
static void test_serial_reason_minor_edge(void **state) {
  (void)state;
  pyop__bridge b;
  memset(&b, 0, sizeof b);
  b.abi_major = 1;
  for (uint32_t minor = 0; minor <= 8; minor++) {
    b.abi_minor = minor;
    const char *with = pyop__bridge_serial_reason(&b, 2);
    if (minor <= 5) {
      if (!strstr(with, "1.5 or older") || !strstr(with, "lanes need 1.6"))
        fail_msg("minor %u: serial reason \"%s\"", minor, with);
    } else if (with[0]) {
      fail_msg("minor %u: a bridge able to run lanes given a serial reason \"%s\"", minor,
               with);
    }
    assert_string_equal(pyop__bridge_serial_reason(&b, 0), "");
  }
  b.abi_minor = 5;
  assert_true(pyop__bridge_serial_reason(&b, 1)[0] != '\0'); /* one lane is lanes */
}

/* Every variant meant for the registry tests is a valid bridge, and hands
 * out the defect it is named after. */
static void test_registry_variants_load(void **state) {
  (void)state;
  static const char *const names[] = {
      "NEWER_MINOR",        "REGISTER_FAIL_HALFWAY", "CONFLICT_A",
      "CONFLICT_B",         "BAD_VIEW_NULL_DATA",    "BAD_VIEW_EMBEDDED_NUL",
      "BAD_VIEW_EMPTY_OP_TYPE", "BAD_VIEW_DUP_INPUT", "BAD_VIEW_UNKNOWN_KIND",
      "MANY_OPS",           "OLD_MINOR"};
  setenv("PYOP_FAKE_NOPS", "12", 1);
  for (size_t i = 0; i < PYOP__ARRAY_LEN(names); i++) {
    char *root = pt_mkdtemp();
    fb_link(root, names[i], names[i]);
    pyop__candidates c;
    pyop__bridge b;
    if (find_and_load(root, &c, &b) != PYOP_OK) fail_msg("%s: %s", names[i], pyop_last_error());
    rec r;
    int rc = run_register(&b, &r);
    const pyop_proto_view *p = &r.first_proto;
    if (strcmp(names[i], "NEWER_MINOR") == 0) {
      /* The bridge said one more than this libpyop speaks: the loader keeps
       * its own (dataflow pass, session 13: the fake answered 7, which
       * became this libpyop's own minor, so the bridge's was taken
       * unnoticed). */
      assert_int_equal(b.abi_minor, PYOP_BRIDGE_ABI_MINOR);
      assert_int_equal(b.api->abi_minor, PYOP_BRIDGE_ABI_MINOR + 1);
      assert_int_equal(rc, PYOP_OK);
    } else if (strcmp(names[i], "OLD_MINOR") == 0) {
      assert_int_equal(b.abi_minor, 0); /* the older side's minor */
      assert_int_equal(rc, PYOP_OK);
      assert_int_equal(p->struct_size, offsetof(pyop_proto_view, input_flags));
      /* Its table is ABI 1.0's, the smallest taken (both-sides pass,
       * session 14: the bound's inside, beside SHORT_SIZE's outside); no
       * member past it is asked. */
      assert_int_equal(b.api->struct_size, PYOP_MEMBER_END(pyop_bridge_api, shutdown));
      assert_false(pyop__bridge_interpreter_lost(&b));
    } else if (strcmp(names[i], "REGISTER_FAIL_HALFWAY") == 0) {
      assert_int_equal(rc, PYOP_EPYTHON);
      assert_int_equal(r.n_protos, 2);
      assert_string_equal(pyop_last_error(),
                          "fake bridge REGISTER_FAIL_HALFWAY: plugin raised "
                          "after two prototypes");
    } else if (strncmp(names[i], "CONFLICT_", 9) == 0) {
      assert_string_equal(r.types[0], "FakeConflict");
      assert_int_equal(p->n_inputs, names[i][9] == 'A' ? 2 : 1);
    } else if (strcmp(names[i], "BAD_VIEW_NULL_DATA") == 0) {
      assert_null(p->op_type.data);
      assert_true(p->op_type.len > 0);
    } else if (strcmp(names[i], "BAD_VIEW_EMBEDDED_NUL") == 0) {
      assert_non_null(memchr(p->op_type.data, '\0', p->op_type.len));
    } else if (strcmp(names[i], "BAD_VIEW_EMPTY_OP_TYPE") == 0) {
      assert_int_equal(p->op_type.len, 0);
    } else if (strcmp(names[i], "BAD_VIEW_DUP_INPUT") == 0) {
      assert_int_equal(p->n_inputs, 2);
      assert_memory_equal(r.first_inputs[0].name.data, r.first_inputs[1].name.data, 1);
    } else if (strcmp(names[i], "BAD_VIEW_UNKNOWN_KIND") == 0) {
      assert_int_equal(r.first_inputs[1].kind, 99);
    } else if (strcmp(names[i], "MANY_OPS") == 0) {
      assert_int_equal(rc, PYOP_OK);
      assert_int_equal(r.n_protos, 12);
      assert_string_equal(r.types[11], "FakeMany00011");
    }
    pyop__bridge_close(&b);
    pyop__candidates_free(&c);
    fb_rmtree(root);
    free(root);
  }
  unsetenv("PYOP_FAKE_NOPS");
}

/*
 * One root reaching every failing status; the error lists them all:
 *   a_bad_manifest  manifest invalid      i_short_size     ABI rejected
 *   b_config_fail   config rejected       j_unresolved     open failed
 *   c_dup           duplicate (of b)      k_world_writable unsafe
 *   d_escape        manifest invalid      l_wrong_major    ABI rejected
 *   e_mismatch      manifest mismatch     m_no_manifest    invalid path
 *   f_no_entry      missing symbol        n_no_bridge      invalid path
 *   g_null_fn       ABI rejected          o_outside        invalid path
 *   h_refuse        ABI rejected
 */
static void test_every_failure_listed(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  fb_link(root, "a_bad_manifest", "BAD_MANIFEST");
  fb_link(root, "b_config_fail", "CONFIG_FAIL");
  fb_link(root, "c_dup", "CONFIG_FAIL");
  fb_link(root, "d_escape", "ESCAPE");
  fb_link(root, "e_mismatch", "MISMATCH"); /* aborts if ever dlopened */
  fb_link(root, "f_no_entry", "NO_ENTRY");
  fb_link(root, "g_null_fn", "NULL_FN");
  fb_link(root, "h_refuse", "REFUSE");
  fb_link(root, "i_short_size", "SHORT_SIZE");
  fb_link(root, "j_unresolved", "UNRESOLVED");
  fb_link(root, "k_world_writable", "WORLD_WRITABLE");
  fb_link(root, "l_wrong_major", "WRONG_MAJOR");
  char *m = fb_join(root, "m_no_manifest");
  assert_int_equal(mkdir(m, 0755), 0);
  /* A matching manifest whose bridge file does not exist. */
  char *n = fb_make_artifact(root, "n_no_bridge", "GOOD", NULL);
  char *n_so = fb_join(n, "libpyop_bridge.so");
  assert_int_equal(unlink(n_so), 0);
  /* A bridge that is a symlink out of its artifact directory. */
  char *o = fb_make_artifact(root, "o_outside", "GOOD", NULL);
  char *o_so = fb_join(o, "libpyop_bridge.so");
  char *good_so = fb_join(FB_DIR "/GOOD", "libpyop_bridge.so");
  char *good_real = fb_real(good_so);
  assert_int_equal(unlink(o_so), 0);
  assert_int_equal(symlink(good_real, o_so), 0);

  pyop__candidates c;
  pyop__bridge b;
  int fds = fb_count_fds();
  assert_int_equal(find_and_load(root, &c, &b), PYOP_ENOBRIDGE);
  assert_int_equal(pyop_last_status(), PYOP_ENOBRIDGE);
  assert_null(b.handle);
  assert_int_equal(fb_count_fds(), fds);

  char *fb = fb_real(FB_DIR);
  char want[16384];
  snprintf(
      want, sizeof want,
      "no usable bridge for %s in %s:\n"
      "  %s/b_config_fail: config rejected: set_config failed with "
      "PYOP_EPYTHON: fake bridge CONFIG_FAIL: cannot start the interpreter "
      "(configuration refused on purpose)\n"
      "  %s/c_dup: duplicate: same file as %s/b_config_fail (tried once)\n"
      "  %s/f_no_entry: missing symbol: %s/NO_ENTRY/libpyop_bridge.so: no "
      "exported symbol pyop_bridge_entry (undefined symbol: pyop_bridge_entry)\n"
      "  %s/g_null_fn: ABI rejected: API table member reset is NULL\n"
      "  %s/h_refuse: ABI rejected: pyop_bridge_entry refused bridge ABI 1." PYOP__XSTR(PYOP_BRIDGE_ABI_MINOR) " "
      "with PYOP_EABI: fake bridge REFUSE: will not speak any bridge ABI\n"
      "  %s/i_short_size: ABI rejected: API table struct_size %zu is smaller "
      "than the %zu bytes of bridge ABI 1.0\n"
      "  %s/j_unresolved: open failed: %s/UNRESOLVED/libpyop_bridge.so: "
      "undefined symbol: pyop_fake_undefined_function\n"
      "  %s/k_world_writable: unsafe: %s/WORLD_WRITABLE/libpyop_bridge.so: "
      "writable by others (mode 0757)\n"
      "  %s/l_wrong_major: ABI rejected: bridge answered ABI 2." PYOP__XSTR(PYOP_BRIDGE_ABI_MINOR) "; this libpyop "
      "speaks 1." PYOP__XSTR(PYOP_BRIDGE_ABI_MINOR) " (same major required)\n"
      "  %s/n_no_bridge: invalid path: %s/libpyop_bridge.so: cannot resolve: "
      "No such file or directory\n"
      "  %s/o_outside: invalid path: %s/libpyop_bridge.so resolves to %s, "
      "outside the artifact directory\n"
      "  %s/a_bad_manifest: manifest invalid: manifest.txt: line 2: expected "
      "key=value\n"
      "  %s/d_escape: manifest invalid: manifest.txt: line 4: bridge: "
      "\"../x.so\" must be a file name inside the artifact directory (no '/', "
      "no leading '.')\n"
      "  %s/e_mismatch: manifest mismatch: built for cp312-%s, running %s\n"
      "  %s/m_no_manifest: invalid path: no manifest.txt: No such file or "
      "directory",
      key.text, root, root, root, root, root, fb, root, root, root,
      offsetof(pyop_bridge_api, set_config), PYOP_MEMBER_END(pyop_bridge_api, shutdown), root, fb,
      root, fb, root, root, n, root, o, good_real, root, root, root,
      key.machine, key.text, root);
  if (strcmp(pyop_last_error(), want) != 0)
    fail_msg("got:\n%s\nwant:\n%s", pyop_last_error(), want);

  /* Statuses as recorded for the report (pyop doctor). */
  assert_int_equal(cand(&c, root, "a_bad_manifest")->status, PYOP__CAND_MANIFEST_INVALID);
  assert_int_equal(cand(&c, root, "b_config_fail")->status, PYOP__CAND_CONFIG_REJECTED);
  assert_int_equal(cand(&c, root, "c_dup")->status, PYOP__CAND_DUPLICATE);
  assert_int_equal(cand(&c, root, "e_mismatch")->status, PYOP__CAND_MANIFEST_MISMATCH);
  assert_int_equal(cand(&c, root, "f_no_entry")->status, PYOP__CAND_MISSING_SYMBOL);
  assert_int_equal(cand(&c, root, "h_refuse")->status, PYOP__CAND_ABI_REJECTED);
  assert_int_equal(cand(&c, root, "j_unresolved")->status, PYOP__CAND_OPEN_FAILED);
  assert_int_equal(cand(&c, root, "k_world_writable")->status, PYOP__CAND_UNSAFE);
  assert_int_equal(cand(&c, root, "m_no_manifest")->status, PYOP__CAND_INVALID_PATH);
  assert_int_equal(cand(&c, root, "n_no_bridge")->status, PYOP__CAND_INVALID_PATH);
  assert_int_equal(cand(&c, root, "o_outside")->status, PYOP__CAND_INVALID_PATH);
  pyop__candidates_free(&c);

  free(fb);
  free(good_real);
  free(good_so);
  free(o_so);
  free(o);
  free(n_so);
  free(n);
  free(m);
  fb_rmtree(root);
  free(root);
}

/* A later candidate that would load stays UNTRIED once one has loaded;
 * exact tag beats abi3 whatever the names; the override beats both. */
static void test_order_loaded_untried(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  char abi3[512];
  snprintf(abi3, sizeof abi3,
           "format=1\npython_tag=abi3\nmin_python=3.8\nplatform=%s\n"
           "bridge=libpyop_bridge.so\nbridge_abi_major=1\nbridge_abi_minor=0\n",
           key.machine);
  free(fb_make_artifact(root, "aa_abi3", "NEWER_MINOR", abi3));
  fb_link(root, "zz_exact", "GOOD");
  fb_link(root, "zz_second", "NEWER_MINOR");
  pyop__candidates c;
  pyop__bridge b;
  assert_int_equal(find_and_load(root, &c, &b), PYOP_OK);
  assert_string_equal(b.api->build_info.data, "fake bridge GOOD");
  pyop__sb sb = PYOP__SB_INIT;
  pyop__candidates_report(&c, &sb);
  char want[2048];
  snprintf(want, sizeof want,
           "  %s/zz_exact: loaded\n"
           "  %s/zz_second: untried: manifest matches (exact tag)\n"
           "  %s/aa_abi3: untried: manifest matches (stable ABI)\n",
           root, root, root);
  assert_string_equal(pyop__sb_str(&sb), want);
  pyop__sb_free(&sb);
  pyop__bridge_close(&b);
  pyop__candidates_free(&c);

  /* The exact ones fail: the abi3 build is next. */
  char *ex = fb_join(root, "zz_exact"), *se = fb_join(root, "zz_second");
  assert_int_equal(unlink(ex), 0);
  assert_int_equal(unlink(se), 0);
  fb_link(root, "zz_exact", "REFUSE");
  assert_int_equal(find_and_load(root, &c, &b), PYOP_OK);
  assert_int_equal(cand(&c, root, "zz_exact")->status, PYOP__CAND_ABI_REJECTED);
  assert_int_equal(cand(&c, root, "aa_abi3")->status, PYOP__CAND_LOADED);
  pyop__bridge_close(&b);
  pyop__candidates_free(&c);

  /* PYOP_BRIDGE_DIR first of all. */
  char *ov = fb_variant("NEWER_MINOR");
  setenv("PYOP_BRIDGE_DIR", ov, 1);
  assert_int_equal(find_and_load(root, &c, &b), PYOP_OK);
  assert_string_equal(c.items[0].dir, ov);
  assert_int_equal(c.items[0].rank, 0);
  assert_int_equal(c.items[0].status, PYOP__CAND_LOADED);
  assert_string_equal(b.api->build_info.data, "fake bridge NEWER_MINOR");
  pyop__bridge_close(&b);
  pyop__candidates_free(&c);
  unsetenv("PYOP_BRIDGE_DIR");

  free(ov);
  free(ex);
  free(se);
  fb_rmtree(root);
  free(root);
}

static void test_unsafe_dir_and_owner(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  char *gw = fb_make_artifact(root, "a_group_writable", "GOOD", NULL);
  assert_int_equal(chmod(gw, 0775), 0);
  char *other = fb_make_artifact(root, "b_other_owner", "GOOD", NULL);
  char *other_so = fb_join(other, "libpyop_bridge.so");
  bool as_root = geteuid() == 0;
  if (as_root) assert_int_equal(chown(other_so, 12345, 12345), 0);
  pyop__candidates c;
  pyop__bridge b;
  assert_int_equal(find_and_load(root, &c, &b), as_root ? PYOP_ENOBRIDGE : PYOP_OK);
  char want[1024];
  snprintf(want, sizeof want, "%s: directory writable by group (mode 0775)", gw);
  assert_int_equal(c.items[0].status, PYOP__CAND_UNSAFE);
  assert_string_equal(c.items[0].reason, want);
  if (as_root) {
    snprintf(want, sizeof want, "%s: owned by uid 12345 (must be root or uid 0)",
             other_so);
    assert_int_equal(c.items[1].status, PYOP__CAND_UNSAFE);
    assert_string_equal(c.items[1].reason, want);
  } else {
    pyop__bridge_close(&b);
  }
  pyop__candidates_free(&c);
  free(other_so);
  free(other);
  free(gw);
  fb_rmtree(root);
  free(root);
}


/*
 * A candidate refused (its directory writable by group), made safe and
 * tried again on the same list (set UNTRIED again): it loads, and its old
 * refusal is gone (blind batch 20: the loaded candidate kept it, the
 * report showing a loaded bridge with a stale reason).
 */
static void test_refused_then_loaded_reason_cleared(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  char *gw = fb_make_artifact(root, "a_group_writable", "GOOD", NULL);
  assert_int_equal(chmod(gw, 0775), 0);
  pyop__candidates c;
  pyop__bridge b;
  assert_int_equal(find_and_load(root, &c, &b), PYOP_ENOBRIDGE);
  assert_int_equal(c.items[0].status, PYOP__CAND_UNSAFE);
  assert_non_null(c.items[0].reason);
  assert_int_equal(chmod(gw, 0755), 0);
  c.items[0].status = PYOP__CAND_UNTRIED;
  assert_int_equal(pyop__bridge_load(&c, 0, 0, &b), PYOP_OK);
  assert_int_equal(c.items[0].status, PYOP__CAND_LOADED);
  assert_null(c.items[0].reason);
  pyop__sb sb = PYOP__SB_INIT;
  pyop__candidates_report(&c, &sb);
  if (strstr(pyop__sb_str(&sb), "mode 0775"))
    fail_msg("the report of the loaded candidate keeps its refusal: %s", pyop__sb_str(&sb));
  pyop__sb_free(&sb);
  pyop__bridge_close(&b);
  pyop__candidates_free(&c);
  free(gw);
  fb_rmtree(root);
  free(root);
}

/* A FIFO in a bridge's place, and one in a manifest's place: both refused
 * at once with a reason naming the file; the next candidate loads. */
static void test_fifo_bridge_and_manifest(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  char *a = fb_make_artifact(root, "a_fifo_bridge", "GOOD", NULL);
  char *a_so = fb_join(a, "libpyop_bridge.so");
  assert_int_equal(unlink(a_so), 0);
  assert_int_equal(mkfifo(a_so, 0755), 0);
  char *b_dir = fb_make_artifact(root, "b_fifo_manifest", "GOOD", NULL);
  char *b_mf = fb_join(b_dir, "manifest.txt");
  assert_int_equal(unlink(b_mf), 0);
  assert_int_equal(mkfifo(b_mf, 0644), 0);
  free(fb_make_artifact(root, "c_good", "GOOD", NULL));
  pyop__candidates c;
  pyop__bridge b;
  alarm(20); /* a blocked open is a failure, not a stuck CI job */
  assert_int_equal(find_and_load(root, &c, &b), PYOP_OK);
  alarm(0);
  char want[1024];
  const pyop__candidate *ca = cand(&c, root, "a_fifo_bridge");
  assert_int_equal(ca->status, PYOP__CAND_UNSAFE);
  snprintf(want, sizeof want, "%s: not a regular file (FIFO)", a_so);
  assert_string_equal(ca->reason, want);
  const pyop__candidate *cb = cand(&c, root, "b_fifo_manifest");
  assert_int_equal(cb->status, PYOP__CAND_MANIFEST_INVALID);
  assert_string_equal(cb->reason, "manifest.txt: not a regular file (FIFO)");
  assert_int_equal(cand(&c, root, "c_good")->status, PYOP__CAND_LOADED);
  pyop__bridge_close(&b);
  pyop__candidates_free(&c);
  free(a_so);
  free(a);
  free(b_mf);
  free(b_dir);
  fb_rmtree(root);
  free(root);
}

/* A bridge whose pyop_bridge_entry is a data object is refused before it is
 * called (calling it jumped into .rodata); the next candidate loads. */
static void test_entry_not_a_function(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  fb_link(root, "a_data_entry", "DATA_ENTRY");
  fb_link(root, "b_good", "GOOD");
  pyop__candidates c;
  pyop__bridge b;
  assert_int_equal(find_and_load(root, &c, &b), PYOP_OK);
  const pyop__candidate *ca = cand(&c, root, "a_data_entry");
  assert_int_equal(ca->status, PYOP__CAND_MISSING_SYMBOL);
  char *so = fb_variant("DATA_ENTRY");
  char want[2048];
  snprintf(want, sizeof want, "%s/libpyop_bridge.so: pyop_bridge_entry is a data object in "
           "%s/libpyop_bridge.so, not a function", so, so);
  assert_string_equal(ca->reason, want);
  assert_int_equal(cand(&c, root, "b_good")->status, PYOP__CAND_LOADED);
  pyop__bridge_close(&b);
  pyop__candidates_free(&c);
  free(so);
  fb_rmtree(root);
  free(root);
}

static void test_no_candidates(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  pyop__candidates c;
  pyop__bridge b;
  assert_int_equal(find_and_load(root, &c, &b), PYOP_ENOBRIDGE);
  char want[1024];
  snprintf(want, sizeof want,
           "no usable bridge for %s in %s:\n  (no artifact directory found)\n  this libpyop "
           "was built with a bridge for %s, but its artifact directory is not in %s: install "
           "the build's lib/pyop/artifacts with it (cmake --install), or name the directory "
           "in PYOP_BRIDGE_DIR",
           key.text, root, key.text, root);
  assert_string_equal(pyop_last_error(), want);
  pyop__candidates_free(&c);
  fb_rmtree(root);
  free(root);
}

/* Only bridges built for other Pythons: the message says how to get one
 * for this Python (the build's -DPYOP_PYTHONS and a rebuild) or which
 * Pythons have one. A bridge built for it that fails gives no such fix. */
static void test_no_bridge_for_this_python(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  fb_link(root, "mismatch", "MISMATCH"); /* built for cp312 */
  /* A Python this build made no bridge for (3.99). */
  pyop__runtime_key other = key;
  other.minor = 99;
  snprintf(other.tag, sizeof other.tag, "cp399");
  snprintf(other.text, sizeof other.text, "cp399-%s", key.machine);
  pyop__candidates c;
  pyop__bridge b;
  pyop__artifacts_set_root(root);
  assert_int_equal(pyop__candidates_find(&other, &c), PYOP_OK);
  assert_int_equal(pyop__bridge_load(&c, 0, 0, &b), PYOP_ENOBRIDGE);
  char want[1024];
  snprintf(want, sizeof want, "\n  this libpyop has no bridge for %s: add that Python 3.99 to "
           "-DPYOP_PYTHONS (it was built with -DPYOP_PYTHONS=\"%s\"; e.g. "
           "-DPYOP_PYTHONS=\"%s;/path/to/python3.99\"), rebuild and reinstall; or run under a "
           "Python it has a bridge for: cp312-%s",
           other.text, PYOP_BUILD_PYTHONS, PYOP_BUILD_PYTHONS, key.machine);
  const char *e = pyop_last_error();
  if (!strstr(e, want)) fail_msg("\"%s\" lacks \"%s\"", e, want);
  pyop__candidates_free(&c);
  /* The build's own Python with only that bridge: its artifact is missing. */
  assert_int_equal(find_and_load(root, &c, &b), PYOP_ENOBRIDGE);
  snprintf(want, sizeof want, "this libpyop was built with a bridge for %s, but its artifact "
           "directory is not in %s", key.text, root);
  e = pyop_last_error();
  if (!strstr(e, want)) fail_msg("\"%s\" lacks \"%s\"", e, want);
  pyop__candidates_free(&c);
  fb_link(root, "zz_config_fail", "CONFIG_FAIL");
  assert_int_equal(find_and_load(root, &c, &b), PYOP_ENOBRIDGE);
  assert_null(strstr(pyop_last_error(), "no bridge for"));
  assert_null(strstr(pyop_last_error(), "was built with a bridge"));
  pyop__candidates_free(&c);
  fb_rmtree(root);
  free(root);
}

/* A bridge built for the running Python whose file is missing, or that
 * resolves out of its artifact directory, was matched all the same (an
 * INVALID_PATH after the manifest matched): the message gives no "built
 * without a bridge for this Python" fix, whose advice (install the
 * artifacts, rebuild with -DPYOP_PYTHONS) is wrong for it; a directory
 * without a manifest (INVALID_PATH before any match) still gets it
 * (both-sides pass, session 14: src.bs.bridge_loader.located_invalid_unmatched). */
static void test_matched_but_invalid_path_no_fix(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  char *n = fb_make_artifact(root, "n_no_bridge", "GOOD", NULL);
  char *n_so = fb_join(n, "libpyop_bridge.so");
  assert_int_equal(unlink(n_so), 0);
  pyop__candidates c;
  pyop__bridge b;
  assert_int_equal(find_and_load(root, &c, &b), PYOP_ENOBRIDGE);
  assert_int_equal(cand(&c, root, "n_no_bridge")->status, PYOP__CAND_INVALID_PATH);
  const char *e = pyop_last_error();
  assert_non_null(strstr(e, "n_no_bridge: invalid path: "));
  if (strstr(e, "was built with a bridge for") || strstr(e, "has no bridge for"))
    fail_msg("a matched bridge's missing file got the no-bridge fix: %s", e);
  pyop__candidates_free(&c);
  /* The same, the bridge a link out of its directory. */
  char *good_so = fb_join(FB_DIR "/GOOD", "libpyop_bridge.so");
  char *good_real = fb_real(good_so);
  assert_int_equal(symlink(good_real, n_so), 0);
  assert_int_equal(find_and_load(root, &c, &b), PYOP_ENOBRIDGE);
  e = pyop_last_error();
  assert_non_null(strstr(e, "outside the artifact directory"));
  if (strstr(e, "was built with a bridge for") || strstr(e, "has no bridge for"))
    fail_msg("a matched bridge outside its directory got the no-bridge fix: %s", e);
  pyop__candidates_free(&c);
  /* Only a directory without a manifest: nothing matched, the fix is given. */
  assert_int_equal(unlink(n_so), 0);
  char *mf = fb_join(n, "manifest.txt");
  assert_int_equal(unlink(mf), 0);
  assert_int_equal(find_and_load(root, &c, &b), PYOP_ENOBRIDGE);
  e = pyop_last_error();
  if (!strstr(e, "was built with a bridge for") && !strstr(e, "has no bridge for"))
    fail_msg("no matched bridge, no fix: %s", e);
  pyop__candidates_free(&c);
  free(mf);
  free(good_real);
  free(good_so);
  free(n_so);
  free(n);
  fb_rmtree(root);
  free(root);
}

/* The fix lists every bridge there is for another Python, comma-separated;
 * an empty root says no directory was found; without a runtime key the
 * message speaks of "the running Python" and names no version. */
static void test_no_bridge_lists_and_unknown_key(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  fb_link(root, "m1", "MISMATCH");
  fb_link(root, "m2", "MISMATCH");
  pyop__runtime_key other = key;
  other.minor = 99;
  snprintf(other.tag, sizeof other.tag, "cp399");
  snprintf(other.text, sizeof other.text, "cp399-%s", key.machine);
  pyop__candidates c;
  pyop__bridge b;
  pyop__artifacts_set_root(root);
  assert_int_equal(pyop__candidates_find(&other, &c), PYOP_OK);
  assert_int_equal(pyop__bridge_load(&c, 0, 0, &b), PYOP_ENOBRIDGE);
  char want[512];
  snprintf(want, sizeof want, "; or run under a Python it has a bridge for: cp312-%s, cp312-%s",
           key.machine, key.machine);
  if (!strstr(pyop_last_error(), want)) fail_msg("\"%s\" lacks \"%s\"", pyop_last_error(), want);
  pyop__candidates_free(&c);
  char *empty = pt_mkdtemp();
  pyop__artifacts_set_root(empty);
  pyop__runtime_key unknown = key;
  unknown.text[0] = '\0'; /* no key text: the running Python's could not be told */
  assert_int_equal(pyop__candidates_find(&unknown, &c), PYOP_OK);
  assert_int_equal(c.n, 0);
  assert_int_equal(pyop__bridge_load(&c, 0, 0, &b), PYOP_ENOBRIDGE);
  snprintf(want, sizeof want, "no usable bridge for the running Python in %s:\n  (no artifact "
           "directory found)\n  this libpyop has no bridge for the running Python: add that "
           "Python to -DPYOP_PYTHONS", empty);
  if (!strstr(pyop_last_error(), want)) fail_msg("\"%s\" lacks \"%s\"", pyop_last_error(), want);
  if (PYOP_BUILD_PYTHONS[0]) assert_non_null(strstr(pyop_last_error(), ";/path/to/python3\")"));
  assert_null(strstr(pyop_last_error(), "or run under"));
  pyop__candidates_free(&c);
  fb_rmtree(empty);
  free(empty);
  fb_rmtree(root);
  free(root);
}

/* "Inside the artifact directory" is by path components: a bridge that
 * resolves into a sibling directory whose name only extends the
 * directory's ("p" -> "p2/libpyop_bridge.so") is outside, and refused; the
 * sibling itself loads. */
static void test_bridge_in_prefix_sibling(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  char *p2 = fb_make_artifact(root, "p2", "GOOD", NULL);
  char *p = fb_make_artifact(root, "p", "GOOD", NULL);
  char *p_so = fb_join(p, "libpyop_bridge.so");
  char *p2_so = fb_join(p2, "other.so"); /* a file of its own: no duplicate of p2's */
  char *good_so = fb_join(FB_DIR "/GOOD", "libpyop_bridge.so");
  fb_copy(good_so, p2_so, 0755);
  free(good_so);
  assert_int_equal(unlink(p_so), 0);
  assert_int_equal(symlink(p2_so, p_so), 0);
  pyop__candidates c;
  pyop__bridge b;
  assert_int_equal(find_and_load(root, &c, &b), PYOP_OK);
  assert_int_equal(cand(&c, root, "p")->status, PYOP__CAND_INVALID_PATH);
  assert_non_null(strstr(cand(&c, root, "p")->reason, "outside the artifact directory"));
  assert_int_equal(cand(&c, root, "p2")->status, PYOP__CAND_LOADED);
  pyop__bridge_close(&b);
  pyop__candidates_free(&c);
  free(p_so);
  free(p2_so);
  free(p);
  free(p2);
  fb_rmtree(root);
  free(root);
}

/* Lines of the fake bridge's PYOP_FAKE_TRACE file equal to what. */
static int trace_count(const char *path, const char *what) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[128];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    n += strcmp(line, what) == 0;
  }
  fclose(f);
  return n;
}

/*
 * A positive status from pyop_bridge_entry or set_config is no success,
 * though the entry filled in its table: the candidate is refused (ABI
 * rejected, config rejected) and the message says the status is not
 * libpyop's; unset, the same bridge loads (outcome pass 2:
 * src.out2.bridge_loader.entry_positive_ok, config_positive_ok).
 * The bridge is asked to shut down before it is closed once its table was
 * negotiated (refused by set_config: what its entry started is ended),
 * not when its entry refused (batch 14:
 * src.b14.bridge_loader.refused_bridge_not_shut_down); the loaded one when
 * it is closed.
 */
static void test_positive_status_refused(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  char *a = fb_make_artifact(root, "a", "GOOD", NULL);
  char *tdir = pt_mkdtemp(); /* not among the artifacts */
  char *trace = fb_join(tdir, "trace");
  static const struct {
    const char *var;
    int status;
    const char *reason;
    int shutdowns;
  } cases[] = {
      {"PYOP_FAKE_ENTRY_STATUS", PYOP__CAND_ABI_REJECTED,
       "refused bridge ABI 1." PYOP__XSTR(PYOP_BRIDGE_ABI_MINOR) " with status 3 (not a libpyop "
       "status)", 0},
      {"PYOP_FAKE_CONFIG_STATUS", PYOP__CAND_CONFIG_REJECTED,
       "set_config failed with status 3 (not a libpyop status)", 1},
  };
  for (size_t i = 0; i < 2; i++) {
    unlink(trace);
    assert_int_equal(setenv("PYOP_FAKE_TRACE", trace, 1), 0);
    assert_int_equal(setenv(cases[i].var, "3", 1), 0);
    pyop__candidates c;
    pyop__bridge b;
    int rc = find_and_load(root, &c, &b);
    assert_int_equal(unsetenv(cases[i].var), 0);
    assert_int_equal(unsetenv("PYOP_FAKE_TRACE"), 0);
    if (rc == PYOP_OK) {
      pyop__bridge_close(&b);
      fail_msg("%s=3: the bridge loaded", cases[i].var);
    }
    assert_int_equal(rc, PYOP_ENOBRIDGE);
    const pyop__candidate *it = cand(&c, root, "a");
    assert_int_equal(it->status, cases[i].status);
    assert_non_null(it->reason);
    if (!strstr(it->reason, cases[i].reason))
      fail_msg("\"%s\" lacks \"%s\"", it->reason, cases[i].reason);
    if (trace_count(trace, "shutdown") != cases[i].shutdowns)
      fail_msg("%s=3: the refused bridge was shut down %d times, not %d", cases[i].var,
               trace_count(trace, "shutdown"), cases[i].shutdowns);
    pyop__candidates_free(&c);
  }
  unlink(trace);
  assert_int_equal(setenv("PYOP_FAKE_TRACE", trace, 1), 0);
  pyop__candidates c;
  pyop__bridge b;
  assert_int_equal(find_and_load(root, &c, &b), PYOP_OK);
  assert_int_equal(cand(&c, root, "a")->status, PYOP__CAND_LOADED);
  assert_int_equal(trace_count(trace, "shutdown"), 0);
  pyop__bridge_close(&b);
  assert_int_equal(trace_count(trace, "shutdown"), 1);
  assert_int_equal(unsetenv("PYOP_FAKE_TRACE"), 0);
  pyop__candidates_free(&c);
  fb_rmtree(tdir);
  free(tdir);
  free(trace);
  free(a);
  fb_rmtree(root);
  free(root);
}

static void test_services(void **state) {
  (void)state;
  const pyop_loader_services *s = &pyop__loader_services;
  assert_int_equal(s->struct_size, sizeof *s);
  pyop_str msg = {"bridge says no, and more", 15};
  s->set_error(PYOP_EPYTHON, msg);
  assert_string_equal(pyop_last_error(), "bridge says no,");
  assert_int_equal(pyop_last_status(), PYOP_EPYTHON);
  pyop_str bad = {NULL, 3};
  s->set_error(PYOP_EPYTHON, bad);
  assert_non_null(strstr(pyop_last_error(), "invalid message view"));
  s->set_error(0, msg); /* success is not an error status */
  assert_int_equal(pyop_last_status(), PYOP_EINTERNAL);
  s->log(PYOP_LOG_DEBUG, msg);
  s->log(99, bad); /* out-of-range level, invalid view: ignored safely */
  /* ABI 1.4's last_error: the calling thread's last failure detail, whole
   * (both-sides pass, session 14: the member of the newest minor). */
  assert_true(PYOP__HAS(pyop_loader_services, s, last_error));
  assert_non_null(s->last_error);
  (void)pyop__error(PYOP_ENOENT, "the detail %d", 42);
  pyop_str v = s->last_error();
  assert_int_equal(v.len, strlen("the detail 42"));
  assert_memory_equal(v.data, "the detail 42", v.len);
  pyop__error_clear();
  v = s->last_error();
  assert_int_equal(v.len, 0);
  assert_non_null(v.data);
}

/* The log service: a level below PYOP_LOG_ERROR is logged as an error, one
 * above PYOP_LOG_DEBUG as debug (so not at the default level), the log
 * level filters, an invalid view is dropped; the line names the bridge.
 * set_error with a status outside libpyop's says so in the message. */
static int svc_log_n, svc_log_level;
static char svc_log_line[512];
static void svc_capture(void *user, int level, const char *line) {
  (void)user;
  svc_log_n++;
  svc_log_level = level;
  snprintf(svc_log_line, sizeof svc_log_line, "%s", line);
}

static void test_services_log_levels(void **state) {
  (void)state;
  const pyop_loader_services *s = &pyop__loader_services;
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = svc_capture;
  assert_int_equal(pyop_set_host_hooks(&h), PYOP_OK);
  int level = pyop_get_log_level();
  assert_int_equal(pyop_set_log_level(PYOP_LOG_WARN), PYOP_OK);
  svc_log_n = 0;
  s->log(-7, (pyop_str){"below error", 11});
  assert_int_equal(svc_log_n, 1);
  assert_int_equal(svc_log_level, PYOP_LOG_ERROR);
  assert_non_null(strstr(svc_log_line, "bridge"));
  assert_non_null(strstr(svc_log_line, "below error"));
  s->log(PYOP_LOG_WARN, (pyop_str){"a warning, cut here", 9});
  assert_int_equal(svc_log_n, 2);
  assert_int_equal(svc_log_level, PYOP_LOG_WARN);
  assert_non_null(strstr(svc_log_line, "a warning"));
  assert_null(strstr(svc_log_line, "cut here"));
  s->log(PYOP_LOG_INFO, (pyop_str){"info", 4});
  s->log(99, (pyop_str){"above debug", 11});
  s->log(PYOP_LOG_ERROR, (pyop_str){NULL, 3});
  assert_int_equal(svc_log_n, 2); /* filtered, filtered, invalid */
  assert_int_equal(pyop_set_log_level(PYOP_LOG_DEBUG), PYOP_OK);
  s->log(99, (pyop_str){"above debug", 11});
  assert_int_equal(svc_log_n, 3);
  assert_int_equal(svc_log_level, PYOP_LOG_DEBUG);
  assert_non_null(strstr(svc_log_line, "above debug"));
  assert_int_equal(pyop_set_log_level(level), PYOP_OK);
  assert_int_equal(pyop_set_host_hooks(NULL), PYOP_OK);
  /* A status that is not libpyop's, or success: named in the message. */
  s->set_error(0, (pyop_str){"it broke", 8});
  assert_int_equal(pyop_last_status(), PYOP_EINTERNAL);
  assert_non_null(strstr(pyop_last_error(), "it broke (the bridge reported status 0, not a "
                                            "libpyop error status; reported as "));
  s->set_error(PYOP_EPYTHON, (pyop_str){"plain", 5});
  assert_string_equal(pyop_last_error(), "plain");
}

/* ------------------------------------------------------ fault injection */

typedef struct sweep_ctx {
  char *root;
  int fds;
  bool strict; /* only one candidate: every fault must surface */
} sweep_ctx;

static int sweep_fn(void *user) {
  sweep_ctx *s = user;
  pyop__artifacts_set_root(s->root);
  pyop__candidates c;
  pyop__bridge b;
  int rc = pyop__candidates_find(&key, &c);
  if (rc == PYOP_OK) {
    rc = pyop__bridge_load(&c, 0, 0, &b);
    if (rc == PYOP_OK) pyop__bridge_close(&b);
    pyop__candidates_free(&c);
  }
  return rc;
}

static void sweep_check(void *user, int rc) {
  sweep_ctx *s = user;
  /* The failure is an error (with one candidate; with several, a fault on
   * a candidate that was going to be rejected anyway changes only its
   * reason), nothing leaked, the next call works. */
  if (s->strict || rc != PYOP_OK) {
    assert_true(rc == PYOP_ENOMEM || rc == PYOP_ENOBRIDGE);
    assert_true(pyop_last_error()[0] != '\0');
  }
  assert_int_equal(pt_live_allocs(), 0);
  assert_int_equal(fb_count_fds(), s->fds);
  assert_int_equal(sweep_fn(s), PYOP_OK);
  assert_int_equal(pt_live_allocs(), 0);
}

static void test_fault_sweep_one(void **state) {
  (void)state;
  sweep_ctx s = {pt_mkdtemp(), 0, true};
  fb_link(s.root, "good", "GOOD");
  s.fds = fb_count_fds();
  assert_int_equal(sweep_fn(&s), PYOP_OK);
  long n = pt_faults_sweep(sweep_fn, sweep_check, &s, 1000);
  print_message("%ld fault points swept\n", n);
  assert_true(n > 30);
  fb_rmtree(s.root);
  free(s.root);
}

static void test_fault_sweep_many(void **state) {
  (void)state;
  sweep_ctx s = {pt_mkdtemp(), 0, false};
  /* Failing candidates before the good one: their paths are swept too. */
  fb_link(s.root, "a_config_fail", "CONFIG_FAIL");
  fb_link(s.root, "b_dup", "CONFIG_FAIL");
  fb_link(s.root, "c_good", "GOOD");
  fb_link(s.root, "d_mismatch", "MISMATCH");
  s.fds = fb_count_fds();
  assert_int_equal(sweep_fn(&s), PYOP_OK);
  long n = pt_faults_sweep(sweep_fn, sweep_check, &s, 2000);
  print_message("%ld fault points swept\n", n);
  assert_true(n > 60);
  fb_rmtree(s.root);
  free(s.root);
}

static int group_setup(void **state) {
  (void)state;
  fb_key(&key);
  return 0;
}

/* Whether the interpreter a bridge's ops live in is gone: asked of a
 * bridge of ABI 1.5 or later only (a 1.4 bridge is never asked, even with
 * the member), and only PYOP_ENOTINIT says so: PYOP_OK and any other
 * status (a bridge bug) are "cannot tell", never "lost". */
static int status_given, status_calls;
static int give_status(void) {
  status_calls++;
  return status_given;
}

static void test_interpreter_lost_rules(void **state) {
  (void)state;
  pyop_bridge_api api;
  memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.interpreter_status = give_status;
  char path[] = "/x/libpyop_bridge.so", dir[] = "/x";
  pyop__bridge b = {NULL, &api, 1, 5, path, dir};
  status_calls = 0;
  status_given = PYOP_ENOTINIT;
  assert_true(pyop__bridge_interpreter_lost(&b));
  status_given = PYOP_OK;
  assert_false(pyop__bridge_interpreter_lost(&b));
  const int odd[] = {PYOP_EINTERNAL, PYOP_EPYTHON, PYOP_EINVAL, 1};
  for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
    status_given = odd[i];
    if (pyop__bridge_interpreter_lost(&b))
      fail_msg("interpreter_status %d taken as lost", odd[i]);
  }
  assert_int_equal(status_calls, 6);
  /* ABI 1.4: not asked. */
  b.abi_minor = 4;
  status_given = PYOP_ENOTINIT;
  assert_false(pyop__bridge_interpreter_lost(&b));
  assert_int_equal(status_calls, 6);
  /* 1.5 with a table too short to hold the member: not asked either. */
  b.abi_minor = 5;
  api.struct_size = offsetof(pyop_bridge_api, interpreter_status);
  assert_false(pyop__bridge_interpreter_lost(&b));
  assert_int_equal(status_calls, 6);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_load_good_and_run_fake_op, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_registry_variants_load, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test(test_serial_reason_minor_edge),
      cmocka_unit_test(test_interpreter_lost_rules),
      cmocka_unit_test_setup_teardown(test_every_failure_listed, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_order_loaded_untried, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_unsafe_dir_and_owner, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_refused_then_loaded_reason_cleared, pt_seam_setup,
                                      pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_entry_not_a_function, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_no_bridge_for_this_python, pt_seam_setup,
                                      pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_no_candidates, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_matched_but_invalid_path_no_fix, pt_seam_setup,
                                      pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_fifo_bridge_and_manifest, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_no_bridge_lists_and_unknown_key, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_bridge_in_prefix_sibling, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_positive_status_refused, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_services, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_services_log_levels, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_fault_sweep_one, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_fault_sweep_many, pt_seam_setup, pt_seam_teardown),
  };
  return cmocka_run_group_tests_name("bridge_loader", tests, group_setup, NULL);
}
