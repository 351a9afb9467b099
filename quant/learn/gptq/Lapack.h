//===- Lapack.h - The LAPACK routines second-order rounding calls -*- C++ -*-===//
//
// Cholesky factor, inverse from it and positive-definite solve, on row-major
// symmetric matrices, through the system's LAPACK (Debian's OpenBLAS, which
// scripts/setup installs; the reference LAPACK when it is absent).
//
// OpenBLAS picks its kernels by CPU when the library loads, and kernels for
// different CPUs round differently: the same Hessian factored with OpenBLAS's
// Cooperlake (AVX-512) and Haswell (AVX2) kernels differed in the last bits,
// and so could a rounded weight. So on first use OpenBLAS chooses again, with
// OPENBLAS_CORETYPE=Haswell (AVX2 + FMA kernels, which every x86-64 CPU with
// AVX2 and FMA runs), unless the user set a core type, and runs on one
// thread: every such machine computes the same bytes. docs/quantize.md,
// "Second-order rounding".
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_GPTQ_LAPACK_H
#define TPCC_QUANT_LEARN_GPTQ_LAPACK_H

#include <cstdint>
#include <string>

namespace tpcc::quant::lapack {

/// "" when LAPACK is loaded (loading it on the first call), else why not.
const std::string &loadError();

/// Which LAPACK runs: "OpenBLAS 0.3.21, Haswell kernels" (its version and
/// kernels), "reference LAPACK", or the load error.
std::string describe();

/// In place: the upper Cholesky factor U (A = UᵀU) of the symmetric `n` x
/// `n` row-major `a`, read from and written to its upper triangle. False
/// when `a` is not positive definite (or LAPACK is missing).
bool choleskyUpper(double *a, int64_t n);

/// In place: A⁻¹ from the factor choleskyUpper left, in the upper triangle.
bool inverseFromCholesky(double *a, int64_t n);

/// Solves A x = b for symmetric positive-definite `a` (`n` x `n`,
/// row-major, upper triangle read; overwritten) and one right-hand side `b`
/// (overwritten by x).
bool solvePositive(double *a, double *b, int64_t n);

} // namespace tpcc::quant::lapack

#endif
