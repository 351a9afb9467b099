//===- Pipeline.cpp - `tpcc quantize` and `tpcc apply` as library calls ------===//
#include "quant/pipeline/Pipeline.h"
#include "quant/pipeline/ThresholdChoice.h"

#include "ir/graph/OnnxIO.h"
#include "plan/Resources.h"
#include "quant/core/format/TwoLevel.h"
#include "quant/pipeline/Report.h"
#include "quant/ptq/Measure.h"
#include "quant/ptq/corrections/Corrections.h"
#include "quant/ptq/corrections/Replay.h"
#include "quant/ptq/qdq/Apply.h"
#include "quant/ptq/qdq/Finish.h"
#include "quant/ptq/qdq/QDQ.h"
#include "quant/search/Diagnose.h"
#include "support/AtomicFile.h"

#include "llvm/Support/MemoryBuffer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

using namespace tpcc;
using namespace tpcc::quant;

const char *quant::toString(RecipeOrigin o) {
  switch (o) {
  case RecipeOrigin::None:
    return "none";
  case RecipeOrigin::Platform:
    return "platform";
  case RecipeOrigin::Flag:
    return "--recipe";
  }
  return "none";
}

std::string quant::describeRecipe(const QuantizeRequest &r) {
  switch (r.recipeOrigin) {
  case RecipeOrigin::Platform:
    return fmt::format("{} (the default of platform {}; `--recipe none` for the language's "
                       "defaults)",
                       r.recipe.name, r.platform->name);
  case RecipeOrigin::Flag:
    return r.recipe.name;
  case RecipeOrigin::None:
    break;
  }
  return "none (the language's defaults)";
}

std::string quant::quantizedOperators(const graph::Model &m) {
  std::map<std::string, int64_t> count;
  const graph::Node *first = nullptr;
  for (const graph::Node *n : m.graph.topologicalOrder()) {
    llvm::StringRef op = n->opType;
    bool onnx = n->domain.empty() || n->domain == "ai.onnx", ms = n->domain == "com.microsoft";
    bool quantized =
        (onnx || ms) && (op.contains_insensitive("quantize") || op.startswith("QLinear") ||
                         op.endswith("Integer") || op.endswith("IntegerToFloat") ||
                         (ms && (op == "QGemm" || op == "QAttention")));
    if (!quantized)
      continue;
    ++count[(ms ? "com.microsoft." : "") + n->opType];
    first = first ? first : n;
  }
  if (count.empty())
    return "";
  std::vector<std::pair<std::string, int64_t>> byCount(count.begin(), count.end());
  std::stable_sort(byCount.begin(), byCount.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  std::string s;
  for (const auto &[op, k] : byCount)
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k, op);
  return s + fmt::format(" (first: `{}`)", first->displayName());
}

void quant::warnSubgraphs(const graph::Model &m, DiagnosticEngine &diags) {
  std::map<std::string, int64_t> holders;
  int64_t inside = 0;
  const graph::Node *first = nullptr;
  for (const graph::Node *n : m.graph.topologicalOrder())
    if (n->hasSubgraphs()) {
      ++holders[n->opType];
      inside += graph::subgraphNodeCount(*n);
      first = first ? first : n;
    }
  if (!first)
    return;
  std::string which;
  for (const auto &[op, k] : holders)
    which += fmt::format("{}{} {} node{}", which.empty() ? "" : ", ", k, op, k == 1 ? "" : "s");
  diags.emitAt(m.path, diag::warn_plan_subgraphs, which, inside, first->displayName());
}

std::unique_ptr<graph::Model> quant::prepareModel(const std::string &path, DiagnosticEngine &diags,
                                                  bool warn, transforms::CleanupReport *cleanup,
                                                  const transforms::FixedInputs &fixed,
                                                  const graph::DimValues &dims) {
  graph::LoadOptions options;
  options.widenFloat16 = true;
  options.notes = warn;
  std::unique_ptr<graph::Model> m = graph::loadModel(path, diags, options);
  if (!m || diags.hasErrors())
    return nullptr;
  if (std::string ops = quantizedOperators(*m); !ops.empty()) {
    diags.emitAt(path, diag::err_quant_already_quantized, ops);
    return nullptr;
  }
  int64_t opset = m->opsetVersion("").value_or(1);
  if (opset < 13) {
    if (warn)
      diags.emitAt(path, diag::warn_quant_opset, opset, 13);
    m = graph::convertOpset(*m, 13, diags);
    if (!m || diags.hasErrors())
      return nullptr;
  }
  // After the conversion, which loads the model again: the inputs keep the
  // names of the dimensions given sizes (calibration errors name them).
  if (!dims.empty() && failed(graph::bindDims(*m, dims, diags)))
    return nullptr;
  transforms::CleanupReport report;
  report.fixed = fixed;
  report.dims = dims;
  if (failed(transforms::fixInputs(*m, fixed, diags)) ||
      failed(transforms::cleanupModel(*m, diags, report)))
    return nullptr;
  if (cleanup)
    *cleanup = report;
  return m;
}

