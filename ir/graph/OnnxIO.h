//===- OnnxIO.h - Load, verify and write ONNX models -------------*- C++ -*-===//
//
// loadModel: reads a `.onnx` file through protobuf, inlines external data,
// converts it to the model IR, verifies it (every value defined once and
// before use, no cycles, tensors whose data matches their shape), then runs
// libonnx's checker and shape inference when the file's IR version and opsets
// allow (otherwise warns and goes on). Hostile input gets an error, never a
// crash or an allocation the file's own bytes do not justify.
//
// writeModel: the inverse; load -> write -> load gives the same model
// (`sameModel`). The file is written atomically.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_IR_GRAPH_ONNXIO_H
#define TPCC_IR_GRAPH_ONNXIO_H

#include "ir/graph/Graph.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpcc::graph {

/// Values for symbolic dimensions (`--dim NAME=VALUE`): name, value.
using DimValues = std::vector<std::pair<std::string, int64_t>>;

struct LoadOptions {
  /// Run libonnx's checker (when the IR version allows).
  bool check = true;
  /// Run libonnx's shape inference (when the IR version allows).
  bool inferShapes = true;
  /// Load a model that computes in float16 as the same model in float32
  /// (Model::widenedFloat16; a note says so). The commands that run or
  /// quantize a model ask for it; the ONNX node tests, which check float16
  /// results bit for bit, do not.
  bool widenFloat16 = false;
  /// Emit the loader's notes (nodes sorted, float16 widened); off when a
  /// command loads the same file a second time.
  bool notes = true;
  /// Values for symbolic dimensions of the inputs, bound once the model is
  /// loaded (bindDims).
  DimValues dims;
};

/// Loads `path`. Diagnostics are located at `path` or at its nodes; returns
/// null after an error.
std::unique_ptr<Model> loadModel(llvm::StringRef path, DiagnosticEngine &diags,
                                 const LoadOptions &options = {});

/// Loads a model held in memory; `name` names it in diagnostics and
/// `baseDir` is where its external data files are looked up.
std::unique_ptr<Model> loadModelFromBuffer(llvm::StringRef bytes, llvm::StringRef name,
                                           llvm::StringRef baseDir, DiagnosticEngine &diags,
                                           const LoadOptions &options = {});

/// Runs libonnx's shape inference on `m` again (after a transform added
/// values without types), keeping the types it has; quiet: the load reported
/// what libonnx cannot infer. `propagateData`: with libonnx's data
/// propagation, so that shapes a model computes from its inputs' (Shape ->
/// Gather -> Concat -> Reshape) are known where those are.
void inferShapes(Model &m, bool propagateData = false);

/// The symbolic dimension names of `m`'s graph inputs (initializers
/// aside), each once, in the order they first appear.
std::vector<std::string> inputDimNames(const Model &m);

/// Gives each symbolic dimension of `dims` its value wherever a value's type
/// names it (graph inputs, outputs, the types the file or shape inference
/// gave other values; a dimension named by an expression of such names, as
/// `sequence + 1`, takes the expression's value), then infers shapes again
/// with data propagation, so that what the model computes from those
/// dimensions gets its shape too. An error (nothing bound) for a name no
/// graph input's dimension has.
LogicalResult bindDims(Model &m, const DimValues &dims, DiagnosticEngine &diags);

/// Decodes a serialized `TensorProto` (the ONNX test suite's `.pb` files);
/// `name` names it in diagnostics, `baseDir` holds its external data.
bool loadTensorFromBuffer(llvm::StringRef bytes, llvm::StringRef name, llvm::StringRef baseDir,
                          Tensor &t, DiagnosticEngine &diags);
/// The tensor as a serialized `TensorProto` (data as raw_data).
std::string serializeTensor(const Tensor &t);

/// Checks what loadModel's verifier checks (graph outputs defined, no cycle)
/// and sets the graph's topological order. `where` prefixes diagnostics.
LogicalResult verifyGraph(Graph &g, llvm::StringRef where, DiagnosticEngine &diags);

/// Kahn's algorithm over `readers` (for each of n nodes, the nodes reading
/// one of its outputs, once per read): a dependency order that takes the
/// smallest index among the ready nodes (deterministic, as close to the
/// file's order as the dependencies allow). Shorter than n on a cycle.
std::vector<unsigned> dependencyOrder(const std::vector<std::vector<unsigned>> &readers);

/// `m` converted to ai.onnx opset `version` by libonnx's version converter
/// (it adapts each operator across versions), loaded again; null after a
/// diagnostic (an operator the converter cannot move).
std::unique_ptr<Model> convertOpset(const Model &m, int64_t version, DiagnosticEngine &diags);

/// Whether raiseOpset can move `m` to ai.onnx opset `to`; `why` says why
/// not.
bool canRaiseOpset(const Model &m, int64_t to, std::string &why);
/// Moves `m` (ai.onnx opset 13 or later) to opset `to` (at most 21) in
/// place, names kept: what libonnx's converter does past its opset 17, for
/// the operators whose meaning changed (OpsetRaise.cpp). False, with `m`
/// unchanged and `why` set, when canRaiseOpset is false.
bool raiseOpset(Model &m, int64_t to, std::string &why);

/// The model as ONNX bytes (tensor data inline, as raw_data).
bool serializeModel(const Model &m, std::string &bytes, std::string &error);
/// Writes the model to `path` atomically.
bool writeModel(const Model &m, llvm::StringRef path, std::string &error);

/// The nodes inside `n`'s subgraphs (If branches, Loop and Scan bodies),
/// nested ones included; 0 for a node without subgraphs.
int64_t subgraphNodeCount(const Node &n);

struct SubgraphNode {
  std::string domain, opType, name;
};
/// Those nodes, depth first in file order.
std::vector<SubgraphNode> subgraphNodes(const Node &n);

/// A subgraph loaded as a model of its own.
struct Subgraph {
  /// Its inputs: the subgraph's own (a Loop body's iteration number,
  /// condition and loop-carried values, ...), then the outer values it reads.
  std::unique_ptr<Model> model;
  size_t numOwnInputs = 0;
  /// For each outer value the subgraph reads (inputs numOwnInputs on): its
  /// index in the node's inputs (among `Node::captures`).
  std::vector<unsigned> captureInputs;
};
/// The GRAPH attribute `attr` of `n` (an If branch, a Loop or Scan body)
/// with the given opsets, verified and converted as a file is (libonnx has
/// already checked it with the whole model). `where` names it in
/// diagnostics; none after one.
std::optional<Subgraph> loadSubgraph(const Node &n, llvm::StringRef attr,
                                     llvm::ArrayRef<OpsetImport> opsets, int64_t irVersion,
                                     llvm::StringRef where, DiagnosticEngine &diags);

/// `model.onnx: node 'conv1' (Conv)` — how diagnostics name a node.
std::string describeNode(llvm::StringRef modelName, const Node &n);

} // namespace tpcc::graph

#endif
