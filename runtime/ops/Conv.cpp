//===- Conv.cpp - Conv and ConvTranspose through oneDNN ---------------------===//
//
// Conv and ConvTranspose (1-D, 2-D and 3-D, grouped and depthwise, every ONNX
// attribute) run as oneDNN convolution_forward / deconvolution_forward
// primitives: they are the bulk of a CNN's time, and oneDNN's JIT kernels
// are far faster than anything written here.
//
// oneDNN picks the source, weights and destination layouts
// (format_tag::any, usually channel-blocked). The executor's tensors are
// plain NCX, so the input is reordered in and the output back out when the
// primitive wants another layout. Per node, primitives are cached by input
// and weight shape (the same node runs at batch 1 and batch 64), and the
// weights are reordered into the primitive's layout once: again only when
// the weight tensor is not a constant or its buffer changed.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/ops/ConvGeometry.h"
#include "runtime/ops/Dnnl.h"

#include "llvm/ADT/bit.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::dnnl_util;

namespace {

/// A primitive prepared for one input/weight shape.
struct ConvPlan {
  dnnl::primitive prim;
  dnnl::memory::desc userSrc, userWei, userDst;
  dnnl::memory::desc src, wei, dst;
  dnnl::memory srcBuf, dstBuf; ///< in the primitive's layouts, when not plain
  dnnl::reorder srcReorder, weiReorder, dstReorder;
  dnnl::memory weiBuf;
  const void *weiFrom = nullptr; ///< the buffer weiBuf was reordered from
  bool hasBias = false;
};

struct ConvState : NodeState {
  std::map<Shape, ConvPlan> plans;
};

/// Reads the attributes shared by Conv and ConvTranspose into `g`
/// (kernel, strides, dilations, explicit pads) and checks them.
bool readCommon(KernelContext &ctx, const Shape &x, const Shape &w, ConvGeometry &g) {
  size_t nsp = x.size() - 2;
  for (size_t i = 0; i < nsp; ++i)
    g.kernel.push_back(w[i + 2]);
  if (ctx.hasAttr("kernel_shape") && ctx.attrInts("kernel_shape") != g.kernel)
    return ctx.fail("kernel_shape " + shapeStr(ctx.attrInts("kernel_shape")) +
                    " does not match the weights " + shapeStr(w));
  g.strides = ctx.attrInts("strides", std::vector<int64_t>(nsp, 1));
  g.dilations = ctx.attrInts("dilations", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * nsp, 0));
  if (g.strides.size() != nsp || g.dilations.size() != nsp || pads.size() != 2 * nsp)
    return ctx.fail("strides, dilations and pads must have one (pads: two) entries per "
                    "spatial dimension of the input " +
                    shapeStr(x));
  for (size_t i = 0; i < nsp; ++i) {
    if (g.strides[i] < 1 || g.dilations[i] < 1)
      return ctx.fail("strides and dilations must be positive");
    if (pads[i] < 0 || pads[i + nsp] < 0)
      return ctx.fail("pads must not be negative");
    if (g.kernel[i] < 1)
      return ctx.fail("empty kernel in weights " + shapeStr(w));
  }
  g.padBegin.assign(pads.begin(), pads.begin() + nsp);
  g.padEnd.assign(pads.begin() + nsp, pads.end());
  g.group = ctx.attrInt("group", 1);
  if (g.group < 1)
    return ctx.fail("group must be positive, not " + std::to_string(g.group));
  return true;
}

} // namespace

bool rt::convGeometry(KernelContext &ctx, const Shape &x, const Shape &w, ConvGeometry &g) {
  if (!readCommon(ctx, x, w, g))
    return false;
  int64_t c = x[1], m = w[0];
  if (c % g.group || m % g.group || w[1] * g.group != c)
    return ctx.fail("input " + shapeStr(x) + " and weights " + shapeStr(w) +
                    " do not agree on channels for group " + std::to_string(g.group));
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  g.outShape = {x[0], m};
  for (size_t i = 0; i + 2 < x.size(); ++i) {
    int64_t in = x[i + 2], s = g.strides[i];
    int64_t ke = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + ke - in);
      g.padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.padEnd[i] = total - g.padBegin[i];
    } else if (autoPad == "VALID") {
      g.padBegin[i] = g.padEnd[i] = 0;
    } else if (autoPad != "NOTSET") {
      return ctx.fail("unknown auto_pad `" + autoPad + "`");
    }
    int64_t padded = in + g.padBegin[i] + g.padEnd[i];
    if (padded < ke)
      return ctx.fail("kernel " + shapeStr(g.kernel) +
                      " (dilated) is larger than the padded input " + shapeStr(x));
    g.outShape.push_back((padded - ke) / s + 1);
  }
  return true;
}

