//===- Plan.h - Platform x model -> per-node quantization plan ---*- C++ -*-===//
//
// The planner (`tpcc plan`): each node of the model's top graph is matched to
// the opset whose capabilities binding holds on it (filter predicates
// evaluated on the node), takes that opset's options (or the platform's
// default), gets its weight slots from the framework, and is grouped with
// its neighbours where a fusing pattern matches. Every tensor then gets its
// activation quantizer (or the reason it has none), and the plan is checked:
// bit widths between producer and consumer, preserving ops after unquantized
// producers, weight slots that are missing or not constant.
//
// The plan's JSON form (plan_version 1) is the contract with the quantizer;
// see docs/plan.md.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PLAN_PLAN_H
#define TPCC_PLAN_PLAN_H

#include "ir/TpcIR.h"
#include "ir/graph/Graph.h"
#include "ir/graph/OnnxIO.h"
#include "plan/CompositeMatch.h"
#include "support/Diagnostics.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpcc::plan {

/// The options a node may use: an opset's own or the platform's default.
struct OptionsRef {
  const ir::Options *options = nullptr;
  /// `Conv` or `default`: config ids are `<owner>.<index>`.
  std::string owner;
  std::string configId(unsigned i) const { return owner + "." + std::to_string(i); }
};

/// A weight of a node: a slot the framework declares (`kernel`, `bias`), or
/// a constant operand (slot `input[i]`, no `decl`: a float constant the op
/// computes with, quantized by the config's default weight config).
struct PlanWeight {
  std::string slot;
  const ir::WeightSlot *decl = nullptr; ///< the framework's declaration
  int64_t inputIndex = 0;
  const graph::Value *input = nullptr; ///< null: the node lacks the input
  ir::AttrConfig config;
  /// The tensor's output-channel axis, normalized, when it has one.
  std::optional<int64_t> channelAxis;
  std::optional<int64_t> axis; ///< `channelAxis` when quantized per channel
  /// The axis a blocked format's blocks run along (the framework's `in` axis
  /// for `block_axis: reduction`, its `out` axis for `output`), normalized.
  std::optional<int64_t> blockAxis;
  bool quantize = false;
  /// Filled by `tpcc quantize`: one grid per channel (or one), and the LUT
  /// tables of LUT methods.
  std::vector<double> scales;
  std::vector<int64_t> zeroPoints;
  std::vector<std::vector<int64_t>> luts;
  /// Two-level scales (a `block_scale`): each block's factor, and the scale
  /// of each group along `groupAxis` of the blocked scale's shape (-1: one);
  /// `scales` then holds their float32 products.
  std::vector<double> factors, groupScales;
  int64_t groupAxis = -1;
  /// Filled by `tpcc finetune`: the trained float values.
  std::vector<float> trained;
};

/// The dimension of weight `w`'s constant that format `f`'s blocks run along:
/// the framework slot's `in` axis (`block_axis: reduction`) or `out` axis
/// (`output`), negative axes counted from the end; none when the slot
/// declares no such axis or the tensor has no such dimension.
std::optional<int64_t> blockDim(const PlanWeight &w, const ir::FormatConfig &f);

struct PlanNode {
  graph::Node *node = nullptr;
  const ir::Opset *opset = nullptr;       ///< null: unmatched
  const ir::OpBinding *binding = nullptr; ///< the binding that matched
  OptionsRef options;
  unsigned chosen = 0; ///< index into options->configs (the base or a choice)
  int fusingGroup = -1;
  /// Index into Plan::chains when the node belongs to a matched composite
  /// (its root or an inner node), else -1. A chain is planned as its root:
  /// the root carries the opset, options, fusing group and output quantizer;
  /// inner nodes share the root's binding and options and quantize nothing.
  int chain = -1;
  bool innerOfChain = false;
  std::vector<PlanWeight> weights;
  /// Filled by `tpcc quantize` when bias correction changed the bias.
  std::vector<float> correctedBias;

  const ir::OpConfig &config() const { return options.options->configs[chosen]; }
};

