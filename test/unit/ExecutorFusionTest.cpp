//===- ExecutorFusionTest.cpp - Fused chains, blocked layouts, the pool -----===//
//
// test/unit/Inputs/fusion/fusion.onnx (make_fusion.py) has every chain
// Fusion.h fuses into a convolution and values that stay in oneDNN's blocked
// layout between convolutions and poolings. A run that watches every value computes the
// model node by node in plain layouts; the fused run must agree with it
// within float rounding, the hooks must see exactly the values they watch,
// and a second run at the same batch must allocate no tensor memory. The
// shared MobileNetV2/V3-style model checks the same on a trained network.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"
#include "runtime/DataIO.h"
#include "runtime/Executor.h"
#include "test/unit/GraphBuilder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

using namespace tpcc;

namespace {

struct Loaded {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<graph::Model> model;
  std::unique_ptr<rt::Executor> ex;
  explicit Loaded(const std::string &path) {
    model = graph::loadModel(path, diags);
    if (model && !diags.hasErrors())
      ex = rt::Executor::create(*model, diags);
  }
};

/// The largest |a - b| / max(1, |b|) over the elements.
float maxRelative(const rt::Tensor &a, const rt::Tensor &b) {
  EXPECT_EQ(a.shape(), b.shape());
  float worst = 0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i) {
    float x = a.data<float>()[i], y = b.data<float>()[i];
    worst = std::max(worst, std::fabs(x - y) / std::max(1.f, std::fabs(y)));
  }
  return worst;
}

float maxAbs(const rt::Tensor &t) {
  float m = 0;
  for (int64_t i = 0; i < t.numel(); ++i)
    m = std::max(m, std::fabs(t.data<float>()[i]));
  return m;
}

/// Runs `bytes` on x fused and watching every value (unfused); checks that
/// `fusedNodes` nodes fuse and that both runs give the same bytes.
void sameBitsFusedAndUnfused(const std::string &bytes, const rt::Tensor &x, unsigned fusedNodes) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto m = graph::loadModelFromBuffer(bytes, "m.onnx", ".", diags);
  ASSERT_TRUE(m);
  auto ex = rt::Executor::create(*m, diags);
  ASSERT_TRUE(ex);
  EXPECT_EQ(ex->fusedNodes(), fusedNodes);
  std::vector<rt::Tensor> fused, plain;
  ASSERT_TRUE(succeeded(ex->run({{"x", x}}, fused, diags)));
  rt::RunOptions every;
  every.observe = [](const graph::Value &, const rt::Tensor &) {};
  ASSERT_TRUE(succeeded(ex->run({{"x", x}}, plain, diags, every)));
  ASSERT_EQ(fused.size(), plain.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    ASSERT_EQ(fused[i].bytes(), plain[i].bytes());
    EXPECT_EQ(0, std::memcmp(fused[i].raw(), plain[i].raw(), plain[i].bytes())) << "output " << i;
  }
}

/// The exact GELU: x / a (Div) or x * a (Mul), Erf, + 1, then the product
/// with x and the scale b in the order `scaleFirst` says.
std::string geluGraph(bool divides, bool scaleFirst, float one = 1.f, bool exposeErf = false) {
  test::GraphBuilder b;
  b.input("x");
  b.output("y");
  if (exposeErf)
    b.output("e");
  b.constant("a", {}, divides ? 1.4142135f : 0.70710678f);
  b.constant("one", {}, one);
  b.constant("half", {}, 0.5f);
  b.node(divides ? "Div" : "Mul", "scale", {"x", "a"}, {"t"});
  b.node("Erf", "erf", {"t"}, {"e"});
  b.node("Add", "plus", {"one", "e"}, {"p"});
  if (scaleFirst) {
    b.node("Mul", "halve", {"half", "x"}, {"h"});
    b.node("Mul", "product", {"p", "h"}, {"y"});
  } else {
    b.node("Mul", "product", {"x", "p"}, {"m"});
    b.node("Mul", "halve", {"m", "half"}, {"y"});
  }
  return b.bytes();
}

} // namespace

