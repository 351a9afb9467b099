//===- OrtMatMul.cpp - A float MatMul summed as ONNX Runtime's MLAS sums it ===//
//
// Between 16-bit Q/DQ pairs, and wherever a QDQ group does not fuse, ONNX
// Runtime runs MatMul in float with MLAS's SGEMM on one intra-op thread; a
// last-bit difference from oneDNN's sums flips a code on a rounding tie, and
// a transformer's 16-bit layers compound the flips (the turn detector's
// logits 53 steps apart). So runs that compute as ORT does (`--ort-cpu`) sum
// a float MatMul in MLAS's order (MlasGemm.h), with ORT's choices of kernel:
//
//  - a 2-D B that is an initializer (a float weight) is packed when the
//    session starts (MatMul::PrePack): Slices of 256 for every M and N;
//  - otherwise (two activations, attention's products) an unpacked B: one
//    row of A (M == 1) by the single-row kernel, one column of B (N == 1) by
//    the dot-product kernel, else Slices of mlasStrideK(N, K);
//  - A's batch folds into its rows when B is one matrix; otherwise one
//    product per output batch, broadcast as numpy does.
//
// Measured against onnxruntime-node (ctest ort_float_ops): packed and
// unpacked, K over 256, M = 1, N = 1, batched products, bit for bit.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/ops/Dnnl.h"
#include "runtime/ops/MatmulShape.h"
#include "runtime/ort/OrtKernels.h"
#include "runtime/ort/ops/MlasGemm.h"

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// The slice of K a B packed ahead is cut into (MLAS_SGEMM_PACKED_STRIDEK).
constexpr int64_t kPackedStrideK = 256;

void product(bool packed, const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
             std::vector<float> &acc) {
  if (packed)
    return mlasGemm(MlasKernel::Slices, a, b, c, m, n, k, kPackedStrideK, acc);
  MlasKernel kernel = m == 1   ? MlasKernel::SingleRow
                      : n == 1 ? MlasKernel::DotRows
                               : MlasKernel::Slices;
  mlasGemm(kernel, a, b, c, m, n, k, mlasStrideK(n, k), acc);
}

/// MatMul in ORT's float registry: other element types, and empty products,
/// go to the default kernel.
bool ortMatMulKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1);
  KernelFn plain = KernelRegistry::get().find("", "MatMul");
  if (!a || !b || a->elem() != ElemType::Float || b->elem() != ElemType::Float)
    return plain(ctx);
  MatmulShape s;
  if (!matmulShape(ctx, "MatMul", a->shape(), b->shape(), s))
    return false;
  if (numElements(s.out) == 0 || s.k == 0)
    return plain(ctx);
  Tensor pa = a->blocked() ? dnnl_util::toPlain(*a) : *a;
  Tensor pb = b->blocked() ? dnnl_util::toPlain(*b) : *b;
  ctx.outputs[0] = Tensor(ElemType::Float, s.out);
  float *y = ctx.outputs[0].data<float>();
  // ORT packs an initializer (a Constant node's tensor) only: a weight behind
  // a DequantizeLinear is computed, as ORT keeps QDQ graphs unfolded.
  const graph::Value *w = ctx.node.input(1);
  bool packed = w && w->constant && b->shape().size() == 2;
  int64_t nb = numElements(s.batch), nbA = numElements(s.aBatch), nbB = numElements(s.bBatch);
  std::vector<float> acc;
  if (nbB == 1) { // A's batch folds into its rows
    product(packed, pa.data<float>(), pb.data<float>(), y, nbA * s.m, s.n, s.k, acc);
    return true;
  }
  BroadcastIndexer ai(s.aBatch, s.batch), bi(s.bBatch, s.batch);
  for (int64_t i = 0; i < nb; ++i)
    product(packed, pa.data<float>() + ai.offset(i) * s.m * s.k,
            pb.data<float>() + bi.offset(i) * s.k * s.n, y + i * s.m * s.n, s.m, s.n, s.k, acc);
  return true;
}

} // namespace

void rt::registerOrtMatMulKernels(KernelRegistry &r) { r.add("MatMul", ortMatMulKernel); }
