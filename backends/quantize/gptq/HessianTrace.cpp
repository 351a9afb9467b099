//===- HessianTrace.cpp - Activation Hessian traces (Hutchinson) ----------===//
#include "backends/quantize/gptq/HessianTrace.h"

#include "runtime/grad/Gradient.h"

#include <cmath>
#include <random>

using namespace tpcc;
using namespace tpcc::quant;
using rt::Tensor;

LogicalResult quant::activationHessianTraces(
    rt::Executor &ex, const std::vector<std::map<std::string, Tensor>> &feeds,
    const std::vector<const graph::Value *> &points, const HutchinsonOptions &o,
    std::vector<double> &traces, int64_t &probes, DiagnosticEngine &diags,
    std::vector<std::vector<double>> *perImage) {
  traces.assign(points.size(), 0.0);
  probes = 0;
  if (perImage)
    perImage->clear();
  std::unique_ptr<rt::grad::Backprop> bp = rt::grad::Backprop::create(ex, points, diags);
  if (!bp)
    return failure();
  std::mt19937 rng(o.seed);
  std::normal_distribution<float> normal;
  int64_t images = 0;
  for (const auto &feed : feeds) {
    std::vector<Tensor> outs, grads;
    if (failed(bp->forward(feed, outs, diags)))
      return failure();
    const Tensor &y = outs.front();
    int64_t n = y.rank() > 0 ? std::max<int64_t>(1, y.dim(0)) : 1;
    std::vector<double> sum(points.size(), 0.0), last(points.size(), 0.0);
    // By image, then point: the sums of the probes so far.
    std::vector<double> rows(perImage ? size_t(n) * points.size() : 0, 0.0);
    int64_t k = 0;
    while (k < o.maxProbes) {
      std::vector<Tensor> dy(outs.size());
      dy[0] = Tensor(graph::ElemType::Float, y.shape());
      for (int64_t i = 0; i < y.numel(); ++i)
        dy[0].data<float>()[i] = normal(rng);
      if (failed(bp->backward(dy, grads, diags)))
        return failure();
      ++k;
      bool settled = k >= o.minProbes;
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
        double now = sum[p] / double(k);
        settled = settled && std::fabs(now - last[p]) <= o.tolerance * std::fabs(last[p]);
        last[p] = now;
      }
      if (settled)
        break;
    }
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
