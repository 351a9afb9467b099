//===- Timing.h - Seconds since a point in time -------------------*- C++ -*-===//
//
// The phase timings the quantizer reports (QuantizeResult::seconds, the GPTQ and
// fine-tuning reports) all measure wall-clock seconds on the steady clock.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_TIMING_H
#define TPCC_QUANT_CORE_TIMING_H

#include <chrono>

namespace tpcc::quant {

using Clock = std::chrono::steady_clock;

/// Wall-clock seconds from `t` to now.
inline double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

} // namespace tpcc::quant

#endif
