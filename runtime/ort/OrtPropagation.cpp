//===- OrtPropagation.cpp - ONNX Runtime's QDQ propagation ----------------===//
//
// Written from ORT's qdq_transformer/qdq_propagation.cc (ORT 1.30): which ops
// propagate (CanNodePropagate, by the version of their schema), the edges
// (GetPreviousEdge, GetNextEdges) and the order (every Q backward, then every
// DQ forward, over the nodes as they were before the rewrite); and from
// pad_fusion.cc (its conditions and how the pads add up).
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/OrtPropagation.h"

#include "runtime/ort/IntegerPairs.h"
#include "runtime/ort/OrtWeightBias.h"

#include "ir/OnnxSchema.h"

#include "llvm/ADT/STLExtras.h"

#include <deque>

using namespace tpcc;
using graph::Node;
using graph::Value;

namespace {

bool isQdq(const Node &n, llvm::StringRef op) {
  return n.opType == op && (n.inDefaultDomain() || n.domain == "com.microsoft");
}

/// A Q or DQ node whose scale (and zero point, if any) are constant scalars.
bool hasScalarGrid(const Node &n) {
  return rt::scalarInput(n, 1) && (!n.input(2) || rt::scalarInput(n, 2));
}

/// The version of `n`'s schema in effect at the model's opset.
int sinceVersion(const Node &n, int opset) {
  const ir::OnnxOp *schema = ir::OnnxSchemaIndex::get().find(n.opType);
  const ir::OnnxOpVersion *v = schema ? schema->atOpset(opset) : nullptr;
  return v ? v->sinceVersion : 0;
}

class Propagation {
public:
  explicit Propagation(graph::Model &m) : g(m.graph), opset(int(m.opsetVersion("").value_or(1))) {}

  void run() {
    // ORT walks the nodes in topological order; the order is known when the
    // graph was verified since its last edit, else the file's order is one.
    std::vector<Node *> nodes = g.topologicalOrder();
    if (nodes.empty())
      for (const auto &n : g.nodes())
        nodes.push_back(n.get());
    for (Node *n : nodes)
      if (isQdq(*n, "QuantizeLinear") && hasScalarGrid(*n))
        backward(*n);
    for (Node *n : nodes)
      if (isQdq(*n, "DequantizeLinear") && hasScalarGrid(*n))
        forward(*n);
  }
  unsigned inserted = 0;

private:
  /// An edge: input `index` of `dst` reads `value`.
  struct Edge {
    Value *value;
    Node *dst;
    unsigned index;
  };

  /// ORT's CanNodePropagate: the op and the version of its schema in effect.
  bool canPropagate(const Node &n) const {
    if (!n.inDefaultDomain())
      return false;
    static const std::vector<std::pair<const char *, std::vector<int>>> kOps = {
        {"MaxPool", {12, 22}},
        {"Reshape", {5, 13, 14, 19, 21, 23, 24, 25}},
        {"Transpose", {1, 13, 21, 23, 24, 25}},
        {"Squeeze", {1, 11, 13, 21, 23, 24, 25}},
        {"Unsqueeze", {1, 11, 13, 21, 23, 24, 25}},
        {"Slice", {1, 10, 11, 13}}};
    for (const auto &[op, versions] : kOps)
      if (n.opType == op)
        return llvm::is_contained(versions, sinceVersion(n, opset));
    return false;
  }

  /// The uses of `v` as edges.
  static std::vector<Edge> edgesOf(Value *v) {
    std::vector<Edge> out;
    for (const graph::Use &u : v->uses)
      out.push_back({v, u.node, u.index});
    return out;
  }

  /// ORT's GetPreviousEdge: the edge into input 0 of `n`, when its value is a
  /// graph input or an initializer, or has `n` as its only consumer and is
  /// not a graph output.
  static std::optional<Edge> previousEdge(Node &n) {
    Value *v = n.inputs.empty() ? nullptr : n.inputs[0];
    if (!v)
      return std::nullopt;
    bool fromInput = !v->producer;
    if (fromInput || (!v->isGraphOutput && v->uses.size() == 1))
      return Edge{v, &n, 0};
    return std::nullopt;
  }