namespace {
void phase(const QuantizeRequest &r, const char *name) {
  if (r.phaseDone)
    r.phaseDone(name);
}

/// The recipe's weight edits that keep the float model's outputs (ReLU
/// bounds, channel equalization, smoothing): into both copies, then a new plan (the
/// Clip bounds changed) and a new float executor.
LogicalResult preStatisticsCorrections(const QuantizeRequest &r, const ir::Framework *fw,
                                       QuantizeOutcome &out, std::unique_ptr<rt::Executor> &floatEx,
                                       CalibrationData &data, DiagnosticEngine &diags) {
  if (!r.recipe.reluUnboundCorrection && !r.recipe.activationChannelEqualization &&
      !r.recipe.smoothQuant.enabled && !r.recipe.awq.enabled)
    return success();
  PreCorrections pre;
  if (failed(findPreStatisticsCorrections(out.plan, r.recipe, *floatEx, data, pre, diags)))
    return failure();
  if (pre.empty())
    return success();
  floatEx.reset();
  if (failed(applyPreStatisticsCorrections(*out.floatModel, pre, diags)) ||
      failed(applyPreStatisticsCorrections(*out.quantModel, pre, diags)))
    return failure();
  DiagnosticEngine again(diags.getSourceManager()); // the first plan reported everything
  out.plan = plan::buildPlan(*r.module, *r.platform, *r.capabilities, fw, *out.floatModel, again,
                             r.choose);
  floatEx = rt::Executor::create(*out.floatModel, diags);
  if (!floatEx)
    return failure();
  out.corrections = pre.describe();
  out.preCorrections = std::move(pre);
  return success();
}

/// Warns when `m` holds FP8 Q/DQ pairs, which ONNX Runtime 1.30 loads only
/// at its basic optimization level or below.
void warnOrtFp8(const graph::Model &m, const std::string &where, DiagnosticEngine &diags) {
  auto fp8 = [](const graph::Value *v) {
    return v && (v->type.elem == graph::ElemType::Float8E4M3FN ||
                 v->type.elem == graph::ElemType::Float8E5M2 ||
                 (v->constant && (v->constant->elem == graph::ElemType::Float8E4M3FN ||
                                  v->constant->elem == graph::ElemType::Float8E5M2)));
  };
  int64_t count = 0;
  for (const auto &n : m.graph.nodes())
    if (n->domain.empty() && ((n->opType == "DequantizeLinear" && fp8(n->input(0))) ||
                              (n->opType == "QuantizeLinear" && fp8(n->outputs[0]))))
      ++count;
  if (count)
    diags.emitAt(where, diag::warn_quant_ort_fp8, count);
}

/// Every candidate config of a planned node quantizes with the formats the
/// quantizer calibrates (language.md "Number formats"). Another format is
/// an error at the config that gives it, also when it is only a
/// mixed-precision candidate.
LogicalResult checkFormats(const plan::Plan &plan, DiagnosticEngine &diags) {
  std::set<const ir::OpConfig *> seen;
  bool ok = true;
  auto config = [&](const ir::OpConfig &c) {
    if (!seen.insert(&c).second)
      return;
    std::set<std::string> said; // a format given twice (a slot and the default) once
    ir::forEachFormat(c, [&](const std::string &tensors, const ir::FormatConfig &f, int bits,
                             ir::QuantMethod method) {
      // Calibrated: weights of any element, in blocks or not, with a
      // single-level scale of any format, or symmetric blocks with uint4,
      // uint8 or fp8_e4m3 factors under their group's scale
      // (format/TwoLevel.h); activations of integer or FP8 elements per
      // tensor, or in MX blocks (E8M0 scales the model computes:
      // ptq/qdq/Mx.h). An FP4 activation would need an FP4 QuantizeLinear
      // or Cast, which ONNX Runtime 1.30 does not run.
      bool weights = tensors != "activations";
      bool fp4 = f.element == ir::ElementFormat::Fp4E2M1;
      bool mx = f.block && f.scale == ir::ScaleFormat::E8M0;
      bool twoLevel = f.blockScale && quant::isFactorFormat(*f.blockScale) &&
                      method == ir::QuantMethod::Symmetric;
      if (weights ? !f.blockScale || twoLevel : !f.blockScale && !fp4 && (!f.block || mx))
        return;
      std::string text = ir::formatText(f, bits);
      if (f.blockScale && method != ir::QuantMethod::Symmetric)
        text = fmt::format("`{}` {}", ir::toString(method), text);
      if (!said.insert(tensors + text).second)
        return;
      diags.emit(c.loc, diag::err_quant_format, c.name.empty() ? "(inline)" : c.name,
                 "its " + tensors, text);
      ok = false;
    });
  };
  for (const plan::PlanNode &pn : plan.nodes)
    if (pn.options.options)
      for (const ir::OpConfig &c : pn.options.options->configs)
        config(c);
  for (const plan::FusingGroup &g : plan.groups)
    if (g.pattern->config)
      config(*g.pattern->config);
  return success(ok);
}

/// Prepares the float model and plans it with the user's choices (the
/// framework the capabilities bind goes to `fw`).
LogicalResult loadAndPlan(const QuantizeRequest &r, QuantizeOutcome &out, const ir::Framework *&fw,
                          DiagnosticEngine &diags) {
  if (r.capabilities->framework != "onnx")
    return diags.emitAt(r.model, diag::err_quant_no_onnx_capabilities, r.capabilities->name,
                        r.platform->name, r.capabilities->framework);
  fw = r.module->findFramework(r.capabilities->framework);
  out.floatModel = prepareModel(r.model, diags, /*warn=*/true, &out.cleanup, r.fixedInputs, r.dims);
  if (!out.floatModel)
    return failure();
  warnSubgraphs(*out.floatModel, diags);
  phase(r, "load");
  out.plan = plan::buildPlan(*r.module, *r.platform, *r.capabilities, fw, *out.floatModel, diags,
                             r.choose);
  if (diags.hasErrors() || failed(checkFormats(out.plan, diags)))
    return failure();
  phase(r, "plan");
  return success();
}

/// The mixed-precision search when budgets ask for it: the plan is built
/// again with the user's choices and the search's, and records the search.
LogicalResult mixedPrecision(const QuantizeRequest &r, const ir::Framework *fw,
                             QuantizeOutcome &out, rt::Executor &floatEx, CalibrationData &data,
                             DiagnosticEngine &diags) {
  mixed::Settings settings =
      mixed::resolveSettings(r.recipe, r.budgets, *r.platform, diags, r.model);
  if (!settings.active())
    return success();
  std::vector<bool> fixed(out.plan.nodes.size(), false);
  for (const auto &[name, config] : r.choose)
    for (const plan::PlanNode &pn : out.plan.nodes)
      if (pn.node->displayName() == name)
        fixed[pn.node->id] = true;
  mixed::SearchResult result;
  if (failed(mixed::searchPrecision(out.plan, settings, fixed, r.recipe, floatEx, data, r.progress,
                                    result, diags)))
    return failure();
  plan::Choices choices = r.choose;
  choices.insert(choices.end(), result.choices.begin(), result.choices.end());
  out.plan =
      plan::buildPlan(*r.module, *r.platform, *r.capabilities, fw, *out.floatModel, diags, choices);
  if (diags.hasErrors())
    return failure();
  out.plan.mixedPrecision = mixed::record(result, settings);
  out.search = std::move(result);
  phase(r, "mixed precision");
  return success();
}
} // namespace

