//===- Grid.h - Quantization grids (docs/algorithms.md §1) -----*- C++ -*-===//
//
// A QuantGrid is the set of values one tensor (or one channel of a weight)
// is quantized to, with the integers that represent them in the QDQ model:
// value = scale * (q - zeroPoint), q in [qmin, qmax]. Power-of-two and
// symmetric grids come from a threshold t (POT: t a power of two), uniform
// grids from a range [lo, hi] shifted so zero is a grid point, LUT grids
// restrict the integers further to a table of centres. The definitions are
// MCT's (docs/algorithms.md §1), so results are comparable.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_GRIDS_GRID_H
#define TPCC_QUANT_CORE_GRIDS_GRID_H

#include "ir/TpcIR.h"

#include <cstdint>
#include <vector>

namespace tpcc::quant {

struct QuantGrid {
  ir::QuantMethod method = ir::QuantMethod::Symmetric;
  /// A floating-point element (FP8, FP4): values scale * e for e of the
  /// format (floatGrid); the integers are then the format's values in order
  /// (ordinal: the code's magnitude bits, negative for negative values).
  ir::ElementFormat element = ir::ElementFormat::Int;
  int bits = 8;
  bool isSigned = true;
  /// Symmetric, POT and LUT: the threshold t (t itself not representable).
  double threshold = 0;
  /// Uniform: the zero-exact range [lo, hi] (a', b'); symmetric: [-s*t, t-scale].
  double lo = 0, hi = 0;
  /// value = scale * (q - zeroPoint)
  double scale = 1;
  int64_t zeroPoint = 0;
  /// The integers the grid may use.
  int64_t qmin = 0, qmax = 0;
  /// LUT methods: the table of integer centres q (sorted, unique), a subset
  /// of [qmin, qmax] on the 2^lutBits multiplier grid; empty otherwise.
  std::vector<int64_t> lut;

  bool floating() const { return element != ir::ElementFormat::Int; }
  /// The integer that represents `x` (nearest grid point, ties to even; LUT:
  /// the nearest table entry, the first on ties; floating-point elements:
  /// the ordinal of x / scale rounded to the format, as float32 arithmetic
  /// and ONNX's saturating cast give it).
  int64_t toInt(double x) const;
  /// The grid value nearest to `x` (the fake-quantized x).
  double quantize(double x) const;
  /// A floating-point element's code (its bits in the format) for `x`.
  uint8_t code(double x) const;
};

/// The grid of a floating-point element `e` (not Int) for threshold `t`:
/// scale t / the format's largest finite value (a power of two, rounded up,
/// for `pot`), so that +-t is the largest magnitude; signed, zero point 0.
QuantGrid floatGrid(ir::ElementFormat e, double t, bool pot = false,
                    double minThreshold = ir::kDefaultMinThreshold);
/// The grid of floating-point element `e` with scale `scale` exactly.
QuantGrid floatGridOfScale(ir::ElementFormat e, double scale,
                           ir::QuantMethod method = ir::QuantMethod::Symmetric);

/// The grid of a symmetric threshold `t`: scale t/2^(bits-s), integers
/// [-s*2^(bits-1), 2^(bits-s)-1], zero point 0.
QuantGrid symmetricGrid(double t, int bits, bool isSigned);
/// As symmetricGrid, with t rounded up to a power of two
/// (powerOfTwoCeil(t, minThreshold)).
QuantGrid powerOfTwoGrid(double t, int bits, bool isSigned,
                         double minThreshold = ir::kDefaultMinThreshold);
/// The uniform grid of range [a, b]: widened to hold 0 (and to at least
/// ir::kDefaultMinThreshold), shifted so zero is a grid point
/// (docs/algorithms.md §1.3); integers [0, 2^bits-1].
QuantGrid uniformGrid(double a, double b, int bits);
/// The grid of a threshold method (symmetric or power of two) for threshold
/// `t`: powerOfTwoGrid or symmetricGrid.
QuantGrid thresholdGrid(ir::QuantMethod method, double t, int bits, bool isSigned,
                        double minThreshold = ir::kDefaultMinThreshold);
/// The grid of `method` that holds the known range [lo, hi] without clipping:
/// uniformGrid(lo, hi), or thresholdGrid of max(-lo, hi), signed when lo < 0.
QuantGrid rangeGrid(ir::QuantMethod method, double lo, double hi, int bits,
                    double minThreshold = ir::kDefaultMinThreshold);
/// `g` with its scale stored in format `f` (docs/language.md §4.2, "Number
/// formats"): float16 and fp8_e4m3 round the scale to their nearest value,
/// e8m0 rounds it up to a power of two, each no smaller than the format's
/// least positive value; the zero point stays and the range follows. float32
/// leaves `g` as it is.
QuantGrid withScaleFormat(const QuantGrid &g, ir::ScaleFormat f);
/// Scale `s` stored in format `f`, as withScaleFormat rounds it (float32
/// and the factor formats leave it as it is).
double roundScale(double s, ir::ScaleFormat f);
/// `g` with scale `s`: the zero point stays and the range follows (a
/// floating-point element: its grid of scale `s`).
QuantGrid rescaled(const QuantGrid &g, double s);
/// OCP MX's signed integer grid of `bits` bits for a group whose largest
/// magnitude is `amax`: scale 2^(floor(log2 amax) - (bits - 2)) (the
/// elements read as 1.(bits-2) fixed point under the shared E8M0 exponent
/// floor(log2 amax)): values up to (2^(bits-1) - 1) / 2^(bits-2) * 2^e fit,
/// and a largest value above that saturates, as the MX specification's
/// elements do; the scale's exponent is kept in E8M0's [-127, 127], `amax`
/// at least `minThreshold`.
/// A floating-point `element`: OCP MX's scale 2^(floor(log2 amax) - emax)
/// with emax the element's largest exponent (8 for FP8 E4M3, 15 for E5M2, 2
/// for FP4), values above the format's largest finite one saturating.
QuantGrid mxGrid(double amax, int bits, double minThreshold = ir::kDefaultMinThreshold,
                 ir::ElementFormat element = ir::ElementFormat::Int);
/// OCP MX's emax_elem as mxGrid reads it: bits − 2 for integers (codes read
/// as 1.(bits-2) fixed point), the element's largest exponent otherwise.
int mxEmax(ir::ElementFormat element, int bits);
/// 2^ceil(log2 max(t, minThreshold)) (MCT's max_power_of_two).
double powerOfTwoCeil(double t, double minThreshold = ir::kDefaultMinThreshold);

} // namespace tpcc::quant

#endif
