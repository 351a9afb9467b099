//===- OnnxLoader.cpp - ONNX protobuf -> model IR ---------------------------===//
//
// Order of work: decode the protobuf; inline external data; then, on two
// threads, libonnx's checker (a validator, built for untrusted input; it only
// reads) and our own conversion: tensors (sizes checked against the data
// before anything is allocated), the graph (values defined once, inputs
// defined) and the verifier (graph outputs, cycles). Our errors win (they are
// more precise); only a model that passes both meets shape inference, whose
// value types are copied back.
//
//===----------------------------------------------------------------------===//

#include "ir/graph/Float16Proto.h"
#include "ir/graph/OnnxIO.h"
#include "ir/graph/SubgraphProto.h"
#include "support/AtomicFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <fstream>
#include <thread>
#include <unordered_map>

using namespace tpcc;
using namespace tpcc::graph;
using ir::OnnxAttrType;

std::string graph::describeNode(llvm::StringRef modelName, const Node &n) {
  return fmt::format("{}: node '{}' ({})", modelName.str(), n.displayName(), n.opType);
}

namespace {

constexpr uint64_t kMaxModelBytes = uint64_t(2) << 30; // protobuf's limit

class Loader {
public:
  Loader(llvm::StringRef name, llvm::StringRef baseDir, DiagnosticEngine &diags)
      : name(name.str()), baseDir(baseDir.str()), diags(diags) {}

  std::unique_ptr<Model> load(llvm::StringRef bytes, const LoadOptions &opts);
  bool loadTensor(llvm::StringRef bytes, Tensor &t);
  void inferShapes(Model &m, bool propagateData);

private:
  bool inlineExternalData(onnx::TensorProto &t, const std::string &where);
  bool convertTensor(const onnx::TensorProto &p, Tensor &t, const std::string &where);
  bool convertAttribute(const onnx::AttributeProto &p, Attribute &a, const std::string &where);
  void convertType(const onnx::TypeProto &p, Value &v);
  bool buildGraph(const onnx::GraphProto &g, Model &m);
  bool defineValue(Value *v, const std::string &where);
  void copyTypes(const onnx::GraphProto &g, Model &m);
  bool libonnxApplies(const onnx::ModelProto &proto, const Model &m);
  template <typename F> bool forEachTensor(onnx::GraphProto &g, F f);

  std::string name, baseDir;
  DiagnosticEngine &diags;
  std::vector<bool> defined; ///< by value id
};

} // namespace

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

bool Loader::inlineExternalData(onnx::TensorProto &t, const std::string &where) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL)
    return true;
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &kv : t.external_data()) {
    char *end = nullptr;
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = std::strtoull(kv.value().c_str(), &end, 10);
    else if (kv.key() == "length")
      length = std::strtoull(kv.value().c_str(), &end, 10);
  }
  auto fail = [&](const std::string &msg) {
    diags.emitAt(where, diag::err_model_tensor, t.name(), msg);
    return false;
  };
  if (location.empty())
    return fail("external data without a `location`");
  // The data must live beside the model: no absolute paths, no `..`.
  if (llvm::sys::path::is_absolute(location) || llvm::StringRef(location).contains(".."))
    return fail(fmt::format("external data location `{}` leaves the model's "
                            "folder",
                            location));
  llvm::SmallString<256> path(baseDir);
  llvm::sys::path::append(path, location);
  uint64_t fileSize = 0;
  if (llvm::sys::fs::file_size(path, fileSize))
    return fail(fmt::format("cannot open external data file `{}`", path.str().str()));
  uint64_t len = length ? *length : fileSize - std::min(offset, fileSize);
  if (offset > fileSize || len > fileSize - offset)
    return fail(fmt::format("external data [{}, {}) lies beyond the end of "
                            "`{}` ({} bytes)",
                            offset, offset + len, location, fileSize));
  if (len > kMaxModelBytes)
    return fail("external data larger than 2 GiB");
  std::ifstream in(path.str().str(), std::ios::binary);
  std::string data(len, '\0');
  in.seekg(offset);
  if (!in.read(data.data(), std::streamsize(len)))
    return fail(fmt::format("cannot read external data file `{}`", location));
  t.set_raw_data(std::move(data));
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  return true;
}

