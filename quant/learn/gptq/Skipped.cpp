//===- Skipped.cpp - The kernels GPTQ leaves as rounded to nearest ---------===//
#include "quant/learn/gptq/Skipped.h"

#include <fmt/format.h>

using namespace tpcc;
using namespace tpcc::quant;

void quant::writeSkippedJSON(const SkippedKernels &skipped, llvm::json::OStream &j) {
  j.attributeArray("skipped", [&] {
    for (const auto &[node, why] : skipped)
      j.object([&] {
        j.attribute("node", node);
        j.attribute("reason", why);
      });
  });
}

void quant::noteNothingToRound(DiagnosticEngine &diags, const std::string &where,
                               const char *method, const SkippedKernels &skipped) {
  diags.emitAt(where, diag::note_gptq_nothing, method,
               skipped.empty()
                   ? std::string("no kernel of this model is quantized")
                   : fmt::format("{} kernels left as rounded to nearest; the first, `{}`: {}",
                                 skipped.size(), skipped.front().first, skipped.front().second));
}
