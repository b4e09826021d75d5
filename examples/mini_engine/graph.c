/*
 * Parsing the mini engine's graph file (format: README.md).
 */
#define _POSIX_C_SOURCE 200809L

#include "graph.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Formats "file:line: message" into err; returns -1. */
static int perr(char *err, size_t errlen, const char *file, int line, const char *fmt, ...) {
  int n = snprintf(err, errlen, "%s:%d: ", file, line);
  if (n < 0 || (size_t)n >= errlen)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* Grows *items (of *cap elements of size sz) to hold n + 1; 0 or -1. */
static int grow(void **items, size_t *cap, size_t n, size_t sz) {
  if (n < *cap)
    return 0;
  size_t ncap = *cap ? *cap * 2 : 8;
  void *p = realloc(*items, ncap * sz);
  if (p == NULL)
    return -1;
  *items = p;
  *cap = ncap;
  return 0;
}

static long find_tensor(const mg_graph *g, const char *name) {
  for (size_t i = 0; i < g->n_tensors; i++)
    if (strcmp(g->tensors[i].name, name) == 0)
      return (long)i;
  return -1;
}

static bool valid_name(const char *s) {
  if (*s == '\0' || *s == '-')
    return false;
  for (; *s; s++)
    if (!(*s == '_' || *s == '.' || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
          (*s >= 'A' && *s <= 'Z')))
      return false;
  return true;
}

/* Splits text at commas outside brackets, in place; returns the count of
 * pieces written to parts (at most max), or -1 when there are more. */
static long split_top(char *text, char **parts, size_t max) {
  size_t n = 0;
  int depth = 0;
  char *start = text;
  if (*text == '\0')
    return 0;
  for (char *p = text;; p++) {
    if (*p == '[')
      depth++;
    else if (*p == ']')
      depth--;
    if ((*p == ',' && depth == 0) || *p == '\0') {
      bool end = *p == '\0';
      if (n == max)
        return -1;
      *p = '\0';
      parts[n++] = start;
      if (end)
        break;
      start = p + 1;
    }
  }
  return (long)n;
}

/* ------------------------------------------------------------- values */

int mg_parse_values(const char *text, const pyop_tensor *t, void **out, char *err,
                    size_t errlen) {
  int64_t n = pyop_tensor_numel(t);
  size_t isz = pyop_dtype_size(t->dtype);
  *out = NULL;
  if (n < 0) {
    snprintf(err, errlen, "shape too large");
    return -1;
  }
  unsigned char *buf = calloc((size_t)n > 0 ? (size_t)n : 1, isz);
  char *copy = strdup(text);
  if (buf == NULL || copy == NULL) {
    free(buf);
    free(copy);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  int64_t k = 0;
  int rc = 0;
  if (n == 0 && strcmp(copy, "-") == 0)
    goto out; /* an empty tensor: "-" stands for no values */
  for (char *tok = copy, *next = NULL; tok != NULL; tok = next) {
    char *comma = strchr(tok, ',');
    next = comma != NULL ? comma + 1 : NULL;
    if (comma != NULL)
      *comma = '\0';
    if (k == n) {
      k++;
      break;
    }
    char *end = NULL;
    errno = 0;
    void *dst = buf + (size_t)k * isz;
    switch (t->dtype) {
    case PYOP_DTYPE_FLOAT32: {
      float v = strtof(tok, &end);
      memcpy(dst, &v, sizeof v);
      break;
    }
    case PYOP_DTYPE_FLOAT64: {
      double v = strtod(tok, &end);
      memcpy(dst, &v, sizeof v);
      break;
    }
    case PYOP_DTYPE_BOOL: {
      bool v = strcmp(tok, "true") == 0 || strcmp(tok, "1") == 0;
      end = (v || strcmp(tok, "false") == 0 || strcmp(tok, "0") == 0) ? tok + strlen(tok) : tok;
      memcpy(dst, &v, sizeof v);
      break;
    }
    case PYOP_DTYPE_INT8:
    case PYOP_DTYPE_INT16:
    case PYOP_DTYPE_INT32:
    case PYOP_DTYPE_INT64: {
      long long v = strtoll(tok, &end, 0);
      int8_t i8 = (int8_t)v;
      int16_t i16 = (int16_t)v;
      int32_t i32 = (int32_t)v;
      int64_t i64 = (int64_t)v;
      const void *src = isz == 1 ? (const void *)&i8 : isz == 2 ? (const void *)&i16
                        : isz == 4 ? (const void *)&i32 : (const void *)&i64;
      if ((isz == 1 && v != i8) || (isz == 2 && v != i16) || (isz == 4 && v != i32))
        errno = ERANGE;
      memcpy(dst, src, isz);
      break;
    }
    case PYOP_DTYPE_UINT8:
    case PYOP_DTYPE_UINT16:
    case PYOP_DTYPE_UINT32:
    case PYOP_DTYPE_UINT64: {
      unsigned long long v = strtoull(tok, &end, 0);
      uint8_t u8 = (uint8_t)v;
      uint16_t u16 = (uint16_t)v;
      uint32_t u32 = (uint32_t)v;
      uint64_t u64 = (uint64_t)v;
      const void *src = isz == 1 ? (const void *)&u8 : isz == 2 ? (const void *)&u16
                        : isz == 4 ? (const void *)&u32 : (const void *)&u64;
      if (tok[0] == '-' || (isz == 1 && v != u8) || (isz == 2 && v != u16) ||
          (isz == 4 && v != u32))
        errno = ERANGE;
      memcpy(dst, src, isz);
      break;
    }
    default:
      snprintf(err, errlen, "values of %s are not supported by the mini engine",
               pyop_dtype_name(t->dtype));
      rc = -1;
      goto out;
    }
    if (end == tok || *end != '\0' || errno == ERANGE) {
      snprintf(err, errlen, "value %" PRId64 " \"%s\" is not a valid %s", k, tok,
               pyop_dtype_name(t->dtype));
      rc = -1;
      goto out;
    }
    k++;
  }
  if (k != n) {
    snprintf(err, errlen, "%s %" PRId64 " values for %" PRId64 " elements",
             k > n ? "more than" : "only", k > n ? n : k, n);
    rc = -1;
  }
out:
  free(copy);
  if (rc == 0)
    *out = buf;
  else
    free(buf);
  return rc;
}

void mg_print_desc(FILE *f, const pyop_tensor *t) {
  fprintf(f, "%s[", pyop_dtype_name(t->dtype) ? pyop_dtype_name(t->dtype) : "?");
  for (int32_t i = 0; i < t->ndim; i++)
    fprintf(f, "%s%" PRId64, i ? "," : "", t->shape[i]);
  fputc(']', f);
}

void mg_print_values(FILE *f, const pyop_tensor *t) {
  int64_t n = pyop_tensor_numel(t);
  fputc('[', f);
  for (int64_t k = 0; k < n; k++) {
    const unsigned char *p = (const unsigned char *)t->data + (size_t)k * pyop_dtype_size(t->dtype);
    if (k)
      fputs(", ", f);
    union {
      float f32;
      double f64;
      int8_t i8;
      int16_t i16;
      int32_t i32;
      int64_t i64;
      uint8_t u8;
      uint16_t u16;
      uint32_t u32;
      uint64_t u64;
      bool b;
    } v;
    memcpy(&v, p, pyop_dtype_size(t->dtype));
    switch (t->dtype) {
    case PYOP_DTYPE_FLOAT32: fprintf(f, "%g", (double)v.f32); break;
    case PYOP_DTYPE_FLOAT64: fprintf(f, "%g", v.f64); break;
    case PYOP_DTYPE_INT8: fprintf(f, "%d", v.i8); break;
    case PYOP_DTYPE_INT16: fprintf(f, "%d", v.i16); break;
    case PYOP_DTYPE_INT32: fprintf(f, "%" PRId32, v.i32); break;
    case PYOP_DTYPE_INT64: fprintf(f, "%" PRId64, v.i64); break;
    case PYOP_DTYPE_UINT8: fprintf(f, "%u", v.u8); break;
    case PYOP_DTYPE_UINT16: fprintf(f, "%u", v.u16); break;
    case PYOP_DTYPE_UINT32: fprintf(f, "%" PRIu32, v.u32); break;
    case PYOP_DTYPE_UINT64: fprintf(f, "%" PRIu64, v.u64); break;
    case PYOP_DTYPE_BOOL: fputs(v.b ? "true" : "false", f); break;
    default: fputs("?", f); break;
    }
  }
  fputc(']', f);
}

/* ------------------------------------------------------------- lines */

/* "float32[2,3]" -> t->dtype, ndim, shape, nbytes. */
static int parse_desc(const char *text, pyop_tensor *t, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  const char *lb = strchr(text, '[');
  size_t len = strlen(text);
  if (lb == NULL || len == 0 || text[len - 1] != ']') {
    snprintf(err, errlen, "\"%s\": expected DTYPE[DIMS], e.g. float32[2,3]", text);
    return -1;
  }
  char dt[32];
  size_t dl = (size_t)(lb - text);
  if (dl == 0 || dl >= sizeof dt) {
    snprintf(err, errlen, "\"%s\": expected DTYPE[DIMS], e.g. float32[2,3]", text);
    return -1;
  }
  memcpy(dt, text, dl);
  dt[dl] = '\0';
  int dtype;
  if (pyop_dtype_from_name(dt, &dtype) != PYOP_OK) {
    snprintf(err, errlen, "unknown data type \"%s\"", dt);
    return -1;
  }
  t->dtype = dtype;
  t->format = PYOP_FORMAT_ND;
  const char *p = lb + 1;
  while (*p != ']') {
    if (t->ndim == PYOP_MAX_DIMS) {
      snprintf(err, errlen, "\"%s\": more than %d dimensions", text, PYOP_MAX_DIMS);
      return -1;
    }
    char *end = NULL;
    errno = 0;
    long long d = strtoll(p, &end, 10);
    if (end == p || d < 0 || errno == ERANGE || (*end != ',' && *end != ']')) {
      snprintf(err, errlen, "\"%s\": dimensions must be integers >= 0", text);
      return -1;
    }
    t->shape[t->ndim++] = d;
    p = *end == ',' ? end + 1 : end;
  }
  int64_t n = pyop_tensor_numel(t);
  if (n < 0 || (uint64_t)n > UINT64_MAX / pyop_dtype_size(t->dtype)) {
    snprintf(err, errlen, "\"%s\": too many elements", text);
    return -1;
  }
  t->nbytes = (uint64_t)n * pyop_dtype_size(t->dtype);
  return 0;
}

static int add_tensor(mg_graph *g, size_t *cap, const char *name, const pyop_tensor *t) {
  if (grow((void **)&g->tensors, cap, g->n_tensors, sizeof *g->tensors) < 0)
    return -1;
  mg_tensor *mt = &g->tensors[g->n_tensors];
  memset(mt, 0, sizeof *mt);
  mt->name = strdup(name);
  if (mt->name == NULL)
    return -1;
  if (t != NULL)
    mt->t = *t;
  g->n_tensors++;
  return 0;
}

#define MG_MAX_TOKENS 64
#define MG_MAX_ITEMS 256

/* `input NAME DTYPE[DIMS] VALUES` */
static int parse_input(mg_graph *g, size_t *cap, char **tok, size_t ntok, int line, char *err,
                       size_t errlen) {
  char why[256];
  if (ntok != 4)
    return perr(err, errlen, g->file, line, "expected: input NAME DTYPE[DIMS] V0,V1,...");
  if (!valid_name(tok[1]))
    return perr(err, errlen, g->file, line, "\"%s\" is not a valid tensor name", tok[1]);
  if (find_tensor(g, tok[1]) >= 0)
    return perr(err, errlen, g->file, line, "tensor \"%s\" is defined twice", tok[1]);
  pyop_tensor t;
  if (parse_desc(tok[2], &t, why, sizeof why) < 0)
    return perr(err, errlen, g->file, line, "%s", why);
  void *data = NULL;
  if (mg_parse_values(tok[3], &t, &data, why, sizeof why) < 0)
    return perr(err, errlen, g->file, line, "input %s: %s", tok[1], why);
  t.data = data;
  if (add_tensor(g, cap, tok[1], &t) < 0) {
    free(data);
    return perr(err, errlen, g->file, line, "out of memory");
  }
  g->tensors[g->n_tensors - 1].owned = data;
  return 0;
}

/* The slots of `inputs=a,b+c,-`. */
static int parse_slots(mg_graph *g, mg_node *nd, char *text, char *err, size_t errlen) {
  char *parts[MG_MAX_ITEMS];
  long n = split_top(text, parts, MG_MAX_ITEMS);
  if (n < 0)
    return perr(err, errlen, g->file, nd->line, "too many input slots");
  nd->slots = calloc(n > 0 ? (size_t)n : 1, sizeof *nd->slots);
  if (nd->slots == NULL)
    return perr(err, errlen, g->file, nd->line, "out of memory");
  nd->n_slots = (size_t)n;
  for (long s = 0; s < n; s++) {
    mg_slot *slot = &nd->slots[s];
    if (strcmp(parts[s], "-") == 0)
      continue; /* empty slot */
    size_t count = 1;
    for (const char *p = parts[s]; *p; p++)
      count += *p == '+';
    slot->items = calloc(count, sizeof *slot->items);
    if (slot->items == NULL)
      return perr(err, errlen, g->file, nd->line, "out of memory");
    char *save = NULL;
    for (char *name = strtok_r(parts[s], "+", &save); name != NULL;
         name = strtok_r(NULL, "+", &save)) {
      long idx = find_tensor(g, name);
      if (idx < 0)
        return perr(err, errlen, g->file, nd->line,
                    "node %s: input tensor \"%s\" is not defined above", nd->name, name);
      slot->items[slot->count++] = (size_t)idx;
    }
  }
  return 0;
}

static int parse_attrs(mg_graph *g, mg_node *nd, char *text, char *err, size_t errlen) {
  char *parts[MG_MAX_ITEMS];
  long n = split_top(text, parts, MG_MAX_ITEMS);
  if (n < 0)
    return perr(err, errlen, g->file, nd->line, "too many attributes");
  nd->attrs = calloc(n > 0 ? (size_t)n : 1, sizeof *nd->attrs);
  if (nd->attrs == NULL)
    return perr(err, errlen, g->file, nd->line, "out of memory");
  for (long k = 0; k < n; k++) {
    char *colon = strchr(parts[k], ':');
    if (colon == NULL || colon == parts[k])
      return perr(err, errlen, g->file, nd->line, "node %s: attribute \"%s\": expected NAME:VALUE",
                  nd->name, parts[k]);
    *colon = '\0';
    mg_attr_text *a = &nd->attrs[nd->n_attrs++];
    a->name = strdup(parts[k]);
    a->value = strdup(colon + 1);
    if (a->name == NULL || a->value == NULL)
      return perr(err, errlen, g->file, nd->line, "out of memory");
  }
  return 0;
}

/* `node OPTYPE NAME [inputs=...] [attrs=...] outputs=...` */
static int parse_node(mg_graph *g, size_t *tcap, size_t *ncap, char **tok, size_t ntok, int line,
                      char *err, size_t errlen) {
  if (ntok < 4)
    return perr(err, errlen, g->file, line,
                "expected: node OPTYPE NAME [inputs=...] [attrs=...] outputs=...");
  if (grow((void **)&g->nodes, ncap, g->n_nodes, sizeof *g->nodes) < 0)
    return perr(err, errlen, g->file, line, "out of memory");
  mg_node *nd = &g->nodes[g->n_nodes++];
  memset(nd, 0, sizeof *nd);
  nd->line = line;
  nd->op_type = strdup(tok[1]);
  nd->name = strdup(tok[2]);
  if (nd->op_type == NULL || nd->name == NULL)
    return perr(err, errlen, g->file, line, "out of memory");
  char *outputs = NULL;
  for (size_t i = 3; i < ntok; i++) {
    if (strncmp(tok[i], "inputs=", 7) == 0) {
      if (parse_slots(g, nd, tok[i] + 7, err, errlen) < 0)
        return -1;
    } else if (strncmp(tok[i], "attrs=", 6) == 0) {
      if (parse_attrs(g, nd, tok[i] + 6, err, errlen) < 0)
        return -1;
    } else if (strncmp(tok[i], "outputs=", 8) == 0) {
      outputs = tok[i] + 8;
    } else {
      return perr(err, errlen, g->file, line,
                  "node %s: unknown field \"%s\" (inputs=, attrs=, outputs=)", nd->name, tok[i]);
    }
  }
  char *parts[MG_MAX_ITEMS];
  long n = outputs ? split_top(outputs, parts, MG_MAX_ITEMS) : 0;
  if (n <= 0)
    return perr(err, errlen, g->file, line, "node %s: outputs= names no tensor", nd->name);
  nd->outputs = calloc((size_t)n, sizeof *nd->outputs);
  if (nd->outputs == NULL)
    return perr(err, errlen, g->file, line, "out of memory");
  for (long k = 0; k < n; k++) {
    if (!valid_name(parts[k]))
      return perr(err, errlen, g->file, line, "\"%s\" is not a valid tensor name", parts[k]);
    if (find_tensor(g, parts[k]) >= 0)
      return perr(err, errlen, g->file, line, "tensor \"%s\" is defined twice", parts[k]);
    if (add_tensor(g, tcap, parts[k], NULL) < 0)
      return perr(err, errlen, g->file, line, "out of memory");
    nd->outputs[nd->n_outputs++] = g->n_tensors - 1;
  }
  return 0;
}

int mg_graph_parse(const char *path, mg_graph *g, char *err, size_t errlen) {
  memset(g, 0, sizeof *g);
  g->file = path;
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  size_t tcap = 0, ncap = 0, ocap = 0;
  char *buf = NULL;
  size_t bufcap = 0;
  int line = 0, rc = 0;
  while (rc == 0 && getline(&buf, &bufcap, f) >= 0) {
    line++;
    char *hash = strchr(buf, '#');
    if (hash != NULL)
      *hash = '\0';
    char *tok[MG_MAX_TOKENS];
    size_t ntok = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, " \t\r\n", &save); t != NULL; t = strtok_r(NULL, " \t\r\n", &save)) {
      if (ntok == MG_MAX_TOKENS) {
        rc = perr(err, errlen, path, line, "too many fields");
        break;
      }
      tok[ntok++] = t;
    }
    if (rc != 0 || ntok == 0)
      continue;
    if (strcmp(tok[0], "input") == 0) {
      rc = parse_input(g, &tcap, tok, ntok, line, err, errlen);
    } else if (strcmp(tok[0], "node") == 0) {
      rc = parse_node(g, &tcap, &ncap, tok, ntok, line, err, errlen);
    } else if (strcmp(tok[0], "output") == 0) {
      long idx = ntok == 2 ? find_tensor(g, tok[1]) : -1;
      if (ntok != 2)
        rc = perr(err, errlen, path, line, "expected: output NAME");
      else if (idx < 0)
        rc = perr(err, errlen, path, line, "output \"%s\" is not a tensor defined above", tok[1]);
      else if (grow((void **)&g->outputs, &ocap, g->n_outputs, sizeof *g->outputs) < 0)
        rc = perr(err, errlen, path, line, "out of memory");
      else
        g->outputs[g->n_outputs++] = (size_t)idx;
    } else {
      rc = perr(err, errlen, path, line, "unknown line \"%s\" (input, node, output)", tok[0]);
    }
  }
  if (rc == 0 && ferror(f))
    rc = perr(err, errlen, path, line, "read error");
  if (rc == 0 && g->n_outputs == 0)
    rc = perr(err, errlen, path, line, "the graph has no output line");
  free(buf);
  fclose(f);
  return rc;
}

void mg_graph_free(mg_graph *g) {
  for (size_t i = 0; i < g->n_tensors; i++) {
    free(g->tensors[i].name);
    free(g->tensors[i].owned);
  }
  free(g->tensors);
  for (size_t i = 0; i < g->n_nodes; i++) {
    mg_node *nd = &g->nodes[i];
    free(nd->op_type);
    free(nd->name);
    for (size_t s = 0; s < nd->n_slots; s++)
      free(nd->slots[s].items);
    free(nd->slots);
    for (size_t a = 0; a < nd->n_attrs; a++) {
      free(nd->attrs[a].name);
      free(nd->attrs[a].value);
    }
    free(nd->attrs);
    free(nd->outputs);
  }
  free(g->nodes);
  free(g->outputs);
  memset(g, 0, sizeof *g);
}
