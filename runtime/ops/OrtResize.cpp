//===- OrtResize.cpp - A bilinear Resize as ONNX Runtime computes it -------===//
//
// Built with -ffp-contract=off: ORT's expression is four products and three
// additions, none of them fused (ctest ort_float_ops, against ORT).
//
//===----------------------------------------------------------------------===//
#include "runtime/ops/OrtResize.h"

#include "runtime/KernelUtil.h"

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
