/*
 * The runtime key of the Python running in the process, resolved without
 * Python's help through dlsym(RTLD_DEFAULT, ...) (docs/design.md §Runtime key).
 */
#ifndef PYOP_RUNTIME_KEY_H
#define PYOP_RUNTIME_KEY_H

#include "core.h"

typedef struct pyop__runtime_key {
  bool present;      /* Python C API symbols found in the process */
  bool initialized;  /* Py_IsInitialized() returned non-zero */
  unsigned major, minor, micro;
  bool free_threaded; /* ABI flag 't' */
  bool debug;         /* ABI flag 'd' */
  char abi_flags[4];  /* "", "t", "d", "td" */
  char tag[16];       /* "cp311", "cp313t" (python tag + abi flags) */
  char machine[32];   /* "x86_64" */
  char text[64];      /* "cp311-x86_64" */
} pyop__runtime_key;

/*
 * Fills *out. Returns PYOP_OK when Python symbols are present (initialised
 * or not: see out->initialized), PYOP_ENOPYTHON (message says which symbol is
 * missing) otherwise.
 */
int pyop__runtime_key_resolve(pyop__runtime_key *out);
/* True when the process has Python's C API (Py_IsInitialized resolves);
 * records no error either way (pyop_load's start_python probe). */
bool pyop__runtime_python_present(void);

#endif
