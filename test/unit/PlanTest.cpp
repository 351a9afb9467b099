//===- PlanTest.cpp - The planner on graphs built in the test ---------------===//
//
// Predicate semantics on nodes (schema defaults, constant scalar inputs,
// shapes, `none`), fusing rules (single consumer, graph outputs, longest
// pattern first), Rule 13 at plan time, the input-bit check and --choose,
// each on a small graph built here with the ONNX protobuf classes.
//
//===----------------------------------------------------------------------===//
#include "plan/PredicateEval.h"
#include "test/unit/PlanFixture.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

using namespace tpcc;
using tpcc::test::GraphBuilder;

namespace {

const char *kSpec = R"(
framework fw {
  weight kernel: Conv.input[1] axes(out: 0, in: 1)
  weight bias: Conv.input[2]
  no_quantize Shape
  range Relu [0, inf]
}
platform chip {
  attr k8 = { method: symmetric, bits: 8, per_channel: true }
  config a8 = { activation: { bits: 8 } }
  config a16 = a8 with { activation.bits: 16, input_bits: [8] }
  config wide_in = a8 with { input_bits: [8, 16] }
  config conv8 = a8 with { weights.kernel: k8 }
  config pool = a8 with { preserving: true }
  default [a8]
  opset Conv, Depthwise : [conv8]
  opset Wide : [a16]
  opset Narrow : [a8, wide_in] base a8
  opset Pool : [pool]
  opset Relu, Relu6, Clip, Add
  fuse (Conv | Depthwise) -> (Relu | Relu6)
  fuse Conv -> Relu -> Add
  fuse Add -> Relu
}
capabilities chip_fw = chip on fw {
  Conv      <- Conv where group == 1
  Depthwise <- Conv where group > 1 and group == shape(input[0])[1]
  Relu      <- Relu
  Relu6     <- Clip where input[1] == 0 and input[2] == 6
  Clip      <- Clip where input[2] == none
  Add       <- Add
  Wide      <- Sigmoid
  Narrow    <- Mul
  Pool      <- MaxPool
}
capabilities overlap = chip on fw {
  Relu      <- Clip where input[1] == 0
  Relu6     <- Clip where input[2] == 6
}
)";

class PlanTest : public test::PlanFixture {
protected:
  void SetUp() override {
    // `overlap` covers few opsets on purpose: its Rule 14 warnings are dropped.
    compile(kSpec);
    ASSERT_TRUE(module.findCapabilities("chip_fw"));
  }
  plan::Plan planOf(const GraphBuilder &b, const char *caps = "chip_fw",
                    const plan::Choices &choices = {}) {
    return PlanFixture::planOf(b, caps, choices);
  }
};

} // namespace

TEST_F(PlanTest, DepthwiseVersusRegularConvUsesShapesAndDefaults) {
  GraphBuilder b;
  b.input("x");
  b.conv("dw", "x", "t", /*group=*/4); // group == C_in: depthwise
  b.conv("pw", "t", "y");              // group absent: schema default 1
  b.output("y");
  plan::Plan p = planOf(b);
  EXPECT_EQ(opsetOf(p, "dw"), "Depthwise");
  EXPECT_EQ(opsetOf(p, "pw"), "Conv");
  EXPECT_TRUE(messages().empty());
}

TEST_F(PlanTest, ClipWithConstantInputsAndNone) {
  GraphBuilder b;
  b.input("x");
  b.constant("zero", {}, 0.0f);
  b.constant("six", {}, 6.0f);
  b.node("Clip", "relu6", {"x", "zero", "six"}, {"a"});
  b.node("Clip", "lower_only", {"a", "zero"}, {"b"});  // input[2] absent: none
  b.node("Clip", "dynamic", {"b", "x", "six"}, {"y"}); // input[1] not constant
  b.output("y");
  plan::Plan p = planOf(b);
  EXPECT_EQ(opsetOf(p, "relu6"), "Relu6");
  EXPECT_EQ(opsetOf(p, "lower_only"), "Clip");
  // `input[1] == 0` is false when input[1] is not a constant (unknown), so
  // Relu6 does not match, and `input[2] == none` is false: the default.
  EXPECT_EQ(opsetOf(p, "dynamic"), "(none)");
}

