//===- QuantCorrectionsTest.cpp - Model corrections keep the float model ---===//
//
// The recipe's corrections (quant/ptq/corrections/Corrections.h) on the models of
// test/lit/quantize/Inputs/corrections (test/tools/make_correction_models.py):
// the pre-statistics corrections must leave the float outputs unchanged, and
// so must the graph edits together with their compensation (shift_negative:
// Add(+delta), bias - delta * sum W, padding with delta; input_scaling:
// Mul(t/m), kernel * m/t), the borders of padded convolutions included. The
// lit tests corrections-*.test show what each changes in the QDQ model.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"
#include "quant/core/GraphEdits.h"
#include "quant/core/stats/Histogram.h"
#include "quant/ptq/corrections/Corrections.h"
#include "quant/ptq/corrections/Replay.h"
#include "runtime/DataIO.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

const std::string kInputs = TPCC_SOURCE_DIR "/test/lit/quantize/Inputs/corrections/";

struct Loaded {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<graph::Model> model;
};

std::unique_ptr<Loaded> load(const std::string &name) {
  auto l = std::make_unique<Loaded>();
  l->model = graph::loadModel(kInputs + name + ".onnx", l->diags);
  EXPECT_TRUE(l->model && !l->diags.hasErrors());
  return l;
}

/// The outputs of `l` (one after another) on the first 8 samples of
/// NAME_calib.npy.
std::vector<float> run(Loaded &l, const std::string &name) {
  rt::Tensor x;
  std::string error;
  EXPECT_TRUE(rt::readTensorFile(kInputs + name + "_calib.npy", x, error)) << error;
  auto ex = rt::Executor::create(*l.model, l.diags);
  EXPECT_TRUE(ex);
  std::vector<rt::Tensor> out;
  if (!ex || failed(ex->run({{"x", x.rows(0, 8)}}, out, l.diags)) || out.empty())
    return {};
  std::vector<float> all;
  for (const rt::Tensor &t : out)
    all.insert(all.end(), t.data<float>(), t.data<float>() + t.numel());
  return all;
}

void expectClose(const std::vector<float> &a, const std::vector<float> &b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(a[i])));
  }
  EXPECT_LE(worst, tol * scale) << "largest difference " << worst << " of " << scale;
}

const graph::Node *nodeNamed(const graph::Model &m, const std::string &name) {
  for (const auto &n : m.graph.nodes())
    if (n->name == name)
      return n.get();
  return nullptr;
}

unsigned count(const graph::Model &m, const std::string &op) {
  unsigned n = 0;
  for (const auto &node : m.graph.nodes())
    n += node->opType == op;
  return n;
}

/// The bias shift_negative gives Conv `node` for an input shifted by
/// `delta`: b <- b - delta * sum W[o] (what the quantizer computes).
std::vector<float> compensatedBias(const graph::Model &m, const std::string &node, double delta) {
  const graph::Node *c = nodeNamed(m, node);
  const graph::Tensor &w = *c->input(1)->constant, &b = *c->input(2)->constant;
  int64_t outs = w.dims[0], per = w.numElements() / outs;
  std::vector<float> compensated(static_cast<size_t>(outs));
  for (int64_t o = 0; o < outs; ++o) {
    double sum = 0;
    for (int64_t i = 0; i < per; ++i)
      sum += w.at(o * per + i);
    compensated[size_t(o)] = float(b.at(o) - delta * sum);
  }
  return compensated;
}

} // namespace

TEST(QuantCorrections, ReluBoundKeepsOutputsAndBoundsAtEight) {
  auto l = load("relu6");
  std::vector<float> before = run(*l, "relu6");
  PreCorrections pre;
  pre.reluBounds.push_back({"relu6", "conv1", "conv2", 6, 0.75});
  ASSERT_TRUE(succeeded(applyPreStatisticsCorrections(*l->model, pre, l->diags)));
  const graph::Node *clip = nodeNamed(*l->model, "relu6");
  ASSERT_TRUE(clip && clip->input(2) && clip->input(2)->constant);
  EXPECT_EQ(clip->input(2)->constant->at(0), 8.0);
  expectClose(before, run(*l, "relu6"), 1e-5);
  ASSERT_EQ(pre.describe().size(), 1u);
  EXPECT_NE(pre.describe()[0].find("relu_unbound_correction: `relu6` bound 6 -> 8"),
            std::string::npos);
}

