//===- Shape.cpp - Backward of reshaping and data movement ------------------===//
//
// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout (at inference) and
// the straight-through QuantizeLinear / DequantizeLinear move no element: the
// gradient is the output's, in the input's shape. Transpose takes the inverse
// permutation; Concat hands each input its slice of the gradient and Split
// concatenates its outputs' gradients (zeros for an output nobody used).
// Slice, Pad, Gather, Expand, Tile and nearest Resize run their forward
// kernel on element indices to learn where each element went; linear and
// cubic Resize run the forward's interpolation taps transposed.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/grad/Backward.h"
#include "runtime/ops/ResizeTaps.h"

#include <cstring>
#include <numeric>

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::grad;

namespace {

std::vector<int64_t> rowMajor(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

/// The gradient as it is, in the input's shape.
bool passThrough(BackwardContext &ctx) {
  if (!ctx.wants(0))
    return true;
  const Tensor *x = ctx.input(0), *g = ctx.grad(0);
  if (!x)
    return ctx.fail("backward of " + ctx.node.opType + " has no input");
  ctx.inputGrads[0] = g ? g->reshaped(x->shape()) : zeros(x->shape());
  return true;
}

bool transpose(BackwardContext &ctx) {
  if (!ctx.wants(0))
    return true;
  const Tensor *x = ctx.input(0), *g = ctx.grad(0);
  if (!x)
    return ctx.fail("backward of Transpose has no input");
  if (!g) {
    ctx.inputGrads[0] = zeros(x->shape());
    return true;
  }
  size_t r = x->shape().size();
  std::vector<int64_t> perm = ctx.attrInts("perm");
  if (perm.empty())
    for (size_t i = 0; i < r; ++i)
      perm.push_back(int64_t(r - 1 - i));
  if (perm.size() != r)
    return ctx.fail("Transpose's perm does not match the input's rank");
  // Input dimension perm[i] is gradient dimension i.
  std::vector<int64_t> gStrides = rowMajor(g->shape()), strides(r);
  for (size_t i = 0; i < r; ++i)
    strides[size_t(perm[i])] = gStrides[i];
  Tensor dx(ElemType::Float, x->shape());
  if (!stridedCopy(*g, dx, 0, strides))
    return ctx.fail("backward of Transpose: bad strides");
  ctx.inputGrads[0] = std::move(dx);
  return true;
}

bool concat(BackwardContext &ctx) {
  const Tensor *g = ctx.grad(0);
  const Tensor *first = ctx.input(0);
  if (!first)
    return ctx.fail("backward of Concat has no input");
  auto axis = normalizeAxis(ctx.attrInt("axis", 0), first->rank());
  if (!axis)
    return ctx.fail("Concat's axis is out of range");
  int64_t offset = 0;
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    const Tensor *x = ctx.input(k);
    if (!x)
      continue;
    if (ctx.wants(k)) {
      if (!g) {
        ctx.inputGrads[k] = zeros(x->shape());
      } else {
        std::vector<int64_t> strides = rowMajor(g->shape());
        Tensor dx(ElemType::Float, x->shape());
        if (!stridedCopy(*g, dx, offset * strides[size_t(*axis)], strides))
          return ctx.fail("backward of Concat: bad slice");
        ctx.inputGrads[k] = std::move(dx);
      }
    }
    offset += x->dim(*axis);
  }
  return true;
}

bool split(BackwardContext &ctx) {
  if (!ctx.wants(0))
    return true;
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("backward of Split has no input");
  auto axis = normalizeAxis(ctx.attrInt("axis", 0), x->rank());
  if (!axis)
    return ctx.fail("Split's axis is out of range");
  Tensor dx = zeros(x->shape());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < *axis; ++i)
    outer *= x->dim(i);
  for (int64_t i = *axis + 1; i < x->rank(); ++i)
    inner *= x->dim(i);
  int64_t offset = 0, total = x->dim(*axis);
  for (size_t k = 0; k < ctx.outputs.size(); ++k) {
    const Tensor *y = ctx.outputs[k];
    if (!y || !y->defined())
      continue;
    int64_t part = y->dim(*axis);
    if (const Tensor *g = ctx.grad(k))
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dx.data<float>() + (o * total + offset) * inner,
                    g->data<float>() + o * part * inner, size_t(part * inner) * sizeof(float));
    offset += part;
  }
  ctx.inputGrads[0] = std::move(dx);
  return true;
}

