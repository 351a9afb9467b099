//===- Optimizers.h - Adam and SGD with momentum ------------------*- C++ -*-===//
//
// The update rules fine-tuning and gradient GPTQ apply to one parameter
// vector (its state lives here, made on the first step).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_TRAIN_OPTIMIZERS_H
#define TPCC_QUANT_LEARN_TRAIN_OPTIMIZERS_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpcc::quant {

/// Adam (β 0.9, 0.999; ε 1e-8) with decoupled weight decay; `t` counts
/// steps from 1.
struct Adam {
  std::vector<double> m, v;
  void step(double *w, const double *g, size_t n, double lr, double decay, int64_t t) {
    if (m.size() != n) {
      m.assign(n, 0.0);
      v.assign(n, 0.0);
    }
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double c1 = 1 - std::pow(b1, double(t)), c2 = 1 - std::pow(b2, double(t));
    for (size_t i = 0; i < n; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      w[i] -= lr * ((m[i] / c1) / (std::sqrt(v[i] / c2) + eps) + decay * w[i]);
    }
  }
};

/// SGD with (heavy-ball) momentum, as PyTorch's: b = μ b + g, w -= lr b.
struct Momentum {
  std::vector<double> b;
  void step(double *w, const double *g, size_t n, double lr, double mu) {
    if (b.size() != n)
      b.assign(g, g + n);
    else
      for (size_t i = 0; i < n; ++i)
        b[i] = mu * b[i] + g[i];
    for (size_t i = 0; i < n; ++i)
      w[i] -= lr * b[i];
  }
};

} // namespace tpcc::quant

#endif
