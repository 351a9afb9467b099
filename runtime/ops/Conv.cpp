//===- Conv.cpp - Conv and ConvTranspose through oneDNN ---------------------===//
//
// Conv and ConvTranspose (1-D, 2-D and 3-D, grouped and depthwise, every ONNX
// attribute) run as oneDNN convolution_forward / deconvolution_forward
// primitives: they are the bulk of a CNN's time, and oneDNN's JIT kernels
// are far faster than anything written here.
//
// oneDNN picks the source, weights and destination layouts
// (format_tag::any, usually channel-blocked). The input arrives plain NCX or
// in the layout of the oneDNN kernel before (Tensor::blocked) and is
// reordered when the primitive wants another; the output stays in the
// primitive's layout when the executor says only oneDNN kernels read it
// (KernelContext::blockedOutput), and is reordered to plain otherwise. The
// nodes the executor fused after the convolution (Fusion.h) are post-ops;
// an Add's operand is read in the destination's layout. Per node, primitives
// are cached by shapes, layouts and post-ops (the same node runs at batch 1
// and 64, fused and not), and the weights are reordered into the
// primitive's layout once: again only when the weight tensor is not a
// constant or its buffer changed.
//
//===----------------------------------------------------------------------===//
#include "runtime/Fusion.h"
#include "runtime/KernelUtil.h"
#include "runtime/ops/ConvGeometry.h"
#include "runtime/ops/Dnnl.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::dnnl_util;

