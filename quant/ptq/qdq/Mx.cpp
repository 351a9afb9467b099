//===- Mx.cpp - OCP MX activations as exact ONNX subgraphs ----------------===//
#include "quant/ptq/qdq/Mx.h"

#include "quant/core/GraphHelpers.h"
#include "quant/core/grids/Grid.h"
#include "runtime/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

using namespace tpcc;
using namespace tpcc::quant;
using graph::ElemType;
using graph::Value;

namespace {

bool isFp8(ir::ElementFormat e) {
  return e == ir::ElementFormat::Fp8E4M3 || e == ir::ElementFormat::Fp8E5M2;
}

graph::Attribute intsAttr(const char *name, std::vector<int64_t> v) {
  graph::Attribute a;
  a.name = name;
  a.type = ir::OnnxAttrType::Ints;
  a.ints = std::move(v);
  return a;
}

/// Builds the subgraph: each op's output is a fresh value named after it.
struct Writer {
  const GraphSink &sink;
  std::string base;

  Value *op(const char *type, std::vector<Value *> ins, ElemType out = ElemType::Float,
            std::vector<graph::Attribute> attrs = {}) {
    Value *v = sink.value(base + "_" + type + "_Output", out);
    sink.node(type, base + "_" + type, std::move(ins), v, std::move(attrs));
    return v;
  }
  Value *floatConst(float x, const char *name) {
    auto t = std::make_unique<graph::Tensor>();
    t->elem = ElemType::Float;
    t->raw.resize(sizeof x);
    std::memcpy(t->raw.data(), &x, sizeof x);
    return sink.constant(std::move(t), base + "_" + name);
  }
  Value *intsConst(const std::vector<int64_t> &xs, const char *name) {
    auto t = std::make_unique<graph::Tensor>();
    t->elem = ElemType::Int64;
    t->dims = {int64_t(xs.size())};
    t->raw.resize(xs.size() * sizeof(int64_t));
    std::memcpy(t->raw.data(), xs.data(), t->raw.size());
    return sink.constant(std::move(t), base + "_" + name);
  }
};

} // namespace

std::string quant::checkMx(const MxActivation &a) {
  if (a.element != ir::ElementFormat::Int && !isFp8(a.element))
    return std::string("an MX activation of ") + ir::toString(a.element) +
           " elements (MX activations take integers and FP8)";
  if (a.element == ir::ElementFormat::Int && (a.bits < 2 || a.bits > 16))
    return "an MX integer element of " + std::to_string(a.bits) + " bits";
  if (a.block < 1)
    return "a block of " + std::to_string(a.block) + " elements";
  if (a.length < 0)
    return "an axis of length " + std::to_string(a.length);
  if (a.rank < 1 || a.axis < -a.rank || a.axis >= a.rank)
    return "axis " + std::to_string(a.axis) + " of a rank-" + std::to_string(a.rank) + " tensor";
  return "";
}

