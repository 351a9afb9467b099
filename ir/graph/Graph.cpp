//===- Graph.cpp - The model IR -------------------------------------------===//

#include "ir/graph/Graph.h"
#include "support/HalfFloat.h"
#include "support/MiniFloat.h"

#include <algorithm>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <set>

using namespace tpcc;
using namespace tpcc::graph;

const char *graph::toString(ElemType t) {
  switch (t) {
  case ElemType::Float:
    return "float";
  case ElemType::UInt8:
    return "uint8";
  case ElemType::Int8:
    return "int8";
  case ElemType::UInt16:
    return "uint16";
  case ElemType::Int16:
    return "int16";
  case ElemType::Int32:
    return "int32";
  case ElemType::Int64:
    return "int64";
  case ElemType::String:
    return "string";
  case ElemType::Bool:
    return "bool";
  case ElemType::Float16:
    return "float16";
  case ElemType::Double:
    return "double";
  case ElemType::UInt32:
    return "uint32";
  case ElemType::UInt64:
    return "uint64";
  case ElemType::Complex64:
    return "complex64";
  case ElemType::Complex128:
    return "complex128";
  case ElemType::BFloat16:
    return "bfloat16";
  case ElemType::Float8E4M3FN:
    return "float8e4m3fn";
  case ElemType::Float8E4M3FNUZ:
    return "float8e4m3fnuz";
  case ElemType::Float8E5M2:
    return "float8e5m2";
  case ElemType::Float8E5M2FNUZ:
    return "float8e5m2fnuz";
  case ElemType::UInt4:
    return "uint4";
  case ElemType::Int4:
    return "int4";
  case ElemType::Float4E2M1:
    return "float4e2m1";
  case ElemType::Undefined:
    break;
  }
  return "undefined";
}

size_t graph::elemSize(ElemType t) {
  switch (t) {
  case ElemType::UInt8:
  case ElemType::Int8:
  case ElemType::Bool:
  case ElemType::Float8E4M3FN:
  case ElemType::Float8E4M3FNUZ:
  case ElemType::Float8E5M2:
  case ElemType::Float8E5M2FNUZ:
  case ElemType::UInt4:
  case ElemType::Int4:
  case ElemType::Float4E2M1:
    return 1;
  case ElemType::UInt16:
  case ElemType::Int16:
  case ElemType::Float16:
  case ElemType::BFloat16:
    return 2;
  case ElemType::Float:
  case ElemType::Int32:
  case ElemType::UInt32:
    return 4;
  case ElemType::Int64:
  case ElemType::Double:
  case ElemType::UInt64:
  case ElemType::Complex64:
    return 8;
  case ElemType::Complex128:
    return 16;
  case ElemType::String:
  case ElemType::Undefined:
    break;
  }
  return 0;
}

bool graph::isFloatingPoint(ElemType t) {
  return t == ElemType::Float || t == ElemType::Float16 || t == ElemType::BFloat16 ||
         t == ElemType::Double;
}

bool graph::isKnownElemType(int32_t v) { return v >= 1 && v <= 23; }

bool graph::isFourBit(ElemType t) {
  return t == ElemType::UInt4 || t == ElemType::Int4 || t == ElemType::Float4E2M1;
}

std::string graph::packFourBit(const std::string &bytes, int64_t n) {
  std::string packed(size_t((n + 1) / 2), '\0');
  for (int64_t i = 0; i < n && size_t(i) < bytes.size(); ++i)
    packed[size_t(i / 2)] |= char((uint8_t(bytes[size_t(i)]) & 0xF) << (i % 2 ? 4 : 0));
  return packed;
}

std::string graph::unpackFourBit(const std::string &packed, int64_t n, ElemType t) {
  std::string bytes(size_t(n), '\0');
  for (int64_t i = 0; i < n && size_t(i / 2) < packed.size(); ++i) {
    int v = (uint8_t(packed[size_t(i / 2)]) >> (i % 2 ? 4 : 0)) & 0xF;
    if (t == ElemType::Int4 && v >= 8)
      v -= 16;
    bytes[size_t(i)] = char(v);
  }
  return bytes;
}

