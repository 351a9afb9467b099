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

#include <gtest/gtest.h>

#include <cmath>
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

} // namespace

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
