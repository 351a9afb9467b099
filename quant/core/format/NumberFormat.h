//===- NumberFormat.h - How a quantized tensor's values are represented -*- C++ -*-===//
//
// A NumberFormat says which values a quantized tensor may hold and how they
// are stored:
//
//  - the element grid of each group of elements (QuantGrid: integers q in
//    [qmin, qmax] standing for scale * (q - zeroPoint); uniform, symmetric
//    and power-of-two grids, look-up tables that keep a subset of those
//    integers, and floating-point elements: scale * e for e an FP8 or FP4
//    value);
//  - the granularity: how the elements fall into groups (one group for the
//    whole tensor, one per channel along an axis, or one per block of
//    consecutive indices along an axis), as a GroupLayout of a tensor's
//    shape;
//  - the storage: the type that holds the codes in the QDQ model (integers
//    of 4, 8 or 16 bits, or FP8).
//
// Every part of the quantizer that puts values on a format goes through
// here, so the rounding and saturation are written once:
//  - fakeQuantize(grid, x): a value on its grid in double precision, as the
//    grids are chosen and the QDQ rewrite stores the codes (round half to
//    even, saturated to [qmin, qmax]; LUT grids: the nearest table entry);
//  - FloatGrid: the same in float32, as the deployed QuantizeLinear /
//    DequantizeLinear pair computes it (fine-tuning's forward pass);
//  - int32Code: a bias on the accumulator grid (scale input x weight, in
//    float32 as ONNX Runtime computes it).
//
// Adding a format: a granularity is a new GroupLayout; an element type is a
// QuantGrid with its own code and value functions (QuantGrid::toInt,
// quantize), which fakeQuantize and storage dispatch on.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_FORMAT_NUMBERFORMAT_H
#define TPCC_QUANT_CORE_FORMAT_NUMBERFORMAT_H

#include "ir/graph/Graph.h"
#include "quant/core/grids/Grid.h"
#include "runtime/Tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace tpcc::quant {

/// x on grid `g` in double precision: scale * (clamp(round(x / scale) +
/// zeroPoint) - zeroPoint), rounding half to even; a LUT grid takes the
/// nearest table entry (QuantGrid::toInt); floating-point elements: the
/// format's nearest value, saturated (QuantGrid::quantize).
inline double fakeQuantize(const QuantGrid &g, double x) {
  if (!g.lut.empty() || g.floating())
    return g.quantize(x);
  double q =
      std::clamp(std::nearbyint(x / g.scale) + double(g.zeroPoint), double(g.qmin), double(g.qmax));
  return g.scale * (q - double(g.zeroPoint));
}

/// y[i] = fakeQuantize(g, x[i]) for n floats (written to vectorize: it runs
/// on every value of the sensitivity's runs).
void fakeQuantize(const QuantGrid &g, const float *x, float *y, int64_t n);

/// A grid in the float32 arithmetic of the deployed QuantizeLinear /
/// DequantizeLinear pair (runtime/ops/Quantize.cpp): q = saturate(round half
/// to even(x / s) + z), x_q = (q - z) s. Adding and subtracting 1.5 * 2^23
/// rounds half to even below 2^22, and past it every value saturates anyway;
/// inline, so the loops that use it vectorize.
struct FloatGrid {
  float s, z, lo, hi;
  explicit FloatGrid(const QuantGrid &g)
      : s(float(g.scale)), z(float(g.zeroPoint)), lo(float(g.qmin)), hi(float(g.qmax)) {}
  /// u rounded half to even (|u| below 2^22; larger values saturate).
  static float round(float u) { return (u + 12582912.f) - 12582912.f; }
  /// The integer of x, minus the zero point.
  float level(float x) const {
    float q = round(x / s) + z;
    q = q < lo ? lo : q;
    q = q > hi ? hi : q;
    return q - z;
  }
  float fake(float x) const { return level(x) * s; }
};

/// How the elements of a tensor fall into groups that share one grid: one
/// group, one per channel along an axis (`inner` elements after the axis
/// each), or one per block: `block` consecutive indices along the axis, for
/// every index of the other dimensions, numbered as ONNX's blocked
/// DequantizeLinear lays out its scale (the tensor's shape with the axis's
/// length replaced by its number of blocks). Per channel, a tensor with more
/// channels than grids gives the extra channels the last grid.
struct GroupLayout {
  int64_t inner = 1;    ///< elements per channel run (the product of the dims after the axis)
  int64_t channels = 1; ///< the axis's length (1: one group)
  size_t grids = 1;
  int64_t block = 0;  ///< > 0: blocks of this many indices along the axis
  int64_t blocks = 1; ///< blocked: ceil(channels / block)

