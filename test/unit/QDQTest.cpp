//===- QDQTest.cpp - The QDQ rewrite against the executor -----------------===//
//
// The float models of test/unit/Inputs/qdq (test/tools/make_qdq_models.py) are calibrated
// on their sample input (min/max), rewritten into QDQ form and checked three ways: the
// ONNX checker accepts the written file; the executor computes the fake-quantized float
// model (grid values in, grid values out); ONNX Runtime computes the same numbers with
// its integer kernels (QDQOrtTest.cpp).
//
//===----------------------------------------------------------------------===//
#include "QDQTestUtil.h"

#include "quant/ptq/Quantizer.h"
#include "quant/ptq/qdq/Finish.h"

#include <functional>
#include <set>

using namespace tpcc;
using namespace tpcc::qdq_test;

TEST(QDQ, ConvIsTheFakeQuantizedFloatConv) {
  auto l = load("conv.onnx");
  rt::Tensor x = input("x_img.npy");
  Ranges r;
  std::vector<float> fp = run(*l->m, x, &r);
  quant::QDQSpec s = linearSpec(*l->m, r, "conv", false);
  const graph::Node *conv = l->m->graph.nodes()[0].get();
  ASSERT_TRUE(rewrite(*l, s));
  const graph::Model &m = *l->m;
  EXPECT_EQ(count(m, "QuantizeLinear"), 2u);
  EXPECT_EQ(count(m, "DequantizeLinear"), 4u);
  // The float weights are gone; the integer ones are named after them.
  EXPECT_FALSE(init(m, "W") || init(m, "B"));
  const graph::Tensor *wq = init(m, "W_quantized"), *ws = init(m, "W_scale"),
                      *bq = init(m, "B_quantized"), *bs = init(m, "B_scale");
  ASSERT_TRUE(wq && ws && bq && bs && init(m, "W_zero_point") && init(m, "x_scale"));
  EXPECT_EQ(wq->elem, graph::ElemType::Int8);
  EXPECT_EQ(wq->dims, (std::vector<int64_t>{8, 4, 3, 3}));
  EXPECT_EQ(ws->dims, (std::vector<int64_t>{8}));
  EXPECT_EQ(bq->elem, graph::ElemType::Int32);
  EXPECT_EQ(init(m, "x_zero_point")->elem, graph::ElemType::UInt8);
  // The graph output keeps its name; the Conv writes `y_float`.
  ASSERT_EQ(m.graph.outputs().size(), 1u);
  EXPECT_EQ(m.graph.outputs()[0]->name, "y");
  EXPECT_EQ(m.graph.outputs()[0]->producer->opType, "DequantizeLinear");
  EXPECT_EQ(conv->outputs[0]->name, "y_float"); // and node pointers survive
  for (const auto &n : m.graph.nodes())
    EXPECT_TRUE(n->name != "W_DequantizeLinear" || (n->attr("axis") && !n->attr("axis")->i));
  // Bias scale = x scale * W scale, per channel.
  for (int64_t c = 0; c < 8; ++c)
    EXPECT_FLOAT_EQ(float(bs->at(c)), float(s.activations[0].grid.scale) *
                                          float(s.weights[0].grids[size_t(c)].scale));
  expectValidOnnx(m);

  // The reference: the float model on grid values, its output put on y's grid.
  auto ref = load("conv.onnx");
  mapInit(*ref->m, "W",
          [&](int64_t i, double w) { return s.weights[0].grids[size_t(i / 36)].quantize(w); });
  mapInit(*ref->m, "B", [&](int64_t i, double) { return bq->at(i) * bs->at(i); });
  rt::Tensor xq = x.clone();
  for (int64_t i = 0; i < xq.numel(); ++i)
    xq.data<float>()[i] = float(s.activations[0].grid.quantize(xq.data<float>()[i]));
  std::vector<float> want = run(*ref->m, xq), got = run(m, x);
  const QuantGrid &gy = s.activations[1].grid;
  size_t exact = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    want[i] = float(gy.quantize(want[i]));
    exact += std::fabs(want[i] - got[i]) < 1e-6;
  }
  // Float sums in another order may round a tie the other way: one step.
  EXPECT_LE(maxDiff(want, got), gy.scale * 1.001);
  EXPECT_GE(exact, want.size() * 99 / 100);
  // And a few steps from the float model.
  EXPECT_LE(maxDiff(fp, got), 4 * gy.scale);
}

