//===- Executor.h - Runs a model IR graph on the CPU ------------*- C++ -*-===//
//
// The executor runs the top graph of a `graph::Model` node by node in
// topological order; kernels use every core OpenMP gives them (parallel loops
// inside each kernel; oneDNN for convolution and matrix products).
// Intermediate tensors are freed after their last use, so memory holds the
// live set, not the whole graph, and their buffers come from the executor's
// pool (BufferPool.h): from the second run at a batch shape on, a run
// allocates no tensor memory.
//
// In runs that do not need every value (RunOptions::watched), element-wise
// nodes after a convolution run inside it (Fusion.h), and the output of a
// convolution or pooling read only by convolutions and poolings stays in
// oneDNN's blocked layout (reorders only where plain kernels take over).
//
// create() checks everything that can be checked before running: every
// node's operator has a kernel (each missing one is reported with its node),
// and initializers agree with the types the model declares for them; it also
// computes once the nodes whose inputs are all constants. run() checks the
// inputs (every name a graph input, every input without an initializer
// present, type, shape against the declared dimensions with symbolic
// dimensions bound consistently, finite values; RunOptions turns the last two
// off) before any kernel runs. Errors are diagnostics located at the model or
// its nodes.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_EXECUTOR_H
#define TPCC_RUNTIME_EXECUTOR_H

#include "runtime/BufferPool.h"
#include "runtime/Fusion.h"
#include "runtime/IntegerKernel.h"
#include "runtime/IntegerPairs.h"
#include "runtime/Kernel.h"
#include "runtime/LookupTable.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tpcc::rt {

struct RunOptions {
  /// Called with every value a node computes, right after the node ran
  /// (calibration hooks in here). Graph inputs are passed too. With
  /// `watched`, only the watched values.
  llvm::function_ref<void(const graph::Value &, const Tensor &)> observe;
  /// Replaces a value as the nodes that read it see it (a fake-quantized
  /// weight): returns the tensor to use, or null to keep the value. Values
  /// of nodes create() computed once (all-constant inputs) are not
  /// recomputed from substituted inputs.
  llvm::function_ref<const Tensor *(const graph::Value &)> substitute;
  /// Called with every value a node computes, before `observe` and before
  /// any node reads it: may replace the tensor (a fake-quantized
  /// activation), never write into its data (buffers are shared).
  llvm::function_ref<void(const graph::Value &, Tensor &)> transform;
  /// The values (by id, true) `observe` and `transform` need; null: all of
  /// them. Only a run that watches a value computes it as the model defines
  /// it: the others may be fused into the node before them.
  const std::vector<bool> *watched = nullptr;
  /// When set, no value is freed and the run leaves every value here (by
  /// value id; undefined for values it did not compute): the state runFrom
  /// starts from.
  std::vector<Tensor> *keep = nullptr;
  /// With `keep`: run only the steps before this one, leaving every value
  /// in `keep` for a runFrom(stopBefore, ...) that goes on (the outputs stay
  /// empty). Layer-by-layer algorithms (second-order rounding) stop at each
  /// layer.
  size_t stopBefore = SIZE_MAX;
  /// Accept NaN and Inf in the inputs.
  bool allowNonFinite = false;
  /// Check input shapes against the declared ones (the ONNX test suite has
  /// cases whose data contradicts their own declarations).
  bool checkShapes = true;
  /// How the QDQ groups ONNX Runtime runs as integer kernels are computed:
  /// as the float model the graph defines, or as ORT's kernels with or
  /// without VNNI (IntegerPairs.h). Exact runs the groups on oneDNN's int8
  /// primitives (IntegerKernel.h) where their form allows, else computes
  /// them as Exact after the float kernel.
  IntegerArithmetic arithmetic = IntegerArithmetic::Float;
  /// With `arithmetic` not Float: compute a float Conv outside the integer
  /// groups as ORT's MLAS does on one thread (ops/OrtConv.h), bit for bit,
  /// instead of through oneDNN (faster; its sums round apart in the last
  /// bit, which a tensor on a rounding tie turns into a step).
  bool ortFloat = false;
};

