//===- SecondOrderTest.cpp - Layer-wise second-order rounding --------------===//
//
// roundSecondOrder on synthetic layers: with uncorrelated inputs of equal
// power (H ∝ I) there is nothing to compensate and it rounds to nearest;
// with correlated inputs it lowers the layer loss below nearest rounding,
// every value on its row's grid; inputs that are always zero get weight 0.
// Then through the pipeline: the digits CNN with 4-bit kernels, where the
// rounding brings the logits closer to the float model's than rounding to
// nearest, never raises a layer's loss, and gives the same bytes twice.
// Hutchinson's activation Hessian traces against the exact ones of a linear
// model (y = x W: the trace is ‖W‖² per image).
//
//===----------------------------------------------------------------------===//
#include "quant/learn/gptq/SecondOrder.h"
#include "ir/graph/OnnxIO.h"
#include "quant/core/stats/HessianTrace.h"
#include "quant/learn/gptq/Hessian.h"
#include "runtime/DataIO.h"

#include "test/unit/QuantizeFixture.h"
#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

/// Per-row symmetric 4-bit grids for `w` (rows x cols): threshold max|w|.
std::vector<QuantGrid> rowGrids(const std::vector<double> &w, int64_t rows, int64_t cols) {
  std::vector<QuantGrid> gs;
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0;
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, std::fabs(w[size_t(r * cols + c)]));
    gs.push_back(symmetricGrid(m, 4, true));
  }
  return gs;
}

/// X Xᵀ of `n` inputs x = A z (z standard normal): correlated when A mixes.
std::vector<double> gramOf(int64_t cols, int64_t n, double mix, std::mt19937 &rng) {
  std::normal_distribution<double> z;
  std::vector<double> g(static_cast<size_t>(cols * cols), 0.0), x(static_cast<size_t>(cols));
  for (int64_t s = 0; s < n; ++s) {
    double common = z(rng);
    for (int64_t c = 0; c < cols; ++c)
      x[size_t(c)] = z(rng) + mix * common;
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < cols; ++j)
        g[size_t(i * cols + j)] += x[size_t(i)] * x[size_t(j)];
  }
  return g;
}

/// `n` weights uniform in [-1, 1].
std::vector<double> uniformWeights(int64_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> w(static_cast<size_t>(n));
  for (double &v : w)
    v = u(rng);
  return w;
}

bool onGrid(const QuantGrid &g, double v) {
  double q = v / g.scale;
  return std::fabs(q - std::nearbyint(q)) < 1e-9 && q >= double(g.qmin) - 1e-9 &&
         q <= double(g.qmax) + 1e-9;
}

/// Rounds `w` (its 400 inputs' Σ x xᵀ `xxt`) with and without activation
/// order: the layer loss falls below 0.8 of nearest rounding's, and every
/// value stays on its grid (row r's, or with `index` element (r, c)'s).
void expectRoundsBelowNearest(const std::vector<double> &w, int64_t rows, int64_t cols,
                              const std::vector<QuantGrid> &grids, const std::vector<double> &xxt,
                              const std::vector<uint32_t> *index) {
  for (bool actOrder : {false, true}) {
    std::vector<double> q = w;
    SecondOrderResult res;
    SecondOrderSettings s;
    s.actOrder = actOrder;
    ASSERT_TRUE(roundSecondOrder(q, rows, cols, grids, xxt, 400, s, res, index));
    EXPECT_LT(res.lossRounded, 0.8 * res.lossNearest) << "act order " << actOrder;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        size_t k = index ? (*index)[size_t(r * cols + c)] : size_t(r);
        EXPECT_TRUE(onGrid(grids[k], q[size_t(r * cols + c)])) << r << ", " << c;
      }
  }
}

} // namespace

TEST(SecondOrder, UncorrelatedInputsRoundToNearest) {
  int64_t rows = 6, cols = 10;
  std::mt19937 rng(3);
  std::vector<double> w = uniformWeights(rows * cols, rng);
  std::vector<QuantGrid> grids = rowGrids(w, rows, cols);
  std::vector<double> eye(size_t(cols * cols), 0.0);
  for (int64_t c = 0; c < cols; ++c)
    eye[size_t(c * cols + c)] = 50;
  std::vector<double> q = w;
  SecondOrderResult res;
  ASSERT_TRUE(roundSecondOrder(q, rows, cols, grids, eye, 100, {}, res));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      EXPECT_DOUBLE_EQ(q[size_t(r * cols + c)], grids[size_t(r)].quantize(w[size_t(r * cols + c)]));
  EXPECT_DOUBLE_EQ(res.lossRounded, res.lossNearest);
}

