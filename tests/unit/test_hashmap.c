/*
 * Unit tests of the one hash map (src/hashmap.h): sizing, colliding
 * hashes, probe sequences that wrap around the end, removal by backward
 * shift (every remaining value still found), growth keeping every value, a
 * failed growth leaving the map as it was, and fixed (caller's) slots.
 */
#include "testutil.h"

#include "hashmap.h"

#include <string.h>

/* Values are small integers; a key is the integer it must equal. */
static bool int_is(const void *key, uintptr_t val) { return *(const uintptr_t *)key == val; }

static uintptr_t get(const pyop__hmap *m, uint64_t h, uintptr_t v) {
  return pyop__hmap_get(m, h, int_is, &v);
}

static void put(pyop__hmap *m, uint64_t h, uintptr_t v) {
  assert_int_equal(pyop__hmap_reserve(m, 1), PYOP_OK);
  size_t i = pyop__hmap_find(m, h, int_is, &v);
  assert_int_equal(m->slots[i].val, 0);
  pyop__hmap_set(m, i, h, v);
}

static void remove_value(pyop__hmap *m, uint64_t h, uintptr_t v) {
  size_t i = pyop__hmap_find(m, h, int_is, &v);
  assert_int_equal(m->slots[i].val, v);
  pyop__hmap_remove_at(m, i);
}

static void test_sizing(void **state) {
  (void)state;
  assert_int_equal(pyop__hmap_slots_for(0), 1);
  assert_int_equal(pyop__hmap_slots_for(1), 2);
  assert_int_equal(pyop__hmap_slots_for(2), 4);
  assert_int_equal(pyop__hmap_slots_for(11), 16);
  assert_int_equal(pyop__hmap_slots_for(12), 32);
  for (size_t n = 0; n < 5000; n++) {
    size_t cap = pyop__hmap_slots_for(n);
    assert_true(pyop__hmap_fits(n, cap));
    assert_true(cap == 1 || !pyop__hmap_fits(n, cap / 2)); /* the fewest */
  }
  assert_false(pyop__hmap_fits(16, 16)); /* always one empty slot */
}

/* Many values of one home slot, around the end of the table: removing any
 * of them keeps every other one found. */
static void test_collisions_and_removal(void **state) {
  (void)state;
  for (uintptr_t gone = 1; gone <= 10; gone++) {
    pyop__hmap m = {0};
    assert_int_equal(pyop__hmap_reserve(&m, 10), PYOP_OK);
    size_t last = m.cap - 1;
    /* 1..6 all hash to the last slot (they wrap to 0, 1, ...); 7..10 to 0. */
    for (uintptr_t v = 1; v <= 10; v++) put(&m, v <= 6 ? last : (uint64_t)m.cap, v);
    assert_int_equal(m.count, 10);
    remove_value(&m, gone <= 6 ? last : (uint64_t)m.cap, gone);
    assert_int_equal(m.count, 9);
    for (uintptr_t v = 1; v <= 10; v++)
      assert_int_equal(get(&m, v <= 6 ? last : (uint64_t)m.cap, v), v == gone ? 0 : v);
    pyop__hmap_free(&m);
    assert_null(m.slots);
    assert_int_equal(get(&m, 1, 1), 0); /* an empty map: no slots read */
  }
}

static void test_growth(void **state) {
  (void)state;
  pyop__hmap m = {0};
  for (uintptr_t v = 1; v <= 3000; v++) put(&m, v * 0x9E3779B97F4A7C15ull, v);
  assert_true(pyop__hmap_fits(m.count, m.cap));
  for (uintptr_t v = 1; v <= 3000; v++) assert_int_equal(get(&m, v * 0x9E3779B97F4A7C15ull, v), v);
  /* Every allocation of a growth failed in turn: the map stays as it was. */
  pt_faults_install();
  pyop__hslot *slots = m.slots;
  size_t cap = m.cap;
  pt_faults_arm(0);
  assert_int_equal(pyop__hmap_reserve(&m, cap), PYOP_ENOMEM);
  assert_true(pt_faults_fired());
  pt_faults_remove();
  assert_ptr_equal(m.slots, slots);
  assert_int_equal(m.cap, cap);
  assert_int_equal(m.count, 3000);
  assert_int_equal(pyop__hmap_reserve(&m, SIZE_MAX), PYOP_ENOMEM);
  pyop__hmap_free(&m);
}

static void test_fixed(void **state) {
  (void)state;
  pyop__hslot slots[4];
  memset(slots, 0, sizeof slots);
  pyop__hmap m;
  pyop__hmap_init_fixed(&m, slots, pyop__hmap_slots_for(2));
  put(&m, 7, 1);
  put(&m, 7, 2);
  assert_int_equal(get(&m, 7, 2), 2);
  assert_int_equal(get(&m, 8, 2), 0);
  pyop__hmap_free(&m); /* the caller's slots are not freed */
  assert_int_equal(slots[3].val + slots[0].val + slots[1].val + slots[2].val, 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizing),
      cmocka_unit_test(test_collisions_and_removal),
      cmocka_unit_test(test_growth),
      cmocka_unit_test(test_fixed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
