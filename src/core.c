/*
 * The operating-system seam, allocation and the string builder.
 * Errors are in error.c, logging and environment in log.c.
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

static int sys_open(const char *path, int flags) { return open(path, flags); }
static int sys_openat(int dirfd, const char *path, int flags) {
  return openat(dirfd, path, flags);
}

/* The real implementations: the table's initial value, and what
 * pyop__sys_reset() copies back. */
#define PYOP__REAL_SYS                                                        \
  {                                                                           \
    .malloc = malloc, .calloc = calloc, .realloc = realloc, .free = free,     \
    .dlopen = dlopen, .dlsym = dlsym, .dlclose = dlclose, .dlerror = dlerror, \
    .dladdr = dladdr, .dladdr1 = dladdr1, .dlinfo = dlinfo,                   \
    .open = sys_open,                                                         \
    .openat = sys_openat, .close = close, .read = read, .fstat = fstat,       \
    .stat = stat, .fstatat = fstatat, .realpath = realpath,                   \
    .getcwd = getcwd, .mmap = mmap, .munmap = munmap, .opendir = opendir,     \
    .readdir = readdir, .closedir = closedir,                                 \
    .secure_getenv = secure_getenv, .getauxval = getauxval,                   \
    .geteuid = geteuid,                                                       \
  }

static const pyop__sys real_sys = PYOP__REAL_SYS;

pyop__sys pyop__sys_table = PYOP__REAL_SYS;

void pyop__sys_reset(void) { pyop__sys_table = real_sys; }

/* Whether addr lies in an executable PT_LOAD segment of a loaded object. */
struct code_find {
  uintptr_t addr;
  bool code;
};

static int code_segment_cb(struct dl_phdr_info *o, size_t size, void *data) {
  (void)size;
  struct code_find *f = data;
  for (ElfW(Half) i = 0; i < o->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &o->dlpi_phdr[i];
    uintptr_t start = (uintptr_t)o->dlpi_addr + ph->p_vaddr;
    if (ph->p_type != PT_LOAD || f->addr < start || f->addr - start >= ph->p_memsz) continue;
    f->code = (ph->p_flags & PF_X) != 0;
    return 1;
  }
  return 0;
}

static bool in_code(const void *addr) {
  struct code_find f = {(uintptr_t)addr, false};
  dl_iterate_phdr(code_segment_cb, &f);
  return f.code;
}

/* See core.h. The defining object is compared by its link_map, the one the
 * dynamic loader keeps for each loaded object. */
const char *pyop__dlsym_not_function(void *handle, const void *sym, const char *path,
                                     char *buf, size_t n) {
  struct link_map *own = NULL, *def = NULL;
  Dl_info info;
  if (PYOP_SYS(dlinfo)(handle, RTLD_DI_LINKMAP, &own) != 0 || !own) {
    snprintf(buf, n, "cannot be checked: the loaded object of %s is unknown (dlinfo failed)",
             path);
    return buf;
  }
  if (!PYOP_SYS(dladdr1)(sym, &info, (void **)&def, RTLD_DL_LINKMAP) || !def) {
    snprintf(buf, n, "cannot be checked: no loaded object holds its address (in %s)", path);
    return buf;
  }
  if (def != own) {
    snprintf(buf, n, "is defined in %s, not in %s",
             info.dli_fname && *info.dli_fname ? info.dli_fname : "another object", path);
    return buf;
  }
  const ElfW(Sym) *es = NULL;
  if (!PYOP_SYS(dladdr1)(sym, &info, (void **)&es, RTLD_DL_SYMENT)) {
    snprintf(buf, n, "cannot be checked: no symbol of %s is at its address", path);
    return buf;
  }
  if (!es) {
    /* dlsym gives a symbol's own address, which its dynamic symbol covers,
     * except for an indirect function (STT_GNU_IFUNC: a C ifunc, a
     * target_clones function): then the address its resolver chose, a
     * local function no dynamic symbol covers. Code of the library itself
     * is a function; anything else its resolver returned is not. */
    if (in_code(sym)) return NULL;
    snprintf(buf, n, "is not a function in %s (no symbol covers the address dlsym gave, "
             "and it is not in the library's code)", path);
    return buf;
  }
  unsigned type = ELF64_ST_TYPE(es->st_info); /* the same bits as ELF32_ST_TYPE */
  if (type == STT_FUNC || type == STT_GNU_IFUNC) return NULL;
  if (type == STT_OBJECT || type == STT_COMMON)
    snprintf(buf, n, "is a data object in %s, not a function", path);
  else if (type == STT_TLS)
    snprintf(buf, n, "is a thread-local variable in %s, not a function", path);
  else
    snprintf(buf, n, "is not a function in %s (ELF symbol type %u; an assembly function "
             "needs .type name, @function)", path, type);
  return buf;
}

