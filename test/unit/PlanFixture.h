//===- PlanFixture.h - Planning graphs built in a test ----------*- C++ -*-===//
//
// The fixture of the planner tests: a spec compiled from text (platform
// `chip`, framework `fw`), graphs from GraphBuilder planned with one of its
// capabilities, and look-ups of the plan's nodes by name.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_TEST_UNIT_PLANFIXTURE_H
#define TPCC_TEST_UNIT_PLANFIXTURE_H

#include "ir/graph/OnnxIO.h"
#include "passes/Passes.h"
#include "plan/Plan.h"
#include "test/unit/GraphBuilder.h"
#include "test/unit/TestUtil.h"

#include <gtest/gtest.h>

namespace tpcc::test {

class PlanFixture : public ::testing::Test {
protected:
  /// Compiles `spec` (file name chip.tpc); the warnings it gives are
  /// dropped, errors fail the test.
  void compile(const char *spec) {
    c.files.push_back(parseBuffer(c, "chip.tpc", spec));
    module = buildModule(c);
    ASSERT_FALSE(c.diags.hasErrors());
    std::string sink;
    llvm::raw_string_ostream os(sink);
    c.diags.print(os);
  }
  void TearDown() override {
    if (HasFailure())
      test_util::printDiagnostics(c);
  }
  /// Loads `b`'s model and plans it for `chip` with capabilities `caps`.
  plan::Plan planOf(const GraphBuilder &b, const char *caps, const plan::Choices &choices = {}) {
    model = graph::loadModelFromBuffer(b.bytes(), "m.onnx", ".", c.diags);
    EXPECT_TRUE(model);
    if (!model)
      return {};
    return plan::buildPlan(module, *module.findPlatform("chip"), *module.findCapabilities(caps),
                           module.findFramework("fw"), *model, c.diags, choices);
  }
  const plan::PlanNode &node(const plan::Plan &p, const std::string &name) {
    for (const plan::PlanNode &n : p.nodes)
      if (n.node->displayName() == name)
        return n;
    ADD_FAILURE() << "no node " << name;
    return p.nodes.front();
  }
  std::string opsetOf(const plan::Plan &p, const std::string &name) {
    const plan::PlanNode &n = node(p, name);
    return n.opset ? n.opset->name : "(none)";
  }
  const plan::PlanTensor *tensor(const plan::Plan &p, const char *name) {
    return p.tensorOf(model->graph.findValue(name));
  }
  std::vector<std::string> messages() {
    std::vector<std::string> out;
    for (const Diagnostic &d : c.diags.getDiagnostics())
      out.push_back(d.where + ": " + d.message);
    return out;
  }

  Compilation c;
  ir::Module module;
  std::unique_ptr<graph::Model> model;
};

} // namespace tpcc::test

#endif
