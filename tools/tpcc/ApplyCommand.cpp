//===- ApplyCommand.cpp - `tpcc apply` --------------------------------------===//
//
// Rewrites a model into QDQ form as a calibrated plan says
// (quant::applyPlan) and prints one line about it; no specs, no data.
//
//===----------------------------------------------------------------------===//
#include "quant/pipeline/Pipeline.h"
#include "runtime/eval/Evaluate.h"
#include "tools/tpcc/Driver.h"

#include <fmt/format.h>

using namespace tpcc;
using namespace tpcc::driver;

LogicalResult driver::checkApplyArgs(Options &o) {
  if (o.planFile.empty() || o.model.empty() || o.output.empty() || o.output == "-")
    return usageError("apply needs --plan PLAN.json, a model and -o OUT.onnx");
  return success();
}

int driver::runApply(const Options &o) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  quant::QuantizeResult result;
  std::unique_ptr<graph::Model> model;
  if (failed(quant::applyPlan(o.planFile, o.model, o.output, result, model, diags, o.matmulNBits)))
    return finish(diags, o);
  finish(diags, o); // warnings
  llvm::outs() << fmt::format("apply: {} -> {}: {} activation tensors and {} weights quantized "
                              "as `{}` says\n",
                              o.model, o.output,
                              result.spec.activations.size() + result.spec.mxActivations.size(),
                              result.spec.weights.size(), o.planFile);
  llvm::outs() << rt::saturationNote(*model);
  return ExitOK;
}
