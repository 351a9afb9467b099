//===- SubgraphTest.cpp - Captures of If/Loop/Scan subgraphs in the IR ----===//

#include "GraphBuilder.h"
#include "ir/graph/OnnxIO.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

using namespace tpcc;
using namespace tpcc::graph;

namespace {

void setType(onnx::ValueInfoProto &v, const std::string &name, int elem) {
  v.set_name(name);
  v.mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  v.mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
}

onnx::GraphProto &addGraph(onnx::NodeProto &n, const std::string &attr) {
  onnx::AttributeProto &a = *n.add_attribute();
  a.set_name(attr);
  a.set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto &g = *a.mutable_g();
  g.set_name(attr);
  return g;
}

/// r = Relu(x); y = If(c) { then: Neg(r) } else { If(c) { Abs(x) } else { Neg(x) } }
/// The If comes first in the file when `unsorted`.
onnx::ModelProto ifModel(bool unsorted = false, const std::string &thenReads = "r") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto &g = *m.mutable_graph();
  g.set_name("g");
  setType(*g.add_input(), "x", onnx::TensorProto::FLOAT);
  onnx::ValueInfoProto &c = *g.add_input();
  c.set_name("c");
  c.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  c.mutable_type()->mutable_tensor_type()->mutable_shape();
  if (!unsorted)
    test::addNode(g, "Relu", {"x"}, "r", "relu");
  onnx::NodeProto &iff = *test::addNode(g, "If", {"c"}, "y", "choose");
  onnx::GraphProto &then = addGraph(iff, "then_branch");
  test::addNode(then, "Neg", {thenReads}, "t");
  setType(*then.add_output(), "t", onnx::TensorProto::FLOAT);
  onnx::GraphProto &els = addGraph(iff, "else_branch");
  onnx::NodeProto &inner = *test::addNode(els, "If", {"c"}, "e");
  onnx::GraphProto &innerThen = addGraph(inner, "then_branch");
  test::addNode(innerThen, "Abs", {"x"}, "a");
  setType(*innerThen.add_output(), "a", onnx::TensorProto::FLOAT);
  onnx::GraphProto &innerElse = addGraph(inner, "else_branch");
  test::addNode(innerElse, "Neg", {"x"}, "b");
  setType(*innerElse.add_output(), "b", onnx::TensorProto::FLOAT);
  setType(*els.add_output(), "e", onnx::TensorProto::FLOAT);
  if (unsorted)
    test::addNode(g, "Relu", {"x"}, "r", "relu");
  setType(*g.add_output(), "y", onnx::TensorProto::FLOAT);
  return m;
}

struct Loaded {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<Model> model;
  std::string text() const {
    std::string s;
    for (const Diagnostic &d : diags.getDiagnostics())
      s += d.where + ": " + d.message + "\n";
    return s;
  }
};

std::unique_ptr<Loaded> load(const onnx::ModelProto &m) {
  auto l = std::make_unique<Loaded>();
  l->model = loadModelFromBuffer(m.SerializeAsString(), "m.onnx", ".", l->diags);
  return l;
}

const Node *nodeNamed(const Graph &g, const std::string &name) {
  for (const auto &n : g.nodes())
    if (n->name == name)
      return n.get();
  return nullptr;
}

} // namespace

TEST(Subgraph, OuterReadsAreTrailingInputs) {
  auto l = load(ifModel());
  ASSERT_TRUE(l->model) << l->text();
  const Graph &g = l->model->graph;
  const Node *iff = nodeNamed(g, "choose");
  ASSERT_TRUE(iff);
  // Both branches' reads, nested If included, in first-read order; `c` is read
  // by the nested If (a capture too, besides the node's own input).
  EXPECT_EQ(iff->captures, (std::vector<std::string>{"r", "c", "x"}));
  EXPECT_EQ(iff->numOwnInputs(), 1u);
  ASSERT_EQ(iff->inputs.size(), 4u);
  EXPECT_EQ(iff->inputs[1], g.findValue("r"));
  // The Relu's output is used by the If: it stays live until the If runs.
  const Value *r = g.findValue("r");
  ASSERT_EQ(r->uses.size(), 1u);
  EXPECT_EQ(r->uses[0].node, iff);
  EXPECT_EQ(r->uses[0].index, 1u);
}

