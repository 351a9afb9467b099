//===- OpsetConvertTest.cpp - Softmax across the opset 13 change ----------===//
//
// Softmax-9 coerces its input to 2-D at `axis`; Softmax-13 works on one axis.
// An exporter's Shape -> Concat -> Reshape chain hides the rank, so libonnx
// cannot adapt the node: convertOpset does, and the converted model computes
// what the original does (the executor runs both opsets).

#include "GraphBuilder.h"
#include "ir/graph/OnnxIO.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>

using namespace tpcc;
using tpcc::test::addNode;

namespace {

/// y = op(Reshape(x, Concat(Shape(x)[0:1], [-1, 4])), axis) at opset 9; x [2,3,4] (the
/// rank after the Reshape unknown to shape inference).
std::string model(const std::string &op, int64_t axis) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(9);
  onnx::GraphProto &g = *m.mutable_graph();
  g.set_name("g");
  auto *x = g.add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int d : {2, 3, 4})
    x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  auto *rest = g.add_initializer();
  rest->set_name("rest");
  rest->set_data_type(onnx::TensorProto::INT64);
  rest->add_dims(2);
  rest->add_int64_data(-1);
  rest->add_int64_data(4);
  addNode(g, "Shape", {"x"}, "shape");
  onnx::NodeProto *slice = addNode(g, "Slice", {"shape"}, "batch");
  auto *axes = slice->add_attribute();
  axes->set_name("starts");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(0);
  auto *ends = slice->add_attribute();
  ends->set_name("ends");
  ends->set_type(onnx::AttributeProto::INTS);
  ends->add_ints(1);
  test::GraphBuilder::intAttr(addNode(g, "Concat", {"batch", "rest"}, "target"), "axis", 0);
  addNode(g, "Reshape", {"x", "target"}, "r");
  test::GraphBuilder::intAttr(addNode(g, op, {"r"}, "y"), "axis", axis);
  auto *y = g.add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (const char *d : {"a", "b", "c"})
    y->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param(d);
  return m.SerializeAsString();
}

std::vector<float> run(const graph::Model &m, DiagnosticEngine &diags) {
  auto ex = rt::Executor::create(m, diags);
  EXPECT_TRUE(ex);
  if (!ex)
    return {};
  rt::Tensor x(graph::ElemType::Float, {2, 3, 4});
  for (int i = 0; i < 24; ++i)
    x.data<float>()[i] = std::sin(0.7f * float(i));
  std::vector<rt::Tensor> out;
  EXPECT_TRUE(succeeded(ex->run({{"x", x}}, out, diags)));
  if (out.empty())
    return {};
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + out[0].numel());
}

} // namespace

TEST(OpsetConvert, SoftmaxOfUnknownRankKeepsItsMeaning) {
  for (const char *op : {"Softmax", "LogSoftmax", "Hardmax"})
    for (int64_t axis : {1, 2, -1}) {
      SourceManager sm;
      DiagnosticEngine diags(sm);
      auto old = graph::loadModelFromBuffer(model(op, axis), "m.onnx", ".", diags);
      std::string text;
      for (const Diagnostic &d : diags.getDiagnostics())
        text += d.where + ": " + d.message + "\n";
      ASSERT_TRUE(old) << text;
      auto converted = graph::convertOpset(*old, 13, diags);
      ASSERT_TRUE(converted) << op << " axis " << axis;
      EXPECT_EQ(converted->opsetVersion(""), 13);
      std::vector<float> want = run(*old, diags), got = run(*converted, diags);
      ASSERT_EQ(want.size(), 24u);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-6) << op << " axis " << axis << " element " << i;
      // Axis 1 of the rank-3 reshape is not the last: the old definition's
      // flatten, op, reshape back; the last axis stays one node.
      unsigned flattens = 0;
      for (const auto &n : converted->graph.nodes())
        flattens += n->opType == "Flatten";
      EXPECT_EQ(flattens, axis == -1 ? 0u : 1u) << op << " axis " << axis;
    }
}
