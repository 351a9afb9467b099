//===- LapackTest.cpp - LAPACK for second-order rounding --------------------===//
//
// The Cholesky factor, inverse and solve on a matrix whose factor is known;
// OpenBLAS runs its Haswell kernels on any CPU with AVX2 and FMA (the same
// bytes on every such machine); and second-order rounding of a layer wider
// and taller than its blocks of rows and columns gives exactly what the
// column-by-column algorithm gives, with its loss as the plain sum's.
//
//===----------------------------------------------------------------------===//
#include "quant/learn/gptq/Lapack.h"
#include "quant/learn/gptq/Hessian.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace tpcc::quant;

namespace {

/// [[4,2,2],[2,5,3],[2,3,6]] = UᵀU with U = [[2,1,1],[0,2,1],[0,0,2]].
std::vector<double> knownMatrix() { return {4, 2, 2, 2, 5, 3, 2, 3, 6}; }

} // namespace

TEST(Lapack, CholeskyInverseAndSolve) {
  ASSERT_EQ(lapack::loadError(), "");
  std::vector<double> a = knownMatrix();
  ASSERT_TRUE(lapack::choleskyUpper(a.data(), 3));
  const double u[] = {2, 1, 1, 0, 2, 1, 0, 0, 2};
  for (int i = 0; i < 3; ++i)
    for (int j = i; j < 3; ++j)
      EXPECT_NEAR(a[size_t(i * 3 + j)], u[i * 3 + j], 1e-14) << i << ", " << j;
  ASSERT_TRUE(lapack::inverseFromCholesky(a.data(), 3));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < i; ++j)
      a[size_t(i * 3 + j)] = a[size_t(j * 3 + i)];
  std::vector<double> m = knownMatrix();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k)
        s += m[size_t(i * 3 + k)] * a[size_t(k * 3 + j)];
      EXPECT_NEAR(s, i == j ? 1.0 : 0.0, 1e-14) << i << ", " << j;
    }
  std::vector<double> b = {8, 10, 11}; // A [1, 1, 1]ᵀ
  ASSERT_TRUE(lapack::solvePositive(m.data(), b.data(), 3));
  for (double x : b)
    EXPECT_NEAR(x, 1.0, 1e-14);
  std::vector<double> indefinite = {1, 2, 2, 1};
  EXPECT_FALSE(lapack::choleskyUpper(indefinite.data(), 2));
}

TEST(Lapack, OpenBlasRunsFixedKernels) {
  std::string d = lapack::describe();
  if (d.rfind("OpenBLAS", 0) != 0)
    GTEST_SKIP() << "LAPACK here: " << d;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      !getenv("OPENBLAS_CORETYPE")) {
    EXPECT_NE(d.find("Haswell"), std::string::npos) << d;
  }
#endif
}

TEST(Lapack, BlockedRoundingIsColumnByColumn) {
  // 37 rows and 150 columns: blocks of 16 rows and 64 columns, each with a
  // shorter last one.
  int64_t rows = 37, cols = 150;
  std::mt19937 rng(11);
  std::normal_distribution<double> z;
  std::vector<double> w(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(cols));
  std::vector<double> xxt(static_cast<size_t>(cols * cols), 0.0);
  for (double &v : w)
    v = z(rng);
  for (int s = 0; s < 400; ++s) {
    double common = z(rng);
    for (double &v : x)
      v = z(rng) + common;
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < cols; ++j)
        xxt[size_t(i * cols + j)] += x[size_t(i)] * x[size_t(j)];
  }
  std::vector<QuantGrid> grids = {symmetricGrid(2.5, 4, true)};
  std::vector<double> q = w;
  SecondOrderResult res;
  ASSERT_TRUE(roundSecondOrder(q, rows, cols, grids, xxt, 400, {}, res));
  ASSERT_EQ(res.dampening, 0.01);

  // The reference: U from the same factorization, then column by column.
  std::vector<double> h(xxt.size()), u;
  double mean = 0;
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = 2 * xxt[i] / 400;
  for (int64_t c = 0; c < cols; ++c)
    mean += h[size_t(c * cols + c)] / double(cols);
  u = h;
  for (int64_t c = 0; c < cols; ++c)
    u[size_t(c * cols + c)] += 0.01 * mean;
  ASSERT_TRUE(lapack::choleskyUpper(u.data(), cols) && lapack::inverseFromCholesky(u.data(), cols));
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < i; ++j)
      u[size_t(i * cols + j)] = u[size_t(j * cols + i)];
  ASSERT_TRUE(lapack::choleskyUpper(u.data(), cols));
  std::vector<double> ref = w;
  for (int64_t r = 0; r < rows; ++r) {
    double *row = &ref[size_t(r * cols)];
    for (int64_t i = 0; i < cols; ++i) {
      double qv = grids[0].quantize(row[i]);
      double e = (row[i] - qv) / u[size_t(i * cols + i)];
      row[i] = qv;
      for (int64_t j = i + 1; j < cols; ++j)
        row[j] -= e * u[size_t(i * cols + j)];
    }
  }
  auto loss = [&](const std::vector<double> &v) {
    double total = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < cols; ++i)
        for (int64_t j = 0; j < cols; ++j)
          total += (w[size_t(r * cols + i)] - v[size_t(r * cols + i)]) * h[size_t(i * cols + j)] *
                   (w[size_t(r * cols + j)] - v[size_t(r * cols + j)]);
    return total / double(rows);
  };
  double refLoss = loss(ref);
  std::vector<double> nearest = w;
  for (double &v : nearest)
    v = grids[0].quantize(v);
  ASSERT_LT(refLoss, loss(nearest)); // else roundSecondOrder keeps nearest
  EXPECT_EQ(q, ref);
  EXPECT_NEAR(res.lossRounded, refLoss, 1e-12 * refLoss);
  EXPECT_NEAR(res.lossNearest, loss(nearest), 1e-12 * loss(nearest));
}
