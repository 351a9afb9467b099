//===- GraphTest.cpp - The model IR: load, verify, write, hostile input ----===//

#include "ir/graph/OnnxIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <random>

using namespace tpcc;
using namespace tpcc::graph;

namespace {

struct Loaded {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::unique_ptr<Model> model;
  /// Every diagnostic as "where: message".
  std::string text() const {
    std::string s;
    for (const Diagnostic &d : diags.getDiagnostics())
      s += d.where + ": " + d.message + "\n";
    return s;
  }
};

std::unique_ptr<Loaded> loadBytes(const std::string &bytes, const std::string &dir = ".") {
  auto l = std::make_unique<Loaded>();
  l->model = loadModelFromBuffer(bytes, "m.onnx", dir, l->diags);
  return l;
}

/// A small valid model: y = Relu(Conv(x, W) + B)  with opset 13.
onnx::ModelProto convRelu() {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto *op = m.add_opset_import();
  op->set_version(13);
  auto *g = m.mutable_graph();
  g->set_name("g");
  auto *x = g->add_input();
  x->set_name("x");
  auto *tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1, 2, 4, 4})
    tt->mutable_shape()->add_dim()->set_dim_value(d);
  auto *w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {3, 2, 1, 1})
    w->add_dims(d);
  for (int k = 0; k < 6; ++k)
    w->add_float_data(0.5f * k);
  auto *conv = g->add_node();
  conv->set_name("conv");
  conv->set_op_type("Conv");
  conv->add_input("x");
  conv->add_input("W");
  conv->add_output("c");
  auto *relu = g->add_node();
  relu->set_name("relu");
  relu->set_op_type("Relu");
  relu->add_input("c");
  relu->add_output("y");
  auto *y = g->add_output();
  y->set_name("y");
  auto *yt = y->mutable_type()->mutable_tensor_type();
  yt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1, 3, 4, 4})
    yt->mutable_shape()->add_dim()->set_dim_value(d);
  return m;
}

} // namespace

TEST(Graph, LoadsAndLinks) {
  auto l = loadBytes(convRelu().SerializeAsString());
  ASSERT_TRUE(l->model) << l->text();
  EXPECT_EQ(l->text(), "");
  const Graph &g = l->model->graph;
  ASSERT_EQ(g.nodes().size(), 2u);
  const Value *c = g.findValue("c");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->producer, g.nodes()[0].get());
  ASSERT_EQ(c->uses.size(), 1u);
  EXPECT_EQ(c->uses[0].node, g.nodes()[1].get());
  // Shape inference filled in the intermediate's type.
  ASSERT_TRUE(c->type.shape.has_value());
  EXPECT_EQ(c->type.str(), "float[1,3,4,4]");
  const Value *w = g.findValue("W");
  ASSERT_TRUE(w && w->constant);
  EXPECT_EQ(w->constant->numElements(), 6);
  EXPECT_EQ(w->constant->at(5), 2.5);
  EXPECT_EQ(w->constant->raw.size(), 24u);
  EXPECT_EQ(g.topologicalOrder().size(), 2u);
}

TEST(Graph, UnsortedFileGetsTopologicalOrder) {
  onnx::ModelProto m = convRelu();
  m.mutable_graph()->mutable_node()->SwapElements(0, 1);
  auto l = loadBytes(m.SerializeAsString());
  // ONNX Runtime runs such files: the loader sorts the nodes (before libonnx's
  // checker, which insists on the order) with a note, and the graph is the
  // sorted file's: the relu reads the conv's output.
  ASSERT_TRUE(l->model) << l->text();
  EXPECT_NE(l->text().find("not in topological order"), std::string::npos) << l->text();
  const Graph &g = l->model->graph;
  ASSERT_EQ(g.topologicalOrder().size(), 2u);
  EXPECT_EQ(g.topologicalOrder()[0]->opType, "Conv");
  EXPECT_EQ(g.topologicalOrder()[1]->opType, "Relu");
  const Value *c = g.findValue("c");
  ASSERT_TRUE(c && c->type.shape.has_value()); // shape inference ran on the sorted nodes
  EXPECT_EQ(c->type.str(), "float[1,3,4,4]");
}

TEST(Graph, RoundTripIsExact) {
  auto l = loadBytes(convRelu().SerializeAsString());
  ASSERT_TRUE(l->model) << l->text();
  std::string bytes, error;
  ASSERT_TRUE(serializeModel(*l->model, bytes, error)) << error;
  auto l2 = loadBytes(bytes);
  ASSERT_TRUE(l2->model) << l2->text();
  std::string why;
  EXPECT_TRUE(sameModel(*l->model, *l2->model, &why)) << why;
  std::string bytes2;
  ASSERT_TRUE(serializeModel(*l2->model, bytes2, error));
  EXPECT_EQ(bytes, bytes2);
}

