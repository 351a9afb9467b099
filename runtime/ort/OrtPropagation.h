//===- OrtPropagation.h - ONNX Runtime's QDQ propagation --------*- C++ -*-===//
//
// Before it fuses Q/DQ groups into integer kernels, ONNX Runtime (its level-1
// QDQPropagationTransformer, ahead of WeightBiasQuantization) carries a grid
// across the ops that only move values (MaxPool, Reshape, Transpose, Squeeze,
// Unsqueeze, Slice, of the versions ORT lists): a QuantizeLinear's grid
// backward to the op's input, a DequantizeLinear's grid forward to the op's
// consumers, each by inserting a QuantizeLinear/DequantizeLinear pair. The
// values do not change (the ops move grid values), but the next Conv then reads
// a DequantizeLinear and runs as QLinearConv. A QDQ model that gives such ops
// no quantizer of its own (MCT's `insert_preserving_quantizers false`) runs that
// way in ORT, and `tpcc run|eval --ort-cpu` rewrites it as ORT does first.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_ORTPROPAGATION_H
#define TPCC_RUNTIME_ORT_ORTPROPAGATION_H

#include "ir/graph/Graph.h"

namespace tpcc::rt {

/// Rewrites `m` as ORT's QDQPropagationTransformer does: first every
/// QuantizeLinear with a constant scalar scale (and zero point) propagates
/// backward through the single-consumer chain of propagating ops before it,
/// up to a DequantizeLinear or a graph input; then every DequantizeLinear
/// with one consumer and no graph output propagates forward through the
/// propagating ops after it, breadth first, up to an edge that ends in a
/// QuantizeLinear. Each step inserts a QuantizeLinear and one
/// DequantizeLinear per consumer, with the starting node's scale, zero
/// point, attributes and domain (a graph output keeps reading the op's own
/// value: the same numbers). Returns how many pairs were inserted; the graph
/// is relinked, not re-verified.
unsigned ortQdqPropagation(graph::Model &m);

/// ORT's PadFusion (a level-1 rule, before the propagation): a Pad of
/// constant zeros on the spatial dimensions whose only reader is a Conv or
/// MaxPool with explicit pads is folded into that reader's `pads`. After a
/// DequantizeLinear, the Conv then reads it directly and runs on integers.
/// Returns how many Pads went.
unsigned ortPadFusion(graph::Model &m);

/// What ORT's level-1 transformers do to a QDQ model before it runs it, in
/// their order: PadFusion, QDQ propagation, WeightBiasQuantization
/// (OrtWeightBias.h). Returns how many rewrites; relinked, not verified.
unsigned ortLevel1Rewrites(graph::Model &m);

} // namespace tpcc::rt

#endif