TEST(ExecutorFusion, GeluRunsAsOneStepWithTheSameBits) {
  rt::Tensor x(graph::ElemType::Float, {1, 4, 4, 4});
  for (int64_t i = 0; i < x.numel(); ++i) // -6 .. 6, both erf branches, and edges
    x.data<float>()[i] = float(i - 32) * 0.19f + (i % 5 == 0 ? 0.013f : 0.f);
  x.data<float>()[0] = 0.f;
  x.data<float>()[1] = -0.f;
  x.data<float>()[2] = 1e30f;
  x.data<float>()[3] = -1e30f;
  for (bool divides : {true, false})
    for (bool scaleFirst : {true, false})
      sameBitsFusedAndUnfused(geluGraph(divides, scaleFirst), x, 4);
  // Not GELU: + 2 instead of + 1; Erf's output read by the caller too.
  sameBitsFusedAndUnfused(geluGraph(true, false, 2.f), x, 0);
  sameBitsFusedAndUnfused(geluGraph(true, false, 1.f, true), x, 0);
}

TEST(ExecutorFusion, EveryChainAgreesWithTheUnfusedRun) {
  const std::string dir = TPCC_SOURCE_DIR "/test/unit/Inputs/fusion/";
  Loaded l(dir + "fusion.onnx");
  ASSERT_TRUE(l.ex);
  // SiLU 2, HardSwish 2, Add + Relu 2, LeakyRelu/Tanh/HardSigmoid/Clip 4,
  // HardSwish + Add into the graph output 2.
  EXPECT_EQ(l.ex->fusedNodes(), 12u);
  rt::Tensor x;
  std::string error;
  ASSERT_TRUE(rt::readTensorFile(dir + "x.npy", x, error)) << error;

  std::vector<rt::Tensor> fused, plain, partial;
  ASSERT_TRUE(succeeded(l.ex->run({{"x", x}}, fused, l.diags)));
  unsigned seen = 0;
  auto all = [&](const graph::Value &, const rt::Tensor &t) {
    ++seen;
    EXPECT_EQ(t.blocked(), nullptr);
  };
  rt::RunOptions every;
  every.observe = all;
  ASSERT_TRUE(succeeded(l.ex->run({{"x", x}}, plain, l.diags, every)));
  EXPECT_EQ(seen, 1u + l.model->graph.nodes().size());
  ASSERT_EQ(fused.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_GT(maxAbs(plain[i]), 0.1f); // real values, not a degenerate model
    EXPECT_LT(maxRelative(fused[i], plain[i]), 1e-5f) << "output " << i;
  }

  // Watching two values: the hooks see those two, in plain layout, and the
  // chains that do not cross them stay fused.
  std::vector<bool> watched(l.model->graph.values().size(), false);
  std::set<std::string> names;
  for (const char *n : {"s1", "r3"})
    watched[l.model->graph.findValue(n)->id] = true;
  auto some = [&](const graph::Value &v, const rt::Tensor &t) {
    names.insert(v.name);
    EXPECT_EQ(t.blocked(), nullptr);
    EXPECT_TRUE(t.numel() > 0);
  };
  rt::RunOptions two;
  two.observe = some;
  two.watched = &watched;
  ASSERT_TRUE(succeeded(l.ex->run({{"x", x}}, partial, l.diags, two)));
  EXPECT_EQ(names, (std::set<std::string>{"s1", "r3"}));
  EXPECT_LT(maxRelative(partial[0], plain[0]), 1e-5f);
  EXPECT_LT(maxRelative(partial[1], plain[1]), 1e-5f);
}

