//===- Float16Proto.h - float16 models computed in float32 -------*- C++ -*-===//
//
// Internal to ir/graph (it includes ONNX's protobuf classes). A model that
// computes in float16 (half-precision weights, inputs, Casts to float16) is
// loaded, when the caller asks (LoadOptions::widenFloat16), as the same model
// in float32: the executor's kernels and the QDQ form (QuantizeLinear takes
// float32 before opset 19) work in float32, as the model's float16 runtime
// would up to float16 rounding.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_IR_GRAPH_FLOAT16PROTO_H
#define TPCC_IR_GRAPH_FLOAT16PROTO_H

#include <onnx/onnx_pb.h>

namespace tpcc::graph::proto {

/// Rewrites `g` and its nested subgraphs from float16 to float32: tensors
/// (initializers, Constant values, every tensor attribute), the types of
/// inputs, outputs and value_info, Cast's `to` and the `dtype` of the
/// operators that take one. A float16 tensor whose data does not hold whole
/// half values is left for the loader's checks. True when anything changed.
bool widenFloat16(onnx::GraphProto &g);

} // namespace tpcc::graph::proto

#endif
