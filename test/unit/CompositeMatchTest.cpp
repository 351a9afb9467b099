//===- CompositeMatchTest.cpp - Composites found in models ------------------===//
//
// plan::matchComposite on small graphs built here (a SiLU in both operand
// orders, a squeeze-and-excitation gate that is not one, a chain whose inner
// tensor escapes, GELU's constants) and on the shared MobileNetV2/V3-style
// model, whose 2 SiLU and 5 HardSwish blocks are spelled as Sigmoid·Mul and
// HardSigmoid·Mul.
//
//===----------------------------------------------------------------------===//
#include "plan/CompositeMatch.h"
#include "ir/graph/OnnxIO.h"
#include "passes/Passes.h"
#include "test/unit/GraphBuilder.h"
#include "test/unit/TestUtil.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

using namespace tpcc;
using tpcc::test::GraphBuilder;

namespace {

const char *kSpec = R"(
framework acts {
  composite SiLU(x) = Mul(x, Sigmoid(x))
  composite HardSwishOpset13(x) =
      Mul(x, HardSigmoid(x) where alpha > 0.1666 and alpha < 0.1667 and beta == 0.5)
  composite GeluErf(x) = Mul(Mul(x, 0.5), Add(Erf(Div(x, 1.4142135)), 1))
  composite Standardize(x) =
      Div(Sub(x, ReduceMean(x)), Sqrt(ReduceMean(Pow(Sub(x, ReduceMean(x)), 2))))
}
)";

class CompositeMatchTest : public ::testing::Test {
protected:
  void SetUp() override {
    c.files.push_back(parseBuffer(c, "acts.tpc", kSpec));
    module = buildModule(c);
    ASSERT_FALSE(c.diags.hasErrors());
    fw = module.findFramework("acts");
    ASSERT_TRUE(fw);
  }
  std::unique_ptr<graph::Model> load(const GraphBuilder &b) {
    auto m = graph::loadModelFromBuffer(b.bytes(), "m.onnx", ".", c.diags);
    EXPECT_TRUE(m) << "the test graph does not load";
    return m;
  }
  const graph::Node *node(const graph::Model &m, const std::string &name) {
    for (const auto &n : m.graph.nodes())
      if (n->name == name)
        return n.get();
    ADD_FAILURE() << "no node " << name;
    return nullptr;
  }
  std::optional<plan::CompositeMatch> match(const char *composite, const graph::Model &m,
                                            const std::string &root) {
    return plan::matchComposite(*fw->findComposite(composite), m, *node(m, root));
  }
  std::vector<std::string> names(const plan::CompositeMatch &cm) {
    std::vector<std::string> out;
    for (const graph::Node *n : cm.nodes)
      out.push_back(n->name);
    return out;
  }

  Compilation c;
  ir::Module module;
  const ir::Framework *fw = nullptr;
};

TEST_F(CompositeMatchTest, SiLUInEitherOperandOrder) {
  for (bool swapped : {false, true}) {
    GraphBuilder b;
    b.input("x");
    b.node("Sigmoid", "sig", {"x"}, {"s"});
    b.node("Mul", "mul",
           swapped ? std::vector<std::string>{"s", "x"} : std::vector<std::string>{"x", "s"},
           {"y"});
    b.output("y");
    auto m = load(b);
    auto cm = match("SiLU", *m, "mul");
    ASSERT_TRUE(cm) << (swapped ? "Mul(s, x)" : "Mul(x, s)");
    EXPECT_EQ(names(*cm), (std::vector<std::string>{"mul", "sig"}));
    ASSERT_EQ(cm->inputs.size(), 1u);
    EXPECT_EQ(cm->inputs[0]->name, "x");
    EXPECT_FALSE(match("SiLU", *m, "sig")); // only the root computes the output
  }
}

TEST_F(CompositeMatchTest, SqueezeExcitationGateIsNotASiLU) {
  // x * Sigmoid(g): the gate comes from another tensor.
  GraphBuilder b;
  b.input("x");
  b.input("g");
  b.node("Sigmoid", "sig", {"g"}, {"s"});
  b.node("Mul", "mul", {"x", "s"}, {"y"});
  b.output("y");
  auto m = load(b);
  EXPECT_FALSE(match("SiLU", *m, "mul"));
}

