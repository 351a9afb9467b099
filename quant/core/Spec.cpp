//===- Spec.cpp - Weight values on their grids --------------------------------===//
//
// fakeQuantized: a weight tensor's values on the grids of its WeightQDQ (one
// per channel along its axis, or one).
//
//===----------------------------------------------------------------------===//
#include "quant/core/Spec.h"

using namespace tpcc;
using namespace tpcc::quant;

std::vector<float> quant::fakeQuantized(const rt::Tensor &t, const WeightQDQ &w) {
  const float *x = t.data<float>();
  std::vector<float> q(size_t(t.numel()));
  int64_t inner = 1, channels = 1;
  if (w.axis >= 0) {
    channels = t.dim(w.axis);
    for (int64_t d = w.axis + 1; d < t.rank(); ++d)
      inner *= t.dim(d);
  }
  for (int64_t i = 0; i < t.numel(); ++i)
    q[size_t(i)] = float(w.grids[size_t((i / inner) % channels)].quantize(x[i]));
  return q;
}
