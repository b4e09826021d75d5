/*
 * Unit tests of the shape arithmetic (src/shape.h), the one rule libpyop
 * and the bridge share for element counts, byte sizes and strides: a
 * negative dimension is bad, else a 0 dimension makes the tensor empty
 * whatever the others, else the product is overflow-checked. Both orders of
 * a huge shape with a 0 give the same answer; nothing is undefined (this
 * file runs under UBSan in the asan stage).
 */
#include "testutil.h"

#include "shape.h"

#include <string.h>

static const int64_t BIG = (int64_t)1 << 62;
static const int64_t P20 = 3486784401LL; /* 3**20 */

static pyop__shape_status size_of(const int64_t *shape, int32_t ndim, uint64_t elem,
                                  uint64_t limit, uint64_t *n) {
  *n = 12345;
  return pyop__shape_size(shape, ndim, elem, limit, n);
}

static void test_empty_before_overflow(void **state) {
  (void)state;
  uint64_t n;
  const int64_t orders[][3] = {{BIG, BIG, 0}, {0, BIG, BIG}, {BIG, 0, BIG},
                               {0, P20, P20}, {P20, P20, 0}};
  for (size_t k = 0; k < sizeof orders / sizeof orders[0]; k++) {
    assert_int_equal(size_of(orders[k], 3, 4, UINT64_MAX, &n), PYOP__SHAPE_OK);
    assert_int_equal(n, 0);
    assert_int_equal(size_of(orders[k], 3, 1, INT64_MAX, &n), PYOP__SHAPE_OK);
    assert_int_equal(n, 0);
  }
  const int64_t overs[][3] = {{BIG, BIG, 1}, {1, BIG, BIG}, {P20, P20, 2}};
  for (size_t k = 0; k < sizeof overs / sizeof overs[0]; k++) {
    assert_int_equal(size_of(overs[k], 3, 4, UINT64_MAX, &n), PYOP__SHAPE_OVERFLOW);
    assert_int_equal(n, 0);
  }
  /* A negative dimension is bad wherever it is, even beside a 0. */
  const int64_t negs[][2] = {{-5, 0}, {0, -5}, {BIG, -1}};
  for (size_t k = 0; k < 3; k++)
    assert_int_equal(size_of(negs[k], 2, 4, UINT64_MAX, &n), PYOP__SHAPE_NEGATIVE);
}

static void test_sizes_and_limits(void **state) {
  (void)state;
  uint64_t n;
  assert_int_equal(size_of(NULL, 0, 8, UINT64_MAX, &n), PYOP__SHAPE_OK);
  assert_int_equal(n, 8); /* a scalar is one element */
  const int64_t s[] = {2, 3, 4};
  assert_int_equal(size_of(s, 3, 4, UINT64_MAX, &n), PYOP__SHAPE_OK);
  assert_int_equal(n, 96);
  /* The limit: INT64_MAX elements is a count, INT64_MAX + 1 is not. */
  const int64_t half[] = {BIG, 2};
  assert_int_equal(size_of(half, 2, 1, INT64_MAX, &n), PYOP__SHAPE_OVERFLOW);
  assert_int_equal(size_of(half, 2, 1, UINT64_MAX, &n), PYOP__SHAPE_OK);
  assert_int_equal(n, (uint64_t)1 << 63);
  const int64_t max[] = {INT64_MAX};
  assert_int_equal(size_of(max, 1, 1, INT64_MAX, &n), PYOP__SHAPE_OK);
  assert_int_equal(n, (uint64_t)INT64_MAX);
  assert_int_equal(size_of(max, 1, 2, UINT64_MAX, &n), PYOP__SHAPE_OK);
  assert_int_equal(size_of(max, 1, 3, UINT64_MAX, &n), PYOP__SHAPE_OVERFLOW);
}