TEST(ExecutorFusion, SteadyStateRunsAllocateNothing) {
  const std::string dir = TPCC_SOURCE_DIR "/test/unit/Inputs/fusion/";
  Loaded l(dir + "fusion.onnx");
  ASSERT_TRUE(l.ex);
  rt::Tensor x;
  std::string error;
  ASSERT_TRUE(rt::readTensorFile(dir + "x.npy", x, error)) << error;
  std::vector<rt::Tensor> out;
  for (int i = 0; i < 2; ++i) { // the first runs fill the pool
    ASSERT_TRUE(succeeded(l.ex->run({{"x", x}}, out, l.diags)));
    out.clear();
  }
  rt::BufferPool::Stats first = l.ex->memoryStats();
  EXPECT_GT(first.systemAllocations, 0u);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(succeeded(l.ex->run({{"x", x}}, out, l.diags)));
    out.clear();
  }
  rt::BufferPool::Stats later = l.ex->memoryStats();
  EXPECT_EQ(later.systemAllocations, first.systemAllocations);
  EXPECT_GT(later.reuses, first.reuses);
  EXPECT_EQ(later.inUse, 0u); // every buffer went back
  EXPECT_LE(later.held, 2 * later.peakInUse);
}

TEST(ExecutorFusion, SharedMobileNetAgreesFusedAndUnfused) {
  const std::string models = TPCC_SOURCE_DIR "/../shared/models/";
  Loaded l(models + "fashion_mbv2.onnx");
  ASSERT_TRUE(l.ex);
  // Every Clip, SiLU (2 nodes), HardSwish (2 nodes) and the residual Adds.
  EXPECT_GE(l.ex->fusedNodes(), 4u + 2 * 2 + 5 * 2 + 2);
  rt::Tensor all;
  std::string error;
  ASSERT_TRUE(rt::readTensorFile(models + "fashion_calib_x.npy", all, error)) << error;
  rt::Tensor x = all.rows(0, 16);
  std::vector<rt::Tensor> fused, plain;
  ASSERT_TRUE(succeeded(l.ex->run({{"input", x}}, fused, l.diags)));
  rt::RunOptions every;
  auto none = [](const graph::Value &, const rt::Tensor &) {};
  every.observe = none;
  ASSERT_TRUE(succeeded(l.ex->run({{"input", x}}, plain, l.diags, every)));
  EXPECT_GT(maxAbs(plain[0]), 1.f);
  EXPECT_LT(maxRelative(fused[0], plain[0]), 1e-4f);
}

