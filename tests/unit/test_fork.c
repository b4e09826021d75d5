/*
 * fork() while another thread is inside a slow libpyop call (issue 17 item
 * 8): every libpyop lock is taken around fork() or never held across a slow
 * call, so the child never blocks on a lock copied held. The child runs
 * under a watchdog (alarm): it must see PYOP_EFORKED or work, never hang.
 *
 * Its own executable: the artifacts root must not be resolved yet when the
 * test starts (it is cached for the life of the process).
 */
#include "testutil.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "candidates.h"
#include "hooks.h"
#include "trust.h"
#include "registry.h"

static atomic_bool armed, inside, released;
static int (*real_dladdr)(const void *, Dl_info *);

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The first call stands for a slow resolution: it waits until released. */
static int slow_dladdr(const void *addr, Dl_info *info) {
  if (atomic_exchange(&armed, false)) {
    atomic_store(&inside, true);
    while (!atomic_load(&released)) pause_ms(1);
  }
  return real_dladdr(addr, info);
}

static void *doctor_thread(void *arg) {
  (void)arg;
  char *out = NULL;
  if (pyop_doctor(&out) == PYOP_OK) pyop_free(out);
  return NULL;
}

/* In the child: 0 when pyop_doctor worked (and names the artifacts root) or
 * said PYOP_EFORKED; 2 otherwise; killed by SIGALRM when it hangs. */
static int child_main(void) {
  alarm(10);
  char *out = NULL;
  int rc = pyop_doctor(&out);
  if (rc == PYOP_EFORKED) return 0;
  if (rc != PYOP_OK) {
    fprintf(stderr, "child: pyop_doctor: %s: %s\n", pyop_status_name(rc), pyop_last_error());
    return 2;
  }
  bool ok = strstr(out, "\nartifacts: /") != NULL && strstr(out, "/pyop/artifacts\n") != NULL;
  if (!ok) fprintf(stderr, "child: doctor without the artifacts root:\n%s", out);
  pyop_free(out);
  return ok ? 0 : 2;
}

static void test_fork_during_root_resolution(void **state) {
  (void)state;
  unsetenv("ASCEND_CUSTOM_OPP_PATH");
  real_dladdr = pyop__sys_table.dladdr;
  pyop__sys_table.dladdr = slow_dladdr;
  atomic_store(&armed, true);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, doctor_thread, NULL), 0);
  while (!atomic_load(&inside)) pause_ms(1);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(child_main());
  atomic_store(&released, true);
  pthread_join(th, NULL);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  pyop__sys_reset();
  if (WIFSIGNALED(status))
    fail_msg("the child died of signal %d (%s): it hung on a lock copied held", WTERMSIG(status),
             WTERMSIG(status) == SIGALRM ? "the watchdog" : "a crash");
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* A hook call in progress on another thread at fork(): the child does not
 * have that thread, so pyop_set_host_hooks there must not wait for it. */
static atomic_bool hook_inside, hook_released;

static void blocking_on_register(void *user, const pyop_op_info *info) {
  (void)user;
  (void)info;
  atomic_store(&hook_inside, true);
  while (!atomic_load(&hook_released)) pause_ms(1);
}

static const pyop_op_callbacks no_cbs = {sizeof(pyop_op_callbacks), NULL, NULL,
                                         NULL, NULL, NULL, NULL};

static void *commit_thread(void *arg) {
  (void)arg;
  static const pyop_io_view out[1] = {{sizeof(pyop_io_view), {"y", 1}, PYOP_IO_REQUIRED}};
  pyop_proto_view p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.op_type = (pyop_str){"ForkOp", 6};
  p.key = (pyop_str){"fork:op", 7};
  p.source_file = (pyop_str){"/fork.py", 8};
  p.source_line = 1;
  p.outputs = out;
  p.n_outputs = 1;
  p.callbacks = &no_cbs;
  pyop__txn *t;
  if (pyop__txn_begin(&t) != PYOP_OK) return NULL;
  if (pyop__txn_add_proto(t, &p) != PYOP_OK) {
    pyop__txn_abort(t);
    return NULL;
  }
  (void)pyop__txn_commit(t);
  return NULL;
}

static int hooks_child_main(void) {
  alarm(10);
  int rc = pyop_set_host_hooks(NULL);
  return rc == PYOP_OK || rc == PYOP_EFORKED ? 0 : 2;
}

static void test_fork_during_hook_call(void **state) {
  (void)state;
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.on_register = blocking_on_register;
  assert_int_equal(pyop_set_host_hooks(&h), PYOP_OK);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, commit_thread, NULL), 0);
  while (!atomic_load(&hook_inside)) pause_ms(1);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(hooks_child_main());
  atomic_store(&hook_released, true);
  pthread_join(th, NULL);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_int_equal(pyop_set_host_hooks(NULL), PYOP_OK);
  assert_int_equal(pyop__registry_clear(), PYOP_OK);
  if (WIFSIGNALED(status))
    fail_msg("the child died of signal %d: pyop_set_host_hooks waited for a hook call "
             "of a thread it does not have", WTERMSIG(status));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * fork() from inside a hook, on the thread that runs it (a host's
 * on_register that forks): in the child that call of the hook ends (its
 * generation began before the fork: not counted), so the child's
 * pyop_set_host_hooks, outside any hook, does not wait for it, and a hook
 * it installs runs (configuration pass, src.cf.hooks.fork_gen_kept).
 */
