//===- Dnnl.h - oneDNN plumbing shared by the Conv and Gemm kernels -*- C++ -*-===//
//
// One CPU engine and stream for the whole process (oneDNN primitives are
// bound to an engine; the executor runs nodes one after another on one
// thread, and oneDNN parallelizes inside with the OpenMP pool the other
// kernels use), plus conversions from our shapes to oneDNN descriptors.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_OPS_DNNL_H
#define TPCC_RUNTIME_OPS_DNNL_H

#include "runtime/Kernel.h"

#include <oneapi/dnnl/dnnl.hpp>

namespace tpcc::rt::dnnl_util {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine &engine();
dnnl::stream &stream();

inline dnnl::memory::dims toDims(const Shape &s) { return dnnl::memory::dims(s.begin(), s.end()); }

/// Dense row-major strides of `s`.
dnnl::memory::dims rowMajorStrides(const Shape &s);

/// The channels-last format of a rank-3 to rank-5 tensor (NWC, NHWC, NDHWC).
inline tag channelsLastTag(size_t rank) {
  return rank == 3 ? tag::nwc : rank == 4 ? tag::nhwc : tag::ndhwc;
}

/// A dense channels-last descriptor of `s` (N, C, spatial...; rank 3 to 5).
inline dnnl::memory::desc channelsLastDesc(const Shape &s, dt type = dt::f32) {
  return dnnl::memory::desc(toDims(s), type, channelsLastTag(s.size()));
}

/// A dense row-major float descriptor of `s`.
inline dnnl::memory::desc plainDesc(const Shape &s, dt type = dt::f32) {
  return dnnl::memory::desc(toDims(s), type, rowMajorStrides(s));
}

/// A oneDNN memory over a tensor's buffer (oneDNN takes a non-const handle
/// even for inputs it only reads).
inline dnnl::memory wrap(const dnnl::memory::desc &md, const void *data) {
  return dnnl::memory(md, engine(), const_cast<void *>(data));
}

/// A tensor's layout when the executor keeps it in oneDNN's (Tensor::blocked).
} // namespace tpcc::rt::dnnl_util
namespace tpcc::rt {
struct BlockedLayout {
  dnnl::memory::desc md;
};
} // namespace tpcc::rt
namespace tpcc::rt::dnnl_util {

/// A float tensor of `shape` in layout `md` (plain when `md` is row-major).
Tensor allocate(const Shape &shape, const dnnl::memory::desc &md);
/// The descriptor of a float tensor's data as it is laid out.
dnnl::memory::desc descOf(const Tensor &t);
/// A blocked tensor's data in plain row-major order (plain ones as they are).
Tensor toPlain(const Tensor &t);

/// An 8-bit tensor (u8/s8) of `shape` (N, C, spatial..., rank 3 to 5) with
/// its data channels-last (NWC, NHWC, NDHWC): how integer runs hand a
/// quantized activation from one group kernel or table to the next
/// (IntegerKernel.h). The layout object is shared per type and shape.
Tensor allocateChannelsLast(ElemType elem, const Shape &shape);
/// Whether `t` holds its data as allocateChannelsLast lays it out.
bool isChannelsLast(const Tensor &t);

/// A pooling window over the spatial dimensions (Pool.cpp's geometry).
struct PoolWindow {
  dnnl::algorithm alg;
  std::vector<int64_t> kernel, strides, dilations, padBegin, padEnd;
  Shape outShape;
};
/// Pools a float input that arrives in oneDNN's blocked layout, or 8-bit
/// codes that arrive channels-last (max pooling), with oneDNN (the output
/// stays blocked / channels-last when ctx.blockedOutput); false with
/// ctx.error on oneDNN errors.
bool poolBlocked(KernelContext &ctx, const Tensor &x, const PoolWindow &w);

} // namespace tpcc::rt::dnnl_util

#endif
