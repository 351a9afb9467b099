//===- IntegerPairs.cpp - QDQ groups computed as ONNX Runtime's integer kernels ===//
#include "runtime/ort/IntegerPairs.h"
#include "runtime/ops/ConvGeometry.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tpcc::rt {

const graph::Node *producerOf(const graph::Value *v, llvm::StringRef op) {
  const graph::Node *p = v ? v->producer : nullptr;
  return p && p->opType == op && p->inDefaultDomain() ? p : nullptr;
}

const graph::Tensor *scalarInput(const graph::Node &n, size_t i) {
  const graph::Value *v = n.input(i);
  return v && v->constant && v->constant->numElements() == 1 ? v->constant : nullptr;
}

namespace {

constexpr int64_t kInt16Max = 32767, kInt16Min = -32768, kU8Max = 255;

/// Reads `n`'s attributes, with the schema defaults, outside a kernel.
struct Attrs {
  std::unique_ptr<NodeState> none;
  KernelContext ctx;
  explicit Attrs(const graph::Node &n) : ctx(n, 13, none) {}
};

/// The integer range of the QuantizeLinear `q` (its zero point's type; uint8
/// without one), its scale and zero point.
struct QGrid {
  double scale = 1;
  int64_t zero = 0, qmin = 0, qmax = 255;
};
QGrid gridOf(const graph::Node &q) {
  QGrid g;
  g.scale = scalarInput(q, 1)->at(0);
  if (const graph::Tensor *z = scalarInput(q, 2)) {
    g.zero = int64_t(z->at(0));
    if (z->elem == graph::ElemType::Int8)
      g.qmin = -128, g.qmax = 127;
  }
  return g;
}

/// The 8-bit QuantizeLinear every reader of `v` is (directly, or after a
/// Relu/Clip that ORT drops), all on one grid: what makes ORT fuse the node
/// before it. Null otherwise.
const graph::Node *quantizerAfter(const graph::Value *v, bool throughActivation = true) {
  if (!v || v->isGraphOutput || v->uses.empty())
    return nullptr;
  const graph::Node *q = nullptr;
  for (const graph::Use &u : v->uses) {
    const graph::Node *r = u.node, *here = nullptr;
    if (r->opType == "QuantizeLinear" && r->inDefaultDomain() && r->input(0) == v)
      here = r;
    else if (throughActivation && v->uses.size() == 1 && r->inDefaultDomain() &&
             (r->opType == "Relu" || r->opType == "Clip")) {
      here = quantizerAfter(r->outputs.empty() ? nullptr : r->outputs[0], false);
      if (here && scalarInput(*here, 1) && !ortDropsBefore(*r, *here))
        return nullptr;
    }
    if (!here || !scalarInput(*here, 1) || (here->input(2) && !scalarInput(*here, 2)))
      return nullptr;
    if (q && (scalarInput(*q, 1)->at(0) != scalarInput(*here, 1)->at(0) ||
              (q->input(2) != nullptr) != (here->input(2) != nullptr) ||
              (q->input(2) && scalarInput(*q, 2)->at(0) != scalarInput(*here, 2)->at(0))))
      return nullptr;
    q = here;
  }
  return q;
}

/// Fills g.m, g.k and g.w: the weights of `n` in ORT's reduction order.
void reductionOf(const graph::Node &n, const graph::Tensor &t, IntegerGroup &g) {
  auto at = [&](int64_t i) { return int8_t(t.at(i)); };
  if (n.opType == "Conv") {
    // W [M, C/g, kH, kW] -> per m: (kh, kw, c).
    g.m = t.dims[0];
    int64_t c = t.dims[1], kk = 1;
    for (size_t d = 2; d < t.dims.size(); ++d)
      kk *= t.dims[d];
    g.k = c * kk;
    g.w.resize(size_t(g.m * g.k));
    for (int64_t m = 0; m < g.m; ++m)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t p = 0; p < kk; ++p)
          g.w[size_t(m * g.k + p * c + ci)] = at((m * c + ci) * kk + p);
    return;
  }
  bool nk = n.opType == "Gemm" && Attrs(n).ctx.attrInt("transB", 0); // [N, K]
  g.m = nk ? t.dims[0] : t.dims[1];
  g.k = nk ? t.dims[1] : t.dims[0];
  g.w.resize(size_t(g.m * g.k));
  for (int64_t m = 0; m < g.m; ++m)
    for (int64_t k = 0; k < g.k; ++k)
      g.w[size_t(m * g.k + k)] = at(nk ? m * g.k + k : k * g.m + m);
}

