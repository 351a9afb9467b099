//===- Resources.h - What a plan's choices cost the hardware -----*- C++ -*-===//
//
// The resource figures of docs/plan.md ("Resources") for a plan, for its
// chosen configs or any other assignment of candidates to nodes:
//   weights    sum over quantized weights other than biases of elements x
//              bits (LUT methods: elements x table-index bits plus each
//              channel's table of 2^bits entries x multiplier bits);
//   activation the largest sum, over the steps of the model's topological
//              order, of the quantized activation tensors live at that step
//              (produced at or before it, read at or after it; graph outputs
//              live to the end), each elements-per-sample x bits: MCT 2.4's
//              cut-based figure (MCT 2.2 took the largest single tensor);
//   total      weights + activation;
//   BOPs       sum over kernel layers (a node with a quantized kernel slot) of
//              MACs x weight bits x the bits of the activation feeding it (32
//              when that is float); MACs(Conv) = output elements x C_in/group x
//              kernel taps, MACs(Gemm/MatMul) = output elements x C_in.
// Sizes are per sample: a symbolic or batch dimension counts 1.
//
// The same figures as expressions over the choice of each variable node
// (ResourceModel), linear in the choices except BOPs (a product of a kernel's
// choice and its input producer's): what the bit-allocation ILP constrains.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PLAN_RESOURCES_H
#define TPCC_PLAN_RESOURCES_H

#include "plan/Plan.h"

#include <string>
#include <vector>

namespace tpcc::plan {

/// Bits and BOPs of one assignment.
struct ResourceFigures {
  double weightsBits = 0, activationBits = 0, bops = 0;
  /// The step (index into the topological order) whose live set is largest;
  /// -1 when no activation is quantized.
  int peakStep = -1;
  double totalBits() const { return weightsBits + activationBits; }
  double weightsBytes() const { return weightsBits / 8; }
  double activationBytes() const { return activationBits / 8; }
  double totalBytes() const { return totalBits() / 8; }
};

/// Candidate `candidate` (an index into the node's options) of plan node `node`.
struct NodeChoice {
  unsigned node = 0, candidate = 0;
};

/// One candidate per plan node (by plan node index); inner nodes of a
/// composite follow their root.
using Assignment = std::vector<unsigned>;

/// constant + sum coef x [node takes candidate] + sum coef x [a] x [b].
struct ResourceExpr {
  double constant = 0;
  std::vector<std::pair<NodeChoice, double>> linear;
  struct Product {
    NodeChoice a, b;
    double coef = 0;
  };
  std::vector<Product> products;
  double evaluate(const Assignment &a) const;
};

/// The figures as expressions over the variable nodes' choices.
struct ResourceModel {
  /// Plan node indices whose candidate varies (more than one candidate, not
  /// fixed, not inside a composite); every other node is a constant at its
  /// `chosen` config.
  std::vector<unsigned> variables;
  ResourceExpr weights; ///< bits
  /// The activation bits live at each step, identical live sets merged; a
  /// set contained in its neighbour's, and the cuts that depend on no choice
  /// except the largest of them, left out (neither can exceed what is kept).
  /// Each cut is constant + linear terms, with products of two choices only
  /// when a preserving node's candidates differ in whether they preserve.
  std::vector<ResourceExpr> cuts;
  std::vector<int> cutSteps; ///< the first step of each cut, ascending
  ResourceExpr bops;
  /// Tensors some assignment quantizes whose rank is unknown: not counted.
  unsigned unknownSizeTensors = 0;
  /// Kernel layers whose MACs are unknown (a shape is): no BOPs counted.
  unsigned unknownMacs = 0;
  ResourceFigures evaluate(const Assignment &a) const;
};

/// Builds the model of `plan`. `fixed[i]` (when given) keeps plan node i at
/// its chosen config (a `--choose` the user made).
ResourceModel buildResourceModel(const Plan &plan, const std::vector<bool> &fixed = {});

/// The plan's own assignment (every node's `chosen`).
Assignment chosenAssignment(const Plan &plan);
/// Every node at its base config / its largest / its smallest candidate
/// (candidates ordered by weight bits, then activation bits; the first of
/// equals).
Assignment baseAssignment(const Plan &plan);
Assignment maxAssignment(const Plan &plan);
Assignment minAssignment(const Plan &plan);

/// The figures `tpcc plan` prints and the plan JSON's `resources` holds.
struct ResourceReport {
  ResourceFigures chosen, base, max, min;
  unsigned unknownSizeTensors = 0, unknownMacs = 0;
};
ResourceReport resourceReport(const Plan &plan);

/// The name of the node at step `step` of the topological order ("" for -1):
/// where the activation peak is.
std::string stepNodeName(const Plan &plan, int step);

/// The memory the platform declares (absolute amounts), in the order
/// weights, activation, total.
struct DeclaredMemory {
  ir::Resource resource;
  const ir::Budget *budget;
};
std::vector<DeclaredMemory> declaredMemory(const Plan &plan);
/// Bytes of memory resource `r` (BOPs for ir::Resource::Bops) in `f`.
double memoryBytes(const ResourceFigures &f, ir::Resource r);
/// "weights memory", "activation memory", "total memory", "bops".
std::string resourceName(ir::Resource r);

/// "57.3 M": a count with a k/M/G/T/P scale, three significant digits.
std::string formatCount(double v);
/// A figure as people read it: bytes (ir::formatBytes) or "57.3 M BOPs".
std::string formatAmount(ir::Resource r, double v);

/// When the platform declares memory (`resources`): an error when even the
/// all-min assignment exceeds a declared amount (it names the smallest
/// achievable figure), a warning when the chosen configs exceed it but the
/// all-min ones fit (mixed precision can make it fit). Fails on the error.
LogicalResult checkPlatformMemory(const Plan &plan, DiagnosticEngine &diags);

} // namespace tpcc::plan

#endif
