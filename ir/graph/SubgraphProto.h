//===- SubgraphProto.h - Subgraphs at the protobuf level --------*- C++ -*-===//
//
// Internal to ir/graph (it includes ONNX's protobuf classes): what the loader
// and the writer need to know of the subgraphs a node holds (If branches,
// Loop and Scan bodies), which the model IR keeps serialized.
//
// A subgraph may read any value of the scopes around it by name. The names a
// node's subgraphs read from the node's own graph are its captures (in the
// order they are first read): the model IR appends them to the node's inputs.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_IR_GRAPH_SUBGRAPHPROTO_H
#define TPCC_IR_GRAPH_SUBGRAPHPROTO_H

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

namespace tpcc::graph::proto {

/// The names `g` reads without defining them (as an input, an initializer or
/// a node output), reads of its nested subgraphs included, in first-read
/// order; graph outputs count as reads.
std::vector<std::string> freeNames(const onnx::GraphProto &g);

/// The names the subgraphs of `n` read from `n`'s graph, in first-read order
/// (attribute order, then within each subgraph).
std::vector<std::string> captures(const onnx::NodeProto &n);

/// Renames every read of an outer name in `renames` (key: the old name) in
/// `g` and its nested subgraphs; names a graph defines itself are left.
void renameReads(onnx::GraphProto &g, const std::map<std::string, std::string> &renames);

/// The nodes of `g`, those of its nested subgraphs included.
int64_t countNodes(const onnx::GraphProto &g);

} // namespace tpcc::graph::proto

#endif
