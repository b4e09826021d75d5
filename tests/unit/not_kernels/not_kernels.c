/*
 * A kernel library whose exports are not all kernels (test_launch and the
 * e2e case "limits": a plan naming one is refused at declare time): a const
 * data object (in .rodata), a writable one, a thread-local variable, and
 * one real kernel, which calls libc's exit so that the library needs libc
 * (dlsym on its handle then also finds exit, a function of libc).
 */
#include <stdint.h>
#include <stdlib.h>

#define NK_EXPORT __attribute__((visibility("default")))

NK_EXPORT const int32_t not_kernels_table[4] = {1, 2, 3, 4};
NK_EXPORT int32_t not_kernels_counter = 7;
NK_EXPORT _Thread_local int32_t not_kernels_tls;

/* The one kernel: *out = 42, or the process exits with code when asked. */
NK_EXPORT void not_kernels_store(int32_t *out, int32_t code);
void not_kernels_store(int32_t *out, int32_t code) {
  if (code != 0) exit(code);
  *out = 42;
}
