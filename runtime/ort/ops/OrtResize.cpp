//===- OrtResize.cpp - A bilinear Resize as ONNX Runtime computes it -------===//
//
// Built with -ffp-contract=off: ORT's expression is four products and three
// additions, none of them fused (ctest ort_float_ops, against ORT).
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/ops/OrtResize.h"

#include "runtime/KernelUtil.h"
#include "runtime/ops/ResizeTaps.h"
#include "runtime/ort/OrtKernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

float originalCoordinate(OrtCoord c, float x, float scale, float resized, float original) {
  switch (c) {
  case OrtCoord::Asymmetric:
    return x / scale;
  case OrtCoord::PytorchHalfPixel:
    return resized > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
  case OrtCoord::TfHalfPixelForNN:
    return (x + 0.5f) / scale;
  case OrtCoord::AlignCorners:
    return resized == 1 ? 0 : x * (original - 1) / (resized - 1);
  case OrtCoord::HalfPixel:
    break;
  }
  return ((x + 0.5f) / scale) - 0.5f;
}

/// One axis: the two input indices and their weights per output coordinate
/// (i1's weight is d2, i2's d1).
struct Axis {
  std::vector<int64_t> i1, i2;
  std::vector<float> d1, d2;
};

Axis axis(OrtCoord c, int64_t in, int64_t out, float scale) {
  Axis a;
  for (int64_t o = 0; o < out; ++o) {
    float x = scale == 1 ? float(o) : originalCoordinate(c, float(o), scale, float(out), float(in));
    x = std::max(0.0f, std::min(x, float(in - 1)));
    int64_t i1 = std::min(int64_t(x), in - 1), i2 = std::min(i1 + 1, in - 1);
    float d1 = std::fabs(x - float(i1)), d2 = std::fabs(x - float(i2));
    if (i1 == i2)
      d1 = d2 = 0.5f;
    a.i1.push_back(i1);
    a.i2.push_back(i2);
    a.d1.push_back(d1);
    a.d2.push_back(d2);
  }
  return a;
}

} // namespace

void rt::ortBilinear(const Tensor &x, Tensor &y, OrtCoord coord, float scaleH, float scaleW) {
  int64_t r = x.rank(), inH = x.dim(r - 2), inW = x.dim(r - 1);
  int64_t outH = y.dim(r - 2), outW = y.dim(r - 1);
  int64_t planes = inH * inW ? x.numel() / (inH * inW) : 0;
  Axis ay = axis(coord, inH, outH, scaleH), ax = axis(coord, inW, outW, scaleW);
  const float *src = x.data<float>();
  float *dst = y.data<float>();
  parallelFor(planes * outH, outW * 8, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      int64_t p = row / outH, oy = row % outH;
      const float *r1 = src + (p * inH + ay.i1[size_t(oy)]) * inW;
      const float *r2 = src + (p * inH + ay.i2[size_t(oy)]) * inW;
      float dy1 = ay.d1[size_t(oy)], dy2 = ay.d2[size_t(oy)];
      float *d = dst + row * outW;
      for (int64_t ox = 0; ox < outW; ++ox) {
        size_t k = size_t(ox);
        float dx1 = ax.d1[k], dx2 = ax.d2[k];
        d[ox] = dx2 * dy2 * r1[ax.i1[k]] + dx1 * dy2 * r1[ax.i2[k]] + dx2 * dy1 * r2[ax.i1[k]] +
                dx1 * dy1 * r2[ax.i2[k]];
      }
    }
  });
}

namespace {

/// A float bilinear Resize over the last two axes, as ORT's CPU provider
/// computes it, into output 0 of `ctx`; false when ORT computes this call
/// otherwise (then the default kernel's passes do).
bool ortBilinearResize(KernelContext &ctx, const Tensor &x, const ResizeCall &c) {
  int64_t r = x.rank();
  const ResizeTaps &t = c.taps;
  if (!c.linear || x.elem() != ElemType::Float || (r != 2 && r != 4) || t.axes.empty() ||
      (!c.legacy && c.coord == "tf_crop_and_resize"))
    return false;
  float sc[2];
  for (int64_t k = 0; k < r; ++k) {
    float s =
        c.sizes.empty() ? float(c.scales[size_t(k)]) : float(c.sizes[size_t(k)]) / float(x.dim(k));
    if (k < r - 2 && s != 1) // ORT's NCHW path: N and C keep their size
      return false;
    if (k >= r - 2)
      sc[k - (r - 2)] = s;
  }
  OrtCoord coord = c.legacy || c.coord == "asymmetric" ? OrtCoord::Asymmetric
                   : c.coord == "pytorch_half_pixel"   ? OrtCoord::PytorchHalfPixel
                   : c.coord == "tf_half_pixel_for_nn" ? OrtCoord::TfHalfPixelForNN
                   : c.coord == "align_corners"        ? OrtCoord::AlignCorners
                                                       : OrtCoord::HalfPixel;
  ctx.outputs[0] = Tensor(x.elem(), t.outShape);
  ortBilinear(x, ctx.outputs[0], coord, sc[0], sc[1]);
  return true;
}

bool ortResizeKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail(ctx.node.opType + " needs an input");
  ResizeCall c;
  if (!resizeCall(ctx, *x, c))
    return false;
  return ortBilinearResize(ctx, *x, c) || resizeWithTaps(ctx, *x, c.taps);
}

} // namespace

void rt::registerOrtResizeKernels(KernelRegistry &r) {
  r.add("Resize", ortResizeKernel);
  r.add("Upsample", ortResizeKernel);
}