namespace {

/// ConvTranspose's output shape and pads (output_shape, output_padding and
/// auto_pad resolved per the ONNX spec).
bool deconvGeometry(KernelContext &ctx, const Shape &x, const Shape &w, ConvGeometry &g) {
  if (!readCommon(ctx, x, w, g))
    return false;
  size_t nsp = x.size() - 2;
  int64_t c = x[1];
  if (w[0] != c || c % g.group)
    return ctx.fail("input " + shapeStr(x) + " and weights " + shapeStr(w) +
                    " do not agree on channels for group " + std::to_string(g.group));
  std::vector<int64_t> outPad = ctx.attrInts("output_padding", std::vector<int64_t>(nsp, 0));
  std::vector<int64_t> outShape = ctx.attrInts("output_shape");
  if (outShape.size() == nsp + 2)
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (outPad.size() != nsp || (!outShape.empty() && outShape.size() != nsp))
    return ctx.fail("output_padding and output_shape must have one entry per spatial dimension");
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return ctx.fail("unknown auto_pad `" + autoPad + "`");
  g.outShape = {x[0], w[1] * g.group};
  for (size_t i = 0; i < nsp; ++i) {
    int64_t in = x[i + 2], s = g.strides[i];
    int64_t ke = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (outPad[i] < 0 || outPad[i] >= std::max(s, g.dilations[i]))
      return ctx.fail("output_padding must be smaller than the stride or dilation");
    int64_t full = s * (in - 1) + outPad[i] + ke;
    bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
    if (!outShape.empty() || same) {
      int64_t out = !outShape.empty() ? outShape[i] : in * s;
      // Python's floor division: a negative total (output_shape larger
      // than the full result) extends the output at the end.
      int64_t total = full - out;
      int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
      if (autoPad == "SAME_UPPER") {
        g.padBegin[i] = half;
        g.padEnd[i] = total - half;
      } else {
        g.padBegin[i] = total - half;
        g.padEnd[i] = half;
      }
    } else if (autoPad == "VALID") {
      g.padBegin[i] = g.padEnd[i] = 0;
    }
    int64_t out = full - g.padBegin[i] - g.padEnd[i];
    if (out < 1)
      return ctx.fail("ConvTranspose output would be empty");
    g.outShape.push_back(out);
  }
  return true;
}

/// Builds the primitive for `g`. Weights are described in ONNX's plain
/// layout (grouped as G x O/G x I/G x K... for oneDNN).
void buildPlan(ConvPlan &p, bool transpose, const Shape &x, const Shape &w, const ConvGeometry &g,
               bool hasBias, const PostOp *post) {
  size_t nsp = x.size() - 2;
  int64_t G = g.group, oc = g.outShape[1], ic = x[1];
  int64_t ksize = numElements(g.kernel);
  dnnl::memory::dims wDims, wStrides;
  if (G > 1)
    wDims = {G, oc / G, ic / G};
  else
    wDims = {oc, ic};
  wDims.insert(wDims.end(), g.kernel.begin(), g.kernel.end());
  // Spatial strides: row-major within the kernel.
  dnnl::memory::dims kStrides = rowMajorStrides(g.kernel);
  if (!transpose) {
    // ONNX W is (M, C/G, K...) == (G, M/G, C/G, K...).
    if (G > 1)
      wStrides = {(oc / G) * (ic / G) * ksize, (ic / G) * ksize, ksize};
    else
      wStrides = {(ic / G) * ksize, ksize};
  } else {
    // ONNX W is (C, M/G, K...) == (G, C/G, M/G, K...): o and i swapped.
    if (G > 1)
      wStrides = {(ic / G) * (oc / G) * ksize, ksize, (oc / G) * ksize};
    else
      wStrides = {ksize, (oc / G) * ksize};
  }
  wStrides.insert(wStrides.end(), kStrides.begin(), kStrides.end());

  p.userSrc = plainDesc(x);
  p.userDst = plainDesc(g.outShape);
  p.userWei = dnnl::memory::desc(wDims, dt::f32, wStrides);
  dnnl::memory::desc anySrc(toDims(x), dt::f32, tag::any);
  dnnl::memory::desc anyDst(toDims(g.outShape), dt::f32, tag::any);
  dnnl::memory::desc anyWei(wDims, dt::f32, tag::any);
  dnnl::memory::desc biasMd({oc}, dt::f32, tag::x);
  dnnl::memory::dims strides(g.strides.begin(), g.strides.end());
  dnnl::memory::dims dil(nsp), pl(g.padBegin.begin(), g.padBegin.end()),
      pr(g.padEnd.begin(), g.padEnd.end());
  for (size_t i = 0; i < nsp; ++i)
    dil[i] = g.dilations[i] - 1;
  p.hasBias = hasBias;
  const dnnl::engine &eng = engine();
  dnnl::primitive_attr attr;
  if (post) {
    dnnl::post_ops ops;
    if (std::isinf(post->hi))
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f); // lo is 0
    else
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, post->lo, post->hi);
    attr.set_post_ops(ops);
  }
  auto finish = [&](const auto &pd) {
    p.src = pd.src_desc();
    p.wei = pd.weights_desc();
    p.dst = pd.dst_desc();
  };
  if (!transpose) {
    auto d = hasBias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                       dnnl::algorithm::convolution_direct, anySrc,
                                                       anyWei, biasMd, anyDst, strides, dil, pl, pr)
                     : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                       dnnl::algorithm::convolution_direct, anySrc,
                                                       anyWei, anyDst, strides, dil, pl, pr);
    dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
    finish(pd);
    p.prim = dnnl::convolution_forward(pd);
  } else {
    auto d = hasBias
                 ? dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                     dnnl::algorithm::deconvolution_direct, anySrc,
                                                     anyWei, biasMd, anyDst, strides, dil, pl, pr)
                 : dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                     dnnl::algorithm::deconvolution_direct, anySrc,
                                                     anyWei, anyDst, strides, dil, pl, pr);
    dnnl::deconvolution_forward::primitive_desc pd(d, attr, eng);
    finish(pd);
    p.prim = dnnl::deconvolution_forward(pd);
  }
  if (p.src != p.userSrc) {
    p.srcBuf = dnnl::memory(p.src, eng);
    p.srcReorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.userSrc, eng, p.src));
  }
  if (p.dst != p.userDst) {
    p.dstBuf = dnnl::memory(p.dst, eng);
    p.dstReorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.dst, eng, p.userDst));
  }
  if (p.wei != p.userWei) {
    p.weiBuf = dnnl::memory(p.wei, eng);
    p.weiReorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.userWei, eng, p.wei));
  }
}

