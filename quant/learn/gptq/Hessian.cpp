//===- Hessian.cpp - Layer Hessians and second-order rounding -------------===//
#include "quant/learn/gptq/Hessian.h"

#include "quant/learn/gptq/Lapack.h"
#include "runtime/KernelUtil.h"
#include "runtime/ops/Dnnl.h"

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

/// Rows of a block share each row of H (or U) they read: H is read once per
/// block instead of once per row (a 576 x 49,155 projection read its 2.6 MB
/// H 49,155 times).
constexpr int64_t kRowBlock = 16;

/// Σ_j a[j] b[j] in four interleaved partial sums (a fixed order: the same
/// sum with or without SIMD).
double dot(const double *a, const double *b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    s0 += a[j] * b[j];
    s1 += a[j + 1] * b[j + 1];
    s2 += a[j + 2] * b[j + 2];
    s3 += a[j + 3] * b[j + 3];
  }
  for (; j < n; ++j)
    s0 += a[j] * b[j];
  return (s0 + s1) + (s2 + s3);
}

/// Σ over rows r of e_r H e_rᵀ / rows, e = w0 − q: each row's sum on its
/// own, the rows added in order (the same on any thread count).
double quadraticLoss(const std::vector<double> &h, const std::vector<double> &w0,
                     const std::vector<double> &q, int64_t rows, int64_t cols) {
  std::vector<double> perRow(size_t(rows), 0.0);
  int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  rt::parallelFor(blocks, kRowBlock * cols * cols, [&](int64_t b0, int64_t b1) {
    std::vector<double> e(size_t(kRowBlock * cols));
    for (int64_t b = b0; b < b1; ++b) {
      int64_t r0 = b * kRowBlock, nr = std::min(kRowBlock, rows - r0);
      for (int64_t k = 0; k < nr * cols; ++k)
        e[size_t(k)] = w0[size_t(r0 * cols + k)] - q[size_t(r0 * cols + k)];
      for (int64_t i = 0; i < cols; ++i) {
        const double *hi = &h[size_t(i * cols)];
        for (int64_t r = 0; r < nr; ++r) {
          const double *er = &e[size_t(r * cols)];
          perRow[size_t(r0 + r)] += er[i] * dot(hi, er, cols);
        }
      }
    }
  });
  double total = 0;
  for (double v : perRow)
    total += v;
  return total / double(std::max<int64_t>(1, rows));
}

/// Columns per block of the error spreading: a block's rows of U are read
/// once per block of rows.
constexpr int64_t kColBlock = 64;

/// The second-order rounding of `w` (rows x cols) with U, the upper Cholesky
/// factor of H⁻¹: column by column, quantize onto gridAt(r, i), then spread
/// the error (w − q) / U_ii over the later columns along U's row. Within a
/// block of columns the error goes to the block's later columns at once,
/// and to the columns after the block when it is done, still in column
/// order: every weight receives the same updates in the same order as
/// column-by-column spreading (GPTQ's lazy batch updates, exactly).
template <typename G>
void roundRows(std::vector<double> &w, const std::vector<double> &u, int64_t rows, int64_t cols,
               const G &gridAt) {
  int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  rt::parallelFor(blocks, kRowBlock * cols * cols, [&](int64_t b0, int64_t b1) {
    std::vector<double> err(size_t(kRowBlock * kColBlock));
    for (int64_t b = b0; b < b1; ++b) {
      int64_t r0 = b * kRowBlock, nr = std::min(kRowBlock, rows - r0);
      for (int64_t c0 = 0; c0 < cols; c0 += kColBlock) {
        int64_t c1 = std::min(cols, c0 + kColBlock);
        for (int64_t r = 0; r < nr; ++r) {
          double *row = &w[size_t((r0 + r) * cols)];
          for (int64_t i = c0; i < c1; ++i) {
            double q = gridAt(r0 + r, i).quantize(row[i]);
            double e = (row[i] - q) / u[size_t(i * cols + i)];
            err[size_t(r * kColBlock + (i - c0))] = e;
            row[i] = q;
            const double *ui = &u[size_t(i * cols)];
            for (int64_t j = i + 1; j < c1; ++j)
              row[j] -= e * ui[j];
          }
        }
        for (int64_t r = 0; r < nr; ++r) {
          double *__restrict row = &w[size_t((r0 + r) * cols)];
          for (int64_t i = c0; i < c1; ++i) {
            double e = err[size_t(r * kColBlock + (i - c0))];
            const double *__restrict ui = &u[size_t(i * cols)];
            for (int64_t j = c1; j < cols; ++j)
              row[j] -= e * ui[j];
          }
        }
      }
    }
  });
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
  auto loss = [&](const std::vector<double> &q) { return quadraticLoss(h0, w0, q, rows, cols); };
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
    factored = lapack::choleskyUpper(u.data(), cols) && lapack::inverseFromCholesky(u.data(), cols);
    if (factored) { // H⁻¹ is in the upper triangle
      for (int64_t i = 0; i < cols; ++i)
        for (int64_t j = 0; j < i; ++j)
          u[size_t(i * cols + j)] = u[size_t(j * cols + i)];
      factored = lapack::choleskyUpper(u.data(), cols);
    }
  }
  if (!factored) {
    w = nearest;
    result.lossRounded = result.lossNearest;
    return false;
  }

  // Column by column: quantize, then spread the error (w − q) / U_ii over
  // the columns after it along U's row. Rows are independent.
  auto gridAt = [&](int64_t r, int64_t i) -> const QuantGrid & {
    return gridOf(r, perm[size_t(i)]);
  };
  roundRows(wp, u, rows, cols, gridAt);
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