template <typename Field, typename To>
static void packField(const Field &f, std::string &raw, size_t perElem) {
  raw.resize(size_t(f.size()) * sizeof(To));
  char *out = raw.data();
  for (auto v : f) {
    To x = static_cast<To>(v);
    std::memcpy(out, &x, sizeof(To));
    out += sizeof(To);
  }
  (void)perElem;
}

bool Loader::convertTensor(const onnx::TensorProto &p, Tensor &t, const std::string &where) {
  auto fail = [&](const std::string &msg) {
    diags.emitAt(where, diag::err_model_tensor, p.name(), msg);
    return false;
  };
  t.name = p.name();
  t.docString = p.doc_string();
  if (!isKnownElemType(p.data_type()))
    return fail(fmt::format("unknown data type {}", p.data_type()));
  t.elem = ElemType(p.data_type());
  if (p.has_segment())
    return fail("segmented tensors are not supported");
  if (p.data_location() == onnx::TensorProto::EXTERNAL)
    return fail("external data could not be resolved");
  int64_t n = 1;
  for (int64_t d : p.dims()) {
    if (d < 0)
      return fail(fmt::format("negative dimension {}", d));
    if (__builtin_mul_overflow(n, d, &n))
      return fail("the number of elements overflows 64 bits");
    t.dims.push_back(d);
  }
  auto shape = [&] {
    std::string s = "[";
    for (size_t k = 0; k < t.dims.size(); ++k)
      s += (k ? "," : "") + std::to_string(t.dims[k]);
    return s + "]";
  };
  if (t.elem == ElemType::String) {
    if (p.string_data_size() != n)
      return fail(fmt::format("shape {} declares {} strings but the tensor "
                              "holds {}",
                              shape(), n, p.string_data_size()));
    t.strings.assign(p.string_data().begin(), p.string_data().end());
    return true;
  }
  uint64_t size = elemSize(t.elem);
  uint64_t bytes;
  if (__builtin_mul_overflow(uint64_t(n), size, &bytes))
    return fail("the data size overflows 64 bits");
  // Compare the declared size with the data before allocating anything.
  auto mismatch = [&](uint64_t have, const char *unit) {
    return fail(fmt::format("shape {} of {} declares {} elements ({} bytes) but "
                            "the tensor holds {} {}",
                            shape(), toString(t.elem), n, bytes, have, unit));
  };
  if (isFourBit(t.elem)) {
    // Two elements a byte, in raw_data or one byte per int32_data entry.
    uint64_t packed = (uint64_t(n) + 1) / 2;
    bytes = packed;
    std::string data;
    if (p.has_raw_data()) {
      if (p.raw_data().size() != packed)
        return mismatch(p.raw_data().size(), "bytes");
      data = p.raw_data();
    } else {
      if (uint64_t(p.int32_data_size()) != packed)
        return mismatch(p.int32_data_size(), "values");
      for (int32_t v : p.int32_data())
        data += char(uint8_t(v));
    }
    t.raw = unpackFourBit(data, n, t.elem);
    return true;
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != bytes)
      return mismatch(p.raw_data().size(), "bytes");
    t.raw = p.raw_data();
    return true;
  }
  // Typed fields; complex types have two entries per element.
  uint64_t per = (t.elem == ElemType::Complex64 || t.elem == ElemType::Complex128) ? 2 : 1;
  uint64_t want = uint64_t(n) * per;
  switch (t.elem) {
  case ElemType::Float:
  case ElemType::Complex64:
    if (uint64_t(p.float_data_size()) != want)
      return mismatch(p.float_data_size(), "values");
    packField<decltype(p.float_data()), float>(p.float_data(), t.raw, per);
    return true;
  case ElemType::Double:
  case ElemType::Complex128:
    if (uint64_t(p.double_data_size()) != want)
      return mismatch(p.double_data_size(), "values");
    packField<decltype(p.double_data()), double>(p.double_data(), t.raw, per);
    return true;
  case ElemType::Int64:
    if (uint64_t(p.int64_data_size()) != want)
      return mismatch(p.int64_data_size(), "values");
    packField<decltype(p.int64_data()), int64_t>(p.int64_data(), t.raw, per);
    return true;
  case ElemType::UInt32:
  case ElemType::UInt64:
    if (uint64_t(p.uint64_data_size()) != want)
      return mismatch(p.uint64_data_size(), "values");
    if (t.elem == ElemType::UInt32)
      packField<decltype(p.uint64_data()), uint32_t>(p.uint64_data(), t.raw, per);
    else
      packField<decltype(p.uint64_data()), uint64_t>(p.uint64_data(), t.raw, per);
    return true;
  default: // int32_data holds every narrower integer type, bool and halves
    if (uint64_t(p.int32_data_size()) != want)
      return mismatch(p.int32_data_size(), "values");
    switch (size) {
    case 1:
      packField<decltype(p.int32_data()), uint8_t>(p.int32_data(), t.raw, per);
      break;
    case 2:
      packField<decltype(p.int32_data()), uint16_t>(p.int32_data(), t.raw, per);
      break;
    default:
      packField<decltype(p.int32_data()), int32_t>(p.int32_data(), t.raw, per);
      break;
    }
    return true;
  }
}

