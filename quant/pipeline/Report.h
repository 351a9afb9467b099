//===- Report.h - What a quantization chose, as text, JSON and plan --*- C++ -*-===//
//
// The versioned report format (`--report`, "report_version": 1), the summary
// table `tpcc quantize` prints, and fillPlan, which writes the chosen grids,
// weight grids and corrected biases into the plan (`--plan-out`).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PIPELINE_REPORT_H
#define TPCC_QUANT_PIPELINE_REPORT_H

#include "quant/core/Stage.h"
#include "quant/ptq/Quantizer.h"
#include "quant/search/mixed/Search.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace tpcc::quant {

/// What the report names besides the tensors.
struct ReportHeader {
  std::string platform, recipe, model, output;
  /// What the stages did: each adds its section to the report.
  std::vector<const StageReport *> stages;
  /// Where the recipe came from: "platform", "--recipe" or "none".
  std::string recipeOrigin = "none";
};

/// The report JSON (report_version 1); `search` (with the plan it chose)
/// adds the mixed-precision search and its sensitivity matrix.
void writeReport(const QuantizeResult &r, const ReportHeader &h,
                 const std::vector<std::string> &corrections, llvm::raw_ostream &os,
                 const mixed::SearchResult *search = nullptr, const plan::Plan *plan = nullptr);

/// The summary table `tpcc quantize` prints; `cleanup` says what the
/// clean-up changed ("" when nothing).
void printSummary(const QuantizeResult &r, const std::string &model, const std::string &output,
                  const std::string &recipe, const std::string &cleanup,
                  const std::vector<std::string> &corrections, llvm::raw_ostream &os);

/// Writes what the quantizer chose (activation grids, weight grids, corrected
/// biases) into `p`, the plan of the float model, with what `recipe` changed
/// of the plan's configs (widths, methods, per channel, what is quantized at
/// all): `tpcc apply` reads the plan alone.
void fillPlan(plan::Plan &p, const QuantizeResult &r, const ir::Recipe &recipe);

} // namespace tpcc::quant

#endif
