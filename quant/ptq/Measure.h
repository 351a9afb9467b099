//===- Measure.h - The quantized model against the float one ----*- C++ -*-===//
//
// Per-tensor SQNR of the QDQ model against the float model, run side by side
// on the calibration data: each tensor pooled and on its worst sample, and the
// error its own grid alone gives the float values.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PTQ_MEASURE_H
#define TPCC_QUANT_PTQ_MEASURE_H

#include "ir/graph/Graph.h"
#include "quant/core/Result.h"
#include "runtime/Executor.h"
#include "support/Diagnostics.h"

#include <string>
#include <vector>

namespace tpcc::quant {

/// A tensor as `--min-sqnr-at` names it: `NAME`, or `sigmoid(NAME)` to read
/// it through a sigmoid. A name the model has is taken as it is.
struct ReadTensor {
  std::string tensor;
  bool sigmoid = false;
};
ReadTensor parseReadTensor(const std::string &text, const graph::Graph &g);

/// Runs both models over `data` (at most `maxSamples`) and fills the SQNR of
/// every activation tensor of `result.tensors` (the value of that name in
/// the quantized model against the float one). Every model output, and
/// every tensor of `also` that both models have, gets a row if it has none;
/// a `sigmoid(NAME)` of `also` measures NAME's row through a sigmoid.
LogicalResult measureLayers(rt::Executor &floatEx, rt::Executor &quantEx, CalibrationData &data,
                            int64_t maxSamples, QuantizeResult &result, DiagnosticEngine &diags,
                            const std::vector<std::string> &also = {});

} // namespace tpcc::quant

#endif
