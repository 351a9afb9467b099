//===- GraphHelpers.h - Graph helpers the quantizer shares -------*- C++ -*-===//
//
// Shared by the layers of quant/: finding nodes and constants, replacing a
// constant input, fresh names; reading attributes with schema defaults
// (graph::NodeAttrs); and what the quantizer asks about linear ops (OpTraits
// `linear`: Conv, Gemm): whether a node is one with constant weights, and
// along which axis its kernel's output channels run, as the framework
// declares it (stdlib/onnx.tpc: `weight kernel ... axes(out: ...)`, read
// from the plan's weights).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_GRAPHHELPERS_H
#define TPCC_QUANT_CORE_GRAPHHELPERS_H

#include "ir/graph/NodeAttrs.h"
#include "plan/Plan.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tpcc::quant::edits {

graph::Node *nodeNamed(const graph::Graph &g, llvm::StringRef name);
/// Whether `n` is the default-domain ONNX operator `op`.
bool isOp(const graph::Node *n, llvm::StringRef op);
/// Whether `v` is a float constant (not an overridable graph input): what
/// floatValues reads, checked without copying it.
bool isFloatConstant(const graph::Value *v);
/// The values of a float constant (not an overridable graph input); empty
/// otherwise.
std::vector<float> floatValues(const graph::Value *v);
/// The bounds of the Clip `n`, when both are known constants (Clip-6:
/// attributes min and max, a missing min -inf; Clip-11 and later: inputs 1
/// and 2).
bool clipBounds(const graph::NodeAttrs &attrs, const graph::Node &n, double &lo, double &hi);
/// The only node reading `v` (once), or null; `index` gets the input index.
graph::Node *singleConsumer(const graph::Value *v, unsigned *index = nullptr);
/// New data, as many floats, for the initializer behind `v` (a kernel or
/// bias that training or rounding changed).
void overwriteInitializer(graph::Graph &g, const graph::Value &v, const std::vector<float> &values);
/// Input `index` of `n` becomes a new float constant named after `base`.
void setConstant(graph::Graph &g, graph::Node &n, unsigned index, const std::vector<float> &values,
                 const std::vector<int64_t> &dims, const std::string &base);
/// An INT attribute.
graph::Attribute intAttribute(const char *name, int64_t value);
/// A value (or node, `nodes`) name `g` does not use and `taken` does not hold;
/// added to `taken`.
std::string freshName(const graph::Graph &g, const std::string &base, std::set<std::string> &taken,
                      bool nodes = false);

/// A linear op (OpTraits::linear) whose kernel is a float constant of a rank
/// it can have (Conv: 3 or more; Gemm: 2, with transA = 0) and whose bias,
/// when present, is a 1-D float constant: the ops the corrections edit.
bool isLinearWithConstants(const graph::Model &m, const graph::Node *n);

/// Where the bias of a linear layer is: input 2 of a Conv or Gemm, or, for a
/// MatMul, the constant operand of the Add that alone reads its product (a
/// linear layer as PyTorch exports it for inputs of rank 3 and more). `node`
/// is null when the layer has no place for a bias (a MatMul read by anything
/// else); `value()` is null when a Conv or Gemm has none yet.
struct BiasInput {
  graph::Node *node = nullptr;
  unsigned index = 0;
  const graph::Value *value() const { return node ? node->input(index) : nullptr; }
};
BiasInput linearBias(const graph::Node &n);

/// A MatMul whose kernel (input 1) is a 2-D float constant [K, N] and whose
/// bias (linearBias), when it has one, holds N float values (shape [N], or
/// ones and then N).
bool isMatMulLayer(const graph::Node *n);
/// Whether the plan quantizes the bias of MatMul layer `n` as a constant of
/// its own (ort_cpu's QLinearAdd): a correction must then leave it as it is,
/// its grid chosen from the values as they are.
bool biasQuantized(const plan::Plan &plan, const graph::Node &n);
/// isLinearWithConstants or isMatMulLayer: the layers shift_negative,
/// input_scaling and bias correction edit.
bool isLinearLayer(const graph::Model &m, const graph::Node *n);

/// The plan node of `n` (a node of plan.model), or null.
const plan::PlanNode *planNodeOf(const plan::Plan &plan, const graph::Node *n);

/// The output-channel axis of the kernel (input 1) of `pn`, as the
/// framework's weight slot declares it (`axes(out: ...)`, where clauses
/// such as Gemm's transB already decided), normalized to the kernel's rank;
/// none when no slot with an out axis holds input 1.
std::optional<int64_t> kernelOutAxis(const plan::PlanNode &pn);

} // namespace tpcc::quant::edits

#endif
