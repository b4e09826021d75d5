/*
 * The host's control of logging and the runtime version (src/log.c,
 * src/types.c): pyop_set_log_level / pyop_get_log_level over PYOP_LOG, from
 * several threads at once, and pyop_version_number against the header;
 * the host hooks a shorter pyop_host_hooks installs (src/hooks.c); what
 * pyop__getenv says under secure execution.
 */
#include "testutil.h"

#include "hooks.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

/* Lines the host's log hook received, by level. */
static atomic_int seen[4];
static char last_line[512];

static void count_log(void *user, int level, const char *line) {
  (void)user;
  if (level >= PYOP_LOG_ERROR && level <= PYOP_LOG_DEBUG) atomic_fetch_add(&seen[level], 1);
  snprintf(last_line, sizeof last_line, "%s", line);
}

static void hook_on(void) {
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = count_log;
  assert_int_equal(pyop_set_host_hooks(&h), PYOP_OK);
  for (int i = 0; i < 4; i++) atomic_store(&seen[i], 0);
}

/* Logs one line at each level; returns how many reached the hook. */
static int log_each_level(void) {
  for (int i = 0; i < 4; i++) atomic_store(&seen[i], 0);
  for (int lv = PYOP_LOG_ERROR; lv <= PYOP_LOG_DEBUG; lv++)
    pyop__log(lv, "test", "line at %d", lv);
  int n = 0;
  for (int i = 0; i < 4; i++) n += atomic_load(&seen[i]);
  return n;
}

/*
 * Runs first (cmocka keeps the order): the level set before anything read
 * PYOP_LOG wins over the environment, and later calls change it at once.
 */
static void test_set_log_level(void **state) {
  (void)state;
  setenv("PYOP_LOG", "debug", 1);
  hook_on();
  assert_int_equal(pyop_set_log_level(PYOP_LOG_ERROR), PYOP_OK);
  assert_int_equal(pyop_get_log_level(), PYOP_LOG_ERROR);
  assert_int_equal(log_each_level(), 1);
  assert_int_equal(atomic_load(&seen[PYOP_LOG_ERROR]), 1);
  assert_non_null(strstr(last_line, "libpyop: error: test: line at 0"));

  assert_int_equal(pyop_set_log_level(PYOP_LOG_DEBUG), PYOP_OK);
  assert_int_equal(pyop_get_log_level(), PYOP_LOG_DEBUG);
  assert_int_equal(log_each_level(), 4);
  assert_true(pyop__log_enabled(PYOP_LOG_DEBUG));

  assert_int_equal(pyop_set_log_level(PYOP_LOG_WARN), PYOP_OK);
  assert_int_equal(log_each_level(), 2);
  assert_false(pyop__log_enabled(PYOP_LOG_INFO));
  unsetenv("PYOP_LOG");
  pyop_set_host_hooks(NULL);
}

/* A line logged at a level outside the enum (a caller's or a bridge's
 * mistake) is an error line: shown at every log level, named "error". */
static void test_log_line_level_out_of_range(void **state) {
  (void)state;
  int level = pyop_get_log_level();
  hook_on();
  assert_int_equal(pyop_set_log_level(PYOP_LOG_ERROR), PYOP_OK);
  pyop__log(-1, "test", "below");
  assert_int_equal(atomic_load(&seen[PYOP_LOG_ERROR]), 1);
  assert_non_null(strstr(last_line, "libpyop: error: test: below"));
  pyop__log(PYOP_LOG_DEBUG + 1, "test", "above");
  assert_int_equal(atomic_load(&seen[PYOP_LOG_ERROR]), 2);
  assert_non_null(strstr(last_line, "libpyop: error: test: above"));
  assert_int_equal(pyop_set_log_level(level), PYOP_OK);
  pyop_set_host_hooks(NULL);
}