namespace {

/// What a primitive is prepared for: shapes, layouts and post-ops.
struct ConvKey {
  Shape x, w;
  bool bias = false, blockedOut = false;
  int threads = 1; ///< oneDNN sizes its work split by the thread count
  std::vector<PostOp> post;
  dnnl::memory::desc src;                   ///< the input as it arrives
  std::vector<dnnl::memory::desc> operands; ///< the Adds' operands as they arrive
  bool operator==(const ConvKey &o) const {
    return x == o.x && w == o.w && bias == o.bias && blockedOut == o.blockedOut &&
           threads == o.threads && post == o.post && src == o.src && operands == o.operands;
  }
};

/// A primitive prepared for one key. Memory objects are made once and
/// pointed at each run's buffers.
struct ConvPlan {
  ConvKey key;
  dnnl::primitive prim;
  dnnl::memory::desc userWei;
  dnnl::memory::desc src, wei, dst, plainDst;
  std::shared_ptr<const BlockedLayout> dstLayout; ///< for blocked outputs
  dnnl::memory srcIn, srcBuf, dstMem, dstOut, weiBuf, biasMem;
  dnnl::reorder srcReorder, weiReorder, dstReorder;
  /// Per Add: the operand as it arrives, its copy in the destination's
  /// layout (when it arrives in another) and the reorder between them.
  std::vector<dnnl::memory> operandIn, operandBuf;
  std::vector<dnnl::reorder> operandReorder;
  std::unordered_map<int, dnnl::memory> args;
  /// When oneDNN has only its reference convolution for the Adds as
  /// post-ops: the convolution takes the post-ops before the first Add, and
  /// each Add runs after it as a binary primitive in the destination's
  /// layout (in place), with the element-wise post-ops up to the next Add.
  std::vector<dnnl::primitive> adds;
  const void *weiFrom = nullptr; ///< the buffer weiBuf was reordered from
};

struct ConvState : NodeState {
  std::vector<ConvPlan> plans;
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

dnnl::memory::desc rt::convWeightsDesc(const Shape &x, const ConvGeometry &g, bool transpose) {
  int64_t G = g.group, oc = g.outShape[1], ic = x[1];
  int64_t ksize = numElements(g.kernel);
  dnnl::memory::dims wDims, wStrides;
  if (G > 1)
    wDims = {G, oc / G, ic / G};
  else
    wDims = {oc, ic};
  wDims.insert(wDims.end(), g.kernel.begin(), g.kernel.end());
  // Spatial strides: row-major within the kernel.
  dnnl::memory::dims kStrides = dnnl_util::rowMajorStrides(g.kernel);
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
  return dnnl::memory::desc(wDims, dnnl::memory::data_type::f32, wStrides);
}

bool rt::deconvGeometry(KernelContext &ctx, const Shape &x, const Shape &w, ConvGeometry &g) {
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

namespace {

/// Appends `post` to `ops`; an Add reads a tensor in layout `dst`.
void appendPostOps(dnnl::post_ops &ops, llvm::ArrayRef<PostOp> post,
                   const dnnl::memory::desc &dst) {
  using A = dnnl::algorithm;
  for (const PostOp &p : post) {
    switch (p.kind) {
    case PostOp::Kind::Clip:
      if (p.a == 0.f && std::isinf(p.b))
        ops.append_eltwise(1.f, A::eltwise_relu, 0.f, 0.f);
      else
        ops.append_eltwise(1.f, A::eltwise_clip, p.a, p.b);
      break;
    case PostOp::Kind::LeakyRelu:
      ops.append_eltwise(1.f, A::eltwise_relu, p.a, 0.f);
      break;
    case PostOp::Kind::Logistic:
      ops.append_eltwise(1.f, A::eltwise_logistic, 0.f, 0.f);
      break;
    case PostOp::Kind::Tanh:
      ops.append_eltwise(1.f, A::eltwise_tanh, 0.f, 0.f);
      break;
    case PostOp::Kind::Swish:
      ops.append_eltwise(1.f, A::eltwise_swish, p.a, 0.f);
      break;
    case PostOp::Kind::HardSwish:
      ops.append_eltwise(1.f, A::eltwise_hardswish, 0.f, 0.f);
      break;
    case PostOp::Kind::Linear:
      ops.append_eltwise(1.f, A::eltwise_linear, p.a, p.b);
      break;
    case PostOp::Kind::Add:
      ops.append_binary(A::binary_add, dst);
      break;
    }
  }
}

/// Builds the primitive for `g` and `p.key`. Weights are described in
/// ONNX's plain layout (grouped as G x O/G x I/G x K... for oneDNN).
void buildPlan(ConvPlan &p, bool transpose, const ConvGeometry &g) {
  const Shape &x = p.key.x;
  size_t nsp = x.size() - 2;
  int64_t oc = g.outShape[1];
  p.userWei = convWeightsDesc(x, g, transpose);
  dnnl::memory::dims wDims = p.userWei.dims();

  p.plainDst = plainDesc(g.outShape);
  dnnl::memory::desc anySrc(toDims(x), dt::f32, tag::any);
  dnnl::memory::desc anyWei(wDims, dt::f32, tag::any);
  dnnl::memory::desc biasMd({oc}, dt::f32, tag::x);
  dnnl::memory::dims strides(g.strides.begin(), g.strides.end());
  dnnl::memory::dims dil(nsp), pl(g.padBegin.begin(), g.padBegin.end()),
      pr(g.padEnd.begin(), g.padEnd.end());
  for (size_t i = 0; i < nsp; ++i)
    dil[i] = g.dilations[i] - 1;
  const dnnl::engine &eng = engine();
  llvm::ArrayRef<PostOp> post = p.key.post;
  size_t firstAdd = std::find_if(post.begin(), post.end(),
                                 [](const PostOp &op) { return op.kind == PostOp::Kind::Add; }) -
                    post.begin();
  enum class Posts { All, NoAdds, BeforeAdds };
  std::string impl;
  auto make = [&](const dnnl::memory::desc &dst, Posts which) {
    dnnl::primitive_attr attr;
    dnnl::post_ops ops;
    if (which == Posts::All)
      appendPostOps(ops, post, dst);
    else if (which == Posts::BeforeAdds)
      appendPostOps(ops, post.take_front(firstAdd), dst);
    else
      for (const PostOp &op : post)
        if (op.kind != PostOp::Kind::Add)
          appendPostOps(ops, op, dst);
    attr.set_post_ops(ops);
    auto prop = dnnl::prop_kind::forward_inference;
    if (!transpose) {
      auto alg = dnnl::algorithm::convolution_direct;
      auto d = p.key.bias ? dnnl::convolution_forward::desc(prop, alg, anySrc, anyWei, biasMd, dst,
                                                            strides, dil, pl, pr)
                          : dnnl::convolution_forward::desc(prop, alg, anySrc, anyWei, dst, strides,
                                                            dil, pl, pr);
      dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
      p.src = pd.src_desc(), p.wei = pd.weights_desc(), p.dst = pd.dst_desc();
      impl = pd.impl_info_str();
      p.prim = dnnl::convolution_forward(pd);
    } else {
      auto alg = dnnl::algorithm::deconvolution_direct;
      auto d = p.key.bias ? dnnl::deconvolution_forward::desc(prop, alg, anySrc, anyWei, biasMd,
                                                              dst, strides, dil, pl, pr)
                          : dnnl::deconvolution_forward::desc(prop, alg, anySrc, anyWei, dst,
                                                              strides, dil, pl, pr);
      dnnl::deconvolution_forward::primitive_desc pd(d, attr, eng);
      p.src = pd.src_desc(), p.wei = pd.weights_desc(), p.dst = pd.dst_desc();
      impl = pd.impl_info_str();
      p.prim = dnnl::deconvolution_forward(pd);
    }
  };
  dnnl::memory::desc anyDst(toDims(g.outShape), dt::f32, tag::any);
  // An Add's operand must be in the destination's layout: let oneDNN choose
  // that first, then fix it. Where the Adds would leave only oneDNN's
  // reference convolution (oneDNN 2.6's brgemm 1x1 convolutions on AVX-512
  // take no full-tensor binary post-op in NHWC), they run after it.
  auto reference = [&] { return impl.rfind("ref", 0) == 0; };
  bool separate = false;
  make(anyDst, p.key.operands.empty() ? Posts::All : Posts::NoAdds);
  if (!p.key.operands.empty()) {
    bool fast = !reference();
    make(dnnl::memory::desc(p.dst), Posts::All);
    if (fast && reference()) {
      separate = true;
      make(anyDst, Posts::BeforeAdds);
    }
  }

  p.srcIn = dnnl::memory(p.key.src, eng, DNNL_MEMORY_NONE);
  if (p.src != p.key.src) {
    p.srcBuf = dnnl::memory(p.src, eng);
    p.srcReorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.key.src, eng, p.src));
  }
  bool blocked = p.key.blockedOut && p.dst != p.plainDst;
  if (blocked)
    p.dstLayout = std::make_shared<BlockedLayout>(BlockedLayout{p.dst});
  p.dstOut = dnnl::memory(blocked ? p.dst : p.plainDst, eng, DNNL_MEMORY_NONE);
  if (p.dst != p.dstOut.get_desc()) {
    p.dstMem = dnnl::memory(p.dst, eng);
    p.dstReorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.dst, eng, p.plainDst));
  } else {
    p.dstMem = p.dstOut;
  }
  if (p.wei != p.userWei) {
    p.weiBuf = dnnl::memory(p.wei, eng);
    p.weiReorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.userWei, eng, p.wei));
  } else {
    p.weiBuf = dnnl::memory(p.wei, eng, DNNL_MEMORY_NONE);
  }
  p.args = {{DNNL_ARG_SRC, p.srcBuf ? p.srcBuf : p.srcIn},
            {DNNL_ARG_WEIGHTS, p.weiBuf},
            {DNNL_ARG_DST, p.dstMem}};
  if (p.key.bias) {
    p.biasMem = dnnl::memory(biasMd, eng, DNNL_MEMORY_NONE);
    p.args[DNNL_ARG_BIAS] = p.biasMem;
  }
  for (size_t i = 0, k = 0; i < post.size(); ++i) {
    if (post[i].kind != PostOp::Kind::Add)
      continue;
    const dnnl::memory::desc &in = p.key.operands[k++];
    p.operandIn.push_back(dnnl::memory(in, eng, DNNL_MEMORY_NONE));
    if (in != p.dst) {
      p.operandBuf.push_back(dnnl::memory(p.dst, eng));
      p.operandReorder.push_back(dnnl::reorder(dnnl::reorder::primitive_desc(eng, in, eng, p.dst)));
    } else {
      p.operandBuf.push_back(p.operandIn.back());
      p.operandReorder.emplace_back();
    }
    if (!separate) {
      p.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(int(i)) | DNNL_ARG_SRC_1] = p.operandBuf.back();
      continue;
    }
    size_t end = i + 1;
    while (end < post.size() && post[end].kind != PostOp::Kind::Add)
      ++end;
    dnnl::primitive_attr attr;
    dnnl::post_ops ops;
    appendPostOps(ops, post.slice(i + 1, end - i - 1), p.dst);
    attr.set_post_ops(ops);
    dnnl::binary::desc d(dnnl::algorithm::binary_add, p.dst, p.dst, p.dst);
    p.adds.push_back(dnnl::binary(dnnl::binary::primitive_desc(d, attr, eng)));
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

} // namespace

