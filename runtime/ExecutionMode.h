//===- ExecutionMode.h - Running a model another way than its kernels -*- C++ -*-===//
//
// The executor (Executor.h) is a plain interpreter: each step runs its
// node's kernel. A layer above it runs a model another way without the
// interpreter knowing how (runtime/ort/: as ONNX Runtime's CPU kernels do),
// through the ExecutionMode a run names (RunOptions::mode):
//  - a second kernel registry, looked up before the default one (ORT's
//    float sums);
//  - a plan of its own per executor (StepPlan), made on the executor's first
//    run in the mode and kept with it, which may compute a step instead of
//    its kernel (an integer group from its 8-bit input to its 8-bit output,
//    a table lookup), leave a step out, or rewrite what its kernel computed.
// The plan sees the run through StepRun: the values, the hooks (a value a
// run watches, keeps or substitutes must be computed as the model defines
// it), the constants and the other nodes' kernels.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_EXECUTIONMODE_H
#define TPCC_RUNTIME_EXECUTIONMODE_H

#include "runtime/Kernel.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>
#include <vector>

namespace tpcc::rt {

class Executor;
class ExecutionMode;
struct RunOptions;

/// One step of a run, as a plan sees it (made by the executor).
class StepRun {
public:
  size_t step() const { return s; }
  const graph::Node &node() const { return n; }
  /// The opset of the node's domain.
  int64_t opset() const;
  const RunOptions &options() const { return opts; }
  const ExecutionMode &mode() const;
  Executor &executor() const { return ex; }

  /// The tensor a node reads for `v`: the substitute, the computed value
  /// or the constant (an undefined tensor when there is none).
  const Tensor *read(const graph::Value &v) const;
  /// The run's own slot of `v` (undefined until computed).
  Tensor &slot(const graph::Value &v) { return values[v.id]; }
  /// Hands the value just computed into slot(v) to the run's hooks
  /// (transform, then observe) when the run watches it.
  void computed(const graph::Value &v);
  /// Whether the run's hooks need `v`.
  bool watches(const graph::Value &v) const;
  /// Whether the run may leave `v` uncomputed: not watched, kept or
  /// substituted.
  bool mayLeaveOut(const graph::Value &v) const;
  /// Whether this run keeps its values plain (row-major) everywhere.
  bool plainOnly() const;
  /// Step `later` was computed with this one: the run skips it.
  void absorb(size_t later) { absorbed[later] = true; }
  /// `t` row-major (a copy when it is blocked or channels-last); a copy
  /// lives until the run's second call after it.
  const Tensor &plain(const Tensor &t);
  /// The node state of this step's kernel.
  std::unique_ptr<NodeState> &state();
  /// Reports `msg` at the node (err_run_node).
  void fail(llvm::StringRef msg);
  /// Reports that input `in` of the node has no value.
  void missing(const graph::Value &in);

private:
  friend class Executor;
  /// The copies plain() makes, shared by the steps of one run.
  struct Copies {
    Tensor t[2];
    unsigned next = 0;
  };
  StepRun(Executor &ex, size_t s, const graph::Node &n, const RunOptions &opts,
          std::vector<Tensor> &values, std::vector<bool> &absorbed, Copies &copies,
          DiagnosticEngine &diags)
      : ex(ex), s(s), n(n), opts(opts), values(values), absorbed(absorbed), copies(copies),
        diags(diags) {}
  Executor &ex;
  size_t s;
  const graph::Node &n;
  const RunOptions &opts;
  std::vector<Tensor> &values;
  std::vector<bool> &absorbed;
  Copies &copies;
  DiagnosticEngine &diags;
};

/// A mode's plan for one executor's steps.
class StepPlan {
public:
  virtual ~StepPlan();
  enum class Action {
    Kernel, ///< run the step's kernel (then after())
    Done,   ///< the step's outputs are computed, or left out
    Failed, ///< diagnosed
  };
  /// Before step r.step() runs.
  virtual Action before(StepRun &r) = 0;
  /// After the step's kernel ran, its outputs in `ctx`: may rewrite them.
  /// False with ctx.error.
  virtual bool after(StepRun &r, KernelContext &ctx) { return true; }
  /// Whether the kernel of step `s` runs as the default registry has it,
  /// alone (no fused nodes) and writing a plain output: after() reads it.
  virtual bool alone(size_t s) const { return false; }
};

/// A way to run a model (RunOptions::mode). Modes are immutable: one may
/// serve several runs and threads at once.
class ExecutionMode {
public:
  virtual ~ExecutionMode();
  /// Kernels looked up before the default registry's, or null.
  virtual const KernelRegistry *kernels() const { return nullptr; }
  /// Whether a convolution may run the element-wise nodes after it as its
  /// post-ops (Fusion.h).
  virtual bool fuses() const { return true; }
  /// Modes of one key share an executor's plan.
  virtual const void *planKey() const = 0;
  /// The plan of `ex`, made once per executor and key.
  virtual std::unique_ptr<StepPlan> makePlan(Executor &ex) const = 0;
};

} // namespace tpcc::rt

#endif