TEST(SecondOrder, CorrelatedInputsLowerTheLayerLoss) {
  int64_t rows = 16, cols = 24;
  std::mt19937 rng(5);
  std::vector<double> w = uniformWeights(rows * cols, rng);
  std::vector<QuantGrid> grids = rowGrids(w, rows, cols);
  expectRoundsBelowNearest(w, rows, cols, grids, gramOf(cols, 400, 2.0, rng), nullptr);
}

TEST(SecondOrder, BlockedGridsKeepEachElementOnItsBlock) {
  // Blocks of 8 columns, each with its own grid (GPTQ's static groups): the
  // rounding lowers the loss and leaves every value on its block's grid.
  int64_t rows = 6, cols = 24, block = 8, blocks = cols / block;
  std::mt19937 rng(11);
  std::vector<double> w = uniformWeights(rows * cols, rng);
  for (int64_t r = 0; r < rows; ++r) // blocks of different ranges
    for (int64_t c = 0; c < cols; ++c)
      w[size_t(r * cols + c)] *= 0.2 + double(c / block);
  std::vector<QuantGrid> grids;
  std::vector<uint32_t> index;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < blocks; ++b) {
      double m = 0;
      for (int64_t c = b * block; c < (b + 1) * block; ++c)
        m = std::max(m, std::fabs(w[size_t(r * cols + c)]));
      grids.push_back(symmetricGrid(m, 4, true));
    }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      index.push_back(uint32_t(r * blocks + c / block));
  expectRoundsBelowNearest(w, rows, cols, grids, gramOf(cols, 400, 2.0, rng), &index);
}

TEST(SecondOrder, InputsThatAreAlwaysZeroGetWeightZero) {
  int64_t rows = 4, cols = 6;
  std::mt19937 rng(9);
  std::vector<double> xxt = gramOf(cols, 200, 1.0, rng);
  for (int64_t c = 0; c < cols; ++c) // input 2 never fires
    xxt[size_t(2 * cols + c)] = xxt[size_t(c * cols + 2)] = 0;
  std::vector<double> w(size_t(rows * cols), 0.37);
  std::vector<QuantGrid> grids(1, symmetricGrid(1.0, 4, true));
  SecondOrderResult res;
  ASSERT_TRUE(roundSecondOrder(w, rows, cols, grids, xxt, 200, {}, res));
  EXPECT_EQ(res.deadInputs, 1);
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_EQ(w[size_t(r * cols + 2)], 0.0);
}

namespace {

class SecondOrderPipeline : public test::DigitsQuantizeTest {
protected:
  /// The digits CNN with 4-bit kernels (optionally with second-order
  /// rounding): the mean squared error of its logits against the float
  /// model's on the 450 held-out digits.
  double logitError(quant::QuantizeOutcome &out, bool secondOrder) {
    r.recipe.weightsBits = 4;
    if (secondOrder)
      r.stages.push_back(std::make_shared<quant::SecondOrderStage>(SecondOrderSettings()));
    EXPECT_TRUE(succeeded(quant::quantizeModel(r, out, c->diags)));
    r.stages.clear();
    rt::Tensor x;
    std::string error;
    EXPECT_TRUE(rt::readTensorFile(kExamples + "digits_test_x.npy", x, error)) << error;
    auto q = rt::Executor::create(*out.quantModel, c->diags);
    auto f = rt::Executor::create(*out.floatModel, c->diags);
    std::vector<rt::Tensor> yq, yf;
    std::string in = q->requiredInputs().front()->name;
    EXPECT_TRUE(succeeded(q->run({{in, x}}, yq, c->diags)));
    EXPECT_TRUE(succeeded(f->run({{in, x}}, yf, c->diags)));
    double e = 0;
    for (int64_t i = 0; i < yq[0].numel(); ++i)
      e += std::pow(double(yq[0].data<float>()[i]) - yf[0].data<float>()[i], 2);
    return e / double(yq[0].numel());
  }
};

} // namespace

TEST_F(SecondOrderPipeline, DigitsLogitsComeCloserToTheFloatModel) {
  quant::QuantizeOutcome nearest, rounded, again;
  double before = logitError(nearest, false), after = logitError(rounded, true);
  // Measured: 0.173 -> 0.099.
  EXPECT_LT(after, 0.8 * before) << "nearest " << before << ", second order " << after;
  const quant::SecondOrderReport *so = rounded.reportOf<quant::SecondOrderReport>();
  ASSERT_TRUE(so);
  EXPECT_EQ(so->layers.size(), 4u);
  for (const quant::GptqLayerReport &l : so->layers) {
    EXPECT_LE(l.result.lossRounded, l.result.lossNearest) << l.node;
    EXPECT_FALSE(l.singular) << l.node;
  }
  EXPECT_EQ(rounded.result.trainedWeights.size(), 4u); // the plan carries them
  logitError(again, true);
  EXPECT_EQ(test::initializerBytes(*again.quantModel), test::initializerBytes(*rounded.quantModel));
}

