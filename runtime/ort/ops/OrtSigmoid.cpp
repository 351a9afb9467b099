//===- OrtSigmoid.cpp - Sigmoid as MLAS approximates it --------------------===//
//
// ONNX Runtime computes a float Sigmoid with MLAS's logistic kernel, on
// x86-64 the FMA3 one (MlasComputeLogisticF32KernelFma3; its AVX-512 builds
// keep it), which is up to 7e-8 from the exact function. M-LSD's line scores
// keep the Sigmoid values that equal their MaxPool, so a last-bit difference
// changes which survive: ORT's float registry (OrtKernels.h) computes it as
// MLAS does. Other element types go to the default kernel.
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/OrtKernels.h"

#include "runtime/KernelUtil.h"

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// Eigen's rational approximation on x clamped to [-18, 18]: its two
/// polynomials in x^2 by fused multiply-adds, p * x / q + 0.5, floored at 0.
float mlasLogistic(float x) {
  x = std::min(std::max(x, -18.0f), 18.0f);
  float x2 = x * x;
  float p = std::fma(x2, 4.37031012579801e-11f, 1.15627324459942e-07f);
  p = std::fma(x2, p, 6.08574864600143e-05f);
  p = std::fma(x2, p, 8.51377133304701e-03f);
  p = std::fma(x2, p, 2.48287947061529e-01f);
  float q = std::fma(x2, 6.10247389755681e-13f, 5.76102136993427e-09f);
  q = std::fma(x2, q, 6.29106785017040e-06f);
  q = std::fma(x2, q, 1.70198817374094e-03f);
  q = std::fma(x2, q, 1.16817656904453e-01f);
  q = std::fma(x2, q, 9.93151921023180e-01f);
  return std::max(0.0f, x * p / q + 0.5f);
}

/// A NaN goes through the exact function's expression, as in the default
/// kernel (it stays NaN).
float logistic(float v) {
  if (!std::isnan(v))
    return mlasLogistic(v);
  float e = std::exp(v);
  return e / (1.0f + e);
}

bool ortSigmoidKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x || x->elem() != ElemType::Float)
    return KernelRegistry::get().find("", "Sigmoid")(ctx);
  ctx.outputs[0] = Tensor(x->elem(), x->shape());
  const float *s = x->data<float>();
  float *d = ctx.outputs[0].data<float>();
  parallelFor(x->numel(), 8, [&, s, d](int64_t b, int64_t e) {
    const float *__restrict in = s;
    float *__restrict out = d;
    for (int64_t i = b; i < e; ++i)
      out[i] = logistic(in[i]);
  });
  return true;
}

} // namespace

void rt::registerOrtActivationKernels(KernelRegistry &r) { r.add("Sigmoid", ortSigmoidKernel); }