/* pyop_tensor_numel (public) follows the same rule. */
static void test_numel_follows(void **state) {
  (void)state;
  pyop_tensor t = PYOP_TENSOR_INIT;
  t.ndim = 3;
  const int64_t a[3] = {BIG, BIG, 0}, b[3] = {0, BIG, BIG}, c[3] = {BIG, BIG, 1};
  memcpy(t.shape, a, sizeof a);
  assert_int_equal(pyop_tensor_numel(&t), 0);
  memcpy(t.shape, b, sizeof b);
  assert_int_equal(pyop_tensor_numel(&t), 0);
  memcpy(t.shape, c, sizeof c);
  assert_int_equal(pyop_tensor_numel(&t), -1);
  /* A count past INT64_MAX that still fits 64 unsigned bits is -1 too,
   * never another negative number (batch 18 survivor): 2**63, 3 * 2**62,
   * 2**64 - 2; INT64_MAX elements is the largest count. */
  t.ndim = 2;
  const int64_t past[][2] = {{BIG, 2}, {2, BIG}, {BIG, 3}, {INT64_MAX, 2}};
  for (size_t k = 0; k < sizeof past / sizeof past[0]; k++) {
    memcpy(t.shape, past[k], sizeof past[k]);
    int64_t n = pyop_tensor_numel(&t);
    if (n != -1) fail_msg("numel of {%lld, %lld}: %lld, expected -1", (long long)past[k][0],
                          (long long)past[k][1], (long long)n);
  }
  const int64_t max[2] = {INT64_MAX, 1};
  memcpy(t.shape, max, sizeof max);
  assert_true(pyop_tensor_numel(&t) == INT64_MAX);
  /* The largest rank counts like any other; one more is no tensor. */
  pyop_tensor r = PYOP_TENSOR_INIT;
  r.ndim = PYOP_MAX_DIMS;
  for (int i = 0; i < PYOP_MAX_DIMS; i++) r.shape[i] = 2;
  assert_int_equal(pyop_tensor_numel(&r), 1 << PYOP_MAX_DIMS);
  r.ndim = PYOP_MAX_DIMS + 1;
  assert_int_equal(pyop_tensor_numel(&r), -1);
  /* A negative rank is no tensor either; rank 0 is a scalar; NULL is -1. */
  r.ndim = -1;
  assert_int_equal(pyop_tensor_numel(&r), -1);
  r.ndim = 0;
  assert_int_equal(pyop_tensor_numel(&r), 1);
  assert_int_equal(pyop_tensor_numel(NULL), -1);
  /* pyop_dtype_from_name: NULL in either argument is refused, *out kept. */
  int d = 77;
  assert_int_equal(pyop_dtype_from_name(NULL, &d), PYOP_EINVAL);
  assert_string_equal(pyop_last_error(), "pyop_dtype_from_name: name or out_dtype is NULL");
  assert_int_equal(d, 77);
  assert_int_equal(pyop_dtype_from_name("float32", NULL), PYOP_EINVAL);
  assert_int_equal(pyop_dtype_from_name("float32", &d), PYOP_OK);
  assert_int_equal(d, PYOP_DTYPE_FLOAT32);
  /* pyop_tensor_of: an empty tensor is 0 bytes in both orders. */
  pyop_tensor e1 = pyop_tensor_of(NULL, PYOP_DTYPE_FLOAT32, 3, a);
  pyop_tensor e2 = pyop_tensor_of(NULL, PYOP_DTYPE_FLOAT32, 3, b);
  assert_int_equal(e1.nbytes, 0);
  assert_int_equal(e2.nbytes, 0);
}

/* Strides: C-contiguous bytes, a 0 dimension counts as 1 (numpy's rule);
 * an empty tensor's stride beyond the limit saturates; never negative. */
static void test_strides(void **state) {
  (void)state;
  uint64_t st[PYOP_MAX_DIMS];
  const int64_t s[] = {2, 3, 4};
  assert_true(pyop__shape_strides(s, 3, 4, INT64_MAX, st));
  assert_int_equal(st[0], 48);
  assert_int_equal(st[1], 16);
  assert_int_equal(st[2], 4);
  const int64_t z[] = {2, 0, 4};
  assert_true(pyop__shape_strides(z, 3, 4, INT64_MAX, st));
  assert_int_equal(st[0], 16);
  assert_int_equal(st[1], 16);
  /* (0, 3**20, 3**20) float32: 4 * 3**40 bytes does not fit int64_t. */
  const int64_t huge[] = {0, P20, P20};
  assert_false(pyop__shape_strides(huge, 3, 4, INT64_MAX, st));
  assert_int_equal(st[2], 4);
  assert_int_equal(st[1], 4 * (uint64_t)P20);
  assert_int_equal(st[0], (uint64_t)INT64_MAX);
  /* The other order fits: the 0 is last. */
  const int64_t huge2[] = {P20, P20, 0};
  assert_true(pyop__shape_strides(huge2, 3, 4, INT64_MAX, st));
  assert_int_equal(st[0], 4 * (uint64_t)P20);
  /* Once saturated, every outer stride is the limit too. */
  const int64_t deep[] = {0, 7, BIG, 4};
  assert_false(pyop__shape_strides(deep, 4, 8, INT64_MAX, st));
  assert_int_equal(st[0], (uint64_t)INT64_MAX);
  assert_int_equal(st[1], (uint64_t)INT64_MAX);
  assert_int_equal(st[3], 8);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty_before_overflow),
      cmocka_unit_test(test_sizes_and_limits),
      cmocka_unit_test(test_numel_follows),
      cmocka_unit_test(test_strides),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
