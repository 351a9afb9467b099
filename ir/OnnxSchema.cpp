//===- OnnxSchema.cpp - Index of the ONNX operator schemas ----------------===//
//
// Builds the index of OnnxSchema.h from libonnx's `OpSchemaRegistry`. This is
// the only file of tpcc that reads ONNX operator schemas.
//
//===----------------------------------------------------------------------===//
#include "ir/OnnxSchema.h"

#include "onnx/defs/schema.h"

#include <algorithm>
#include <limits>
#include <sstream>

using namespace tpcc;
using namespace tpcc::ir;

namespace onnxns = ::ONNX_NAMESPACE;

//===----------------------------------------------------------------------===//
// Attribute types and values
//===----------------------------------------------------------------------===//

const char *ir::toString(OnnxAttrType t) {
  switch (t) {
  case OnnxAttrType::Undefined:
    return "UNDEFINED";
  case OnnxAttrType::Float:
    return "FLOAT";
  case OnnxAttrType::Int:
    return "INT";
  case OnnxAttrType::String:
    return "STRING";
  case OnnxAttrType::Tensor:
    return "TENSOR";
  case OnnxAttrType::Graph:
    return "GRAPH";
  case OnnxAttrType::SparseTensor:
    return "SPARSE_TENSOR";
  case OnnxAttrType::TypeProto:
    return "TYPE_PROTO";
  case OnnxAttrType::Floats:
    return "FLOATS";
  case OnnxAttrType::Ints:
    return "INTS";
  case OnnxAttrType::Strings:
    return "STRINGS";
  case OnnxAttrType::Tensors:
    return "TENSORS";
  case OnnxAttrType::Graphs:
    return "GRAPHS";
  case OnnxAttrType::SparseTensors:
    return "SPARSE_TENSORS";
  case OnnxAttrType::TypeProtos:
    return "TYPE_PROTOS";
  }
  return "UNDEFINED";
}

const char *ir::describe(OnnxAttrType t) {
  switch (t) {
  case OnnxAttrType::Undefined:
    return "of no type";
  case OnnxAttrType::Float:
    return "a float";
  case OnnxAttrType::Int:
    return "an integer";
  case OnnxAttrType::String:
    return "a string";
  case OnnxAttrType::Tensor:
    return "a tensor";
  case OnnxAttrType::Graph:
    return "a graph";
  case OnnxAttrType::SparseTensor:
    return "a sparse tensor";
  case OnnxAttrType::TypeProto:
    return "a type";
  case OnnxAttrType::Floats:
    return "a list of floats";
  case OnnxAttrType::Ints:
    return "a list of integers";
  case OnnxAttrType::Strings:
    return "a list of strings";
  case OnnxAttrType::Tensors:
    return "a list of tensors";
  case OnnxAttrType::Graphs:
    return "a list of graphs";
  case OnnxAttrType::SparseTensors:
    return "a list of sparse tensors";
  case OnnxAttrType::TypeProtos:
    return "a list of types";
  }
  return "of no type";
}

bool ir::isListType(OnnxAttrType t) {
  switch (t) {
  case OnnxAttrType::Floats:
  case OnnxAttrType::Ints:
  case OnnxAttrType::Strings:
  case OnnxAttrType::Tensors:
  case OnnxAttrType::Graphs:
  case OnnxAttrType::SparseTensors:
  case OnnxAttrType::TypeProtos:
    return true;
  default:
    return false;
  }
}

OnnxAttrType ir::elementType(OnnxAttrType t) {
  switch (t) {
  case OnnxAttrType::Floats:
    return OnnxAttrType::Float;
  case OnnxAttrType::Ints:
    return OnnxAttrType::Int;
  case OnnxAttrType::Strings:
    return OnnxAttrType::String;
  case OnnxAttrType::Tensors:
    return OnnxAttrType::Tensor;
  case OnnxAttrType::Graphs:
    return OnnxAttrType::Graph;
  case OnnxAttrType::SparseTensors:
    return OnnxAttrType::SparseTensor;
  case OnnxAttrType::TypeProtos:
    return OnnxAttrType::TypeProto;
  default:
    return t;
  }
}

static std::string formatDouble(double v) {
  std::ostringstream os;
  os.precision(std::numeric_limits<double>::max_digits10);
  os << v;
  std::string s = os.str();
  // Print whole floats as `1.0`, not `1`, so they read as floats.
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

static std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\')
      out += '\\';
    out += ch;
  }
  return out + "\"";
}

