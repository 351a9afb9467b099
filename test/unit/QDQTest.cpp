//===- QDQTest.cpp - The QDQ rewrite against the executor and ORT ---------===//
//
// The float models of test/unit/Inputs/qdq (test/tools/make_qdq_models.py) are calibrated
// on their sample input (min/max), rewritten into QDQ form and checked three ways: the
// ONNX checker accepts the written file; the executor computes the fake-quantized float
// model (grid values in, grid values out); ONNX Runtime, where Node.js and onnxruntime-node
// are installed, fuses the Q/DQ nodes into integer kernels (test/ort/ort_optimized.js)
// and computes the same numbers.
//
//===----------------------------------------------------------------------===//
#include "backends/quantize/QDQ.h"
#include "ir/graph/OnnxIO.h"
#include "runtime/DataIO.h"
#include "runtime/Executor.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <iterator>
#include <set>
#include <sstream>

using namespace tpcc;
using quant::QuantGrid;

namespace {

const std::string kDir = TPCC_SOURCE_DIR "/test/unit/Inputs/qdq/";
const std::string kNodeModules = TPCC_SOURCE_DIR "/.deps/node_modules";
using Ranges = std::map<std::string, std::pair<double, double>>;

struct Loaded {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<graph::Model> m;
};

std::unique_ptr<Loaded> load(const std::string &file) {
  auto l = std::make_unique<Loaded>();
  l->m = graph::loadModel(kDir + file, l->diags);
  EXPECT_TRUE(l->m && !l->diags.hasErrors()) << file;
  return l;
}

rt::Tensor input(const std::string &file) {
  rt::Tensor t;
  std::string error;
  EXPECT_TRUE(rt::readTensorFile(kDir + file, t, error)) << error;
  return t;
}

/// Output 0 of `m` on `x`; with `ranges`, the min/max of every value.
std::vector<float> run(const graph::Model &m, const rt::Tensor &x, Ranges *ranges = nullptr,
                       size_t output = 0) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto ex = rt::Executor::create(m, diags);
  EXPECT_TRUE(ex);
  if (!ex)
    return {};
  rt::RunOptions opts;
  auto observe = [&](const graph::Value &v, const rt::Tensor &t) {
    if (t.elem() != graph::ElemType::Float || !t.numel())
      return;
    auto [lo, hi] = std::minmax_element(t.data<float>(), t.data<float>() + t.numel());
    (*ranges)[v.name] = {*lo, *hi};
  };
  if (ranges)
    opts.observe = observe;
  std::vector<rt::Tensor> out;
  EXPECT_TRUE(ex->run({{"x", x}}, out, diags, opts));
  for (const Diagnostic &d : diags.getDiagnostics())
    ADD_FAILURE() << d.message;
  if (out.size() <= output)
    return {};
  const float *p = out[output].data<float>();
  return std::vector<float>(p, p + out[output].numel());
}

QuantGrid actGrid(const Ranges &r, const std::string &v, bool isSigned = false, int bits = 8) {
  auto [lo, hi] = r.at(v);
  return isSigned ? quant::symmetricGrid(std::max(-lo, hi), bits, true)
                  : quant::uniformGrid(lo, hi, bits);
}

/// Symmetric signed grids of the weight at input `index` of `node`: one per
/// channel along `axis`, or one (axis -1).
quant::WeightQDQ weightGrids(const graph::Model &m, const std::string &node, unsigned index,
                             int64_t axis, int bits = 8) {
  auto n = std::find_if(m.graph.nodes().begin(), m.graph.nodes().end(),
                        [&](const auto &k) { return k->name == node; });
  const graph::Tensor &t = *(*n)->inputs[index]->constant;
  int64_t channels = axis < 0 ? 1 : t.dims[size_t(axis)], inner = 1;
  for (size_t d = size_t(axis + 1); d < t.dims.size(); ++d)
    inner *= t.dims[d];
  std::vector<double> maxAbs(size_t(channels), 0);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    double &a = maxAbs[size_t(axis < 0 ? 0 : (i / inner) % channels)];
    a = std::max(a, std::fabs(t.at(i)));
  }
  quant::WeightQDQ w{node, index, axis, {}};
  for (double a : maxAbs)
    w.grids.push_back(quant::symmetricGrid(a, bits, true));
  return w;
}

/// Conv or Gemm `node` fully quantized: input, weights per channel (axis 0),
/// int32 bias, output.
quant::QDQSpec linearSpec(const graph::Model &m, const Ranges &r, const std::string &node,
                          bool signedActs, bool bias = true) {
  quant::QDQSpec s;
  s.activations = {{"x", actGrid(r, "x", signedActs)}, {"y", actGrid(r, "y", signedActs)}};
  s.weights = {weightGrids(m, node, 1, 0)};
  if (bias)
    s.biases = {{node, 2, "x", node, 1}};
  return s;
}

