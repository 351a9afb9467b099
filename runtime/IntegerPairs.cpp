//===- IntegerPairs.cpp - ONNX Runtime's u8 x s8 pairs on CPUs without VNNI ===//
#include "runtime/IntegerPairs.h"

#include <algorithm>
#include <cmath>

namespace tpcc::rt {

namespace {

constexpr int64_t kInt16Max = 32767, kInt16Min = -32768, kU8Max = 255;

const graph::Node *producerOf(const graph::Value *v, llvm::StringRef op) {
  const graph::Node *p = v ? v->producer : nullptr;
  return p && p->opType == op && (p->domain.empty() || p->domain == "ai.onnx") ? p : nullptr;
}

bool isQuantizeLinear(const graph::Node *n) {
  return n && n->opType == "QuantizeLinear" && (n->domain.empty() || n->domain == "ai.onnx");
}

/// Whether every reader of `v` quantizes it (directly, or after a Relu/Clip
/// that ORT drops): what makes ORT fuse the node before it.
bool quantizedAfter(const graph::Value *v, bool throughActivation = true) {
  if (!v || v->isGraphOutput || v->uses.empty())
    return false;
  for (const graph::Use &u : v->uses) {
    const graph::Node *r = u.node;
    if (isQuantizeLinear(r))
      continue;
    bool act = r->domain.empty() && (r->opType == "Relu" || r->opType == "Clip");
    if (!throughActivation || !act || v->uses.size() != 1 || !quantizedAfter(r->outputs[0], false))
      return false;
  }
  return true;
}

int64_t intAttr(const graph::Node &n, llvm::StringRef name, int64_t dflt) {
  const graph::Attribute *a = n.attr(name);
  return a ? a->i : dflt;
}

std::vector<int64_t> intsAttr(const graph::Node &n, llvm::StringRef name, std::vector<int64_t> d) {
  const graph::Attribute *a = n.attr(name);
  return a ? a->ints : d;
}

/// The shape of a group's reduction: output channels M and, per output
/// channel, the weights in the kernel's reduction order (K of them).
struct Reduction {
  int64_t m = 0, k = 0;
  std::vector<int8_t> w; ///< [M, K]
};

/// The weights of `grp` in ORT's reduction order.
Reduction reductionOf(const graph::Node &n, const graph::Tensor &t) {
  Reduction r;
  auto at = [&](int64_t i) { return int8_t(t.at(i)); };
  if (n.opType == "Conv") {
    // W [M, C/g, kH, kW] -> per m: (kh, kw, c).
    r.m = t.dims[0];
    int64_t c = t.dims[1], kk = 1;
    for (size_t d = 2; d < t.dims.size(); ++d)
      kk *= t.dims[d];
    r.k = c * kk;
    r.w.resize(size_t(r.m * r.k));
    for (int64_t m = 0; m < r.m; ++m)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t p = 0; p < kk; ++p)
          r.w[size_t(m * r.k + p * c + ci)] = at((m * c + ci) * kk + p);
    return r;
  }
  bool nk = n.opType == "Gemm" && intAttr(n, "transB", 0); // [N, K]
  r.m = nk ? t.dims[0] : t.dims[1];
  r.k = nk ? t.dims[1] : t.dims[0];
  r.w.resize(size_t(r.m * r.k));
  for (int64_t m = 0; m < r.m; ++m)
    for (int64_t k = 0; k < r.k; ++k)
      r.w[size_t(m * r.k + k)] = at(nk ? m * r.k + k : k * r.m + m);
  return r;
}

int64_t saturate16(int64_t v) { return std::clamp(v, kInt16Min, kInt16Max); }

} // namespace

bool IntegerGroup::canSaturate() const {
  return std::any_of(riskyPairs.begin(), riskyPairs.end(),
                     [](const std::vector<int64_t> &p) { return !p.empty(); });
}