  /// The group of element i.
  size_t groupOf(int64_t i) const {
    if (block > 0) {
      int64_t row = i / inner;
      return size_t(((row / channels) * blocks + row % channels / block) * inner + i % inner);
    }
    return channels == 1 || grids == 1
               ? 0
               : size_t(std::min<int64_t>((i / inner) % channels, int64_t(grids) - 1));
  }
  /// Calls f(begin, end, group) for each run of [b, e) whose elements share
  /// one group, in order.
  template <typename F> void runs(int64_t b, int64_t e, F f) const {
    if (block > 0) {
      for (int64_t i = b; i < e;) {
        // Along the last axis a block is a run; otherwise neighbours differ.
        int64_t end = i + 1;
        if (inner == 1) {
          int64_t row = i - i % channels;
          end = std::min({e, row + channels, row + (i % channels / block + 1) * block});
        }
        f(i, end, groupOf(i));
        i = end;
      }
      return;
    }
    if (channels == 1 || grids == 1) {
      f(b, e, size_t(0));
      return;
    }
    for (int64_t i = b; i < e;) {
      int64_t block = i / inner, end = std::min(e, (block + 1) * inner);
      f(i, end, size_t(std::min<int64_t>(block % channels, int64_t(grids) - 1)));
      i = end;
    }
  }
};

/// The layout of `grids` grids along `axis` (-1: per tensor) of a tensor of
/// shape `dims`.
GroupLayout groupLayout(size_t grids, int64_t axis, const std::vector<int64_t> &dims);
/// The layout of blocks of `block` indices along `axis` of shape `dims`.
GroupLayout blockLayout(int64_t block, int64_t axis, const std::vector<int64_t> &dims);

/// Two-level scales (Qualcomm's LPBQ, NVIDIA's NVFP4): block b's scale is
/// factors[b], a value of format `factor`, times the scale of its group
/// (one per index along `axis` of the blocked scale's shape, or one), as
/// float32 multiplies them: the grids' scales are those products.
struct TwoLevelScales {
  ir::ScaleFormat factor = ir::ScaleFormat::UInt4; ///< uint4, uint8 or fp8_e4m3
  int64_t axis = -1;               ///< the groups' axis in the blocked scale's shape; -1: one group
  std::vector<double> groupScales; ///< one per group
  std::vector<double> factors;     ///< one per block, in the blocked scale's order
  /// The group of block `b` of a blocked scale of shape `shape`.
  size_t groupOf(size_t b, const std::vector<int64_t> &shape) const {
    if (axis < 0)
      return 0;
    int64_t stride = 1;
    for (size_t d = size_t(axis) + 1; d < shape.size(); ++d)
      stride *= shape[d];
    return size_t(int64_t(b) / stride % shape[size_t(axis)]);
  }
};

/// A quantized tensor's format: one grid, one per channel along `axis`, or
/// one per block of `block` indices along `blockAxis` (the grids then in
/// the order of blockShape's elements).
struct NumberFormat {
  int64_t axis = -1;            ///< the per-channel axis; -1: per tensor
  std::vector<QuantGrid> grids; ///< one per channel along `axis`, one per block, or one
  int64_t block = 0;            ///< > 0: the block size along `blockAxis`
  int64_t blockAxis = -1;
  /// Blocked: the blocks' scales as factors under group scales.
  std::optional<TwoLevelScales> twoLevel = {};

  bool blocked() const { return block > 0 && blockAxis >= 0; }
  bool perChannel() const { return !blocked() && axis >= 0 && grids.size() > 1; }
  /// How a tensor of shape `dims` falls into this format's groups.
  GroupLayout layout(const std::vector<int64_t> &dims) const {
    return blocked() ? blockLayout(block, blockAxis, dims)
                     : groupLayout(grids.size(), perChannel() ? axis : -1, dims);
  }
  /// The shape of the scales of a blocked tensor of shape `dims`: `dims`
  /// with the block axis's length replaced by its number of blocks.
  std::vector<int64_t> blockShape(const std::vector<int64_t> &dims) const;
  /// The values of `t` (a float tensor) on their grids, in double precision.
  std::vector<float> fakeQuantized(const rt::Tensor &t) const;
  /// The type that stores the codes: FP8 E5M2 for E5M2 elements, FP8 E4M3
  /// for E4M3 and FP4 ones (every FP4 value is an E4M3 value, and ONNX
  /// Runtime 1.30 runs no FP4 DequantizeLinear); for integers 4 bits when
  /// every grid's integers fit and the format is blocked (ONNX's 4-bit types
  /// come with opset 21, as blocks do), else 8 when they fit, else 16;
  /// signed when some integers are negative.
  graph::ElemType storage() const { return storageOf(grids, blocked()); }
  static graph::ElemType storageOf(const std::vector<QuantGrid> &grids, bool blocked = false);
};

/// How many bits a grid's integers take: its width, or for a LUT grid (whose
/// `bits` count table entries) the width of the table's integer range.
int integerBits(const QuantGrid &g);

/// A bias value on the accumulator grid of step `scale` (input scale x
/// kernel scale, multiplied in float32): round half to even, saturated to
/// int32; NaN gives 0.
inline double int32Code(double x, double scale) {
  double v = std::nearbyint(x / scale);
  return std::isnan(v) ? 0.0 : std::clamp(v, -2147483648.0, 2147483647.0);
}

} // namespace tpcc::quant

#endif