//===----------------------------------------------------------------------===//
// Attributes and types
//===----------------------------------------------------------------------===//

bool Loader::convertAttribute(const onnx::AttributeProto &p, Attribute &a,
                              const std::string &where) {
  a.name = p.name();
  a.docString = p.doc_string();
  a.type = OnnxAttrType(p.type());
  switch (p.type()) {
  case onnx::AttributeProto::INT:
    a.i = p.i();
    break;
  case onnx::AttributeProto::FLOAT:
    a.f = p.f();
    break;
  case onnx::AttributeProto::STRING:
    a.s = p.s();
    break;
  case onnx::AttributeProto::INTS:
    a.ints.assign(p.ints().begin(), p.ints().end());
    break;
  case onnx::AttributeProto::FLOATS:
    a.floats.assign(p.floats().begin(), p.floats().end());
    break;
  case onnx::AttributeProto::STRINGS:
    a.strings.assign(p.strings().begin(), p.strings().end());
    break;
  case onnx::AttributeProto::TENSOR:
    a.tensors.emplace_back();
    return convertTensor(p.t(), a.tensors.back(), where);
  case onnx::AttributeProto::TENSORS:
    for (const auto &t : p.tensors()) {
      a.tensors.emplace_back();
      if (!convertTensor(t, a.tensors.back(), where))
        return false;
    }
    break;
  default: // graphs, sparse tensors, type protos, references: kept as they are
    a.raw = p.SerializeAsString();
    break;
  }
  return true;
}