std::optional<IntegerGroup> integerGroupOf(const graph::Node &n) {
  if (!n.domain.empty() || (n.opType != "Conv" && n.opType != "Gemm" && n.opType != "MatMul"))
    return std::nullopt;
  const graph::Node *dqx = producerOf(n.input(0), "DequantizeLinear"),
                    *dqw = producerOf(n.input(1), "DequantizeLinear");
  if (!dqx || !dqw || !quantizedAfter(n.outputs.empty() ? nullptr : n.outputs[0]))
    return std::nullopt;
  const graph::Value *xq = dqx->input(0), *xs = dqx->input(1), *xz = dqx->input(2);
  const graph::Value *wq = dqw->input(0), *ws = dqw->input(1), *wz = dqw->input(2);
  graph::ElemType xe = xq ? xq->type.elem : graph::ElemType::Undefined;
  if ((xe != graph::ElemType::UInt8 && xe != graph::ElemType::Int8) || !xs || !xs->constant ||
      xs->constant->numElements() != 1 || (xz && (!xz->constant || xz->constant->numElements() != 1)))
    return std::nullopt;
  if (!wq || !wq->constant || wq->constant->elem != graph::ElemType::Int8 || !ws ||
      !ws->constant)
    return std::nullopt;
  if (wz && wz->constant)
    for (int64_t i = 0; i < wz->constant->numElements(); ++i)
      if (wz->constant->at(i) != 0)
        return std::nullopt;
  if (wz && !wz->constant)
    return std::nullopt;
  const graph::Tensor &w = *wq->constant;
  if (n.opType == "Conv" ? (w.dims.size() < 3 || intAttr(n, "group", 1) < 1 ||
                            (n.attr("auto_pad") && n.attr("auto_pad")->s != "NOTSET"))
                         : w.dims.size() != 2)
    return std::nullopt;
  // Depthwise convolutions have kernels of their own that add in int32.
  if (n.opType == "Conv" && intAttr(n, "group", 1) > 1 && w.dims[1] == 1)
    return std::nullopt;
  if (n.opType == "Gemm" && (intAttr(n, "transA", 0) || (n.attr("alpha") && n.attr("alpha")->f != 1)))
    return std::nullopt;

  IntegerGroup g;
  g.node = &n;
  g.weights = &w;
  g.signedX = xe == graph::ElemType::Int8;
  g.xScale = xs->constant->at(0);
  g.xZeroRaw = (xz ? int64_t(xz->constant->at(0)) : 0) + (g.signedX ? 128 : 0);
  Reduction r = reductionOf(n, w);
  if (ws->constant->numElements() != 1 && ws->constant->numElements() != r.m)
    return std::nullopt;
  g.riskyPairs.resize(size_t(r.m));
  g.wScale.resize(size_t(r.m));
  for (int64_t m = 0; m < r.m; ++m) {
    g.wScale[size_t(m)] = ws->constant->at(ws->constant->numElements() == 1 ? 0 : m);
    const int8_t *row = r.w.data() + m * r.k;
    for (int64_t k = 0; k + 1 < r.k; k += 2)
      if ((std::abs(int64_t(row[k])) + std::abs(int64_t(row[k + 1]))) * kU8Max > kInt16Max)
        g.riskyPairs[size_t(m)].push_back(k);
  }
  return g;
}

std::vector<IntegerGroup> saturatingGroups(const graph::Graph &g) {
  std::vector<IntegerGroup> out;
  for (const auto &n : g.nodes())
    if (auto grp = integerGroupOf(*n); grp && grp->canSaturate())
      out.push_back(std::move(*grp));
  return out;
}