/* A level outside the enum is refused, named, and changes nothing. */
static void test_set_log_level_refused(void **state) {
  (void)state;
  assert_int_equal(pyop_set_log_level(PYOP_LOG_INFO), PYOP_OK);
  static const int bad[] = {-1, 4, 1000, -2147483647 - 1};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(pyop_set_log_level(bad[i]), PYOP_EINVAL);
    char want[64];
    snprintf(want, sizeof want, "level %d is not a pyop_log_level", bad[i]);
    assert_non_null(strstr(pyop_last_error(), want));
    assert_non_null(strstr(pyop_last_error(), "PYOP_LOG_ERROR 0 .. PYOP_LOG_DEBUG 3"));
    assert_int_equal(pyop_get_log_level(), PYOP_LOG_INFO);
  }
}

/* Several threads set the level and log while others read it: every read
 * is one of the levels set (ThreadSanitizer runs this too). */
static atomic_bool stop;
static atomic_int setter_failures; /* cmocka's asserts are for the main thread */

static void *setter(void *arg) {
  int base = (int)(intptr_t)arg;
  for (int i = 0; !atomic_load(&stop) && i < 20000; i++) {
    if (pyop_set_log_level((base + i) % 2 ? PYOP_LOG_ERROR : PYOP_LOG_WARN) != PYOP_OK)
      atomic_fetch_add(&setter_failures, 1);
    pyop__log(PYOP_LOG_DEBUG, "test", "never logged at error or warn");
  }
  return NULL;
}

static void test_log_level_threads(void **state) {
  (void)state;
  hook_on();
  assert_int_equal(pyop_set_log_level(PYOP_LOG_WARN), PYOP_OK);
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    assert_int_equal(pthread_create(&t[i], NULL, setter, (void *)(intptr_t)i), 0);
  for (int i = 0; i < 20000; i++) {
    int lv = pyop_get_log_level();
    assert_true(lv == PYOP_LOG_ERROR || lv == PYOP_LOG_WARN);
  }
  atomic_store(&stop, true);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  assert_int_equal(atomic_load(&setter_failures), 0);
  assert_int_equal(atomic_load(&seen[PYOP_LOG_DEBUG]), 0);
  pyop_set_host_hooks(NULL);
}

/* The runtime's number is the header's, and says what pyop_version() says. */
static void test_version_number(void **state) {
  (void)state;
  assert_int_equal(pyop_version_number(), PYOP_VERSION_NUMBER);
  assert_int_equal(PYOP_VERSION_NUMBER, PYOP_VERSION_MAJOR * 10000 + PYOP_VERSION_MINOR * 100 +
                                            PYOP_VERSION_PATCH);
  int major = -1, minor = -1, patch = -1;
  assert_int_equal(sscanf(pyop_version(), "%d.%d.%d", &major, &minor, &patch), 3);
  assert_int_equal(pyop_version_number(), PYOP_VERSION_NUMBER_OF(major, minor, patch));
  assert_true(PYOP_VERSION_NUMBER_OF(0, 1, 0) < PYOP_VERSION_NUMBER_OF(0, 1, 1));
  assert_true(PYOP_VERSION_NUMBER_OF(0, 99, 99) < PYOP_VERSION_NUMBER_OF(1, 0, 0));
}

/* PYOP_LOG as a fresh process reads it (the level is read once, so each
 * value runs this program again: `test_log --level-from-env`): the names in
 * any case, anything else the default (the mutation check: only "debug"
 * was tried). */
static void test_level_from_environment(void **state) {
  (void)state;
  static const struct {
    const char *value; /* NULL: unset */
    int level;
  } cases[] = {
      {"debug", PYOP_LOG_DEBUG}, {"DEBUG", PYOP_LOG_DEBUG}, {"Info", PYOP_LOG_INFO},
      {"ERROR", PYOP_LOG_ERROR}, {"warn", PYOP_LOG_WARN},   {"verbose", PYOP_LOG_WARN},
      {"", PYOP_LOG_WARN},       {NULL, PYOP_LOG_WARN},
      /* A name with more after it is no name (outcome pass 2: src.out2.log.env_name_prefix). */
      {"debugging", PYOP_LOG_WARN}, {"errors", PYOP_LOG_WARN}, {"info2", PYOP_LOG_WARN},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "/proc/%ld/exe --level-from-env", (long)getpid());
    if (cases[i].value) setenv("PYOP_LOG", cases[i].value, 1);
    else unsetenv("PYOP_LOG");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int level = -1;
    assert_int_equal(fscanf(p, "%d", &level), 1);
    assert_int_equal(pclose(p), 0);
    if (level != cases[i].level)
      fail_msg("PYOP_LOG=%s: level %d, want %d", cases[i].value ? cases[i].value : "(unset)",
               level, cases[i].level);
  }
  unsetenv("PYOP_LOG");
}

