//===- OrtWeightBias.cpp - ONNX Runtime's WeightBiasQuantization ----------===//
//
// Written from ORT's qdq_transformer/weight_bias_quantization.cc and
// core/util/qmath.h (GetQuantizationParameter with Symmetric = false, the
// default it is called with), ORT 1.30.
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/OrtWeightBias.h"

#include "runtime/ort/IntegerPairs.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace tpcc;
using graph::ElemType;
using graph::Node;
using graph::Tensor;
using graph::Value;

namespace {

/// ORT's RoundHalfToEven on floats.
float roundHalfEven(float x) { return std::isfinite(x) ? x - std::remainder(x, 1.0f) : x; }

std::unique_ptr<Tensor> tensor(std::string name, ElemType e, std::vector<int64_t> dims) {
  auto t = std::make_unique<Tensor>();
  t->name = std::move(name);
  t->elem = e;
  t->dims = std::move(dims);
  t->raw.resize(size_t(t->numElements()) * graph::elemSize(e));
  return t;
}

template <typename T> void store(Tensor &t, int64_t i, T v) {
  std::memcpy(t.raw.data() + size_t(i) * sizeof(T), &v, sizeof(T));
}

class Rewriter {
public:
  explicit Rewriter(graph::Model &m) : m(m), g(m.graph) {}

  bool rewrite(Node &n);

private:
  Value *constant(std::unique_ptr<Tensor> t) {
    Value *v = g.addConstant(std::move(t));
    if (m.irVersion < 4) // initializers are graph inputs before IR version 4
      g.addInput(v);
    return v;
  }
  /// Input `index` of `n` becomes DequantizeLinear(q, scale[, zp]).
  void dequantized(Node &n, unsigned index, Value *q, Value *scale, Value *zp,
                   const std::string &base) {
    Value *out = g.getOrCreateValue(g.unusedValueName(base));
    out->type = n.inputs[index]->type;
    out->hasTypeInfo = n.inputs[index]->hasTypeInfo;
    auto dq = std::make_unique<Node>();
    dq->name = g.unusedNodeName(base);
    dq->opType = "DequantizeLinear";
    dq->inputs = zp ? std::vector<Value *>{q, scale, zp} : std::vector<Value *>{q, scale};
    dq->outputs = {out};
    g.addNode(std::move(dq));
    n.inputs[index] = out;
  }

  graph::Model &m;
  graph::Graph &g;
};

bool Rewriter::rewrite(Node &n) {
  if (!n.inDefaultDomain() ||
      (n.opType != "Conv" && n.opType != "ConvTranspose" && n.opType != "Gemm") ||
      n.inputs.size() < 2)
    return false;
  const Node *dqx = rt::producerOf(n.inputs[0], "DequantizeLinear");
  const Tensor *xScale = dqx ? rt::scalarInput(*dqx, 1) : nullptr;
  const Value *w = n.inputs[1];
  if (!xScale || !w || !w->constant || w->constant->elem != ElemType::Float ||
      rt::producerOf(w, "DequantizeLinear"))
    return false;
  const Value *b = n.inputs.size() > 2 ? n.inputs[2] : nullptr;
  // A bias that is not a 1-D constant leaves the node as it is.
  if (b && (!b->constant || b->constant->dims.size() != 1 || b->constant->elem != ElemType::Float))
    return false;

  // The weight: int8, one scale and zero point.
  const Tensor &wt = *w->constant;
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < wt.numElements(); ++i) {
    float x = float(wt.at(i));
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  float scale = hi == lo ? 1.0f : (hi - lo) / float(127 - -128);
  float zpInit = float(-128) - lo / scale;
  auto zp = int8_t(roundHalfEven(std::max(-128.0f, std::min(127.0f, zpInit))));
  auto q = tensor(g.unusedValueName(n.name + "_weight_q"), ElemType::Int8, wt.dims);
  for (int64_t i = 0; i < wt.numElements(); ++i) {
    float v = roundHalfEven(float(wt.at(i)) / scale) + float(zp);
    store(*q, i, int8_t(std::max(-128.0f, std::min(127.0f, v))));
  }
  auto s = tensor(g.unusedValueName(n.name + "_weight_scale"), ElemType::Float, {});
  store(*s, 0, scale);
  auto z = tensor(g.unusedValueName(n.name + "_weight_zp"), ElemType::Int8, {});
  store(*z, 0, zp);
  dequantized(n, 1, constant(std::move(q)), constant(std::move(s)), constant(std::move(z)),
              n.name + "_weight_dq");

  // The bias: int32 on the accumulator's grid, x_scale * w_scale in float.
  if (b) {
    const Tensor &bt = *b->constant;
    float bScale = float(xScale->at(0)) * scale;
    auto bq = tensor(g.unusedValueName(n.name + "_bias_int32"), ElemType::Int32, bt.dims);
    for (int64_t i = 0; i < bt.numElements(); ++i)
      store(*bq, i, int32_t(roundHalfEven(float(bt.at(i)) / bScale)));
    auto bs = tensor(g.unusedValueName(n.name + "_bias_scale"), ElemType::Float, {});
    store(*bs, 0, bScale);
    dequantized(n, 2, constant(std::move(bq)), constant(std::move(bs)), nullptr,
                n.name + "_bias_dq");
  }
  return true;
}

} // namespace

unsigned rt::ortWeightBiasQuantization(graph::Model &m) {
  Rewriter r(m);
  std::vector<Node *> nodes;
  for (const auto &n : m.graph.nodes())
    nodes.push_back(n.get());
  unsigned changed = 0;
  for (Node *n : nodes)
    changed += r.rewrite(*n);
  if (changed)
    m.graph.relink();
  return changed;
}
