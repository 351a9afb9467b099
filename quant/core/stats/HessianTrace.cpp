//===- HessianTrace.cpp - Activation and weight Hessians (Hutchinson) -----===//
#include "quant/core/stats/HessianTrace.h"

#include "runtime/grad/Gradient.h"

#include <cmath>
#include <functional>
#include <random>

using namespace tpcc;
using namespace tpcc::quant;
using rt::Tensor;

namespace {

using Feed = std::map<std::string, Tensor>;

/// Hutchinson's probes over one batch: after the forward (taped), each probe
/// v (standard normal, shaped like the first output) is one backward pass
/// whose gradients go to `consume(grads, k)` (k probes so far), which
/// returns whether the estimates settled; stops then (after minProbes) or
/// at maxProbes. `n` gets the batch's images, `k` the probes it took.
LogicalResult probeBatch(rt::grad::Backprop &bp, const Feed &feed, const HutchinsonOptions &o,
                         std::mt19937 &rng, int64_t &n, int64_t &k, DiagnosticEngine &diags,
                         const std::function<bool(const std::vector<Tensor> &, int64_t)> &consume) {
  std::normal_distribution<float> normal;
  std::vector<Tensor> outs, grads;
  if (failed(bp.forward(feed, outs, diags)))
    return failure();
  const Tensor &y = outs.front();
  n = y.rank() > 0 ? std::max<int64_t>(1, y.dim(0)) : 1;
  for (k = 0; k < o.maxProbes;) {
    std::vector<Tensor> dy(outs.size());
    dy[0] = Tensor(graph::ElemType::Float, y.shape());
    for (int64_t i = 0; i < y.numel(); ++i)
      dy[0].data<float>()[i] = normal(rng);
    if (failed(bp.backward(dy, grads, diags)))
      return failure();
    ++k;
    if (consume(grads, k) && k >= o.minProbes)
      break;
  }
  return success();
}

/// Whether `now` moved by at most `tol` (relative) from `last`; `last`
/// becomes `now`.
bool settle(double now, double &last, double tol) {
  bool settled = std::fabs(now - last) <= tol * std::fabs(last);
  last = now;
  return settled;
}

} // namespace

LogicalResult quant::activationHessianTraces(rt::Executor &ex, const std::vector<Feed> &feeds,
                                             const std::vector<const graph::Value *> &points,
                                             const HutchinsonOptions &o,
                                             std::vector<double> &traces, int64_t &probes,
                                             DiagnosticEngine &diags,
                                             std::vector<std::vector<double>> *perImage) {
  traces.assign(points.size(), 0.0);
  probes = 0;
  if (perImage)
    perImage->clear();
  std::unique_ptr<rt::grad::Backprop> bp = rt::grad::Backprop::create(ex, points, diags);
  if (!bp)
    return failure();
  std::mt19937 rng(o.seed);
  int64_t images = 0;
  for (const Feed &feed : feeds) {
    std::vector<double> sum(points.size(), 0.0), last(points.size(), 0.0);
    std::vector<double> rows; // by image, then point: the sums of the probes so far
    int64_t n = 0, k = 0;
    auto consume = [&](const std::vector<Tensor> &grads, int64_t probe) {
      if (perImage && rows.empty())
        rows.assign(size_t(n) * points.size(), 0.0);
      bool settled = true;
      for (size_t p = 0; p < points.size(); ++p) {
        const Tensor &gp = grads[p];
        bool batched = gp.rank() > 0 && gp.dim(0) == n;
        int64_t per = batched ? gp.numel() / n : gp.numel();
        double s = 0;
        for (int64_t r = 0; r < (batched ? n : 1); ++r) {
          double sr = 0;
          for (int64_t i = r * per; i < (r + 1) * per; ++i)
            sr += double(gp.data<float>()[i]) * double(gp.data<float>()[i]);
          s += sr;
          if (perImage && batched)
            rows[size_t(r) * points.size() + p] += sr;
        }
        if (perImage && !batched)
          for (int64_t r = 0; r < n; ++r)
            rows[size_t(r) * points.size() + p] += s / double(n);
        sum[p] += s / double(n);
        settled &= settle(sum[p] / double(probe), last[p], o.tolerance);
      }
      return settled;
    };
    if (failed(probeBatch(*bp, feed, o, rng, n, k, diags, consume)))
      return failure();
    probes = std::max(probes, k);
    if (perImage)
      for (int64_t r = 0; r < n; ++r) {
        std::vector<double> row(rows.begin() + r * int64_t(points.size()),
                                rows.begin() + (r + 1) * int64_t(points.size()));
        for (double &t : row)
          t /= double(k);
        perImage->push_back(std::move(row));
      }
    for (size_t p = 0; p < points.size(); ++p)
      traces[p] += last[p] * double(n);
    images += n;
  }
  for (double &t : traces)
    t /= double(std::max<int64_t>(1, images));
  return success();
}

LogicalResult quant::weightHessianDiagonals(rt::Executor &ex, const std::vector<Feed> &feeds,
                                            const std::vector<const graph::Value *> &weights,
                                            const HutchinsonOptions &o,
                                            std::vector<std::vector<float>> &diagonals,
                                            int64_t &probes, DiagnosticEngine &diags) {
  diagonals.assign(weights.size(), {});
  probes = 0;
  std::unique_ptr<rt::grad::Backprop> bp = rt::grad::Backprop::create(ex, weights, diags);
  if (!bp)
    return failure();
  std::mt19937 rng(o.seed);
  std::vector<std::vector<double>> total(weights.size());
  int64_t images = 0;
  for (const Feed &feed : feeds) {
    // A batch's gradient sums its images' (J_bᵀ v_b); the probes are
    // independent across images, so E (Σ_b J_bᵀ v_b)² = Σ_b E (J_bᵀ v_b)².
    std::vector<std::vector<double>> sum(weights.size());
    std::vector<double> last(weights.size(), 0.0);
    int64_t n = 0, k = 0;
    auto consume = [&](const std::vector<Tensor> &grads, int64_t probe) {
      bool settled = true;
      for (size_t w = 0; w < weights.size(); ++w) {
        const Tensor &g = grads[w];
        sum[w].resize(size_t(g.numel()), 0.0);
        double all = 0;
        for (int64_t i = 0; i < g.numel(); ++i) {
          double v = double(g.data<float>()[i]);
          sum[w][size_t(i)] += v * v;
          all += sum[w][size_t(i)];
        }
        settled &= settle(all / double(probe), last[w], o.tolerance);
      }
      return settled;
    };
    if (failed(probeBatch(*bp, feed, o, rng, n, k, diags, consume)))
      return failure();
    probes = std::max(probes, k);
    for (size_t w = 0; w < weights.size(); ++w) {
      total[w].resize(sum[w].size(), 0.0);
      for (size_t i = 0; i < sum[w].size(); ++i)
        total[w][i] += sum[w][i] / double(k);
    }
    images += n;
  }
  for (size_t w = 0; w < weights.size(); ++w) {
    diagonals[w].resize(total[w].size());
    for (size_t i = 0; i < total[w].size(); ++i)
      diagonals[w][i] = float(total[w][i] / double(std::max<int64_t>(1, images)));
  }
  return success();
}
