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
#include "runtime/ExecutionMode.h"
#include "runtime/Fusion.h"
#include "runtime/Kernel.h"
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
  /// Runs the model another way than its kernels (ExecutionMode.h; ONNX
  /// Runtime's arithmetic: runtime/ort/OrtMode.h); null: as the model
  /// defines it.
  const ExecutionMode *mode = nullptr;
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
  /// between (and whose mode fuses them).
  unsigned fusedNodes() const {
    unsigned n = 0;
    for (const Step &s : steps)
      n += s.fusion ? unsigned(s.fusion->absorbed.size()) : 0;
    return n;
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

  // For execution modes (ExecutionMode.h), which plan steps of their own.

  /// The node of step `s`.
  const graph::Node &nodeAt(size_t s) const { return *steps[s].node; }
  /// Whether create() computed step `s` once (its inputs are constants).
  bool precomputed(size_t s) const { return steps[s].precomputed; }
  /// Step `s` reads `v` itself (a tensor before the node's inputs): `v`
  /// lives until that step.
  void keepUntil(size_t s, const graph::Value &v);
  /// Runs the default kernel of `n` on `x` (its first inputs; the others
  /// are the executor's constants) into output 0 `y`: tables built from a
  /// node's kernel, a value a mode left out computed after all (a fresh
  /// state), a node run on other data (`state`: its step's; `blockedOutput`:
  /// the output may stay in oneDNN's layout). False, with `err`, when the
  /// kernel fails or gives no plain output where one is due.
  bool runAlone(const graph::Node &n, llvm::ArrayRef<const Tensor *> x, Tensor &y,
                std::string *err = nullptr, std::unique_ptr<NodeState> *state = nullptr,
                bool blockedOutput = false);
  /// The plan this executor keeps for modes of `key`, or null before its
  /// first run in one.
  const StepPlan *planOf(const void *key) const;

private:
  friend class StepRun;
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
  };
  void findFusions();
  bool fusable(const Step &head, const RunOptions &options) const;
  bool watches(const RunOptions &options, const graph::Value &v) const {
    return (options.observe || options.transform) &&
           (!options.watched || (v.id < options.watched->size() && (*options.watched)[v.id]));
  }
  /// The plan of `mode` (made on first use).
  StepPlan *planFor(const ExecutionMode &mode);
  /// The kernel of each step in `reg`, or null where it has none.
  const std::vector<KernelFn> &kernelsIn(const KernelRegistry &reg);
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
  /// Plans of execution modes, by key; the steps' kernels in a mode's
  /// registry.
  std::vector<std::pair<const void *, std::unique_ptr<StepPlan>>> plans;
  const KernelRegistry *modeRegistry = nullptr;
  std::vector<KernelFn> modeKernels;
  std::string where; ///< the model's name in diagnostics
};

/// Whether node `n` reads input `i` in oneDNN's blocked layout (a
/// convolution's or pooling's input).
bool readsBlocked(const graph::Node &n, size_t i);

} // namespace tpcc::rt

#endif
