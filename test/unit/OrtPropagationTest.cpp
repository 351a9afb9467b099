//===- OrtPropagationTest.cpp - ORT's QDQ propagation, as --ort-cpu makes it ===//
//
// Graphs built here, rewritten by rt::ortQdqPropagation: a DQ's grid goes
// forward across Transpose and MaxPool to every consumer, a Q's grid backward
// across a Reshape to the op before it, and neither crosses an op that does
// not propagate, a DQ read twice, or a Q already in place. ORT's PadFusion
// folds a zero spatial Pad into the Conv that reads it.
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/OrtPropagation.h"
#include "ir/graph/OnnxIO.h"
#include "support/Diagnostics.h"
#include "test/unit/GraphBuilder.h"

#include <gtest/gtest.h>

using namespace tpcc;
using tpcc::test::GraphBuilder;

namespace {

struct Loaded {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<graph::Model> m;
  explicit Loaded(const GraphBuilder &b)
      : m(graph::loadModelFromBuffer(b.bytes(), "m.onnx", ".", diags)) {}
  /// Whether the rewritten graph is still a valid one.
  bool verified() { return succeeded(graph::verifyGraph(m->graph, "m.onnx", diags)); }
};

/// Input `x` and the grid `s`, `z` (0.25, 128).
void inputAndGrid(GraphBuilder &b) {
  b.input("x");
  b.constant("s", {}, 0.25f);
  b.zeroPoint("z", 128);
}

/// Input `x`, the grid, and `xd` = DequantizeLinear(QuantizeLinear(x)).
void quantizedInput(GraphBuilder &b) {
  inputAndGrid(b);
  b.node("QuantizeLinear", "q", {"x", "s", "z"}, {"xq"});
  b.node("DequantizeLinear", "dq", {"xq", "s", "z"}, {"xd"});
}

/// The op types that read `value` (after the rewrite).
std::vector<std::string> readers(const graph::Model &m, const std::string &value) {
  std::vector<std::string> out;
  if (const graph::Value *v = m.graph.findValue(value))
    for (const graph::Use &u : v->uses)
      out.push_back(u.node->opType);
  return out;
}

/// The op that produces the input `i` of the node named `node`.
std::string producerOfInput(const graph::Model &m, const std::string &node, size_t i) {
  for (const auto &n : m.graph.nodes())
    if (n->name == node && n->input(i) && n->input(i)->producer)
      return n->input(i)->producer->opType;
  return "";
}

TEST(OrtPropagation, DequantizeForwardAcrossMovingOps) {
  GraphBuilder b;
  quantizedInput(b);
  GraphBuilder::intsAttr(b.node("Transpose", "t", {"xd"}, {"t_out"}), "perm", {0, 1, 3, 2});
  auto *mp = b.node("MaxPool", "mp", {"t_out"}, {"p"});
  GraphBuilder::intsAttr(mp, "kernel_shape", {1, 1});
  b.conv("c1", "p", "y1");
  b.node("Relu", "r", {"p"}, {"y2"});
  b.output("y1");
  b.output("y2");
  Loaded l(b);
  ASSERT_TRUE(l.m);
  // After the Transpose, then after the MaxPool (one DQ for each of its readers).
  EXPECT_EQ(rt::ortQdqPropagation(*l.m), 2u);
  ASSERT_TRUE(l.verified());
  EXPECT_EQ(readers(*l.m, "t_out"), std::vector<std::string>{"QuantizeLinear"});
  EXPECT_EQ(readers(*l.m, "p"), std::vector<std::string>{"QuantizeLinear"});
  EXPECT_EQ(producerOfInput(*l.m, "c1", 0), "DequantizeLinear");
  EXPECT_EQ(producerOfInput(*l.m, "r", 0), "DequantizeLinear");
  // Again: nothing left to do.
  EXPECT_EQ(rt::ortQdqPropagation(*l.m), 0u);
}

TEST(OrtPropagation, QuantizeBackwardUpToTheOpBefore) {
  GraphBuilder b;
  inputAndGrid(b);
  b.ints("shape", {1, 4, 16, 1});
  b.conv("c", "x", "c_out");
  b.node("Reshape", "rs", {"c_out", "shape"}, {"r_out"});
  b.node("QuantizeLinear", "q", {"r_out", "s", "z"}, {"rq"});
  b.node("DequantizeLinear", "dq", {"rq", "s", "z"}, {"y"});
  b.output("y");
  Loaded l(b);
  ASSERT_TRUE(l.m);
  EXPECT_EQ(rt::ortQdqPropagation(*l.m), 1u);
  ASSERT_TRUE(l.verified());
  EXPECT_EQ(readers(*l.m, "c_out"), std::vector<std::string>{"QuantizeLinear"});
  EXPECT_EQ(producerOfInput(*l.m, "rs", 0), "DequantizeLinear");
}

TEST(OrtPropagation, StopsWhereOrtStops) {
  GraphBuilder b;
  quantizedInput(b);
  // Read twice: no forward propagation from `dq`.
  GraphBuilder::intsAttr(b.node("Transpose", "t", {"xd"}, {"t_out"}), "perm", {0, 1, 3, 2});
  b.node("Relu", "r", {"xd"}, {"y2"});
  b.node("Sigmoid", "sg", {"t_out"}, {"y1"});
  // A Q after an op that does not propagate (Relu) stays where it is.
  b.node("QuantizeLinear", "q2", {"y2", "s", "z"}, {"y2q"});
  b.node("DequantizeLinear", "dq2", {"y2q", "s", "z"}, {"y3"});
  b.output("y1");
  b.output("y3");
  Loaded l(b);
  ASSERT_TRUE(l.m);
  EXPECT_EQ(rt::ortQdqPropagation(*l.m), 0u);
}

/// x -> Q -> DQ -> Pad(pads, value) -> Conv(pads 1) -> y
GraphBuilder padConv(std::vector<int64_t> pads, float value) {
  GraphBuilder b;
  quantizedInput(b);
  b.ints("pads", pads);
  b.constant("v", {}, value);
  b.node("Pad", "pad", {"xd", "pads", "v"}, {"p"});
  b.constant("W", {4, 4, 3, 3});
  GraphBuilder::intsAttr(b.node("Conv", "conv", {"p", "W"}, {"y"}), "pads", {1, 1, 1, 1});
  b.output("y", 4);
  return b;
}

TEST(OrtPadFusion, ZeroSpatialPadGoesIntoTheConv) {
  Loaded l(padConv({0, 0, 1, 2, 0, 0, 1, 0}, 0.0f));
  ASSERT_TRUE(l.m);
  EXPECT_EQ(rt::ortPadFusion(*l.m), 1u);
  ASSERT_TRUE(l.verified());
  EXPECT_EQ(producerOfInput(*l.m, "conv", 0), "DequantizeLinear");
  for (const auto &n : l.m->graph.nodes())
    if (n->name == "conv")
      EXPECT_EQ(n->attr("pads")->ints, (std::vector<int64_t>{2, 3, 2, 1}));
}

TEST(OrtPadFusion, OtherPadsStay) {
  for (auto [pads, value] : {std::pair<std::vector<int64_t>, float>{{0, 0, 1, 1, 0, 0, 1, 1}, 0.5f},
                             {{0, 1, 1, 1, 0, 0, 1, 1}, 0.0f},
                             {{0, 0, -1, 1, 0, 0, 1, 1}, 0.0f}}) {
    Loaded l(padConv(pads, value));
    ASSERT_TRUE(l.m);
    EXPECT_EQ(rt::ortPadFusion(*l.m), 0u) << value;
  }
}

} // namespace
