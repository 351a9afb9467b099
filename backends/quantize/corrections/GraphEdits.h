//===- GraphEdits.h - Helpers and post-threshold decisions ------*- C++ -*-===//
//
// Internal to backends/quantize: the small graph helpers the corrections
// share, and the post-threshold decisions (shift_negative, input_scaling)
// the quantizer makes once every activation grid is chosen. A decision
// records a GraphEdit for the QDQ copy, replaces the grids of the tensors it
// changes, and leaves what the next linear op needs (a compensated bias, a
// scaled kernel, the shift and scale of its input's mean for bias
// correction) in a LinearAdjust.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_BACKENDS_QUANTIZE_CORRECTIONS_GRAPHEDITS_H
#define TPCC_BACKENDS_QUANTIZE_CORRECTIONS_GRAPHEDITS_H

#include "backends/quantize/corrections/Corrections.h"
#include "backends/quantize/Quantizer.h"

#include <map>
#include <optional>
#include <set>

namespace tpcc::quant::edits {

graph::Node *nodeNamed(const graph::Graph &g, llvm::StringRef name);
/// The values of a float constant (not an overridable graph input); empty
/// otherwise.
std::vector<float> floatValues(const graph::Value *v);
/// The only node reading `v` (once), or null; `index` gets the input index.
graph::Node *singleConsumer(const graph::Value *v, unsigned *index = nullptr);
/// Input `index` of `n` becomes a new float constant named after `base`.
void setConstant(graph::Graph &g, graph::Node &n, unsigned index, const std::vector<float> &values,
                 const std::vector<int64_t> &dims, const std::string &base);
/// A value (or node, `nodes`) name `g` does not use and `taken` does not hold;
/// added to `taken`.
std::string freshName(const graph::Graph &g, const std::string &base, std::set<std::string> &taken,
                      bool nodes = false);
/// An integer attribute list of `n` (empty when absent).
std::vector<int64_t> intsAttr(const graph::Node &n, const char *name);
int64_t intAttr(const graph::Node &n, const char *name, int64_t dflt);
std::string stringAttr(const graph::Node &n, const char *name, const char *dflt);

/// What the post-threshold edits leave for one linear node (by name).
struct LinearAdjust {
  double inputShift = 0; ///< delta added to the node's input
  double inputScale = 1; ///< t/m the node's input is multiplied by
  std::optional<std::vector<float>> bias;   ///< the compensated bias
  std::optional<std::vector<float>> kernel; ///< the scaled kernel
};

struct PostThreshold {
  const plan::Plan &plan;
  const ir::Recipe &recipe;
  /// Activation grids by value id of plan.model; edits reset and replace them.
  std::vector<std::optional<QuantGrid>> &grids;
  std::vector<std::unique_ptr<TensorStats>> &stats;
  QuantizeResult &result;
  /// Grids of the tensors the edits create (no value in plan.model).
  std::vector<ActivationQDQ> added;
  std::map<std::string, LinearAdjust> linear;
  std::set<std::string> taken;
};

/// input_scaling: graph input -> [Pad] -> Conv/Gemm with threshold t > m.
void decideInputScaling(PostThreshold &s);
/// shift_negative: see Corrections.h and algorithms.md 4.
void decideShiftNegative(PostThreshold &s);

} // namespace tpcc::quant::edits

#endif
