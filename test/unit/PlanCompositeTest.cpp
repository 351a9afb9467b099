//===- PlanCompositeTest.cpp - Composite chains in plans -------------------===//
//
// How the planner claims composite chains (language.md 6.1): downstream
// roots first, the larger composite first at one root, a node in at most one
// chain, chains of chains; a chain as one element of a fusing pattern (also
// in the middle of one); inner nodes sharing the root's config; a composite that
// says which operator it is (`is OP`) planned as that operator.
//
//===----------------------------------------------------------------------===//
#include "test/unit/PlanFixture.h"

using namespace tpcc;
using tpcc::test::GraphBuilder;

namespace {

const char *kSpec = R"(
framework fw {
  weight kernel: Conv.input[1] axes(out: 0, in: 1)
  composite SiLU(x) = Mul(x, Sigmoid(x))
  composite ScaledSiLU(x) = Mul(Mul(x, Sigmoid(x)), 2)
  composite OtherSiLU(x) = Mul(Sigmoid(x), x)
  composite ConvBias(x, w, b) = Add(Conv(x, w), b)
  composite L2Norm(x) = Div(x, ReduceL2(x)) is LpNormalization
}
platform chip {
  attr kernel8 = { method: symmetric, bits: 8, per_channel: true }
  config a8 = { activation: { bits: 8 } }
  config a16 = a8 with { activation.bits: 16 }
  config linear8 = a8 with { weights.kernel: kernel8 }
  default [a8]
  opset Conv, Relu, Mul
  opset Swish : [a8, a16] base a8
  opset Scaled, Other
  opset Linear : [linear8]
  opset Lp : [a16]
  fuse Conv -> Swish -> Relu
}
capabilities all = chip on fw {
  Conv   <- Conv
  Relu   <- Relu
  Mul    <- Mul
  Swish  <- SiLU
  Scaled <- ScaledSiLU
  Other  <- OtherSiLU
  Linear <- ConvBias
  Lp     <- LpNormalization
}
capabilities small = chip on fw {
  Conv   <- Conv
  Mul    <- Mul
  Swish  <- SiLU
}
capabilities conditional = chip on fw {
  Lp     <- LpNormalization where p == 2
}
)";

class PlanCompositeTest : public test::PlanFixture {
protected:
  void SetUp() override { compile(kSpec); }
  plan::Plan planOf(const GraphBuilder &b, const char *caps = "all",
                    const plan::Choices &choices = {}) {
    return PlanFixture::planOf(b, caps, choices);
  }
  std::vector<std::string> chainNodes(const plan::Plan &p, size_t i) {
    std::vector<std::string> out;
    for (const graph::Node *n : p.chains.at(i).nodes)
      out.push_back(n->displayName());
    return out;
  }
};

/// x -> Sigmoid -> Mul(x, s) -> Mul(., 2) -> y
GraphBuilder scaledSiLU() {
  GraphBuilder b;
  b.input("x");
  b.constant("two", {}, 2.f);
  b.node("Sigmoid", "sig", {"x"}, {"s"});
  b.node("Mul", "silu", {"x", "s"}, {"m"});
  b.node("Mul", "scale", {"m", "two"}, {"y"});
  b.output("y");
  return b;
}

} // namespace

TEST_F(PlanCompositeTest, TheLargerCompositeWinsAtARoot) {
  plan::Plan p = planOf(scaledSiLU());
  ASSERT_EQ(p.chains.size(), 1u);
  EXPECT_EQ(p.chains[0].composite->name, "ScaledSiLU");
  EXPECT_EQ(chainNodes(p, 0), (std::vector<std::string>{"scale", "silu", "sig"}));
  EXPECT_EQ(opsetOf(p, "scale"), "Scaled");
  EXPECT_FALSE(node(p, "scale").innerOfChain);
  EXPECT_TRUE(node(p, "silu").innerOfChain);
  EXPECT_TRUE(node(p, "sig").innerOfChain);
  // Only the chain's output is quantized.
  EXPECT_TRUE(tensor(p, "y")->quantize);
  EXPECT_FALSE(tensor(p, "m")->quantize);
  EXPECT_FALSE(tensor(p, "s")->quantize);
}

