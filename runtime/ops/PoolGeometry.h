//===- PoolGeometry.h - The windows of a pooling call ------------*- C++ -*-===//
//
// Kernel, strides, dilations and pads (auto_pad and ceil_mode resolved) of
// one MaxPool / AveragePool call, spatial dimensions right-aligned into
// three, and per output coordinate the taps of its window that land inside
// the input: read once, for the forward loops (Pool.cpp), ONNX Runtime's
// (ort/ops/OrtPool.cpp) and their backward (grad/ops/Pool.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_OPS_POOLGEOMETRY_H
#define TPCC_RUNTIME_OPS_POOLGEOMETRY_H

#include "runtime/Kernel.h"

namespace tpcc::rt {

/// Pooling geometry, spatial dims right-aligned into 3 (leading dims 1).
struct PoolGeometry {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1},
          d[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
  int64_t planes = 0; ///< N * C
  Shape outShape;
  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
};

/// The geometry of a pooling of input shape `x` (1 to 3 spatial dimensions);
/// false (with ctx.fail) on invalid attributes. `dilations`: whether the
/// operator version has them.
bool poolGeometry(KernelContext &ctx, const Shape &x, PoolGeometry &g, bool dilations);

/// Per output coordinate along one dimension: the first input coordinate of
/// its window and the kernel taps [lo, hi) that land inside the input, plus
/// (for count_include_pad) the number of taps inside the padded input.
struct Taps {
  std::vector<int64_t> start, lo, hi, padded;
};

Taps poolTaps(const PoolGeometry &g, int j);

/// AveragePool's own loops on plain `x` into `y` (shaped `g.outShape`): each
/// window summed in row-major order, divided by its count; false for an
/// element type other than float and double.
bool averagePool(const Tensor &x, Tensor &y, const PoolGeometry &g, bool includePad);

/// One AveragePool call as its kernels read it: the input, the geometry and
/// count_include_pad.
struct AveragePoolCall {
  const Tensor *x = nullptr;
  PoolGeometry g;
  bool includePad = false;
};

/// Reads `call` from `ctx` (the default kernel and ONNX Runtime's); false
/// after ctx.fail.
bool averagePoolCall(KernelContext &ctx, AveragePoolCall &call);

/// averagePool of plain `x` into ctx.outputs[0], which it allocates; false
/// after ctx.fail for another element type.
bool averagePoolInto(KernelContext &ctx, const Tensor &x, const PoolGeometry &g, bool includePad);

/// Calls `fn(o, z, y, x)` for every output cell of one plane, with the tap
/// tables of its three dimensions.
template <typename F> inline void forEachCell(const PoolGeometry &g, const Taps (&t)[3], F fn) {
  int64_t o = 0;
  for (int64_t oz = 0; oz < g.out[0]; ++oz)
    for (int64_t oy = 0; oy < g.out[1]; ++oy)
      for (int64_t ox = 0; ox < g.out[2]; ++ox, ++o)
        fn(o, oz, oy, ox);
}

} // namespace tpcc::rt

#endif
