//===- LutRefit.cpp - Look-up tables refitted after second-order rounding -===//
#include "quant/learn/gptq/LutRefit.h"

#include "quant/learn/gptq/Lapack.h"

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

/// Σ over `rows` of (w − q) H (w − q)ᵀ, with q from `value(row, column)`.
template <typename F> double rowsLoss(const std::vector<LutRow> &rows, int64_t cols, F value) {
  double total = 0;
  std::vector<double> e(static_cast<size_t>(cols));
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int64_t c = 0; c < cols; ++c)
      e[size_t(c)] = rows[r].w[c] - value(r, c);
    for (int64_t i = 0; i < cols; ++i) {
      double s = 0;
      const double *hi = rows[r].h + i * cols;
      for (int64_t j = 0; j < cols; ++j)
        s += hi[j] * e[size_t(j)];
      total += e[size_t(i)] * s;
    }
  }
  return total;
}

} // namespace

LutRefit quant::refitLutTable(QuantGrid &g, const std::vector<LutRow> &rows, int64_t cols) {
  LutRefit out;
  const std::vector<int64_t> &table = g.lut;
  int64_t entries = int64_t(table.size());
  if (rows.empty() || entries == 0 || !(g.scale > 0))
    return out;
  // Which entry each value uses, and the unknowns: the entries in use
  // other than the one that stands for 0.
  std::vector<int64_t> entryOf(rows.size() * size_t(cols));
  std::vector<int64_t> unknown(size_t(entries), -1);
  int64_t k = 0;
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double t = std::nearbyint(rows[r].q[c] / g.scale + double(g.zeroPoint));
      auto it = std::lower_bound(table.begin(), table.end(), int64_t(t));
      if (it == table.end() || double(*it) != t)
        return out; // not on the table: leave it
      int64_t e = it - table.begin();
      entryOf[r * size_t(cols) + size_t(c)] = e;
      if (*it != g.zeroPoint && unknown[size_t(e)] < 0)
        unknown[size_t(e)] = k++;
    }
  out.lossBefore = out.lossAfter =
      rowsLoss(rows, cols, [&](size_t r, int64_t c) { return rows[r].q[c]; });
  if (k == 0)
    return out;
  // In integer units v = w/Δ + z, the values are A t (A: which entry each
  // uses), the zero entry fixed at z: minimise (v − A t) H (v − A t)ᵀ over
  // the unknown entries, (A_uᵀ H A_u) t_u = A_uᵀ H (v − A_0 z).
  std::vector<double> m(size_t(k * k), 0.0), b(size_t(k), 0.0);
  std::vector<double> v(static_cast<size_t>(cols)), p(size_t(cols * k));
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t *er = &entryOf[r * size_t(cols)];
    for (int64_t c = 0; c < cols; ++c) {
      int64_t u = unknown[size_t(er[c])];
      v[size_t(c)] = rows[r].w[c] / g.scale + double(g.zeroPoint) -
                     (u < 0 ? double(table[size_t(er[c])]) : 0.0);
    }
    std::fill(p.begin(), p.end(), 0.0);
    for (int64_t i = 0; i < cols; ++i) {
      int64_t ui = unknown[size_t(er[i])];
      if (ui < 0)
        continue;
      const double *hi = rows[r].h + i * cols;
      double hv = 0;
      for (int64_t j = 0; j < cols; ++j) {
        hv += hi[j] * v[size_t(j)];
        int64_t uj = unknown[size_t(er[j])];
        if (uj >= 0)
          m[size_t(ui * k + uj)] += hi[j];
      }
      b[size_t(ui)] += hv;
    }
  }
  // Entries whose weights see no input (H = 0 there) are not determined:
  // a tiny ridge holds them at their value.
  double trace = 0;
  for (int64_t i = 0; i < k; ++i)
    trace += m[size_t(i * k + i)];
  if (!(trace > 0))
    return out;
  double ridge = 1e-9 * trace / double(k);
  for (int64_t e = 0; e < entries; ++e)
    if (int64_t u = unknown[size_t(e)]; u >= 0) {
      m[size_t(u * k + u)] += ridge;
      b[size_t(u)] += ridge * double(table[size_t(e)]);
    }
  if (!lapack::solvePositive(m.data(), b.data(), k))
    return out;
  // The entries, rounded onto the integer grid.
  std::vector<int64_t> fitted(table);
  for (int64_t e = 0; e < entries; ++e)
    if (int64_t u = unknown[size_t(e)]; u >= 0) {
      double t = b[size_t(u)];
      if (!std::isfinite(t))
        return out;
      fitted[size_t(e)] = std::clamp(int64_t(std::nearbyint(t)), g.qmin, g.qmax);
    }
  auto valueOf = [&](size_t r, int64_t c) {
    return g.scale * double(fitted[size_t(entryOf[r * size_t(cols) + size_t(c)])] - g.zeroPoint);
  };
  double after = rowsLoss(rows, cols, valueOf);
  if (!(after < out.lossBefore))
    return out;
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t c = 0; c < cols; ++c)
      rows[r].q[c] = valueOf(r, c);
  // The table: the entries in use (and 0 when it had it), sorted, unique.
  std::vector<int64_t> used;
  std::vector<bool> inUse(size_t(entries), false);
  for (int64_t e : entryOf)
    inUse[size_t(e)] = true;
  for (int64_t e = 0; e < entries; ++e)
    if (inUse[size_t(e)] || table[size_t(e)] == g.zeroPoint)
      used.push_back(fitted[size_t(e)]);
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  g.lut = std::move(used);
  out.lossAfter = after;
  out.refitted = true;
  return out;
}