/* ---------------------------------------------------------- allocation */

void *pyop__malloc(size_t n) { return PYOP_SYS(malloc)(n ? n : 1); }

void *pyop__calloc(size_t n, size_t size) {
  if (n == 0 || size == 0) n = size = 1;
  return PYOP_SYS(calloc)(n, size);
}

void *pyop__realloc(void *p, size_t n) { return PYOP_SYS(realloc)(p, n ? n : 1); }

void pyop__free(void *p) {
  if (p) PYOP_SYS(free)(p);
}

char *pyop__strndup(const char *s, size_t len) {
  if (len == SIZE_MAX) return NULL;
  char *d = pyop__malloc(len + 1);
  if (!d) return NULL;
  if (len) memcpy(d, s, len);
  d[len] = '\0';
  return d;
}

char *pyop__strdup(const char *s) { return s ? pyop__strndup(s, strlen(s)) : NULL; }

/* Joins dir and name with one '/' (trailing '/'s of dir dropped): "/" and
 * "x" give "/x", "a//" and "x" give "a/x". */
char *pyop__path_join(const char *dir, const char *name) {
  size_t dl = strlen(dir), nl = strlen(name);
  while (dl > 1 && dir[dl - 1] == '/') dl--;
  size_t sep = dl > 0 && dir[dl - 1] == '/' ? 0 : 1; /* dir is "/" */
  char *p = pyop__malloc(dl + sep + nl + 1);
  if (!p) return NULL;
  memcpy(p, dir, dl);
  if (sep) p[dl] = '/';
  memcpy(p + dl + sep, name, nl + 1);
  return p;
}

/* ------------------------------------------------------- string builder */

/* Ensures room for `extra` more bytes plus the NUL; marks oom on failure. */
static bool sb_reserve(pyop__sb *sb, size_t extra) {
  if (sb->oom) return false;
  if (extra > SIZE_MAX / 2 - sb->len) {
    sb->oom = true;
    return false;
  }
  size_t need = sb->len + extra + 1;
  if (need <= sb->cap) return true;
  size_t cap = sb->cap ? sb->cap : 64;
  while (cap < need) cap *= 2;
  char *p = pyop__realloc(sb->buf, cap);
  if (!p) {
    sb->oom = true;
    return false;
  }
  sb->buf = p;
  sb->cap = cap;
  return true;
}

void pyop__sb_append(pyop__sb *sb, const char *s, size_t len) {
  if (!sb_reserve(sb, len)) return;
  if (len) memcpy(sb->buf + sb->len, s, len);
  sb->len += len;
  sb->buf[sb->len] = '\0';
}

void pyop__sb_puts(pyop__sb *sb, const char *s) { pyop__sb_append(sb, s, strlen(s)); }

void pyop__sb_vprintf(pyop__sb *sb, const char *fmt, va_list ap) {
  if (sb->oom) return;
  va_list ap2;
  va_copy(ap2, ap);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap2);
  va_end(ap2);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    pyop__sb_append(sb, small, (size_t)n);
    return;
  }
  if (!sb_reserve(sb, (size_t)n)) return;
  vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
  sb->len += (size_t)n;
}

void pyop__sb_printf(pyop__sb *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pyop__sb_vprintf(sb, fmt, ap);
  va_end(ap);
}

const char *pyop__sb_str(const pyop__sb *sb) { return sb->buf ? sb->buf : ""; }

char *pyop__sb_take(pyop__sb *sb) {
  char *out = NULL;
  if (!sb->oom) out = sb->buf ? sb->buf : pyop__strdup("");
  else pyop__free(sb->buf);
  sb->buf = NULL;
  sb->len = sb->cap = 0;
  sb->oom = false;
  return out;
}

void pyop__sb_free(pyop__sb *sb) {
  pyop__free(sb->buf);
  sb->buf = NULL;
  sb->len = sb->cap = 0;
  sb->oom = false;
}
