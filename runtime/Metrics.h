//===- Metrics.h - How close one model's outputs are to another's -*- C++ -*-===//
//
// The measures `tpcc eval` reports and the quantizer's per-tensor report
// uses: the signal-to-quantization-noise ratio of a tensor against a
// reference (10·log10(Σ ref² / Σ (x − ref)²), accumulated over batches),
// top-1 accuracy against labels and top-1 agreement between two models.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_METRICS_H
#define TPCC_RUNTIME_METRICS_H

#include "runtime/Tensor.h"

#include <algorithm>
#include <cstdint>

namespace tpcc::rt {

/// Σ ref² and Σ (x − ref)² over everything added.
class Sqnr {
public:
  /// Adds `n` pairs (sums in double, one batch at a time).
  void add(const float *ref, const float *x, int64_t n);
  /// Adds two tensors of the same element count (any numeric type).
  void add(const Tensor &ref, const Tensor &x);
  /// Adds what `o` measured (a part measured on its own).
  void add(const Sqnr &o) {
    signal += o.signal;
    noise += o.noise;
    largest = std::max(largest, o.largest);
  }
  /// Whether the reference had any energy (an all-zero one has no ratio).
  bool hasSignal() const { return signal != 0; }
  /// The ratio in dB; +inf when the tensors were identical.
  double dB() const;
  /// The largest |x − ref| of one element (a probability's worst error).
  double largestError() const { return largest; }

private:
  double signal = 0, noise = 0, largest = 0;
};

/// The index of the largest of the `width` values of row `row` of `t`.
int64_t argmaxRow(const Tensor &t, int64_t row, int64_t width);

/// Top-1 accuracy against labels and agreement with a reference's top-1.
struct Top1 {
  int64_t correct = 0, agree = 0, samples = 0;
  /// Adds the `rows` rows of `logits` (a batch; `labels` from row
  /// `labelOffset` when given, `ref` the reference's logits when given).
  void add(const Tensor &logits, int64_t rows, const Tensor *labels, int64_t labelOffset,
           const Tensor *ref);
  double accuracy() const { return samples ? 100.0 * double(correct) / double(samples) : 0; }
  double agreement() const { return samples ? 100.0 * double(agree) / double(samples) : 0; }
};

} // namespace tpcc::rt

#endif