std::string TensorType::str() const {
  std::string s = toString(elem);
  if (!shape)
    return s + "[*]";
  s += '[';
  for (size_t i = 0; i < shape->size(); ++i) {
    const Dim &d = (*shape)[i];
    if (i)
      s += ',';
    s += d.known() ? std::to_string(d.value) : !d.param.empty() ? d.param : "?";
  }
  return s + ']';
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

template <typename T> static T load(const std::string &raw, int64_t i) {
  T v;
  std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
  return v;
}

double Tensor::at(int64_t i) const {
  switch (elem) {
  case ElemType::Float:
    return load<float>(raw, i);
  case ElemType::Double:
    return load<double>(raw, i);
  case ElemType::UInt8:
    return load<uint8_t>(raw, i);
  case ElemType::Int8:
    return load<int8_t>(raw, i);
  case ElemType::Bool:
    return load<uint8_t>(raw, i) != 0;
  case ElemType::UInt16:
    return load<uint16_t>(raw, i);
  case ElemType::Int16:
    return load<int16_t>(raw, i);
  case ElemType::Int32:
    return load<int32_t>(raw, i);
  case ElemType::UInt32:
    return load<uint32_t>(raw, i);
  case ElemType::Int64:
    return double(load<int64_t>(raw, i));
  case ElemType::UInt64:
    return double(load<uint64_t>(raw, i));
  case ElemType::Float16:
    return halfToFloat(load<uint16_t>(raw, i));
  case ElemType::BFloat16:
    return bfloat16ToFloat(load<uint16_t>(raw, i));
  case ElemType::Int4:
    return load<int8_t>(raw, i);
  case ElemType::UInt4:
    return load<uint8_t>(raw, i);
  case ElemType::Float8E4M3FN:
    return miniFloatToFloat(MiniFloat::E4M3FN, load<uint8_t>(raw, i));
  case ElemType::Float8E5M2:
    return miniFloatToFloat(MiniFloat::E5M2, load<uint8_t>(raw, i));
  case ElemType::Float4E2M1:
    return miniFloatToFloat(MiniFloat::E2M1, load<uint8_t>(raw, i));
  default:
    return NAN;
  }
}

std::optional<double> Tensor::scalar() const {
  if (numElements() != 1 || elemSize(elem) == 0 || elem == ElemType::Complex64 ||
      elem == ElemType::Complex128 || raw.size() < elemSize(elem))
    return std::nullopt;
  return at(0);
}

//===----------------------------------------------------------------------===//
// Attribute, Value, Node
//===----------------------------------------------------------------------===//

bool Attribute::operator==(const Attribute &o) const {
  return name == o.name && type == o.type && i == o.i &&
         (f == o.f || (std::isnan(f) && std::isnan(o.f))) && s == o.s && ints == o.ints &&
         floats.size() == o.floats.size() &&
         std::equal(
             floats.begin(), floats.end(), o.floats.begin(),
             [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }) &&
         strings == o.strings && tensors == o.tensors && raw == o.raw && docString == o.docString;
}

template <typename T, typename F> static std::string joinList(const std::vector<T> &xs, F f) {
  std::string s = "[";
  for (size_t k = 0; k < xs.size(); ++k)
    s += (k ? ", " : "") + f(xs[k]);
  return s + "]";
}

std::string Attribute::str() const {
  auto num = [](double d) { return fmt::format("{}", d); };
  auto quote = [](const std::string &x) { return "\"" + x + "\""; };
  using T = ir::OnnxAttrType;
  switch (type) {
  case T::Int:
    return std::to_string(i);
  case T::Float:
    return num(f);
  case T::String:
    return quote(s);
  case T::Ints:
    return joinList(ints, [](int64_t v) { return std::to_string(v); });
  case T::Floats:
    return joinList(floats, num);
  case T::Strings:
    return joinList(strings, quote);
  case T::Tensor:
    return "<tensor>";
  case T::Tensors:
    return "<tensors>";
  case T::Graph:
  case T::Graphs:
    return "<graph>";
  default:
    return "<" + std::string(ir::toString(type)) + ">";
  }
}

unsigned Value::numConsumerNodes() const {
  unsigned n = 0;
  for (size_t k = 0; k < uses.size(); ++k) {
    bool seen = false;
    for (size_t j = 0; j < k && !seen; ++j)
      seen = uses[j].node == uses[k].node;
    n += !seen;
  }
  return n;
}

const Attribute *Node::attr(llvm::StringRef n) const {
  for (const Attribute &a : attributes)
    if (a.name == n)
      return &a;
  return nullptr;
}

bool Node::hasSubgraphs() const {
  for (const Attribute &a : attributes)
    if (a.type == ir::OnnxAttrType::Graph || a.type == ir::OnnxAttrType::Graphs)
      return true;
  return false;
}

std::string Node::displayName() const {
  return name.empty() ? opType + "_" + std::to_string(id) : name;
}

//===----------------------------------------------------------------------===//
// Graph, Model
//===----------------------------------------------------------------------===//

Value *Graph::getOrCreateValue(llvm::StringRef n) {
  auto [it, inserted] = byName.try_emplace(n, nullptr);
  if (inserted) {
    auto v = std::make_unique<Value>();
    v->name = n.str();
    v->id = valueList.size();
    it->second = v.get();
    valueList.push_back(std::move(v));
  }
  return it->second;
}

void Graph::nameUnnamedNodes() {
  std::set<std::string> used;
  for (const auto &n : nodeList)
    used.insert(n->name);
  for (const auto &n : nodeList) {
    if (!n->name.empty())
      continue;
    std::string base = n->opType + "_" + std::to_string(n->id), name = base;
    for (int k = 1; used.count(name); ++k)
      name = base + "_" + std::to_string(k);
    n->name = name;
    used.insert(name);
  }
}

Node *Graph::addNode(std::unique_ptr<Node> n) {
  topo.clear(); // stale until the next verifyGraph
  n->id = nodeList.size();
  nodeList.push_back(std::move(n));
  return nodeList.back().get();
}

Tensor *Graph::addInitializer(std::unique_ptr<Tensor> t) {
  initList.push_back(std::move(t));
  return initList.back().get();
}

void Graph::link() {
  for (auto &n : nodeList) {
    for (unsigned k = 0; k < n->inputs.size(); ++k)
      if (Value *v = n->inputs[k])
        v->uses.push_back(Use{n.get(), k});
    for (unsigned k = 0; k < n->outputs.size(); ++k)
      if (Value *v = n->outputs[k]) {
        v->producer = n.get();
        v->producerIndex = k;
      }
  }
}

void Graph::eraseNodes(const std::vector<bool> &dead) {
  std::vector<std::unique_ptr<Node>> kept;
  for (auto &n : nodeList) {
    if (n->id >= dead.size() || !dead[n->id]) {
      kept.push_back(std::move(n));
      continue;
    }
    // A Constant node's value lives in its attribute: it goes with the node.
    for (Value *out : n->outputs)
      if (out && !out->isInitializer)
        out->constant = nullptr;
  }
  nodeList = std::move(kept);
  for (size_t k = 0; k < nodeList.size(); ++k)
    nodeList[k]->id = unsigned(k);
  topo.clear();
}

Value *Graph::addConstant(std::unique_ptr<Tensor> t) {
  Value *v = getOrCreateValue(t->name);
  v->type.elem = t->elem;
  v->type.shape.emplace();
  for (int64_t d : t->dims)
    v->type.shape->push_back(Dim{d, {}});
  v->hasTypeInfo = true;
  v->isInitializer = true;
  v->constant = addInitializer(std::move(t));
  return v;
}

Value *Graph::fixInput(std::unique_ptr<Tensor> t) {
  Value *v = getOrCreateValue(t->name);
  inputList.erase(std::remove(inputList.begin(), inputList.end(), v), inputList.end());
  v->isGraphInput = false;
  if (v->isInitializer) {
    initList.erase(std::remove_if(initList.begin(), initList.end(),
                                  [&](const auto &i) { return i.get() == v->constant; }),
                   initList.end());
    v->constant = nullptr;
  }
  return addConstant(std::move(t));
}

void Graph::eraseUnusedInitializers(bool inputsToo) {
  // Constant nodes are initializers in node form (exporters store weights
  // so): those nothing reads go too, and the order stays the verified one.
  std::vector<bool> dead(nodeList.size(), false);
  bool any = false;
  for (const auto &n : nodeList) {
    if (n->opType != "Constant" || !n->inDefaultDomain())
      continue;
    bool unread = true;
    for (const Value *out : n->outputs)
      unread &= !out || (out->uses.empty() && !out->isGraphOutput);
    dead[n->id] = unread;
    any |= unread;
  }
  if (any) {
    std::vector<Node *> order;
    for (Node *n : topo)
      if (!dead[n->id])
        order.push_back(n);
    eraseNodes(dead);
    relink();
    topo = std::move(order);
  }
  std::vector<std::unique_ptr<Tensor>> kept;
  for (auto &t : initList) {
    Value *v = findValue(t->name);
    if (v && (!v->uses.empty() || v->isGraphOutput || (v->isGraphInput && !inputsToo))) {
      kept.push_back(std::move(t));
    } else if (v) {
      v->constant = nullptr;
      v->isInitializer = false;
      if (v->isGraphInput) {
        v->isGraphInput = false;
        inputList.erase(std::find(inputList.begin(), inputList.end(), v));
      }
    }
  }
  initList = std::move(kept);
}

void Graph::relink() {
  for (auto &v : valueList) {
    v->uses.clear();
    v->producer = nullptr;
    v->producerIndex = 0;
  }
  link();
  for (auto &v : valueList)
    if (!v->producer && v->uses.empty() && !v->isGraphInput && !v->isGraphOutput &&
        !v->isInitializer) {
      v->inValueInfo = false;
      v->hasTypeInfo = false;
    }
}

std::optional<int64_t> Model::opsetVersion(llvm::StringRef d) const {
  auto norm = [](llvm::StringRef x) { return x == "ai.onnx" ? llvm::StringRef() : x; };
  for (const OpsetImport &o : opsets)
    if (norm(o.domain) == norm(d))
      return o.version;
  return std::nullopt;
}

static std::vector<std::string> names(const std::vector<Value *> &vs) {
  std::vector<std::string> out;
  for (const Value *v : vs)
    out.push_back(v ? v->name : "");
  return out;
}

bool graph::sameModel(const Model &a, const Model &b, std::string *why) {
  auto differ = [&](const std::string &what) {
    if (why)
      *why = what;
    return false;
  };
  if (a.irVersion != b.irVersion)
    return differ("ir_version");
  if (a.opsets != b.opsets)
    return differ("opset imports");
  if (a.producerName != b.producerName || a.producerVersion != b.producerVersion ||
      a.domain != b.domain || a.docString != b.docString || a.modelVersion != b.modelVersion)
    return differ("model header");
  if (a.metadata != b.metadata)
    return differ("metadata_props");
  if (a.functions != b.functions || a.trainingInfo != b.trainingInfo)
    return differ("functions or training info");
  const Graph &g = a.graph, &h = b.graph;
  if (g.name != h.name || g.docString != h.docString ||
      g.quantizationAnnotations != h.quantizationAnnotations)
    return differ("graph name or doc string");
  if (names(g.inputs()) != names(h.inputs()))
    return differ("graph inputs");
  if (names(g.outputs()) != names(h.outputs()))
    return differ("graph outputs");
  if (g.initializers().size() != h.initializers().size())
    return differ("number of initializers");
  for (size_t k = 0; k < g.initializers().size(); ++k)
    if (!(*g.initializers()[k] == *h.initializers()[k]))
      return differ("initializer `" + g.initializers()[k]->name + "`");
  if (g.nodes().size() != h.nodes().size())
    return differ("number of nodes");
  for (size_t k = 0; k < g.nodes().size(); ++k) {
    const Node &n = *g.nodes()[k], &m = *h.nodes()[k];
    if (n.name != m.name || n.opType != m.opType || n.domain != m.domain ||
        n.docString != m.docString || names(n.inputs) != names(m.inputs) ||
        names(n.outputs) != names(m.outputs) || n.attributes != m.attributes)
      return differ("node " + std::to_string(k) + " `" + n.displayName() + "`");
  }
  // Every value either graph knows: same type information.
  for (const auto &v : g.values()) {
    const Value *w = h.findValue(v->name);
    if (!w)
      return differ("value `" + v->name + "` missing");
    if (v->hasTypeInfo && w->hasTypeInfo &&
        (!(v->type == w->type) || v->opaqueType != w->opaqueType))
      return differ("type of `" + v->name + "`: " + v->type.str() + " vs " + w->type.str());
  }
  return true;
}

std::string Graph::unusedValueName(const std::string &base) const {
  std::string name = base;
  for (unsigned k = 1; findValue(name); ++k)
    name = base + "_" + std::to_string(k);
  return name;
}

std::string Graph::unusedNodeName(const std::string &base) const {
  std::set<std::string> names;
  for (const auto &n : nodes())
    names.insert(n->name);
  std::string name = base;
  for (unsigned k = 1; names.count(name); ++k)
    name = base + "_" + std::to_string(k);
  return name;
}
