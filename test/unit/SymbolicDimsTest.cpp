//===- SymbolicDimsTest.cpp - Sizes for symbolic dimensions (bindDims) ----===//

#include "ir/graph/OnnxIO.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

using namespace tpcc;
using namespace tpcc::graph;

namespace {

void typed(onnx::ValueInfoProto *v, const std::string &name, const std::vector<std::string> &dims) {
  v->set_name(name);
  auto *t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (const std::string &d : dims)
    if (std::isdigit(static_cast<unsigned char>(d[0])))
      t->mutable_shape()->add_dim()->set_dim_value(std::stoll(d));
    else
      t->mutable_shape()->add_dim()->set_dim_param(d);
}

onnx::NodeProto *node(onnx::GraphProto &g, const std::string &op, std::vector<std::string> ins,
                      const std::string &out) {
  auto *n = g.add_node();
  n->set_op_type(op);
  n->set_name(out);
  for (const std::string &i : ins)
    n->add_input(i);
  n->add_output(out);
  return n;
}

/// x [batch, seq, 4] -> Reshape(x, Concat(Shape(x)[0], Shape(x)[1], [2, 2]))
/// -> r [batch, seq, 2, 2] -> Relu -> y; the file states `mask` [seq, seq +
/// 1] for a value it computes.
std::string reshapeModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(14);
  onnx::GraphProto &g = *m.mutable_graph();
  g.set_name("g");
  typed(g.add_input(), "x", {"batch", "seq", "4"});
  typed(g.add_output(), "y", {"batch", "seq", "2", "2"});
  typed(g.add_value_info(), "mask", {"seq", "seq + 1"});
  auto ints = [&](const std::string &name, std::vector<int64_t> v) {
    auto *t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(int64_t(v.size()));
    for (int64_t x : v)
      t->add_int64_data(x);
  };
  ints("i0", {0});
  ints("i1", {1});
  ints("heads", {2, 2});
  node(g, "Shape", {"x"}, "shape");
  node(g, "Gather", {"shape", "i0"}, "b");
  node(g, "Gather", {"shape", "i1"}, "s");
  auto *concat = node(g, "Concat", {"b", "s", "heads"}, "target");
  auto *axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  node(g, "Reshape", {"x", "target"}, "r");
  node(g, "Relu", {"r"}, "y");
  // `mask`: an operator shape inference does not know, whose output the
  // file types (as exporters type a causal mask).
  node(g, "Mask", {"x"}, "mask")->set_domain("test");
  auto *test = m.add_opset_import();
  test->set_domain("test");
  test->set_version(1);
  return m.SerializeAsString();
}

struct Loaded {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<Model> model;
};

std::unique_ptr<Loaded> load(const DimValues &dims) {
  auto l = std::make_unique<Loaded>();
  LoadOptions options;
  options.dims = dims;
  l->model = loadModelFromBuffer(reshapeModel(), "m.onnx", ".", l->diags, options);
  return l;
}

std::string typeOf(const Model &m, const std::string &name) {
  const Value *v = m.graph.findValue(name);
  return v ? v->type.str() : "(none)";
}

} // namespace

TEST(SymbolicDims, InputDimNamesInOrderOnce) {
  auto l = load({});
  ASSERT_TRUE(l->model);
  EXPECT_EQ(inputDimNames(*l->model), (std::vector<std::string>{"batch", "seq"}));
}

TEST(SymbolicDims, UnboundReshapeOfAComputedShapeHasNoKnownDims) {
  auto l = load({});
  ASSERT_TRUE(l->model);
  EXPECT_EQ(typeOf(*l->model, "r"), "float[*]");
}

TEST(SymbolicDims, BoundDimsReachEveryShapeTheModelComputes) {
  auto l = load({{"seq", 48}, {"batch", 1}});
  ASSERT_TRUE(l->model) << l->diags.getDiagnostics().size();
  const Model &m = *l->model;
  EXPECT_EQ(typeOf(m, "x"), "float[1,48,4]");
  EXPECT_EQ(typeOf(m, "r"), "float[1,48,2,2]"); // through Shape -> Gather -> Concat
  EXPECT_EQ(typeOf(m, "y"), "float[1,48,2,2]");
  // The inputs keep the names beside the sizes (calibration errors name them).
  const Dim &seq = (*m.graph.findValue("x")->type.shape)[1];
  EXPECT_EQ(seq.param, "seq");
  EXPECT_EQ(seq.value, 48);
}

TEST(SymbolicDims, ExpressionsOfBoundNamesTakeTheirValue) {
  auto l = load({{"seq", 6}});
  ASSERT_TRUE(l->model);
  const std::vector<Dim> &mask = *l->model->graph.findValue("mask")->type.shape;
  ASSERT_EQ(mask.size(), 2u);
  EXPECT_EQ(mask[0].value, 6);
  EXPECT_EQ(mask[1].value, 7); // `seq + 1`
  EXPECT_EQ(typeOf(*l->model, "r"), "float[batch,6,2,2]");
}

TEST(SymbolicDims, ANameNoInputHasIsAnErrorNamingTheOthers) {
  auto l = load({{"sequence", 48}});
  EXPECT_FALSE(l->model);
  ASSERT_EQ(l->diags.getDiagnostics().size(), 1u);
  EXPECT_EQ(l->diags.getDiagnostics()[0].message,
            "--dim sequence: no input of the model has a dimension named `sequence` (its "
            "inputs' symbolic dimensions: `batch`, `seq`)");
  auto typo = load({{"batc", 1}});
  ASSERT_EQ(typo->diags.getDiagnostics().size(), 1u);
  EXPECT_NE(typo->diags.getDiagnostics()[0].message.find("did you mean `batch`?"),
            std::string::npos);
}
