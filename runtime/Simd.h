//===- Simd.h - Which vector instructions our own loops use -----*- C++ -*-===//
//
// A few integer loops of the executor (8-bit table lookups, requantizing
// int32 sums) have AVX2 and AVX-512 versions beside the SSE2 one every
// x86-64 CPU runs. They compute exactly the same bytes (integer operations,
// or the same IEEE float operations lane by lane), so the choice changes
// speed only. It follows the CPU, capped as oneDNN is capped: by
// ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA (SSE41 and AVX: SSE2; AVX2 and
// AVX2_VNNI: AVX2), so one machine can run what another would, and by
// limitSimd() in tests.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_SIMD_H
#define TPCC_RUNTIME_SIMD_H

namespace tpcc::rt {

enum class SimdLevel {
  Sse2,       ///< every x86-64 CPU
  Avx2,       ///< AVX2 (gathers, 32-byte shuffles)
  Avx512Vbmi, ///< AVX-512 with VBMI's byte permutes
};

/// The vector instructions our loops may use now.
SimdLevel simdLevel();

/// Caps simdLevel() at `cap` (tests); returns the cap before.
SimdLevel limitSimd(SimdLevel cap);

} // namespace tpcc::rt

#endif
