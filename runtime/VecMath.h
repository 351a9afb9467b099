//===- VecMath.h - exp and erf over arrays, 8 lanes at a time ---*- C++ -*-===//
//
// The transcendental functions of a transformer's hot loops (Softmax's max
// and exp, exact GELU's erf) as array functions: one polynomial evaluation per
// element in fused multiply-adds, 8 lanes at a time with AVX2, instead of a
// call into libm per element. Each function is defined by its sequence of
// IEEE operations, so the AVX2 path and the scalar path every x86-64 CPU
// runs give the same bits (fma is exactly rounded on both); the choice
// follows simdLevel() and changes speed only.
//
// Accuracy (tested against glibc on every 1009th float): exp within 1 ulp
// for results of normal size; it returns +0 for x < ln(FLT_MIN) (where libm
// returns a subnormal), +inf above ln(FLT_MAX), NaN for NaN. erf within
// 1 ulp, exactly ±1 where it rounds there, NaN for NaN.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_VECMATH_H
#define TPCC_RUNTIME_VECMATH_H

#include <cstdint>

namespace tpcc::rt::vecmath {

/// y[i] = e^x[i] for i < n (x and y may be the same array).
void exp(const float *x, float *y, int64_t n);

/// y[i] = e^(x[i] - shift) for i < n; returns their sum, added in a fixed
/// order: element i into lane i mod 8, then the eight lanes pairwise
/// ((0+4)+(2+6))+((1+5)+(3+7)).
float expShiftedSum(const float *x, float *y, int64_t n, float shift);

/// The largest of x[0..n) that is not NaN, -inf if there is none; between
/// +0 and -0 (equal) either.
float maxOf(const float *x, int64_t n);

/// Softmax of each of `rows` rows of `len` floats: m = maxOf(row), s =
/// expShiftedSum(row, m), then each e^(x - m) times 1 / s (one loop over the
/// rows, so the checks and constants are not repeated per row).
void softmaxRows(const float *x, float *y, int64_t rows, int64_t len);

/// y[i] = erf(x[i]) for i < n (x and y may be the same array).
void erf(const float *x, float *y, int64_t n);

} // namespace tpcc::rt::vecmath

#endif
