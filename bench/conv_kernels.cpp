//===- conv_kernels.cpp - oneDNN (the executor's Conv) vs OpenBLAS im2col+GEMM -===//
//
// The measurement behind the executor's choice of oneDNN for convolutions:
// the convolutions of fashion_cnn and of a MobileNetV2-style block at batch 64,
// run through the executor's own Conv kernel (oneDNN) and through the classic
// alternative, im2col + OpenBLAS sgemm (per image; depthwise as one small GEMM
// per channel). Both use the same threads. Prints milliseconds per call (best
// of 5 after a warm-up) and GFLOP/s.
//
// usage: tpcc_bench_kernels
//
//===----------------------------------------------------------------------===//
#include "runtime/Kernel.h"

#include <cblas.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

using namespace tpcc;
using namespace tpcc::rt;

namespace {
struct Case {
  const char *name;
  int64_t n, c, h, w, k, r, stride, pad, group;
};

double bestMs(const std::function<void()> &f) {
  f();
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(
        best,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

void fill(Tensor &t) {
  float *p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
}

/// im2col + sgemm, parallel over images (each thread one image at a time).
void im2colConv(const Case &cs, const float *x, const float *w, float *y, int64_t oh, int64_t ow) {
  int64_t cg = cs.c / cs.group, kg = cs.k / cs.group, kk = cg * cs.r * cs.r;
#pragma omp parallel
  {
    std::vector<float> col(size_t(kk * oh * ow));
#pragma omp for
    for (int64_t b = 0; b < cs.n; ++b)
      for (int64_t g = 0; g < cs.group; ++g) {
        const float *xb = x + (b * cs.c + g * cg) * cs.h * cs.w;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t i = 0; i < cs.r; ++i)
            for (int64_t j = 0; j < cs.r; ++j) {
              float *row = col.data() + ((c * cs.r + i) * cs.r + j) * oh * ow;
              for (int64_t oy = 0; oy < oh; ++oy) {
                int64_t iy = oy * cs.stride - cs.pad + i;
                for (int64_t ox = 0; ox < ow; ++ox) {
                  int64_t ix = ox * cs.stride - cs.pad + j;
                  row[oy * ow + ox] = iy >= 0 && iy < cs.h && ix >= 0 && ix < cs.w
                                          ? xb[(c * cs.h + iy) * cs.w + ix]
                                          : 0.0f;
                }
              }
            }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(kg), int(oh * ow), int(kk), 1.0f,
                    w + g * kg * kk, int(kk), col.data(), int(oh * ow), 0.0f,
                    y + (b * cs.k + g * kg) * oh * ow, int(oh * ow));
      }
  }
}
} // namespace

int main() {
  const Case cases[] = {
      {"fashion conv1 1->16 28x28", 64, 1, 28, 28, 16, 3, 1, 1, 1},
      {"fashion conv2 16->32 14x14", 64, 16, 14, 14, 32, 3, 1, 1, 1},
      {"fashion conv3 32->64 7x7", 64, 32, 7, 7, 64, 3, 1, 1, 1},
      {"mbv2 pointwise 32->192 24x24", 64, 32, 24, 24, 192, 1, 1, 0, 1},
      {"mbv2 depthwise 192 24x24 s2", 64, 192, 24, 24, 192, 3, 2, 1, 192},
      {"mbv2 depthwise 576 6x6", 64, 576, 6, 6, 576, 3, 1, 1, 576},
  };
  openblas_set_num_threads(1); // parallel over images instead, like the executor
  std::printf("threads %d\n%-32s %10s %10s %9s %9s\n", omp_get_max_threads(), "convolution",
              "oneDNN ms", "BLAS ms", "oneDNN GF", "BLAS GF");
  for (const Case &cs : cases) {
    int64_t oh = (cs.h + 2 * cs.pad - cs.r) / cs.stride + 1,
            ow = (cs.w + 2 * cs.pad - cs.r) / cs.stride + 1;
    Tensor x(graph::ElemType::Float, {cs.n, cs.c, cs.h, cs.w});
    Tensor w(graph::ElemType::Float, {cs.k, cs.c / cs.group, cs.r, cs.r});
    fill(x);
    fill(w);
    graph::Node node;
    node.opType = "Conv";
    auto ints = [](const char *n, std::vector<int64_t> v) {
      graph::Attribute a;
      a.name = n;
      a.type = ir::OnnxAttrType::Ints;
      a.ints = std::move(v);
      return a;
    };
    node.attributes = {ints("pads", {cs.pad, cs.pad, cs.pad, cs.pad}),
                       ints("strides", {cs.stride, cs.stride})};
    graph::Attribute g;
    g.name = "group";
    g.type = ir::OnnxAttrType::Int;
    g.i = cs.group;
    node.attributes.push_back(g);
    std::unique_ptr<NodeState> state;
    KernelFn conv = KernelRegistry::get().find("", "Conv");
    double dnnl = bestMs([&] {
      KernelContext ctx(node, 13, state);
      ctx.inputs = {&x, &w};
      ctx.outputs.resize(1);
      if (!conv(ctx))
        std::fprintf(stderr, "conv failed: %s\n", ctx.error.c_str());
    });
    std::vector<float> y(size_t(cs.n * cs.k * oh * ow));
    double blas =
        bestMs([&] { im2colConv(cs, x.data<float>(), w.data<float>(), y.data(), oh, ow); });
    double flops = 2.0 * double(cs.n * cs.k * oh * ow) * double(cs.c / cs.group * cs.r * cs.r);
    std::printf("%-32s %10.3f %10.3f %9.1f %9.1f\n", cs.name, dnnl, blas, flops / dnnl / 1e6,
                flops / blas / 1e6);
  }
  return 0;
}
