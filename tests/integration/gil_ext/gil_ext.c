/*
 * _pyop_gil_ext: an extension module that does not declare Py_mod_gil.
 * Importing it into a free-threaded Python turns the GIL back on for the
 * whole process; the bridge must say so (integration.free_threaded.gil_ext,
 * plugins/gil_ext).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static struct PyModuleDef gil_ext_def = {
    PyModuleDef_HEAD_INIT, "_pyop_gil_ext",
    "test module without Py_mod_gil (single-phase init)", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__pyop_gil_ext(void);
PyMODINIT_FUNC PyInit__pyop_gil_ext(void) { return PyModule_Create(&gil_ext_def); }
