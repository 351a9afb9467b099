//===- TwoLevel.cpp - Block scales as factors under group scales ----------===//

#include "quant/core/format/TwoLevel.h"

#include "runtime/KernelUtil.h"
#include "support/MiniFloat.h"

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;

bool quant::isFactorFormat(ir::ScaleFormat f) {
  return f == ir::ScaleFormat::UInt4 || f == ir::ScaleFormat::UInt8 ||
         f == ir::ScaleFormat::Fp8E4M3;
}

double quant::factorMax(ir::ScaleFormat f) {
  return f == ir::ScaleFormat::UInt4 ? 15 : f == ir::ScaleFormat::UInt8 ? 255 : 448;
}

/// The factors of format `f` next to `r` (r rounded down and up to the
/// format), each at least the format's least positive value and at most its
/// largest: a block's scale is never zero.
static std::pair<double, double> neighbours(ir::ScaleFormat f, double r) {
  if (f != ir::ScaleFormat::Fp8E4M3) {
    double top = factorMax(f);
    return {std::clamp(std::floor(r), 1.0, top), std::clamp(std::ceil(r), 1.0, top)};
  }
  const MiniFloat e4m3 = MiniFloat::E4M3FN;
  const uint8_t least = 1, largest = floatToMiniFloat(e4m3, 448.f);
  uint8_t code = std::clamp(floatToMiniFloat(e4m3, float(r)), least, largest);
  double v = miniFloatToFloat(e4m3, code);
  if (v <= r)
    return {v, miniFloatToFloat(e4m3, std::min<uint8_t>(code + 1, largest))};
  return {miniFloatToFloat(e4m3, std::max<uint8_t>(code - 1, least)), v};
}

TwoLevelScales quant::factorScales(std::vector<QuantGrid> &grids,
                                   const std::vector<int64_t> &scaleShape, int64_t groupAxis,
                                   ir::ScaleFormat groupFormat, ir::ScaleFormat factorFormat,
                                   int64_t block, const SelectionOptions &o, bool hessian,
                                   BlockValues values) {
  TwoLevelScales t;
  t.factor = factorFormat;
  t.axis = groupAxis;
  int64_t groups = groupAxis >= 0 ? scaleShape[size_t(groupAxis)] : 1;
  auto groupOf = [&](size_t b) { return t.groupOf(b, scaleShape); };
  std::vector<double> largest(size_t(groups), 0.0);
  for (size_t b = 0; b < grids.size(); ++b)
    largest[groupOf(b)] = std::max(largest[groupOf(b)], grids[b].scale);
  for (double s : largest)
    t.groupScales.push_back(double(float(roundScale(s / factorMax(factorFormat), groupFormat))));
  t.factors.resize(grids.size());
  bool up = o.error == ir::ThresholdMethod::NoClipping;
  rt::parallelFor(int64_t(grids.size()), block * 64, [&](int64_t b0, int64_t b1) {
    std::vector<float> v(static_cast<size_t>(block)), h(hessian ? v.size() : 0);
    SelectionOptions mine = o;
    mine.hessian = hessian ? h.data() : nullptr;
    for (size_t b = size_t(b0); b < size_t(b1); ++b) {
      double group = t.groupScales[groupOf(b)];
      auto [lo, hi] = neighbours(factorFormat, grids[b].scale / group);
      QuantGrid best = rescaled(grids[b], factorScale(hi, group));
      double factor = hi;
      if (lo != hi && !up) {
        int64_t n = values(b, v.data(), hessian ? h.data() : nullptr);
        QuantGrid down = rescaled(grids[b], factorScale(lo, group));
        if (valuesError(v.data(), n, down, mine) < valuesError(v.data(), n, best, mine)) {
          best = down;
          factor = lo;
        }
      }
      grids[b] = best;
      t.factors[b] = factor;
    }
  });
  return t;
}