/// The int32 bias of the group per output channel: an int32 constant behind a
/// DequantizeLinear (Gemm, Conv), or a float constant (a Gemm's, a fused
/// MatMul's Add operand) ORT quantizes on the accumulator grid as
/// WeightBiasQuantization's nodes compute it, in float: Round(b / (x_scale *
/// w_scale)), half to even.
bool biasOf(const graph::Node &n, IntegerGroup &g, const std::vector<float> &wScale) {
  g.bias.assign(size_t(g.m), 0);
  const graph::Value *b = n.opType != "MatMul" ? n.input(2)
                          : g.biasAdd ? g.biasAdd->input(g.biasAdd->input(0) == n.outputs[0])
                                      : nullptr;
  if (!b)
    return true;
  if (const graph::Node *dq = producerOf(b, "DequantizeLinear")) {
    const graph::Value *bq = dq->input(0);
    if (!bq || !bq->constant || bq->constant->elem != graph::ElemType::Int32 ||
        bq->constant->numElements() != g.m)
      return false;
    for (int64_t m = 0; m < g.m; ++m)
      g.bias[size_t(m)] = int64_t(bq->constant->at(m));
    return true;
  }
  if (!b->constant || b->constant->elem != graph::ElemType::Float ||
      b->constant->numElements() != g.m)
    return false;
  for (int64_t m = 0; m < g.m; ++m) {
    float scale = g.xScale * wScale[size_t(m)];
    g.bias[size_t(m)] = int64_t(std::nearbyint(float(b->constant->at(m)) / scale));
  }
  return true;
}

/// The Add of ortGemmAdd whose float constant bias of shape [N]
/// WeightBiasQuantization makes int32, so that the Gemm can be a QGemm.
const graph::Node *ortBiasAdd(const graph::Node &n) {
  const graph::Node *add = ortGemmAdd(n);
  if (!add)
    return nullptr;
  const graph::Value *b = add->input(add->input(0) == n.outputs[0] ? 1 : 0);
  return b->constant && b->constant->elem == graph::ElemType::Float && b->constant->dims.size() == 1
             ? add
             : nullptr;
}

/// Whether ORT's EliminateSlice removes `n` at level 1: a Slice whose
/// constant starts are all 0 and ends all INT64_MAX, steps (if given) 1.
bool ortEliminatesSlice(const graph::Node &n) {
  if (n.opType != "Slice" || !n.inDefaultDomain() || n.outputs.empty() || !n.outputs[0] ||
      n.outputs[0]->isGraphOutput)
    return false;
  const graph::Value *starts = n.input(1), *ends = n.input(2), *steps = n.input(4);
  if (!starts || !ends || !starts->constant || !ends->constant ||
      starts->constant->numElements() == 0 ||
      starts->constant->numElements() != ends->constant->numElements() ||
      (steps && !steps->constant))
    return false;
  for (int64_t i = 0; i < starts->constant->numElements(); ++i)
    if (starts->constant->at(i) != 0 ||
        ends->constant->at(i) < double(std::numeric_limits<int64_t>::max()))
      return false;
  for (int64_t i = 0; steps && i < steps->constant->numElements(); ++i)
    if (steps->constant->at(i) != 1)
      return false;
  return true;
}

/// Whether QuantizeLinear `q` and DequantizeLinear `dq` use one scalar
/// grid (the same constant scale and zero point).
bool oneGrid(const graph::Node &q, const graph::Node &dq) {
  const graph::Tensor *qs = scalarInput(q, 1), *ds = scalarInput(dq, 1), *qz = scalarInput(q, 2),
                      *dz = scalarInput(dq, 2);
  return qs && ds && qz && dz && qs->at(0) == ds->at(0) && qz->elem == dz->elem &&
         qz->at(0) == dz->at(0);
}

