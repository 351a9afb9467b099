//===- NodeAttrsTest.cpp - Attributes with schema defaults, operator traits -===//
//
// graph::NodeAttrs (the node's value, else the ONNX schema default of the
// operator version in effect, else the caller's fallback) and the OpTraits
// table the quantizer reads.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/NodeAttrs.h"
#include "ir/OnnxSchema.h"
#include "ir/graph/OpTraits.h"

#include <gtest/gtest.h>

#include <optional>

using namespace tpcc;
using namespace tpcc::graph;

namespace {

const ir::OnnxOpVersion *schema(const char *op, int opset) {
  const ir::OnnxOp *o = ir::OnnxSchemaIndex::get().find(op);
  return o ? o->atOpset(opset) : nullptr;
}

Attribute intAttr(const char *name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = ir::OnnxAttrType::Int;
  a.i = v;
  return a;
}

} // namespace

TEST(NodeAttrs, NodeValueThenSchemaDefaultThenFallback) {
  Node gemm;
  gemm.opType = "Gemm";
  gemm.attributes.push_back(intAttr("transB", 1));
  NodeAttrs a(gemm, schema("Gemm", 13));
  EXPECT_TRUE(a.has("transB"));
  EXPECT_EQ(a.getInt("transB", 7), 1); // the node's value
  EXPECT_FALSE(a.has("transA"));
  EXPECT_EQ(a.getInt("transA", 7), 0);     // the schema's default, not 7
  EXPECT_EQ(a.getFloat("alpha", 7), 1.0);  // a FLOAT default
  EXPECT_EQ(a.getInt("no_such", 7), 7);    // no schema entry: the fallback
  EXPECT_EQ(a.getFloat("transA", 7), 7.0); // a default of another type is not used

  NodeAttrs noSchema(gemm, nullptr);
  EXPECT_EQ(noSchema.getInt("transA", 7), 7);
  EXPECT_EQ(noSchema.schemaDefault("alpha"), nullptr);
}

TEST(NodeAttrs, StringAndListDefaultsFollowTheVersion) {
  Node conv;
  conv.opType = "Conv";
  NodeAttrs c(conv, schema("Conv", 13));
  EXPECT_EQ(c.getString("auto_pad", "x"), "NOTSET");
  EXPECT_EQ(c.getInt("group", 5), 1);
  EXPECT_TRUE(c.getInts("pads").empty()); // no default
  Node pad;
  pad.opType = "Pad";
  // Pad-2 has a `value` attribute (default 0); from Pad-11 it is an input.
  EXPECT_EQ(NodeAttrs(pad, schema("Pad", 2)).getString("mode", "x"), "constant");
  ASSERT_NE(NodeAttrs(pad, schema("Pad", 2)).schemaDefault("value"), nullptr);
  EXPECT_EQ(NodeAttrs(pad, schema("Pad", 13)).schemaDefault("value"), nullptr);
  EXPECT_EQ(NodeAttrs(pad, schema("Pad", 13)).getFloat("value", 0.5), 0.5);
}

TEST(OpTraits, TheTableTheQuantizerReads) {
  EXPECT_TRUE(opTraits("", "Conv").linear);
  EXPECT_TRUE(opTraits("", "Gemm").linear);
  EXPECT_FALSE(opTraits("", "MatMul").linear);
  EXPECT_FALSE(opTraits("", "ConvTranspose").linear);
  EXPECT_TRUE(opTraits("", "ConvTranspose").int32Bias);
  EXPECT_TRUE(opTraits("", "MaxPool").movesValues);
  EXPECT_FALSE(opTraits("", "AveragePool").movesValues); // averages make new values
  EXPECT_TRUE(opTraits("", "AveragePool").shiftTransparent);
  EXPECT_TRUE(opTraits("", "HardSwish").shiftNegative);
  EXPECT_FALSE(opTraits("", "Relu").shiftNegative);
  // Other domains have no traits.
  EXPECT_FALSE(opTraits("com.microsoft", "Conv").linear);
  EXPECT_FALSE(opTraits("", "NoSuchOp").movesValues);
  Node n;
  n.opType = "Reshape";
  EXPECT_TRUE(opTraits(n).movesValues);
}

TEST(OpTraits, PadMovesValuesWhenItAddsNoNewOnes) {
  // A Pad with zeros (on every grid tpcc makes), or with its input's own
  // values (edge, reflect), keeps the input's grid; another constant does not.
  Graph g;
  auto pad = [&](const char *mode, std::optional<float> attrValue, std::optional<float> input) {
    auto n = std::make_unique<Node>();
    n->opType = "Pad";
    if (mode) {
      Attribute a;
      a.name = "mode";
      a.type = ir::OnnxAttrType::String;
      a.s = mode;
      n->attributes.push_back(a);
    }
    if (attrValue) {
      Attribute a;
      a.name = "value";
      a.type = ir::OnnxAttrType::Float;
      a.f = *attrValue;
      n->attributes.push_back(a);
    }
    n->inputs = {g.getOrCreateValue("x"), g.getOrCreateValue("pads")};
    if (input) {
      auto t = std::make_unique<Tensor>();
      t->name = "c" + std::to_string(*input);
      t->elem = ElemType::Float;
      t->raw.assign(reinterpret_cast<const char *>(&*input), sizeof(float));
      n->inputs.push_back(g.addConstant(std::move(t)));
    }
    return opTraits(*n).movesValues;
  };
  EXPECT_TRUE(pad(nullptr, std::nullopt, std::nullopt)); // Pad-11+, no constant: 0
  EXPECT_TRUE(pad("constant", std::nullopt, 0.0f));
  EXPECT_FALSE(pad("constant", std::nullopt, 0.5f));
  EXPECT_TRUE(pad(nullptr, 0.0f, std::nullopt)); // Pad-2's attribute
  EXPECT_FALSE(pad(nullptr, -1.0f, std::nullopt));
  EXPECT_TRUE(pad("reflect", std::nullopt, 0.5f));
  EXPECT_TRUE(pad("edge", std::nullopt, std::nullopt));
}
