//===- Skipped.h - The kernels GPTQ leaves as rounded to nearest -*- C++ -*-===//
//
// What second-order rounding (SecondOrder.h) and gradient GPTQ (Gptq.h)
// share: the list of quantized kernels a method leaves alone and why, its
// place in the report, and the note when it leaves every kernel alone.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_GPTQ_SKIPPED_H
#define TPCC_QUANT_LEARN_GPTQ_SKIPPED_H

#include "support/Diagnostics.h"

#include "llvm/Support/JSON.h"

#include <string>
#include <utility>
#include <vector>

namespace tpcc::quant {

/// (node, reason) for each kernel left as rounded to nearest.
using SkippedKernels = std::vector<std::pair<std::string, std::string>>;

/// Why a LUT kernel is left alone.
inline constexpr const char *kLutSkipReason =
    "a look-up-table method (its table is fitted to the weights as they are)";

/// The report's `skipped` array.
void writeSkippedJSON(const SkippedKernels &skipped, llvm::json::OStream &j);

/// The note that `method` found no kernel to round in the model at `where`.
void noteNothingToRound(DiagnosticEngine &diags, const std::string &where, const char *method,
                        const SkippedKernels &skipped);

} // namespace tpcc::quant

#endif