std::string OnnxAttrValue::str() const {
  auto join = [](const auto &list, auto fn) {
    std::string out = "[";
    for (size_t k = 0; k < list.size(); ++k)
      out += (k ? ", " : "") + fn(list[k]);
    return out + "]";
  };
  switch (type) {
  case OnnxAttrType::Int:
    return std::to_string(i);
  case OnnxAttrType::Float:
    return formatDouble(f);
  case OnnxAttrType::String:
    return quote(s);
  case OnnxAttrType::Ints:
    return join(ints, [](int64_t v) { return std::to_string(v); });
  case OnnxAttrType::Floats:
    return join(floats, formatDouble);
  case OnnxAttrType::Strings:
    return join(strings, quote);
  default:
    return toString(type);
  }
}

//===----------------------------------------------------------------------===//
// Lookups
//===----------------------------------------------------------------------===//

const OnnxAttr *OnnxOpVersion::findAttr(llvm::StringRef name) const {
  auto it = std::lower_bound(attributes.begin(), attributes.end(), name,
                             [](const OnnxAttr &a, llvm::StringRef n) { return a.name < n; });
  return it != attributes.end() && it->name == name ? &*it : nullptr;
}

bool OnnxAttrUnion::hasType(OnnxAttrType t) const {
  return std::find(types.begin(), types.end(), t) != types.end();
}

const OnnxOpVersion *OnnxOp::atOpset(int opset) const {
  const OnnxOpVersion *found = nullptr;
  for (const OnnxOpVersion &v : versions)
    if (v.sinceVersion <= opset)
      found = &v;
  return found;
}

const OnnxAttrUnion *OnnxOp::findAttr(llvm::StringRef name) const {
  auto it = std::lower_bound(attributes.begin(), attributes.end(), name,
                             [](const OnnxAttrUnion &a, llvm::StringRef n) { return a.name < n; });
  return it != attributes.end() && it->name == name ? &*it : nullptr;
}

std::vector<std::string> OnnxOp::attributeNames() const {
  std::vector<std::string> out;
  out.reserve(attributes.size());
  for (const OnnxAttrUnion &a : attributes)
    out.push_back(a.name);
  return out;
}

const OnnxOp *OnnxSchemaIndex::find(llvm::StringRef name) const {
  auto it = ops.find(name);
  return it == ops.end() ? nullptr : &it->second;
}

//===----------------------------------------------------------------------===//
// Building the index
//===----------------------------------------------------------------------===//

static OnnxAttrType convertType(onnxns::AttributeProto::AttributeType t) {
  using AP = onnxns::AttributeProto;
  switch (t) {
  case AP::FLOAT:
    return OnnxAttrType::Float;
  case AP::INT:
    return OnnxAttrType::Int;
  case AP::STRING:
    return OnnxAttrType::String;
  case AP::TENSOR:
    return OnnxAttrType::Tensor;
  case AP::GRAPH:
    return OnnxAttrType::Graph;
  case AP::SPARSE_TENSOR:
    return OnnxAttrType::SparseTensor;
  case AP::TYPE_PROTO:
    return OnnxAttrType::TypeProto;
  case AP::FLOATS:
    return OnnxAttrType::Floats;
  case AP::INTS:
    return OnnxAttrType::Ints;
  case AP::STRINGS:
    return OnnxAttrType::Strings;
  case AP::TENSORS:
    return OnnxAttrType::Tensors;
  case AP::GRAPHS:
    return OnnxAttrType::Graphs;
  case AP::SPARSE_TENSORS:
    return OnnxAttrType::SparseTensors;
  case AP::TYPE_PROTOS:
    return OnnxAttrType::TypeProtos;
  default:
    return OnnxAttrType::Undefined;
  }
}

/// The schema's default value, when it has one of a representable type.
static std::optional<OnnxAttrValue> convertDefault(const onnxns::AttributeProto &proto) {
  OnnxAttrValue v;
  v.type = convertType(proto.type());
  switch (v.type) {
  case OnnxAttrType::Int:
    v.i = proto.i();
    break;
  case OnnxAttrType::Float:
    v.f = proto.f();
    break;
  case OnnxAttrType::String:
    v.s = proto.s();
    break;
  case OnnxAttrType::Ints:
    v.ints.assign(proto.ints().begin(), proto.ints().end());
    break;
  case OnnxAttrType::Floats:
    v.floats.assign(proto.floats().begin(), proto.floats().end());
    break;
  case OnnxAttrType::Strings:
    v.strings.assign(proto.strings().begin(), proto.strings().end());
    break;
  default:
    // No default (UNDEFINED), or a tensor/graph default, which no ONNX
    // operator declares and tpcc would have no use for.
    return std::nullopt;
  }
  return v;
}

