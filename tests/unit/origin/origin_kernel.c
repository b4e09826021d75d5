/* A kernel library whose RUNPATH is $ORIGIN: it needs its sibling
 * libpyop_test_origin_dep.so (test_launch: kernel libraries with $ORIGIN). */
#include <stdint.h>

int32_t origin_dep_value(void);
__attribute__((visibility("default"))) void origin_kernel(int32_t *out);

void origin_kernel(int32_t *out) { *out = origin_dep_value() + 1; }
