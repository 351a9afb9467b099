//===- Simd.cpp - Which vector instructions our own loops use -------------===//
#include "runtime/Simd.h"

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// What the CPU runs, capped by oneDNN's ISA variables.
SimdLevel detected() {
  SimdLevel cpu = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw")
                      ? SimdLevel::Avx512Vbmi
                  : __builtin_cpu_supports("avx2") ? SimdLevel::Avx2
                                                   : SimdLevel::Sse2;
  for (const char *var : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
    const char *v = std::getenv(var);
    if (!v || !*v)
      continue;
    std::string isa(v);
    for (char &c : isa)
      c = char(std::toupper(static_cast<unsigned char>(c)));
    SimdLevel cap = isa.rfind("AVX512", 0) == 0 || isa == "ALL" ? SimdLevel::Avx512Vbmi
                    : isa.rfind("AVX2", 0) == 0                 ? SimdLevel::Avx2
                                                                : SimdLevel::Sse2;
    if (cap < cpu)
      cpu = cap;
  }
  return cpu;
}

std::atomic<int> limit{int(SimdLevel::Avx512Vbmi)};

} // namespace

SimdLevel rt::simdLevel() {
  static const SimdLevel machine = detected();
  int cap = limit.load(std::memory_order_relaxed);
  return int(machine) < cap ? machine : SimdLevel(cap);
}

SimdLevel rt::limitSimd(SimdLevel cap) { return SimdLevel(limit.exchange(int(cap))); }