TEST_F(PlanTest, EvaluateTracesEachOperand) {
  GraphBuilder b;
  b.input("x");
  b.conv("pw", "x", "y");
  b.output("y");
  plan::Plan p = planOf(b);
  const ir::OpBinding &bind = module.findCapabilities("chip_fw")->bindings[0];
  std::vector<std::string> trace;
  EXPECT_TRUE(plan::evaluate(*bind.where, *model, *node(p, "pw").node, &trace));
  ASSERT_EQ(trace.size(), 1u);
  EXPECT_EQ(trace[0], "group == 1: group = 1 (the schema default at opset 11) -> true");
}

TEST_F(PlanTest, ConvReluFusedWithFloatIntermediate) {
  GraphBuilder b;
  b.input("x");
  b.conv("conv", "x", "c");
  b.node("Relu", "relu", {"c"}, {"y"});
  b.output("y");
  plan::Plan p = planOf(b);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(node(p, "conv").fusingGroup, 0);
  EXPECT_EQ(node(p, "relu").fusingGroup, 0);
  const plan::PlanTensor *c = p.tensorOf(model->graph.findValue("c"));
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->quantize);
  EXPECT_EQ(c->reason, "inside fusing group 0");
  const plan::PlanTensor *y = p.tensorOf(model->graph.findValue("y"));
  EXPECT_TRUE(y->quantize);
  EXPECT_EQ(y->signedness, ir::Signedness::Unsigned); // range Relu [0, inf]
  // The kernel is per channel along `out`.
  const auto &w = node(p, "conv").weights;
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].slot, "kernel");
  EXPECT_EQ(w[0].axis, 0);
  EXPECT_TRUE(w[0].quantize);
  EXPECT_EQ(w[1].slot, "bias"); // the node has no bias input
  EXPECT_EQ(w[1].input, nullptr);
  EXPECT_FALSE(w[1].quantize);
}

TEST_F(PlanTest, TwoConsumersOrAGraphOutputStopFusing) {
  GraphBuilder b;
  b.input("x");
  b.conv("conv", "x", "c");
  b.node("Relu", "relu", {"c"}, {"r"});
  b.node("Add", "add", {"r", "c"}, {"y"}); // c has two consumers
  b.conv("conv2", "y", "d");
  b.node("Relu", "relu2", {"d"}, {"z"});
  b.output("z");
  b.output("d"); // d is a graph output
  plan::Plan p = planOf(b);
  EXPECT_TRUE(p.groups.empty());
  std::vector<std::string> why = plan::explainFusing(p, node(p, "relu"));
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why[0].find("`c` has 2 consumers"), std::string::npos) << why[0];
  why = plan::explainFusing(p, node(p, "conv2"));
  EXPECT_NE(why[0].find("`d` is a graph output"), std::string::npos) << why[0];
}

TEST_F(PlanTest, LongestPatternFirst) {
  GraphBuilder b;
  b.input("x");
  b.conv("conv", "x", "c");
  b.node("Relu", "relu", {"c"}, {"r"});
  b.node("Add", "add", {"r", "x"}, {"a"});
  b.node("Relu", "relu2", {"a"}, {"y"});
  b.output("y");
  plan::Plan p = planOf(b);
  // Conv -> Relu -> Add wins over Conv -> Relu; Add -> Relu then cannot use
  // `add`, which is taken.
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].nodes.size(), 3u);
  EXPECT_EQ(node(p, "relu2").fusingGroup, -1);
}

TEST_F(PlanTest, AddReluFused) {
  GraphBuilder b;
  b.input("x");
  b.input("z");
  b.node("Add", "add", {"x", "z"}, {"a"});
  b.node("Relu", "relu", {"a"}, {"y"});
  b.output("y");
  plan::Plan p = planOf(b);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].pattern->pattern.size(), 2u);
}

