/*
 * The mini engine's graph: a text file parsed into tensors, nodes and the
 * graph outputs. See README.md in this directory for the format.
 */
#ifndef MINI_ENGINE_GRAPH_H
#define MINI_ENGINE_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <pyop/pyop.h>

/* A named tensor of the graph: a graph input (values given in the file) or
 * an output of a node (allocated when the graph is planned). */
typedef struct mg_tensor {
  char *name;
  pyop_tensor t;       /* t.data NULL until it has a buffer */
  void *owned;         /* the buffer the engine allocated (freed with the graph) */
  /* Op type of the infer-only node that produced it (t.data stays NULL:
   * only its shape and dtype are known), else NULL. */
  const char *shape_only_op;
} mg_tensor;

/* One input slot of a node: indices into mg_graph.tensors. An empty slot is
 * an absent optional input or an empty dynamic one. */
typedef struct mg_slot {
  size_t *items;
  size_t count;
} mg_slot;

/* "name:value" of the node line; the value is parsed once the attribute's
 * type is known (from the registered op's prototype). */
typedef struct mg_attr_text {
  char *name;
  char *value;
} mg_attr_text;

typedef struct mg_node {
  char *op_type;
  char *name;
  int line;
  mg_slot *slots;
  size_t n_slots;
  mg_attr_text *attrs;
  size_t n_attrs;
  size_t *outputs; /* indices into mg_graph.tensors */
  size_t n_outputs;
} mg_node;

typedef struct mg_graph {
  const char *file;
  mg_tensor *tensors;
  size_t n_tensors;
  mg_node *nodes;
  size_t n_nodes;
  size_t *outputs; /* the `output` lines, in order */
  size_t n_outputs;
} mg_graph;

/*
 * Parses the graph file at path into *g (zeroed first). Returns 0, or -1
 * with a message "file:line: what" in err. On failure *g holds what was
 * parsed so far; mg_graph_free releases it either way.
 */
int mg_graph_parse(const char *path, mg_graph *g, char *err, size_t errlen);

/* Frees everything the graph owns, tensor buffers included. */
void mg_graph_free(mg_graph *g);

/*
 * Parses comma-separated values (C order) for a tensor of t's dtype and
 * shape into a new buffer (*out, malloc'd, t->nbytes bytes). Returns 0, or
 * -1 with a message in err. Supports float32/64, int8..64, uint8..64, bool;
 * "-" is the text of a tensor with no element.
 */
int mg_parse_values(const char *text, const pyop_tensor *t, void **out, char *err,
                    size_t errlen);

/* Writes "[v0, v1, ...]" for the tensor's values to f (%g for floats). */
void mg_print_values(FILE *f, const pyop_tensor *t);

/* Writes "float32[2,3]" to f. */
void mg_print_desc(FILE *f, const pyop_tensor *t);

#endif