TEST_F(PlanCompositeTest, WithoutTheLargerBindingTheSmallerChainIsFound) {
  plan::Plan p = planOf(scaledSiLU(), "small");
  ASSERT_EQ(p.chains.size(), 1u);
  EXPECT_EQ(p.chains[0].composite->name, "SiLU");
  EXPECT_EQ(chainNodes(p, 0), (std::vector<std::string>{"silu", "sig"}));
  EXPECT_EQ(opsetOf(p, "scale"), "Mul");
  EXPECT_EQ(node(p, "scale").chain, -1);
  EXPECT_TRUE(tensor(p, "m")->quantize);
}

TEST_F(PlanCompositeTest, EqualSizesTakeTheBindingWrittenFirst) {
  // SiLU and OtherSiLU both match (Mul commutes); SiLU is bound first.
  GraphBuilder b;
  b.input("x");
  b.node("Sigmoid", "sig", {"x"}, {"s"});
  b.node("Mul", "silu", {"s", "x"}, {"y"});
  b.output("y");
  plan::Plan p = planOf(b);
  ASSERT_EQ(p.chains.size(), 1u);
  EXPECT_EQ(p.chains[0].composite->name, "SiLU");
  EXPECT_EQ(opsetOf(p, "silu"), "Swish");
}

TEST_F(PlanCompositeTest, ChainsOfChainsInTopologicalOrder) {
  // silu2(silu1(x)): the second SiLU's x is the first one's output.
  GraphBuilder b;
  b.input("x");
  b.node("Sigmoid", "sig1", {"x"}, {"s1"});
  b.node("Mul", "silu1", {"x", "s1"}, {"a"});
  b.node("Sigmoid", "sig2", {"a"}, {"s2"});
  b.node("Mul", "silu2", {"a", "s2"}, {"y"});
  b.output("y");
  plan::Plan p = planOf(b, "small");
  ASSERT_EQ(p.chains.size(), 2u);
  EXPECT_EQ(chainNodes(p, 0), (std::vector<std::string>{"silu1", "sig1"}));
  EXPECT_EQ(chainNodes(p, 1), (std::vector<std::string>{"silu2", "sig2"}));
  EXPECT_EQ(p.chains[1].inputs, (std::vector<const graph::Value *>{model->graph.findValue("a")}));
  EXPECT_TRUE(tensor(p, "a")->quantize);
  EXPECT_TRUE(p.lookalikes.empty());
}

TEST_F(PlanCompositeTest, AChainIsOneElementInTheMiddleOfAFusingPattern) {
  GraphBuilder b;
  b.input("x");
  b.conv("conv", "x", "c");
  b.node("Sigmoid", "sig", {"c"}, {"s"});
  b.node("Mul", "silu", {"c", "s"}, {"a"});
  b.node("Relu", "relu", {"a"}, {"y"});
  b.output("y");
  plan::Plan p = planOf(b);
  ASSERT_EQ(p.groups.size(), 1u);
  std::vector<std::string> names;
  for (unsigned i : p.groups[0].nodes)
    names.push_back(p.nodes[i].node->displayName());
  EXPECT_EQ(names, (std::vector<std::string>{"conv", "silu", "relu"}));
  EXPECT_EQ(node(p, "sig").fusingGroup, -1); // inner nodes are not elements
  EXPECT_FALSE(tensor(p, "c")->quantize);
  EXPECT_EQ(tensor(p, "a")->reason, "inside fusing group 0");
  EXPECT_TRUE(tensor(p, "y")->quantize);
}

TEST_F(PlanCompositeTest, AChainWithAnOutsideUseOfItsInputDoesNotFuse) {
  // conv's output also feeds `other`: three consumers, two elements.
  GraphBuilder b;
  b.input("x");
  b.conv("conv", "x", "c");
  b.node("Sigmoid", "sig", {"c"}, {"s"});
  b.node("Mul", "silu", {"c", "s"}, {"a"});
  b.node("Relu", "other", {"c"}, {"r"});
  b.output("a");
  b.output("r");
  plan::Plan p = planOf(b);
  EXPECT_EQ(p.chains.size(), 1u);
  EXPECT_TRUE(p.groups.empty());
  std::vector<std::string> why = plan::explainFusing(p, node(p, "silu"));
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why[0].find("`c` has 3 consumers"), std::string::npos) << why[0];
}