/// Copies `part` (computed with negative pads clipped to zero) into `out`,
/// which extends it by `-pad` cells on the sides where a pad was negative;
/// those cells receive no input and hold the bias alone.
void placeExtended(const Tensor &part, Tensor &out, const ConvGeometry &g, const Tensor *bias) {
  size_t nsp = out.shape().size() - 2;
  int64_t o[3] = {1, 1, 1}, t[3] = {1, 1, 1}, shift[3] = {0, 0, 0};
  for (size_t i = 0; i < nsp; ++i) {
    o[3 - nsp + i] = out.dim(i + 2);
    t[3 - nsp + i] = part.dim(i + 2);
    shift[3 - nsp + i] = std::min<int64_t>(g.padBegin[i], 0);
  }
  int64_t channels = out.dim(1), planes = out.dim(0) * channels;
  const float *src = part.data<float>();
  float *dst = out.data<float>();
  parallelFor(planes, o[0] * o[1] * o[2], [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      float fill = bias ? bias->data<float>()[pl % channels] : 0.f;
      const float *sp = src + pl * t[0] * t[1] * t[2];
      float *dp = dst + pl * o[0] * o[1] * o[2];
      for (int64_t z = 0; z < o[0]; ++z)
        for (int64_t y = 0; y < o[1]; ++y)
          for (int64_t x = 0; x < o[2]; ++x) {
            int64_t tz = z + shift[0], ty = y + shift[1], tx = x + shift[2];
            bool in = tz >= 0 && tz < t[0] && ty >= 0 && ty < t[1] && tx >= 0 && tx < t[2];
            *dp++ = in ? sp[(tz * t[1] + ty) * t[2] + tx] : fill;
          }
    }
  });
}

