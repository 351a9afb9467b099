//===- NumberFormat.cpp - Values on their formats ------------------------------===//
#include "quant/core/format/NumberFormat.h"

using namespace tpcc;
using namespace tpcc::quant;
using graph::ElemType;

void quant::fakeQuantize(const QuantGrid &g, const float *x, float *y, int64_t n) {
  if (!g.lut.empty() || g.floating()) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = float(g.quantize(x[i]));
    return;
  }
  const double s = g.scale, zp = double(g.zeroPoint);
  const double lo = double(g.qmin), hi = double(g.qmax);
  for (int64_t i = 0; i < n; ++i)
    y[i] = float(s * (std::clamp(std::nearbyint(double(x[i]) / s) + zp, lo, hi) - zp));
}

GroupLayout quant::groupLayout(size_t grids, int64_t axis, const std::vector<int64_t> &dims) {
  GroupLayout l;
  l.grids = std::max<size_t>(grids, 1);
  if (grids <= 1 || axis < 0 || size_t(axis) >= dims.size())
    return l;
  for (size_t d = size_t(axis) + 1; d < dims.size(); ++d)
    l.inner *= dims[d];
  l.channels = dims[size_t(axis)];
  return l;
}

GroupLayout quant::blockLayout(int64_t block, int64_t axis, const std::vector<int64_t> &dims) {
  GroupLayout l;
  if (block <= 0 || axis < 0 || size_t(axis) >= dims.size())
    return l;
  for (size_t d = size_t(axis) + 1; d < dims.size(); ++d)
    l.inner *= dims[d];
  l.channels = std::max<int64_t>(dims[size_t(axis)], 1);
  l.block = block;
  l.blocks = (l.channels + block - 1) / block;
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  l.grids = size_t(n / l.channels * l.blocks);
  return l;
}

std::vector<int64_t> NumberFormat::blockShape(const std::vector<int64_t> &dims) const {
  std::vector<int64_t> s = dims;
  if (blocked() && size_t(blockAxis) < s.size())
    s[size_t(blockAxis)] = (s[size_t(blockAxis)] + block - 1) / block;
  return s;
}

std::vector<float> NumberFormat::fakeQuantized(const rt::Tensor &t) const {
  const float *x = t.data<float>();
  std::vector<float> q(size_t(t.numel()));
  layout(t.shape()).runs(0, t.numel(), [&](int64_t b, int64_t e, size_t k) {
    for (int64_t i = b; i < e; ++i)
      q[size_t(i)] = float(fakeQuantize(grids[k], x[i]));
  });
  return q;
}

int quant::integerBits(const QuantGrid &g) {
  int b = g.bits;
  while (!g.lut.empty() && b < 62 && (int64_t(1) << b) < g.qmax - g.qmin + 1)
    ++b;
  return b;
}

ElemType NumberFormat::storageOf(const std::vector<QuantGrid> &grids, bool blocked) {
  if (!grids.empty() && grids.front().floating())
    return grids.front().element == ir::ElementFormat::Fp8E5M2 ? ElemType::Float8E5M2
                                                               : ElemType::Float8E4M3FN;
  bool negative = std::any_of(grids.begin(), grids.end(), [](auto &g) { return g.qmin < 0; });
  bool narrow =
      std::all_of(grids.begin(), grids.end(), [](auto &g) { return integerBits(g) <= 4; });
  if (blocked && narrow)
    return negative ? ElemType::Int4 : ElemType::UInt4;
  bool wide = std::any_of(grids.begin(), grids.end(), [](auto &g) { return integerBits(g) > 8; });
  if (wide)
    return negative ? ElemType::Int16 : ElemType::UInt16;
  return negative ? ElemType::Int8 : ElemType::UInt8;
}