class Executor {
public:
  /// Prepares `model`, which must outlive the executor. Null after errors.
  /// With `sibling` (an executor of the same model), the new one shares its
  /// constants and the values it precomputed instead of copying them.
  static std::unique_ptr<Executor> create(const graph::Model &model, DiagnosticEngine &diags,
                                          const Executor *sibling = nullptr);

  /// Runs the graph. `inputs` maps graph input names to tensors; inputs
  /// with an initializer may be left out. On success `outputs` holds the
  /// graph outputs in order.
  LogicalResult run(const std::map<std::string, Tensor> &inputs, std::vector<Tensor> &outputs,
                    DiagnosticEngine &diags, const RunOptions &options = {});

  /// Runs the steps from `first` on (runFrom(0, ...) is a run without the
  /// input checks), starting from `values` (by value id: everything an
  /// earlier run computed and a later step reads, e.g. a kept run's values;
  /// copying tensors shares their data). Options as for run(); `observe`
  /// sees only what these steps compute.
  LogicalResult runFrom(size_t first, std::vector<Tensor> values, std::vector<Tensor> &outputs,
                        DiagnosticEngine &diags, const RunOptions &options = {});
  /// The step (index in the topological order) that runs `n`.
  size_t stepOf(const graph::Node &n) const { return stepIndex[n.id]; }
  size_t numSteps() const { return steps.size(); }

  const graph::Model &model() const { return m; }
  /// The nodes that run fused into the Conv/ConvTranspose before them (as
  /// oneDNN post-ops, Fusion.h) in runs that watch none of the values in
  /// between (not after a QDQ group's node when the run computes the groups
  /// as integers).
  unsigned fusedNodes() const {
    unsigned n = 0;
    for (const Step &s : steps)
      n += s.fusion ? unsigned(s.fusion->absorbed.size()) : 0;
    return n;
  }
  /// The QDQ groups the runs with integer arithmetic computed as ONNX
  /// Runtime does (0 before the first such run).
  unsigned integerGroups() const {
    unsigned n = 0;
    for (const Step &s : steps)
      n += s.integer.has_value();
    return n;
  }
  /// What integer runs compute without the float graph: QuantizeLinear
  /// nodes computed inside a group's kernel or a lookup, lookup tables,
  /// convolution kernels that hand their output on channels-last, nodes run
  /// on 8-bit codes.
  struct Shortcuts {
    unsigned quantizeSkipped = 0, tables = 0, pairTables = 0; ///< pairTables: of two inputs
    unsigned channelsLast = 0;
    unsigned onCodes = 0; ///< max / data movement run on the 8-bit codes (codeChainOf)
  };
  Shortcuts quantizedShortcuts() const {
    Shortcuts s;
    for (const Step &step : steps) {
      s.channelsLast += step.channelsLastOut;
      s.quantizeSkipped += step.quantizedOutput != nullptr;
      s.tables += step.lookup && !step.lookup->onCodes && !step.lookup->softmax;
      s.onCodes += step.lookup && step.lookup->onCodes;
      s.pairTables += step.lookup && step.lookup->arity == 2;
    }
    return s;
  }
  /// The tensor memory of this executor's runs.
  BufferPool::Stats memoryStats() const { return pool.stats(); }
  /// The inputs a caller must give (graph inputs without an initializer).
  const std::vector<const graph::Value *> &requiredInputs() const { return required; }
  /// The tensor of a constant value (an initializer, a Constant node's, or a
  /// value create() computed once from them), or null.
  const Tensor *constant(const graph::Value &v) const {
    return v.id < constants.size() && constants[v.id].defined() ? &constants[v.id] : nullptr;
  }

  /// An operator the executor lacks: `domain.op` outside ai.onnx, the first
  /// node of the graph that needs it (itself, or the If/Loop/Scan whose
  /// subgraph holds it), and how many nodes use it (subgraphs included).
  struct Missing {
    std::string op;
    const graph::Node *first = nullptr;
    bool inSubgraph = false; ///< `first` holds it in a subgraph
    unsigned nodes = 0;
  };
  /// The operators of `model` the executor lacks, in order of first use;
  /// empty when every node can run.
  static std::vector<Missing> unsupportedOperators(const graph::Model &model);

private:
  explicit Executor(const graph::Model &m) : m(m) {}
  LogicalResult checkInputs(const std::map<std::string, Tensor> &inputs, DiagnosticEngine &diags,
                            const RunOptions &options);