void Loader::convertType(const onnx::TypeProto &p, Value &v) {
  v.hasTypeInfo = true;
  if (!p.has_tensor_type()) {
    v.opaqueType = p.SerializeAsString();
    return;
  }
  const auto &tt = p.tensor_type();
  v.type.elem = isKnownElemType(tt.elem_type()) ? ElemType(tt.elem_type()) : ElemType::Undefined;
  if (!tt.has_shape()) {
    v.type.shape.reset();
    return;
  }
  std::vector<Dim> dims;
  for (const auto &d : tt.shape().dim()) {
    Dim x;
    if (d.has_dim_value() && d.dim_value() >= 0)
      x.value = d.dim_value();
    else if (d.has_dim_param())
      x.param = d.dim_param();
    dims.push_back(std::move(x));
  }
  v.type.shape = std::move(dims);
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

bool Loader::defineValue(Value *v, const std::string &where) {
  if (defined.size() <= v->id)
    defined.resize(v->id + 1, false);
  if (defined[v->id]) {
    diags.emitAt(where, diag::err_model_value_redefined, v->name);
    return false;
  }
  defined[v->id] = true;
  return true;
}

bool Loader::buildGraph(const onnx::GraphProto &gp, Model &m) {
  Graph &g = m.graph;
  g.name = gp.name();
  g.docString = gp.doc_string();
  if (gp.sparse_initializer_size())
    return diags.emitAt(name, diag::err_model_unsupported, "sparse initializers"), false;
  bool ok = true;
  for (const auto &in : gp.input()) {
    Value *v = g.getOrCreateValue(in.name());
    ok &= defineValue(v, name);
    if (in.has_type())
      convertType(in.type(), *v);
    v->docString = in.doc_string();
    g.addInput(v);
  }
  for (const auto &ip : gp.initializer()) {
    auto t = std::make_unique<Tensor>();
    if (!convertTensor(ip, *t, name + ": initializer '" + ip.name() + "'")) {
      ok = false;
      continue;
    }
    Value *v = g.getOrCreateValue(ip.name());
    // An initializer may give a graph input its default value.
    if (!v->isGraphInput)
      ok &= defineValue(v, name);
    else if (v->isInitializer)
      ok &= defineValue(v, name);
    v->isInitializer = true;
    v->constant = g.addInitializer(std::move(t));
    if (!v->hasTypeInfo) {
      v->type.elem = v->constant->elem;
      std::vector<Dim> dims;
      for (int64_t d : v->constant->dims)
        dims.push_back(Dim{d, {}});
      v->type.shape = std::move(dims);
    }
  }
  if (!ok)
    return false;
  for (const auto &np : gp.node()) {
    auto n = std::make_unique<Node>();
    n->name = np.name();
    n->opType = np.op_type();
    n->domain = np.domain();
    n->docString = np.doc_string();
    n->id = g.nodes().size();
    std::string where = describeNode(name, *n);
    for (const auto &ap : np.attribute()) {
      n->attributes.emplace_back();
      ok &= convertAttribute(ap, n->attributes.back(), where);
    }
    for (const std::string &in : np.input())
      n->inputs.push_back(in.empty() ? nullptr : g.getOrCreateValue(in));
    n->captures = proto::captures(np);
    for (const std::string &in : n->captures)
      n->inputs.push_back(g.getOrCreateValue(in));
    for (const std::string &out : np.output()) {
      Value *v = out.empty() ? nullptr : g.getOrCreateValue(out);
      if (v)
        ok &= defineValue(v, where);
      n->outputs.push_back(v);
    }
    g.addNode(std::move(n));
  }
  for (const auto &vi : gp.value_info()) {
    Value *v = g.getOrCreateValue(vi.name());
    v->docString = vi.doc_string();
    v->inValueInfo = true;
    if (vi.has_type())
      convertType(vi.type(), *v);
  }
  for (const auto &out : gp.output()) {
    Value *v = g.getOrCreateValue(out.name());
    if (out.has_type())
      convertType(out.type(), *v);
    v->docString = out.doc_string();
    g.addOutput(v);
  }
  for (const auto &qa : gp.quantization_annotation())
    g.quantizationAnnotations.push_back(qa.SerializeAsString());
  if (!ok)
    return false;
  g.link();
  // Constant nodes: their output is a constant.
  for (const auto &n : g.nodes()) {
    if (n->opType != "Constant" || !n->domain.empty() || n->outputs.size() != 1 || !n->outputs[0])
      continue;
    const Attribute *value = n->attr("value");
    if (value && value->type == OnnxAttrType::Tensor && value->tensors.size() == 1) {
      n->outputs[0]->constant = &value->tensors[0];
      continue;
    }
    // value_float(s) / value_int(s): a tensor made from the attribute.
    auto t = std::make_unique<Tensor>();
    t->name = n->outputs[0]->name;
    const Attribute *a = nullptr;
    if ((a = n->attr("value_float")) && a->type == OnnxAttrType::Float)
      packField<std::vector<float>, float>({float(a->f)}, t->raw, 1), t->elem = ElemType::Float;
    else if ((a = n->attr("value_int")) && a->type == OnnxAttrType::Int)
      packField<std::vector<int64_t>, int64_t>({a->i}, t->raw, 1), t->elem = ElemType::Int64;
    else if ((a = n->attr("value_floats")) && a->type == OnnxAttrType::Floats) {
      std::vector<float> fs(a->floats.begin(), a->floats.end());
      packField<std::vector<float>, float>(fs, t->raw, 1);
      t->elem = ElemType::Float;
      t->dims = {int64_t(fs.size())};
    } else if ((a = n->attr("value_ints")) && a->type == OnnxAttrType::Ints) {
      packField<std::vector<int64_t>, int64_t>(a->ints, t->raw, 1);
      t->elem = ElemType::Int64;
      t->dims = {int64_t(a->ints.size())};
    } else
      continue;
    n->outputs[0]->constant = g.addDerivedTensor(std::move(t));
  }
  // Inputs that nothing defines, subgraph reads (captures) included.
  unsigned reported = 0;
  for (const auto &n : g.nodes())
    for (unsigned k = 0; k < n->inputs.size(); ++k) {
      Value *v = n->inputs[k];
      if (!v || (v->id < defined.size() && defined[v->id]) || reported++ >= 20)
        continue;
      if (k < n->numOwnInputs())
        diags.emitAt(describeNode(name, *n), diag::err_model_undefined_value, k, v->name);
      else
        diags.emitAt(describeNode(name, *n), diag::err_model_undefined_capture, v->name);
    }
  return reported == 0;
}

/// Copies the types shape inference found (value_info, outputs) into values
/// that exist in the graph.
void Loader::copyTypes(const onnx::GraphProto &gp, Model &m) {
  auto copy = [&](const onnx::ValueInfoProto &vi) {
    if (Value *v = m.graph.findValue(vi.name()); v && vi.has_type())
      convertType(vi.type(), *v);
  };
  for (const auto &vi : gp.value_info())
    copy(vi);
  for (const auto &vi : gp.output())
    copy(vi);
}

//===----------------------------------------------------------------------===//
// libonnx: checker and shape inference
//===----------------------------------------------------------------------===//

bool Loader::libonnxApplies(const onnx::ModelProto &proto, const Model &m) {
  int64_t ir = proto.ir_version();
  if (ir < 3 || ir > onnx::IR_VERSION) {
    diags.emitAt(name, diag::warn_model_ir_version,
                 ir == 0  ? std::string("the model states no ir_version")
                 : ir < 3 ? fmt::format("ir_version {} predates opset imports (3)", ir)
                          : fmt::format("ir_version {} is newer than libonnx knows ({})", ir,
                                        int(onnx::IR_VERSION)));
    return false;
  }
  const auto &ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const OpsetImport &o : m.opsets) {
    std::string d = o.domain == "ai.onnx" ? "" : o.domain;
    auto it = ranges.find(d);
    if (it != ranges.end() && o.version > it->second.second) {
      diags.emitAt(name, diag::warn_model_opset_newer, d.empty() ? std::string("ai.onnx") : d,
                   o.version, it->second.second);
      return false;
    }
  }
  return true;
}

