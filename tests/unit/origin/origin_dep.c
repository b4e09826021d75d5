/* The sibling library of origin_kernel.c: found only through the kernel
 * library's RUNPATH $ORIGIN (test_launch: kernel libraries with $ORIGIN). */
#include <stdint.h>

__attribute__((visibility("default"))) int32_t origin_dep_value(void);

int32_t origin_dep_value(void) { return 41; }
