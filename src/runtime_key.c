/*
 * The runtime key: which Python runs in this process, found without Python's
 * help. Everything is looked up with dlsym(RTLD_DEFAULT, ...) through the
 * seam, which sees the interpreter both when the host links libpython (or
 * loaded it RTLD_GLOBAL) and when libpyop lives inside a python3 process
 * (Debian's python3.11 exports the statically linked interpreter from the
 * executable; pyenv's links libpython3.X.so). A libpython loaded RTLD_LOCAL
 * by someone else is invisible here, and so is its interpreter.
 *
 * ABI flags are a heuristic on symbols only a given build exports:
 * - free-threaded ('t'): _Py_MergeZeroLocalRefcount or _Py_DecRefShared
 *   (3.13+ built with --disable-gil);
 * - debug ('d'): _Py_RefTotal (<= 3.11) or _Py_GetGlobalRefTotal (3.12+),
 *   present only when Py_REF_DEBUG is defined, which Py_DEBUG implies. A
 *   release build configured with Py_REF_DEBUG alone would be taken for a
 *   debug build; no distribution ships one.
 */
#include "runtime_key.h"

#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

/* The machine part of the key, spelled as `uname -m` and CPython's
 * platform tags spell it. Decided at compile time: libpyop and the Python
 * it serves run in the same process, so they share the architecture. */
#if defined(__x86_64__) && !defined(__ILP32__)
#define PYOP__MACHINE "x86_64"
#elif defined(__aarch64__)
#define PYOP__MACHINE "aarch64"
#elif defined(__i386__)
#define PYOP__MACHINE "i686"
#elif defined(__arm__)
#define PYOP__MACHINE "armv7l"
#elif defined(__powerpc64__) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PYOP__MACHINE "ppc64le"
#elif defined(__powerpc64__)
#define PYOP__MACHINE "ppc64"
#elif defined(__s390x__)
#define PYOP__MACHINE "s390x"
#elif defined(__riscv) && defined(__riscv_xlen) && __riscv_xlen == 64
#define PYOP__MACHINE "riscv64"
#elif defined(__loongarch64)
#define PYOP__MACHINE "loongarch64"
#else
#define PYOP__MACHINE "unknown"
#endif

/* A symbol of the running Python, or NULL (never reads dlerror: a missing
 * symbol is an expected answer here, not an error to report verbatim). */
static void *py_sym(const char *name) {
  return PYOP_SYS(dlsym)(RTLD_DEFAULT, name);
}

/*
 * Why sym, what dlsym(RTLD_DEFAULT, name) returned, must not be used as the
 * C API declares it (a function libpyop calls when want_function, else a
 * data object it reads), written into buf; NULL when it may. A process may
 * export anything under these names: calling a data object would jump into
 * it. The ELF symbol entry comes from the seam's dladdr1: an address no
 * loaded object holds is refused; one whose object lists no dynamic symbol
 * for it (a local symbol, as the unit tests' stand-ins are) has no type to
 * check and is taken as dlsym gave it. No allocation.
 */
static const char *sym_refusal(const char *name, const void *sym, bool want_function,
                               char *buf, size_t n) {
  Dl_info info;
  const ElfW(Sym) *es = NULL;
  if (!PYOP_SYS(dladdr1)(sym, &info, (void **)&es, RTLD_DL_SYMENT)) {
    snprintf(buf, n, "symbol %s cannot be checked: no loaded object holds its address",
             name);
    return buf;
  }
  if (!es) return NULL;
  const char *where = info.dli_fname && *info.dli_fname ? info.dli_fname : "the process";
  unsigned type = ELF64_ST_TYPE(es->st_info); /* the same bits as ELF32_ST_TYPE */
  bool function = type == STT_FUNC || type == STT_GNU_IFUNC;
  bool object = type == STT_OBJECT || type == STT_COMMON;
  if (want_function && !function)
    snprintf(buf, n, "symbol %s is %s in %s, not a function", name,
             object ? "a data object" : "not a function", where);
  else if (!want_function && !object)
    snprintf(buf, n, "symbol %s is %s in %s, not a data object", name,
             function ? "a function" : "not a data object", where);
  else if (!want_function && es->st_size && es->st_size < sizeof(unsigned long))
    snprintf(buf, n, "symbol %s in %s is %zu bytes, not an unsigned long", name, where,
             (size_t)es->st_size);
  else
    return NULL;
  return buf;
}

/* The same, as the error of pyop__runtime_key_resolve. */
static int sym_refused(const char *why) {
  return pyop__error(PYOP_ENOPYTHON,
                     "no Python runtime in the process: %s (the process exports a "
                     "name of Python's C API that is not Python's)",
                     why);
}