static pid_t forked_in_hook = -1;
static atomic_int child_registered;

static void forking_on_register(void *user, const pyop_op_info *info) {
  (void)user;
  (void)info;
  forked_in_hook = fork();
}

static void counting_on_register(void *user, const pyop_op_info *info) {
  (void)user;
  (void)info;
  atomic_fetch_add(&child_registered, 1);
}

static int forked_in_hook_child_main(void) {
  alarm(10);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.on_register = counting_on_register;
  if (pyop_set_host_hooks(&h) != PYOP_OK) return 2;
  if (pyop_set_host_hooks(NULL) != PYOP_OK) return 3;
  if (pyop_set_host_hooks(&h) != PYOP_OK) return 4;
  if (pyop__registry_clear() != PYOP_OK) return 5;
  commit_thread(NULL); /* registers ForkOp again: the child's hook runs */
  if (atomic_load(&child_registered) != 1) return 6;
  return pyop_set_host_hooks(NULL) == PYOP_OK ? 0 : 7;
}

static void test_fork_inside_own_hook(void **state) {
  (void)state;
  assert_int_equal(pyop__registry_clear(), PYOP_OK);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.on_register = forking_on_register;
  assert_int_equal(pyop_set_host_hooks(&h), PYOP_OK);
  commit_thread(NULL);
  if (forked_in_hook == 0) _exit(forked_in_hook_child_main());
  pid_t pid = forked_in_hook;
  assert_true(pid > 0);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_int_equal(pyop_set_host_hooks(NULL), PYOP_OK);
  assert_int_equal(pyop__registry_clear(), PYOP_OK);
  if (WIFSIGNALED(status))
    fail_msg("the child died of signal %d: pyop_set_host_hooks waited for the hook call the "
             "fork was made in", WTERMSIG(status));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * pyop_set_host_hooks returns only when the calls of the hooks it replaces
 * have ended: a call running on another thread when the hooks change is
 * waited for (dataflow pass, session 13: the running calls not carried
 * over to the old generation, so nothing was waited for). The releaser
 * lets the hook go a while later; a set_host_hooks that returns before it
 * finds the hook still running. Last in this executable, and in a child:
 * with the count wrong, every later pyop_set_host_hooks of the process
 * would wait for ever.
 */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool entered, released, finished;
} slow_hook = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, false};

static int slow_owns(void *user, const char *op_type) {
  (void)user;
  (void)op_type;
  pthread_mutex_lock(&slow_hook.mu);
  slow_hook.entered = true;
  pthread_cond_broadcast(&slow_hook.cv);
  while (!slow_hook.released) pthread_cond_wait(&slow_hook.cv, &slow_hook.mu);
  slow_hook.finished = true;
  pthread_mutex_unlock(&slow_hook.mu);
  return 0;
}

static void *slow_caller(void *arg) {
  (void)arg;
  (void)pyop__hook_owns_op("Slow");
  return NULL;
}

static void *slow_releaser(void *arg) {
  (void)arg;
  struct timespec ts = {0, 200 * 1000 * 1000};
  nanosleep(&ts, NULL);
  pthread_mutex_lock(&slow_hook.mu);
  slow_hook.released = true;
  pthread_cond_broadcast(&slow_hook.cv);
  pthread_mutex_unlock(&slow_hook.mu);
  return NULL;
}

/* The scenario, in a child process (a wrong count left by a failure would
 * make every later pyop_set_host_hooks of the process wait): 0 when
 * pyop_set_host_hooks(NULL) returned after the hook call ended. */
static int set_hooks_waits_child(void) {
  alarm(20);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.owns_op = slow_owns;
  if (pyop_set_host_hooks(&h) != PYOP_OK) return 2;
  pthread_t caller, releaser;
  if (pthread_create(&caller, NULL, slow_caller, NULL) != 0) return 3;
  pthread_mutex_lock(&slow_hook.mu);
  while (!slow_hook.entered) pthread_cond_wait(&slow_hook.cv, &slow_hook.mu);
  pthread_mutex_unlock(&slow_hook.mu);
  if (pthread_create(&releaser, NULL, slow_releaser, NULL) != 0) return 4;
  if (pyop_set_host_hooks(NULL) != PYOP_OK) return 5;
  pthread_mutex_lock(&slow_hook.mu);
  bool finished = slow_hook.finished;
  pthread_mutex_unlock(&slow_hook.mu);
  pthread_join(releaser, NULL);
  pthread_join(caller, NULL);
  return finished ? 0 : 6;
}

static void test_set_hooks_waits(void **state) {
  (void)state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(set_hooks_waits_child());
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (WIFSIGNALED(status)) fail_msg("the child died of signal %d", WTERMSIG(status));
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 6)
    fail_msg("pyop_set_host_hooks returned while a call of the old owns_op ran");
  assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fork_during_root_resolution),
      cmocka_unit_test(test_fork_during_hook_call),
      cmocka_unit_test(test_fork_inside_own_hook),
      cmocka_unit_test(test_set_hooks_waits), /* last: see there */
  };
  return cmocka_run_group_tests_name("fork", tests, NULL, NULL);
}
