//===- CleanupTest.cpp - The clean-up transforms keep the model's outputs --===//
//
// test/lit/run/Inputs/cleanup.onnx (made by test/tools/make_models.py) holds
// Conv->BN, ConvTranspose(group 2)->BN, Gemm(transB, beta 0.5)->BN, an
// Identity, a Dropout and a constant subgraph (Constant -> Mul). Each
// transform must remove what it targets and leave the outputs unchanged on
// real data, and the result must still pass the ONNX checker.
//
//===----------------------------------------------------------------------===//
#include "transforms/Cleanup.h"
#include "ir/graph/OnnxIO.h"
#include "runtime/DataIO.h"
#include "runtime/Executor.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tpcc;

namespace {

const std::string kInputs = TPCC_SOURCE_DIR "/test/lit/run/Inputs/";

struct Loaded {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<graph::Model> model;
};

std::unique_ptr<Loaded> load(const std::string &file) {
  auto l = std::make_unique<Loaded>();
  l->model = graph::loadModel(kInputs + file, l->diags);
  EXPECT_TRUE(l->model && !l->diags.hasErrors());
  return l;
}

std::vector<float> run(Loaded &l) {
  rt::Tensor x;
  std::string error;
  EXPECT_TRUE(rt::readTensorFile(kInputs + "x.npy", x, error)) << error;
  auto ex = rt::Executor::create(*l.model, l.diags);
  EXPECT_TRUE(ex);
  if (!ex)
    return {};
  std::vector<rt::Tensor> out;
  EXPECT_TRUE(succeeded(ex->run({{"x", x}}, out, l.diags)));
  if (out.empty())
    return {};
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + out[0].numel());
}

unsigned count(const graph::Model &m, const std::string &op) {
  unsigned n = 0;
  for (const auto &node : m.graph.nodes())
    n += node->opType == op;
  return n;
}

void expectClose(const std::vector<float> &a, const std::vector<float> &b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-5 * std::max(1.0f, std::fabs(a[i]))) << "element " << i;
}

/// Writes the model and loads it again with the checker on.
void expectValidOnnx(const graph::Model &m) {
  llvm::SmallString<64> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("cleanup", "onnx", path));
  std::string error;
  ASSERT_TRUE(graph::writeModel(m, path, error)) << error;
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto again = graph::loadModel(path, diags);
  llvm::sys::fs::remove(path);
  ASSERT_TRUE(again);
  for (const Diagnostic &d : diags.getDiagnostics())
    ADD_FAILURE() << d.message;
}

} // namespace

TEST(Cleanup, FoldsBatchNormsIntoConvConvTransposeAndGemm) {
  auto l = load("cleanup.onnx");
  std::vector<float> before = run(*l);
  EXPECT_EQ(transforms::foldBatchNorms(*l->model), 3u);
  EXPECT_EQ(count(*l->model, "BatchNormalization"), 0u);
  // The folded weights are new initializers; the originals, unused now, are gone.
  for (const auto &t : l->model->graph.initializers())
    EXPECT_NE(t->name, "W1");
  const graph::Value *w1 = l->model->graph.findValue("W1");
  EXPECT_TRUE(!w1 || !w1->constant);
  expectClose(before, run(*l));
  expectValidOnnx(*l->model);
}

TEST(Cleanup, FoldsPerChannelArithmeticIntoTheLayerBefore) {
  // cleanup_affine.onnx: Conv -> Mul -> Add (constant first), depthwise Conv ->
  // Div(scalar) -> Sub, Gemm -> Add fold; a Mul whose constant varies along the
  // width and an Add of a Conv output read twice stay.
  auto l = load("cleanup_affine.onnx");
  std::vector<float> before = run(*l);
  unsigned arithmetic = 0;
  EXPECT_EQ(transforms::foldBatchNorms(*l->model, &arithmetic), 0u);
  EXPECT_EQ(arithmetic, 5u);
  EXPECT_EQ(count(*l->model, "Div"), 0u);
  EXPECT_EQ(count(*l->model, "Sub"), 0u);
  EXPECT_EQ(count(*l->model, "Mul"), 1u); // `wide`
  EXPECT_EQ(count(*l->model, "Add"), 2u); // `shared`, `skip`
  for (const auto &n : l->model->graph.nodes())
    if (n->name == "fc" || n->name == "dw")
      EXPECT_TRUE(n->input(2) && n->input(2)->constant) << n->name << " has no bias";
  expectClose(before, run(*l));
  expectValidOnnx(*l->model);
}

TEST(Cleanup, RemovesIdentityAndInferenceDropout) {
  auto l = load("cleanup.onnx");
  std::vector<float> before = run(*l);
  EXPECT_EQ(transforms::removeIdentities(*l->model), 2u);
  EXPECT_EQ(count(*l->model, "Identity"), 0u);
  EXPECT_EQ(count(*l->model, "Dropout"), 0u);
  expectClose(before, run(*l));
  expectValidOnnx(*l->model);
}

TEST(Cleanup, FoldsConstantSubgraphs) {
  auto l = load("cleanup.onnx");
  std::vector<float> before = run(*l);
  transforms::CleanupReport r;
  ASSERT_TRUE(succeeded(transforms::foldConstants(*l->model, l->diags, r)));
  EXPECT_EQ(r.folded, 1u); // Mul(k, k)
  EXPECT_EQ(r.dead, 1u);   // the Constant node, now unused
  EXPECT_EQ(count(*l->model, "Mul"), 0u);
  EXPECT_EQ(count(*l->model, "Constant"), 0u);
  const graph::Value *k2 = l->model->graph.findValue("k2");
  ASSERT_TRUE(k2 && k2->constant);
  EXPECT_FLOAT_EQ(float(k2->constant->at(4)), 0.25f);
  expectClose(before, run(*l));
  expectValidOnnx(*l->model);
}

TEST(Cleanup, AllTogether) {
  auto l = load("cleanup.onnx");
  std::vector<float> before = run(*l);
  transforms::CleanupReport r;
  ASSERT_TRUE(succeeded(transforms::cleanupModel(*l->model, l->diags, r)));
  EXPECT_EQ(r.batchNorms, 3u);
  EXPECT_EQ(r.identities, 2u);
  // The Add of the folded Mul(k, k) is a bias of the Gemm before it.
  EXPECT_EQ(r.arithmetic, 1u);
  // Conv, Relu, ConvTranspose, GlobalAveragePool, Flatten, Gemm.
  EXPECT_EQ(l->model->graph.nodes().size(), 6u);
  expectClose(before, run(*l));
  expectValidOnnx(*l->model);
}

TEST(Cleanup, KeepsAnIdentityThatNamesAGraphOutput) {
  auto l = load("cleanup.onnx");
  graph::Graph &g = l->model->graph;
  // Make the Identity's output a graph output too.
  g.addOutput(g.findValue("i2"));
  EXPECT_EQ(transforms::removeIdentities(*l->model), 1u); // only the Dropout
  EXPECT_EQ(count(*l->model, "Identity"), 1u);
}
