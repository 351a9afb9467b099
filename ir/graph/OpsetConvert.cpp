//===- OpsetConvert.cpp - Moving a model to a newer ai.onnx opset -----------===//
//
// Through libonnx's version converter (the one onnx.version_converter calls):
// the model is serialized, converted as a ModelProto and loaded again, so the
// result is verified and shape-inferred like any file.
//
// Softmax, LogSoftmax and Hardmax changed meaning at opset 13 (before: the
// input coerced to 2-D at `axis`, default 1; since: one axis, default -1).
// libonnx adapts them only when it knows the input's rank, which exporters'
// Shape -> Slice -> Concat -> Reshape chains hide. Those nodes are converted
// here instead, without the rank: they cross the converter as Identity
// nodes, then become the same op with the same axis where that axis is the
// last one (an axis of -1, or the rank known after conversion), else
// Flatten(axis) -> op(axis 1) -> Reshape(Shape(x)), which is what the old
// definition says. Any other converter failure is a diagnostic that names
// the first node of the operator it failed on, not libonnx's assertion text.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <fmt/format.h>

#include <map>
#include <regex>

using namespace tpcc;
using namespace tpcc::graph;

namespace {

/// A Softmax-family node the converter does not see: its op, its axis
/// (opset < 13 meaning) and name, by its output's name.
struct Coerced {
  std::string op, name;
  int64_t axis = 1;
};

bool coercesTo2D(const onnx::NodeProto &n) {
  return (n.domain().empty() || n.domain() == "ai.onnx") &&
         (n.op_type() == "Softmax" || n.op_type() == "LogSoftmax" || n.op_type() == "Hardmax") &&
         n.input_size() == 1 && n.output_size() == 1 && !n.output(0).empty();
}

/// Replaces the Softmax-family nodes of `g` by Identity nodes.
std::map<std::string, Coerced> hideCoerced(onnx::GraphProto &g) {
  std::map<std::string, Coerced> hidden;
  for (onnx::NodeProto &n : *g.mutable_node()) {
    if (!coercesTo2D(n))
      continue;
    Coerced c{n.op_type(), n.name(), 1};
    for (const auto &a : n.attribute())
      if (a.name() == "axis")
        c.axis = a.i();
    hidden.emplace(n.output(0), c);
    n.set_op_type("Identity");
    n.clear_attribute();
  }
  return hidden;
}

/// The rank shape inference found for `name` in `g`, or -1.
int64_t rankOf(const onnx::GraphProto &g, const std::string &name) {
  auto rank = [](const onnx::ValueInfoProto &v) -> int64_t {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
      return -1;
    return v.type().tensor_type().shape().dim_size();
  };
  for (const auto &v : g.value_info())
    if (v.name() == name)
      return rank(v);
  for (const auto &v : g.input())
    if (v.name() == name)
      return rank(v);
  return -1;
}

onnx::NodeProto makeNode(const std::string &op, const std::string &name,
                         std::vector<std::string> in, std::string out) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (std::string &s : in)
    n.add_input(std::move(s));
  n.add_output(std::move(out));
  return n;
}

void setAxis(onnx::NodeProto &n, int64_t axis) {
  auto *a = n.add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(axis);
}

/// Puts the hidden nodes back into the converted graph, in opset 13 terms.
void restoreCoerced(onnx::ModelProto &model, const std::map<std::string, Coerced> &hidden) {
  onnx::ModelProto inferred = model; // shape inference on a copy: ranks only
  try {
    onnx::shape_inference::InferShapes(inferred);
  } catch (const std::exception &) {
  }
  const onnx::GraphProto &typed = inferred.graph();
  onnx::GraphProto &g = *model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (onnx::NodeProto &n : *g.mutable_node()) {
    auto it =
        n.op_type() == "Identity" && n.output_size() == 1 ? hidden.find(n.output(0)) : hidden.end();
    if (it == hidden.end()) {
      *nodes.Add() = std::move(n);
      continue;
    }
    const Coerced &c = it->second;
    std::string x = n.input(0), y = n.output(0);
    int64_t rank = rankOf(typed, x);
    if (c.axis == -1 || (rank > 0 && (c.axis == rank - 1 || c.axis == -1))) {
      onnx::NodeProto op = makeNode(c.op, c.name, {x}, y);
      setAxis(op, c.axis);
      *nodes.Add() = std::move(op);
      continue;
    }
    // The old definition: softmax over the flattened axes from `axis` on.
    std::string flat = y + "_coerced_2d", soft = y + "_coerced_" + c.op, shape = y + "_shape";
    onnx::NodeProto flatten = makeNode("Flatten", c.name + "_flatten", {x}, flat);
    setAxis(flatten, c.axis);
    onnx::NodeProto op = makeNode(c.op, c.name, {flat}, soft);
    setAxis(op, 1);
    *nodes.Add() = std::move(flatten);
    *nodes.Add() = std::move(op);
    *nodes.Add() = makeNode("Shape", c.name + "_shape", {x}, shape);
    *nodes.Add() = makeNode("Reshape", c.name + "_reshape", {soft, shape}, y);
  }
  g.mutable_node()->Swap(&nodes);
}

/// The first node of the operator libonnx's adapter `adapt_<op>_<from>_<to>`
/// names in `what`, or null.
const Node *failingNode(const Model &m, const std::string &what) {
  std::smatch match;
  static const std::regex adapter("adapt_([A-Za-z]+)_[0-9]+_[0-9]+");
  if (!std::regex_search(what, match, adapter))
    return nullptr;
  for (const Node *n : m.graph.topologicalOrder())
    if (llvm::StringRef(n->opType).equals_insensitive(match[1].str()))
      return n;
  return nullptr;
}

/// libonnx's message without its `file.h:53: function: Assertion ... failed:`
/// prefix.
std::string plainMessage(std::string what) {
  size_t failed = what.find(" failed: ");
  if (failed != std::string::npos)
    what = what.substr(failed + 9);
  if (size_t nl = what.find('\n'); nl != std::string::npos)
    what.resize(nl);
  return what;
}

} // namespace

std::unique_ptr<Model> graph::convertOpset(const Model &m, int64_t version,
                                           DiagnosticEngine &diags) {
  std::string bytes, error;
  onnx::ModelProto proto;
  if (!serializeModel(m, bytes, error) || !proto.ParseFromString(bytes)) {
    diags.emitAt(m.path, diag::err_model_tensor, "(model)",
                 fmt::format("cannot convert to ai.onnx opset {}: {}", version,
                             error.empty() ? "the model does not serialize" : error));
    return nullptr;
  }
  std::map<std::string, Coerced> hidden;
  if (version >= 13 && m.opsetVersion("").value_or(1) < 13)
    hidden = hideCoerced(*proto.mutable_graph());
  try {
    onnx::ModelProto converted = onnx::version_conversion::ConvertVersion(proto, int(version));
    if (!hidden.empty())
      restoreCoerced(converted, hidden);
    bytes.clear();
    converted.SerializeToString(&bytes);
  } catch (const std::exception &e) {
    std::string why = fmt::format("cannot convert the model to ai.onnx opset {}: {}", version,
                                  plainMessage(e.what()));
    if (const Node *n = failingNode(m, e.what()))
      diags.emitAt(describeNode(m.path, *n), diag::err_quant_unsupported, why);
    else
      diags.emitAt(m.path, diag::err_quant_unsupported, why);
    return nullptr;
  }
  std::unique_ptr<Model> out =
      loadModelFromBuffer(bytes, m.path, llvm::sys::path::parent_path(m.path), diags);
  if (out)
    out->path = m.path;
  return out;
}