/// Backward of an operator that only moves input 0's elements (Slice, Pad,
/// Gather, Expand, Tile...): the forward kernel itself, run on the elements'
/// 1-based indices (a Pad fills 0), says where each output element came
/// from; each gradient element goes back there, summed where an element was
/// copied more than once.
bool moved(BackwardContext &ctx) {
  if (!ctx.wants(0))
    return true;
  const Tensor *x = ctx.input(0), *g = ctx.grad(0);
  if (!x)
    return ctx.fail("backward of " + ctx.node.opType + " has no input");
  Tensor dx = zeros(x->shape());
  if (!g) {
    ctx.inputGrads[0] = std::move(dx);
    return true;
  }
  Tensor index(ElemType::Int64, x->shape()), fill(ElemType::Int64, {}, true);
  for (int64_t i = 0; i < x->numel(); ++i)
    index.data<int64_t>()[i] = i + 1;
  bool pad = ctx.node.opType == "Pad";
  if (pad && ctx.opset < 11 && ctx.attrFloat("value", 0.f) != 0.f)
    return ctx.fail("backward of Pad with a nonzero `value` (before opset 11) is not supported");
  std::unique_ptr<NodeState> none;
  KernelContext kc(ctx.node, ctx.opset, none);
  kc.inputs = ctx.inputs;
  kc.inputs[0] = &index;
  if (pad && kc.inputs.size() > 2 && kc.inputs[2])
    kc.inputs[2] = &fill;
  kc.outputs.resize(ctx.node.outputs.size());
  KernelFn forward = KernelRegistry::get().find(ctx.node.domain, ctx.node.opType);
  if (!forward || !forward(kc))
    return ctx.fail("backward of " + ctx.node.opType + ": " + kc.error);
  const Tensor &from = kc.outputs[0];
  if (from.elem() != ElemType::Int64 || from.shape() != g->shape())
    return ctx.fail("backward of " + ctx.node.opType + ": its forward moved no indices");
  const int64_t *src = from.data<int64_t>();
  const float *gs = g->data<float>();
  float *ds = dx.data<float>();
  for (int64_t i = 0; i < from.numel(); ++i)
    if (src[i] > 0)
      ds[src[i] - 1] += gs[i];
  ctx.inputGrads[0] = std::move(dx);
  return true;
}

/// Backward of Resize and Upsample. Nearest only moves elements (moved).
/// Linear and cubic are, along each resized axis, a linear map [outer, in,
/// inner] -> [outer, out, inner] given by the forward's taps (ResizeTaps.h);
/// the gradient runs each map transposed (every output row's gradient, times
/// each tap's weight, added to the tap's input row), one outer slice per
/// task so the sums keep one order. Outputs outside a crop box are
/// constants: their gradient stops there.
bool resize(BackwardContext &ctx) {
  if (ctx.attrString("mode", "nearest") == "nearest")
    return moved(ctx);
  if (!ctx.wants(0))
    return true;
  const Tensor *x = ctx.input(0), *g = ctx.grad(0);
  if (!isFloat(x))
    return ctx.fail("backward of " + ctx.node.opType + " needs a float input");
  if (!g) {
    ctx.inputGrads[0] = zeros(x->shape());
    return true;
  }
  std::unique_ptr<NodeState> none;
  KernelContext kc(ctx.node, ctx.opset, none);
  kc.inputs = ctx.inputs;
  ResizeTaps t;
  if (!resizeTaps(kc, *x, t))
    return ctx.fail("backward of " + ctx.node.opType + ": " + kc.error);
  if (t.outShape != g->shape())
    return ctx.fail("backward of " + ctx.node.opType + ": the gradient has shape " +
                    shapeStr(g->shape()) + ", not " + shapeStr(t.outShape));
  std::vector<float> cur(g->data<float>(), g->data<float>() + g->numel());
  if (t.axes.empty()) {
    ctx.inputGrads[0] = zeros(x->shape());
    return true;
  }
  size_t r = t.axes.size();
  std::vector<int64_t> pos(r, 0);
  for (size_t i = 0; i < cur.size(); ++i) { // outside the crop box
    bool out = false;
    for (size_t k = 0; k < r; ++k)
      out = out || (t.axes[k].anyOutside && t.axes[k].outside[size_t(pos[k])]);
    if (out)
      cur[i] = 0;
    for (size_t k = r; k-- > 0;) {
      if (++pos[k] < t.outShape[k])
        break;
      pos[k] = 0;
    }
  }
  Shape shape = t.outShape;
  for (size_t k = 0; k < r; ++k) {
    const AxisTaps &a = t.axes[k];
    if (a.identity)
      continue;
    int64_t outer = 1, inner = 1, n = a.n;
    for (size_t d = 0; d < k; ++d)
      outer *= shape[d];
    for (size_t d = k + 1; d < r; ++d)
      inner *= shape[d];
    std::vector<float> next(size_t(outer * a.inDim * inner), 0.f);
    parallelFor(outer, a.outDim * inner * n, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        for (int64_t p = 0; p < a.outDim; ++p) {
          const float *src = cur.data() + (o * a.outDim + p) * inner;
          for (int64_t j = 0; j < n; ++j) {
            float w = float(a.w[size_t(p * n + j)]); // as the forward multiplies
            if (w == 0)
              continue;
            float *dst = next.data() + (o * a.inDim + a.idx[size_t(p * n + j)]) * inner;
            for (int64_t i = 0; i < inner; ++i)
              dst[i] += w * src[i];
          }
        }
    });
    cur.swap(next);
    shape[k] = a.inDim;
  }
  Tensor dx(ElemType::Float, x->shape());
  std::memcpy(dx.raw(), cur.data(), dx.bytes());
  ctx.inputGrads[0] = std::move(dx);
  return true;
}

} // namespace

void rt::grad::registerShapeBackward(BackwardRegistry &r) {
  for (const char *op : {"Slice", "Pad", "Gather", "Expand", "Tile"})
    r.add(op, moved);
  r.add("Resize", resize);
  r.add("Upsample", resize);
  // QuantizeLinear and DequantizeLinear: straight through (Backward.h).
  for (const char *op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout",
                         "QuantizeLinear", "DequantizeLinear"})
    r.add(op, passThrough);
  r.add("Transpose", transpose);
  r.add("Concat", concat);
  r.add("Split", split);
}