LogicalResult quant::quantizeModel(const QuantizeRequest &r, QuantizeOutcome &out,
                                   DiagnosticEngine &diags) {
  if (r.recipe.activationThresholdChoices.size() > 1)
    return quantizeChoosingThreshold(r, out, diags);
  const ir::Framework *fw = nullptr;
  if (failed(loadAndPlan(r, out, fw, diags)))
    return failure();
  out.quantModel = prepareModel(r.model, diags, /*warn=*/false, nullptr, r.fixedInputs, r.dims);
  if (!out.quantModel)
    return failure();

  std::unique_ptr<rt::Executor> floatEx = rt::Executor::create(*out.floatModel, diags);
  if (!floatEx)
    return failure();
  std::unique_ptr<CalibrationData> data = CalibrationData::open(r.calib, *floatEx, r.batch, diags);
  if (!data || failed(preStatisticsCorrections(r, fw, out, floatEx, *data, diags)) ||
      failed(mixedPrecision(r, fw, out, *floatEx, *data, diags)) ||
      failed(plan::checkPlatformMemory(out.plan, diags)))
    return failure();

  QuantizeOptions qo;
  qo.recipe = r.recipe;
  qo.progress = r.progress;
  if (out.search)
    qo.stats = &out.search->stats;
  QuantizeResult &result = out.result;
  if (failed(quantizePlan(out.plan, *floatEx, *data, qo, result, diags)))
    return failure();
  phase(r, "calibrate");

  for (const GraphEdit &e : result.edits)
    out.corrections.push_back(e.describe());
  if (failed(applyCorrections(*out.quantModel, result, diags)))
    return failure();
  StageContext ctx{*out.quantModel, result, out.plan, *floatEx, *data, r.progress, r.training};
  for (const std::shared_ptr<const Stage> &stage : r.stages) {
    std::unique_ptr<StageReport> report;
    if (failed(stage->run(ctx, report, diags)))
      return failure();
    out.stages.push_back(std::move(report));
    phase(r, stage->name());
  }
  fitBiasesInInt32(*out.quantModel, result.spec);
  result.spec.matmulNBits = r.matmulNBits;
  if (failed(rewriteToQDQ(*out.quantModel, result.spec, diags)) ||
      failed(graph::verifyGraph(out.quantModel->graph, r.output, diags)))
    return failure();
  warnOrtFp8(*out.quantModel, r.output, diags);
  phase(r, "rewrite");
  std::unique_ptr<rt::Executor> quantEx = rt::Executor::create(*out.quantModel, diags);
  if (!quantEx || failed(measureLayers(*floatEx, *quantEx, *data, r.measureSamples, result, diags,
                                       r.measureAlso)))
    return failure();
  warnPoorTensors(result, out.plan, r.model, diags);
  phase(r, "measure");
  fillPlan(out.plan, result, r.recipe);
  out.plan.corrections = recordCorrections(out.preCorrections, result);
  out.plan.fixedInputs = r.fixedInputs;
  out.plan.dims = r.dims;
  return success();
}

