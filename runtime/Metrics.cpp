//===- Metrics.cpp - How close one model's outputs are to another's ---------===//
#include "runtime/Metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace tpcc;
using namespace tpcc::rt;

void Sqnr::add(const float *ref, const float *x, int64_t n) {
  double s = 0, e = 0, m = largest;
  for (int64_t i = 0; i < n; ++i) {
    double d = double(x[i]) - ref[i];
    s += double(ref[i]) * ref[i];
    e += d * d;
    m = std::max(m, std::fabs(d));
  }
  signal += s;
  noise += e;
  largest = m;
}

void Sqnr::add(const Tensor &ref, const Tensor &x) {
  if (ref.elem() == graph::ElemType::Float && x.elem() == graph::ElemType::Float) {
    add(ref.data<float>(), x.data<float>(), std::min(ref.numel(), x.numel()));
    return;
  }
  double s = 0, e = 0;
  for (int64_t i = 0; i < std::min(ref.numel(), x.numel()); ++i) {
    double r = ref.at(i), d = x.at(i) - r;
    s += r * r;
    e += d * d;
    largest = std::max(largest, std::fabs(d));
  }
  signal += s;
  noise += e;
}

double Sqnr::dB() const {
  return noise == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(signal / noise);
}

int64_t rt::argmaxRow(const Tensor &t, int64_t row, int64_t width) {
  int64_t best = 0;
  for (int64_t k = 1; k < width; ++k)
    if (t.at(row * width + k) > t.at(row * width + best))
      best = k;
  return best;
}

void Top1::add(const Tensor &logits, int64_t rows, const Tensor *labels, int64_t labelOffset,
               const Tensor *ref) {
  int64_t width = logits.numel() / std::max<int64_t>(rows, 1);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t cls = argmaxRow(logits, i, width);
    if (labels)
      correct += cls == labels->intAt(labelOffset + i);
    if (ref)
      agree += cls == argmaxRow(*ref, i, ref->numel() / rows);
  }
  samples += rows;
}
