//===- Awq.cpp - Activation-aware scaling of weight-only layers ------------===//
//
// awq (docs/quantize.md, "Corrections"; Lin et al., AWQ, 2024): for a tensor X
// that stays float and that only linear layers with quantized kernels read
// (a weight-only LayerNorm -> Q/K/V projections, a LayerNorm -> first FFN
// layer), the input channels that carry large activations matter most to the
// layers' outputs, so their weights are scaled up before rounding (less
// relative rounding error) and X is divided by the same factors through the
// per-channel constants of the op producing it (SmoothQuant.cpp's
// candidates): (X / s)(s W) = X W.
//
// The factors are AWQ's, s_j = max(r_j^alpha, 1e-4) normalized by
// sqrt(max s x min s), with r_j the channel's root mean square on the
// calibration data (AWQ takes the mean magnitude; both measure the same
// spread). alpha (the recipe's, or searched over 0, 0.05 .. 0.95 as AWQ's
// grid of 20) is the one that minimizes the layers' output error on the
// calibration data, sum_o sum_j E[X_j^2] d_jo^2 with d_jo = (Q(s_j W_jo) -
// s_j W_jo) / s_j the rounding error carried back to X's scale: the expected
// squared error of each output, the rounding errors of different channels
// being independent. Q rounds the scaled kernel on the grids its config gives
// (its bits, blocks, element and scale format) chosen without clipping, as
// AWQ's search rounds; the final grids come from the recipe's threshold
// search. A tensor is scaled only when the best alpha beats alpha = 0 (s = 1).
//
//===----------------------------------------------------------------------===//
#include "quant/ptq/corrections/Corrections.h"

#include "quant/core/GraphHelpers.h"
#include "quant/ptq/Quantizer.h"

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;
using namespace tpcc::quant::edits;

namespace {

/// One linear layer reading X whose kernel the plan quantizes.
struct Layer {
  std::vector<float> w;
  std::vector<int64_t> dims;
  int64_t axis = 0; ///< the kernel's input-channel axis
  ir::AttrConfig config;
  std::optional<int64_t> channelAxis, blockAxis;
};

/// AWQ's factors for `alpha` from the channels' magnitudes `r`.
std::vector<double> awqFactors(double alpha, const std::vector<double> &r) {
  std::vector<double> s(r.size());
  for (size_t j = 0; j < r.size(); ++j)
    s[j] = std::max(std::pow(r[j], alpha), 1e-4);
  auto [lo, hi] = std::minmax_element(s.begin(), s.end());
  double norm = std::sqrt(*lo * *hi);
  for (double &v : s)
    v /= norm;
  return s;
}

/// sum_o sum_j square_j d_jo^2 over `layers` with factors `s` (file comment).
double outputError(const std::vector<double> &s, const std::vector<double> &square,
                   const std::vector<Layer> &layers, const ir::Recipe &search) {
  double total = 0;
  for (const Layer &l : layers) {
    rt::Tensor scaled(graph::ElemType::Float, l.dims);
    float *p = scaled.data<float>();
    int64_t cols = l.dims[1];
    auto channel = [&](size_t e) {
      return size_t(l.axis == 0 ? int64_t(e) / cols : int64_t(e) % cols);
    };
    for (size_t e = 0; e < l.w.size(); ++e)
      p[e] = float(l.w[e] * s[channel(e)]);
    WeightQDQ q = selectWeightGrids(scaled, l.config, l.channelAxis, search, nullptr, l.blockAxis);
    std::vector<float> fq = q.fakeQuantized(scaled);
    for (size_t e = 0; e < fq.size(); ++e) {
      size_t j = channel(e);
      double d = (double(fq[e]) - double(p[e])) / s[j];
      total += square[j] * d * d;
    }
  }
  return total;
}

} // namespace

void quant::findAwqScalings(const plan::Plan &plan, const ir::Recipe &recipe,
                            const std::vector<std::unique_ptr<TensorStats>> &stats,
                            std::vector<Smoothing> &out) {
  ir::Recipe search = recipe;
  search.weightsThreshold = ir::ThresholdMethod::NoClipping;
  for (const ScalingCandidate &c : scalingCandidates(plan, true)) {
    const TensorStats *st = stats[c.x->id].get();
    if (!st || int64_t(st->channelMean().size()) != c.channels)
      continue;
    std::vector<double> mean = st->channelMean(), var = st->channelVariance();
    std::vector<double> square(mean.size()), rms(mean.size());
    for (size_t j = 0; j < mean.size(); ++j) {
      square[j] = var[j] + mean[j] * mean[j];
      rms[j] = std::sqrt(square[j]);
    }
    std::vector<Layer> layers;
    for (size_t i = 0; i < c.linears.size(); ++i) {
      const plan::PlanNode *pn = planNodeOf(plan, c.linears[i]);
      for (const plan::PlanWeight *pw = pn ? pn->weights.data() : nullptr;
           pn && pw != pn->weights.data() + pn->weights.size(); ++pw)
        if (pw->inputIndex == 1 && pw->quantize && pw->config.quantize) {
          Layer l;
          l.w = floatValues(c.linears[i]->input(1));
          l.dims = c.linears[i]->input(1)->constant->dims;
          l.axis = c.axes[i];
          l.config = pw->config;
          l.channelAxis = pw->config.perChannel ? pw->axis : std::nullopt;
          l.blockAxis = plan::blockDim(*pw, pw->config.format);
          layers.push_back(std::move(l));
        }
    }
    if (layers.empty())
      continue; // no kernel of a layer reading X is rounded
    double none = outputError(std::vector<double>(mean.size(), 1.0), square, layers, search);
    std::vector<double> alphas;
    if (recipe.awq.alpha)
      alphas.push_back(*recipe.awq.alpha);
    else
      for (int k = 1; k < 20; ++k)
        alphas.push_back(k / 20.0); // (exact tenths: 0.3, not 0.05 x 6)
    std::optional<Smoothing> s = bestScaling(
        c, alphas, none, [&](double alpha) { return awqFactors(alpha, rms); },
        [&](const std::vector<double> &f) { return outputError(f, square, layers, search); });
    if (!s)
      continue;
    s->awq = true;
    out.push_back(std::move(*s));
  }
}