bool runConv(KernelContext &ctx, bool transpose) {
  const char *op = transpose ? "ConvTranspose" : "Conv";
  const Tensor *x = ctx.input(0), *w = ctx.input(1), *b = ctx.input(2);
  if (!x || !w)
    return ctx.fail(std::string(op) + " needs an input and weights");
  if (x->elem() != ElemType::Float || w->elem() != ElemType::Float ||
      (b && b->elem() != ElemType::Float))
    return ctx.fail(std::string(op) + " supports float tensors only, not " + typeName(x->elem()));
  if (x->rank() < 3 || x->rank() > 5 || w->rank() != x->rank())
    return ctx.fail("input " + shapeStr(x->shape()) + " and weights " + shapeStr(w->shape()) +
                    " must both have rank 3, 4 or 5");
  ConvGeometry g;
  if (!(transpose ? deconvGeometry(ctx, x->shape(), w->shape(), g)
                  : convGeometry(ctx, x->shape(), w->shape(), g)))
    return false;
  if (b && (b->rank() != 1 || b->dim(0) != g.outShape[1]))
    return ctx.fail("bias " + shapeStr(b->shape()) + " must have one entry per output channel (" +
                    std::to_string(g.outShape[1]) + ")");
  ctx.outputs[0] = Tensor(ElemType::Float, g.outShape);
  if (numElements(x->shape()) == 0 || ctx.outputs[0].numel() == 0)
    return true;
  // oneDNN takes no negative pads (ConvTranspose's output_shape may ask for
  // a larger output than the input covers): clip them, and extend after.
  ConvGeometry run = g;
  bool extend = false;
  for (size_t i = 0; i < g.padBegin.size(); ++i) {
    int64_t pb = std::max<int64_t>(g.padBegin[i], 0), pe = std::max<int64_t>(g.padEnd[i], 0);
    extend |= pb != g.padBegin[i] || pe != g.padEnd[i];
    run.outShape[i + 2] -= (pb - g.padBegin[i]) + (pe - g.padEnd[i]);
    run.padBegin[i] = pb;
    run.padEnd[i] = pe;
    if (run.outShape[i + 2] < 1)
      return ctx.fail(std::string(op) + ": output_shape leaves no output cell covered by input");
  }
  Tensor part = extend ? Tensor(ElemType::Float, run.outShape) : ctx.outputs[0];

  if (!ctx.state)
    ctx.state = std::make_unique<ConvState>();
  auto &plans = static_cast<ConvState &>(*ctx.state).plans;
  Shape key = x->shape();
  key.insert(key.end(), w->shape().begin(), w->shape().end());
  key.push_back(b ? 1 : 0);
  // A folded activation: part of the primitive (the same node may run with
  // and without it).
  const PostOp *post = extend ? nullptr : ctx.post;
  if (post) {
    key.push_back(int64_t(llvm::bit_cast<uint32_t>(post->lo)));
    key.push_back(int64_t(llvm::bit_cast<uint32_t>(post->hi)));
  }
  try {
    auto it = plans.find(key);
    if (it == plans.end()) {
      if (plans.size() >= 16)
        plans.clear();
      ConvPlan p;
      buildPlan(p, transpose, x->shape(), w->shape(), run, b != nullptr, post);
      it = plans.emplace(key, std::move(p)).first;
    }
    ConvPlan &p = it->second;
    dnnl::stream &s = stream();
    const dnnl::engine &eng = engine();

    dnnl::memory wei;
    if (p.weiBuf) {
      if (p.weiFrom != w->raw() || !isConstantValue(ctx.node.input(1))) {
        dnnl::memory userWei = wrap(p.userWei, w->raw());
        p.weiReorder.execute(s, userWei, p.weiBuf);
        p.weiFrom = w->raw();
      }
      wei = p.weiBuf;
    } else {
      wei = wrap(p.userWei, w->raw());
    }
    dnnl::memory src = wrap(p.userSrc, x->raw());
    if (p.srcBuf) {
      p.srcReorder.execute(s, src, p.srcBuf);
      src = p.srcBuf;
    }
    dnnl::memory userDst = dnnl::memory(p.userDst, eng, part.raw());
    dnnl::memory dst = p.dstBuf ? p.dstBuf : userDst;
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (b)
      args[DNNL_ARG_BIAS] = wrap(dnnl::memory::desc({run.outShape[1]}, dt::f32, tag::x), b->raw());
    p.prim.execute(s, args);
    if (p.dstBuf)
      p.dstReorder.execute(s, p.dstBuf, userDst);
    s.wait();
    if (extend) {
      placeExtended(part, ctx.outputs[0], g, b);
      if (ctx.post) { // cells no input reaches hold the bias: clamp after
        float *o = ctx.outputs[0].data<float>(), lo = ctx.post->lo, hi = ctx.post->hi;
        for (int64_t i = 0, n = ctx.outputs[0].numel(); i < n; ++i)
          o[i] = std::min(std::max(o[i], lo), hi);
      }
    }
  } catch (const dnnl::error &e) {
    plans.erase(key);
    return ctx.fail(std::string(op) + ": oneDNN failed: " + e.what());
  } catch (const std::exception &e) {
    plans.erase(key);
    return ctx.fail(std::string(op) + ": " + e.what());
  }
  return true;
}

bool convKernel(KernelContext &ctx) { return runConv(ctx, false); }
bool convTransposeKernel(KernelContext &ctx) { return runConv(ctx, true); }

} // namespace

void rt::registerConvKernels(KernelRegistry &r) {
  r.add("Conv", convKernel);
  r.add("ConvTranspose", convTransposeKernel);
}