struct PlanTensor {
  const graph::Value *value = nullptr;
  const PlanNode *producer = nullptr; ///< null for graph inputs
  bool quantize = false;
  std::string reason; ///< why not quantized
  bool preserving = false;
  ir::QuantMethod method = ir::QuantMethod::PowerOfTwo;
  int bits = 8;
  ir::Signedness signedness = ir::Signedness::Auto;
  /// The number format beyond method and bits (element, blocks, scales).
  ir::FormatConfig format;
  /// Blocked (MX) formats: the dimension the blocks run along (the one the
  /// readers reduce over; negative, counted from the end, when the model
  /// does not give the tensor's rank), and the rank (0: not known).
  std::optional<int64_t> blockAxis;
  int64_t rank = 0;
  int64_t blockLength = 0; ///< the axis's length as calibrated (`tpcc quantize`)
  std::optional<std::pair<double, double>> range;
  std::optional<double> scale;
  std::optional<int64_t> zeroPoint;
  std::string configId; ///< the config it follows
  /// A preserving op's output that keeps the grid of the constant table it
  /// reads (an embedding's Gather), stored quantized as the node's weight.
  const graph::Value *table = nullptr;
  /// Filled by `tpcc quantize`: how the grid was chosen ("mse", "fixed"...).
  std::string statistic;
};

struct FusingGroup {
  unsigned id = 0;
  const ir::Fusing *pattern = nullptr;
  std::vector<unsigned> nodes; ///< indices into Plan::nodes, in chain order
};

/// A product that looks like an activation (SiLU, HardSwish, GELU, Mish
/// spelled out) but is planned op by op: no bound composite matched it.
struct ActivationLookalike {
  const graph::Node *node = nullptr; ///< the Mul
  std::string form;                  ///< `Mul(x, Sigmoid(y))`
  std::string reason;
};

/// What a mixed-precision search decided (plan key `mixed_precision`):
/// the budgets with what the choice uses, and the choices it made (each
/// also a node's `chosen`, so `tpcc apply` needs nothing else).
struct MixedPrecisionRecord {
  struct Budget {
    std::string resource, text, source;
    double allowed = 0, used = 0, minimum = 0, base = 0; ///< bytes or BOPs
  };
  std::vector<Budget> budgets;
  std::vector<std::pair<std::string, std::string>> choices; ///< (node, config id)
  std::string distance;                                     ///< `avg`, `last_layer`
  std::string status;                                       ///< `optimal`, `time_limit`
  int64_t images = 0;
  unsigned refinements = 0;
};

struct Plan {
  const ir::Platform *platform = nullptr;
  const ir::Capabilities *capabilities = nullptr;
  const ir::Framework *framework = nullptr;
  const graph::Model *model = nullptr;
  std::string modelName;       ///< as diagnostics name it
  std::vector<PlanNode> nodes; ///< file order (PlanNode i is graph node i)
  std::vector<FusingGroup> groups;
  /// The composites found in the model, in topological order of their roots.
  std::vector<CompositeMatch> chains;
  std::vector<ActivationLookalike> lookalikes; ///< in file order
  std::vector<PlanTensor> tensors;             ///< graph inputs, then node outputs
  /// Every options any node uses (for the plan's `configs` table), in order
  /// of first use.
  std::vector<OptionsRef> usedOptions;
  /// Filled by `tpcc quantize`: the recipe's corrections that changed the
  /// model, in the order they were made (key `corrections`, absent when
  /// empty), each an object with its `op`, its `description` and the
  /// parameters `tpcc apply` replays it from. The quantizer defines each
  /// op's parameters (quant/ptq/corrections/Replay.h); the plan only carries
  /// them.
  std::vector<llvm::json::Object> corrections;
  /// Filled by `tpcc quantize`: the inputs `--fix-input` made constants
  /// (key `fixed_inputs`, absent when none); `tpcc apply` fixes them too.
  std::vector<std::pair<std::string, double>> fixedInputs;
  /// The sizes `--dim` gave symbolic input dimensions (key `dims`, absent
  /// when none); `tpcc apply` gives them too.
  graph::DimValues dims;
  /// Filled when a mixed-precision search chose the configs.
  std::optional<MixedPrecisionRecord> mixedPrecision;