/* Parses "3.10.12 (main, ...)" as returned by Py_GetVersion(). Returns
 * false when it does not start with major.minor. */
static bool parse_version_text(const char *s, unsigned *major, unsigned *minor,
                               unsigned *micro) {
  unsigned v[3] = {0, 0, 0};
  int parts = 0;
  const char *p = s;
  while (parts < 3) {
    if (*p < '0' || *p > '9') break;
    unsigned n = 0;
    while (*p >= '0' && *p <= '9') {
      if (n > 9999) return false;
      n = n * 10 + (unsigned)(*p - '0');
      p++;
    }
    v[parts++] = n;
    if (*p != '.') break;
    p++;
  }
  if (parts < 2) return false;
  *major = v[0];
  *minor = v[1];
  *micro = v[2];
  return true;
}

/* See runtime_key.h. */
bool pyop__runtime_python_present(void) { return py_sym("Py_IsInitialized") != NULL; }

/*
 * Fills *out from the symbols of the process. PYOP_OK when the Python C API
 * is present (out->initialized tells whether it is running);
 * PYOP_ENOPYTHON, with the missing symbol named (or the one that is not
 * what Python's C API declares: a data object where a function is called),
 * otherwise. Never calls into
 * Python except Py_IsInitialized() and, before 3.11, Py_GetVersion(), both
 * documented as safe before initialisation and without the GIL.
 */
int pyop__runtime_key_resolve(pyop__runtime_key *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->machine, sizeof out->machine, "%s", PYOP__MACHINE);

  void *is_init = py_sym("Py_IsInitialized");
  if (!is_init)
    return pyop__error(PYOP_ENOPYTHON,
                       "no Python runtime in the process (symbol "
                       "Py_IsInitialized not found): set "
                       "pyop_options.start_python = true with pyop_set_options() "
                       "before loading to let libpyop start the build's Python, "
                       "or link libpython into the host (or dlopen it "
                       "RTLD_GLOBAL) and initialise it");
  char why[PATH_MAX + 128];
  if (sym_refusal("Py_IsInitialized", is_init, true, why, sizeof why))
    return sym_refused(why);

  const unsigned long *hexversion = py_sym("Py_Version");
  if (hexversion && sym_refusal("Py_Version", hexversion, false, why, sizeof why))
    return sym_refused(why);
  if (hexversion) {
    /* PY_VERSION_HEX layout: 0xMMmmuuLS. */
    out->major = (unsigned)((*hexversion >> 24) & 0xffu);
    out->minor = (unsigned)((*hexversion >> 16) & 0xffu);
    out->micro = (unsigned)((*hexversion >> 8) & 0xffu);
  } else {
    void *gv = py_sym("Py_GetVersion");
    if (!gv)
      return pyop__error(PYOP_ENOPYTHON,
                         "no Python runtime in the process: neither symbol "
                         "Py_Version (3.11+) nor Py_GetVersion found (dlsym "
                         "RTLD_DEFAULT)");
    if (sym_refusal("Py_GetVersion", gv, true, why, sizeof why)) return sym_refused(why);
    const char *(*get_version)(void) = (const char *(*)(void))gv;
    const char *text = get_version();
    if (!text || !parse_version_text(text, &out->major, &out->minor, &out->micro))
      return pyop__error(PYOP_ENOPYTHON,
                         "Python runtime in the process reports an unreadable "
                         "version \"%.40s\" (Py_GetVersion)",
                         text ? text : "(null)");
  }
  if (out->major != 3)
    return pyop__error(PYOP_ENOPYTHON,
                       "Python runtime in the process is version %u.%u; only "
                       "Python 3 is supported",
                       out->major, out->minor);

  out->present = true;
  int (*is_initialized)(void) = (int (*)(void))is_init;
  out->initialized = is_initialized() != 0;

  out->free_threaded = py_sym("_Py_MergeZeroLocalRefcount") != NULL ||
                       py_sym("_Py_DecRefShared") != NULL;
  out->debug = py_sym("_Py_RefTotal") != NULL ||
               py_sym("_Py_GetGlobalRefTotal") != NULL;
  snprintf(out->abi_flags, sizeof out->abi_flags, "%s%s",
           out->free_threaded ? "t" : "", out->debug ? "d" : "");
  snprintf(out->tag, sizeof out->tag, "cp%u%u%s", out->major, out->minor,
           out->abi_flags);
  snprintf(out->text, sizeof out->text, "%s-%s", out->tag, out->machine);
  return PYOP_OK;
}