bool rt::checkConvCall(KernelContext &ctx, bool transpose, ConvGeometry &g) {
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
  if (!(transpose ? deconvGeometry(ctx, x->shape(), w->shape(), g)
                  : convGeometry(ctx, x->shape(), w->shape(), g)))
    return false;
  if (b && (b->rank() != 1 || b->dim(0) != g.outShape[1]))
    return ctx.fail("bias " + shapeStr(b->shape()) + " must have one entry per output channel (" +
                    std::to_string(g.outShape[1]) + ")");
  for (const Tensor *o : ctx.operands)
    if (o->shape() != g.outShape || o->elem() != ElemType::Float)
      return ctx.fail("the fused Add's operand " + shapeStr(o->shape()) +
                      " does not have the output's shape " + shapeStr(g.outShape));
  return true;
}

namespace {

bool runConv(KernelContext &ctx, bool transpose) {
  const char *op = transpose ? "ConvTranspose" : "Conv";
  ConvGeometry g;
  if (!checkConvCall(ctx, transpose, g))
    return false;
  const Tensor *x = ctx.input(0), *w = ctx.input(1), *b = ctx.input(2);
  if (numElements(x->shape()) == 0 || numElements(g.outShape) == 0) {
    ctx.outputs[0] = Tensor(ElemType::Float, g.outShape);
    return true;
  }
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

  if (!ctx.state)
    ctx.state = std::make_unique<ConvState>();
  auto &plans = static_cast<ConvState &>(*ctx.state).plans;
  // An extended output gets its post-ops after the extension, in plain form.
  ConvKey key;
  key.x = x->shape();
  key.w = w->shape();
  key.bias = b != nullptr;
  key.blockedOut = ctx.blockedOutput && !extend;
  key.src = descOf(*x);
  key.threads = threadsFor(numElements(run.outShape) * numElements(w->shape()) / w->dim(0));
  ThreadScope threads(key.threads);
  if (!extend) {
    key.post.assign(ctx.post.begin(), ctx.post.end());
    for (const Tensor *o : ctx.operands)
      key.operands.push_back(descOf(*o));
  }
  auto it =
      std::find_if(plans.begin(), plans.end(), [&](const ConvPlan &p) { return p.key == key; });
  try {
    if (it == plans.end()) {
      if (plans.size() >= 16)
        plans.clear();
      ConvPlan p;
      p.key = key;
      buildPlan(p, transpose, run);
      plans.push_back(std::move(p));
      it = std::prev(plans.end());
    }
    ConvPlan &p = *it;
    dnnl::stream &s = stream();

    if (p.weiReorder) {
      if (p.weiFrom != w->raw() || !ctx.constantInput(1)) {
        dnnl::memory userWei = wrap(p.userWei, w->raw());
        p.weiReorder.execute(s, userWei, p.weiBuf);
        p.weiFrom = w->raw();
      }
    } else {
      p.weiBuf.set_data_handle(const_cast<void *>(w->raw()));
    }
    p.srcIn.set_data_handle(const_cast<void *>(x->raw()));
    if (p.srcBuf)
      p.srcReorder.execute(s, p.srcIn, p.srcBuf);
    if (b)
      p.biasMem.set_data_handle(const_cast<void *>(b->raw()));
    for (size_t i = 0; i < p.operandIn.size(); ++i) {
      p.operandIn[i].set_data_handle(const_cast<void *>(ctx.operands[i]->raw()));
      if (p.operandReorder[i])
        p.operandReorder[i].execute(s, p.operandIn[i], p.operandBuf[i]);
    }
    Tensor part = p.dstLayout ? Tensor(ElemType::Float, run.outShape, p.dstLayout, p.dst.get_size())
                              : Tensor(ElemType::Float, run.outShape);
    p.dstOut.set_data_handle(part.raw());
    p.prim.execute(s, p.args);
    for (size_t i = 0; i < p.adds.size(); ++i)
      p.adds[i].execute(s, {{DNNL_ARG_SRC_0, p.dstMem},
                            {DNNL_ARG_SRC_1, p.operandBuf[i]},
                            {DNNL_ARG_DST, p.dstMem}});
    if (p.dstReorder)
      p.dstReorder.execute(s, p.dstMem, p.dstOut);
    s.wait();
    if (extend) {
      ctx.outputs[0] = Tensor(ElemType::Float, g.outShape);
      placeExtended(part, ctx.outputs[0], g, b);
      llvm::SmallVector<Tensor, 2> plain;
      llvm::SmallVector<const Tensor *, 2> operands;
      for (const Tensor *o : ctx.operands)
        plain.push_back(toPlain(*o));
      for (const Tensor &o : plain)
        operands.push_back(&o);
      applyPostOps(ctx.outputs[0], ctx.post, operands);
    } else {
      ctx.outputs[0] = std::move(part);
    }
  } catch (const dnnl::error &e) {
    plans.clear();
    return ctx.fail(std::string(op) + ": oneDNN failed: " + e.what());
  } catch (const std::exception &e) {
    plans.clear();
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
