/*
 * The value helpers of pyop.h (pyop_tensor_of, pyop_attr_*...), checked
 * field by field. Compiled twice by hosts.sh, as C11 and as C++17, and run.
 */
#include <pyop/pyop.h>

#include <stdio.h>
#include <string.h>

static int failures;

#define EXPECT(cond)                                                          \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "helpers: %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
      failures++;                                                             \
    }                                                                         \
  } while (0)

int main(void) {
  float buf[6] = {0};
  const int64_t shape[2] = {2, 3};
  pyop_tensor t = pyop_tensor_of(buf, PYOP_DTYPE_FLOAT32, 2, shape);
  EXPECT(t.data == (void *)buf && t.dtype == PYOP_DTYPE_FLOAT32);
  EXPECT(t.format == PYOP_FORMAT_ND && t.ndim == 2 && t.reserved == 0);
  EXPECT(t.shape[0] == 2 && t.shape[1] == 3 && t.shape[2] == 0);
  EXPECT(t.nbytes == sizeof buf);
  pyop_tensor d = pyop_tensor_of(NULL, PYOP_DTYPE_INT64, 0, NULL); /* a scalar */
  EXPECT(d.data == NULL && d.ndim == 0 && d.nbytes == 8);
  pyop_tensor u = pyop_tensor_of(NULL, 99, 1, shape); /* unknown dtype */
  EXPECT(u.nbytes == 0);
  const int64_t huge[2] = {INT64_MAX, 2};
  EXPECT(pyop_tensor_of(NULL, PYOP_DTYPE_FLOAT32, 2, huge).nbytes == 0);
  pyop_tensor z = PYOP_TENSOR_INIT;
  EXPECT(z.data == NULL && z.ndim == 0 && z.nbytes == 0);

  pyop_tensor_list l = pyop_tensor_list_of(&t, 1);
  EXPECT(l.items == &t && l.count == 1);

  pyop_attr a = pyop_attr_float("alpha", 2.5);
  EXPECT(strcmp(a.name, "alpha") == 0 && a.value.type == PYOP_ATTR_FLOAT &&
         a.value.u.f == 2.5 && a.value.reserved == 0);
  a = pyop_attr_int("axis", -1);
  EXPECT(a.value.type == PYOP_ATTR_INT && a.value.u.i == -1);
  a = pyop_attr_bool("keep", true);
  EXPECT(a.value.type == PYOP_ATTR_BOOL && a.value.u.b);
  a = pyop_attr_str("mode", "fast");
  EXPECT(a.value.type == PYOP_ATTR_STR && a.value.u.s.len == 4 &&
         memcmp(a.value.u.s.data, "fast", 4) == 0);
  a = pyop_attr_str("empty", NULL);
  EXPECT(a.value.u.s.len == 0);
  a = pyop_attr_dtype("to", PYOP_DTYPE_INT8);
  EXPECT(a.value.type == PYOP_ATTR_DTYPE && a.value.u.dtype == PYOP_DTYPE_INT8);
  const int64_t ints[3] = {1, 2, 3};
  a = pyop_attr_ints("perm", ints, 3);
  EXPECT(a.value.type == PYOP_ATTR_LIST_INT && a.value.u.ints.items == ints &&
         a.value.u.ints.count == 3);
  const double floats[2] = {0.5, 1};
  a = pyop_attr_floats("w", floats, 2);
  EXPECT(a.value.type == PYOP_ATTR_LIST_FLOAT && a.value.u.floats.count == 2);
  const bool bools[1] = {true};
  a = pyop_attr_bools("b", bools, 1);
  EXPECT(a.value.type == PYOP_ATTR_LIST_BOOL && a.value.u.bools.items == bools);
  const pyop_str strs[2] = {pyop_str_of("a"), pyop_str_of("bc")};
  a = pyop_attr_strs("s", strs, 2);
  EXPECT(a.value.type == PYOP_ATTR_LIST_STR && a.value.u.strs.items[1].len == 2);
  const int32_t dtypes[1] = {PYOP_DTYPE_BOOL};
  a = pyop_attr_dtypes("ts", dtypes, 1);
  EXPECT(a.value.type == PYOP_ATTR_LIST_DTYPE && a.value.u.dtypes.count == 1);
  const pyop_int_list rows[1] = {{ints, 3}};
  a = pyop_attr_int_lists("rows", rows, 1);
  EXPECT(a.value.type == PYOP_ATTR_LIST_LIST_INT && a.value.u.int_lists.items == rows);

  EXPECT(strcmp(pyop_version(), PYOP_VERSION_STRING) == 0);
  EXPECT(pyop_version_number() == PYOP_VERSION_NUMBER);
  EXPECT(PYOP_VERSION_NUMBER == PYOP_VERSION_NUMBER_OF(PYOP_VERSION_MAJOR, PYOP_VERSION_MINOR,
                                                       PYOP_VERSION_PATCH));
  if (failures) return 1;
  printf("helpers: ok\n");
  return 0;
}