  /// Inserts Q(value) and one DQ per edge, with `like`'s grid, domain and
  /// axis (the one attribute a Q and a DQ share before opset 21).
  void insertPair(const std::vector<Edge> &edges, const Node &like) {
    Value *v = edges.front().value;
    Value *scale = like.inputs[1], *zp = like.input(2) ? like.inputs[2] : nullptr;
    auto qdqInputs = [&](Value *x) {
      return zp ? std::vector<Value *>{x, scale, zp} : std::vector<Value *>{x, scale};
    };
    Value *codes = g.getOrCreateValue(g.unusedValueName(v->name + "_q_to_dq"));
    // The codes' type is the zero point's (uint8 without one).
    codes->type.elem = zp && zp->constant ? zp->constant->elem : graph::ElemType::UInt8;
    codes->type.shape = v->type.shape;
    codes->hasTypeInfo = v->hasTypeInfo;
    auto q = std::make_unique<Node>();
    q->name = g.unusedNodeName(v->name + "_q");
    q->opType = "QuantizeLinear";
    q->domain = like.domain;
    q->inputs = qdqInputs(v);
    q->outputs = {codes};
    copyAxis(like, *q);
    g.addNode(std::move(q));
    for (size_t k = 0; k < edges.size(); ++k) {
      Value *out = g.getOrCreateValue(
          g.unusedValueName(v->name + "_post_dq" + (k ? std::to_string(k) : std::string())));
      out->type = v->type;
      out->hasTypeInfo = v->hasTypeInfo;
      auto dq = std::make_unique<Node>();
      dq->name = g.unusedNodeName(v->name + "_dq" + (k ? std::to_string(k) : std::string()));
      dq->opType = "DequantizeLinear";
      dq->domain = like.domain;
      dq->inputs = qdqInputs(codes);
      dq->outputs = {out};
      copyAxis(like, *dq);
      g.addNode(std::move(dq));
      edges[k].dst->inputs[edges[k].index] = out;
    }
    g.relink();
    ++inserted;
  }

  /// PropagateQBackward from `q`.
  void backward(Node &q) {
    std::optional<Edge> edge = previousEdge(q);
    while (edge && edge->value->producer && canPropagate(*edge->value->producer)) {
      edge = previousEdge(*edge->value->producer);
      if (!edge || (edge->value->producer && isQdq(*edge->value->producer, "DequantizeLinear")))
        return;
      // The edge keeps its value: the next step starts at that value's producer.
      insertPair({*edge}, q);
    }
  }

  /// PropagateDQForward from `dq`.
  void forward(Node &dq) {
    Value *out = dq.outputs.empty() ? nullptr : dq.outputs[0];
    if (!out || out->isGraphOutput || out->uses.size() != 1)
      return;
    std::deque<std::vector<Edge>> groups;
    groups.push_back(nextPropagationEdges(edgesOf(out).front()));
    while (!groups.empty()) {
      std::vector<Edge> group = std::move(groups.front());
      groups.pop_front();
      bool toQ = llvm::any_of(group, [](const Edge &e) { return isQdq(*e.dst, "QuantizeLinear"); });
      if (group.empty() || toQ)
        continue;
      std::vector<Node *> dsts;
      for (const Edge &e : group)
        dsts.push_back(e.dst);
      insertPair(group, dq);
      for (Node *d : dsts)
        groups.push_back(nextPropagationEdges(Edge{nullptr, d, 0}));
    }
  }

  /// ORT's GetNextPropagationEdges: the uses of output 0 of the edge's
  /// consumer, when that consumer propagates (a graph output of it keeps its
  /// own value: no DQ is needed for the numbers).
  std::vector<Edge> nextPropagationEdges(const Edge &e) const {
    if (!canPropagate(*e.dst) || e.dst->outputs.empty() || !e.dst->outputs[0])
      return {};
    return edgesOf(e.dst->outputs[0]);
  }

  static void copyAxis(const Node &from, Node &to) {
    if (const graph::Attribute *a = from.attr("axis"))
      to.attributes.push_back(*a);
  }