static OnnxOpVersion convertVersion(const onnxns::OpSchema &schema) {
  OnnxOpVersion v;
  v.sinceVersion = schema.since_version();
  v.deprecated = schema.deprecated();
  bool variadic = false;
  for (const auto &param : schema.inputs()) {
    OnnxInput in;
    in.name = param.GetName();
    in.differentiable = param.GetDifferentiationCategory() == onnxns::OpSchema::Differentiable;
    switch (param.GetOption()) {
    case onnxns::OpSchema::Single:
      in.option = OnnxInput::Option::Single;
      break;
    case onnxns::OpSchema::Optional:
      in.option = OnnxInput::Option::Optional;
      break;
    case onnxns::OpSchema::Variadic:
      in.option = OnnxInput::Option::Variadic;
      variadic = true;
      break;
    }
    v.inputs.push_back(std::move(in));
  }
  v.minInputs = unsigned(std::max(0, schema.min_input()));
  if (!variadic && schema.max_input() != std::numeric_limits<int>::max())
    v.maxInputs = unsigned(std::max(0, schema.max_input()));
  // `attributes()` is a std::map, so this is already sorted by name.
  for (const auto &[name, attr] : schema.attributes()) {
    OnnxAttr a;
    a.name = name;
    a.type = convertType(attr.type);
    a.required = attr.required;
    if (!attr.required)
      a.defaultValue = convertDefault(attr.default_value);
    v.attributes.push_back(std::move(a));
  }
  return v;
}

/// Fills the union over versions of `op`.
static void computeUnion(OnnxOp &op) {
  std::map<std::string, OnnxAttrUnion> attrs;
  op.maxInputs = 0u;
  for (const OnnxOpVersion &v : op.versions) {
    for (const OnnxAttr &a : v.attributes) {
      OnnxAttrUnion &u = attrs[a.name];
      u.name = a.name;
      if (!u.hasType(a.type))
        u.types.push_back(a.type);
      u.latest = &a; // versions are in ascending order
    }
    if (!v.maxInputs)
      op.maxInputs.reset();
    else if (op.maxInputs)
      op.maxInputs = std::max(*op.maxInputs, *v.maxInputs);
  }
  for (auto &[name, u] : attrs) {
    std::sort(u.types.begin(), u.types.end());
    op.attributes.push_back(std::move(u));
  }
}

OnnxSchemaIndex::OnnxSchemaIndex() {
  // Which domains tpcc matches ops of; on a name clash the default domain wins.
  static const char *const domains[] = {"" /* ai.onnx */, "ai.onnx.ml"};
  auto domainRank = [](const std::string &d) {
    for (size_t k = 0; k < std::size(domains); ++k)
      if (d == domains[k])
        return int(k);
    return -1;
  };

  // (name) -> (domain rank, since_version) -> version
  std::map<std::string, std::map<std::pair<int, int>, OnnxOpVersion>> byName;
  for (const onnxns::OpSchema &schema : onnxns::OpSchemaRegistry::get_all_schemas_with_history()) {
    int rank = domainRank(schema.domain());
    if (rank < 0)
      continue;
    byName[schema.Name()].emplace(std::make_pair(rank, schema.since_version()),
                                  convertVersion(schema));
  }

  for (auto &[name, versions] : byName) {
    OnnxOp op;
    op.name = name;
    int rank = versions.begin()->first.first; // the best domain present
    op.domain = domains[rank];
    for (auto &[key, version] : versions)
      if (key.first == rank)
        op.versions.push_back(std::move(version));
    // Computed in place: the union points into the op's final storage.
    computeUnion(ops.emplace(name, std::move(op)).first->second);
    names.push_back(name);
  }
}

const OnnxSchemaIndex &OnnxSchemaIndex::get() {
  // C++11 guarantees a thread-safe, once-only initialization.
  static const OnnxSchemaIndex index;
  return index;
}