TEST(Graph, ConstantNodeIsConstant) {
  onnx::ModelProto m = convRelu();
  auto *g = m.mutable_graph();
  auto *k = g->add_node();
  k->set_op_type("Constant");
  k->add_output("k");
  auto *a = k->add_attribute();
  a->set_name("value_float");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(6.0f);
  // Move the Constant first so that the file stays sorted.
  for (int i = g->node_size() - 1; i > 0; --i)
    g->mutable_node()->SwapElements(i, i - 1);
  auto l = loadBytes(m.SerializeAsString());
  ASSERT_TRUE(l->model) << l->text();
  const Value *kv = l->model->graph.findValue("k");
  ASSERT_TRUE(kv && kv->constant);
  EXPECT_EQ(kv->constant->scalar(), 6.0);
}

//===----------------------------------------------------------------------===//
// Hostile input: a clear error, no crash, no huge allocation
//===----------------------------------------------------------------------===//

TEST(GraphBadInput, TruncatedFile) {
  std::string bytes = convRelu().SerializeAsString();
  for (size_t cut : {size_t(1), bytes.size() / 2, bytes.size() - 1}) {
    auto l = loadBytes(bytes.substr(0, cut));
    EXPECT_FALSE(l->model) << cut;
    EXPECT_TRUE(l->diags.hasErrors()) << cut;
  }
}

TEST(GraphBadInput, RandomBytes) {
  std::mt19937 rng(42);
  for (int round = 0; round < 50; ++round) {
    std::string bytes(1 + rng() % 4096, '\0');
    for (char &c : bytes)
      c = char(rng());
    auto l = loadBytes(bytes);
    EXPECT_FALSE(l->model);
    EXPECT_TRUE(l->diags.hasErrors());
  }
}

TEST(GraphBadInput, Cycle) {
  onnx::ModelProto m = convRelu();
  // conv consumes relu's output: conv -> relu -> conv.
  m.mutable_graph()->mutable_node(0)->set_input(0, "y");
  auto l = loadBytes(m.SerializeAsString());
  EXPECT_FALSE(l->model);
  EXPECT_EQ(l->text(), "m.onnx: the graph has a cycle: 'relu' -> 'conv' -> 'relu'\n");
}

TEST(GraphBadInput, UndefinedValue) {
  onnx::ModelProto m = convRelu();
  m.mutable_graph()->mutable_node(1)->set_input(0, "nowhere");
  auto l = loadBytes(m.SerializeAsString());
  EXPECT_FALSE(l->model);
  EXPECT_EQ(l->text(), "m.onnx: node 'relu' (Relu): input 0 `nowhere` is not "
                       "defined by any node, graph input or initializer\n");
}

TEST(GraphBadInput, ValueDefinedTwice) {
  onnx::ModelProto m = convRelu();
  m.mutable_graph()->mutable_node(1)->set_output(0, "c");
  auto l = loadBytes(m.SerializeAsString());
  EXPECT_FALSE(l->model);
  EXPECT_NE(l->text().find("`c` is defined twice"), std::string::npos) << l->text();
}

TEST(GraphBadInput, DeclaredSizeExceedsData) {
  onnx::ModelProto m = convRelu();
  m.mutable_graph()->mutable_initializer(0)->set_dims(0, 3000);
  auto l = loadBytes(m.SerializeAsString());
  EXPECT_FALSE(l->model);
  EXPECT_EQ(l->text(), "m.onnx: initializer 'W': tensor `W`: shape [3000,2,1,1] "
                       "of float declares 6000 elements (24000 bytes) but the "
                       "tensor holds 6 values\n");
}

TEST(GraphBadInput, HugeShapeAllocatesNothing) {
  onnx::ModelProto m = convRelu();
  auto *w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->clear_dims();
  w->add_dims(int64_t(1) << 20);
  w->add_dims(int64_t(1) << 20); // 2^40 elements, 4 TiB as float
  w->set_raw_data(std::string(16, '\0'));
  auto l = loadBytes(m.SerializeAsString());
  EXPECT_FALSE(l->model);
  EXPECT_NE(l->text().find("declares 1099511627776 elements"), std::string::npos) << l->text();
}

TEST(GraphBadInput, ShapeOverflow) {
  onnx::ModelProto m = convRelu();
  auto *w = m.mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  for (int k = 0; k < 4; ++k)
    w->add_dims(int64_t(1) << 40);
  auto l = loadBytes(m.SerializeAsString());
  EXPECT_FALSE(l->model);
  EXPECT_NE(l->text().find("overflows"), std::string::npos) << l->text();
}

