//===- Patches.cpp - A convolution's inputs as patches ----------------------===//
#include "quant/learn/gptq/Patches.h"

#include <algorithm>

using namespace tpcc;
using namespace tpcc::quant;

int64_t quant::convPositions(const rt::ConvGeometry &g, int64_t batch) {
  int64_t n = batch;
  for (size_t i = 2; i < g.outShape.size(); ++i)
    n *= g.outShape[i];
  return n;
}

void quant::convPatches(const graph::LinearKernel &l, const rt::ConvGeometry &g,
                        const rt::Tensor &x, int64_t grp, int64_t p0, int64_t p1, float *out,
                        int64_t ld) {
  const float *xs = x.data<float>();
  bool oneD = x.rank() == 3;
  int64_t c = x.dim(1), ih = oneD ? 1 : x.dim(2), iw = x.dim(x.rank() - 1);
  int64_t oh = oneD ? 1 : g.outShape[2], ow = g.outShape.back();
  auto pick = [&](const std::vector<int64_t> &v, size_t d, int64_t unit) {
    return oneD ? (d == 0 ? unit : v[0]) : v[d];
  };
  int64_t kh = pick(g.kernel, 0, 1), kw = pick(g.kernel, 1, 1);
  int64_t sh = pick(g.strides, 0, 1), sw = pick(g.strides, 1, 1);
  int64_t dh = pick(g.dilations, 0, 1), dw = pick(g.dilations, 1, 1);
  int64_t ph = pick(g.padBegin, 0, 0), pw = pick(g.padBegin, 1, 0);
  int64_t cg = l.channelsPerGroup;
  // The input row / column tap u of output row y reads, or -1 (padding, or
  // a ConvTranspose position no input lands on).
  auto source = [&](int64_t y, int64_t u, int64_t s, int64_t d, int64_t p, int64_t size) {
    int64_t i;
    if (!l.transposed) {
      i = y * s - p + u * d;
    } else {
      int64_t num = y + p - u * d;
      if (num < 0 || num % s)
        return int64_t(-1);
      i = num / s;
    }
    return i >= 0 && i < size ? i : int64_t(-1);
  };
  // One output row (b, y, x0..x1) at a time; each column of the block is
  // written along the row.
  for (int64_t pos = p0; pos < p1;) {
    int64_t b = pos / (oh * ow), y = pos / ow % oh, x0 = pos % ow;
    int64_t x1 = std::min(ow, x0 + (p1 - pos));
    float *col = out + (pos - p0);
    for (int64_t ci = 0; ci < cg; ++ci) {
      const float *plane = xs + ((b * c) + grp * cg + ci) * ih * iw;
      for (int64_t u = 0; u < kh; ++u) {
        int64_t yy = source(y, u, sh, dh, ph, ih);
        const float *line = yy >= 0 ? plane + yy * iw : nullptr;
        for (int64_t v = 0; v < kw; ++v, col += ld)
          for (int64_t xo = x0; xo < x1; ++xo) {
            int64_t xx = line ? source(xo, v, sw, dw, pw, iw) : -1;
            col[xo - x0] = xx >= 0 ? line[xx] : 0.f;
          }
      }
    }
    pos += x1 - x0;
  }
}
