//===- MatMulNBits.cpp - ONNX Runtime's com.microsoft MatMulNBits ----------===//
//
// Y = A x dequantize(B) (+ bias): ONNX Runtime's weight-only matrix product,
// which its quantizers (matmul_nbits_quantizer) write for 2-, 4- and 8-bit
// weights and which it forms itself from DequantizeLinear -> MatMul. B holds
// the transposed weights [N][K] as packed codes, blob per block of
// `block_size` along K ([N, k_blocks, blob_size], the first code of a byte in
// its low bits); `scales` one float per (n, block); `zero_points` (optional)
// the blocks' zero points packed the same way per row of N, each row padded
// to a byte, 2^(bits-1) when absent. Element (k, n) of the weights is
// float32(q - z) x s, exactly as ORT's dequantization computes it; the
// product runs in float (Gemm.cpp's oneDNN matmul, the dequantized weights
// kept by the node). `accuracy_level` 4 lets ORT quantize A to int8 per block
// (MLAS's CompInt8 kernels, whose order of sums differs per CPU): the
// definition computed here differs from those by the rounding of A
// (docs/runtime.md, "MatMulNBits"). `g_idx` and float zero points are
// refused with the node named.
//
//===----------------------------------------------------------------------===//
#include "runtime/ops/MatMulNBits.h"

#include "runtime/KernelUtil.h"
#include "runtime/ops/MatmulShape.h"

using namespace tpcc;
using namespace tpcc::rt;

bool rt::readNBits(KernelContext &ctx, NBitsOperands &o) {
  o.a = ctx.input(0);
  o.b = ctx.input(1);
  o.scales = ctx.input(2);
  o.zeroPoints = ctx.input(3);
  o.bias = ctx.input(5);
  const Tensor *a = o.a, *b = o.b, *scales = o.scales, *zp = o.zeroPoints, *bias = o.bias;
  if (!a || !b || !scales)
    return ctx.fail("MatMulNBits needs A, B and scales");
  o.K = ctx.attrInt("K", 0);
  o.N = ctx.attrInt("N", 0);
  o.bits = int(ctx.attrInt("bits", 4));
  o.block = ctx.attrInt("block_size", 0);
  o.accuracyLevel = ctx.attrInt("accuracy_level", 0);
  int64_t K = o.K, N = o.N, block = o.block;
  if (K <= 0 || N <= 0)
    return ctx.fail("MatMulNBits needs positive K and N, not " + std::to_string(K) + " and " +
                    std::to_string(N));
  if (o.bits != 2 && o.bits != 4 && o.bits != 8)
    return ctx.fail("MatMulNBits with " + std::to_string(o.bits) + "-bit weights (2, 4 or 8)");
  if (block < 16 || (block & (block - 1)))
    return ctx.fail("MatMulNBits block_size " + std::to_string(block) +
                    " is not a power of two of at least 16");
  if (ctx.input(4))
    return ctx.fail("MatMulNBits with g_idx (a block per row of K) is not supported");
  if (a->elem() != ElemType::Float || scales->elem() != ElemType::Float ||
      (bias && bias->elem() != ElemType::Float))
    return ctx.fail("MatMulNBits runs float A, scales and bias, not " + typeName(a->elem()));
  if (a->rank() < 1 || a->shape().back() != K)
    return ctx.fail("MatMulNBits A " + shapeStr(a->shape()) +
                    " does not end in K = " + std::to_string(K));
  o.blocks = (K + block - 1) / block;
  o.blob = block * o.bits / 8;
  if (b->elem() != ElemType::UInt8 || b->numel() != N * o.blocks * o.blob)
    return ctx.fail("MatMulNBits B " + shapeStr(b->shape()) + " (" + typeName(b->elem()) +
                    ") is not uint8 [N, k_blocks, blob_size] = [" + std::to_string(N) + ", " +
                    std::to_string(o.blocks) + ", " + std::to_string(o.blob) + "]");
  if (scales->numel() != N * o.blocks)
    return ctx.fail("MatMulNBits scales " + shapeStr(scales->shape()) +
                    " are not N x k_blocks = " + std::to_string(N * o.blocks));
  o.zpRow = (o.blocks * o.bits + 7) / 8;
  if (zp && (zp->elem() != ElemType::UInt8 || zp->numel() != N * o.zpRow))
    return ctx.fail("MatMulNBits zero points " + shapeStr(zp->shape()) + " (" +
                    typeName(zp->elem()) + ") are not uint8 packed N x " + std::to_string(o.zpRow));
  if (bias && bias->numel() != N)
    return ctx.fail("MatMulNBits bias " + shapeStr(bias->shape()) + " is not [N]");
  return true;
}

int rt::NBitsOperands::zeroPoint(int64_t n, int64_t j) const {
  return zeroPoints
             ? nbitsCode(static_cast<const uint8_t *>(zeroPoints->raw()) + n * zpRow, j, bits)
             : 1 << (bits - 1);
}

void rt::NBitsOperands::codesOf(int64_t n, int64_t j, int *q) const {
  const uint8_t *codes = static_cast<const uint8_t *>(b->raw()) + (n * blocks + j) * blob;
  for (int64_t i = 0; i < block; ++i)
    q[i] = nbitsCode(codes, i, bits);
}

namespace {

bool matmulNBitsKernel(KernelContext &ctx) {
  NBitsOperands o;
  if (!readNBits(ctx, o))
    return false;
  auto dequantize = [&](Tensor &w) {
    w = Tensor(ElemType::Float, {o.K, o.N});
    float *pw = w.data<float>();
    const float *ps = o.scales->data<float>();
    parallelFor(o.N, o.K * 4, [&](int64_t n0, int64_t n1) {
      std::vector<int> q(size_t(o.block));
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t j = 0; j < o.blocks; ++j) {
          o.codesOf(n, j, q.data());
          float s = ps[n * o.blocks + j];
          int z = o.zeroPoint(n, j);
          for (int64_t i = 0; i < o.block && j * o.block + i < o.K; ++i)
            pw[(j * o.block + i) * o.N + n] = float(q[size_t(i)] - z) * s;
        }
    });
    return true;
  };
  return matmulDerivedWeights(ctx, o.a, o.b->raw(), dequantize, ctx.outputs[0], o.bias);
}

} // namespace

void rt::registerNBitsKernels(KernelRegistry &r) {
  r.add("com.microsoft", "MatMulNBits", matmulNBitsKernel);
}
