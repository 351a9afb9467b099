//===- MicroBatchTest.cpp - Sample-separable models, split batches -------===//
//
// BatchAxis: small graphs one node away from separable, each way. The
// runner: on the shared models, a batch split into micro-batches (on one and
// on two threads) computes exactly its micro-batches and the whole batch
// within float rounding, allocates nothing from its second run on, and runs
// whole with hooks or a batch of 1.
//
//===----------------------------------------------------------------------===//
#include "runtime/MicroBatch.h"
#include "ir/graph/OnnxIO.h"
#include "runtime/BatchAxis.h"
#include "runtime/DataIO.h"
#include "runtime/KernelUtil.h"
#include "test/unit/GraphBuilder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

using namespace tpcc;
using tpcc::test::GraphBuilder;

namespace {

/// x[N,4,4,4] -> Conv -> Relu -> (what `tail` adds, reading "r", writing "y").
bool separable(const std::function<void(GraphBuilder &)> &tail, std::string *why = nullptr,
               bool symbolic = true) {
  GraphBuilder b;
  if (symbolic)
    b.symbolicBatch();
  b.input("x");
  b.conv("c", "x", "h");
  b.node("Relu", "r", {"h"}, {"r"});
  tail(b);
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto m = graph::loadModelFromBuffer(b.bytes(), "m.onnx", ".", diags);
  EXPECT_TRUE(m) << "the test graph does not load";
  std::string reason;
  bool ok = m && rt::sampleSeparable(*m, &reason);
  if (why)
    *why = reason;
  return ok;
}

void outputAs(GraphBuilder &b, const std::string &value) {
  b.node("Identity", "out", {value}, {"y"});
  b.output("y");
}

} // namespace

TEST(BatchAxis, PerSampleOperatorsKeepTheSamplesApart) {
  EXPECT_TRUE(separable([](GraphBuilder &b) { outputAs(b, "r"); }));
  // A constant broadcast with a leading 1 or a lower rank.
  EXPECT_TRUE(separable([](GraphBuilder &b) {
    b.constant("k", {1, 4, 1, 1});
    b.node("Mul", "mul", {"r", "k"}, {"m"});
    outputAs(b, "m");
  }));
  // Reduction over the channels, Transpose that leaves axis 0, Reshape
  // copying it.
  EXPECT_TRUE(separable([](GraphBuilder &b) {
    b.ints("axes", {1});
    b.node("ReduceSum", "red", {"r", "axes"}, {"s"});
    b.ints("shape", {0, -1});
    b.node("Reshape", "re", {"s", "shape"}, {"t"});
    b.ints("back", {0, 1, 1, 1});
    b.node("Reshape", "re2", {"t", "back"}, {"u"});
    auto *tr = b.node("Transpose", "tr", {"u"}, {"v"});
    GraphBuilder::intsAttr(tr, "perm", {0, 1, 3, 2});
    b.node("Identity", "out", {"v"}, {"y"});
    b.output("y", 1);
  }));
}

TEST(BatchAxis, ContribQuantizersKeepTheSamplesApart) {
  // ONNX Runtime's com.microsoft QuantizeLinear/DequantizeLinear (a 16-bit
  // grid before opset 21) are per-sample as ONNX's are; another domain's
  // operator is not known to be.
  auto qdq = [](const char *domain) {
    return [domain](GraphBuilder &b) {
      b.importDomain(domain);
      b.constant("scale", {}, 0.25f);
      b.node("QuantizeLinear", "q", {"r", "scale"}, {"rq"})->set_domain(domain);
      b.node("DequantizeLinear", "dq", {"rq", "scale"}, {"rd"})->set_domain(domain);
      outputAs(b, "rd");
    };
  };
  EXPECT_TRUE(separable(qdq("com.microsoft")));
  std::string why;
  EXPECT_FALSE(separable(qdq("com.example"), &why));
  EXPECT_NE(why.find("`q`"), std::string::npos) << why;
}

