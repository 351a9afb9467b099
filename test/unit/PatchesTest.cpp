//===- PatchesTest.cpp - Convolutions as rows times patches, LUT refits ---===//
//
// convPatches and graph::LinearKernel against direct convolutions written the other
// way round: a Conv as a sum over kernel taps gathered per output, a
// ConvTranspose as inputs scattered onto the outputs. For every output
// channel (row) and output position, Σ_c W[at(row, c)] · patch[c] must be
// the convolution's output, with strides, pads, dilations, groups and a
// ConvTranspose's output padding. Then refitLutTable: with H = I the best
// table entry is the mean of the (scaled) weights that use it, rounded, the
// 0 entry stays, and the loss drops; with a correlated H it never rises.
//
//===----------------------------------------------------------------------===//
#include "quant/learn/gptq/Patches.h"
#include "quant/learn/gptq/LutRefit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace tpcc;
using namespace tpcc::quant;
using rt::Tensor;

namespace {

Tensor randomTensor(const rt::Shape &s, std::mt19937 &rng) {
  Tensor t(graph::ElemType::Float, s);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = u(rng);
  return t;
}

struct Case {
  bool transposed;
  rt::Shape x, w;
  int64_t group, stride, pad, dilation, outputPadding;
};

/// The geometry of `c` (2-D, the same along both axes).
rt::ConvGeometry geometryOf(const Case &c) {
  rt::ConvGeometry g;
  g.kernel = {c.w[2], c.w[3]};
  g.strides = {c.stride, c.stride};
  g.dilations = {c.dilation, c.dilation};
  g.padBegin = g.padEnd = {c.pad, c.pad};
  g.group = c.group;
  g.outShape = {c.x[0], c.transposed ? c.w[1] * c.group : c.w[0]};
  for (int i = 0; i < 2; ++i) {
    int64_t in = c.x[size_t(2 + i)], k = c.w[size_t(2 + i)];
    g.outShape.push_back(c.transposed ? (in - 1) * c.stride - 2 * c.pad + c.dilation * (k - 1) + 1 +
                                            c.outputPadding
                                      : (in + 2 * c.pad - c.dilation * (k - 1) - 1) / c.stride + 1);
  }
  return g;
}

/// The convolution computed directly (no bias).
std::vector<double> direct(const Case &c, const rt::ConvGeometry &g, const Tensor &x,
                           const Tensor &w) {
  int64_t n = c.x[0], ci = c.x[1], ih = c.x[2], iw = c.x[3], co = g.outShape[1];
  int64_t oh = g.outShape[2], ow = g.outShape[3], kh = c.w[2], kw = c.w[3];
  int64_t cinG = ci / c.group, coutG = co / c.group;
  std::vector<double> y(size_t(n * co * oh * ow), 0.0);
  auto X = [&](int64_t b, int64_t ch, int64_t i, int64_t j) {
    return double(x.data<float>()[((b * ci + ch) * ih + i) * iw + j]);
  };
  for (int64_t b = 0; b < n; ++b)
    for (int64_t grp = 0; grp < c.group; ++grp)
      for (int64_t o = 0; o < coutG; ++o)
        for (int64_t i = 0; i < cinG; ++i)
          for (int64_t u = 0; u < kh; ++u)
            for (int64_t v = 0; v < kw; ++v) {
              int64_t oc = grp * coutG + o, ic = grp * cinG + i;
              double wv = c.transposed ? w.data<float>()[((ic * coutG + o) * kh + u) * kw + v]
                                       : w.data<float>()[((oc * cinG + i) * kh + u) * kw + v];
              if (!c.transposed) { // gather
                for (int64_t yy = 0; yy < oh; ++yy)
                  for (int64_t xx = 0; xx < ow; ++xx) {
                    int64_t sy = yy * c.stride - c.pad + u * c.dilation,
                            sx = xx * c.stride - c.pad + v * c.dilation;
                    if (sy >= 0 && sy < ih && sx >= 0 && sx < iw)
                      y[size_t(((b * co + oc) * oh + yy) * ow + xx)] += wv * X(b, ic, sy, sx);
                  }
              } else { // scatter
                for (int64_t sy = 0; sy < ih; ++sy)
                  for (int64_t sx = 0; sx < iw; ++sx) {
                    int64_t yy = sy * c.stride - c.pad + u * c.dilation,
                            xx = sx * c.stride - c.pad + v * c.dilation;
                    if (yy >= 0 && yy < oh && xx >= 0 && xx < ow)
                      y[size_t(((b * co + oc) * oh + yy) * ow + xx)] += wv * X(b, ic, sy, sx);
                  }
              }
            }
  return y;
}

} // namespace