/* stderr (fd 2) while fn runs, as text (at most n-1 bytes). */
static void capture_stderr(void (*fn)(void), char *out, size_t n) {
  char path[] = "/tmp/pyop-test-log-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  fflush(stderr);
  int saved = dup(2);
  assert_true(saved >= 0);
  assert_int_equal(dup2(fd, 2), 2);
  fn();
  fflush(stderr);
  assert_int_equal(dup2(saved, 2), 2);
  close(saved);
  ssize_t got = pread(fd, out, n - 1, 0);
  assert_true(got >= 0);
  out[got] = '\0';
  close(fd);
}

static void log_one_error(void) { pyop__log(PYOP_LOG_ERROR, "test", "routed line"); }

/* A line the host's log hook takes is the host's: it is not written to
 * stderr as well; without a hook it goes to stderr. */
static void test_hook_takes_the_line(void **state) {
  (void)state;
  char text[512];
  hook_on();
  capture_stderr(log_one_error, text, sizeof text);
  pyop_set_host_hooks(NULL);
  assert_int_equal(atomic_load(&seen[PYOP_LOG_ERROR]), 1);
  assert_non_null(strstr(last_line, "routed line"));
  if (strstr(text, "routed line")) fail_msg("the hooked line reached stderr too: %s", text);
  capture_stderr(log_one_error, text, sizeof text);
  assert_non_null(strstr(text, "libpyop: error: test: routed line"));
}

/* pyop__getenv under secure execution (AT_SECURE: setuid, capabilities):
 * secure_getenv answers NULL for everything, and libpyop says so once per
 * process on stderr, naming the first variable it could not read; a
 * variable merely unset in a normal process says nothing (both-sides pass,
 * session 14: the normal and the secure side, the first and the second
 * time). */
static unsigned long secure_getauxval(unsigned long type) {
  return type == AT_SECURE ? 1 : getauxval(type);
}
static unsigned long normal_getauxval(unsigned long type) {
  return type == AT_SECURE ? 0 : getauxval(type);
}
static char *null_secure_getenv(const char *name) {
  (void)name;
  return NULL;
}
static const char *got_env[2];
static void getenv_twice(void) {
  got_env[0] = pyop__getenv("PYOP_TEST_FIRST_VAR");
  got_env[1] = pyop__getenv("PYOP_TEST_SECOND_VAR");
}

static void test_secure_execution_said_once(void **state) {
  (void)state;
  char text[1024];
  unsetenv("PYOP_TEST_FIRST_VAR");
  unsetenv("PYOP_TEST_SECOND_VAR");
  pyop__sys saved = pyop__sys_table;
  pyop__sys_table.getauxval = normal_getauxval;
  capture_stderr(getenv_twice, text, sizeof text);
  assert_null(got_env[0]);
  assert_null(got_env[1]);
  if (text[0]) fail_msg("an unset variable in a normal process said: %s", text);
  setenv("PYOP_TEST_FIRST_VAR", "1", 1);
  assert_string_equal(pyop__getenv("PYOP_TEST_FIRST_VAR"), "1");
  pyop__sys_table.getauxval = secure_getauxval;
  pyop__sys_table.secure_getenv = null_secure_getenv;
  capture_stderr(getenv_twice, text, sizeof text);
  pyop__sys_table = saved;
  unsetenv("PYOP_TEST_FIRST_VAR");
  assert_null(got_env[0]); /* set, but not read */
  assert_null(got_env[1]);
  assert_string_equal(text, "libpyop: warn: secure execution (setuid/capabilities): "
                            "environment variables such as PYOP_TEST_FIRST_VAR are ignored\n");
}