TEST_F(CompositeMatchTest, InnerTensorUsedOutsideOrAGraphOutputRefuses) {
  GraphBuilder b;
  b.input("x");
  b.node("Sigmoid", "sig", {"x"}, {"s"});
  b.node("Mul", "mul", {"x", "s"}, {"y"});
  b.node("Relu", "other", {"s"}, {"z"}); // the gate has a second use
  b.output("y");
  b.output("z");
  auto m = load(b);
  EXPECT_FALSE(match("SiLU", *m, "mul"));

  GraphBuilder o;
  o.input("x");
  o.node("Sigmoid", "sig", {"x"}, {"s"});
  o.node("Mul", "mul", {"x", "s"}, {"y"});
  o.output("y");
  o.output("s"); // the gate is a graph output
  auto m2 = load(o);
  EXPECT_FALSE(match("SiLU", *m2, "mul"));
}

TEST_F(CompositeMatchTest, WherePredicateOnAnInnerOp) {
  for (float alpha : {1.0f / 6, 0.2f}) {
    GraphBuilder b;
    b.input("x");
    auto *hs = b.node("HardSigmoid", "hsig", {"x"}, {"h"});
    GraphBuilder::floatAttr(hs, "alpha", alpha);
    b.node("Mul", "mul", {"x", "h"}, {"y"});
    b.output("y");
    auto m = load(b);
    // beta is left out: the schema's default (0.5) applies.
    EXPECT_EQ(bool(match("HardSwishOpset13", *m, "mul")), alpha < 0.19f) << alpha;
  }
}

TEST_F(CompositeMatchTest, GeluConstantsWithinFloatRounding) {
  for (float root2 : {1.41421354f, 1.5f}) {
    GraphBuilder b;
    b.input("x");
    b.constant("half", {}, 0.5f);
    b.constant("one", {1}, 1.0f);
    b.constant("r2", {}, root2);
    b.node("Div", "div", {"x", "r2"}, {"d"});
    b.node("Erf", "erf", {"d"}, {"e"});
    b.node("Add", "add", {"one", "e"}, {"a"}); // 1 + erf: the other order
    b.node("Mul", "half_x", {"x", "half"}, {"h"});
    b.node("Mul", "mul", {"h", "a"}, {"y"});
    b.output("y");
    auto m = load(b);
    auto cm = match("GeluErf", *m, "mul");
    EXPECT_EQ(bool(cm), root2 < 1.45f) << root2;
    if (cm) {
      EXPECT_EQ(cm->nodes.size(), 5u);
    }
  }
}

// A pattern may write one subexpression twice (x - mean(x) in a normalization):
// exporters compute it once, and both occurrences match that node. Computed twice,
// from the same x, it matches too; from another tensor, it does not.
TEST_F(CompositeMatchTest, SubexpressionWrittenTwiceMatchesOneNode) {
  for (int form : {0, 1, 2}) {
    GraphBuilder b;
    b.input("x");
    b.input("other");
    b.constant("two", {}, 2.0f);
    b.node("ReduceMean", "mean", {"x"}, {"m"});
    b.node("Sub", "center", {"x", "m"}, {"c"});
    std::string centered = "c";
    if (form > 0) { // a second x - mean(x), or other - mean(other)
      std::string src = form == 1 ? "x" : "other";
      b.node("ReduceMean", "mean2", {src}, {"m2"});
      b.node("Sub", "center2", {src, "m2"}, {"c2"});
      centered = "c2";
    }
    b.node("Pow", "square", {centered, "two"}, {"p"});
    b.node("ReduceMean", "var", {"p"}, {"v"});
    b.node("Sqrt", "std", {"v"}, {"s"});
    b.node("Div", "div", {"c", "s"}, {"y"});
    b.output("y");
    auto m = load(b);
    auto cm = match("Standardize", *m, "div");
    EXPECT_EQ(bool(cm), form < 2) << form;
    if (cm)
      EXPECT_EQ(cm->nodes.size(), form == 0 ? 6u : 8u) << form; // each node once
  }
}

TEST_F(CompositeMatchTest, SharedMobileNetSpellsSiLUAndHardSwish) {
  std::string path = TPCC_SOURCE_DIR "/../shared/models/fashion_mbv2.onnx";
  if (!llvm::sys::fs::exists(path))
    GTEST_SKIP() << "no " << path;
  auto m = graph::loadModel(path, c.diags);
  ASSERT_TRUE(m);
  int silu = 0, hardswish = 0, chainNodes = 0;
  for (const auto &n : m->graph.nodes()) {
    if (auto cm = plan::matchComposite(*fw->findComposite("SiLU"), *m, *n))
      ++silu, chainNodes += int(cm->nodes.size());
    if (auto cm = plan::matchComposite(*fw->findComposite("HardSwishOpset13"), *m, *n))
      ++hardswish, chainNodes += int(cm->nodes.size());
  }
  // ../shared/models/README.md: 2 SiLU and 5 HardSwish blocks.
  EXPECT_EQ(silu, 2);
  EXPECT_EQ(hardswish, 5);
  EXPECT_EQ(chainNodes, 14);
}

} // namespace
