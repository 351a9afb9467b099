//===- QuantizeCommand.cpp - `tpcc quantize` --------------------------------===//
//
// Picks the platform, capabilities and recipe, hands the rest to the
// quantization pipeline (quant/pipeline/Pipeline.h) and prints its
// summary. Nothing is written after an error.
//
//===----------------------------------------------------------------------===//
#include "quant/learn/gptq/Gptq.h"
#include "quant/learn/gptq/SecondOrder.h"
#include "quant/pipeline/Pipeline.h"
#include "quant/pipeline/QualityTarget.h"
#include "quant/pipeline/Report.h"
#include "runtime/eval/Evaluate.h"
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

/// The kernel rounding `--gptq` / `--gptq-epochs` or the recipe's `gptq`
/// block asks for, as a stage of `r`.
static LogicalResult gptqRequest(Compilation &c, const Options &o, quant::QuantizeRequest &r) {
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
    r.stages.push_back(std::make_shared<quant::SecondOrderStage>(s));
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
  r.stages.push_back(std::make_shared<quant::GradientGptqStage>(std::move(g)));
  return success();
}

int driver::runQuantize(Compilation &c, const ir::Module &m, const Options &o) {
  return quantizeWith(c, m, o, nullptr);
}

int driver::quantizeWith(Compilation &c, const ir::Module &m, const Options &o,
                         const std::function<LogicalResult(quant::QuantizeRequest &)> &extend) {
  quant::QuantizeRequest r;
  r.module = &m;
  r.platform = pickPlatform(c, m, o);
  r.capabilities = r.platform ? m.capabilitiesFor(*r.platform, o.capabilities, c.diags) : nullptr;
  if (!r.capabilities || failed(pickRecipe(c, m, o, r.platform, r.recipe, r.recipeOrigin)))
    return finish(c.diags, o);
  r.model = o.model;
  r.output = o.output;
  r.planOut = o.planOut;
  r.matmulNBits = o.matmulNBits;
  r.report = o.report;
  r.calib = o.calib;
  r.batch = o.batch ? o.batch : 32;
  r.measureSamples = o.sqnrSamples;
  r.measureAlso = o.minSqnrAt;
  r.choose = o.choose;
  r.fixedInputs = o.fixedInputs;
  r.dims = o.dims;
  r.budgets = o.budgets;
  if (failed(gptqRequest(c, o, r)))
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
  // A training stage's bar, one per epoch, starts on a line of its own: the
  // calibration bar before it ends first.
  std::unique_ptr<Progress> steps;
  r.training = [&](const quant::TrainingProgress &p) {
    if (progress) {
      progress->finish();
      progress.reset();
      phase.clear();
    }
    if (!steps || p.step == 1)
      steps = std::make_unique<Progress>(
          o.showProgress(), p.steps,
          fmt::format("steps ({}, epoch {} of {})", p.stage, p.epoch, p.epochs));
    steps->update(p.step, fmt::format("loss {:.5g}, {:.0f} samples/s", p.loss, p.samplesPerSecond));
    if (p.step == p.steps)
      steps->finish();
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
  quant::printSummary(out.result, o.model, o.output, quant::describeRecipe(r),
                      out.cleanup.describe(), out.corrections, llvm::outs());
  for (const std::unique_ptr<quant::StageReport> &s : out.stages)
    s->print(llvm::outs());
  if (out.search)
    quant::mixed::printSearch(*out.search, out.plan, llvm::outs());
  if (o.minSqnr)
    quant::printTarget(target, llvm::outs());
  llvm::outs() << rt::saturationNote(*out.quantModel);
  return ExitOK;
}
