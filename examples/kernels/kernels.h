/*
 * Example C kernels for libpyop launch plans (docs/design.md §Launch). Example ops
 * describe calls to them from Python (declare_launch_args), and the unit
 * tests use them to check that every argument kind and scalar type reaches a
 * C function exactly. Every kernel returns void, as launch plans require.
 *
 * Built as libpyop_example_kernels.so (installed to <libdir>/pyop/examples/).
 */
#ifndef PYOP_EXAMPLE_KERNELS_H
#define PYOP_EXAMPLE_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__GNUC__)
#define PYOP_EXAMPLE_EXPORT __attribute__((visibility("default")))
#else
#define PYOP_EXAMPLE_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = a[i] + b[i] for i in [0, n). */
PYOP_EXAMPLE_EXPORT void pyop_example_add_f32(const float *a, const float *b,
                                              float *out, int64_t n);
/* out[i] = alpha * x[i] for i in [0, n); out may be x. */
PYOP_EXAMPLE_EXPORT void pyop_example_scale_f32(const float *x, float *out,
                                                int64_t n, float alpha);
/* Does nothing: the cost of a launch itself (benchmarks). */
PYOP_EXAMPLE_EXPORT void pyop_example_empty4(void *a, void *b, void *c, int64_t n);

/* One kernel per scalar type: *out = v, so a caller can check the value
 * arrived exactly. */
PYOP_EXAMPLE_EXPORT void pyop_example_store_i8(int8_t v, int8_t *out);
PYOP_EXAMPLE_EXPORT void pyop_example_store_i16(int16_t v, int16_t *out);
PYOP_EXAMPLE_EXPORT void pyop_example_store_i32(int32_t v, int32_t *out);
PYOP_EXAMPLE_EXPORT void pyop_example_store_i64(int64_t v, int64_t *out);
PYOP_EXAMPLE_EXPORT void pyop_example_store_u8(uint8_t v, uint8_t *out);
PYOP_EXAMPLE_EXPORT void pyop_example_store_u16(uint16_t v, uint16_t *out);
PYOP_EXAMPLE_EXPORT void pyop_example_store_u32(uint32_t v, uint32_t *out);
PYOP_EXAMPLE_EXPORT void pyop_example_store_u64(uint64_t v, uint64_t *out);
PYOP_EXAMPLE_EXPORT void pyop_example_store_f32(float v, float *out);
PYOP_EXAMPLE_EXPORT void pyop_example_store_f64(double v, double *out);
PYOP_EXAMPLE_EXPORT void pyop_example_store_bool(bool v, bool *out);
PYOP_EXAMPLE_EXPORT void pyop_example_store_ptr(void *v, void **out);

/* out[0..4) = a, b, c, d: the order in which pointer arguments arrive. */
PYOP_EXAMPLE_EXPORT void pyop_example_collect4(void *a, void *b, void *c, void *d,
                                               void **out);

/* Appends v to a log: log[0] is the count, the values follow. Launches that
 * append in turn show the order they ran in. */
PYOP_EXAMPLE_EXPORT void pyop_example_append_i32(int32_t v, int32_t *log);

/* What pyop_example_mixed received. */
typedef struct pyop_example_mixed_record {
  int8_t a;
  uint8_t b;
  int16_t c;
  uint16_t d;
  int32_t e;
  uint32_t f;
  int64_t g;
  uint64_t h;
  bool i;
  void *j;
  float k;
  double l;
  float m;
  double n;
  float o;
  double p;
  float q;
  double r;
  float s;
  double t;
  int8_t u;
  bool v;
} pyop_example_mixed_record;

/*
 * Every scalar type at once, more integer and floating-point arguments than
 * x86-64 and AArch64 pass in registers, so the last ones (small integers,
 * bool, float, double, the out pointer) travel on the stack. Records all of
 * them in *out.
 */
PYOP_EXAMPLE_EXPORT void pyop_example_mixed(
    int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e, uint32_t f, int64_t g,
    uint64_t h, bool i, void *j, float k, double l, float m, double n, float o,
    double p, float q, double r, float s, double t, int8_t u, bool v,
    pyop_example_mixed_record *out);

/* Number of calls of pyop_example_count_calls so far (a kernel with no
 * arguments). */
PYOP_EXAMPLE_EXPORT extern long pyop_example_calls;
PYOP_EXAMPLE_EXPORT void pyop_example_count_calls(void);

#ifdef __cplusplus
}
#endif

#endif