TEST(QDQ, SharedWeightsGraphOutputsAndInt8Activations) {
  auto l = load("net.onnx");
  rt::Tensor x = input("x_img.npy");
  Ranges r;
  std::vector<float> fp = run(*l->m, x, &r);
  quant::QDQSpec s;
  for (const char *v : {"x", "r1", "r2", "f"})
    s.activations.push_back({v, actGrid(r, v)});
  s.activations.push_back({"y", actGrid(r, "y", true)});
  // W1 feeds c1 (per channel) and c2 (per tensor): two copies. B1 too, as
  // the input scales differ.
  s.weights = {weightGrids(*l->m, "c1", 1, 0), weightGrids(*l->m, "c2", 1, -1),
               weightGrids(*l->m, "fc", 1, 0)};
  s.biases = {{"c1", 2, "x", "c1", 1}, {"c2", 2, "r1", "c2", 1}, {"fc", 2, "f", "fc", 1}};
  ASSERT_TRUE(rewrite(*l, s));
  const graph::Model &m = *l->m;
  EXPECT_FALSE(init(m, "W1"));
  for (const char *t : {"W1_quantized", "W1_quantized_1", "B1_quantized", "B1_quantized_1",
                        "W3_quantized", "C3_quantized"})
    EXPECT_TRUE(init(m, t)) << t;
  EXPECT_EQ(init(m, "W1_scale_1")->dims.size(), 0u);
  EXPECT_EQ(init(m, "y_zero_point")->elem, graph::ElemType::Int8);
  // r1 is a graph output with a reader: both read the DequantizeLinear.
  ASSERT_EQ(m.graph.outputs().size(), 2u);
  EXPECT_EQ(m.graph.outputs()[0]->name, "y");
  const graph::Value *r1 = m.graph.outputs()[1];
  EXPECT_EQ(r1->name, "r1");
  EXPECT_EQ(r1->producer->opType, "DequantizeLinear");
  ASSERT_EQ(r1->uses.size(), 1u);
  EXPECT_EQ(r1->uses[0].node->name, "c2");
  EXPECT_EQ(m.graph.findValue("r1_float")->producer->name, "r1");
  expectValidOnnx(m);
  // A few steps of each output from the float model (the rounding of the
  // inputs and weights adds to the output's own half step: 3.9 steps on r1).
  std::vector<float> got = run(m, x);
  EXPECT_LE(maxDiff(fp, got), 3 * s.activations.back().grid.scale);
  std::vector<float> fp1 = run(*load("net.onnx")->m, x, nullptr, 1), got1 = run(m, x, nullptr, 1);
  EXPECT_LE(maxDiff(fp1, got1), 5 * s.activations[1].grid.scale);
}

TEST(QDQ, OneWeightQuantizedAlikeSharesItsDequantizeLinear) {
  auto l = load("net.onnx");
  quant::QDQSpec s;
  s.weights = {weightGrids(*l->m, "c1", 1, 0), weightGrids(*l->m, "c2", 1, 0)};
  ASSERT_TRUE(rewrite(*l, s));
  EXPECT_EQ(count(*l->m, "DequantizeLinear"), 1u);
  EXPECT_TRUE(init(*l->m, "W1_quantized"));
  EXPECT_FALSE(init(*l->m, "W1_quantized_1"));
  EXPECT_EQ(l->m->graph.findValue("W1_DequantizeLinear_Output")->uses.size(), 2u);
  expectValidOnnx(*l->m);
}

TEST(QDQ, NarrowActivationsAreClippedToTheirGrid) {
  for (bool clip : {true, false}) {
    auto l = load("conv_relu.onnx");
    rt::Tensor x = input("x_img.npy");
    Ranges r;
    run(*l->m, x, &r);
    quant::QDQSpec s;
    QuantGrid g4 = quant::symmetricGrid(std::max(-r["c"].first, r["c"].second) / 4, 4, true);
    s.activations = {{"c", g4}};
    s.clipNarrowActivations = clip;
    ASSERT_TRUE(rewrite(*l, s));
    EXPECT_EQ(count(*l->m, "Clip"), clip ? 1u : 0u);
    expectValidOnnx(*l->m);
    // Relu(DQ(Q(c))): with the Clip, every value is on the 4-bit grid.
    std::vector<float> y = run(*l->m, x);
    bool onGrid = true;
    for (float v : y)
      onGrid &= v <= g4.hi + 1e-6 && std::fabs(v / g4.scale - std::round(v / g4.scale)) < 1e-4;
    EXPECT_EQ(onGrid, clip);
  }
}

