/*
 * The engine's REG_OPs of tests/ge/impl_only/ge_add_custom.py as a C++
 * header in the shape of GE's samples (ge_add_custom.reg_op is the same in
 * the Python form, without data types), for `pyop list/check/run --proto`
 * (tests/ge/test_proto_cli.py). The plugin's execute views every tensor as
 * float32 (ctypes.c_float): the TensorType sets say so, and `pyop check`
 * sweeps only what they allow.
 */
#ifndef TESTS_EXAMPLES_GE_PROTOS_GE_ADD_CUSTOM_H_
#define TESTS_EXAMPLES_GE_PROTOS_GE_ADD_CUSTOM_H_

#include "graph/operator_reg.h"

namespace ge {
REG_OP(GeAddCustom)
    .INPUT(x1, "T")
    .INPUT(x2, "T")
    .OUTPUT(y, "T")
    .DATATYPE(T, TensorType({DT_FLOAT}))
    .ATTR(alpha, Float, 1.0)
    .OP_END_FACTORY_REG(GeAddCustom);

REG_OP(GeLegacyHost)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT}))
    .REQUIRED_ATTR(k, Int)
    .OP_END_FACTORY_REG(GeLegacyHost);

// Declared by the engine, implemented by no plugin: left out with a note.
REG_OP(GeEngineOnly)
    .INPUT(x, TensorType::ALL())
    .OUTPUT(y, TensorType::ALL())
    .OP_END_FACTORY_REG(GeEngineOnly);

// No pyop form (a subgraph): not registered, with a note.
REG_OP(GeWithGraph)
    .INPUT(x, TensorType::ALL())
    .OUTPUT(y, TensorType::ALL())
    .GRAPH(body)
    .OP_END_FACTORY_REG(GeWithGraph);
}  // namespace ge

#endif  // TESTS_EXAMPLES_GE_PROTOS_GE_ADD_CUSTOM_H_