TEST(BatchAxis, OperatorsThatMixSamplesAreNamed) {
  std::string why;
  EXPECT_FALSE(separable(
      [](GraphBuilder &b) {
        b.ints("axes", {0});
        b.node("ReduceSum", "red", {"r", "axes"}, {"s"});
        outputAs(b, "s");
      },
      &why));
  EXPECT_NE(why.find("`red`"), std::string::npos) << why;
  // A per-sample constant of the full rank: its rows meet other samples.
  EXPECT_FALSE(separable([](GraphBuilder &b) {
    b.constant("k", {2, 4, 4, 4});
    b.node("Add", "add", {"r", "k"}, {"a"});
    outputAs(b, "a");
  }));
  // The batch size as data.
  EXPECT_FALSE(separable([](GraphBuilder &b) {
    b.node("Shape", "sh", {"r"}, {"s"});
    GraphBuilder::intAttr(b.node("Cast", "ca", {"s"}, {"f"}), "to", 1);
    b.node("Add", "add", {"r", "f"}, {"a"});
    outputAs(b, "a");
  }));
  // Reshape to a fixed first dimension, Softmax over axis 0, a Transpose
  // that moves it.
  EXPECT_FALSE(separable([](GraphBuilder &b) {
    b.ints("shape", {2, -1});
    b.node("Reshape", "re", {"r", "shape"}, {"t"});
    outputAs(b, "t");
  }));
  EXPECT_FALSE(separable([](GraphBuilder &b) {
    auto *n = b.node("Softmax", "sm", {"r"}, {"s"});
    GraphBuilder::intAttr(n, "axis", 0);
    outputAs(b, "s");
  }));
  EXPECT_FALSE(separable([](GraphBuilder &b) {
    auto *n = b.node("Transpose", "tr", {"r"}, {"s"});
    GraphBuilder::intsAttr(n, "perm", {1, 0, 2, 3});
    outputAs(b, "s");
  }));
  // An input whose batch the model fixes.
  EXPECT_FALSE(separable([](GraphBuilder &b) { outputAs(b, "r"); }, &why, false));
  EXPECT_NE(why.find("fixes its batch"), std::string::npos) << why;
}

namespace {
const std::string kModels = TPCC_SOURCE_DIR "/../shared/models/";

/// `n` samples of the shared Fashion-MNIST calibration set.
rt::Tensor samples(int64_t n) {
  rt::Tensor all;
  std::string error;
  EXPECT_TRUE(rt::readTensorFile(kModels + "fashion_calib_x.npy", all, error)) << error;
  return all.rows(0, n);
}
} // namespace

TEST(MicroBatch, SplitRunsComputeTheMicroBatchesOfTheWholeBatch) {
  // A split run is exactly its micro-batches run one after another on one
  // thread, bit for bit; against the whole batch, float kernels may round
  // differently (oneDNN's AVX2 kernels do: a batch of 8 and one of 64 differ
  // in the last bits there, as they do without splitting).
  if (!std::filesystem::exists(kModels + "fashion_calib_x.npy"))
    GTEST_SKIP() << "no shared models at " << kModels;
  for (const char *name : {"fashion_cnn", "fashion_mbv2"}) {
    SourceManager sm;
    DiagnosticEngine diags(sm);
    auto m = graph::loadModel(kModels + name + std::string(".onnx"), diags);
    ASSERT_TRUE(m);
    auto whole = rt::Executor::create(*m, diags), split = rt::Executor::create(*m, diags);
    ASSERT_TRUE(whole && split);
    rt::MicroBatchRunner runner(*split);
    EXPECT_EQ(runner.unsplitReason(), "") << name;
    const std::string in = m->graph.inputs()[0]->name;
    rt::Tensor x = samples(64);
    std::vector<rt::Tensor> batch;
    ASSERT_TRUE(succeeded(whole->run({{in, x}}, batch, diags)));
    ASSERT_EQ(batch.size(), 1u);
    for (int threads : {1, 2}) {
      rt::ThreadScope scope(threads);
      int64_t size = runner.microBatchSize(64, threads);
      ASSERT_LT(size, 64) << name;
      std::vector<uint8_t> want; // the micro-batches, one by one
      for (int64_t b = 0; b < 64; b += size) {
        rt::ThreadScope one(1);
        std::vector<rt::Tensor> part;
        ASSERT_TRUE(succeeded(whole->run({{in, x.rows(b, b + size)}}, part, diags)));
        const uint8_t *p = static_cast<const uint8_t *>(part[0].raw());
        want.insert(want.end(), p, p + part[0].bytes());
      }
      uint64_t allocations = 0;
      for (int run = 0; run < 3; ++run) {
        if (run == 2)
          allocations = runner.memoryStats().systemAllocations;
        std::vector<rt::Tensor> got;
        ASSERT_TRUE(succeeded(runner.run({{in, x}}, got, diags)));
        EXPECT_EQ(runner.lastMicroBatches(), 64 / size) << name;
        EXPECT_EQ(runner.lastMicroBatches() % threads, 0) << name;
        ASSERT_EQ(got.size(), 1u);
        ASSERT_EQ(got[0].shape(), batch[0].shape());
        ASSERT_EQ(got[0].bytes(), want.size());
        EXPECT_EQ(0, std::memcmp(got[0].raw(), want.data(), want.size()))
            << name << " on " << threads << " threads";
        for (int64_t i = 0; i < got[0].numel(); ++i) {
          float g = got[0].data<float>()[i], w = batch[0].data<float>()[i];
          ASSERT_LE(std::fabs(g - w), 1e-5f * std::max(1.f, std::fabs(w))) << name << " at " << i;
        }
      }
      EXPECT_EQ(runner.memoryStats().systemAllocations, allocations) << name;
    }
  }
}

