//===- OnnxWriter.cpp - Model IR -> ONNX protobuf ---------------------------===//

#include "ir/graph/OnnxIO.h"
#include "ir/graph/SubgraphProto.h"
#include "support/AtomicFile.h"

#include <onnx/onnx_pb.h>

using namespace tpcc;
using namespace tpcc::graph;
using ir::OnnxAttrType;

static void writeTensor(const Tensor &t, onnx::TensorProto &p) {
  p.set_name(t.name);
  p.set_data_type(int32_t(t.elem));
  for (int64_t d : t.dims)
    p.add_dims(d);
  if (!t.docString.empty())
    p.set_doc_string(t.docString);
  if (t.elem == ElemType::String)
    for (const std::string &s : t.strings)
      p.add_string_data(s);
  else if (isFourBit(t.elem))
    p.set_raw_data(packFourBit(t.raw, t.numElements()));
  else
    p.set_raw_data(t.raw);
}

static bool writeAttribute(const Attribute &a, onnx::AttributeProto &p) {
  if (!a.raw.empty())
    return p.ParseFromString(a.raw);
  p.set_name(a.name);
  p.set_type(onnx::AttributeProto::AttributeType(a.type));
  if (!a.docString.empty())
    p.set_doc_string(a.docString);
  switch (a.type) {
  case OnnxAttrType::Int:
    p.set_i(a.i);
    break;
  case OnnxAttrType::Float:
    p.set_f(float(a.f));
    break;
  case OnnxAttrType::String:
    p.set_s(a.s);
    break;
  case OnnxAttrType::Ints:
    for (int64_t v : a.ints)
      p.add_ints(v);
    break;
  case OnnxAttrType::Floats:
    for (double v : a.floats)
      p.add_floats(float(v));
    break;
  case OnnxAttrType::Strings:
    for (const std::string &v : a.strings)
      p.add_strings(v);
    break;
  case OnnxAttrType::Tensor:
    if (!a.tensors.empty())
      writeTensor(a.tensors[0], *p.mutable_t());
    break;
  case OnnxAttrType::Tensors:
    for (const Tensor &t : a.tensors)
      writeTensor(t, *p.add_tensors());
    break;
  default:
    break;
  }
  return true;
}

static bool writeValueInfo(const Value &v, onnx::ValueInfoProto &p) {
  p.set_name(v.name);
  if (!v.docString.empty())
    p.set_doc_string(v.docString);
  if (!v.hasTypeInfo)
    return true;
  if (!v.opaqueType.empty())
    return p.mutable_type()->ParseFromString(v.opaqueType);
  auto *tt = p.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(int32_t(v.type.elem));
  if (v.type.shape) {
    auto *shape = tt->mutable_shape();
    for (const Dim &d : *v.type.shape) {
      auto *dp = shape->add_dim();
      if (d.known())
        dp->set_dim_value(d.value);
      else if (!d.param.empty())
        dp->set_dim_param(d.param);
    }
  }
  return true;
}

/// A transform may have replaced a value a subgraph of `n` reads: the
/// subgraphs then read the new name.
static void renameCaptures(const Node &n, onnx::NodeProto &np) {
  std::map<std::string, std::string> renames;
  for (size_t k = 0; k < n.captures.size(); ++k)
    if (const Value *v = n.inputs[n.numOwnInputs() + k]; v && v->name != n.captures[k])
      renames.emplace(n.captures[k], v->name);
  if (renames.empty())
    return;
  for (onnx::AttributeProto &a : *np.mutable_attribute()) {
    if (a.has_g())
      proto::renameReads(*a.mutable_g(), renames);
    for (onnx::GraphProto &g : *a.mutable_graphs())
      proto::renameReads(g, renames);
  }
}

std::string graph::serializeTensor(const Tensor &t) {
  onnx::TensorProto p;
  writeTensor(t, p);
  return p.SerializeAsString();
}

bool graph::serializeModel(const Model &m, std::string &bytes, std::string &error) {
  onnx::ModelProto p;
  p.set_ir_version(m.irVersion);
  for (const OpsetImport &o : m.opsets) {
    auto *op = p.add_opset_import();
    op->set_domain(o.domain);
    op->set_version(o.version);
  }
  if (!m.producerName.empty())
    p.set_producer_name(m.producerName);
  if (!m.producerVersion.empty())
    p.set_producer_version(m.producerVersion);
  if (!m.domain.empty())
    p.set_domain(m.domain);
  if (!m.docString.empty())
    p.set_doc_string(m.docString);
  if (m.modelVersion)
    p.set_model_version(m.modelVersion);
  for (const auto &[k, v] : m.metadata) {
    auto *kv = p.add_metadata_props();
    kv->set_key(k);
    kv->set_value(v);
  }
  bool ok = true;
  for (const std::string &f : m.functions)
    ok &= p.add_functions()->ParseFromString(f);
  for (const std::string &t : m.trainingInfo)
    ok &= p.add_training_info()->ParseFromString(t);

  const Graph &g = m.graph;
  auto *gp = p.mutable_graph();
  gp->set_name(g.name);
  if (!g.docString.empty())
    gp->set_doc_string(g.docString);
  for (const Value *v : g.inputs())
    ok &= writeValueInfo(*v, *gp->add_input());
  for (const auto &t : g.initializers())
    writeTensor(*t, *gp->add_initializer());
  // ONNX wants nodes sorted: the verified order when there is one (the file
  // order for a sorted file), so edited graphs write valid files.
  std::vector<const Node *> order(g.topologicalOrder().begin(), g.topologicalOrder().end());
  if (order.size() != g.nodes().size()) {
    order.clear();
    for (const auto &n : g.nodes())
      order.push_back(n.get());
  }
  for (const Node *n : order) {
    auto *np = gp->add_node();
    for (size_t k = 0; k < n->numOwnInputs(); ++k)
      np->add_input(n->inputs[k] ? n->inputs[k]->name : "");
    for (const Value *v : n->outputs)
      np->add_output(v ? v->name : "");
    if (!n->name.empty())
      np->set_name(n->name);
    np->set_op_type(n->opType);
    if (!n->domain.empty())
      np->set_domain(n->domain);
    if (!n->docString.empty())
      np->set_doc_string(n->docString);
    for (const Attribute &a : n->attributes)
      ok &= writeAttribute(a, *np->add_attribute());
    renameCaptures(*n, *np);
  }
  for (const Value *v : g.outputs())
    ok &= writeValueInfo(*v, *gp->add_output());
  // Types of intermediate values: those the file listed and those shape
  // inference found, in value order.
  for (const auto &v : g.values())
    if (!v->isGraphInput && !v->isGraphOutput &&
        (v->inValueInfo || (v->hasTypeInfo && v->producer)))
      ok &= writeValueInfo(*v, *gp->add_value_info());
  for (const std::string &qa : g.quantizationAnnotations)
    ok &= gp->add_quantization_annotation()->ParseFromString(qa);
  if (!ok) {
    error = "a kept subgraph, function or type no longer decodes";
    return false;
  }
  if (p.ByteSizeLong() > (size_t(2) << 30) - 1) {
    error = "the model exceeds protobuf's 2 GiB limit";
    return false;
  }
  bytes.clear();
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    p.SerializeToCodedStream(&coded);
  }
  return true;
}

bool graph::writeModel(const Model &m, llvm::StringRef path, std::string &error) {
  std::string bytes;
  return serializeModel(m, bytes, error) && writeFileAtomically(path, bytes, error);
}