TEST(HessianTrace, LinearModelsGiveTheFrobeniusNorm) {
  // y = x W with x [6, 5] and W [5, 3]: J = Wᵀ for every image, so
  // tr(JᵀJ) = ‖W‖²_F; z = 2y makes it 4 ‖W‖²_F at x, and 4 · 3 at y (J = 2I).
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto *g = m.mutable_graph();
  g->set_name("linear");
  auto *x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {6, 5})
    x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  auto *w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(5);
  w->add_dims(3);
  double norm = 0;
  for (int i = 0; i < 15; ++i) {
    float v = 0.1f * float((i * 7) % 11) - 0.4f;
    w->add_float_data(v);
    norm += double(v) * v;
  }
  auto *two = g->add_initializer();
  two->set_name("two");
  two->set_data_type(onnx::TensorProto::FLOAT);
  two->add_float_data(2.f);
  auto *mm = g->add_node();
  mm->set_op_type("MatMul");
  mm->add_input("x");
  mm->add_input("W");
  mm->add_output("y");
  auto *mul = g->add_node();
  mul->set_op_type("Mul");
  mul->add_input("y");
  mul->add_input("two");
  mul->add_output("z");
  g->add_output()->set_name("z");
  SourceManager sm;
  DiagnosticEngine diags(sm);
  graph::LoadOptions lo;
  lo.check = false;
  auto model = graph::loadModelFromBuffer(m.SerializeAsString(), "linear", ".", diags, lo);
  ASSERT_TRUE(model);
  auto ex = rt::Executor::create(*model, diags);
  ASSERT_TRUE(ex);
  rt::Tensor in(graph::ElemType::Float, {6, 5});
  for (int64_t i = 0; i < in.numel(); ++i)
    in.data<float>()[i] = float(i % 4) - 1.5f;
  std::vector<std::map<std::string, rt::Tensor>> feeds{{{"x", in}}, {{"x", in}}};
  std::vector<double> traces;
  std::vector<std::vector<double>> perImage;
  int64_t probes = 0;
  ASSERT_TRUE(succeeded(activationHessianTraces(
      *ex, feeds, {model->graph.findValue("x"), model->graph.findValue("y")}, HutchinsonOptions(),
      traces, probes, diags, &perImage)));
  // Every image's traces, in order; their mean is the traces.
  ASSERT_EQ(perImage.size(), 12u);
  for (size_t p = 0; p < 2; ++p) {
    double mean = 0;
    for (const std::vector<double> &row : perImage)
      mean += row[p] / 12;
    EXPECT_NEAR(mean, traces[p], 1e-9 * traces[p]) << p;
  }
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_NEAR(traces[0], 4 * norm, 0.2 * 4 * norm);
  EXPECT_NEAR(traces[1], 12.0, 0.2 * 12);
  EXPECT_GE(probes, 10);
  EXPECT_LE(probes, 100);
  // The weight Hessian's diagonal (hmse): ∂z_j/∂W_ij = 2 x_i, so the
  // diagonal is 4 x_i² averaged over the images, the same in every column.
  // Each element's estimate is a mean of squares of normal variables (100
  // probes, two batches: about 10 % deviation); a row's three add up.
  std::vector<std::vector<float>> diagonals;
  HutchinsonOptions many;
  many.minProbes = many.maxProbes = 100;
  ASSERT_TRUE(succeeded(weightHessianDiagonals(*ex, feeds, {model->graph.findValue("W")}, many,
                                               diagonals, probes, diags)));
  ASSERT_EQ(diagonals.size(), 1u);
  ASSERT_EQ(diagonals[0].size(), 15u);
  EXPECT_EQ(probes, 100);
  for (int64_t i = 0; i < 5; ++i) {
    double want = 0, row = 0;
    for (int64_t n = 0; n < 6; ++n)
      want += 4.0 * in.data<float>()[n * 5 + i] * in.data<float>()[n * 5 + i] / 6;
    for (int64_t j = 0; j < 3; ++j)
      row += diagonals[0][size_t(i * 3 + j)] / 3;
    EXPECT_NEAR(row, want, 0.2 * want + 1e-6) << i;
  }
}