/// A libonnx message on one line: without the "==> Context:" dump it
/// appends, its lines joined (a node it names is printed over several),
/// at most 400 characters.
static std::string firstLine(const char *what) {
  std::string msg = what;
  msg = msg.substr(0, msg.find("==> Context:"));
  std::string out;
  for (char c : msg) {
    bool space = c == '\n' || c == '\r' || c == '\t' || c == ' ';
    if (space && (out.empty() || out.back() == ' '))
      continue;
    out += space ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  if (out.size() > 400)
    out = out.substr(0, 397) + "...";
  return out;
}

/// Puts the nodes of `g` in dependency order (graph::dependencyOrder) when
/// the file has a node before the producer of one of its inputs: ONNX
/// requires the order, ONNX Runtime does not. True when it reordered; a
/// cycle is left for the verifier to name.
static bool sortNodes(onnx::GraphProto &g) {
  int n = g.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string &o : g.node(i).output())
      if (!o.empty())
        producer.emplace(o, i);
  std::vector<std::vector<unsigned>> readers(static_cast<size_t>(n));
  bool sorted = true;
  auto read = [&](int i, const std::string &in) {
    auto it = in.empty() ? producer.end() : producer.find(in);
    if (it == producer.end() || it->second == i)
      return;
    sorted &= it->second < i;
    readers[size_t(it->second)].push_back(unsigned(i));
  };
  for (int i = 0; i < n; ++i) {
    for (const std::string &in : g.node(i).input())
      read(i, in);
    for (const std::string &in : proto::captures(g.node(i)))
      read(i, in);
  }
  if (sorted)
    return false;
  std::vector<unsigned> order = graph::dependencyOrder(readers);
  if (int(order.size()) != n)
    return false; // a cycle
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (unsigned i : order)
    *nodes.Add() = g.node(int(i));
  g.mutable_node()->Swap(&nodes);
  return true;
}