/* The host hooks of an older, shorter pyop_host_hooks: exactly the members
 * its struct_size holds whole are installed, whatever the bytes past it
 * hold; a member cut in two is not (both-sides pass, session 14: every
 * member's boundary, not only the log hook's). */
static int calls_owns, calls_reg, calls_unreg, calls_log;
static int all_owns(void *user, const char *op_type) {
  (void)user;
  (void)op_type;
  calls_owns++;
  return 1;
}
static void all_reg(void *user, const pyop_op_info *info) {
  (void)user;
  (void)info;
  calls_reg++;
}
static void all_unreg(void *user, const char *op_type) {
  (void)user;
  (void)op_type;
  calls_unreg++;
}
static void all_log(void *user, int level, const char *line) {
  (void)user;
  (void)level;
  (void)line;
  calls_log++;
}

static void test_hooks_of_a_shorter_struct(void **state) {
  (void)state;
  const size_t cuts[] = {
      PYOP_MEMBER_END(pyop_host_hooks, user),
      PYOP_MEMBER_END(pyop_host_hooks, owns_op),
      PYOP_MEMBER_END(pyop_host_hooks, on_register),
      PYOP_MEMBER_END(pyop_host_hooks, on_unregister) - 1, /* on_unregister cut */
      PYOP_MEMBER_END(pyop_host_hooks, on_unregister),
      PYOP_MEMBER_END(pyop_host_hooks, log),
  };
  /* How many of owns_op, on_register, on_unregister, log each cut holds. */
  const int held[] = {0, 1, 2, 2, 3, 4};
  for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
    pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
    h.owns_op = all_owns;
    h.on_register = all_reg;
    h.on_unregister = all_unreg;
    h.log = all_log;
    h.struct_size = cuts[i];
    assert_int_equal(pyop_set_host_hooks(&h), PYOP_OK);
    calls_owns = calls_reg = calls_unreg = calls_log = 0;
    int owns = pyop__hook_owns_op("Op");
    pyop__hook_on_register(NULL);
    pyop__hook_on_unregister("Op");
    bool logged = pyop__hook_log(PYOP_LOG_ERROR, "libpyop: error: a line");
    unsigned present = pyop__hooks_present();
    assert_int_equal(pyop_set_host_hooks(NULL), PYOP_OK);
    int n = held[i];
    if (owns != (n >= 1) || calls_owns != (n >= 1) || calls_reg != (n >= 2) ||
        calls_unreg != (n >= 3) || calls_log != (n >= 4) || logged != (n >= 4) ||
        !!(present & PYOP__HOOK_OWNS_OP) != (n >= 1) ||
        !!(present & PYOP__HOOK_ON_REGISTER) != (n >= 2) ||
        !!(present & PYOP__HOOK_ON_UNREGISTER) != (n >= 3) ||
        !!(present & PYOP__HOOK_LOG) != (n >= 4))
      fail_msg("struct_size %zu (%d members): owns_op %d/%d calls, on_register %d, "
               "on_unregister %d, log %d, present 0x%x",
               cuts[i], n, owns, calls_owns, calls_reg, calls_unreg, calls_log, present);
  }
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--level-from-env") == 0) {
    printf("%d\n", pyop_get_log_level());
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_set_log_level),
      cmocka_unit_test(test_set_log_level_refused),
      cmocka_unit_test(test_log_line_level_out_of_range),
      cmocka_unit_test(test_log_level_threads),
      cmocka_unit_test(test_version_number),
      cmocka_unit_test(test_level_from_environment),
      cmocka_unit_test(test_hook_takes_the_line),
      cmocka_unit_test(test_hooks_of_a_shorter_struct),
      cmocka_unit_test(test_secure_execution_said_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
