/*
 * The thread's last error (src/error.c): the cap and its truncation marker
 * at exactly the cap, one under and one over, for each way a message is
 * recorded; and the error kept aside around a host hook (save/restore), so
 * that what a hook's nested call failed with never becomes the error of
 * the call that ran the hook (issue 31). And the call tokens kept in the
 * thread's block (src/call.c): unique across threads and never reused.
 */
#include "testutil.h"

#include <limits.h>
#include <pthread.h>

#include "call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char marker[] = "\n[... message truncated]";

/* The longest message the buffer keeps whole: what is left of a message far
 * longer than any cap (the marker is cut into the end, the length stays). */
static size_t cap(void) {
  size_t n = 1 << 20;
  char *big = malloc(n + 1);
  assert_non_null(big);
  memset(big, 'x', n);
  big[n] = '\0';
  pyop__error(PYOP_EIO, "%s", big);
  free(big);
  size_t len = strlen(pyop_last_error());
  assert_true(len > 1000 && len < n);
  return len;
}

/* A message of n bytes: 'a' then 'b's, ending in 'z' (so a cut shows). */
static char *text_of(size_t n) {
  char *s = malloc(n + 1);
  assert_non_null(s);
  memset(s, 'b', n);
  s[0] = 'a';
  s[n - 1] = 'z';
  s[n] = '\0';
  return s;
}

static bool ends_with_marker(const char *s) {
  size_t n = strlen(s), m = strlen(marker);
  return n >= m && strcmp(s + n - m, marker) == 0;
}

/* What recording a message of n bytes leaves: whole (no marker) up to the
 * cap, else cut to the cap with the marker at its end. */
static void expect_kept(size_t n, size_t c, const char *how) {
  const char *got = pyop_last_error();
  size_t len = strlen(got);
  if (n <= c) {
    if (len != n || ends_with_marker(got) || got[n - 1] != 'z')
      fail_msg("%s of %zu bytes (cap %zu): kept %zu bytes%s", how, n, c, len,
               ends_with_marker(got) ? " with the truncation marker" : "");
  } else {
    if (len != c || !ends_with_marker(got) || got[0] != 'a')
      fail_msg("%s of %zu bytes (cap %zu): kept %zu bytes, %s", how, n, c, len,
               ends_with_marker(got) ? "marked" : "NOT marked as truncated");
  }
  assert_int_equal(pyop_last_status(), PYOP_EIO);
}

static void test_truncation_at_the_cap(void **state) {
  (void)state;
  size_t c = cap();
  for (size_t n = c - 2; n <= c + 2; n++) {
    char *s = text_of(n);
    pyop__error(PYOP_EIO, "%s", s); /* vsnprintf */
    expect_kept(n, c, "pyop__error");
    pyop__error_str(PYOP_EIO, s, n); /* a bridge's message view */
    expect_kept(n, c, "pyop__error_str");
    free(s);
  }
}

/* pyop__error_prefix: "<prefix>: <old message>", cut to the cap. */
static void test_prefix_at_the_cap(void **state) {
  (void)state;
  size_t c = cap();
  const char *prefix = "pyop_load"; /* + ": " = 11 bytes */
  for (size_t total = c - 2; total <= c + 2; total++) {
    char *old = text_of(total - 11);
    pyop__error(PYOP_EINVAL, "%s", old);
    pyop__error_prefix(PYOP_EIO, "%s", prefix);
    const char *got = pyop_last_error();
    size_t len = strlen(got);
    assert_int_equal(strncmp(got, "pyop_load: a", 12), 0);
    if (total <= c) {
      if (len != total || ends_with_marker(got) || got[len - 1] != 'z')
        fail_msg("prefixed message of %zu bytes (cap %zu): kept %zu bytes", total, c, len);
    } else if (len != c || !ends_with_marker(got)) {
      fail_msg("prefixed message of %zu bytes (cap %zu): kept %zu, %s", total, c, len,
               ends_with_marker(got) ? "marked" : "NOT marked as truncated");
    }
    assert_int_equal(pyop_last_status(), PYOP_EIO);
    free(old);
  }
}

/* The string builder messages are made with (core.c): a piece formatted
 * into its small buffer or straight into the builder, at the border of the
 * two (255, 256, 257 characters), is appended whole, and what follows it
 * too. */
static void test_builder_piece_sizes(void **state) {
  (void)state;
  for (size_t n = 250; n <= 260; n++) {
    char *s = text_of(n);
    pyop__sb sb = PYOP__SB_INIT;
    pyop__sb_printf(&sb, "%s", s);
    pyop__sb_printf(&sb, "<%d>", 7);
    const char *got = pyop__sb_str(&sb);
    if (strlen(got) != n + 3 || strncmp(got, s, n) != 0 || strcmp(got + n, "<7>") != 0)
      fail_msg("a piece of %zu characters then \"<7>\": got %zu characters", n, strlen(got));
    pyop__sb_free(&sb);
    free(s);
  }
}