TEST(GraphBadInput, ExternalDataOutsideModelFolder) {
  onnx::ModelProto m = convRelu();
  auto *w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto *kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value("../../etc/passwd");
  auto l = loadBytes(m.SerializeAsString());
  EXPECT_FALSE(l->model);
  EXPECT_NE(l->text().find("leaves the model's folder"), std::string::npos) << l->text();
}

TEST(Graph, ExternalDataIsInlined) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("tpcc-ext", dir));
  std::string data(24 + 8, '\0');
  float vals[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(data.data() + 8, vals, 24);
  {
    llvm::SmallString<128> p(dir);
    llvm::sys::path::append(p, "w.bin");
    std::error_code ec;
    llvm::raw_fd_ostream os(p, ec);
    os << data;
  }
  onnx::ModelProto m = convRelu();
  auto *w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char *k, const char *v) {
    auto *kv = w->add_external_data();
    kv->set_key(k);
    kv->set_value(v);
  };
  add("location", "w.bin");
  add("offset", "8");
  add("length", "24");
  auto l = loadBytes(m.SerializeAsString(), dir.str().str());
  ASSERT_TRUE(l->model) << l->text();
  EXPECT_EQ(l->model->graph.findValue("W")->constant->at(3), 4.0);
  // Data beyond the file's end.
  w->mutable_external_data(2)->set_value("4000");
  auto l2 = loadBytes(m.SerializeAsString(), dir.str().str());
  EXPECT_FALSE(l2->model);
  EXPECT_NE(l2->text().find("beyond the end"), std::string::npos) << l2->text();
  llvm::sys::fs::remove_directories(dir);
}

TEST(Graph, NewerOpsetWarnsAndContinues) {
  onnx::ModelProto m = convRelu();
  m.mutable_opset_import(0)->set_version(99);
  auto l = loadBytes(m.SerializeAsString());
  ASSERT_TRUE(l->model) << l->text();
  EXPECT_NE(l->text().find("opset 99, newer than libonnx knows (17)"), std::string::npos)
      << l->text();
}

TEST(Graph, CheckerErrorsAreReported) {
  onnx::ModelProto m = convRelu();
  m.mutable_graph()->mutable_node(1)->set_op_type("NoSuchOp");
  auto l = loadBytes(m.SerializeAsString());
  EXPECT_FALSE(l->model);
  EXPECT_NE(l->text().find("the ONNX checker rejects the model"), std::string::npos) << l->text();
}

//===----------------------------------------------------------------------===//
// The ONNX node test suite (libonnx-testdata): every model loads, verifies
// and round-trips.
//===----------------------------------------------------------------------===//

TEST(GraphNodeSuite, EveryModelRoundTrips) {
  const std::string root = TPCC_ONNX_TESTDATA_DIR "/node";
  if (!llvm::sys::fs::is_directory(root))
    GTEST_SKIP() << "libonnx-testdata is not installed at " << root
                 << " (scripts/setup installs it)";
  std::vector<std::string> models;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::SmallString<256> p(it->path());
    llvm::sys::path::append(p, "model.onnx");
    if (llvm::sys::fs::exists(p))
      models.push_back(p.str().str());
  }
  std::sort(models.begin(), models.end());
  ASSERT_GT(models.size(), 900u);
  unsigned passed = 0;
  for (const std::string &path : models) {
    Loaded l;
    l.model = loadModel(path, l.diags);
    if (!l.model || l.diags.hasErrors()) {
      ADD_FAILURE() << path << ":\n" << l.text();
      continue;
    }
    std::string bytes, error;
    if (!serializeModel(*l.model, bytes, error)) {
      ADD_FAILURE() << path << ": " << error;
      continue;
    }
    Loaded again;
    again.model = loadModelFromBuffer(bytes, path, ".", again.diags);
    std::string why;
    if (!again.model) {
      ADD_FAILURE() << path << ": the written model does not load:\n" << again.text();
      continue;
    }
    if (!sameModel(*l.model, *again.model, &why)) {
      ADD_FAILURE() << path << ": differs after a round trip: " << why;
      continue;
    }
    std::string bytes2;
    serializeModel(*again.model, bytes2, error);
    if (bytes != bytes2) {
      ADD_FAILURE() << path << ": writing is not idempotent";
      continue;
    }
    ++passed;
  }
  std::cout << "[ node suite ] " << passed << " of " << models.size()
            << " models loaded, verified and round-tripped\n";
  EXPECT_EQ(passed, models.size());
}