TEST_F(PlanCompositeTest, InnerNodesFollowTheRootsChoice) {
  GraphBuilder b;
  b.input("x");
  b.node("Sigmoid", "sig", {"x"}, {"s"});
  b.node("Mul", "silu", {"x", "s"}, {"y"});
  b.output("y");
  plan::Plan p = planOf(b, "small", {{"silu", "Swish.1"}});
  EXPECT_FALSE(c.diags.hasErrors());
  EXPECT_EQ(node(p, "silu").chosen, 1u);
  EXPECT_EQ(node(p, "sig").chosen, 1u);
  EXPECT_EQ(tensor(p, "y")->bits, 16);
}

// A chain node with a weight slot of its own (the Conv of Conv + bias Add, as an
// exporter writes a layer whose op has no bias input) takes it, with the chain's
// config: one kernel quantizer on the Conv, one activation quantizer on the Add, none
// between; the bias Add's constant stays part of the pattern.
TEST_F(PlanCompositeTest, AChainNodeWithAWeightSlotTakesItWithTheChainsConfig) {
  GraphBuilder b;
  b.input("x");
  b.constant("w", {4, 4, 1, 1}, 0.25f);
  b.constant("bias", {1, 4, 1, 1}, 0.5f);
  b.node("Conv", "conv", {"x", "w"}, {"c"});
  b.node("Add", "add", {"c", "bias"}, {"y"});
  b.output("y");
  plan::Plan p = planOf(b);
  EXPECT_FALSE(c.diags.hasErrors());
  ASSERT_EQ(p.chains.size(), 1u);
  EXPECT_EQ(p.chains[0].composite->name, "ConvBias");
  const plan::PlanNode &conv = node(p, "conv");
  ASSERT_EQ(conv.weights.size(), 1u);
  EXPECT_EQ(conv.weights[0].slot, "kernel");
  EXPECT_TRUE(conv.weights[0].quantize);
  EXPECT_EQ(conv.weights[0].config.bits, 8);
  EXPECT_EQ(conv.weights[0].axis, 0);
  EXPECT_TRUE(node(p, "add").weights.empty());
  EXPECT_FALSE(tensor(p, "c")->quantize);
  EXPECT_TRUE(tensor(p, "y")->quantize);
}

/// x -> ReduceL2 -> Div(x, n) -> y: the L2Norm composite (`is LpNormalization`).
static GraphBuilder l2norm() {
  GraphBuilder b;
  b.input("x");
  b.node("ReduceL2", "norm", {"x"}, {"n"});
  b.node("Div", "div", {"x", "n"}, {"y"});
  b.output("y");
  return b;
}

// No binding names L2Norm: its chain is planned as LpNormalization, with the opset of
// the binding `Lp <- LpNormalization`; one quantizer on the output, none inside.
TEST_F(PlanCompositeTest, ACompositeThatIsAnOperatorTakesTheOperatorsBinding) {
  plan::Plan p = planOf(l2norm());
  EXPECT_FALSE(c.diags.hasErrors());
  ASSERT_EQ(p.chains.size(), 1u);
  EXPECT_EQ(p.chains[0].composite->name, "L2Norm");
  const plan::PlanNode &div = node(p, "div");
  ASSERT_NE(div.opset, nullptr);
  EXPECT_EQ(div.opset->name, "Lp");
  EXPECT_EQ(node(p, "norm").opset, div.opset);
  EXPECT_EQ(tensor(p, "y")->bits, 16);
  EXPECT_FALSE(tensor(p, "n")->quantize);
}

// Without a binding of the operator, the chain is still one node, with the default
// options; a binding with a predicate does not count (the chain has no attributes).
TEST_F(PlanCompositeTest, ACompositeThatIsAnUnboundOperatorTakesTheDefaultOptions) {
  for (const char *caps : {"small", "conditional"}) {
    SCOPED_TRACE(caps);
    plan::Plan p = planOf(l2norm(), caps);
    EXPECT_FALSE(c.diags.hasErrors());
    ASSERT_EQ(p.chains.size(), 1u);
    EXPECT_EQ(node(p, "div").opset, nullptr);
    EXPECT_EQ(tensor(p, "y")->bits, 8);
    EXPECT_TRUE(tensor(p, "y")->quantize);
    EXPECT_FALSE(tensor(p, "n")->quantize);
  }
}