bool rewrite(Loaded &l, const quant::QDQSpec &s) {
  bool ok = quant::rewriteToQDQ(*l.m, s, l.diags);
  for (const Diagnostic &d : l.diags.getDiagnostics())
    ADD_FAILURE() << d.message;
  return ok;
}

unsigned count(const graph::Model &m, const std::string &op) {
  auto &ns = m.graph.nodes();
  return unsigned(std::count_if(ns.begin(), ns.end(), [&](auto &n) { return n->opType == op; }));
}

const graph::Tensor *init(const graph::Model &m, const std::string &name) {
  const graph::Value *v = m.graph.findValue(name);
  return v && v->isInitializer ? v->constant : nullptr;
}

std::string tempFile(const char *suffix) {
  llvm::SmallString<64> path;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("qdq", suffix, path));
  return std::string(path);
}

/// Writes the model and loads it again with the ONNX checker and shape
/// inference on: no diagnostics.
void expectValidOnnx(const graph::Model &m) {
  std::string path = tempFile("onnx"), error;
  ASSERT_TRUE(graph::writeModel(m, path, error)) << error;
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto again = graph::loadModel(path, diags);
  llvm::sys::fs::remove(path);
  EXPECT_TRUE(again);
  for (const Diagnostic &d : diags.getDiagnostics())
    ADD_FAILURE() << d.message;
}

double maxDiff(const std::vector<float> &a, const std::vector<float> &b) {
  EXPECT_EQ(a.size(), b.size());
  double d = a.empty() || a.size() != b.size() ? INFINITY : 0;
  for (size_t i = 0; i < a.size() && a.size() == b.size(); ++i)
    d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

/// Overwrites float initializer `name` of `m` with `f(i, value)`.
template <typename F> void mapInit(graph::Model &m, const std::string &name, F f) {
  for (const auto &t : m.graph.initializers())
    if (t->name == name)
      for (int64_t i = 0; i < t->numElements(); ++i) {
        float v = float(f(i, t->at(i)));
        std::memcpy(t->raw.data() + 4 * i, &v, 4);
      }
}

} // namespace

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
    EXPECT_FALSE(quant::rewriteToQDQ(*l->m, s, l->diags)) << message;
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

//===----------------------------------------------------------------------===//
// ONNX Runtime
//===----------------------------------------------------------------------===//

namespace {

const char *const kNoOrt = "Node.js or onnxruntime-node is missing (scripts/setup installs them)";

/// The operators in `s`, sorted (ORT writes nodes in an order of its own).
std::multiset<std::string> opsOf(const std::string &s) {
  std::istringstream in(s);
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

/// Rewrites `file` with `makeSpec`, runs it on `xFile` through the executor and
/// test/ort/ort_optimized.js ('extended'): ORT's optimized graph must hold `ops`
/// (`domain:op` outside ai.onnx), its output be one step of the output grid from
/// ours at most (integer kernels round their own way). False without ORT.
template <typename F>
bool checkOrt(const char *file, const char *xFile, const std::string &ops, F makeSpec) {
  if (std::system("command -v node >/dev/null 2>&1") != 0 ||
      !llvm::sys::fs::exists(kNodeModules + "/onnxruntime-node"))
    return false;
  auto l = load(file);
  rt::Tensor x = input(xFile);
  Ranges ranges;
  run(*l->m, x, &ranges);
  quant::QDQSpec s = makeSpec(*l->m, ranges);
  EXPECT_TRUE(rewrite(*l, s));
  std::string model = tempFile("onnx"), out = tempFile("out"), error, text;
  EXPECT_TRUE(graph::writeModel(*l->m, model, error)) << error;
  std::string cmd = "NODE_PATH='" + kNodeModules + "' node '" TPCC_SOURCE_DIR
                    "/test/ort/ort_optimized.js' '" + model + "' --out '" + out + "' x='" +
                    kDir + xFile + "' 2>/dev/null";
  if (FILE *p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p))
      text.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << cmd;
  }
  std::string line = text.substr(std::min(text.find("ops: ") + 5, text.size()));
  EXPECT_EQ(opsOf(line.substr(0, line.find('\n'))), opsOf(ops)) << file;
  rt::Tensor y;
  EXPECT_TRUE(rt::readTensorFile(out + "0.npy", y, error)) << error;
  std::vector<float> ort(y.data<float>(), y.data<float>() + y.numel());
  EXPECT_LE(maxDiff(run(*l->m, x), ort), s.activations.back().grid.scale * 1.001);
  for (const std::string &f : {model, out, out + "0.npy"})
    llvm::sys::fs::remove(f);
  return true;
}