TEST(QDQ, LutWeightsStoreTableEntries) {
  auto l = load("conv.onnx");
  quant::WeightQDQ w = weightGrids(*l->m, "conv", 1, -1);
  w.grids[0].lut = {-128, -48, -16, 0, 16, 48, 112};
  ASSERT_TRUE(rewrite(*l, {{}, {w}, {}}));
  const graph::Tensor *q = init(*l->m, "W_quantized");
  ASSERT_TRUE(q);
  std::set<int64_t> table(w.grids[0].lut.begin(), w.grids[0].lut.end()), used;
  for (int64_t i = 0; i < q->numElements(); ++i)
    used.insert(int64_t(q->at(i)));
  EXPECT_TRUE(std::includes(table.begin(), table.end(), used.begin(), used.end()));
  EXPECT_GT(used.size(), 3u);
}

TEST(QDQ, SixteenBitGridsUseComMicrosoftQDQ) {
  auto l = load("conv.onnx");
  rt::Tensor x = input("x_img.npy");
  Ranges r;
  std::vector<float> fp = run(*l->m, x, &r);
  quant::QDQSpec s = linearSpec(*l->m, r, "conv", false);
  s.activations[0].grid = actGrid(r, "x", false, 16);
  s.activations[1].grid = actGrid(r, "y", true, 16);
  s.weights = {weightGrids(*l->m, "conv", 1, 0, 12)};
  ASSERT_TRUE(rewrite(*l, s));
  const graph::Model &m = *l->m;
  EXPECT_EQ(init(m, "x_zero_point")->elem, graph::ElemType::UInt16);
  EXPECT_EQ(init(m, "y_zero_point")->elem, graph::ElemType::Int16);
  EXPECT_EQ(init(m, "W_quantized")->elem, graph::ElemType::Int16);
  EXPECT_EQ(init(m, "B_quantized")->elem, graph::ElemType::Int32);
  EXPECT_EQ(m.opsetVersion("com.microsoft"), 1);
  // 16-bit Q/DQ in com.microsoft; the int32 bias keeps ai.onnx's DequantizeLinear.
  unsigned contrib = 0;
  for (const auto &n : m.graph.nodes())
    if (n->opType == "QuantizeLinear" || n->opType == "DequantizeLinear") {
      bool bias = n->name == "B_DequantizeLinear";
      EXPECT_EQ(n->domain, bias ? "" : "com.microsoft") << n->name;
      contrib += !bias;
    }
  EXPECT_EQ(contrib, 5u);
  expectValidOnnx(m);
  // 12-bit weights and 16-bit activations: far closer to the float model
  // than one step of an 8-bit output grid.
  std::vector<float> got = run(m, x);
  EXPECT_LE(maxDiff(fp, got), actGrid(r, "y", true, 8).scale / 16);
  EXPECT_GT(maxDiff(fp, got), 0.0);
}