  graph::Graph &g;
  int opset;
};

/// ORT's PadFusion on one Pad; whether it folded it into its reader.
bool fusePad(Node &pad, int opset, std::vector<bool> &dead) {
  if (pad.opType != "Pad" || !pad.inDefaultDomain() ||
      !llvm::is_contained(std::vector<int>{1, 2, 11, 13, 18, 19}, sinceVersion(pad, opset)) ||
      pad.inputs.size() > 3 || pad.outputs.size() != 1 || !pad.outputs[0] ||
      pad.outputs[0]->isGraphOutput || pad.outputs[0]->uses.size() != 1 || !pad.input(0))
    return false;
  if (const graph::Attribute *mode = pad.attr("mode"); mode && mode->s != "constant")
    return false;
  std::vector<int64_t> pads;
  if (sinceVersion(pad, opset) >= 11) {
    const graph::Value *p = pad.input(1), *value = pad.input(2);
    if (!p || !p->constant || (value && !value->constant))
      return false;
    if (value && llvm::any_of(value->constant->raw, [](char b) { return b != 0; }))
      return false;
    for (int64_t i = 0; i < p->constant->numElements(); ++i)
      pads.push_back(int64_t(p->constant->at(i)));
  } else {
    if (const graph::Attribute *v = pad.attr("value"); v && v->f != 0.0)
      return false;
    if (const graph::Attribute *p = pad.attr("pads"))
      pads = p->ints;
  }
  Node &child = *pad.outputs[0]->uses.front().node;
  int cv = sinceVersion(child, opset);
  bool conv = child.opType == "Conv" && llvm::is_contained(std::vector<int>{1, 11}, cv);
  bool pool =
      child.opType == "MaxPool" && llvm::is_contained(std::vector<int>{1, 8, 10, 11, 12}, cv);
  if (!child.inDefaultDomain() || !(conv || pool) || child.outputs.size() > 1 ||
      pad.outputs[0]->uses.front().index != 0)
    return false;
  if (const graph::Attribute *a = child.attr("auto_pad"); a && a->s != "NOTSET")
    return false;
  // Only the spatial dimensions, and no negative (cropping) pad.
  size_t half = pads.size() / 2;
  if (pads.size() < 4 || pads.size() % 2 || pads[0] || pads[1] || pads[half] || pads[half + 1] ||
      llvm::any_of(pads, [](int64_t v) { return v < 0; }))
    return false;
  size_t spatial = half - 2;
  auto it =
      llvm::find_if(child.attributes, [](const graph::Attribute &a) { return a.name == "pads"; });
  if (it == child.attributes.end()) {
    graph::Attribute a;
    a.name = "pads";
    a.type = ir::OnnxAttrType::Ints;
    a.ints.assign(2 * spatial, 0);
    child.attributes.push_back(a);
    it = std::prev(child.attributes.end());
  }
  if (it->ints.size() != 2 * spatial)
    return false;
  for (size_t k = 0; k < spatial; ++k) {
    it->ints[k] += pads[2 + k];
    it->ints[spatial + k] += pads[half + 2 + k];
  }
  child.inputs[0] = pad.inputs[0];
  dead[pad.id] = true;
  return true;
}

} // namespace

unsigned rt::ortPadFusion(graph::Model &m) {
  int opset = int(m.opsetVersion("").value_or(1));
  std::vector<bool> dead(m.graph.nodes().size(), false);
  unsigned fused = 0;
  for (const auto &n : m.graph.nodes())
    fused += fusePad(*n, opset, dead);
  if (fused) {
    m.graph.eraseNodes(dead);
    m.graph.relink();
  }
  return fused;
}

unsigned rt::ortLevel1Rewrites(graph::Model &m) {
  unsigned changed = ortPadFusion(m);
  changed += ortQdqPropagation(m);
  changed += ortWeightBiasQuantization(m);
  return changed;
}

unsigned rt::ortQdqPropagation(graph::Model &m) {
  Propagation p(m);
  p.run();
  return p.inserted;
}