/* ------------------------------------------------- kept aside around a hook */

static void test_save_restore(void **state) {
  (void)state;
  pt_faults_install();
  pyop__error(PYOP_EIO, "the outer call's own error");
  unsigned mark = pyop__error_mark();

  /* A failure in between is undone: text, status and sequence. */
  pyop__error_saved s;
  pyop__error_save(&s);
  pyop__error(PYOP_ENOENT, "what the hook's nested call failed with");
  pyop__error_restore(&s);
  assert_string_equal(pyop_last_error(), "the outer call's own error");
  assert_int_equal(pyop_last_status(), PYOP_EIO);
  assert_int_equal(pyop__error_mark(), mark);
  /* So a bridge failure around the hook is not taken as "said". */
  assert_false(pyop__bridge_failed(PYOP_EPYTHON, mark).said);

  /* Nothing in between: nothing changes. */
  pyop__error_save(&s);
  pyop__error_restore(&s);
  assert_string_equal(pyop_last_error(), "the outer call's own error");
  assert_int_equal(pyop__error_mark(), mark);

  /* An empty last error stays empty. */
  pyop__error_clear();
  pyop__error_save(&s);
  pyop__error(PYOP_ENOENT, "nested");
  pyop__error_restore(&s);
  assert_string_equal(pyop_last_error(), "");
  assert_int_equal(pyop_last_status(), PYOP_OK);
  assert_int_equal(pt_live_allocs(), 0);
  pt_faults_remove();
}

/*
 * A bridge that records an empty message has said nothing: its caller
 * writes one (configuration pass: the empty partition of a message,
 * src.cf.error.empty_message_said).
 */
static void test_empty_bridge_message_not_said(void **state) {
  (void)state;
  pyop__error(PYOP_EIO, "an earlier failure");
  unsigned mark = pyop__error_mark();
  pyop__error_str(PYOP_EPYTHON, "", 0);
  pyop__bridge_failure f = pyop__bridge_failed(PYOP_EPYTHON, mark);
  assert_false(f.said);
  assert_false(f.names_call);
  assert_int_equal(f.status, PYOP_EPYTHON);
  /* One character is a message. */
  mark = pyop__error_mark();
  pyop__error_str(PYOP_EPYTHON, "x", 1);
  assert_true(pyop__bridge_failed(PYOP_EPYTHON, mark).said);
}

/* A log hook that makes a libpyop call fail (and logs nothing itself). */
static int hook_calls;
static void failing_log_hook(void *user, int level, const char *line) {
  (void)user;
  (void)level;
  (void)line;
  hook_calls++;
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("NoSuchOpInLogHook", &info), PYOP_ENOENT);
  assert_non_null(strstr(pyop_last_error(), "NoSuchOpInLogHook"));
}

/* Through the real hook path: a line logged while the thread's last error
 * is the caller's leaves that error as it was, whatever the hook did. */
static void test_hook_keeps_the_last_error(void **state) {
  (void)state;
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = failing_log_hook;
  assert_int_equal(pyop_set_host_hooks(&h), PYOP_OK);
  pyop__error(PYOP_EBUSY, "the caller's error");
  unsigned mark = pyop__error_mark();
  hook_calls = 0;
  pyop__log(PYOP_LOG_ERROR, "test", "a line for the hook");
  assert_int_equal(hook_calls, 1);
  assert_string_equal(pyop_last_error(), "the caller's error");
  assert_int_equal(pyop_last_status(), PYOP_EBUSY);
  assert_int_equal(pyop__error_mark(), mark);
  assert_int_equal(pyop_set_host_hooks(NULL), PYOP_OK);
}

/* Every status has its own name and message and is known; a number
 * outside the map is none of them. A bridge's status is its own when
 * libpyop knows it, else (positive, unknown) PYOP_EINTERNAL and "odd". */
static void test_status_table(void **state) {
  (void)state;
  static const struct {
    int value;
    const char *name, *msg;
  } all[] = {
#define PYOP__ROW(name, value, msg) {value, "PYOP_" #name, msg},
      PYOP_STATUS_MAP(PYOP__ROW)
#undef PYOP__ROW
  };
  size_t n = sizeof all / sizeof all[0];
  assert_true(n > 10);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(pyop_status_name(all[i].value), all[i].name);
    assert_string_equal(pyop_strerror(all[i].value), all[i].msg);
    assert_true(pyop__status_known(all[i].value));
    bool odd = true;
    int st = pyop__bridge_status(all[i].value, &odd);
    assert_true(all[i].value <= 0);
    assert_false(odd); /* PYOP_OK included: its callers tell success apart */
    assert_int_equal(st, all[i].value);
    for (size_t j = 0; j < i; j++) assert_int_not_equal(all[i].value, all[j].value);
  }
  const int unknown[] = {1, -999, 12345, INT_MIN};
  for (size_t i = 0; i < 4; i++) {
    assert_string_equal(pyop_status_name(unknown[i]), "PYOP_UNKNOWN");
    assert_string_equal(pyop_strerror(unknown[i]), "unknown status");
    assert_false(pyop__status_known(unknown[i]));
    bool odd = false;
    assert_int_equal(pyop__bridge_status(unknown[i], &odd), PYOP_EINTERNAL);
    assert_true(odd);
  }
}

