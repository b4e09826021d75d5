/*
 * Shape arithmetic: the one rule for a tensor's element count, byte size
 * and strides. Header-only so that libpyop (src/) and the bridge (bridge/,
 * which links no libpyop object) compile the very same code; it needs only
 * <stdint.h> and <stdbool.h>, no other libpyop header.
 *
 * The rule, in this order:
 *   1. a negative dimension, wherever it is, makes the shape bad;
 *   2. else a dimension of 0, wherever it is, makes the tensor empty: count
 *      and byte size are 0, whatever the other dimensions are ({0, 2^62,
 *      2^62} and {2^62, 2^62, 0} are both empty, neither overflows);
 *   3. else the count is the product of the dimensions and the size that
 *      times the element size, refused when either exceeds its limit.
 * Strides are C-contiguous, in bytes, a dimension of 0 counting as 1 (as
 * numpy does). A non-empty tensor whose size is within the limit has every
 * stride within it too; an empty tensor's stride that would exceed the
 * limit is the limit (saturated: no element is ever addressed through it).
 * Every product is computed with overflow checks (__builtin_mul_overflow):
 * no undefined behaviour, no wrapped value, for any input.
 */
#ifndef PYOP_SHAPE_H
#define PYOP_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum pyop__shape_status {
  PYOP__SHAPE_OK = 0,
  PYOP__SHAPE_NEGATIVE, /* a dimension is negative */
  PYOP__SHAPE_OVERFLOW, /* not empty, and the size exceeds the limit */
} pyop__shape_status;

/*
 * elem times the product of shape[0..ndim) into *size (1 * elem for ndim
 * 0, 0 for an empty tensor), by the rule above; *size is 0 unless the
 * result is PYOP__SHAPE_OK. elem 1 gives the element count; elem must not
 * be 0. ndim must be in 0..PYOP_MAX_DIMS (the caller checks). One pass, no
 * division (it runs for every tensor of every call): without overflow the
 * product is exact, so it is 0 exactly when a dimension is; only after an
 * overflow are the dimensions looked at again for a 0.
 */
static inline pyop__shape_status pyop__shape_size(const int64_t *shape, int32_t ndim,
                                                  uint64_t elem, uint64_t limit,
                                                  uint64_t *size) {
  uint64_t n = elem;
  bool over = false;
  *size = 0;
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] < 0) return PYOP__SHAPE_NEGATIVE;
    over |= __builtin_mul_overflow(n, (uint64_t)shape[i], &n);
  }
  if (__builtin_expect(over, 0)) {
    for (int32_t i = 0; i < ndim; i++)
      if (shape[i] == 0) return PYOP__SHAPE_OK; /* empty: nothing overflows */
    return PYOP__SHAPE_OVERFLOW;
  }
  if (n > limit) return PYOP__SHAPE_OVERFLOW;
  *size = n;
  return PYOP__SHAPE_OK;
}

/*
 * The C-contiguous strides in bytes of shape[0..ndim) (non-negative dims)
 * with elements of elem bytes into strides[0..ndim), each at most limit
 * (saturated above it: only an empty tensor's can be). True when none
 * saturated.
 */
static inline bool pyop__shape_strides(const int64_t *shape, int32_t ndim, uint64_t elem,
                                       uint64_t limit, uint64_t *strides) {
  bool sat = elem > limit, exact = true;
  uint64_t s = sat ? limit : elem;
  for (int32_t i = ndim - 1; i >= 0; i--) {
    strides[i] = s;
    exact &= !sat;
    if (sat) continue;
    uint64_t d = shape[i] > 0 ? (uint64_t)shape[i] : 1;
    sat = __builtin_mul_overflow(s, d, &s) || s > limit;
    if (sat) s = limit;
  }
  return exact;
}

#endif /* PYOP_SHAPE_H */
