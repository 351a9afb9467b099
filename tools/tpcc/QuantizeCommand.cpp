//===- QuantizeCommand.cpp - `tpcc quantize` and `tpcc apply` ----------------===//
//
// Picks the platform, capabilities and recipe, hands the rest to the
// quantization pipeline (quant/pipeline/Pipeline.h) and prints its
// summary. Nothing is written after an error.
//
//===----------------------------------------------------------------------===//
#include "quant/pipeline/Pipeline.h"
#include "quant/pipeline/QualityTarget.h"
#include "quant/pipeline/Report.h"
#include "runtime/Evaluate.h"
#include "tools/tpcc/Driver.h"

#include <fmt/format.h>

using namespace tpcc;
using namespace tpcc::driver;

LogicalResult driver::checkQuantizeArgs(Options &o) {
  if (o.model.empty())
    return usageError("quantize needs a model: `tpcc quantize --platform NAME --calib DATA "
                      "MODEL.onnx -o OUT.onnx`");
  if (o.output.empty() || o.output == "-")
    return usageError("quantize needs an output model: -o OUT.onnx");
  if (o.calib.empty())
    return usageError("quantize needs calibration data: --calib FILE|DIR");
  if (!o.minSqnr && !o.minSqnrAt.empty())
    return usageError("--min-sqnr-at says where the quality target applies: give the target "
                      "too (--min-sqnr DB)");
  if (o.minSqnr && o.budgets.enabled)
    return usageError("--min-sqnr and the budgets (--weights-memory, ...) both choose the "
                      "candidates: give one of them");
  return completeQuantizeArgs(o);
}

LogicalResult driver::completeQuantizeArgs(Options &o) {
  // A fixed input is a constant: data for it would have no input to feed.
  for (const std::string &c : o.calib)
    for (const auto &[name, value] : o.fixedInputs)
      if (llvm::StringRef(c).startswith(name + "="))
        return usageError(fmt::format("--calib {}: input `{}` is fixed (--fix-input {}={}) and "
                                      "takes no data",
                                      c, name, name, value));
  // A platform or recipe given as a file is compiled with the inputs.
  if (llvm::StringRef(o.platform).endswith(".tpc"))
    o.inputs.push_back(o.platform);
  if (llvm::StringRef(o.recipe).endswith(".tpc"))
    o.inputs.push_back(o.recipe);
  return success();
}

LogicalResult driver::checkApplyArgs(Options &o) {
  if (o.planFile.empty() || o.model.empty() || o.output.empty() || o.output == "-")
    return usageError("apply needs --plan PLAN.json, a model and -o OUT.onnx");
  return success();
}

/// The kernel rounding `--gptq` / `--gptq-epochs` or the recipe's `gptq`
/// block asks for, into `r` (the progress bar of gradient GPTQ in `bar`).
static LogicalResult gptqRequest(Compilation &c, const Options &o, quant::QuantizeRequest &r,
                                 std::unique_ptr<Progress> &bar) {
  const ir::Gptq &gq = r.recipe.gptq;
  std::optional<ir::GptqMethod> method = o.gptq.empty() ? gq.method : ir::parseGptqMethod(o.gptq);
  if (!method && o.gptqEpochs)
    method = ir::GptqMethod::SoftRounding; // MCT's default method
  if (!method)
    return success();
  if (*method == ir::GptqMethod::SecondOrder) {
    if (o.gptqEpochs)
      return c.diags.emitAt("", diag::err_usage,
                            "--gptq-epochs is for --gptq soft_rounding or ste; second-order "
                            "rounding takes no epochs");
    quant::SecondOrderSettings s;
    s.dampening = gq.dampening;
    s.actOrder = gq.actOrder;
    r.secondOrder = s;
    return success();
  }
  quant::GptqOptions g;
  std::optional<int64_t> epochs = o.gptqEpochs ? o.gptqEpochs : gq.epochs;
  if (!epochs)
    return c.diags.emitAt("", diag::err_usage,
                          fmt::format("--gptq {} trains for a number of epochs the user gives: "
                                      "--gptq-epochs N, or the recipe's gptq.epochs",
                                      ir::toString(*method)));
  g.rounding = *method == ir::GptqMethod::Ste ? quant::QuantizerKind::SteRounding
                                              : quant::QuantizerKind::SoftRounding;
  g.epochs = *epochs;
  g.lr = gq.lr;
  g.biasLr = gq.biasLr;
  g.trainBias = gq.biasLr > 0;
  g.hessianWeights = gq.hessianWeights;
  g.regularization = gq.regularization;
  g.perSampleLoss = gq.perSampleLoss;
  g.gradualActivation = gq.gradualActivation;
  g.minThreshold = r.recipe.minThreshold;
  bool show = o.showProgress();
  g.progress = [&bar, show, epochs = *epochs](int64_t epoch, int64_t step, int64_t steps,
                                              double loss) {
    if (!bar || step == 1)
      bar = std::make_unique<Progress>(show, steps,
                                       fmt::format("steps (GPTQ epoch {} of {})", epoch, epochs));
    bar->update(step, fmt::format("loss {:.5f}", loss));
    if (step == steps)
      bar->finish();
  };
  r.gradientGptq = std::move(g);
  return success();
}