TEST(QuantCorrections, ChannelEqualizationKeepsOutputs) {
  auto l = load("ace");
  std::vector<float> before = run(*l, "ace");
  PreCorrections pre;
  pre.equalizations.push_back({"relu", "conv1", "conv2", {1.0 / 30, 0.5, 1, 1}});
  ASSERT_TRUE(succeeded(applyPreStatisticsCorrections(*l->model, pre, l->diags)));
  // The first kernel's channel 0 shrank 30 times.
  const graph::Node *c1 = nodeNamed(*l->model, "conv1");
  auto original = load("ace");
  const graph::Node *o1 = nodeNamed(*original->model, "conv1");
  EXPECT_NEAR(c1->input(1)->constant->at(0) * 30, o1->input(1)->constant->at(0), 1e-4);
  expectClose(before, run(*l, "ace"), 1e-5);
}

TEST(QuantCorrections, ShiftNegativeEditWithCompensationKeepsOutputs) {
  auto l = load("snc");
  std::vector<float> before = run(*l, "snc");
  const double delta = 0.375;
  std::vector<float> compensated = compensatedBias(*l->model, "conv2", delta);
  GraphEdit e;
  e.kind = GraphEdit::ShiftNegative;
  e.value = "a";
  e.node = "hswish_shift_negative";
  e.output = "a_shifted";
  e.constant = delta;
  e.convNode = "conv2";
  e.padNode = "conv2_pad";
  e.padOutput = "a_shifted_padded";
  ASSERT_TRUE(succeeded(applyGraphEdits(*l->model, {e}, {{"conv2", 2, compensated}}, l->diags)));
  EXPECT_EQ(count(*l->model, "Add"), 1u);
  EXPECT_EQ(count(*l->model, "Pad"), 1u);
  const graph::Node *conv = nodeNamed(*l->model, "conv2");
  ASSERT_TRUE(conv && conv->input(0));
  EXPECT_EQ(conv->input(0)->name, "a_shifted_padded");
  for (const graph::Attribute &a : conv->attributes) {
    if (a.name == "pads") {
      EXPECT_EQ(a.ints, std::vector<int64_t>(4, 0));
    }
  }
  expectClose(before, run(*l, "snc"), 1e-5);
  EXPECT_NE(e.describe().find("`conv2` padding made explicit"), std::string::npos);
}

TEST(QuantCorrections, ShiftWithoutPaddingValueChangesBorders) {
  // The same edit but the Conv keeps padding with zeros: the borders differ,
  // which is why the padding must become delta.
  auto l = load("snc");
  std::vector<float> before = run(*l, "snc");
  GraphEdit e;
  e.value = "a";
  e.node = "shift";
  e.output = "a_shifted";
  e.constant = 0.375;
  std::vector<float> compensated = compensatedBias(*l->model, "conv2", e.constant);
  ASSERT_TRUE(succeeded(applyGraphEdits(*l->model, {e}, {{"conv2", 2, compensated}}, l->diags)));
  std::vector<float> after = run(*l, "snc");
  ASSERT_EQ(after.size(), before.size());
  // Interior pixel (1,1) of channel 0, sample 0 agrees; corner (0,0) does not.
  EXPECT_NEAR(after[9], before[9], 1e-4);
  EXPECT_GT(std::abs(after[0] - before[0]), 1e-3);
}

TEST(QuantCorrections, InputScalingEditWithScaledKernelKeepsOutputs) {
  auto l = load("inscale");
  std::vector<float> before = run(*l, "inscale");
  const double factor = 0.125 / 0.07; // t / m
  const graph::Node *c1 = nodeNamed(*l->model, "conv1");
  const graph::Tensor &w = *c1->input(1)->constant;
  std::vector<float> kernel(size_t(w.numElements()));
  for (int64_t i = 0; i < w.numElements(); ++i)
    kernel[size_t(i)] = float(w.at(i) / factor);
  GraphEdit e;
  e.kind = GraphEdit::InputScaling;
  e.value = "x";
  e.node = "x_input_scaling";
  e.output = "x_scaled";
  e.constant = factor;
  ASSERT_TRUE(succeeded(applyGraphEdits(*l->model, {e}, {{"conv1", 1, kernel}}, l->diags)));
  EXPECT_EQ(count(*l->model, "Mul"), 1u);
  EXPECT_EQ(nodeNamed(*l->model, "conv1")->input(0)->name, "x_scaled");
  expectClose(before, run(*l, "inscale"), 1e-5);
}

