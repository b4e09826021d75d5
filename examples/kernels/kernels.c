/*
 * Example kernels (see kernels.h): plain C, no dependencies, no libpyop.
 */
#include "kernels.h"

#include <stddef.h>

void pyop_example_add_f32(const float *a, const float *b, float *out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void pyop_example_scale_f32(const float *x, float *out, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; i++) out[i] = alpha * x[i];
}

void pyop_example_empty4(void *a, void *b, void *c, int64_t n) {
  (void)a;
  (void)b;
  (void)c;
  (void)n;
}

#define PYOP_EXAMPLE_STORE(suffix, type) \
  void pyop_example_store_##suffix(type v, type *out) { *out = v; }

PYOP_EXAMPLE_STORE(i8, int8_t)
PYOP_EXAMPLE_STORE(i16, int16_t)
PYOP_EXAMPLE_STORE(i32, int32_t)
PYOP_EXAMPLE_STORE(i64, int64_t)
PYOP_EXAMPLE_STORE(u8, uint8_t)
PYOP_EXAMPLE_STORE(u16, uint16_t)
PYOP_EXAMPLE_STORE(u32, uint32_t)
PYOP_EXAMPLE_STORE(u64, uint64_t)
PYOP_EXAMPLE_STORE(f32, float)
PYOP_EXAMPLE_STORE(f64, double)
PYOP_EXAMPLE_STORE(bool, bool)
PYOP_EXAMPLE_STORE(ptr, void *)

void pyop_example_collect4(void *a, void *b, void *c, void *d, void **out) {
  out[0] = a;
  out[1] = b;
  out[2] = c;
  out[3] = d;
}

void pyop_example_append_i32(int32_t v, int32_t *log) {
  log[0]++;
  log[log[0]] = v;
}

void pyop_example_mixed(int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e,
                        uint32_t f, int64_t g, uint64_t h, bool i, void *j, float k,
                        double l, float m, double n, float o, double p, float q,
                        double r, float s, double t, int8_t u, bool v,
                        pyop_example_mixed_record *out) {
  pyop_example_mixed_record rec = {a, b, c, d, e, f, g, h, i, j, k,
                                   l, m, n, o, p, q, r, s, t, u, v};
  *out = rec;
}

long pyop_example_calls;

void pyop_example_count_calls(void) { pyop_example_calls++; }
