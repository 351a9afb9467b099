//===- Hessian.cpp - Layer Hessians and second-order rounding -------------===//
#include "quant/learn/gptq/Hessian.h"

#include "runtime/KernelUtil.h"
#include "runtime/ops/Dnnl.h"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace tpcc;
using namespace tpcc::quant;
namespace du = tpcc::rt::dnnl_util;

namespace {

/// Σ a[k] over n floats, in 16 float lanes (vectorizes) and a double total.
double laneSum(const float *a, int64_t n) {
  constexpr int kLanes = 16;
  float lane[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] += a[k + l];
  double total = 0;
  for (; k < n; ++k)
    total += double(a[k]);
  for (float l : lane)
    total += double(l);
  return total;
}

} // namespace

void GramAccumulator::sumBlock(const float *p, int64_t n, int64_t cols, int64_t ld, Block &b) {
  b.n = n;
  b.g.assign(size_t(cols * cols), 0.f);
  b.s.assign(size_t(cols), 0.0);
  if (n <= 0)
    return;
  for (int64_t c = 0; c < cols; ++c)
    b.s[size_t(c)] = laneSum(p + c * ld, n);
  // Pᵀ P through oneDNN: Pᵀ is `cols` x `n` with rows `ld` apart, and P the
  // same buffer read with transposed strides. A stream of its own: blocks
  // run in parallel.
  using dnnl::memory;
  memory::desc pt({cols, n}, memory::data_type::f32, memory::dims{ld, 1});
  memory::desc pd({n, cols}, memory::data_type::f32, memory::dims{1, ld});
  memory::desc gd({cols, cols}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::matmul::primitive_desc pdesc(dnnl::matmul::desc(pt, pd, gd), du::engine());
  dnnl::stream stream(du::engine());
  dnnl::matmul(pdesc).execute(stream, {{DNNL_ARG_SRC, du::wrap(pt, p)},
                                       {DNNL_ARG_WEIGHTS, du::wrap(pd, p)},
                                       {DNNL_ARG_DST, du::wrap(gd, b.g.data())}});
  stream.wait();
}

void GramAccumulator::add(const Block &b) {
  patches += b.n;
  for (size_t i = 0; i < gram.size(); ++i)
    gram[i] += double(b.g[i]);
  for (size_t c = 0; c < sum.size(); ++c)
    sum[c] += b.s[c];
}

bool quant::roundSecondOrder(std::vector<double> &w, int64_t rows, int64_t cols,
                             const std::vector<QuantGrid> &grids, const std::vector<double> &xxt,
                             int64_t n, const SecondOrderSettings &settings,
                             SecondOrderResult &result, const std::vector<uint32_t> *gridIndex) {
  auto gridOf = [&](int64_t r, int64_t c) -> const QuantGrid & {
    if (gridIndex)
      return grids[(*gridIndex)[size_t(r * cols + c)]];
    return grids.size() > 1 ? grids[size_t(r)] : grids.front();
  };
  // H = 2 X Xᵀ / n; inputs that were always zero carry no information:
  // their weights become 0 and their diagonal 1.
  std::vector<double> h(size_t(cols * cols));
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = 2 * xxt[i] / double(std::max<int64_t>(1, n));
  const std::vector<double> h0 = h;
  std::vector<double> w0 = w;
  result.deadInputs = 0;
  for (int64_t c = 0; c < cols; ++c)
    if (h[size_t(c * cols + c)] == 0) {
      ++result.deadInputs;
      h[size_t(c * cols + c)] = 1;
      for (int64_t r = 0; r < rows; ++r)
        w[size_t(r * cols + c)] = 0;
    }
  // The loss tr((W0 − Q) H (W0 − Q)ᵀ) / rows, with the undamped H.
  auto loss = [&](const std::vector<double> &q) {
    double total = 0;
    std::vector<double> e(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c)
        e[size_t(c)] = w0[size_t(r * cols + c)] - q[size_t(r * cols + c)];
      for (int64_t i = 0; i < cols; ++i) {
        double s = 0;
        for (int64_t j = 0; j < cols; ++j)
          s += h0[size_t(i * cols + j)] * e[size_t(j)];
        total += e[size_t(i)] * s;
      }
    }
    return total / double(std::max<int64_t>(1, rows));
  };
  std::vector<double> nearest(w0.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      nearest[size_t(r * cols + c)] = gridOf(r, c).quantize(w0[size_t(r * cols + c)]);
  result.lossNearest = loss(nearest);

  // Activation order: the columns by decreasing H_ii.
  std::vector<int64_t> perm(static_cast<size_t>(cols));
  std::iota(perm.begin(), perm.end(), 0);
  if (settings.actOrder)
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      return h[size_t(a * cols + a)] > h[size_t(b * cols + b)];
    });
  std::vector<double> hp(h.size()), wp(w.size());
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < cols; ++j)
      hp[size_t(i * cols + j)] = h[size_t(perm[size_t(i)] * cols + perm[size_t(j)])];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      wp[size_t(r * cols + c)] = w[size_t(r * cols + perm[size_t(c)])];

  // U: the upper Cholesky factor of H⁻¹ (H dampened until it factors).
  double mean = 0;
  for (int64_t c = 0; c < cols; ++c)
    mean += hp[size_t(c * cols + c)] / double(cols);
  std::vector<double> u;
  bool factored = false;
  for (double damp = settings.dampening; damp <= 1e3 && !factored; damp *= 10) {
    u = hp;
    for (int64_t c = 0; c < cols; ++c)
      u[size_t(c * cols + c)] += damp * mean;
    result.dampening = damp;
    lapack_int m = lapack_int(cols);
    factored = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', m, u.data(), m) == 0 &&
               LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'U', m, u.data(), m) == 0;
    if (factored) { // potri leaves H⁻¹ in the upper triangle
      for (int64_t i = 0; i < cols; ++i)
        for (int64_t j = 0; j < i; ++j)
          u[size_t(i * cols + j)] = u[size_t(j * cols + i)];
      factored = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', m, u.data(), m) == 0;
    }
  }
  if (!factored) {
    w = nearest;
    result.lossRounded = result.lossNearest;
    return false;
  }

  // Column by column: quantize, then spread the error (w − q) / U_ii over
  // the columns after it along U's row. Rows are independent.
  rt::parallelFor(rows, cols * cols, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      double *row = &wp[size_t(r * cols)];
      for (int64_t i = 0; i < cols; ++i) {
        double q = gridOf(r, perm[size_t(i)]).quantize(row[i]);
        double err = (row[i] - q) / u[size_t(i * cols + i)];
        row[i] = q;
        const double *ui = &u[size_t(i * cols)];
        for (int64_t j = i + 1; j < cols; ++j)
          row[j] -= err * ui[j];
      }
    }
  });
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      w[size_t(r * cols + perm[size_t(c)])] = wp[size_t(r * cols + c)];
  result.lossRounded = loss(w);
  if (result.lossRounded > result.lossNearest) { // dampened too much: never worse than nearest
    w = nearest;
    result.lossRounded = result.lossNearest;
  }
  return true;
}