TEST(QuantCorrections, EditOfMissingTensorFails) {
  auto l = load("snc");
  GraphEdit e;
  e.value = "nosuch";
  e.node = "n";
  e.output = "o";
  EXPECT_TRUE(failed(applyGraphEdits(*l->model, {e}, {}, l->diags)));
  EXPECT_TRUE(l->diags.hasErrors());
}

namespace {

/// `records` written as JSON text and read back against `l`'s model.
LogicalResult readBack(Loaded &l, const std::vector<llvm::json::Object> &records,
                       RecordedCorrections &out) {
  llvm::json::Array array;
  for (const llvm::json::Object &o : records)
    array.push_back(llvm::json::Object(o));
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(array));
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  EXPECT_TRUE(bool(parsed));
  if (!parsed)
    return failure();
  return readCorrections(*parsed->getAsArray(), "plan.json", *l.model, out, l.diags);
}

QuantGrid grid(double scale, int bits, bool isSigned) {
  return gridFromPlan(ir::QuantMethod::PowerOfTwo, bits, scale, 0, isSigned ? -1 : 0);
}

} // namespace

TEST(QuantCorrections, PreStatisticsRecordsReadBackAsMade) {
  auto l = load("relu6");
  PreCorrections pre;
  pre.reluBounds.push_back({"relu6", "conv1", "conv2", 6, 0.75, 0});
  std::vector<llvm::json::Object> records = recordCorrections(pre, QuantizeResult());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].getString("description").getValueOr("").str(), pre.describe()[0]);
  RecordedCorrections back;
  ASSERT_TRUE(succeeded(readBack(*l, records, back)));
  ASSERT_EQ(back.pre.reluBounds.size(), 1u);
  const ReluBound &b = back.pre.reluBounds[0];
  EXPECT_EQ(std::tie(b.clip, b.first, b.second, b.bound, b.ratio, b.firstOutAxis),
            std::make_tuple(std::string("relu6"), std::string("conv1"), std::string("conv2"), 6.0,
                            0.75, int64_t(0)));

  auto a = load("ace");
  PreCorrections eq;
  eq.equalizations.push_back({"", "conv1", "conv2", {1.0 / 30, 0.5, 1, 1.0 / 3}});
  RecordedCorrections eqBack;
  ASSERT_TRUE(succeeded(readBack(*a, recordCorrections(eq, QuantizeResult()), eqBack)));
  ASSERT_EQ(eqBack.pre.equalizations.size(), 1u);
  EXPECT_EQ(eqBack.pre.equalizations[0].relu, "");
  EXPECT_EQ(eqBack.pre.equalizations[0].factors, eq.equalizations[0].factors); // exactly
}

