//===- QuantizeFixture.h - A quantize request for the digits CNN --*- C++ -*-===//
#ifndef TPCC_TEST_UNIT_QUANTIZEFIXTURE_H
#define TPCC_TEST_UNIT_QUANTIZEFIXTURE_H

#include "frontend/Frontend.h"
#include "passes/Passes.h"
#include "quant/pipeline/Pipeline.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace tpcc::test {

/// The stdlib's imx500 compiled, and a request to quantize the bundled
/// digits CNN with its 200 calibration digits.
class DigitsQuantizeTest : public ::testing::Test {
protected:
  const std::string kExamples = TPCC_SOURCE_DIR "/examples/";
  void SetUp() override {
    FrontendOptions fo;
    fo.stdlibDir = TPCC_STDLIB_SOURCE_DIR;
    c = std::make_unique<Compilation>(fo);
    ASSERT_TRUE(succeeded(loadFiles(*c, {std::string(TPCC_STDLIB_SOURCE_DIR) + "/imx500.tpc"})));
    module = buildModule(*c);
    ASSERT_FALSE(c->diags.hasErrors());
    r.module = &module;
    r.platform = module.findPlatform("imx500");
    ASSERT_TRUE(r.platform);
    r.capabilities = module.capabilitiesFor(*r.platform, "", c->diags);
    ASSERT_TRUE(r.capabilities);
    r.model = kExamples + "digits_cnn.onnx";
    r.calib = {kExamples + "digits_calib_x.npy"};
  }

  std::unique_ptr<Compilation> c;
  ir::Module module;
  quant::QuantizeRequest r;
};

/// Every initializer of `m`, name and bytes (to compare two models' weights).
inline std::string initializerBytes(const graph::Model &m) {
  std::string s;
  for (const auto &t : m.graph.initializers())
    s += t->name + t->raw;
  return s;
}

} // namespace tpcc::test

#endif
