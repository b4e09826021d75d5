/*
 * The forked flag and the guard every status-returning call starts with
 * (fork.c).
 */
#ifndef PYOP_FORK_H
#define PYOP_FORK_H

#include "core.h"

#include <stdatomic.h>

/*
 * Set in the child of a fork() that happened while a bridge was open or a
 * lifecycle call ran (fork.c): the child's copy of Python and of the
 * bridge cannot be used (the GIL, kept thread states and locks belong to
 * threads that do not exist in the child). Every libpyop call that returns a
 * status then fails at once with PYOP_EFORKED; pyop_op_destroy frees
 * libpyop's memory only. A child forked while libpyop was idle is unaffected.
 */
extern atomic_bool pyop__forked_flag;
static inline bool pyop__forked(void) {
  return atomic_load_explicit(&pyop__forked_flag, memory_order_relaxed);
}
/* Records the EFORKED error of fn and returns PYOP_EFORKED (cold). */
int pyop__error_forked(const char *fn) __attribute__((cold));
#define PYOP__FORK_GUARD()                                                    \
  do {                                                                        \
    if (pyop__forked()) return pyop__error_forked(__func__);                  \
  } while (0)

#endif /* PYOP_FORK_H */