template <typename F> bool Loader::forEachTensor(onnx::GraphProto &g, F f) {
  bool ok = true;
  for (auto &t : *g.mutable_initializer())
    ok &= f(t, name + ": initializer '" + t.name() + "'");
  for (auto &n : *g.mutable_node())
    for (auto &a : *n.mutable_attribute()) {
      std::string where = fmt::format("{}: node '{}' ({})", name, n.name(), n.op_type());
      if (a.has_t())
        ok &= f(*a.mutable_t(), where);
      for (auto &t : *a.mutable_tensors())
        ok &= f(t, where);
    }
  return ok;
}

std::unique_ptr<Model> Loader::load(llvm::StringRef bytes, const LoadOptions &opts) {
  if (bytes.size() > kMaxModelBytes) {
    diags.emitAt(name, diag::err_model_too_large, name, bytes.size());
    return nullptr;
  }
  // An arena makes the many small messages of a large graph cheap to create
  // and to free.
  google::protobuf::Arena arena;
  onnx::ModelProto &proto = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  if (!proto.ParseFromArray(bytes.data(), int(bytes.size()))) {
    diags.emitAt(name, diag::err_model_parse);
    return nullptr;
  }
  if (!proto.has_graph()) {
    diags.emitAt(name, diag::err_model_no_graph);
    return nullptr;
  }
  auto m = std::make_unique<Model>();
  m->path = name;
  m->irVersion = proto.ir_version();
  for (const auto &o : proto.opset_import())
    m->opsets.push_back(OpsetImport{o.domain(), o.version()});
  m->producerName = proto.producer_name();
  m->producerVersion = proto.producer_version();
  m->domain = proto.domain();
  m->docString = proto.doc_string();
  m->modelVersion = proto.model_version();
  for (const auto &kv : proto.metadata_props())
    m->metadata.emplace_back(kv.key(), kv.value());
  for (const auto &f : proto.functions())
    m->functions.push_back(f.SerializeAsString());
  for (const auto &t : proto.training_info())
    m->trainingInfo.push_back(t.SerializeAsString());

  if (!forEachTensor(*proto.mutable_graph(), [&](onnx::TensorProto &t, const std::string &where) {
        return inlineExternalData(t, where);
      }))
    return nullptr;
  if (opts.widenFloat16 && proto::widenFloat16(*proto.mutable_graph())) {
    m->widenedFloat16 = true;
    if (opts.notes)
      diags.emitAt(name, diag::note_model_float16);
  }
  if (sortNodes(*proto.mutable_graph()) && opts.notes)
    diags.emitAt(name, diag::note_model_unsorted);
  bool libonnx = (opts.check || opts.inferShapes) && libonnxApplies(proto, *m);
  // libonnx's checker reads the proto while our graph is built from it (both
  // only read); its verdict counts only when our own checks pass, since ours
  // say more precisely what is wrong.
  std::optional<std::string> checkerError;
  std::thread checker;
  if (libonnx && opts.check)
    checker = std::thread([&] {
      try {
        onnx::checker::check_model(proto);
      } catch (const std::exception &e) {
        checkerError = firstLine(e.what());
      }
    });
  bool built = buildGraph(proto.graph(), *m) && succeeded(verifyGraph(m->graph, name, diags));
  if (checker.joinable())
    checker.join();
  if (!built)
    return nullptr;
  if (checkerError) {
    diags.emitAt(name, diag::err_model_checker, *checkerError);
    return nullptr;
  }
  if (libonnx && opts.inferShapes) {
    try {
      onnx::shape_inference::InferShapes(proto);
      copyTypes(proto.graph(), *m);
    } catch (const std::exception &e) {
      diags.emitAt(name, diag::warn_model_shape_inference, firstLine(e.what()));
    }
  }
  // One naming rule for every command: --choose and --explain take these.
  m->graph.nameUnnamedNodes();
  return m;
}