TEST(QDQ, ReportsBadSpecsAndLeavesTheModelUnchanged) {
  using Edit = std::function<void(quant::QDQSpec &, graph::Model &)>;
  auto expectError = [](const Edit &edit, const std::string &message) {
    auto l = load("conv.onnx");
    Ranges r;
    run(*l->m, input("x_img.npy"), &r);
    quant::QDQSpec s = linearSpec(*l->m, r, "conv", false);
    edit(s, *l->m);
    size_t nodes = l->m->graph.nodes().size();
    EXPECT_TRUE(failed(quant::rewriteToQDQ(*l->m, s, l->diags))) << message;
    ASSERT_FALSE(l->diags.getDiagnostics().empty()) << message;
    EXPECT_EQ(l->diags.getDiagnostics()[0].message, message);
    EXPECT_EQ(l->m->graph.nodes().size(), nodes);
    EXPECT_TRUE(init(*l->m, "W"));
  };
  using S = quant::QDQSpec;
  using M = graph::Model;
  expectError([](S &s, M &) { s.activations[1].grid.bits = 17; },
              "`y`: 17-bit activations do not fit the 16-bit integers of QDQ models");
  expectError([](S &, M &m) { m.opsets[0].version = 11; },
              "per-axis DequantizeLinear (weight `W` of `conv`) needs ai.onnx opset 13, but "
              "the model imports opset 11; convert the model first");
  expectError([](S &, M &m) { m.opsets[0].version = 9; },
              "QuantizeLinear/DequantizeLinear needs ai.onnx opset 10, but the model imports "
              "opset 9; convert the model first");
  expectError([](S &s, M &) { s.activations[0].value = "nope"; },
              "the model has no tensor `nope` to quantize");
  expectError([](S &s, M &) { s.weights[0].node = "nope"; },
              "the model has no node `nope` to quantize");
  expectError([](S &s, M &) { s.weights[0].inputIndex = 3; },
              "node `conv` has no input 3 to quantize");
  expectError([](S &s, M &) { s.weights[0].inputIndex = 0; },
              "input 0 `x` of node `conv` is not a constant; only constants are stored quantized");
  expectError([](S &s, M &) { s.weights[0].grids.pop_back(); },
              "weight `W` of node `conv`: 7 grids are given for the 8 channels along axis 0");
  expectError([](S &s, M &) { s.activations.erase(s.activations.begin()); },
              "bias input 2 of node `conv`: its input scale comes from `x`, which is not "
              "quantized");
  expectError([](S &s, M &) { s.weights.clear(); },
              "bias input 2 of node `conv`: its weight scales come from input 1 of `conv`, "
              "which is not quantized");
  expectError([](S &s, M &) { s.activations.push_back(s.activations[0]); },
              "`x` is quantized twice");
  expectError([](S &s, M &) { s.biases.push_back(s.biases[0]); },
              "input 2 of node `conv` is quantized twice");
  expectError([](S &s, M &) { s.activations[0].grid.scale = 0; },
              "`x`: the scale 0 is not a positive finite float32");
  expectError([](S &s, M &) { s.weights[0].grids[3].qmax = 300; },
              "`W`: the integers [-128, 300] and zero point 0 do not fit int8");
}

TEST(QDQ, ADeadFiltersBiasFitsInt32) {
  // Channel 3's weights are all 0: its kernel grid is tiny, and its bias of 2
  // would saturate int32 on the accumulator grid (the channel would then compute
  // about 0). fitBiasesInInt32 widens that channel's grid only, as ONNX
  // Runtime's quantizer does, and the bias survives.
  auto l = load("conv.onnx");
  mapInit(*l->m, "W", [](int64_t i, double w) { return i / 36 == 3 ? 0.0 : w; });
  mapInit(*l->m, "B", [](int64_t i, double b) { return i == 3 ? 2.0 : b; });
  rt::Tensor x = input("x_img.npy");
  Ranges r;
  run(*l->m, x, &r);
  quant::QDQSpec s = linearSpec(*l->m, r, "conv", false);
  s.weights[0].grids[3].scale = 1e-12; // what a threshold search gives all zeros
  std::vector<QuantGrid> before = s.weights[0].grids;
  EXPECT_EQ(quant::fitBiasesInInt32(*l->m, s), 1u);
  double sIn = s.activations[0].grid.scale;
  EXPECT_GE(sIn * s.weights[0].grids[3].scale * 2147483647.0, 2.0);
  EXPECT_LE(sIn * s.weights[0].grids[3].scale * 2147483647.0, 2.001);
  for (size_t c = 0; c < before.size(); ++c) {
    if (c != 3) {
      EXPECT_EQ(s.weights[0].grids[c].scale, before[c].scale) << c;
    }
  }
  EXPECT_EQ(quant::fitBiasesInInt32(*l->m, s), 0u); // once is enough
  ASSERT_TRUE(rewrite(*l, s));
  const graph::Tensor *bq = init(*l->m, "B_quantized"), *bs = init(*l->m, "B_scale");
  ASSERT_TRUE(bq && bs);
  EXPECT_LT(std::fabs(bq->at(3)), 2147483647.0);
  EXPECT_NEAR(bq->at(3) * bs->at(3), 2.0, 1e-6);
}