TEST(MicroBatch, HookedRunsAndSingleSamplesRunWhole) {
  if (!std::filesystem::exists(kModels + "fashion_calib_x.npy"))
    GTEST_SKIP() << "no shared models at " << kModels;
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto m = graph::loadModel(kModels + "fashion_cnn.onnx", diags);
  ASSERT_TRUE(m);
  auto ex = rt::Executor::create(*m, diags);
  ASSERT_TRUE(ex);
  rt::MicroBatchRunner runner(*ex);
  const std::string in = m->graph.inputs()[0]->name;
  std::vector<rt::Tensor> out;
  unsigned seen = 0;
  rt::RunOptions hooked;
  auto observe = [&](const graph::Value &, const rt::Tensor &t) { seen += t.dim(0) == 64; };
  hooked.observe = observe;
  ASSERT_TRUE(succeeded(runner.run({{in, samples(64)}}, out, diags, hooked)));
  EXPECT_EQ(runner.lastMicroBatches(), 1);
  EXPECT_GT(seen, 0u);
  ASSERT_TRUE(succeeded(runner.run({{in, samples(1)}}, out, diags)));
  EXPECT_EQ(runner.lastMicroBatches(), 1);
  EXPECT_EQ(runner.microBatchSize(1, 2), 1);
  ASSERT_TRUE(succeeded(runner.run({{in, samples(64)}}, out, diags)));
  EXPECT_GT(runner.lastMicroBatches(), 1);
}

TEST(TensorSlice, CopiesEntriesAlongAnyAxis) {
  // t[i][j][k] = 100 i + 10 j + k
  rt::Tensor t(graph::ElemType::Float, {2, 3, 4});
  for (int64_t i = 0; i < 24; ++i)
    t.data<float>()[i] = float(100 * (i / 12) + 10 * (i / 4 % 3) + i % 4);
  for (int axis = 0; axis < 3; ++axis) {
    int64_t n = t.dim(axis);
    rt::Tensor s = t.slice(axis, 1, n);
    rt::Shape want = t.shape();
    want[size_t(axis)] = n - 1;
    ASSERT_EQ(s.shape(), want) << "axis " << axis;
    for (int64_t i = 0; i < want[0]; ++i)
      for (int64_t j = 0; j < want[1]; ++j)
        for (int64_t k = 0; k < want[2]; ++k) {
          int64_t idx[3] = {i, j, k};
          idx[axis] += 1;
          EXPECT_EQ(s.data<float>()[(i * want[1] + j) * want[2] + k],
                    float(100 * idx[0] + 10 * idx[1] + idx[2]))
              << "axis " << axis;
        }
  }
  EXPECT_EQ(t.slice(1, 2, 2).numel(), 0);
  EXPECT_EQ(t.rows(1, 2).data<float>()[0], 100.0f);
}