LogicalResult quant::searchPlan(const QuantizeRequest &r, QuantizeOutcome &out,
                                DiagnosticEngine &diags) {
  const ir::Framework *fw = nullptr;
  if (failed(loadAndPlan(r, out, fw, diags)))
    return failure();
  std::unique_ptr<rt::Executor> floatEx = rt::Executor::create(*out.floatModel, diags);
  if (!floatEx)
    return failure();
  std::unique_ptr<CalibrationData> data = CalibrationData::open(r.calib, *floatEx, r.batch, diags);
  if (!data || failed(mixedPrecision(r, fw, out, *floatEx, *data, diags)))
    return failure();
  out.plan.dims = r.dims;
  return success();
}

LogicalResult quant::writeOutcome(const QuantizeRequest &r, const QuantizeOutcome &out,
                                  DiagnosticEngine &diags) {
  std::string error;
  if (!graph::writeModel(*out.quantModel, r.output, error))
    return diags.emitAt("", diag::err_cannot_write_file, r.output, error);
  if (!r.planOut.empty()) {
    std::vector<Diagnostic> none;
    auto write = [&](llvm::raw_ostream &os) {
      plan::emitPlanJSON(out.plan, none, diags.getSourceManager(), os);
    };
    if (!writeFileAtomically(r.planOut, write, error))
      return diags.emitAt("", diag::err_cannot_write_file, r.planOut, error);
  }
  if (!r.report.empty()) {
    ReportHeader h{r.platform->name,
                   r.recipe.name.empty() ? "(defaults)" : r.recipe.name,
                   r.model,
                   r.output,
                   {}};
    for (const std::unique_ptr<StageReport> &s : out.stages)
      h.stages.push_back(s.get());
    h.recipeOrigin = toString(r.recipeOrigin);
    auto write = [&](llvm::raw_ostream &os) {
      writeReport(out.result, h, out.corrections, os, out.search ? &*out.search : nullptr,
                  &out.plan);
    };
    if (!writeFileAtomically(r.report, write, error))
      return diags.emitAt("", diag::err_cannot_write_file, r.report, error);
  }
  return success();
}

LogicalResult quant::applyPlan(const std::string &planPath, const std::string &modelPath,
                               const std::string &outputPath, QuantizeResult &result,
                               std::unique_ptr<graph::Model> &model, DiagnosticEngine &diags,
                               bool matmulNBits) {
  auto text = llvm::MemoryBuffer::getFile(planPath);
  if (!text)
    return diags.emitAt("", diag::err_cannot_open_file, planPath, text.getError().message());
  transforms::FixedInputs fixed;
  graph::DimValues dims;
  if (failed(specializationOfPlan((*text)->getBuffer(), planPath, fixed, dims, diags)))
    return failure();
  model = prepareModel(modelPath, diags, /*warn=*/true, nullptr, fixed, dims);
  if (!model)
    return failure();
  if (failed(specFromPlan((*text)->getBuffer(), planPath, *model, result, diags)))
    return failure();
  if (failed(applyCorrections(*model, result, diags)) ||
      failed(applyTrainedWeights(*model, result, diags)))
    return failure();
  fitBiasesInInt32(*model, result.spec);
  result.spec.matmulNBits = matmulNBits;
  if (failed(rewriteToQDQ(*model, result.spec, diags)) ||
      failed(graph::verifyGraph(model->graph, outputPath, diags)))
    return failure();
  warnOrtFp8(*model, outputPath, diags);
  std::string error;
  if (!graph::writeModel(*model, outputPath, error))
    return diags.emitAt("", diag::err_cannot_write_file, outputPath, error);
  return success();
}
