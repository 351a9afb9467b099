//===- MicroBatch.cpp - Runs a batch as micro-batches, one per thread -----===//
#include "runtime/MicroBatch.h"

#include "runtime/BatchAxis.h"
#include "runtime/KernelUtil.h"

#include <omp.h>

#include <atomic>
#include <cstring>
#include <mutex>

using namespace tpcc;
using namespace tpcc::rt;

namespace {
/// The bytes one sample of `v` takes, or 0 when its shape is not declared.
size_t sampleBytesOf(const graph::Value &v) {
  if (!v.type.shape || v.type.shape->empty() || v.type.elem == ElemType::Undefined ||
      v.type.elem == ElemType::String)
    return 0;
  size_t n = graph::elemSize(v.type.elem);
  for (size_t i = 1; i < v.type.shape->size(); ++i) {
    if (!(*v.type.shape)[i].known())
      return 0;
    n *= size_t((*v.type.shape)[i].value);
  }
  return n;
}

/// The largest per-sample footprint of a node: its non-constant inputs and
/// outputs (what a kernel streams through the cache).
size_t largestFootprint(const graph::Model &m) {
  size_t most = 0;
  for (const graph::Node *n : m.graph.topologicalOrder()) {
    size_t bytes = 0;
    for (const graph::Value *v : n->inputs)
      if (v && !v->constant)
        bytes += sampleBytesOf(*v);
    for (const graph::Value *v : n->outputs)
      if (v)
        bytes += sampleBytesOf(*v);
    most = std::max(most, bytes);
  }
  return most;
}
} // namespace

MicroBatchRunner::MicroBatchRunner(Executor &primary) : primary(primary) {
  if (sampleSeparable(primary.model(), &why)) {
    sampleBytes = largestFootprint(primary.model());
    if (!sampleBytes)
      why = "the model declares no per-sample shapes";
  }
}

int64_t MicroBatchRunner::microBatchSize(int64_t batch, int threads) const {
  if (!why.empty() || batch < 2)
    return batch;
  int64_t want = std::max<int64_t>(1, int64_t(kMicroBatchBytes / sampleBytes));
  int64_t parts = (batch + want - 1) / want;
  if (parts == 1 && threads > 1)
    parts = threads;
  // The smallest divisor of the batch from `parts` on, a multiple of the
  // threads if there is one.
  int64_t pick = 0;
  for (int64_t d = parts; d <= batch; ++d)
    if (batch % d == 0) {
      if (d % threads == 0) {
        pick = d;
        break;
      }
      if (!pick)
        pick = d;
    }
  return pick <= 1 ? batch : batch / pick;
}

BufferPool::Stats MicroBatchRunner::memoryStats() const {
  BufferPool::Stats s = primary.memoryStats();
  for (const auto &w : workers) {
    BufferPool::Stats o = w->memoryStats();
    s.systemAllocations += o.systemAllocations;
    s.reuses += o.reuses;
    s.inUse += o.inUse;
    s.peakInUse += o.peakInUse;
    s.held += o.held;
  }
  return s;
}

LogicalResult MicroBatchRunner::run(const std::map<std::string, Tensor> &inputs,
                                    std::vector<Tensor> &outputs, DiagnosticEngine &diags,
                                    const RunOptions &options) {
  lastSplit = 1;
  bool hooks = options.observe || options.transform || options.substitute || options.keep;
  int64_t batch = -1;
  for (const graph::Value *v : primary.requiredInputs()) {
    auto it = inputs.find(v->name);
    if (it == inputs.end() || it->second.rank() < 1 || it->second.blocked() ||
        (batch >= 0 && it->second.dim(0) != batch)) {
      batch = -1;
      break;
    }
    batch = it->second.dim(0);
  }
  int threads = omp_get_max_threads();
  int64_t size = batch > 1 && !hooks ? microBatchSize(batch, threads) : batch;
  if (size > 0 && size < batch &&
      splitRun(inputs, batch, batch / size, threads, outputs, options, diags.getSourceManager()))
    return success();
  return primary.run(inputs, outputs, diags, options);
}

bool MicroBatchRunner::splitRun(const std::map<std::string, Tensor> &inputs, int64_t batch,
                                int64_t parts, int threads, std::vector<Tensor> &outputs,
                                const RunOptions &options, const SourceManager &sm) {
  const graph::Model &m = primary.model();
  int team = int(std::min<int64_t>(threads, parts));
  while (slicePools.size() < size_t(team))
    slicePools.push_back(std::make_unique<BufferPool>());
  while (int(workers.size()) + 1 < team) {
    DiagnosticEngine quiet(sm);
    std::unique_ptr<Executor> ex = Executor::create(m, quiet, &primary);
    if (!ex)
      return false;
    workers.push_back(std::move(ex));
  }
  int64_t size = batch / parts;
  std::vector<Tensor> joinedOut; // made by the first micro-batch to finish
  std::mutex mu;
  std::atomic<int64_t> next{team};
  std::atomic<bool> broken{false};
  // Each micro-batch's outputs go to their rows at once: an executor's pool
  // then holds one set of output buffers however many micro-batches its
  // thread takes.
  auto place = [&](int64_t k, const std::vector<Tensor> &r) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (joinedOut.empty()) {
        BufferPool::Scope scope(&joined);
        for (const Tensor &y : r) {
          if (y.rank() < 1 || y.elem() == ElemType::String || y.dim(0) != size)
            return false;
          Shape shape = y.shape();
          shape[0] = batch;
          joinedOut.emplace_back(y.elem(), shape);
        }
      }
    }
    if (r.size() != joinedOut.size())
      return false;
    for (size_t o = 0; o < r.size(); ++o) {
      Tensor &all = joinedOut[o];
      size_t part = all.bytes() / size_t(parts);
      if (r[o].elem() != all.elem() || r[o].bytes() != part || r[o].dim(0) != size)
        return false;
      std::memcpy(static_cast<uint8_t *>(all.raw()) + size_t(k) * part, r[o].raw(), part);
    }
    return true;
  };
#pragma omp parallel num_threads(team)
  {
    int t = omp_get_thread_num();
    Executor &ex = t == 0 ? primary : *workers[size_t(t - 1)];
    ThreadScope single(1);
    DiagnosticEngine quiet(sm);
    for (int64_t k = t; k < parts && !broken; k = next++) {
      std::map<std::string, Tensor> feed = inputs;
      {
        BufferPool::Scope scope(slicePools[size_t(t)].get());
        for (const graph::Value *v : primary.requiredInputs())
          feed[v->name] = inputs.at(v->name).rows(k * size, (k + 1) * size);
      }
      std::vector<Tensor> r;
      if (failed(ex.run(feed, r, quiet, options)) || !place(k, r))
        broken = true;
    }
  }
  if (broken)
    return false;
  outputs = std::move(joinedOut);
  lastSplit = parts;
  return true;
}
