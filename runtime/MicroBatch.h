//===- MicroBatch.h - Runs a batch as micro-batches, one per thread -*- C++ -*-===//
//
// A batch of a sample-separable model (BatchAxis.h) computes the same numbers
// split along axis 0 as whole, and split it runs faster: layer by layer, a
// batch of 64 MobileNet activations does not fit in any cache, a few samples
// do, so each layer's input is still in L2 when the next kernel reads it; and
// each thread runs its own micro-batches on its own executor with
// single-threaded kernels, so no kernel waits for a team to join (on a machine
// whose cores are shared, a thread another process preempts delays one
// micro-batch, not every layer of the batch).
//
// MicroBatchRunner::run splits when the run has no hooks (RunOptions observe,
// transform, substitute, keep), the model is separable, every required input
// carries the same batch B on axis 0, and splitting gives at least two
// micro-batches: samples per micro-batch = kMicroBatchBytes / the largest
// per-sample footprint of a node (its batched inputs and outputs, from the
// declared shapes), the count rounded up to a divisor of B that is a multiple
// of the threads when one exists (micro-batches of one size: from the second
// run on nothing is allocated). Thread t takes micro-batch t first, then the
// next unclaimed one, and copies its outputs into their rows. The results are
// those of the micro-batches run one after another, bit for bit; against the
// whole batch they agree within float rounding (integer kernels exactly), as
// a batch of 8 agrees with one of 64 without splitting (oneDNN's AVX2 kernels
// round a sample differently at different batch sizes; its AVX-512 ones give
// the same bits on the shared models). A failing micro-batch reruns the
// batch unsplit, so errors read as they always have.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_MICROBATCH_H
#define TPCC_RUNTIME_MICROBATCH_H

#include "runtime/Executor.h"

#include <memory>
#include <string>
#include <vector>

namespace tpcc::rt {

/// Per-micro-batch tensor footprint the split aims for (the L2 of one core,
/// with the weights beside it).
constexpr size_t kMicroBatchBytes = size_t(2) << 20;

class MicroBatchRunner {
public:
  /// `primary` runs unsplit batches and the first micro-batches; the other
  /// threads get executors of their own, made on first use.
  explicit MicroBatchRunner(Executor &primary);

  LogicalResult run(const std::map<std::string, Tensor> &inputs, std::vector<Tensor> &outputs,
                    DiagnosticEngine &diags, const RunOptions &options = {});

  /// Why the model's batches are never split ("" when they can be).
  const std::string &unsplitReason() const { return why; }
  /// The micro-batches of the last run (1: it ran whole).
  int64_t lastMicroBatches() const { return lastSplit; }
  /// The samples per micro-batch the runner picks for a batch of `batch` on
  /// `threads` threads (`batch` when it would not split).
  int64_t microBatchSize(int64_t batch, int threads) const;
  /// The tensor memory of all executors.
  BufferPool::Stats memoryStats() const;

private:
  bool splitRun(const std::map<std::string, Tensor> &inputs, int64_t batch, int64_t parts,
                int threads, std::vector<Tensor> &outputs, const RunOptions &options,
                const SourceManager &sm);

  Executor &primary;
  std::vector<std::unique_ptr<Executor>> workers; ///< thread t > 0 runs workers[t - 1]
  std::string why;
  size_t sampleBytes = 0; ///< the largest per-sample footprint of a node
  int64_t lastSplit = 1;
  std::vector<std::unique_ptr<BufferPool>> slicePools; ///< each thread's input slices
  BufferPool joined;                                   ///< the concatenated outputs
};

} // namespace tpcc::rt

#endif
