//===- Graph.h - The model IR: an ONNX graph with use-def links --*- C++ -*-===//
//
// What `tpcc` knows of an ONNX model: nodes, values (with their producer and
// every use), constants (initializers and `Constant` node outputs), value types
// from the file and from shape inference, and everything else the file holds
// (opset imports, metadata, attributes, subgraphs) so that writing the model
// back gives the same model.
//
// Ownership: a `Model` owns its graph; a graph owns its nodes, values and
// constant tensors; pointers between them stay valid for the graph's life.
// Node order is the file's order; `topologicalOrder()` is computed by the
// verifier. Subgraphs (`If`, `Loop`, `Scan` bodies) are kept as serialized
// attributes, not entered; the outer values they read are inputs of their
// node (Node::captures).
//
// The header is plain C++/LLVM: protobuf and ONNX stay in the .cpp files.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_IR_GRAPH_GRAPH_H
#define TPCC_IR_GRAPH_GRAPH_H

#include "ir/OnnxSchema.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tpcc::graph {

/// `TensorProto::DataType`, same numbers.
enum class ElemType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
};

/// "float", "int64", ... (ONNX's lowercase spelling); "undefined" otherwise.
const char *toString(ElemType t);
/// Bytes per element in memory; 0 for strings and undefined types. The
/// 4-bit types take a byte per element in memory (int4 sign-extended) and
/// half a byte in files (packFourBit).
size_t elemSize(ElemType t);
/// UInt4, Int4, Float4E2M1: two elements per byte in files.
bool isFourBit(ElemType t);
/// `n` 4-bit elements, a byte each, packed two per byte as ONNX stores
/// them (the first in the low nibble).
std::string packFourBit(const std::string &bytes, int64_t n);
/// The inverse: `n` elements of type `t` from `ceil(n / 2)` packed bytes,
/// int4 sign-extended to a byte.
std::string unpackFourBit(const std::string &packed, int64_t n, ElemType t);
/// Float, Float16, BFloat16, Double.
bool isFloatingPoint(ElemType t);
/// Whether `v` is a data type this build knows.
bool isKnownElemType(int32_t v);

/// One dimension: a value (>= 0), a symbolic name, or unknown.
struct Dim {
  int64_t value = -1; ///< -1: not a number
  /// The symbolic name, if any. A dimension `--dim NAME=VALUE` gave a value
  /// (bindDims, OnnxIO.h) keeps its name beside the value; files get the value.
  std::string param;
  bool known() const { return value >= 0; }
  bool operator==(const Dim &o) const { return value == o.value && param == o.param; }
};

struct TensorType {
  ElemType elem = ElemType::Undefined;
  /// None: the rank is unknown.
  std::optional<std::vector<Dim>> shape;
  bool operator==(const TensorType &o) const { return elem == o.elem && shape == o.shape; }
  /// `float[1,3,?,N]`, `float[*]` for an unknown rank.
  std::string str() const;
};

/// A constant tensor. Numeric data is held as raw little-endian bytes
/// (exactly `numElements() * elemSize(elem)` of them; the loader checks).
struct Tensor {
  std::string name;
  ElemType elem = ElemType::Undefined;
  std::vector<int64_t> dims;
  std::string raw;                  ///< numeric types
  std::vector<std::string> strings; ///< ElemType::String
  std::string docString;

  /// The number of elements (the loader rejects shapes that overflow).
  int64_t numElements() const;
  /// Element `i` converted to double (numeric types only).
  double at(int64_t i) const;
  /// The value of a one-element numeric tensor.
  std::optional<double> scalar() const;
  bool operator==(const Tensor &o) const {
    return name == o.name && elem == o.elem && dims == o.dims && raw == o.raw &&
           strings == o.strings && docString == o.docString;
  }
};