void applySaturation(const IntegerGroup &grp, const Tensor &x, Tensor &y) {
  if (!grp.canSaturate() || x.elem() != graph::ElemType::Float ||
      y.elem() != graph::ElemType::Float)
    return;
  const graph::Node &n = *grp.node;
  Reduction r = reductionOf(n, *grp.weights);
  const float *xs = x.data<float>();
  float *ys = y.data<float>();
  // The activation as the u8 kernel reads it (exact: x is a grid value).
  auto raw = [&](int64_t i) {
    return int64_t(std::nearbyint(double(xs[i]) / grp.xScale)) + grp.xZeroRaw;
  };
  // What saturating the pair (w1 x1 + w2 x2) takes away from the sum.
  auto lost = [](int64_t w1, int64_t x1, int64_t w2, int64_t x2) {
    int64_t p = w1 * x1 + w2 * x2;
    return saturate16(p) - p;
  };

  if (n.opType != "Conv") {
    // x [..., K] -> y [..., M]; pairs (k, k+1) along K.
    int64_t rows = x.numel() / std::max<int64_t>(r.k, 1);
    if (x.shape().empty() || x.shape().back() != r.k || y.numel() != rows * r.m)
      return;
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t m = 0; m < r.m; ++m) {
        int64_t d = 0;
        for (int64_t k : grp.riskyPairs[size_t(m)])
          d += lost(r.w[size_t(m * r.k + k)], raw(row * r.k + k), r.w[size_t(m * r.k + k + 1)],
                    raw(row * r.k + k + 1));
        if (d)
          ys[row * r.m + m] += float(double(d) * grp.xScale * grp.wScale[size_t(m)]);
      }
    return;
  }

  // Conv: x [N, C, spatial...] -> y [N, M, out spatial...]; reduction index
  // k = position * (C/g) + c, positions in kernel row-major order.
  const Shape &xd = x.shape(), &yd = y.shape();
  size_t sp = xd.size() - 2;
  if (yd.size() != xd.size() || grp.weights->dims.size() != sp + 2)
    return;
  int64_t group = intAttr(n, "group", 1), cg = grp.weights->dims[1], mg = r.m / group;
  std::vector<int64_t> kdim(grp.weights->dims.begin() + 2, grp.weights->dims.end());
  std::vector<int64_t> strides = intsAttr(n, "strides", std::vector<int64_t>(sp, 1)),
                       dil = intsAttr(n, "dilations", std::vector<int64_t>(sp, 1)),
                       pads = intsAttr(n, "pads", std::vector<int64_t>(2 * sp, 0));
  if (xd[1] != cg * group || yd[1] != r.m || strides.size() != sp || dil.size() != sp ||
      pads.size() != 2 * sp)
    return;
  int64_t inner = 1, outInner = 1;
  for (size_t d = 0; d < sp; ++d) {
    inner *= xd[d + 2];
    outInner *= yd[d + 2];
  }
  // The input element of reduction index k at output position `o` (spatial
  // index vector), or -1 for padding (the zero point).
  std::vector<int64_t> opos(sp), kpos(sp);
  auto inputAt = [&](int64_t batch, int64_t grpIdx, int64_t k) -> int64_t {
    int64_t c = k % cg, p = k / cg;
    for (size_t d = sp; d-- > 0;) {
      kpos[d] = p % kdim[d];
      p /= kdim[d];
    }
    int64_t off = 0;
    for (size_t d = 0; d < sp; ++d) {
      int64_t i = opos[d] * strides[d] - pads[d] + kpos[d] * dil[d];
      if (i < 0 || i >= xd[d + 2])
        return -1;
      off = off * xd[d + 2] + i;
    }
    return (batch * xd[1] + grpIdx * cg + c) * inner + off;
  };
  auto value = [&](int64_t idx) { return idx < 0 ? grp.xZeroRaw : raw(idx); };
  for (int64_t b = 0; b < xd[0]; ++b)
    for (int64_t o = 0; o < outInner; ++o) {
      for (size_t d = sp, rest = size_t(o); d-- > 0;) {
        opos[d] = int64_t(rest) % yd[d + 2];
        rest /= size_t(yd[d + 2]);
      }
      for (int64_t m = 0; m < r.m; ++m) {
        int64_t d = 0, gi = m / mg;
        for (int64_t k : grp.riskyPairs[size_t(m)])
          d += lost(r.w[size_t(m * r.k + k)], value(inputAt(b, gi, k)),
                    r.w[size_t(m * r.k + k + 1)], value(inputAt(b, gi, k + 1)));
        if (d)
          ys[(b * r.m + m) * outInner + o] += float(double(d) * grp.xScale * grp.wScale[size_t(m)]);
      }
    }
}

} // namespace tpcc::rt
