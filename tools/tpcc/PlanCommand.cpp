//===- PlanCommand.cpp - `tpcc plan` ----------------------------------------===//
//
// Picks the platform and its capabilities, loads the model, builds the plan
// (plan/), then prints the summary or an explanation and writes the
// plan or the ORT overrides. Nothing is written when there are errors.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"
#include "plan/Plan.h"
#include "plan/Resources.h"
#include "quant/pipeline/Pipeline.h"
#include "support/AtomicFile.h"
#include "tools/tpcc/Driver.h"

using namespace tpcc;
using namespace tpcc::driver;

LogicalResult driver::checkPlanArgs(Options &o) {
  if (o.model.empty())
    return usageError("plan needs a model: `tpcc plan --platform NAME MODEL.onnx`");
  if (o.emit.empty())
    o.emit = "plan";
  if (o.emit != "plan" && o.emit != "ort-overrides")
    return usageError("unknown --emit kind `" + o.emit +
                      "` for plan; expected plan or ort-overrides");
  // A platform given as a file is compiled with the inputs.
  if (llvm::StringRef(o.platform).endswith(".tpc"))
    o.inputs.push_back(o.platform);
  if (llvm::StringRef(o.recipe).endswith(".tpc"))
    o.inputs.push_back(o.recipe);
  if (o.budgets.anyBudget() && o.calib.empty())
    return usageError("a budget makes `tpcc plan` search the bit widths, which needs "
                      "calibration data: --calib FILE|DIR");
  if (!o.batch)
    o.batch = 32;
  return success();
}

int driver::runPlan(Compilation &c, const ir::Module &m, const Options &o) {
  const ir::Platform *platform = pickPlatform(c, m, o);
  const ir::Capabilities *caps =
      platform ? m.capabilitiesFor(*platform, o.capabilities, c.diags) : nullptr;
  if (!caps)
    return finish(c.diags, o);
  PhaseTimer timer(o.time);
  // Kept until the process ends, like the compilation (see main): freeing a
  // large model costs as much as loading it.
  static std::unique_ptr<graph::Model> model;
  static plan::Plan p;
  // With calibration data, the mixed-precision search chooses the configs
  // (on the model as `tpcc quantize` prepares it).
  static quant::QuantizeOutcome searched;
  if (!o.calib.empty()) {
    quant::QuantizeRequest r;
    r.module = &m;
    r.platform = platform;
    r.capabilities = caps;
    if (failed(pickRecipe(c, m, o, platform, r.recipe, r.recipeOrigin)))
      return finish(c.diags, o);
    r.model = o.model;
    r.calib = o.calib;
    r.batch = o.batch;
    r.choose = o.choose;
    r.dims = o.dims;
    r.budgets = o.budgets;
    std::unique_ptr<Progress> progress;
    r.progress = [&](const char *name, int64_t done, int64_t total) {
      if (!progress)
        progress = std::make_unique<Progress>(o.showProgress(), total, std::string(name));
      progress->update(done);
    };
    LogicalResult ok = quant::searchPlan(r, searched, c.diags);
    if (progress)
      progress->finish();
    if (failed(ok))
      return finish(c.diags, o);
    p = std::move(searched.plan);
    model = std::move(searched.floatModel);
    timer.done("search");
  } else {
    graph::LoadOptions options;
    options.widenFloat16 = true;
    options.dims = o.dims;
    model = graph::loadModel(o.model, c.diags, options);
    timer.done("load");
    if (!model || c.diags.hasErrors())
      return finish(c.diags, o);
    if (std::string ops = quant::quantizedOperators(*model); !ops.empty())
      c.diags.emitAt(o.model, diag::warn_plan_already_quantized, ops);
    quant::warnSubgraphs(*model, c.diags);
    p = plan::buildPlan(m, *platform, *caps, m.findFramework(caps->framework), *model, c.diags,
                        o.choose);
    p.dims = o.dims;
    timer.done("plan");
  }
  (void)plan::checkPlatformMemory(p, c.diags); // reported; finish() fails on the error

  const plan::PlanNode *explained = nullptr;
  if (!o.explain.empty()) {
    std::vector<std::string> names;
    for (const plan::PlanNode &n : p.nodes) {
      names.push_back(n.node->displayName());
      if (names.back() == o.explain && !explained)
        explained = &n;
    }
    if (!explained) {
      c.diags.emitAt("", diag::err_no_node_named, o.explain, didYouMean(o.explain, names));
      return finish(c.diags, o);
    }
  }
  // The plan lists every diagnostic: the ORT overrides add their warnings
  // while they are written, the plan has them all before.
  std::string overrides;
  if (o.emit == "ort-overrides") {
    llvm::raw_string_ostream os(overrides);
    plan::emitOrtOverrides(p, c.diags, os);
  }
  // Printing clears the engine; the plan JSON needs its diagnostics.
  std::vector<Diagnostic> kept = c.diags.getDiagnostics();
  if (int status = finish(c.diags, o))
    return status;

  auto write = [&](llvm::raw_ostream &os) {
    if (o.emit == "ort-overrides")
      os << overrides;
    else
      plan::emitPlanJSON(p, kept, c.sources, os);
  };
  if (o.output == "-") {
    write(llvm::outs());
    return ExitOK;
  }
  if (explained) {
    plan::printExplanation(p, *explained, c.sources, llvm::outs());
    if (searched.search)
      quant::mixed::explainSensitivity(*searched.search, p, *explained, llvm::outs());
  } else {
    plan::printSummary(p, llvm::outs());
    if (searched.search)
      quant::mixed::printSearch(*searched.search, p, llvm::outs());
  }
  llvm::outs().flush();
  std::string error;
  if (!o.output.empty() && !writeFileAtomically(o.output, write, error)) {
    c.diags.emitAt("", diag::err_cannot_write_file, o.output, error);
    return finish(c.diags, o);
  }
  timer.done("write");
  return ExitOK;
}