/// A node attribute. INT/FLOAT/STRING/TENSOR and their lists are decoded;
/// graphs, sparse tensors and type protos are kept as the serialized
/// `AttributeProto` (`raw`) and written back unchanged.
struct Attribute {
  std::string name;
  ir::OnnxAttrType type = ir::OnnxAttrType::Undefined;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors; ///< Tensor (one) and Tensors
  std::string raw;             ///< Graph(s), SparseTensor(s), TypeProto(s)
  std::string docString;
  bool operator==(const Attribute &o) const;
  /// A short readable spelling (`3`, `[1, 1]`, `"NOTSET"`, `<graph>`).
  std::string str() const;
};

class Node;

struct Use {
  Node *node = nullptr;
  unsigned index = 0; ///< which input of `node`
};

class Value {
public:
  std::string name;
  TensorType type;
  Node *producer = nullptr; ///< null for graph inputs and initializers
  unsigned producerIndex = 0;
  std::vector<Use> uses;
  /// The initializer, or the tensor of the `Constant` node producing it.
  const Tensor *constant = nullptr;
  bool isGraphInput = false;
  bool isGraphOutput = false;
  bool isInitializer = false;
  /// Whether the file (or shape inference) gave this value a type.
  bool hasTypeInfo = false;
  /// Whether the file listed it in the graph's value_info.
  bool inValueInfo = false;
  /// The serialized TypeProto of a non-tensor type (sequence, map,
  /// optional), written back as it is; `type` is then undefined.
  std::string opaqueType;
  std::string docString;
  unsigned id = 0; ///< index in Graph::values()

  /// The number of distinct nodes using this value.
  unsigned numConsumerNodes() const;
};

class Node {
public:
  /// Unique after loading (Graph::nameUnnamedNodes); empty only for a node
  /// a transform created without a name.
  std::string name;
  std::string opType;
  std::string domain; ///< "" is ai.onnx
  std::string docString;
  /// Null entries are omitted optional inputs/outputs ("").
  std::vector<Value *> inputs, outputs;
  std::vector<Attribute> attributes; ///< file order
  unsigned id = 0;                   ///< index in file order
  /// The values of this node's graph that its subgraphs read (If branches,
  /// Loop and Scan bodies may read any outer value by name): they are the
  /// last `captures.size()` entries of `inputs`, so that every pass sees the
  /// reads (order, liveness, uses), and these are the names the subgraphs
  /// read them by. A transform may replace such an input like any other;
  /// the writer then renames the subgraphs' reads, and writes only the
  /// node's own inputs.
  std::vector<std::string> captures;

  const Attribute *attr(llvm::StringRef n) const;
  /// Input `i` if present.
  Value *input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  /// The inputs the file lists (without the captures).
  size_t numOwnInputs() const { return inputs.size() - captures.size(); }
  /// Whether some attribute holds a subgraph (If/Loop/Scan bodies).
  bool hasSubgraphs() const;
  /// The name, or `<op_type>_<id>` for an unnamed node.
  std::string displayName() const;
  /// Whether the operator is ONNX's own (domain "" or "ai.onnx").
  bool inDefaultDomain() const { return domain.empty() || domain == "ai.onnx"; }
};

struct OpsetImport {
  std::string domain;
  int64_t version = 0;
  bool operator==(const OpsetImport &o) const { return domain == o.domain && version == o.version; }
};

class Graph {
public:
  Graph() = default;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  std::string name, docString;
  /// Serialized `TensorAnnotation`s, kept as they are.
  std::vector<std::string> quantizationAnnotations;

  const std::vector<std::unique_ptr<Node>> &nodes() const { return nodeList; }
  const std::vector<std::unique_ptr<Value>> &values() const { return valueList; }
  const std::vector<Value *> &inputs() const { return inputList; }
  const std::vector<Value *> &outputs() const { return outputList; }
  /// Initializers, file order.
  const std::vector<std::unique_ptr<Tensor>> &initializers() const { return initList; }