  const graph::Model &m;
  struct Step {
    const graph::Node *node = nullptr;
    KernelFn kernel;
    int64_t opset = 0;
    /// Values (by id) whose last use is this step.
    std::vector<unsigned> release;
    /// The nodes this step can compute with its own (Fusion.h).
    std::optional<Fusion> fusion;
    /// Every input is a constant: computed once by create(); its outputs are
    /// in `constants`.
    bool precomputed = false;
    /// The QDQ group this node heads, as ORT runs it in integers (found by
    /// the first run with integer arithmetic).
    std::optional<IntegerGroup> integer;
    /// Its oneDNN int8 kernel (IntegerArithmetic::Exact), when the group's
    /// form has one, and the quantized value the kernel reads.
    std::unique_ptr<IntegerKernel> integerKernel;
    const graph::Value *quantizedInput = nullptr;
    const graph::Value *quantizedInputB = nullptr; ///< a binary table's second
    /// An element-wise node between 8-bit DequantizeLinear and
    /// QuantizeLinear, computed as a lookup in `table` (LookupTable.h).
    std::optional<LookupChain> lookup;
    std::vector<uint8_t> table;
    graph::ElemType tableType = graph::ElemType::UInt8;
    /// With the kernel or the table: the QuantizeLinear after the node (and
    /// the Relu/Clip ORT drops before it), computed with the node as its
    /// quantized output; the values that leaves out.
    std::vector<size_t> integerAbsorbed;
    std::vector<const graph::Value *> integerSkipped;
    const graph::Value *quantizedOutput = nullptr;
    /// A DequantizeLinear only group kernels and tables read (they read its
    /// input): the steps that read it.
    std::vector<size_t> kernelReaders;
    /// A convolution's kernel whose quantized output only convolution
    /// kernels, tables and max poolings on the codes read: it hands it over
    /// channels-last (no transposes; a run that needs it plain converts it).
    bool channelsLastOut = false;
  };
  void findIntegerGroups();
  void findQuantizedOutput(size_t s);
  void findKernelOnlyInputs();
  void findChannelsLastOutputs();
  bool buildTable(Step &step);
  bool ortBinaryTable(Step &step);
  bool runAlone(const graph::Node &n, llvm::ArrayRef<const Tensor *> x, Tensor &y,
                std::string *err = nullptr, std::unique_ptr<NodeState> *state = nullptr,
                bool blockedOutput = false);
  void keepUntil(size_t s, const graph::Value *xq);
  bool integerGroupsFound = false;
  void findFusions();
  bool fusable(const Step &head, const RunOptions &options) const;
  /// Whether `step` computes its quantized output directly in this run.
  bool direct(const Step &step, const RunOptions &options) const {
    return step.quantizedOutput &&
           std::all_of(step.integerSkipped.begin(), step.integerSkipped.end(),
                       [&](const graph::Value *v) { return skippable(options, *v); });
  }
  /// Whether a run with integer kernels may leave `v` uncomputed.
  bool skippable(const RunOptions &options, const graph::Value &v) const {
    return !options.keep && !watches(options, v) && !(options.substitute && options.substitute(v));
  }
  bool watches(const RunOptions &options, const graph::Value &v) const {
    return (options.observe || options.transform) &&
           (!options.watched || (v.id < options.watched->size() && (*options.watched)[v.id]));
  }
  LogicalResult precompute(DiagnosticEngine &diags);
  std::vector<Step> steps;
  std::vector<size_t> stepIndex; ///< by node id
  std::vector<std::unique_ptr<NodeState>> states;
  std::vector<Tensor> constants; ///< by value id
  std::vector<const graph::Value *> required;
  /// Values (by id) whose every reader takes oneDNN's blocked layout.
  std::vector<bool> blockedReaders;
  BufferPool pool;
  std::vector<bool> absorbedSteps; ///< runFrom's: computed by a fused step
  std::string where;               ///< the model's name in diagnostics
};

} // namespace tpcc::rt

#endif