/// How many readers DequantizeLinear `dq`'s output has once ORT's level-1
/// rewrites ran: a Slice that slices nothing (EliminateSlice) hands its
/// readers on, and a DequantizeLinear -> QuantizeLinear of one grid between
/// two pairs of one grid each (DoubleQDQPairsRemover) joins the pairs, so the
/// second DequantizeLinear's readers are the codes' readers. The graph's
/// outputs count as one reader.
size_t ortDequantizeReaders(const graph::Node &dq) {
  const graph::Node *first = &dq;
  const graph::Value *out = dq.outputs.empty() ? nullptr : dq.outputs[0];
  while (out && !out->isGraphOutput && out->uses.size() == 1) {
    const graph::Node *r = out->uses[0].node;
    if (ortEliminatesSlice(*r)) {
      out = r->outputs[0];
      continue;
    }
    const graph::Value *codes = r->outputs.empty() ? nullptr : r->outputs[0];
    const graph::Node *q = first->input(0) ? first->input(0)->producer : nullptr;
    if (r->opType != "QuantizeLinear" || !r->inDefaultDomain() || !codes || codes->isGraphOutput ||
        codes->uses.size() != 1 || !q || !oneGrid(*q, *first) || !oneGrid(*r, *first))
      break;
    const graph::Node *next = codes->uses[0].node;
    if (next->opType != "DequantizeLinear" || !next->inDefaultDomain() || !oneGrid(*r, *next))
      break;
    first = next;
    out = next->outputs.empty() ? nullptr : next->outputs[0];
  }
  return out ? out->uses.size() + out->isGraphOutput : 0;
}

} // namespace