Value *quant::writeMx(const GraphSink &sink, Value *x, const MxActivation &a,
                      const std::string &base) {
  Writer w{sink, base};
  int64_t axis = a.axis < 0 ? a.axis + a.rank : a.axis;
  // The blocks' axis goes last.
  std::vector<int64_t> perm(size_t(a.rank)), back(size_t(a.rank));
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + axis);
  perm.push_back(axis);
  for (size_t i = 0; i < perm.size(); ++i)
    back[size_t(perm[i])] = int64_t(i);
  bool moved = axis != a.rank - 1;
  Value *xt = moved ? w.op("Transpose", {x}, ElemType::Float, {intsAttr("perm", perm)}) : x;
  // A length the blocks do not divide: zeros pad the last block (they do not
  // change its largest magnitude) and are sliced off at the end.
  int64_t pad = a.length > 0 && a.length % a.block ? a.block - a.length % a.block : 0;
  if (pad) {
    std::vector<int64_t> pads(size_t(2 * a.rank), 0);
    pads[size_t(2 * a.rank - 1)] = pad;
    xt = w.op("Pad", {xt, w.intsConst(pads, "pads")});
  }
  // [0] and [-1]: Slice bounds and axes, ReduceMax's axes.
  Value *zero = w.intsConst({0}, "zero"), *last = w.intsConst({-1}, "minus_one");
  Value *shape = w.op("Shape", {xt}, ElemType::Int64);
  Value *lead = w.op("Slice", {shape, zero, last}, ElemType::Int64);
  Value *blocks = w.op("Concat", {lead, w.intsConst({-1, a.block}, "block_shape")}, ElemType::Int64,
                       {edits::intAttribute("axis", 0)});
  Value *y = w.op("Reshape", {xt, blocks});

  // The shared exponent e = floor(log2 amax), exactly.
  Value *amax = w.op("ReduceMax", {w.op("Abs", {y}), last}, ElemType::Float,
                     {edits::intAttribute("keepdims", 1)});
  Value *two = w.floatConst(2.0f, "two"), *one = w.floatConst(1.0f, "one");
  Value *e0 =
      w.op("Floor",
           {w.op("Mul", {w.op("Log", {amax}), w.floatConst(float(1 / std::log(2.0)), "inv_ln2")})});
  Value *over = w.op("Greater", {w.op("Pow", {two, e0}), amax}, ElemType::Bool);
  Value *e1 = w.op("Where", {over, w.op("Sub", {e0, one}), e0});
  Value *under =
      w.op("Greater", {w.op("Mul", {w.op("Pow", {two, e1}), two}), amax}, ElemType::Bool);
  Value *e = w.op("Where", {under, e1, w.op("Add", {e1, one})});

  // X = 2^(e − emax), in E8M0's range.
  Value *se = w.op("Max", {w.op("Sub", {e, w.floatConst(float(mxEmax(a.element, a.bits)), "emax")}),
                           w.floatConst(-127.0f, "min_exponent")});
  Value *scale = w.op("Pow", {two, se});
  Value *v = w.op("Div", {y, scale});
  Value *q;
  if (a.element == ir::ElementFormat::Int) {
    float lo = -std::ldexp(1.0f, a.bits - 1), hi = std::ldexp(1.0f, a.bits - 1) - 1;
    q = w.op("Clip", {w.op("Round", {v}), w.floatConst(lo, "qmin"), w.floatConst(hi, "qmax")});
  } else {
    ElemType fp8 =
        a.element == ir::ElementFormat::Fp8E5M2 ? ElemType::Float8E5M2 : ElemType::Float8E4M3FN;
    Value *codes =
        w.op("Cast", {v}, fp8,
             {edits::intAttribute("to", int64_t(fp8)), edits::intAttribute("saturate", 1)});
    q = w.op("Cast", {codes}, ElemType::Float,
             {edits::intAttribute("to", int64_t(ElemType::Float))});
  }
  Value *z = w.op("Reshape", {w.op("Mul", {q, scale}), shape});
  if (pad)
    z = w.op("Slice", {z, zero, w.intsConst({a.length}, "length"), last});
  return moved ? w.op("Transpose", {z}, ElemType::Float, {intsAttr("perm", back)}) : z;
}

void quant::applyMx(rt::Tensor &x, const MxActivation &a) {
  if (x.elem() != ElemType::Float || x.rank() != a.rank)
    return;
  int64_t axis = a.axis < 0 ? a.axis + a.rank : a.axis, outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k)
    outer *= x.dim(k);
  for (int64_t k = axis + 1; k < a.rank; ++k)
    inner *= x.dim(k);
  int64_t len = x.dim(axis);
  float *d = x.data<float>();
  rt::parallelFor(outer * inner, len * 8, [&](int64_t b, int64_t e) {
    for (int64_t oi = b; oi < e; ++oi) {
      int64_t o = oi / inner, i = oi % inner;
      for (int64_t k0 = 0; k0 < len; k0 += a.block) {
        int64_t k1 = std::min(len, k0 + a.block);
        auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
        double amax = 0;
        for (int64_t k = k0; k < k1; ++k)
          amax = std::max(amax, std::fabs(double(d[at(k)])));
        if (!(amax > 0))
          continue; // zeros stay (NaN too: the subgraph's NaN is not modelled)
        QuantGrid g = mxGrid(amax, a.bits, 0, a.element);
        for (int64_t k = k0; k < k1; ++k)
          d[at(k)] = float(g.quantize(d[at(k)]));
      }
    }
  });
}
