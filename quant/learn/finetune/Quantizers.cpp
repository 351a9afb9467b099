//===- Quantizers.cpp - Trainable quantizers (docs/finetune.md) -----------===//
#include "quant/learn/finetune/Quantizers.h"

#include "quant/core/format/NumberFormat.h"
#include "runtime/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace tpcc;
using namespace tpcc::quant;
using graph::ElemType;
using rt::Tensor;

namespace {

/// Round half to even, as the grids round.
double rnd(double x) { return std::nearbyint(x); }

/// 2^(n - s): the integers a symmetric threshold spans.
double span(const QuantGrid &g) { return std::exp2(g.bits - (g.isSigned ? 1 : 0)); }

/// The grid of method `m` for threshold `t`, never below `minT`.
QuantGrid trainedGrid(ir::QuantMethod m, double t, int bits, bool isSigned, double minT) {
  return thresholdGrid(m, std::max(t, minT), bits, isSigned, minT);
}

/// y = fake quantization of x onto one grid, in parallel.
Tensor fakeTensor(const Tensor &x, const QuantGrid &grid) {
  FloatGrid g(grid);
  Tensor y(ElemType::Float, x.shape());
  const float *xs = x.data<float>();
  float *ys = y.data<float>();
  rt::parallelFor(x.numel(), 4, [&](int64_t b, int64_t e) {
    const FloatGrid f = g; // a local copy: the loop vectorizes
    for (int64_t i = b; i < e; ++i)
      ys[i] = f.fake(xs[i]);
  });
  return y;
}

/// Calls `f(begin, end, k)` for each run of [b, e) whose elements share
/// grid k of `c` in a tensor of `shape` (NumberFormat.h's layout).
template <typename F>
void gridRuns(const TrainableQuantizerConfig &c, const rt::Shape &shape, int64_t b, int64_t e,
              F f) {
  c.layout(shape).runs(b, e, f);
}

/// y[i] = f(i, k, x[i]) over a float tensor in parallel, k the grid of i.
template <typename F> Tensor mapRuns(const TrainableQuantizerConfig &c, const Tensor &x, F f) {
  Tensor y(ElemType::Float, x.shape());
  const float *xs = x.data<float>();
  float *ys = y.data<float>();
  rt::parallelFor(x.numel(), 4, [&](int64_t b, int64_t e) {
    gridRuns(c, x.shape(), b, e, [&](int64_t b1, int64_t e1, size_t k) {
      for (int64_t i = b1; i < e1; ++i)
        ys[i] = f(i, k, xs[i]);
    });
  });
  return y;
}

/// Calls f(i, grid) for every element i of a tensor of `shape`, in order.
template <typename F>
void forEachGrid(const TrainableQuantizerConfig &c, const rt::Shape &shape, int64_t n, F f) {
  gridRuns(c, shape, 0, n, [&](int64_t b, int64_t e, size_t k) {
    for (int64_t i = b; i < e; ++i)
      f(i, c.grids[k]);
  });
}

/// STE weights, LUT weights and fixed activations: fixed grids, gradients
/// straight through.
class FixedQuantizer : public TrainableQuantizer {
public:
  using TrainableQuantizer::TrainableQuantizer;
  QuantizerKind kind() const override { return QuantizerKind::Ste; }
  Tensor forward(const Tensor &x) const override {
    // Activations in float, as the QDQ model computes them; weights in
    // double, as the QDQ rewrite quantizes them.
    if (cfg.target == QuantizerTarget::Activation && cfg.grids.size() == 1 &&
        cfg.grids.front().lut.empty() && !cfg.grids.front().floating())
      return fakeTensor(x, cfg.grids.front());
    return mapRuns(cfg, x, [&](int64_t, size_t k, float v) {
      const QuantGrid &g = cfg.grids[k];
      return float(fakeQuantize(g, v));
    });
  }
  Tensor backward(const Tensor &, const Tensor &dy) override { return dy; }
  FinalizedQuantizer finalize(const Tensor *) const override { return {cfg.grids, {}}; }
};

/// STE activations: threshold t (symmetric, POT) or range (a, b) (uniform).
class SteActivation : public TrainableQuantizer {
public:
  explicit SteActivation(TrainableQuantizerConfig c) : TrainableQuantizer(std::move(c)) {
    const QuantGrid &g = cfg.grids.front();
    if (cfg.method == ir::QuantMethod::Uniform) {
      a = {g.lo};
      b = {g.hi};
    } else {
      t = {g.threshold};
    }
    ga.assign(1, 0.0), gb.assign(1, 0.0), gt.assign(1, 0.0);
  }
  QuantizerKind kind() const override { return QuantizerKind::Ste; }
  QuantGrid grid() const {
    if (cfg.method == ir::QuantMethod::Uniform)
      return uniformGrid(a[0], b[0], cfg.bits);
    // t trains continuously; the forward uses the grid that will be
    // deployed (power-of-two: t rounded up), the rounding passed straight
    // through.
    return trainedGrid(cfg.method, t[0], cfg.bits, cfg.isSigned, cfg.minThreshold);
  }
  Tensor forward(const Tensor &x) const override { return fakeTensor(x, grid()); }
  Tensor backward(const Tensor &x, const Tensor &dy) override {
    QuantGrid g = grid();
    const float *xs = x.data<float>(), *ds = dy.data<float>();
    if (cfg.method == ir::QuantMethod::Uniform) {
      Tensor dx(ElemType::Float, x.shape());
      float *out = dx.data<float>();
      const float a0 = float(g.lo), b0 = float(g.hi);
      double sums[2] = {0, 0};
      rt::chunkedSums(x.numel(), 2, sums, [&](int64_t b, int64_t e, double *acc) {
        for (int64_t i = b; i < e; ++i) {
          float v = xs[i], d = ds[i];
          bool below = v<a0, above = v> b0;
          out[i] = below || above ? 0.f : d;
          acc[0] += below ? d : 0.0;
          acc[1] += above ? d : 0.0;
        }
      });
      ga[0] += sums[0];
      gb[0] += sums[1];
      return dx;
    }
    // dq/dx = 1: the incoming gradient passes as it is.
    FloatGrid fg(g);
    const float inv = float(1 / span(g));
    double sum = 0;
    rt::chunkedSums(x.numel(), 1, &sum, [&](int64_t b, int64_t e, double *acc) {
      // 16 float lanes (at most 1,024 terms each), so the loop vectorizes.
      constexpr int kLanes = 16;
      float lane[kLanes] = {};
      auto term = [&](int64_t i) { return ds[i] * (fg.level(xs[i]) - xs[i] / fg.s); };
      int64_t i = b;
      for (; i + kLanes <= e; i += kLanes)
        for (int l = 0; l < kLanes; ++l)
          lane[l] += term(i + l);
      double total = 0;
      for (; i < e; ++i)
        total += double(term(i));
      for (float l : lane)
        total += double(l);
      acc[0] += total * double(inv);
    });
    gt[0] += sum;
    return dy;
  }
  std::vector<QuantizerParam> parameters() override {
    if (cfg.method == ir::QuantMethod::Uniform)
      return {{"min", &a, &ga}, {"max", &b, &gb}};
    return {{"threshold", &t, &gt}};
  }
  FinalizedQuantizer finalize(const Tensor *) const override {
    if (cfg.method == ir::QuantMethod::Uniform)
      return {{uniformGrid(a[0], b[0], cfg.bits)}, {}};
    return {{trainedGrid(cfg.method, t[0], cfg.bits, cfg.isSigned, cfg.minThreshold)}, {}};
  }

private:
  std::vector<double> a, b, t, ga, gb, gt;
};

/// LSQ: the step Δ per channel (weights) or per tensor trains; uniform
/// trains (a, b).
class LsqQuantizer : public TrainableQuantizer {
public:
  explicit LsqQuantizer(TrainableQuantizerConfig c) : TrainableQuantizer(std::move(c)) {
    for (const QuantGrid &g : cfg.grids) {
      step.push_back(g.scale);
      lo.push_back(g.lo);
    }
    gstep.assign(step.size(), 0.0);
    glo.assign(step.size(), 0.0);
    const QuantGrid &g = cfg.grids.front();
    // g = 1 / sqrt(q_max N): N thresholds (weights) or channels (1).
    scaleGrad = 1 / std::sqrt(double(g.qmax) * double(cfg.grids.size()));
  }
  QuantizerKind kind() const override { return QuantizerKind::Lsq; }
  bool uniform() const { return cfg.method == ir::QuantMethod::Uniform; }
  /// The grid of channel k at the current parameters.
  QuantGrid grid(size_t k) const {
    const QuantGrid &g0 = cfg.grids[k];
    if (uniform())
      return uniformGrid(lo[k], lo[k] + step[k] * double(g0.qmax), cfg.bits);
    if (cfg.method == ir::QuantMethod::PowerOfTwo) // as deployed: rounded up
      return trainedGrid(cfg.method, std::max(step[k], 1e-12) * span(g0), cfg.bits, cfg.isSigned,
                         cfg.minThreshold);
    QuantGrid g = g0;
    g.scale = std::max(step[k], 1e-12);
    g.threshold = g.scale * span(g);
    g.lo = g.scale * double(g.qmin);
    g.hi = g.scale * double(g.qmax);
    return g;
  }
  std::vector<QuantGrid> grids() const {
    std::vector<QuantGrid> gs;
    for (size_t k = 0; k < step.size(); ++k)
      gs.push_back(grid(k));
    return gs;
  }
  std::vector<FloatGrid> floatGrids() const {
    std::vector<FloatGrid> fs;
    for (const QuantGrid &g : grids())
      fs.emplace_back(g);
    return fs;
  }
  Tensor forward(const Tensor &x) const override {
    std::vector<FloatGrid> gs = floatGrids();
    return mapRuns(cfg, x, [&](int64_t, size_t k, float v) { return gs[k].fake(v); });
  }
  Tensor backward(const Tensor &x, const Tensor &dy) override {
    std::vector<FloatGrid> gs = floatGrids();
    Tensor dx(ElemType::Float, x.shape());
    const float *xs = x.data<float>(), *ds = dy.data<float>();
    float *out = dx.data<float>();
    size_t width = gs.size();
    std::vector<double> sums(2 * width, 0.0); // steps, then lows
    rt::chunkedSums(x.numel(), 2 * width, sums.data(), [&](int64_t b0, int64_t e0, double *acc) {
      gridRuns(cfg, x.shape(), b0, e0, [&](int64_t b, int64_t e, size_t k) {
        const FloatGrid &g = gs[k];
        double step = 0, outside = 0;
        for (int64_t i = b; i < e; ++i) {
          float d = ds[i];
          // u: the position on the integer grid (uniform: (x - a) / Δ, as
          // a = -zeroPoint Δ).
          float u = xs[i] / g.s + g.z;
          bool inside = u >= g.lo && u <= g.hi;
          float dq = inside ? FloatGrid::round(u) - u : (u < g.lo ? g.lo : g.hi);
          out[i] = inside ? d : 0.f;
          step += double(d * dq);
          outside += inside ? 0.0 : double(d);
        }
        acc[k] += step;
        acc[width + k] += outside;
      });
    });
    for (size_t k = 0; k < width; ++k) {
      gstep[k] += scaleGrad * sums[k];
      if (uniform())
        glo[k] += scaleGrad * sums[width + k];
    }
    return dx;
  }
  std::vector<QuantizerParam> parameters() override {
    if (uniform())
      return {{"step", &step, &gstep}, {"min", &lo, &glo}};
    return {{"step", &step, &gstep}};
  }
  FinalizedQuantizer finalize(const Tensor *) const override {
    std::vector<QuantGrid> out;
    for (size_t k = 0; k < step.size(); ++k) {
      QuantGrid g = grid(k);
      out.push_back(uniform() ? g
                              : trainedGrid(cfg.method, g.threshold, cfg.bits, cfg.isSigned,
                                            cfg.minThreshold));
    }
    return {out, {}};
  }

private:
  std::vector<double> step, lo, gstep, glo;
  double scaleGrad = 1;
};

/// Soft rounding of weights: α per element, the float weights fixed.
class SoftRounding : public TrainableQuantizer {
public:
  using TrainableQuantizer::TrainableQuantizer;
  QuantizerKind kind() const override { return QuantizerKind::SoftRounding; }
  static double sigmoid(double a) { return 1 / (1 + std::exp(-a)); }
  /// σ(α_i), computed again only when α_i changed since it last was (the
  /// forward, the backward and the regularizer all read it once per step;
  /// each element is touched by one thread).
  double sig(size_t i) const {
    if (sigAt[i] != alpha[i]) {
      sigAt[i] = alpha[i];
      sigOf[i] = sigmoid(alpha[i]);
    }
    return sigOf[i];
  }
  double h(size_t i) const { return std::clamp(1.2 * sig(i) - 0.1, 0.0, 1.0); }
  /// dh/dα (0 where the clip is active).
  double dh(size_t i) const {
    double s = sig(i), v = 1.2 * s - 0.1;
    return v > 0 && v < 1 ? 1.2 * s * (1 - s) : 0.0;
  }
  /// α from the weights (once): h = the fractional part of w/Δ, clipped to
  /// the grid.
  void initialize(const Tensor &w) const {
    if (alpha.size() == size_t(w.numel()))
      return;
    alpha.resize(size_t(w.numel()));
    galpha.assign(alpha.size(), 0.0);
    sigAt.assign(alpha.size(), std::numeric_limits<double>::quiet_NaN());
    sigOf.assign(alpha.size(), 0.0);
    forEachGrid(cfg, w.shape(), w.numel(), [&](int64_t i, const QuantGrid &g) {
      double u = std::clamp(w.data<float>()[i] / g.scale, double(g.qmin - g.zeroPoint),
                            double(g.qmax - g.zeroPoint));
      double s = std::clamp((u - std::floor(u) + 0.1) / 1.2, 1e-6, 1 - 1e-6);
      alpha[size_t(i)] = std::log(s / (1 - s));
    });
  }
  /// The integer of weight w at rounding offset r (h, or 0 / 1).
  static double level(const QuantGrid &g, double w, double r) {
    return std::clamp(std::floor(w / g.scale) + double(g.zeroPoint) + r, double(g.qmin),
                      double(g.qmax));
  }
  Tensor forward(const Tensor &x) const override {
    initialize(x);
    return mapRuns(cfg, x, [&](int64_t i, size_t k, float v) {
      const QuantGrid &g = cfg.grids[k];
      return float(g.scale * (level(g, v, h(size_t(i))) - double(g.zeroPoint)));
    });
  }
  Tensor backward(const Tensor &x, const Tensor &dy) override {
    initialize(x);
    forEachGrid(cfg, x.shape(), x.numel(), [&](int64_t i, const QuantGrid &g) {
      galpha[size_t(i)] += double(dy.data<float>()[i]) * g.scale * dh(size_t(i));
    });
    return Tensor(ElemType::Float, x.shape(), true); // the float weights stay fixed
  }
  std::vector<QuantizerParam> parameters() override { return {{"alpha", &alpha, &galpha}}; }
  FinalizedQuantizer finalize(const Tensor *w) const override {
    FinalizedQuantizer f{cfg.grids, {}};
    if (!w)
      return f;
    initialize(*w);
    std::vector<float> out(size_t(w->numel()));
    forEachGrid(cfg, w->shape(), w->numel(), [&](int64_t i, const QuantGrid &g) {
      double r = h(size_t(i)) >= 0.5 ? 1.0 : 0.0;
      out[size_t(i)] = float(g.scale * (level(g, w->data<float>()[i], r) - double(g.zeroPoint)));
    });
    f.weights = std::move(out);
    return f;
  }
  double regularizer(double beta, double lambda) {
    // In float, per element (the same on any thread count), its sum in
    // fixed chunks.
    const float b = float(beta), scale = float(lambda * -beta * 2);
    double sum = 0;
    rt::chunkedSums(int64_t(alpha.size()), 1, &sum, [&](int64_t i0, int64_t i1, double *acc) {
      double r = 0;
      for (int64_t i = i0; i < i1; ++i) {
        float e = float(2 * h(size_t(i)) - 1), ae = std::fabs(e);
        float p = ae > 0 ? std::exp2(b * std::log2(ae)) : 0.f; // |e|^β
        r += double(1 - p);
        // d/dα of -|e|^β = -β |e|^(β-1) sign(e) 2 dh/dα
        if (ae > 0)
          galpha[size_t(i)] += double(scale * (p / ae) * (e > 0 ? 1.f : -1.f)) * dh(size_t(i));
      }
      acc[0] += r;
    });
    return lambda * sum;
  }

private:
  // Made from the weights on first use (forward may be the first call).
  mutable std::vector<double> alpha, galpha;
  mutable std::vector<double> sigAt, sigOf; ///< σ(sigAt[i]) = sigOf[i]
};

/// GPTQ's straight-through rounding of weights: a perturbation d per
/// element, at most one step either way, moves the rounded value:
/// W_q = Δ clip(rnd(rnd(W/Δ) + clip(d, ±Δ)/Δ)), ∂W_q/∂d = 1; the float
/// weights stay fixed. d is kept in steps (u = d/Δ, ∂W_q/∂u = Δ), so one
/// learning rate suits every layer's scale.
class SteRounding : public TrainableQuantizer {
public:
  using TrainableQuantizer::TrainableQuantizer;
  QuantizerKind kind() const override { return QuantizerKind::SteRounding; }
  /// The integer of weight w (minus the zero point) moved by u steps.
  static double level(const QuantGrid &g, double w, double u) {
    double q = rnd(rnd(w / g.scale) + std::clamp(u, -1.0, 1.0));
    return std::clamp(q + double(g.zeroPoint), double(g.qmin), double(g.qmax)) -
           double(g.zeroPoint);
  }
  Tensor forward(const Tensor &x) const override {
    if (u.size() != size_t(x.numel())) {
      u.assign(size_t(x.numel()), 0.0);
      gu.assign(u.size(), 0.0);
    }
    // Past a step u changes nothing: kept within it, it turns back at once
    // when its gradient does (a projection after each update).
    for (double &v : u)
      v = std::clamp(v, -1.0, 1.0);
    return mapRuns(cfg, x, [&](int64_t i, size_t k, float v) {
      const QuantGrid &g = cfg.grids[k];
      return float(g.scale * level(g, v, u[size_t(i)]));
    });
  }
  Tensor backward(const Tensor &x, const Tensor &dy) override {
    forward(x); // sizes u on first use
    const float *d = dy.data<float>();
    forEachGrid(cfg, x.shape(), x.numel(),
                [&](int64_t i, const QuantGrid &g) { gu[size_t(i)] += double(d[i]) * g.scale; });
    return Tensor(ElemType::Float, x.shape(), true); // the float weights stay fixed
  }
  std::vector<QuantizerParam> parameters() override { return {{"perturbation", &u, &gu}}; }
  FinalizedQuantizer finalize(const Tensor *w) const override {
    FinalizedQuantizer f{cfg.grids, {}};
    if (!w)
      return f;
    Tensor q = forward(*w);
    f.weights = std::vector<float>(q.data<float>(), q.data<float>() + q.numel());
    return f;
  }

private:
  mutable std::vector<double> u, gu;
};

template <typename Q> std::unique_ptr<TrainableQuantizer> make(const TrainableQuantizerConfig &c) {
  return std::make_unique<Q>(c);
}

} // namespace