/// The shape of `v` as ORT's graph knows it: its type's, a constant's, or
/// the constant a DequantizeLinear reads.
static std::optional<std::vector<graph::Dim>> shapeOf(const graph::Value *v) {
  if (!v)
    return std::nullopt;
  if (v->type.shape)
    return v->type.shape;
  const graph::Node *dq = producerOf(v, "DequantizeLinear");
  const graph::Tensor *t = v->constant          ? v->constant
                           : dq && dq->input(0) ? dq->input(0)->constant
                                                : nullptr;
  if (!t)
    return std::nullopt;
  std::vector<graph::Dim> dims(t->dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    dims[i].value = t->dims[i];
  return dims;
}

const graph::Node *ortGemmAdd(const graph::Node &n) {
  const graph::Value *y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (n.opType != "MatMul" || !y || y->isGraphOutput || y->uses.size() != 1)
    return nullptr;
  std::optional<std::vector<graph::Dim>> xs = shapeOf(n.input(0)), ws = shapeOf(n.input(1));
  if (!xs || !ws || ws->size() != 2)
    return nullptr;
  const graph::Node &add = *y->uses[0].node;
  std::optional<std::vector<graph::Dim>> bs = shapeOf(add.input(1 - y->uses[0].index));
  if (add.opType != "Add" || !add.inDefaultDomain() || add.inputs.size() != 2 || !bs ||
      add.outputs.empty() || !add.outputs[0])
    return nullptr;
  bool plain = xs->size() == 2;
  if (!plain)
    for (const graph::Dim &d : *xs)
      if (!d.known() || !d.param.empty())
        return nullptr;
  const graph::Dim &dn = (*ws)[1];
  auto one = [](const graph::Dim &d) { return d.value == 1; };
  const std::vector<graph::Dim> &b = *bs;
  bool fits = (b.size() == 1 && b[0] == dn) ||
              (plain && b.size() == 2 && one(b[0]) && b[1] == dn) ||
              (plain && b.size() == 2 && b[0] == (*xs)[0] && (one(b[1]) || b[1] == dn));
  return fits ? &add : nullptr;
}

bool ortMatMulIntegerToFloat(const graph::Node &n) {
  const graph::Value *y = n.outputs.empty() ? nullptr : n.outputs[0];
  return n.opType == "MatMul" && y && !ortGemmAdd(n) &&
         std::none_of(y->uses.begin(), y->uses.end(),
                      [](const graph::Use &u) { return u.node->opType == "QuantizeLinear"; });
}

bool ortDropsBefore(const graph::Node &act, const graph::Node &q) {
  QGrid g = gridOf(q);
  if (act.opType == "Relu")
    return g.zero == g.qmin;
  Attrs a(act); // Clip before opset 11: attributes
  double lo = a.ctx.attrFloat("min", -std::numeric_limits<float>::infinity()),
         hi = a.ctx.attrFloat("max", std::numeric_limits<float>::infinity());
  for (size_t i = 1; i < 3; ++i)
    if (act.input(i)) {
      const graph::Tensor *b = scalarInput(act, i);
      if (!b)
        return false;
      (i == 1 ? lo : hi) = b->at(0);
    }
  constexpr double eps = 1.1920929e-07; // FLT_EPSILON
  return lo - g.scale * double(g.qmin - g.zero) <= eps &&
         g.scale * double(g.qmax - g.zero) - hi <= eps;
}

bool ortUnsignedCodes(const graph::Value &codes) {
  const graph::Node *q = producerOf(&codes, "QuantizeLinear");
  if (!q)
    return codes.type.elem == graph::ElemType::UInt8;
  const graph::Tensor *zero = scalarInput(*q, 2);
  if (!q->input(2) || (zero && zero->elem == graph::ElemType::UInt8))
    return true; // uint8 codes (a QuantizeLinear without zero point gives uint8)
  if (!zero || zero->elem != graph::ElemType::Int8 || codes.isGraphOutput || codes.uses.size() != 1)
    return false;
  const graph::Node *dq = codes.uses[0].node;
  // One reader of the DequantizeLinear's output (a node, or the graph's
  // outputs) in the graph ORT has after its level-1 rewrites.
  return dq->opType == "DequantizeLinear" && dq->inDefaultDomain() && codes.uses[0].index == 0 &&
         ortDequantizeReaders(*dq) <= 1;
}

const graph::Value *groupOutput(const IntegerGroup &g) {
  const graph::Node &n = g.biasAdd ? *g.biasAdd : *g.node;
  return n.outputs.empty() ? nullptr : n.outputs[0];
}

bool ortFuses(const IntegerGroup &g) {
  const graph::Node *dqx = producerOf(g.node->input(0), "DequantizeLinear"),
                    *q = quantizerAfter(groupOutput(g));
  if (!dqx || !dqx->input(0) || !ortUnsignedCodes(*dqx->input(0)))
    return false;
  return g.floatOutput ||
         (q && !q->outputs.empty() && q->outputs[0] && ortUnsignedCodes(*q->outputs[0]));
}

std::optional<IntegerGroup> integerGroupOf(const graph::Node &n) {
  if (!n.inDefaultDomain() || (n.opType != "Conv" && n.opType != "Gemm" && n.opType != "MatMul"))
    return std::nullopt;
  IntegerGroup g;
  g.node = &n;
  g.biasAdd = ortBiasAdd(n);
  const graph::Node *dqx = producerOf(n.input(0), "DequantizeLinear"),
                    *dqw = producerOf(n.input(1), "DequantizeLinear"),
                    *q = quantizerAfter(groupOutput(g));
  g.floatOutput = !q && ortMatMulIntegerToFloat(n);
  if (!dqx || !dqw || !(q || g.floatOutput) || !scalarInput(*dqx, 1) ||
      (dqx->input(2) && !scalarInput(*dqx, 2)))
    return std::nullopt;
  const graph::Value *xq = dqx->input(0), *wq = dqw->input(0), *ws = dqw->input(1),
                     *wz = dqw->input(2), *yz = q ? q->input(2) : nullptr;
  graph::ElemType xe = xq ? xq->type.elem : graph::ElemType::Undefined,
                  ye = yz ? yz->constant->elem : graph::ElemType::UInt8;
  if ((xe != graph::ElemType::UInt8 && xe != graph::ElemType::Int8) ||
      (ye != graph::ElemType::UInt8 && ye != graph::ElemType::Int8))
    return std::nullopt;
  // Blocked weights (a scale of the weight's rank) have no integer kernel.
  if (!wq || !wq->constant || wq->constant->elem != graph::ElemType::Int8 || !ws || !ws->constant ||
      ws->constant->dims.size() > 1 || (wz && !wz->constant))
    return std::nullopt;
  for (int64_t i = 0; wz && i < wz->constant->numElements(); ++i)
    if (wz->constant->at(i) != 0)
      return std::nullopt;
  // ORT's Gemm selector wants the weight's zero point (measured with ORT
  // 1.30: without one the Gemm stays float; Conv and MatMul fuse either way).
  if (!wz && (n.opType == "Gemm" || g.biasAdd))
    return std::nullopt;
  const graph::Tensor &w = *wq->constant;
  Attrs a(n);
  int64_t group = a.ctx.attrInt("group", 1);
  if (n.opType == "Conv" ? w.dims.size() < 3 || group < 1 : w.dims.size() != 2)
    return std::nullopt;
  if (n.opType == "Gemm" && (a.ctx.attrInt("transA", 0) || a.ctx.attrFloat("alpha", 1) != 1 ||
                             a.ctx.attrFloat("beta", 1) != 1))
    return std::nullopt;

  g.signedX = xe == graph::ElemType::Int8;
  g.xScale = float(scalarInput(*dqx, 1)->at(0));
  g.xZero = dqx->input(2) ? int64_t(scalarInput(*dqx, 2)->at(0)) : 0;
  g.yScale = q ? float(scalarInput(*q, 1)->at(0)) : 1.0f;
  g.yZero = yz ? int64_t(yz->constant->at(0)) : 0;
  g.yMin = ye == graph::ElemType::Int8 ? -128 : 0;
  g.yMax = ye == graph::ElemType::Int8 ? 127 : 255;
  g.depthwise = n.opType == "Conv" && group > 1 && w.dims[1] == 1;
  reductionOf(n, w, g);
  int64_t scales = ws->constant->numElements();
  if (scales != 1 && scales != g.m)
    return std::nullopt;
  if (scales > 1) { // per output channel: the weight's axis of the outputs
    int64_t axis = Attrs(*dqw).ctx.attrInt("axis", 1), rank = int64_t(w.dims.size());
    bool nk = n.opType == "Gemm" && a.ctx.attrInt("transB", 0);
    if ((axis < 0 ? axis + rank : axis) != (n.opType == "Conv" || nk ? 0 : 1))
      return std::nullopt;
  }
  std::vector<float> wScale(size_t(g.m));
  for (int64_t m = 0; m < g.m; ++m) {
    wScale[size_t(m)] = float(ws->constant->at(scales == 1 ? 0 : m));
    // As ORT computes it: in float, (x_scale * w_scale) / y_scale.
    g.multiplier.push_back(g.floatOutput ? g.xScale * wScale[size_t(m)]
                                         : g.xScale * wScale[size_t(m)] / g.yScale);
    const int8_t *row = g.w.data() + m * g.k;
    for (int64_t k = 0; k + 1 < g.k && !g.depthwise; k += 2)
      g.canSaturate |=
          (std::abs(int64_t(row[k])) + std::abs(int64_t(row[k + 1]))) * kU8Max > kInt16Max;
  }
  if (!biasOf(n, g, wScale))
    return std::nullopt;
  return g;
}

std::vector<IntegerGroup> saturatingGroups(const graph::Graph &g) {
  std::vector<IntegerGroup> out;
  for (const auto &n : g.nodes())
    if (auto grp = integerGroupOf(*n); grp && grp->canSaturate && ortFuses(*grp))
      out.push_back(std::move(*grp));
  return out;
}

bool computeIntegerGroup(const IntegerGroup &grp, IntegerArithmetic arith, KernelContext &ctx) {
  return computeIntegerGroup(grp, arith, *ctx.inputs[0], ctx);
}

bool computeIntegerGroup(const IntegerGroup &grp, IntegerArithmetic arith, const Tensor &x,
                         KernelContext &ctx) {
  Tensor &y = ctx.outputs[0];
  if (x.elem() != graph::ElemType::Float || y.elem() != graph::ElemType::Float)
    return ctx.fail("the integer kernel takes and gives float tensors");
  bool pairs = arith == IntegerArithmetic::SaturatingPairs && !grp.depthwise;
  const float *xs = x.data<float>();
  float *ys = y.data<float>();
  // The activation as the u8 kernel reads it (exact: x is a grid value).
  int64_t lo = grp.signedX ? -128 : 0, hi = grp.signedX ? 127 : 255, shift = grp.signedX ? 128 : 0,
          zeroRaw = grp.xZero + shift;
  auto raw = [&](int64_t i) {
    int64_t q = int64_t(std::nearbyint(double(xs[i]) / double(grp.xScale))) + grp.xZero;
    return std::clamp(q, lo, hi) + shift;
  };
  // One output: the reduction of row m with `col` (raw activations, K of
  // them), requantized as ORT does and dequantized.
  auto output = [&](int64_t m, const int32_t *col) {
    const int8_t *w = grp.w.data() + m * grp.k;
    int64_t acc = 0, wsum = 0;
    for (int64_t k = 0; k < grp.k; ++k)
      wsum += w[k];
    if (pairs) {
      int64_t k = 0;
      for (; k + 1 < grp.k; k += 2)
        acc += std::clamp<int64_t>(int64_t(w[k]) * col[k] + int64_t(w[k + 1]) * col[k + 1],
                                   kInt16Min, kInt16Max);
      if (k < grp.k)
        acc += int64_t(w[k]) * col[k];
    } else {
      for (int64_t k = 0; k < grp.k; ++k)
        acc += int64_t(w[k]) * col[k];
    }
    acc += grp.bias[size_t(m)] - zeroRaw * wsum;
    float v = float(int32_t(acc)) * grp.multiplier[size_t(m)];
    if (grp.floatOutput)
      return v;
    int64_t q = std::clamp(int64_t(std::nearbyint(v)) + grp.yZero, grp.yMin, grp.yMax);
    return float(q - grp.yZero) * grp.yScale;
  };
  std::vector<int32_t> col(size_t(grp.k));

  const graph::Node &n = *grp.node;
  if (n.opType != "Conv") {
    // x [..., K] -> y [..., M].
    int64_t rows = x.numel() / std::max<int64_t>(grp.k, 1);
    if (x.shape().empty() || x.shape().back() != grp.k || y.numel() != rows * grp.m)
      return ctx.fail("the integer kernel's shapes do not match the model's");
#pragma omp parallel for firstprivate(col) schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
      for (int64_t k = 0; k < grp.k; ++k)
        col[size_t(k)] = int32_t(raw(row * grp.k + k));
      for (int64_t m = 0; m < grp.m; ++m)
        ys[row * grp.m + m] = output(m, col.data());
    }
    return true;
  }

  // Conv: x [N, C, spatial...] -> y [N, M, out spatial...]; reduction index
  // k = position * (C/g) + c, positions in kernel row-major order.
  const Shape &xd = x.shape(), &yd = y.shape();
  ConvGeometry geo;
  if (!convGeometry(ctx, xd, n.input(1)->producer->input(0)->constant->dims, geo))
    return false;
  if (geo.outShape != yd)
    return ctx.fail("the integer kernel's shapes do not match the model's");
  size_t sp = xd.size() - 2;
  int64_t cg = xd[1] / geo.group, mg = grp.m / geo.group, inner = 1, outInner = 1;
  for (size_t d = 0; d < sp; ++d) {
    inner *= xd[d + 2];
    outInner *= yd[d + 2];
  }
  std::vector<int64_t> opos(sp), kpos(sp);
#pragma omp parallel for firstprivate(col, opos, kpos) schedule(static)
  for (int64_t bo = 0; bo < xd[0] * outInner; ++bo) {
    int64_t b = bo / outInner, o = bo % outInner;
    for (size_t d = sp, rest = size_t(o); d-- > 0;) {
      opos[d] = int64_t(rest) % yd[d + 2];
      rest /= size_t(yd[d + 2]);
    }
    for (int64_t gi = 0; gi < geo.group; ++gi) {
      // The column of this output position: padding holds the zero point.
      for (int64_t k = 0; k < grp.k; ++k) {
        int64_t c = k % cg, p = k / cg, off = 0;
        bool inside = true;
        for (size_t d = sp; d-- > 0;) {
          kpos[d] = p % geo.kernel[d];
          p /= geo.kernel[d];
        }
        for (size_t d = 0; d < sp && inside; ++d) {
          int64_t i = opos[d] * geo.strides[d] - geo.padBegin[d] + kpos[d] * geo.dilations[d];
          inside = i >= 0 && i < xd[d + 2];
          off = off * xd[d + 2] + i;
        }
        col[size_t(k)] = int32_t(inside ? raw((b * xd[1] + gi * cg + c) * inner + off) : zeroRaw);
      }
      for (int64_t m = gi * mg; m < (gi + 1) * mg; ++m)
        ys[(b * grp.m + m) * outInner + o] = output(m, col.data());
    }
  }
  return true;
}

} // namespace tpcc::rt