TEST(Patches, RowsTimesPatchesAreTheConvolution) {
  std::mt19937 rng(3);
  for (const Case &c : {Case{false, {2, 4, 7, 6}, {6, 2, 3, 3}, 2, 2, 1, 1, 0},
                        Case{false, {1, 3, 9, 9}, {3, 1, 5, 5}, 3, 2, 2, 2, 0},
                        Case{true, {2, 4, 5, 4}, {4, 3, 3, 3}, 1, 2, 1, 1, 1},
                        Case{true, {1, 4, 4, 5}, {4, 2, 4, 4}, 2, 2, 1, 1, 0},
                        Case{true, {1, 2, 3, 3}, {2, 3, 3, 3}, 1, 3, 0, 2, 2}}) {
    SCOPED_TRACE((c.transposed ? "ConvTranspose x" : "Conv x") + rt::shapeStr(c.x) + " w" +
                 rt::shapeStr(c.w) + " group " + std::to_string(c.group));
    Tensor x = randomTensor(c.x, rng), w = randomTensor(c.w, rng);
    rt::ConvGeometry g = geometryOf(c);
    std::optional<graph::LinearKernel> k =
        graph::LinearKernel::convolution(c.w, c.group, c.transposed);
    ASSERT_TRUE(k);
    const graph::LinearKernel &l = *k;
    EXPECT_EQ(l.rows, g.outShape[1]);
    std::vector<double> y = direct(c, g, x, w);
    int64_t positions = convPositions(g, c.x[0]), spatial = positions / c.x[0];
    EXPECT_EQ(positions * l.rows, int64_t(y.size()));
    std::vector<float> patches(size_t(positions * l.cols));
    for (int64_t grp = 0; grp < c.group; ++grp) {
      // Two calls: the positions split anywhere come out the same.
      int64_t mid = positions / 2 + 1;
      convPatches(l, g, x, grp, 0, mid, patches.data(), positions);
      convPatches(l, g, x, grp, mid, positions, patches.data() + mid, positions);
      for (int64_t r = grp * l.rowsPerGroup; r < (grp + 1) * l.rowsPerGroup; ++r)
        for (int64_t p = 0; p < positions; ++p) {
          double s = 0;
          for (int64_t col = 0; col < l.cols; ++col)
            s += double(w.data<float>()[l.at(r, col)]) * patches[size_t(col * positions + p)];
          int64_t b = p / spatial, at = p % spatial;
          ASSERT_NEAR(s, y[size_t((b * l.rows + r) * spatial + at)], 1e-5)
              << "row " << r << ", position " << p;
        }
    }
  }
}

TEST(LutRefit, IdentityHessianGivesTheMeanOfEachEntry) {
  // One row on a table {-4, 0, 3} with scale 0.5: the weights that use -4
  // average -5.2 (in steps), those that use 3 average 3.6.
  QuantGrid g;
  g.method = ir::QuantMethod::LutSym;
  g.scale = 0.5;
  g.qmin = -128;
  g.qmax = 127;
  g.lut = {-4, 0, 3};
  std::vector<double> w = {-2.4, -2.8, -2.6, 0.1,
                           1.6,  1.9,  1.9}; // steps -4.8 -5.6 -5.2 0.2 3.2 3.8 3.8
  std::vector<double> q = {-2.0, -2.0, -2.0, 0.0, 1.5, 1.5, 1.5};
  int64_t cols = int64_t(w.size());
  std::vector<double> h(size_t(cols * cols), 0.0);
  for (int64_t i = 0; i < cols; ++i)
    h[size_t(i * cols + i)] = 1;
  LutRefit f = refitLutTable(g, {LutRow{w.data(), q.data(), h.data()}}, cols);
  ASSERT_TRUE(f.refitted);
  EXPECT_LT(f.lossAfter, f.lossBefore);
  EXPECT_EQ(g.lut, (std::vector<int64_t>{-5, 0, 4})); // -5.2 and 3.6 rounded; 0 stays
  EXPECT_EQ(q, (std::vector<double>{-2.5, -2.5, -2.5, 0.0, 2.0, 2.0, 2.0}));
}

TEST(LutRefit, NeverRaisesTheLossAndKeepsValuesOnTheTable) {
  std::mt19937 rng(5);
  std::normal_distribution<double> z;
  int64_t cols = 24, n = 400;
  // Correlated inputs: H = 2 X Xᵀ / n.
  std::vector<double> h(size_t(cols * cols), 0.0), x(static_cast<size_t>(cols));
  for (int64_t s = 0; s < n; ++s) {
    double common = z(rng);
    for (double &v : x)
      v = z(rng) + 0.8 * common;
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < cols; ++j)
        h[size_t(i * cols + j)] += 2 * x[size_t(i)] * x[size_t(j)] / double(n);
  }
  for (int trial = 0; trial < 20; ++trial) {
    QuantGrid g;
    g.method = ir::QuantMethod::LutSym;
    g.scale = 1.0 / 64;
    g.qmin = -128;
    g.qmax = 127;
    g.lut = {-90, -40, -10, 0, 20, 60, 100};
    std::vector<double> w(static_cast<size_t>(cols)), q(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] = 0.7 * z(rng);
      q[i] = g.quantize(w[i]);
    }
    std::vector<int64_t> before = g.lut;
    LutRefit f = refitLutTable(g, {LutRow{w.data(), q.data(), h.data()}}, cols);
    EXPECT_LE(f.lossAfter, f.lossBefore);
    if (!f.refitted) {
      EXPECT_EQ(g.lut, before);
    }
    EXPECT_TRUE(std::binary_search(g.lut.begin(), g.lut.end(), int64_t(0)));
    for (double v : q) // every value is an entry of the (new) table
      EXPECT_TRUE(
          std::binary_search(g.lut.begin(), g.lut.end(), int64_t(std::nearbyint(v / g.scale))))
          << v;
  }
}