TEST(QuantCorrections, GraphEditRecordsReadBackAsMade) {
  auto l = load("snc");
  QuantizeResult r;
  GraphEdit e;
  e.value = "a";
  e.node = "hswish_shift_negative";
  e.output = "a_shifted";
  e.constant = 0.375;
  e.convNode = "conv2";
  e.padNode = "conv2_pad";
  e.padOutput = "a_shifted_padded";
  r.edits.push_back(e);
  r.spec.activations = {{"a", grid(std::ldexp(1.0, -12), 16, true)},
                        {"a_shifted", grid(1.0 / 32, 8, false)},
                        {"a_shifted_padded", grid(1.0 / 32, 8, false)}};
  RecordedCorrections back;
  ASSERT_TRUE(succeeded(readBack(*l, recordCorrections({}, r), back)));
  ASSERT_EQ(back.edits.size(), 1u);
  const GraphEdit &b = back.edits[0];
  EXPECT_EQ(
      std::tie(b.kind, b.value, b.node, b.output, b.constant, b.convNode, b.padNode, b.padOutput),
      std::tie(e.kind, e.value, e.node, e.output, e.constant, e.convNode, e.padNode, e.padOutput));
  ASSERT_EQ(back.grids.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.grids[i].value, r.spec.activations[i].value);
    EXPECT_EQ(back.grids[i].grid.scale, r.spec.activations[i].grid.scale);
    EXPECT_EQ(back.grids[i].grid.qmin, r.spec.activations[i].grid.qmin);
    EXPECT_EQ(back.grids[i].grid.qmax, r.spec.activations[i].grid.qmax);
  }
  EXPECT_TRUE(back.kernels.empty());

  // The same edit again adds names the first one took.
  RecordedCorrections twice;
  r.edits.push_back(e);
  EXPECT_TRUE(failed(readBack(*l, recordCorrections({}, r), twice)));

  auto s = load("inscale");
  QuantizeResult q;
  GraphEdit scaling;
  scaling.kind = GraphEdit::InputScaling;
  scaling.value = "x";
  scaling.node = "x_input_scaling";
  scaling.output = "x_scaled";
  scaling.constant = 0.125 / 0.07;
  scaling.linear = "conv1";
  q.edits.push_back(scaling);
  q.kernels.push_back({"conv1", 1, std::vector<float>(216, -0.25f)});
  q.spec.activations = {{"x_scaled", grid(1.0 / 1024, 8, true)}};
  RecordedCorrections scaled;
  ASSERT_TRUE(succeeded(readBack(*s, recordCorrections({}, q), scaled)));
  ASSERT_EQ(scaled.kernels.size(), 1u);
  EXPECT_EQ(scaled.kernels[0].values, q.kernels[0].values);
  EXPECT_EQ(scaled.edits[0].constant, scaling.constant);
  EXPECT_EQ(scaled.moved, std::set<std::string>{"x"});
}

TEST(QuantCorrections, ChannelVariance) {
  TensorStats s(1);
  // Two batches of [1, 2, 2]: channel 0 {1, 3} then {5, 7}; channel 1 constant 2.
  float a[] = {1, 3, 2, 2}, b[] = {5, 7, 2, 2};
  s.add(a, {1, 2, 2});
  s.add(b, {1, 2, 2});
  std::vector<double> v = s.channelVariance();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_DOUBLE_EQ(v[0], 5.0); // mean 4, E[x^2] = (1 + 9 + 25 + 49) / 4 = 21
  EXPECT_DOUBLE_EQ(v[1], 0.0);
  EXPECT_EQ(s.channelMean(), (std::vector<double>{4, 2}));
}

// smooth_quant's edits (the LayerNormalization's scale and bias divided, the two
// layers reading it, one through a Transpose, multiplied) keep the float outputs;
// so does the Mul of a spelled RMSNorm. Factors 10 to 0.1, as for outlier channels.
TEST(QuantCorrections, SmoothingKeepsOutputs) {
  auto l = load("smooth");
  std::vector<float> before = run(*l, "smooth");
  PreCorrections pre;
  std::vector<double> factors;
  for (int j = 0; j < 16; ++j)
    factors.push_back(j % 3 ? 0.1 * (j + 1) : 10.0);
  pre.smoothings.push_back({"h", {{"ln", 1}, {"ln", 2}}, {"q", "k"}, {0, 0}, factors, 0.5, 3.0});
  pre.smoothings.push_back({"r", {{"rms", 1}}, {"up"}, {0}, factors, 0.5, 3.0});
  ASSERT_TRUE(succeeded(applyPreStatisticsCorrections(*l->model, pre, l->diags)));
  const graph::Node *ln = nodeNamed(*l->model, "ln");
  auto original = load("smooth");
  const graph::Node *o = nodeNamed(*original->model, "ln");
  EXPECT_NEAR(ln->input(1)->constant->at(0) * 10, o->input(1)->constant->at(0), 1e-5);
  expectClose(before, run(*l, "smooth"), 1e-5);
  ASSERT_EQ(pre.describe().size(), 2u);
  EXPECT_NE(pre.describe()[0].find("smooth_quant: `h` -> `q`, `k` (alpha 0.50"), std::string::npos);
}