/* The builder's room always holds its text and the NUL after it, at each
 * growth border too (a text of exactly 64, 128 or 256 bytes needs the next
 * size up): one piece of each length, and two pieces adding up to it. */
static void test_builder_room_for_nul(void **state) {
  (void)state;
  for (size_t n = 1; n <= 300; n++) {
    char *s = text_of(n);
    pyop__sb sb = PYOP__SB_INIT;
    pyop__sb_puts(&sb, s);
    if (sb.oom || sb.len != n || sb.cap < n + 1 || strcmp(pyop__sb_str(&sb), s) != 0)
      fail_msg("one piece of %zu bytes: len %zu, room %zu", n, sb.len, sb.cap);
    pyop__sb_free(&sb);
    if (n > 1) {
      pyop__sb_printf(&sb, "%.*s", (int)(n - 1), s);
      pyop__sb_puts(&sb, s + n - 1);
      if (sb.oom || sb.len != n || sb.cap < n + 1 || strcmp(pyop__sb_str(&sb), s) != 0)
        fail_msg("%zu then 1 bytes: len %zu, room %zu", n - 1, sb.len, sb.cap);
      pyop__sb_free(&sb);
    }
    free(s);
  }
}

/* Taking a builder hands over its text, "" when nothing was appended (a
 * caller reads NULL as out of memory), and leaves it empty for reuse. */
static void test_builder_take(void **state) {
  (void)state;
  pyop__sb sb = PYOP__SB_INIT;
  char *empty = pyop__sb_take(&sb);
  assert_non_null(empty);
  assert_string_equal(empty, "");
  pyop__free(empty);
  pyop__sb_printf(&sb, "reason %d", 3);
  char *text = pyop__sb_take(&sb);
  assert_non_null(text);
  assert_string_equal(text, "reason 3");
  pyop__free(text);
  assert_null(sb.buf);
  assert_int_equal(sb.len, 0);
  char *again = pyop__sb_take(&sb); /* taken: empty again */
  assert_non_null(again);
  assert_string_equal(again, "");
  pyop__free(again);
}

/* A thread in a call of its own: its ctx differs from the other thread's,
 * and the other thread's ctx is no live call here. */
struct token_peer {
  void *other;   /* the main thread's ctx, live there */
  void *mine;
  bool other_live;
  bool mine_live;
};

static void *token_peer_run(void *arg) {
  struct token_peer *p = arg;
  int state = 0;
  pyop__call c;
  p->mine = pyop__call_open(&c, &state, NULL);
  p->other_live = pyop__call_state(p->other) != NULL;
  p->mine_live = pyop__call_state(p->mine) == &state;
  pyop__call_close(&c);
  return NULL;
}

/* Tokens are handed out in blocks per thread; each refill takes a block no
 * thread had: two threads' calls never share a ctx (a ctx handed from one
 * thread's call to another thread in a call is refused there), and a
 * thread's ctx of a returned call never comes back, even a block later. */
static void test_call_tokens_unique(void **state) {
  (void)state;
  int mine = 0;
  pyop__call c;
  void *first = pyop__call_open(&c, &mine, NULL);
  assert_ptr_equal(pyop__call_state(first), &mine);
  for (int t = 0; t < 2; t++) { /* each peer is a new thread: a fresh refill */
    struct token_peer p = {.other = first};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, token_peer_run, &p), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(p.mine_live);
    if (p.mine == first || p.other_live)
      fail_msg("peer %d: ctx %p, the main thread's %p (%s there)", t, p.mine, first,
               p.other_live ? "live" : "not live");
  }
  pyop__call_close(&c);
  /* Two blocks' worth of calls later, the first ctx was not handed out again. */
  for (unsigned long i = 0; i < 2ul << 16; i++) {
    int other = 0;
    void *ctx = pyop__call_open(&c, &other, NULL);
    bool again = ctx == first || pyop__call_state(first) != NULL;
    pyop__call_close(&c);
    if (again) fail_msg("call %lu got the ctx of the first call again", i);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_truncation_at_the_cap),
      cmocka_unit_test(test_prefix_at_the_cap),
      cmocka_unit_test(test_builder_piece_sizes),
      cmocka_unit_test(test_builder_room_for_nul),
      cmocka_unit_test(test_builder_take),
      cmocka_unit_test(test_save_restore),
      cmocka_unit_test(test_empty_bridge_message_not_said),
      cmocka_unit_test(test_hook_keeps_the_last_error),
      cmocka_unit_test(test_status_table),
      cmocka_unit_test(test_call_tokens_unique),
  };
  return cmocka_run_group_tests_name("error", tests, NULL, NULL);
}