TEST(ExecutorFusion, SharedVitGeluAndBiasSameBitsFusedAndUnfused) {
  const std::string models = TPCC_SOURCE_DIR "/../shared/models/";
  rt::Tensor all;
  std::string error;
  ASSERT_TRUE(rt::readTensorFile(models + "fashion_calib_x.npy", all, error)) << error;
  std::ifstream in(models + "fashion_vit.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());
  // Its input is called `input`: rename it for the helper.
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  for (auto &n : *m.mutable_graph()->mutable_node())
    for (auto &i : *n.mutable_input())
      if (i == "input")
        i = "x";
  m.mutable_graph()->mutable_input(0)->set_name("x");
  // The four blocks' GELUs (four nodes each after the head) and the bias
  // Adds of their three MatMuls.
  sameBitsFusedAndUnfused(m.SerializeAsString(), all.rows(0, 8), 16 + 12);
}

namespace {

/// x[2,3,5,6] -> MatMul(W[6,7]) -> Gather(axis, idx) -> y.
std::string matmulGatherGraph(std::vector<int64_t> idx, bool scalar, int64_t axis) {
  onnx::ModelProto m = test::emptyModel();
  auto *g = m.mutable_graph();
  test::typedValue(g->add_input(), "x", {2, 3, 5, 6});
  std::vector<int64_t> ys = {2, 3, 5, 7};
  int64_t a = axis < 0 ? axis + 4 : axis;
  ys.erase(ys.begin() + a);
  if (!scalar)
    ys.insert(ys.begin() + a, int64_t(idx.size()));
  test::typedValue(g->add_output(), "y", ys);
  test::waveInitializer(*g, "w", {6, 7}, 0.7f);
  test::int64Initializer(*g, "idx", idx, scalar);
  test::addNode(*g, "MatMul", {"x", "w"}, "p");
  auto *gather = test::addNode(*g, "Gather", {"p", "idx"}, "y");
  test::GraphBuilder::intAttr(gather, "axis", axis);
  return m.SerializeAsString();
}

} // namespace

TEST(ExecutorFusion, MatMulBeforeAGatherOfItsRowsComputesOnlyThose) {
  rt::Tensor x(graph::ElemType::Float, {2, 3, 5, 6});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = std::cos(0.3f * float(i)) * float(1 + i % 7);
  // A language model's last position; a list with a repeat and a negative
  // index, on the axis counted from either end.
  sameBitsFusedAndUnfused(matmulGatherGraph({-1}, true, 2), x, 1);
  sameBitsFusedAndUnfused(matmulGatherGraph({4, 0, 4, -2}, false, -2), x, 1);
  // Not rows: the column axis, a batch axis.
  sameBitsFusedAndUnfused(matmulGatherGraph({1}, true, 3), x, 0);
  sameBitsFusedAndUnfused(matmulGatherGraph({1}, true, 1), x, 0);

  // An index out of range fails as the Gather would, naming it.
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto m = graph::loadModelFromBuffer(matmulGatherGraph({5}, true, 2), "m.onnx", ".", diags);
  ASSERT_TRUE(m);
  auto ex = rt::Executor::create(*m, diags);
  ASSERT_TRUE(ex);
  EXPECT_EQ(ex->fusedNodes(), 1u);
  std::vector<rt::Tensor> out;
  EXPECT_TRUE(failed(ex->run({{"x", x}}, out, diags)));
  ASSERT_TRUE(diags.hasErrors());
  const std::string &err = diags.getDiagnostics().back().message;
  EXPECT_NE(err.find("the Gather after this MatMul reads row 5, out of range for 5 rows"),
            std::string::npos)
      << err;
}

TEST(ExecutorFusion, ConstantWeightsPackedOnceGiveTheBitsOfFedWeights) {
  // x[3,40,96] * W[96,200]: W an initializer (reordered once into the
  // primitive's layout) or a graph input (read as it is, every run).
  auto graphWith = [](bool constant) {
    onnx::ModelProto m = test::emptyModel();
    auto *g = m.mutable_graph();
    test::typedValue(g->add_input(), "x", {3, 40, 96});
    test::typedValue(g->add_output(), "y", {3, 40, 200});
    if (constant)
      test::waveInitializer(*g, "w", {96, 200}, 0.37f);
    else
      test::typedValue(g->add_input(), "w", {96, 200});
    test::addNode(*g, "MatMul", {"x", "w"}, "y");
    return m.SerializeAsString();
  };
  rt::Tensor x(graph::ElemType::Float, {3, 40, 96}), w(graph::ElemType::Float, {96, 200});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = std::cos(0.11f * float(i)) * float(1 + i % 13);
  for (int64_t i = 0; i < w.numel(); ++i) // the initializer's values
    w.data<float>()[i] = std::sin(0.37f * float(i + 1));
  std::vector<rt::Tensor> packed[2], fed;
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto mc = graph::loadModelFromBuffer(graphWith(true), "c.onnx", ".", diags);
  auto mf = graph::loadModelFromBuffer(graphWith(false), "f.onnx", ".", diags);
  ASSERT_TRUE(mc && mf);
  auto ec = rt::Executor::create(*mc, diags), ef = rt::Executor::create(*mf, diags);
  ASSERT_TRUE(ec && ef);
  for (auto &out : packed)
    ASSERT_TRUE(succeeded(ec->run({{"x", x}}, out, diags)));
  ASSERT_TRUE(succeeded(ef->run({{"x", x}, {"w", w}}, fed, diags)));
  EXPECT_GT(maxAbs(fed[0]), 1.f);
  for (auto &out : packed) {
    ASSERT_EQ(out[0].bytes(), fed[0].bytes());
    EXPECT_EQ(0, std::memcmp(out[0].raw(), fed[0].raw(), fed[0].bytes()));
  }
}

TEST(ExecutorFusion, MatMulBiasAddsAsThePrimitivesBias) {
  // x[2,5,6] * W[6,7] + bias: a row of 7 (either operand order) is the
  // primitive's bias; a [5,7] matrix is no bias and stays an Add.
  auto graphWith = [](std::vector<int64_t> biasDims, bool biasFirst) {
    onnx::ModelProto m = test::emptyModel();
    auto *g = m.mutable_graph();
    test::typedValue(g->add_input(), "x", {2, 5, 6});
    test::typedValue(g->add_output(), "y", {2, 5, 7});
    test::waveInitializer(*g, "w", {6, 7}, 0.7f, 3.f);
    test::waveInitializer(*g, "b", biasDims, 1.3f, 3.f);
    test::addNode(*g, "MatMul", {"x", "w"}, "p");
    test::addNode(
        *g, "Add",
        biasFirst ? std::vector<std::string>{"b", "p"} : std::vector<std::string>{"p", "b"}, "y");
    return m.SerializeAsString();
  };
  rt::Tensor x(graph::ElemType::Float, {2, 5, 6});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = std::cos(0.3f * float(i)) * float(1 + i % 7);
  sameBitsFusedAndUnfused(graphWith({7}, false), x, 1);
  sameBitsFusedAndUnfused(graphWith({1, 1, 7}, true), x, 1);
  sameBitsFusedAndUnfused(graphWith({5, 7}, false), x, 0);
}

TEST(ExecutorFusion, ConcatAndResizeKeepConvolutionsChannelsLast) {
  // x[1,4,8,8] -> conv a, conv b (1x1); Concat(a, x, b) along the channels
  // (convolution outputs channels-last, the graph input plain); its Shape;
  // Resize to 16 x 16 (linear) and to 11 x 13 (nearest); a convolution of
  // each. The run that keeps layouts must give the bits of the run that
  // watches (and so makes plain) every value.
  onnx::ModelProto m = test::emptyModel();
  auto *g = m.mutable_graph();
  test::typedValue(g->add_input(), "x", {1, 4, 8, 8});
  test::typedValue(g->add_output(), "y", {1, 4, 16, 16});
  test::typedValue(g->add_output(), "z", {1, 4, 11, 13});
  test::typedValue(g->add_output(), "s", {4}, onnx::TensorProto::INT64);
  test::waveInitializer(*g, "wa", {16, 4, 1, 1}, 0.7f);
  test::waveInitializer(*g, "wb", {20, 4, 1, 1}, 1.1f);
  test::waveInitializer(*g, "wy", {4, 40, 3, 3}, 0.3f);
  test::waveInitializer(*g, "wz", {4, 40, 1, 1}, 0.9f);
  test::int64Initializer(*g, "big", {1, 40, 16, 16});
  test::int64Initializer(*g, "odd", {1, 40, 11, 13});
  test::addNode(*g, "Conv", {"x", "wa"}, "a");
  test::addNode(*g, "Conv", {"x", "wb"}, "b");
  test::GraphBuilder::intAttr(test::addNode(*g, "Concat", {"a", "x", "b"}, "cat"), "axis", 1);
  test::addNode(*g, "Shape", {"cat"}, "s");
  auto resize = [&](const char *sizes, const char *mode, const char *out) {
    auto *n = test::addNode(*g, "Resize", {"cat", "", "", sizes}, out);
    auto *a = n->add_attribute();
    a->set_name("mode");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(mode);
  };
  resize("big", "linear", "up");
  resize("odd", "nearest", "near");
  test::GraphBuilder::intsAttr(test::addNode(*g, "Conv", {"up", "wy"}, "y"), "pads", {1, 1, 1, 1});
  test::addNode(*g, "Conv", {"near", "wz"}, "z");
  rt::Tensor x(graph::ElemType::Float, {1, 4, 8, 8});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = std::cos(0.21f * float(i)) * float(1 + i % 5);
  sameBitsFusedAndUnfused(m.SerializeAsString(), x, 0);
}
