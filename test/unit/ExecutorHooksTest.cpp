//===- ExecutorHooksTest.cpp - Partial runs, substitutes and transforms -----===//
//
// What mixed precision's sensitivity pass relies on: a kept run's values let
// runFrom(k) reproduce the full run from any step (and a run stopped before
// step k goes on from it); `substitute` changes a
// weight as its consumers read it (and only then); `transform` replaces
// computed values before anything reads them.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"
#include "runtime/DataIO.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

using namespace tpcc;

namespace {
struct Digits : ::testing::Test {
  void SetUp() override {
    const std::string dir = TPCC_SOURCE_DIR "/examples/";
    model = graph::loadModel(dir + "digits_cnn.onnx", diags);
    ASSERT_TRUE(model && !diags.hasErrors());
    ex = rt::Executor::create(*model, diags);
    ASSERT_TRUE(ex);
    std::string error;
    rt::Tensor all;
    ASSERT_TRUE(rt::readTensorFile(dir + "digits_calib_x.npy", all, error)) << error;
    feed[model->graph.inputs()[0]->name] = all.rows(0, 8);
  }
  static float maxDiff(const rt::Tensor &a, const rt::Tensor &b) {
    EXPECT_EQ(a.shape(), b.shape());
    float d = 0;
    for (int64_t i = 0; i < a.numel(); ++i)
      d = std::max(d, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
    return d;
  }
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<graph::Model> model;
  std::unique_ptr<rt::Executor> ex;
  std::map<std::string, rt::Tensor> feed;
};
} // namespace

TEST_F(Digits, RunFromEveryStepReproducesTheRun) {
  std::vector<rt::Tensor> full, kept, from;
  ASSERT_TRUE(succeeded(ex->run(feed, full, diags)));
  rt::RunOptions keep;
  keep.keep = &kept;
  std::vector<rt::Tensor> again;
  ASSERT_TRUE(succeeded(ex->run(feed, again, diags, keep)));
  ASSERT_EQ(kept.size(), model->graph.values().size());
  EXPECT_EQ(maxDiff(full[0], again[0]), 0.f);
  for (size_t s = 0; s < ex->numSteps(); ++s) {
    ASSERT_TRUE(succeeded(ex->runFrom(s, kept, from, diags)));
    EXPECT_LT(maxDiff(full[0], from[0]), 1e-5f) << "from step " << s;
  }
}

TEST_F(Digits, StoppedRunsGoOnWhereTheyStopped) {
  // stopBefore: a run in stages (what second-order rounding does at every
  // layer) computes what one run does, and each stage leaves the values the
  // steps before it computed and no later one.
  std::vector<rt::Tensor> full, out;
  ASSERT_TRUE(succeeded(ex->run(feed, full, diags)));
  for (size_t cut = 1; cut < ex->numSteps(); ++cut) {
    std::vector<rt::Tensor> state;
    rt::RunOptions first;
    first.keep = &state;
    first.stopBefore = cut;
    ASSERT_TRUE(succeeded(ex->run(feed, out, diags, first)));
    EXPECT_TRUE(out.empty()) << "stopped before step " << cut;
    for (const auto &n : model->graph.nodes()) {
      if (ex->stepOf(*n) < cut)
        continue;
      for (const graph::Value *v : n->outputs)
        EXPECT_FALSE(state[v->id].defined()) << v->name << " before step " << cut;
    }
    rt::RunOptions rest;
    ASSERT_TRUE(succeeded(ex->runFrom(cut, std::move(state), out, diags, rest)));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(maxDiff(full[0], out[0]), 0.f) << "stopped before step " << cut;
  }
}

TEST_F(Digits, SubstituteChangesOnlyTheReader) {
  std::vector<rt::Tensor> full, kept, out;
  rt::RunOptions keep;
  keep.keep = &kept;
  ASSERT_TRUE(succeeded(ex->run(feed, full, diags, keep)));
  // The Gemm's weight, doubled: the logits' matrix part doubles.
  const graph::Node *gemm = nullptr;
  for (const auto &n : model->graph.nodes())
    if (n->opType == "Gemm")
      gemm = n.get();
  ASSERT_TRUE(gemm && gemm->input(1)->constant);
  rt::Tensor w = rt::Tensor::fromGraph(*gemm->input(1)->constant).clone();
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data<float>()[i] *= 2;
  const graph::Value *wv = gemm->input(1);
  auto substitute = [&](const graph::Value &v) -> const rt::Tensor * {
    return &v == wv ? &w : nullptr;
  };
  rt::RunOptions o;
  o.substitute = substitute;
  ASSERT_TRUE(succeeded(ex->runFrom(ex->stepOf(*gemm), kept, out, diags, o)));
  // y = A W' + b = 2 (A W) + b = 2 (y - b) + b = 2y - b.
  rt::Tensor b = rt::Tensor::fromGraph(*gemm->input(2)->constant);
  int64_t classes = full[0].dim(1);
  float worst = 0;
  for (int64_t i = 0; i < full[0].numel(); ++i) {
    float want = 2 * full[0].data<float>()[i] - b.data<float>()[i % classes];
    worst = std::max(worst, std::fabs(out[0].data<float>()[i] - want));
  }
  EXPECT_LT(worst, 1e-4f);
  // A run without the hook still reads the model's own weight.
  ASSERT_TRUE(succeeded(ex->run(feed, out, diags)));
  EXPECT_EQ(maxDiff(full[0], out[0]), 0.f);
}

TEST_F(Digits, TransformReplacesValuesBeforeTheirReaders) {
  std::vector<rt::Tensor> out;
  unsigned calls = 0;
  const graph::Value *logits = model->graph.outputs()[0];
  auto transform = [&](const graph::Value &v, rt::Tensor &t) {
    ++calls;
    if (&v == logits) {
      rt::Tensor z(graph::ElemType::Float, t.shape(), /*zero=*/true);
      t = z;
    }
  };
  std::vector<rt::Tensor> seen;
  auto observe = [&](const graph::Value &v, const rt::Tensor &t) {
    if (&v == logits)
      seen.push_back(t);
  };
  rt::RunOptions o;
  o.transform = transform;
  o.observe = observe;
  ASSERT_TRUE(succeeded(ex->run(feed, out, diags, o)));
  EXPECT_EQ(calls, 1u + model->graph.nodes().size()); // the input and every node's output
  ASSERT_EQ(seen.size(), 1u);
  for (const rt::Tensor &t : {out[0], seen[0]})
    for (int64_t i = 0; i < t.numel(); ++i)
      ASSERT_EQ(t.data<float>()[i], 0.f);
}