TrainableQuantizer::~TrainableQuantizer() = default;

void TrainableQuantizer::zeroGrad() {
  for (QuantizerParam &p : parameters())
    std::fill(p.grad->begin(), p.grad->end(), 0.0);
}

const char *quant::toString(QuantizerKind k) {
  switch (k) {
  case QuantizerKind::Ste:
    return "ste";
  case QuantizerKind::Lsq:
    return "lsq";
  case QuantizerKind::SoftRounding:
    return "soft_rounding";
  case QuantizerKind::SteRounding:
    return "ste_rounding";
  }
  return "?";
}

std::optional<QuantizerKind> quant::parseQuantizerKind(llvm::StringRef s) {
  if (s == "ste")
    return QuantizerKind::Ste;
  if (s == "lsq")
    return QuantizerKind::Lsq;
  if (s == "soft_rounding")
    return QuantizerKind::SoftRounding;
  if (s == "ste_rounding")
    return QuantizerKind::SteRounding;
  return std::nullopt;
}

QuantizerFactory quant::trainableQuantizer(QuantizerTarget target, ir::QuantMethod method,
                                           QuantizerKind kind) {
  bool weights = target == QuantizerTarget::Weights;
  if (weights && ir::isLut(method))
    return make<FixedQuantizer>; // k-means tables stay; gradients pass
  switch (kind) {
  case QuantizerKind::Ste:
    return weights ? make<FixedQuantizer> : make<SteActivation>;
  case QuantizerKind::Lsq:
    return make<LsqQuantizer>;
  case QuantizerKind::SoftRounding:
    return weights ? make<SoftRounding> : nullptr;
  case QuantizerKind::SteRounding:
    return weights ? make<SteRounding> : nullptr;
  }
  return nullptr;
}

std::unique_ptr<TrainableQuantizer> quant::fixedQuantizer(const TrainableQuantizerConfig &c) {
  return make<FixedQuantizer>(c);
}

double quant::softRoundingRegularizer(TrainableQuantizer &q, double beta, double lambda) {
  auto *s = dynamic_cast<SoftRounding *>(&q);
  return s ? s->regularizer(beta, lambda) : 0.0;
}
