//===- OnnxSchema.h - Index of the ONNX operator schemas --------*- C++ -*-===//
//
// A read-only index over the operator schemas that libonnx registers
// (`OpSchemaRegistry`), for the default domain ("", ai.onnx) and ai.onnx.ml:
// for each operator name, every version of its schema (inputs, attributes with
// their types and defaults), plus the union over versions that the compiler
// checks `.tpc` files against (an attribute or an input is valid when some
// version has it). The planner uses the per-version view to fill in schema
// defaults for absent attributes.
//
// The header is plain C++/LLVM on purpose: nothing here pulls in protobuf or
// ONNX headers. The index is built once, on first use, and is safe to use
// from several threads.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_IR_ONNXSCHEMA_H
#define TPCC_IR_ONNXSCHEMA_H

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tpcc::ir {

/// The type of an ONNX attribute, with `AttributeProto::AttributeType`'s
/// numbers (so that converting is a cast).
enum class OnnxAttrType {
  Undefined = 0,
  Float = 1,
  Int = 2,
  String = 3,
  Tensor = 4,
  Graph = 5,
  Floats = 6,
  Ints = 7,
  Strings = 8,
  Tensors = 9,
  Graphs = 10,
  SparseTensor = 11,
  SparseTensors = 12,
  TypeProto = 13,
  TypeProtos = 14,
};

/// "INT", "FLOATS", ... (the ONNX spelling).
const char *toString(OnnxAttrType t);
/// "an integer", "a list of floats", ... (for diagnostics).
const char *describe(OnnxAttrType t);
/// True for the list types (INTS, FLOATS, STRINGS, TENSORS, ...).
bool isListType(OnnxAttrType t);
/// The element type of a list type (Ints -> Int); other types map to
/// themselves.
OnnxAttrType elementType(OnnxAttrType t);

/// The default value of an attribute, as the schema states it. Only the types
/// ONNX gives defaults for are represented: INT, FLOAT, STRING and their lists.
struct OnnxAttrValue {
  OnnxAttrType type = OnnxAttrType::Undefined;
  int64_t i = 0;                    ///< Int
  double f = 0;                     ///< Float
  std::string s;                    ///< String
  std::vector<int64_t> ints;        ///< Ints
  std::vector<double> floats;       ///< Floats
  std::vector<std::string> strings; ///< Strings
  /// A readable spelling: `1`, `0.5`, `"NOTSET"`, `[1, 1]`.
  std::string str() const;
};

/// One attribute of one schema version.
struct OnnxAttr {
  std::string name;
  OnnxAttrType type = OnnxAttrType::Undefined;
  bool required = false;
  std::optional<OnnxAttrValue> defaultValue;
};

/// One formal input of one schema version.
struct OnnxInput {
  enum class Option { Single, Optional, Variadic };
  std::string name;
  Option option = Option::Single;
  /// The schema marks it differentiable: data the op computes with (Add's
  /// B, Concat's inputs), not a parameter (Clip's bounds, Resize's scales).
  bool differentiable = false;
};

/// One version of an operator's schema (valid from `sinceVersion` of its
/// domain's opset until the next version).
struct OnnxOpVersion {
  int sinceVersion = 1;
  bool deprecated = false;
  std::vector<OnnxInput> inputs;
  unsigned minInputs = 0;
  /// The number of inputs a node may have; none when the last is variadic.
  std::optional<unsigned> maxInputs;
  /// Sorted by name.
  std::vector<OnnxAttr> attributes;

  const OnnxAttr *findAttr(llvm::StringRef name) const;
  /// The formal input that input `index` of a node binds to (the last one
  /// when it is variadic), or null.
  const OnnxInput *inputAt(int64_t index) const {
    if (!hasInput(index) || inputs.empty())
      return nullptr;
    return &inputs[std::min(size_t(index), inputs.size() - 1)];
  }
  /// Whether a node of this version may have an input at `index` (0-based).
  bool hasInput(int64_t index) const {
    return index >= 0 && (!maxInputs || uint64_t(index) < *maxInputs);
  }
};

/// What every version of an operator says about one attribute name.
struct OnnxAttrUnion {
  std::string name;
  /// Every type some version gives it (usually one; `Cast.to` was a STRING in
  /// version 1 and an INT since), sorted, unique.
  std::vector<OnnxAttrType> types;
  /// The attribute in the latest version that has it (points into the
  /// `versions` of the op in the index).
  const OnnxAttr *latest = nullptr;
  bool hasType(OnnxAttrType t) const;
};

/// An operator with every version of its schema.
struct OnnxOp {
  std::string name;
  std::string domain; ///< "" (ai.onnx) or "ai.onnx.ml"
  /// Sorted by `sinceVersion`, never empty.
  std::vector<OnnxOpVersion> versions;
  /// The union over versions, sorted by name.
  std::vector<OnnxAttrUnion> attributes;
  /// The most inputs any version accepts; none when some version is variadic.
  std::optional<unsigned> maxInputs;

  const OnnxOpVersion &latest() const { return versions.back(); }
  /// The version in effect for a model that imports `opset` of this op's
  /// domain, or null when the op did not exist yet.
  const OnnxOpVersion *atOpset(int opset) const;
  /// An attribute some version has, or null.
  const OnnxAttrUnion *findAttr(llvm::StringRef name) const;
  /// Every attribute name of every version (for "did you mean").
  std::vector<std::string> attributeNames() const;
  /// Whether some version accepts an input at `index` (0-based).
  bool hasInput(int64_t index) const {
    return index >= 0 && (!maxInputs || uint64_t(index) < *maxInputs);
  }
};

/// The schemas of every ONNX operator tpcc knows.
class OnnxSchemaIndex {
public:
  /// The process-wide index, built on first use.
  static const OnnxSchemaIndex &get();

  /// The operator named `name` (case-sensitive), or null.
  const OnnxOp *find(llvm::StringRef name) const;
  bool contains(llvm::StringRef name) const { return find(name) != nullptr; }
  /// Every operator name, sorted (for "did you mean").
  const std::vector<std::string> &opNames() const { return names; }
  size_t size() const { return ops.size(); }

private:
  OnnxSchemaIndex();
  std::map<std::string, OnnxOp, std::less<>> ops;
  std::vector<std::string> names;
};

} // namespace tpcc::ir

#endif