TEST_F(PlanTest, NodeMatchingTwoOpsetsIsAnError) {
  GraphBuilder b;
  b.input("x");
  b.constant("zero", {}, 0.0f);
  b.constant("six", {}, 6.0f);
  b.node("Clip", "clip", {"x", "zero", "six"}, {"y"});
  b.output("y");
  plan::Plan p = planOf(b, "overlap");
  EXPECT_TRUE(c.diags.hasErrors());
  ASSERT_EQ(messages().size(), 1u);
  EXPECT_EQ(messages()[0], "m.onnx: node 'clip' (Clip): the node matches two opsets: `Relu` "
                           "(binding `Relu <- Clip where input[1] == 0`) and `Relu6` (binding "
                           "`Relu6 <- Clip where input[2] == 6`); make their predicates exclusive");
  EXPECT_EQ(c.diags.getDiagnostics()[0].notes.size(), 2u);
}

TEST_F(PlanTest, InputBitsMismatchNamesBothNodesAndTheFix) {
  GraphBuilder b;
  b.input("x");
  b.node("Sigmoid", "sig", {"x"}, {"s"});  // Wide: 16-bit activations
  b.node("Mul", "mul", {"s", "x"}, {"y"}); // Narrow: base takes 8 bits
  b.output("y");
  plan::Plan p = planOf(b);
  ASSERT_EQ(messages().size(), 1u);
  EXPECT_EQ(messages()[0],
            "m.onnx: node 'mul' (Mul): `mul` takes 8-bit inputs (config `a8`), but "
            "its input `s` from `sig` is quantized to 16 bits; fix: config `wide_in` "
            "of `mul` accepts 16 bits");
}

TEST_F(PlanTest, ChoosingTheFixSilencesTheInputBitWarning) {
  GraphBuilder b;
  b.input("x");
  b.node("Sigmoid", "sig", {"x"}, {"s"});
  b.node("Mul", "mul", {"s", "x"}, {"y"});
  b.output("y");
  // The fix the warning above suggests: `wide_in`, Narrow's second config.
  plan::Plan p = planOf(b, "chip_fw", {{"mul", "Narrow.1"}});
  EXPECT_TRUE(messages().empty());
  EXPECT_EQ(node(p, "mul").chosen, 1u);
  EXPECT_EQ(node(p, "mul").config().name, "wide_in");
  EXPECT_EQ(p.tensorOf(model->graph.findValue("y"))->configId, "Narrow.1");
}

TEST_F(PlanTest, BadChoicesAreErrorsAndKeepTheBase) {
  GraphBuilder b;
  b.input("x");
  b.node("Mul", "mul", {"x", "x"}, {"y"});
  b.output("y");
  plan::Plan p =
      planOf(b, "chip_fw", {{"mull", "Narrow.1"}, {"mul", "Narrow.2"}, {"mul", "Narrow.1"}});
  std::vector<std::string> m = messages();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], "m.onnx: --choose `mull=Narrow.1`: the model has no node named `mull`; "
                  "did you mean `mul`?");
  EXPECT_EQ(m[1], "m.onnx: node 'mul' (Mul): --choose `mul=Narrow.2`: `Narrow.2` is not one "
                  "of the node's candidate configs: `Narrow.0` (`a8`), `Narrow.1` (`wide_in`)");
  EXPECT_EQ(m[2], "m.onnx: node 'mul' (Mul): --choose `mul` is given twice, with `Narrow.2` "
                  "and `Narrow.1`; choose each node once");
  EXPECT_EQ(node(p, "mul").chosen, 0u);
}

TEST_F(PlanTest, PreservingOpFollowsItsInput) {
  GraphBuilder b;
  b.input("x");
  b.node("Sigmoid", "sig", {"x"}, {"s"});
  auto *pool = b.node("MaxPool", "pool", {"s"}, {"y"});
  auto *a = pool->add_attribute();
  a->set_name("kernel_shape");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(1);
  a->add_ints(1);
  b.output("y");
  plan::Plan p = planOf(b);
  const plan::PlanTensor *y = p.tensorOf(model->graph.findValue("y"));
  ASSERT_TRUE(y);
  EXPECT_TRUE(y->quantize);
  EXPECT_TRUE(y->preserving);
  EXPECT_EQ(y->bits, 16); // Sigmoid's (Wide) bits, not the pool config's 8
}
