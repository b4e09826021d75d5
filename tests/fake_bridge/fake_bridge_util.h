/*
 * Helpers for unit tests that use the fake bridges built by
 * tests/fake_bridge/CMakeLists.txt. Include after testutil.h:
 *   #include "../fake_bridge/fake_bridge_util.h"
 * Memory returned here comes from libc malloc (free() it), not the seam, so
 * it does not disturb pt_live_allocs().
 */
#ifndef PYOP_FAKE_BRIDGE_UTIL_H
#define PYOP_FAKE_BRIDGE_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "candidates.h"
#include "trust.h"
#include "runtime_key.h"

#ifndef PYOP_TEST_FAKE_BRIDGE_DIR
#error "PYOP_TEST_FAKE_BRIDGE_DIR must name the fake bridges' directory"
#endif
#define FB_DIR PYOP_TEST_FAKE_BRIDGE_DIR

/* "<a>/<b>" (malloc). */
static inline char *fb_join(const char *a, const char *b) {
  size_t n = strlen(a) + 1 + strlen(b) + 1;
  char *p = malloc(n);
  assert_non_null(p);
  snprintf(p, n, "%s/%s", a, b);
  return p;
}

/* The artifact directory of a variant ("good" -> FB_DIR/good), malloc. */
static inline char *fb_variant(const char *variant) { return fb_join(FB_DIR, variant); }

/* realpath() of a path (malloc). */
static inline char *fb_real(const char *path) {
  char *r = realpath(path, NULL);
  assert_non_null(r);
  return r;
}

/*
 * The runtime key the fake bridges were built for, read from the good
 * variant's manifest (python_tag cpXY and platform): tests match against it
 * without a Python in the process.
 */
static inline void fb_key(pyop__runtime_key *k) {
  pyop__manifest m;
  pyop__sb why = PYOP__SB_INIT;
  assert_int_equal(pyop__manifest_read(FB_DIR "/GOOD", &m, &why), PYOP_OK);
  pyop__sb_free(&why);
  memset(k, 0, sizeof *k);
  assert_true(strncmp(m.python_tag, "cp3", 3) == 0);
  k->present = k->initialized = true;
  k->major = 3;
  k->minor = (unsigned)atoi(m.python_tag + 3);
  snprintf(k->tag, sizeof k->tag, "%s", m.python_tag);
  snprintf(k->machine, sizeof k->machine, "%s", m.platform);
  snprintf(k->text, sizeof k->text, "%s-%s", k->tag, k->machine);
  pyop__manifest_free(&m);
}

/* root/name -> FB_DIR/variant (a symlinked artifact directory). */
static inline void fb_link(const char *root, const char *name, const char *variant) {
  char *from = fb_join(root, name), *to = fb_variant(variant);
  assert_int_equal(symlink(to, from), 0);
  free(from);
  free(to);
}

/* Copies a file byte for byte and sets its mode. */
static inline void fb_copy(const char *from, const char *to, mode_t mode) {
  FILE *in = fopen(from, "rb");
  assert_non_null(in);
  FILE *out = fopen(to, "wb");
  assert_non_null(out);
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    assert_int_equal(fwrite(buf, 1, n, out), n);
  fclose(in);
  fclose(out);
  assert_int_equal(chmod(to, mode), 0);
}

/* Makes root/name a real artifact directory (mode 0755) holding a copy of
 * a variant's bridge and the given manifest text (NULL: the variant's). */
static inline char *fb_make_artifact(const char *root, const char *name,
                                     const char *variant, const char *manifest) {
  char *dir = fb_join(root, name);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(chmod(dir, 0755), 0);
  char *vdir = fb_variant(variant);
  char *src = fb_join(vdir, "libpyop_bridge.so");
  char *dst = fb_join(dir, "libpyop_bridge.so");
  fb_copy(src, dst, 0755);
  char *mf = fb_join(dir, "manifest.txt");
  if (manifest) {
    pt_write_file(mf, manifest);
  } else {
    char *vmf = fb_join(vdir, "manifest.txt");
    fb_copy(vmf, mf, 0644);
    free(vmf);
  }
  free(vdir);
  free(src);
  free(dst);
  free(mf);
  return dir;
}

static inline int fb_rm_one(const char *p, const struct stat *st, int flag,
                            struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (flag != FTW_SL && flag != FTW_SLN) chmod(p, 0700);
  return remove(p);
}

/*
 * rm -rf of a test directory that may hold symlinks to the fake bridges:
 * symlinks are removed, never followed (a chmod through one would change the
 * build tree's bridges, e.g. make world_writable safe).
 */
static inline void fb_rmtree(const char *path) {
  chmod(path, 0700);
  nftw(path, fb_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Number of open file descriptors of the process. */
static inline int fb_count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (de->d_name[0] != '.') n++;
  closedir(d);
  return n - 1; /* the directory stream's own descriptor */
}

#endif
