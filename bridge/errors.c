/*
 * The bridge's errors and log lines to the loader: messages sent through
 * the set_error and log services, a Python exception described as
 * "Type: message\n<traceback>", the status names and messages of
 * PYOP_STATUS_MAP, and the loader's own last error.
 */
#include "bridge.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* malloc'd vprintf; NULL on failure. */
static char *vstrdupf(const char *fmt, va_list ap) {
  char *s = NULL;
  return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

char *pb_strdupf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vstrdupf(fmt, ap);
  va_end(ap);
  return s;
}

static void send_error(int status, const char *msg) {
  void (*set_error)(int, pyop_str) = pb.services.set_error;
  if (set_error == NULL)
    return;
  if (msg == NULL)
    msg = "bridge: out of memory while formatting an error";
  pyop_str m = {msg, strlen(msg)};
  set_error(status, m);
}

int pb_error(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vstrdupf(fmt, ap);
  va_end(ap);
  send_error(status, s);
  free(s);
  return status;
}

const char *pb_loader_last_error(void) {
  pyop_str (*last_error)(void) = pb.services.last_error; /* NULL before ABI 1.4 */
  if (last_error == NULL)
    return NULL;
  pyop_str v = last_error();
  /* A view is (pointer, length); the loader's is NUL-terminated too. */
  if (v.data == NULL || v.len == 0 || v.data[v.len] != '\0')
    return NULL;
  return v.data;
}

const char *pb_status_name(int status) {
  switch (status) {
#define PB_STATUS_NAME(name, value, message)                                                 \
  case value:                                                                                \
    return "PYOP_" #name;
    PYOP_STATUS_MAP(PB_STATUS_NAME)
#undef PB_STATUS_NAME
  default:
    return NULL;
  }
}

const char *pb_status_message(int status) {
  switch (status) {
#define PB_STATUS_MESSAGE(name, value, message)                                              \
  case value:                                                                                \
    return message;
    PYOP_STATUS_MAP(PB_STATUS_MESSAGE)
#undef PB_STATUS_MESSAGE
  default:
    return NULL;
  }
}

void pb_log(int level, const char *fmt, ...) {
  void (*log)(int, pyop_str) = pb.services.log;
  if (log == NULL)
    return;
  va_list ap;
  va_start(ap, fmt);
  char *m = vstrdupf(fmt, ap);
  va_end(ap);
  if (m != NULL) {
    pyop_str v = {m, strlen(m)};
    log(level, v);
    free(m);
  }
}

/*
 * A str as a malloc'd C string for a message: UTF-8, where the bytes of a
 * file name that is not UTF-8 (decoded with surrogateescape) are given back
 * as they are, any other lone surrogate written as an escape, and a NUL
 * written as \x00 (the message is a C string: a NUL would end it there,
 * losing the rest and the traceback). NULL when s is not a str or on
 * failure; no exception is left.
 */
static char *message_text(PyObject *s) {
  PyObject *b = NULL;
  if (s != NULL && PyUnicode_Check(s)) {
    b = PyUnicode_AsEncodedString(s, "utf-8", "surrogateescape");
    if (b == NULL) {
      PyErr_Clear();
      b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
    }
  }
  char *out = NULL;
  if (b != NULL) {
    const char *p = PyBytes_AS_STRING(b);
    size_t n = (size_t)PyBytes_GET_SIZE(b), nuls = 0;
    for (size_t i = 0; i < n; i++)
      nuls += p[i] == '\0';
    out = malloc(n + 3 * nuls + 1);
    if (out != NULL) {
      size_t k = 0;
      for (size_t i = 0; i < n; i++) {
        if (p[i] == '\0') {
          memcpy(out + k, "\\x00", 4);
          k += 4;
        } else {
          out[k++] = p[i];
        }
      }
      out[k] = '\0';
    }
  }
  Py_XDECREF(b);
  PyErr_Clear();
  return out;
}

/* Whether the attached interpreter is the one this image's objects live in
 * (the main one, or a lane image's own: it runs in no other). */
static bool in_home_interpreter(void) {
  bool main = PyInterpreterState_Get() == PyInterpreterState_Main();
  return pb_lanes_image() ? !main : main;
}

/* "Type: message\n<traceback>" of exc; malloc'd, NULL on failure. */
char *pb_describe_exception(PyObject *exc) {
  char *out = NULL;
  if (pb.fn_format != NULL && in_home_interpreter()) {
    PyObject *r = PyObject_CallOneArg(pb.fn_format, exc);
    PyErr_Clear();
    out = message_text(r);
    Py_XDECREF(r);
    if (out != NULL)
      return out;
  }
  PyObject *str = PyObject_Str(exc);
  PyErr_Clear();
  char *msg = message_text(str);
  out = pb_strdupf("%s: %s", Py_TYPE(exc)->tp_name,
                   msg != NULL ? msg : "<exception str() failed>");
  free(msg);
  Py_XDECREF(str);
  return out;
}

/* A KeyboardInterrupt is an interrupt, never an ordinary error: its
 * status is PYOP_EINTR (pb_interrupt_caller then hands it back). */
static int interrupt_status(PyObject *exc, int status) {
  if (exc == NULL || !PyErr_GivenExceptionMatches(exc, PyExc_KeyboardInterrupt))
    return status;
  return PYOP_EINTR;
}

void pb_interrupt_caller(void) {
  PyFrameObject *caller = PyThreadState_GetFrame(PyThreadState_Get());
  if (caller == NULL)
    return; /* a C host: the status is all it gets */
  Py_DECREF(caller);
  PyErr_SetInterrupt();
}

int pb_error_python(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *prefix = vstrdupf(fmt, ap);
  va_end(ap);
  PyObject *exc = pb_exc_fetch();
  status = interrupt_status(exc, status);
  if (pb_lanes_image())
    status = pb_lane_imports_status(status); /* a call that failed after a refusal */
  char *text = exc != NULL ? pb_describe_exception(exc) : NULL;
  /* Dropping exc frees the traceback and with it the frames' locals. */
  Py_XDECREF(exc);
  PyErr_Clear();
  char *msg = pb_strdupf("%s: %s", prefix != NULL ? prefix : "Python error",
                         text != NULL ? text : "unknown Python error");
  send_error(status, msg);
  free(msg);
  free(text);
  free(prefix);
  return status;
}

int pb_error_no_python(const char *what) {
  if (atomic_load(&pb_lost))
    return pb_error(PYOP_ENOTINIT,
                    "%s: the Python interpreter the ops were loaded into has been finalized "
                    "(Py_FinalizeEx by the host); destroy the op instances and call "
                    "pyop_shutdown, then pyop_load again in a running interpreter",
                    what);
  return pb_error(PYOP_ENOTINIT,
                  "%s: the Python interpreter is not initialised (it was finalized by the "
                  "host); destroy the op instances and call pyop_shutdown",
                  what);
}