TEST(Subgraph, CapturesOrderTheGraph) {
  auto l = load(ifModel(/*unsorted=*/true));
  ASSERT_TRUE(l->model) << l->text();
  EXPECT_NE(l->text().find("not in topological order"), std::string::npos) << l->text();
  const auto &order = l->model->graph.topologicalOrder();
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0]->name, "relu");
  EXPECT_EQ(order[1]->name, "choose");
}

TEST(Subgraph, WriterRenamesReadsOfReplacedValues) {
  auto l = load(ifModel());
  ASSERT_TRUE(l->model) << l->text();
  Graph &g = l->model->graph;
  Node *iff = const_cast<Node *>(nodeNamed(g, "choose"));
  // A transform replaces `x` (read two levels down) by `r`.
  iff->inputs[3] = g.findValue("r");
  g.relink();
  std::string bytes, error;
  ASSERT_TRUE(serializeModel(*l->model, bytes, error)) << error;
  onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(bytes));
  const onnx::NodeProto *written = nullptr;
  for (const auto &n : out.graph().node())
    if (n.name() == "choose")
      written = &n;
  ASSERT_TRUE(written);
  ASSERT_EQ(written->input_size(), 1); // only the node's own input
  const onnx::GraphProto &els = written->attribute(1).g();
  EXPECT_EQ(els.node(0).attribute(0).g().node(0).input(0), "r");
  EXPECT_EQ(els.node(0).attribute(1).g().node(0).input(0), "r");
  EXPECT_EQ(written->attribute(0).g().node(0).input(0), "r");
  // And the written model loads with the new reads.
  auto again = load(out);
  ASSERT_TRUE(again->model) << again->text();
  EXPECT_EQ(nodeNamed(again->model->graph, "choose")->captures,
            (std::vector<std::string>{"r", "c"}));
}

TEST(Subgraph, UndefinedOuterReadIsAnError) {
  auto l = load(ifModel(false, "nowhere"));
  EXPECT_FALSE(l->model);
  EXPECT_NE(l->text().find("node 'choose' (If): a subgraph of this node reads `nowhere`"),
            std::string::npos)
      << l->text();
}

TEST(Subgraph, LoadsAsAModelWithCapturesAsInputs) {
  auto l = load(ifModel());
  ASSERT_TRUE(l->model) << l->text();
  const Node *iff = nodeNamed(l->model->graph, "choose");
  SourceManager sm;
  DiagnosticEngine diags(sm);
  std::optional<Subgraph> els =
      loadSubgraph(*iff, "else_branch", l->model->opsets, 8, "m.onnx: node 'choose'", diags);
  ASSERT_TRUE(els);
  const Graph &g = els->model->graph;
  EXPECT_EQ(els->numOwnInputs, 0u);
  ASSERT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(g.inputs()[0]->name, "c");
  EXPECT_EQ(g.inputs()[1]->name, "x");
  EXPECT_EQ(els->captureInputs, (std::vector<unsigned>{2, 3}));
  EXPECT_EQ(g.inputs()[1]->type.elem, ElemType::Float);
  // The nested If captures from the branch: its reads are branch inputs.
  EXPECT_EQ(g.nodes()[0]->captures, (std::vector<std::string>{"x"}));
  EXPECT_EQ(subgraphNodeCount(*iff), 4); // Neg; If, Abs, Neg
  EXPECT_FALSE(loadSubgraph(*iff, "body", l->model->opsets, 8, "m.onnx", diags));
}
