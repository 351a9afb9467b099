//===- OrtMatMulNBits.cpp - MatMulNBits with int8 activations, as MLAS ------===//
//
// With `accuracy_level` 4 ONNX Runtime's MatMulNBits runs MLAS's CompInt8
// kernels: each row of A is quantized per block of `block_size` along K to
// int8, scale amax / 127 and codes round(a x 127 / amax) (half to even), each
// block's integer dot product with the weights' codes minus their zero point
// is exact, and the blocks' products are added in float as
// float(dot) x (A's scale x B's scale). Runs that compute as ORT does
// (`--ort-cpu`) do the same; ORT's kernels add in their own order per CPU
// (AVX2, AVX-512 VNNI), so the outputs agree to float rounding, not to the
// bit (measured 1.5e-7 of the largest output, ctest ort_formats). Other
// accuracy levels run in float, as the default kernel does.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/ops/MatMulNBits.h"
#include "runtime/ort/OrtKernels.h"

#include <cmath>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

bool ortMatMulNBitsKernel(KernelContext &ctx) {
  NBitsOperands o;
  if (!readNBits(ctx, o))
    return false;
  if (o.accuracyLevel != 4)
    return KernelRegistry::get().find("com.microsoft", "MatMulNBits")(ctx);
  const int64_t K = o.K, N = o.N, block = o.block, blocks = o.blocks;
  // The weights' codes minus their zero points, block by block (zero past K).
  std::vector<int16_t> w(size_t(N * blocks * block), 0);
  std::vector<int> q(static_cast<size_t>(block));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < blocks; ++j) {
      o.codesOf(n, j, q.data());
      int z = o.zeroPoint(n, j);
      for (int64_t i = 0; i < block && j * block + i < K; ++i)
        w[size_t((n * blocks + j) * block + i)] = int16_t(q[size_t(i)] - z);
    }
  Shape out = o.a->shape();
  out.back() = N;
  Tensor &y = ctx.outputs[0];
  y = Tensor(ElemType::Float, out);
  int64_t rows = o.a->numel() / K;
  const float *pa = o.a->data<float>(), *ps = o.scales->data<float>();
  const float *pbias = o.bias ? o.bias->data<float>() : nullptr;
  float *py = y.data<float>();
  parallelFor(rows, N * K * 2, [&](int64_t r0, int64_t r1) {
    std::vector<int8_t> qa(size_t(blocks * block), 0);
    std::vector<float> sa(static_cast<size_t>(blocks));
    for (int64_t r = r0; r < r1; ++r) {
      const float *row = pa + r * K;
      for (int64_t j = 0; j < blocks; ++j) {
        int64_t end = std::min(K, (j + 1) * block);
        float amax = 0;
        for (int64_t k = j * block; k < end; ++k)
          amax = std::max(amax, std::abs(row[k]));
        sa[size_t(j)] = amax / 127.f;
        float inv = amax != 0 ? 127.f / amax : 0.f;
        for (int64_t k = j * block; k < end; ++k)
          qa[size_t(k)] = int8_t(std::nearbyint(row[k] * inv));
      }
      for (int64_t n = 0; n < N; ++n) {
        float acc = 0;
        for (int64_t j = 0; j < blocks; ++j) {
          const int16_t *wb = w.data() + (n * blocks + j) * block;
          const int8_t *ab = qa.data() + j * block;
          int32_t dot = 0;
          for (int64_t i = 0; i < block; ++i)
            dot += int32_t(ab[i]) * wb[i];
          acc += float(dot) * (sa[size_t(j)] * ps[n * blocks + j]);
        }
        py[r * N + n] = pbias ? acc + pbias[n] : acc;
      }
    }
  });
  return true;
}

} // namespace

void rt::registerOrtMatMulNBitsKernels(KernelRegistry &r) {
  r.add("com.microsoft", "MatMulNBits", ortMatMulNBitsKernel);
}
