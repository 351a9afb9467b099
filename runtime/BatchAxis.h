//===- BatchAxis.h - Whether a model computes each sample on its own -*- C++ -*-===//
//
// A model is sample-separable when axis 0 of every required input is a batch
// of independent samples all the way to the outputs: each output's row i
// depends on the inputs' rows i only, and no shape depends on the batch size.
// Running such a model on a batch split along axis 0 and concatenating the
// results computes the same numbers (MicroBatch.h relies on it).
//
// The check is conservative and static: every node that reads a batched value
// must be an operator whose definition keeps samples apart given its
// attributes and constant inputs (Conv, pooling, element-wise operators with
// an unbatched operand of lower rank or leading 1, Gemm with the batch as its
// rows, Softmax/Concat/Reduce*/Transpose away from axis 0, Reshape whose shape
// keeps axis 0, ...); anything else (Shape, a reduction over axis 0,
// recurrent or control-flow operators, other domains) makes the model not
// separable, with the reason.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_BATCHAXIS_H
#define TPCC_RUNTIME_BATCHAXIS_H

#include "ir/graph/Graph.h"

#include <string>

namespace tpcc::rt {

/// Whether `m` is sample-separable; otherwise `why` (when given) names the
/// first node or value that is not.
bool sampleSeparable(const graph::Model &m, std::string *why = nullptr);

} // namespace tpcc::rt

#endif