const char *const kFused = "QuantizeLinear QLinearConv DequantizeLinear";
const char *const kFloatConv = "DequantizeLinear DequantizeLinear QuantizeLinear "
                               "DequantizeLinear com.microsoft:FusedConv QuantizeLinear "
                               "DequantizeLinear";

} // namespace

TEST(QDQOrt, ConvFusesIntoQLinearConvAndAgrees) {
  // uint8 and int8 activations alike (per-channel int8 weights, int32 bias).
  for (bool signedActs : {false, true})
    if (!checkOrt("conv.onnx", "x_img.npy", kFused, [&](const graph::Model &m, const Ranges &r) {
          return linearSpec(m, r, "conv", signedActs);
        }))
      GTEST_SKIP() << kNoOrt;
}

TEST(QDQOrt, FloatBiasIsQuantizedByOrtItself) {
  // onnxruntime 1.30 quantizes a float bias between DequantizeLinear'd
  // input and weights to int32 itself: the Conv still becomes QLinearConv.
  if (!checkOrt("conv.onnx", "x_img.npy", kFused, [](const graph::Model &m, const Ranges &r) {
        return linearSpec(m, r, "conv", false, /*bias=*/false);
      }))
    GTEST_SKIP() << kNoOrt;
}

TEST(QDQOrt, ReluBeforeTheQuantizerFusesOnlyWhenItsZeroPointIsTheMinimum) {
  // Q/DQ after the Relu only: ORT drops the Relu when the zero point is the
  // grid's minimum (uint8 zero point 0), and fuses Conv into QLinearConv.
  // A signed symmetric grid (int8 zero point 0) keeps the Relu meaningful:
  // Conv+Relu run in float (FusedConv) between the DequantizeLinear nodes.
  for (bool signedOut : {false, true})
    if (!checkOrt("conv_relu.onnx", "x_img.npy", signedOut ? kFloatConv : kFused,
                  [&](const graph::Model &m, const Ranges &r) {
                    quant::QDQSpec s = linearSpec(m, r, "conv", false);
                    s.activations[1].grid = quant::symmetricGrid(r.at("y").second, 8, signedOut);
                    return s;
                  }))
      GTEST_SKIP() << kNoOrt;
}

TEST(QDQOrt, NarrowActivationClipStaysFloat) {
  // The Clip of a 4-bit activation is not redundant with its 8-bit
  // QuantizeLinear: ORT keeps it (folded into a float FusedConv), and the
  // Conv does not become QLinearConv.
  if (!checkOrt("conv.onnx", "x_img.npy", kFloatConv, [](const graph::Model &m, const Ranges &r) {
        quant::QDQSpec s = linearSpec(m, r, "conv", false);
        s.activations[1].grid = actGrid(r, "y", false, 4);
        return s;
      }))
    GTEST_SKIP() << kNoOrt;
}

TEST(QDQOrt, GemmFusesIntoQGemmAndMatMulIntoQLinearMatMul) {
  // int32 bias with uint8 and int8 activations, and a float bias.
  for (auto [bias, signedActs] : {std::pair{true, false}, {true, true}, {false, false}})
    if (!checkOrt("gemm.onnx", "x_vec.npy", "QuantizeLinear com.microsoft:QGemm DequantizeLinear",
                  [&](const graph::Model &m, const Ranges &r) {
                    return linearSpec(m, r, "fc", signedActs, bias);
                  }))
      GTEST_SKIP() << kNoOrt;
  for (bool signedActs : {false, true})
    if (!checkOrt("matmul.onnx", "x_vec.npy", "QuantizeLinear QLinearMatMul DequantizeLinear",
                  [&](const graph::Model &m, const Ranges &r) {
                    quant::QDQSpec s = linearSpec(m, r, "mm", signedActs, false);
                    s.weights = {weightGrids(m, "mm", 1, 1)}; // W is [K, N]: per column
                    return s;
                  }))
      GTEST_SKIP() << kNoOrt;
}

TEST(QDQOrt, SixteenBitOutputRunsInOrt) {
  // ORT runs com.microsoft's 16-bit QuantizeLinear/DequantizeLinear; the Conv
  // before a 16-bit output is not an 8-bit integer kernel, so it runs in float.
  const char *ops = "QuantizeLinear DequantizeLinear DequantizeLinear DequantizeLinear Conv "
                    "com.microsoft:QuantizeLinear com.microsoft:DequantizeLinear";
  if (!checkOrt("conv.onnx", "x_img.npy", ops, [](const graph::Model &m, const Ranges &r) {
        quant::QDQSpec s = linearSpec(m, r, "conv", false);
        s.activations[1].grid = actGrid(r, "y", true, 16);
        return s;
      }))
    GTEST_SKIP() << kNoOrt;
}