int driver::runQuantize(Compilation &c, const ir::Module &m, const Options &o) {
  return quantizeWith(c, m, o, nullptr, nullptr);
}

int driver::quantizeWith(Compilation &c, const ir::Module &m, const Options &o,
                         const std::function<LogicalResult(quant::QuantizeRequest &)> &extend,
                         const std::function<void()> &summary) {
  quant::QuantizeRequest r;
  r.module = &m;
  r.platform = pickPlatform(c, m, o);
  r.capabilities = r.platform ? m.capabilitiesFor(*r.platform, o.capabilities, c.diags) : nullptr;
  if (!r.capabilities || failed(pickRecipe(c, m, o, r.recipe)))
    return finish(c.diags, o);
  r.model = o.model;
  r.output = o.output;
  r.planOut = o.planOut;
  r.report = o.report;
  r.calib = o.calib;
  r.batch = o.batch ? o.batch : 32;
  r.measureSamples = o.sqnrSamples;
  r.measureAlso = o.minSqnrAt;
  r.choose = o.choose;
  r.fixedInputs = o.fixedInputs;
  r.budgets = o.budgets;
  std::unique_ptr<Progress> gptqBar;
  if (failed(gptqRequest(c, o, r, gptqBar)))
    return finish(c.diags, o);
  PhaseTimer timer(o.time);
  r.phaseDone = [&](const char *phase) { timer.done(phase); };
  std::unique_ptr<Progress> progress;
  std::string phase;
  r.progress = [&](const char *name, int64_t done, int64_t total) {
    if (phase != name) {
      if (progress)
        progress->finish();
      phase = name;
      progress = std::make_unique<Progress>(o.showProgress(), total,
                                            std::string("samples (") + name + ")");
    }
    progress->update(done);
  };
  // Gradient GPTQ's bar starts on a line of its own: the calibration bar
  // before it ends first.
  if (r.gradientGptq && r.gradientGptq->progress)
    r.gradientGptq->progress = [&, inner = r.gradientGptq->progress](int64_t epoch, int64_t step,
                                                                     int64_t steps, double loss) {
      if (progress) {
        progress->finish();
        progress.reset();
        phase.clear();
      }
      inner(epoch, step, steps, loss);
    };
  if (extend && failed(extend(r)))
    return finish(c.diags, o);
  quant::QuantizeOutcome out;
  quant::TargetResult target;
  LogicalResult ok = o.minSqnr ? quant::quantizeToTarget(r, *o.minSqnr, out, target, c.diags)
                               : quant::quantizeModel(r, out, c.diags);
  if (progress)
    progress->finish();
  if (failed(ok) || failed(quant::writeOutcome(r, out, c.diags)))
    return finish(c.diags, o);
  finish(c.diags, o); // warnings
  timer.done("write");
  quant::printSummary(out.result, o.model, o.output, out.cleanup.describe(), out.corrections,
                      llvm::outs());
  if (out.gptq)
    quant::printSecondOrder(*out.gptq, llvm::outs());
  if (out.gradientGptq && r.gradientGptq)
    quant::printGradientGptq(*out.gradientGptq, *r.gradientGptq, llvm::outs());
  if (out.search)
    quant::mixed::printSearch(*out.search, out.plan, llvm::outs());
  if (o.minSqnr)
    quant::printTarget(target, llvm::outs());
  if (summary)
    summary();
  llvm::outs() << rt::saturationNote(*out.quantModel);
  return ExitOK;
}

int driver::runApply(const Options &o) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  quant::QuantizeResult result;
  std::unique_ptr<graph::Model> model;
  if (failed(quant::applyPlan(o.planFile, o.model, o.output, result, model, diags)))
    return finish(diags, o);
  finish(diags, o); // warnings
  llvm::outs() << fmt::format("apply: {} -> {}: {} activation tensors and {} weights quantized "
                              "as `{}` says\n",
                              o.model, o.output, result.spec.activations.size(),
                              result.spec.weights.size(), o.planFile);
  llvm::outs() << rt::saturationNote(*model);
  return ExitOK;
}
