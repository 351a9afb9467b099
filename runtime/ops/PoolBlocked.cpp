//===- PoolBlocked.cpp - Pooling of tensors in oneDNN's blocked layout ------===//
//
// Between two convolutions the executor keeps activations in oneDNN's
// channel-blocked layout (Executor.h); a MaxPool or AveragePool between them
// would otherwise reorder to plain and back. Such inputs are pooled here by
// oneDNN's pooling_v2 primitive, in their layout: windows, strides,
// dilations and pads as Pool.cpp computes them (ceil_mode as extra right
// padding, which max pooling ignores). Primitives are cached per input
// layout and window. Integer runs max-pool 8-bit codes that arrive
// channels-last (Executor.h) the same way: exact, output channels-last or
// plain.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/ops/Dnnl.h"

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::dnnl_util;

namespace {

struct PoolPlan {
  dnnl::memory::desc src;
  dnnl::algorithm alg;
  Shape outShape;
  bool blockedOut;
  int threads;
  dnnl::pooling_v2_forward prim;
  dnnl::memory srcMem, dstMem, outMem;
  dnnl::reorder toPlain;
  std::shared_ptr<const BlockedLayout> layout;
};

struct PoolState : NodeState {
  std::vector<PoolPlan> plans;
};

void build(PoolPlan &p, const Shape &x, const PoolWindow &w) {
  const dnnl::engine &eng = engine();
  size_t nsp = x.size() - 2;
  dnnl::memory::dims k(w.kernel.begin(), w.kernel.end()), s(w.strides.begin(), w.strides.end()),
      d(nsp), pl(w.padBegin.begin(), w.padBegin.end()), pr(nsp);
  for (size_t i = 0; i < nsp; ++i) {
    d[i] = w.dilations[i] - 1;
    int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    // ceil_mode's last window reaches past the pads: pad to it.
    pr[i] = std::max(w.padEnd[i],
                     (w.outShape[i + 2] - 1) * w.strides[i] + extent - x[i + 2] - w.padBegin[i]);
  }
  // 8-bit codes stay in their type and channels-last; floats as oneDNN likes.
  dt type = p.src.data_type();
  dnnl::memory::desc anyDst(toDims(w.outShape), type,
                            type == dt::f32 ? tag::any : channelsLastTag(x.size()));
  dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, w.alg, p.src, anyDst, s,
                                      k, d, pl, pr);
  dnnl::pooling_v2_forward::primitive_desc pd(desc, eng);
  p.prim = dnnl::pooling_v2_forward(pd);
  p.srcMem = dnnl::memory(p.src, eng, DNNL_MEMORY_NONE);
  dnnl::memory::desc dst = pd.dst_desc(), plain = plainDesc(w.outShape, type);
  if (p.blockedOut && dst != plain)
    p.layout = std::make_shared<BlockedLayout>(BlockedLayout{dst});
  p.outMem = dnnl::memory(p.layout ? dst : plain, eng, DNNL_MEMORY_NONE);
  if (dst != p.outMem.get_desc()) {
    p.dstMem = dnnl::memory(dst, eng);
    p.toPlain = dnnl::reorder(dnnl::reorder::primitive_desc(eng, dst, eng, plain));
  } else {
    p.dstMem = p.outMem;
  }
}

} // namespace

bool dnnl_util::poolBlocked(KernelContext &ctx, const Tensor &x, const PoolWindow &w) {
  if (!ctx.state)
    ctx.state = std::make_unique<PoolState>();
  auto &plans = static_cast<PoolState &>(*ctx.state).plans;
  int threads = threadsFor(numElements(w.outShape) * numElements(w.kernel));
  ThreadScope scope(threads);
  dnnl::memory::desc src = descOf(x);
  auto it = std::find_if(plans.begin(), plans.end(), [&](const PoolPlan &p) {
    return p.src == src && p.alg == w.alg && p.outShape == w.outShape &&
           p.blockedOut == ctx.blockedOutput && p.threads == threads;
  });
  try {
    if (it == plans.end()) {
      if (plans.size() >= 16)
        plans.clear();
      PoolPlan p{src, w.alg, w.outShape, ctx.blockedOutput, threads, {}, {}, {}, {}, {}, {}};
      build(p, x.shape(), w);
      plans.push_back(std::move(p));
      it = std::prev(plans.end());
    }
    PoolPlan &p = *it;
    ElemType elem = x.elem();
    Tensor out = elem != ElemType::Float ? (p.layout ? allocateChannelsLast(elem, w.outShape)
                                                     : Tensor(elem, w.outShape))
                 : p.layout ? Tensor(elem, w.outShape, p.layout, p.outMem.get_desc().get_size())
                            : Tensor(elem, w.outShape);
    p.srcMem.set_data_handle(const_cast<void *>(x.raw()));
    p.outMem.set_data_handle(out.raw());
    dnnl::stream &s = stream();
    p.prim.execute(s, {{DNNL_ARG_SRC, p.srcMem}, {DNNL_ARG_DST, p.dstMem}});
    if (p.toPlain)
      p.toPlain.execute(s, p.dstMem, p.outMem);
    s.wait();
    ctx.outputs[0] = std::move(out);
  } catch (const dnnl::error &e) {
    plans.clear();
    return ctx.fail(ctx.node.opType + ": oneDNN failed: " + e.what());
  }
  return true;
}