  /// `base`, or `base_1`, `base_2`...: the first that no value, resp. no
  /// node, has (for what a transform adds).
  std::string unusedValueName(const std::string &base) const;
  std::string unusedNodeName(const std::string &base) const;
  Value *findValue(llvm::StringRef n) const {
    auto it = byName.find(n);
    return it == byName.end() ? nullptr : it->second;
  }
  /// The value named `n`, created when absent.
  Value *getOrCreateValue(llvm::StringRef n);
  /// Names every unnamed node `<op_type>_<id>` (`Conv_3`; `Conv_3_1` when
  /// that name is taken): the loader does it once, so every command shows and
  /// accepts the same names.
  void nameUnnamedNodes();
  Node *addNode(std::unique_ptr<Node> n);
  Tensor *addInitializer(std::unique_ptr<Tensor> t);
  /// A constant made from a `Constant` node's value_float(s)/value_int(s).
  Tensor *addDerivedTensor(std::unique_ptr<Tensor> t) {
    derived.push_back(std::move(t));
    return derived.back().get();
  }
  void addInput(Value *v) {
    inputList.push_back(v);
    v->isGraphInput = true;
  }
  void addOutput(Value *v) {
    outputList.push_back(v);
    v->isGraphOutput = true;
  }
  /// Links every node's inputs and outputs to their values (uses, producer).
  /// Called once, after every node was added.
  void link();

  // Editing, for graph transforms: a transform rewires Node::inputs and
  // outputs directly, then calls relink() and verifyGraph().

  /// Removes the nodes marked in `dead` (by Node::id); renumbers the rest.
  void eraseNodes(const std::vector<bool> &dead);
  /// Adds initializer `t` as the constant of the value of its name.
  Value *addConstant(std::unique_ptr<Tensor> t);
  /// Makes graph input `t->name` a constant holding `t` (replacing the
  /// default an initializer gave it); it is no longer an input.
  Value *fixInput(std::unique_ptr<Tensor> t);
  /// Removes initializers, and Constant nodes, that no node and no graph
  /// output uses (the verified order stays, without those nodes). A graph
  /// input with a default keeps its initializer, unless `inputsToo` (models
  /// before IR version 4, which list every initializer as an input): then
  /// the input goes with it.
  void eraseUnusedInitializers(bool inputsToo = false);
  /// Recomputes uses and producers from the nodes; a value that nothing
  /// defines or uses any more drops out of the written value_info.
  void relink();

  /// Nodes so that each comes after the producers of its inputs; set by
  /// verify(). Empty until then.
  const std::vector<Node *> &topologicalOrder() const { return topo; }
  void setTopologicalOrder(std::vector<Node *> order) { topo = std::move(order); }

private:
  std::vector<std::unique_ptr<Node>> nodeList;
  std::vector<std::unique_ptr<Value>> valueList;
  std::vector<std::unique_ptr<Tensor>> initList;
  std::vector<Value *> inputList, outputList;
  llvm::StringMap<Value *> byName;
  std::vector<Node *> topo;
  std::vector<std::unique_ptr<Tensor>> derived;
};

struct Model {
  std::string path; ///< where it was loaded from
  int64_t irVersion = 0;
  std::vector<OpsetImport> opsets;
  std::string producerName, producerVersion, domain, docString;
  int64_t modelVersion = 0;
  std::vector<std::pair<std::string, std::string>> metadata;
  /// Serialized `FunctionProto`s and training info, kept as they are.
  std::vector<std::string> functions, trainingInfo;
  Graph graph;
  /// Loaded from a float16 model as float32 (LoadOptions::widenFloat16).
  bool widenedFloat16 = false;

  /// The opset version imported for `domain` ("" and "ai.onnx" are the same),
  /// or none.
  std::optional<int64_t> opsetVersion(llvm::StringRef domain) const;
  /// Graph::eraseUnusedInitializers, their input entries too before IR
  /// version 4 (where every initializer is listed as a graph input).
  void eraseUnusedInitializers() { graph.eraseUnusedInitializers(irVersion < 4); }
};

/// Structural equality of two models (used by the round-trip tests): same
/// header, opsets, metadata, graph inputs/outputs, initializers, nodes (op,
/// name, attributes, input/output names) in the same order, value types.
/// On a difference, returns false and says where in `*why`.
bool sameModel(const Model &a, const Model &b, std::string *why);

} // namespace tpcc::graph

#endif