bool Loader::loadTensor(llvm::StringRef bytes, Tensor &t) {
  onnx::TensorProto p;
  // Any bytes may decode as some protobuf message; a tensor has a type.
  if (bytes.size() > kMaxModelBytes || !p.ParseFromArray(bytes.data(), int(bytes.size())) ||
      p.data_type() == onnx::TensorProto::UNDEFINED) {
    diags.emitAt(name, diag::err_tensor_parse);
    return false;
  }
  return inlineExternalData(p, name) && convertTensor(p, t, name);
}

bool graph::loadTensorFromBuffer(llvm::StringRef bytes, llvm::StringRef name,
                                 llvm::StringRef baseDir, Tensor &t, DiagnosticEngine &diags) {
  return Loader(name, baseDir, diags).loadTensor(bytes, t);
}

void Loader::inferShapes(Model &m, bool propagateData) {
  std::string bytes, error;
  onnx::ModelProto proto;
  if (!serializeModel(m, bytes, error) || !proto.ParseFromString(bytes) ||
      !libonnxApplies(proto, m))
    return;
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, propagateData);
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), options);
    copyTypes(proto.graph(), m);
  } catch (const std::exception &) {
    // The load's own inference has reported what libonnx cannot infer.
  }
}

void graph::inferShapes(Model &m, bool propagateData) {
  SourceManager sm;
  DiagnosticEngine quiet(sm);
  Loader(m.path, ".", quiet).inferShapes(m, propagateData);
}

std::unique_ptr<Model> graph::loadModelFromBuffer(llvm::StringRef bytes, llvm::StringRef name,
                                                  llvm::StringRef baseDir, DiagnosticEngine &diags,
                                                  const LoadOptions &options) {
  std::unique_ptr<Model> m = Loader(name, baseDir, diags).load(bytes, options);
  if (m && !options.dims.empty() && failed(bindDims(*m, options.dims, diags)))
    return nullptr;
  return m;
}

std::unique_ptr<Model> graph::loadModel(llvm::StringRef path, DiagnosticEngine &diags,
                                        const LoadOptions &options) {
  uint64_t size = 0;
  if (!llvm::sys::fs::file_size(path, size) && size > kMaxModelBytes) {
    diags.emitAt(path.str(), diag::err_model_too_large, path.str(), size);
    return nullptr;
  }
  if (llvm::sys::fs::is_directory(path)) {
    diags.emitAt("", diag::err_cannot_open_file, path.str(), "is a directory");
    return nullptr;
  }
  // Mapped, not copied: the bytes are needed only while protobuf decodes them.
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf) {
    diags.emitAt("", diag::err_cannot_open_file, path.str(), buf.getError().message());
    return nullptr;
  }
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  return loadModelFromBuffer((*buf)->getBuffer(), path, dir.empty() ? "." : dir, diags, options);
}