  const PlanTensor *tensorOf(const graph::Value *v) const;
  /// The node a fusing pattern sees for `n`: the root of `n`'s chain, or `n`.
  const PlanNode &elementOf(const PlanNode &n) const {
    return n.innerOfChain ? nodes[chains[n.chain].root->id] : n;
  }
  /// What flows into element `n`: a chain's parameter values, a node's inputs.
  std::vector<const graph::Value *> elementInputs(const PlanNode &n) const;
  /// The fusing group `n` is inside of (a member, not the last), or null.
  const FusingGroup *innerGroupOf(const PlanNode &n) const {
    if (n.fusingGroup < 0)
      return nullptr;
    const FusingGroup &g = groups[size_t(n.fusingGroup)];
    return &nodes[g.nodes.back()] != &n ? &g : nullptr;
  }
  /// The pattern's `with` config that quantizes `n`'s outputs inside its
  /// fusing group, or null (outside a group, or no config that quantizes).
  const ir::OpConfig *fusedConfigOf(const PlanNode &n) const {
    const FusingGroup *g = innerGroupOf(n);
    return g && g->pattern->config && g->pattern->config->activation.quantize ? &*g->pattern->config
                                                                              : nullptr;
  }
  /// The elements that compute with the values of `v` (a model input): its
  /// readers, and through data movement (a preserving reader that moves `v`
  /// as its first input) the readers of that reader's outputs, in turn; the
  /// framework's no_quantize ops (Shape, ArgMax...) are left out. False
  /// when some value on the way has no reader (a model output), data
  /// movement reads it on another input, or the moves go deeper than 16.
  bool valueReaders(const graph::Value &v, std::vector<const PlanNode *> &readers,
                    int depth = 0) const;
  std::vector<int> tensorIndex; ///< by value id; -1 when not a tensor entry
};

/// `--choose NODE=CONFIG`, in command-line order: node NODE (its name as the
/// plan prints it) takes candidate CONFIG (a config id, `FullyConnected.3`)
/// instead of its options' base.
using Choices = std::vector<std::pair<std::string, std::string>>;

/// Builds the plan. Errors (a node matching two opsets, a choice naming no
/// node, a config that is not the node's candidate, or a node twice) and
/// warnings go to `diags`; the plan is complete either way (a node with two
/// matches takes the first, a node with a bad choice keeps its base).
Plan buildPlan(const ir::Module &m, const ir::Platform &p, const ir::Capabilities &caps,
               const ir::Framework *fw, graph::Model &model, DiagnosticEngine &diags,
               const Choices &choices = {});

/// Finds the fusing groups (global longest-pattern-first, topological order)
/// and records them in `plan.groups` and each node's `fusingGroup`.
void findFusingGroups(Plan &plan);

/// Finds the products that look like activations but are in no chain and
/// records them in `plan.lookalikes`.
void findLookalikes(Plan &plan);

/// Why node `n` is or is not in a fusing group, one line per pattern that
/// mentions its opset.
std::vector<std::string> explainFusing(const Plan &plan, const PlanNode &n);

/// The plan as JSON (plan_version 1), listing `diags` (located with `sm`).
void emitPlanJSON(const Plan &plan, const std::vector<Diagnostic> &diags, const SourceManager &sm,
                  llvm::raw_ostream &os);

/// ONNX Runtime's TensorQuantOverrides for the plan; what ORT cannot express
/// is reported to `diags` as warnings.
void emitOrtOverrides(const Plan &plan, DiagnosticEngine &diags, llvm::raw_ostream &os);

/// The summary `tpcc plan` prints: nodes per opset, fused groups, quantized
/// tensors, weight bytes.
void printSummary(const Plan &plan, llvm::raw_ostream &os);

/// `tpcc plan --explain NODE`: every binding tried with each predicate's
/// value, the options, weights, tensors and the fusing decision.
void printExplanation(const Plan &plan, const PlanNode &n, const SourceManager &sm,
                      llvm::raw_ostream &os);

/// "imx500.tpc:107:3": where a definition is (file name without folders, so
/// plans do not depend on where the stdlib is installed).
std::string shortLocation(const SourceManager &sm, SourceRange r);

} // namespace tpcc::plan

#endif
