//===- OrtReduce.cpp - ReduceSum and ReduceMean as ONNX Runtime sums --------===//
//
// ONNX Runtime sums a float row along the last axis in eight lanes (element
// i into lane i mod 8, Eigen's AVX packets), then halves the lanes pairwise:
// ((0+4)+(2+6))+((1+5)+(3+7)); ReduceMean divides that by the count. The
// default kernel sums in double, which rounds apart in the last bit, and a
// transformer's RMSNorm (Pow, ReduceMean, Add, Sqrt) left float by
// --min-sqnr then puts the Sqrt's 16-bit code a step apart. Measured against
// ORT 1.30 on rows of 576 and 1,728 floats; rows of other lengths (ORT peels
// their unaligned heads and tails in an order not reproduced here) and
// other axes take the default kernel.
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/OrtKernels.h"

#include "runtime/KernelUtil.h"

#include <algorithm>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// Whether ORT's order applies: a float row of a multiple of 8 along the
/// last axis, the only one reduced.
bool lastAxisRows(KernelContext &ctx, const Tensor *x) {
  std::vector<bool> reduced;
  bool noop;
  if (!x || x->elem() != ElemType::Float || x->rank() == 0 ||
      !reducedAxes(ctx, *x, reduced, noop) || noop || !reduced.back() ||
      std::count(reduced.begin(), reduced.end(), true) != 1)
    return false;
  int64_t len = x->dim(x->rank() - 1);
  return len > 0 && len % 8 == 0;
}

template <bool Mean> bool ortReduceKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!lastAxisRows(ctx, x)) // the other cases, and the errors, as the default kernel has them
    return KernelRegistry::get().find("", ctx.node.opType)(ctx);
  int64_t len = x->dim(x->rank() - 1);
  Shape out = x->shape();
  if (ctx.attrInt("keepdims", 1))
    out.back() = 1;
  else
    out.pop_back();
  ctx.outputs[0] = Tensor(ElemType::Float, out);
  const float *src = x->data<float>();
  float *dst = ctx.outputs[0].data<float>();
  parallelFor(x->numel() / len, len, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float *row = src + r * len;
      float l[8] = {};
      for (int64_t i = 0; i < len; i += 8)
        for (int k = 0; k < 8; ++k)
          l[k] += row[i + k];
      float sum = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
      dst[r] = Mean ? sum / float(len) : sum;
    }
  });
  return true;
}

} // namespace

void rt::registerOrtReduceKernels(KernelRegistry &r) {
  r.add("ReduceSum", ortReduceKernel<false>);
  r.add("ReduceMean", ortReduceKernel<true>);
}
