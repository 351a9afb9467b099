//===- Dnnl.cpp - oneDNN plumbing shared by the Conv and Gemm kernels -----===//
#include "runtime/ops/Dnnl.h"

#include <map>

using namespace tpcc;
using namespace tpcc::rt;

dnnl::engine &dnnl_util::engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream &dnnl_util::stream() {
  // Streams are not thread-safe; executors on different threads get their own.
  static thread_local dnnl::stream s(engine());
  return s;
}

dnnl::memory::dims dnnl_util::rowMajorStrides(const Shape &s) {
  dnnl::memory::dims st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<int64_t>(s[i], 1);
  }
  return st;
}

Tensor dnnl_util::allocate(const Shape &shape, const dnnl::memory::desc &md) {
  if (md == plainDesc(shape))
    return Tensor(ElemType::Float, shape);
  return Tensor(ElemType::Float, shape, std::make_shared<BlockedLayout>(BlockedLayout{md}),
                md.get_size());
}

dnnl::memory::desc dnnl_util::descOf(const Tensor &t) {
  return t.blocked() ? t.blocked()->md : plainDesc(t.shape());
}

/// The reorder comes from oneDNN's primitive cache after the first call per layout.
Tensor dnnl_util::toPlain(const Tensor &t) {
  if (!t.blocked())
    return t;
  Tensor out(t.elem(), t.shape());
  dnnl::memory from = wrap(t.blocked()->md, t.raw()),
               to = wrap(plainDesc(t.shape(), t.blocked()->md.data_type()), out.raw());
  dnnl::reorder(from, to).execute(stream(), from, to);
  stream().wait();
  return out;
}

namespace {

/// The channels-last descriptor of an 8-bit tensor.
dnnl::memory::desc codesDesc(ElemType elem, const Shape &shape) {
  return dnnl_util::channelsLastDesc(shape, elem == ElemType::Int8 ? dnnl_util::dt::s8
                                                                   : dnnl_util::dt::u8);
}

} // namespace

Tensor dnnl_util::allocateChannelsLast(ElemType elem, const Shape &shape) {
  // One layout object per type and shape, reused (a run makes no new ones).
  thread_local std::map<std::pair<ElemType, Shape>, std::shared_ptr<const BlockedLayout>> cache;
  auto &layout = cache[{elem, shape}];
  if (!layout) {
    if (cache.size() > 256) { // shapes of many batch sizes: start again
      cache.clear();
      return allocateChannelsLast(elem, shape);
    }
    layout = std::make_shared<BlockedLayout>(BlockedLayout{codesDesc(elem, shape)});
  }
  return Tensor(elem, shape, layout, size_t(numElements(shape)));
}

bool dnnl_util::isChannelsLast(const Tensor &t) {
  size_t r = size_t(t.rank());
  return t.blocked() && r >= 3 && r <= 5 &&
         (t.elem() == ElemType::UInt8 || t.elem() == ElemType::Int8) &&
         t.blocked()->md == codesDesc(t.elem(), t.shape());
}
