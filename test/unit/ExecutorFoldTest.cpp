//===- ExecutorFoldTest.cpp - Activations folded into convolutions ----------===//
//
// test/lit/run/Inputs/fold.onnx: Conv->Relu and ConvTranspose->Clip fold into
// oneDNN post-ops, and so does the last Conv -> Clip (the Conv computes the
// graph output); a Conv read by two nodes does not. Running with an observer (every value as the
// model defines it) and without (folded) must give the same outputs.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"
#include "runtime/DataIO.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tpcc;

TEST(ExecutorFold, FoldedAndUnfoldedRunsAgree) {
  const std::string in = TPCC_SOURCE_DIR "/test/lit/run/Inputs/";
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto model = graph::loadModel(in + "fold.onnx", diags);
  ASSERT_TRUE(model && !diags.hasErrors());
  auto ex = rt::Executor::create(*model, diags);
  ASSERT_TRUE(ex);
  EXPECT_EQ(ex->fusedNodes(), 3u); // r1, k2 and y
  rt::Tensor x;
  std::string error;
  ASSERT_TRUE(rt::readTensorFile(in + "x.npy", x, error)) << error;

  std::vector<rt::Tensor> folded, plain;
  ASSERT_TRUE(succeeded(ex->run({{"x", x}}, folded, diags)));
  unsigned seen = 0;
  bool clipped = true;
  auto hook = [&](const graph::Value &v, const rt::Tensor &t) {
    ++seen;
    if (v.name == "k2") // the Clip's bounds hold in the unfolded run too
      for (int64_t i = 0; i < t.numel(); ++i)
        clipped &= t.data<float>()[i] >= -0.25f && t.data<float>()[i] <= 0.5f;
  };
  rt::RunOptions observe;
  observe.observe = hook; // function_ref: `hook` outlives the run
  ASSERT_TRUE(succeeded(ex->run({{"x", x}}, plain, diags, observe)));
  EXPECT_EQ(seen, 1u + model->graph.nodes().size()); // the input and every output
  EXPECT_TRUE(clipped);

  ASSERT_EQ(folded.size(), 1u);
  ASSERT_EQ(folded[0].shape(), plain[0].shape());
  const float *a = folded[0].data<float>(), *b = plain[0].data<float>();
  float maxAbs = 0;
  for (int64_t i = 0; i < folded[0].numel(); ++i) {
    EXPECT_NEAR(a[i], b[i], 1e-5f * std::max(1.f, std::fabs(b[i]))) << "element " << i;
    maxAbs = std::max(maxAbs, std::fabs(b[i]));
  }
  EXPECT_GT(maxAbs, 0.f); // the comparison saw real values
}
