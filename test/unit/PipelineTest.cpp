//===- PipelineTest.cpp - The whole quantization through the library API ---===//
//
// `tpcc quantize` and `tpcc apply` without the binary: the stdlib's imx500
// spec compiled by the frontend, the bundled digits CNN and its calibration
// data through quant::quantizeModel, writeOutcome and applyPlan; the measured
// SQNR is checked against an independent run of both models.
//
//===----------------------------------------------------------------------===//
#include "quant/pipeline/Pipeline.h"
#include "frontend/Frontend.h"
#include "ir/graph/OnnxIO.h"
#include "passes/Passes.h"
#include "runtime/DataIO.h"
#include "runtime/Metrics.h"
#include "test/unit/QuantizeFixture.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

using namespace tpcc;

namespace {

class PipelineTest : public test::DigitsQuantizeTest {
protected:
  void SetUp() override {
    DigitsQuantizeTest::SetUp();
    ASSERT_TRUE(!llvm::sys::fs::createUniqueDirectory("tpcc-pipeline", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }
  std::string path(const char *name) const { return std::string(dir.str()) + "/" + name; }

  llvm::SmallString<128> dir;
};

TEST_F(PipelineTest, QuantizesMeasuresAndWrites) {
  quant::QuantizeOutcome out;
  ASSERT_TRUE(succeeded(quant::quantizeModel(r, out, c->diags)));
  EXPECT_FALSE(c->diags.hasErrors());

  // The QDQ copy has quantizers; the float copy has none.
  auto count = [](const graph::Model &m, const char *op) {
    int n = 0;
    for (const auto &node : m.graph.nodes())
      n += node->opType == op;
    return n;
  };
  EXPECT_GT(count(*out.quantModel, "QuantizeLinear"), 0);
  EXPECT_GT(count(*out.quantModel, "DequantizeLinear"), count(*out.quantModel, "QuantizeLinear"));
  EXPECT_EQ(count(*out.floatModel, "QuantizeLinear"), 0);
  EXPECT_EQ(out.result.samples, 200);

  // Every quantized activation of the plan got a grid.
  int filled = 0;
  for (const plan::PlanTensor &t : out.plan.tensors)
    if (t.quantize && t.scale) {
      EXPECT_GT(*t.scale, 0);
      ++filled;
    }
  EXPECT_GT(filled, 3);

  // The output's SQNR, measured by the pipeline on its first samples
  // (--sqnr-samples), against both models run here over the same samples.
  const std::string output = out.floatModel->graph.outputs().front()->name;
  const quant::TensorReport *reported = nullptr;
  for (const quant::TensorReport &t : out.result.tensors)
    if (t.tensor == output && !t.weight)
      reported = &t;
  ASSERT_TRUE(reported && reported->measured);
  auto fx = rt::Executor::create(*out.floatModel, c->diags);
  auto qx = rt::Executor::create(*out.quantModel, c->diags);
  ASSERT_TRUE(fx && qx);
  rt::Tensor data;
  std::string error;
  ASSERT_TRUE(rt::readTensorFile(r.calib.front(), data, error)) << error;
  const std::string in = fx->requiredInputs().front()->name;
  rt::Sqnr sqnr;
  const int64_t measured = out.result.sqnrSamples;
  EXPECT_EQ(measured, std::min<int64_t>(r.measureSamples, 200));
  for (int64_t b = 0; b < measured; b += 50) {
    std::vector<rt::Tensor> fo, qo;
    std::map<std::string, rt::Tensor> feed{{in, data.rows(b, std::min(b + 50, measured))}};
    ASSERT_TRUE(succeeded(fx->run(feed, fo, c->diags)) && succeeded(qx->run(feed, qo, c->diags)));
    sqnr.add(fo.front(), qo.front());
  }
  EXPECT_NEAR(reported->sqnr, sqnr.dB(), 1e-6 * std::abs(sqnr.dB()));
  EXPECT_GT(sqnr.dB(), 15.0); // 8-bit digits CNN: far from noise

  r.output = path("q.onnx");
  r.planOut = path("plan.json");
  r.report = path("report.json");
  ASSERT_TRUE(succeeded(quant::writeOutcome(r, out, c->diags)));
  for (const char *f : {"q.onnx", "plan.json", "report.json"})
    EXPECT_TRUE(llvm::sys::fs::exists(path(f))) << f;
  auto reloaded = graph::loadModel(r.output, c->diags);
  ASSERT_TRUE(reloaded);
  EXPECT_EQ(reloaded->graph.nodes().size(), out.quantModel->graph.nodes().size());

  // The written plan applied to the float model gives the same QDQ model.
  quant::QuantizeResult applied;
  std::unique_ptr<graph::Model> model;
  ASSERT_TRUE(succeeded(
      quant::applyPlan(r.planOut, r.model, path("applied.onnx"), applied, model, c->diags)));
  auto a = llvm::MemoryBuffer::getFile(path("applied.onnx"));
  auto q = llvm::MemoryBuffer::getFile(r.output);
  ASSERT_TRUE(a && q);
  EXPECT_EQ((*a)->getBuffer(), (*q)->getBuffer());
}

TEST_F(PipelineTest, MissingCalibrationDataFailsWithADiagnostic) {
  r.calib = {path("nothing-here.npy")};
  quant::QuantizeOutcome out;
  EXPECT_TRUE(failed(quant::quantizeModel(r, out, c->diags)));
  ASSERT_TRUE(c->diags.hasErrors());
  bool cannotRead = false;
  for (const Diagnostic &d : c->diags.getDiagnostics())
    cannotRead |= d.kind == diag::err_calib_input;
  EXPECT_TRUE(cannotRead);
}

TEST_F(PipelineTest, CapabilitiesMustBindOnnxForTheQuantizer) {
  ir::Capabilities other = *r.capabilities;
  other.framework = "tflite";
  r.capabilities = &other;
  quant::QuantizeOutcome out;
  EXPECT_TRUE(failed(quant::quantizeModel(r, out, c->diags)));
  ASSERT_EQ(c->diags.getNumErrors(), 1u);
  EXPECT_EQ(c->diags.getDiagnostics().front().kind, diag::err_quant_no_onnx_capabilities);
}

} // namespace
