//===- QuantizeCommand.cpp - `tpcc quantize` --------------------------------===//
//
// Picks the platform, capabilities and recipe; loads the model twice (the
// float reference and the copy that becomes the QDQ model), cleans both up
// the same way (BN folding, constant folding, Identity/Dropout removal) and
// names unnamed nodes; plans the float copy; applies the recipe's
// pre-statistics corrections to both copies (and plans again); calibrates
// and chooses every grid (backends/quantize); writes the corrections and the
// QDQ rewrite into the second copy; measures each quantized tensor's SQNR against the
// float model; writes the model (and the plan and report) atomically, and
// nothing at all after an error.
//
//===----------------------------------------------------------------------===//
#include "backends/quantize/qdq/Apply.h"
#include "ir/graph/OnnxIO.h"
#include "transforms/Cleanup.h"
#include "support/AtomicFile.h"
#include "tools/tpcc/Driver.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <cmath>

using namespace tpcc;
using namespace tpcc::driver;

int driver::checkQuantizeArgs(Options &o) {
  if (o.model.empty())
    return usageError("quantize needs a model: `tpcc quantize --platform NAME --calib DATA "
                      "MODEL.onnx -o OUT.onnx`");
  if (o.output.empty() || o.output == "-")
    return usageError("quantize needs an output model: -o OUT.onnx");
  if (o.calib.empty())
    return usageError("quantize needs calibration data: --calib FILE|DIR");
  if (!o.emit.empty() || !o.format.empty() || o.verify || !o.explain.empty())
    return usageError("quantize takes none of --emit, --format, --verify, --explain");
  if (llvm::StringRef(o.platform).endswith(".tpc"))
    o.inputs.push_back(o.platform);
  if (llvm::StringRef(o.recipe).endswith(".tpc"))
    o.inputs.push_back(o.recipe);
  return -1;
}

/// The recipe: the one named, the one a .tpc file defines, or the defaults.
static bool pickRecipe(const Compilation &c, const ir::Module &m, const Options &o,
                       ir::Recipe &recipe) {
  if (o.recipe.empty())
    return true;
  if (llvm::StringRef(o.recipe).endswith(".tpc")) {
    std::vector<const ir::Recipe *> here;
    for (const ir::Recipe &r : m.recipes)
      if (r.loc.isValid() && c.sources.getName(r.loc.begin.file) == o.recipe)
        here.push_back(&r);
    if (here.size() != 1) {
      llvm::errs() << "tpcc: error: `" << o.recipe << "` defines "
                   << (here.empty() ? "no recipe" : "several recipes")
                   << "; name one with --recipe NAME and give the file as an input\n";
      return false;
    }
    recipe = *here.front();
    return true;
  }
  std::vector<std::string> names;
  for (const ir::Recipe &r : m.recipes)
    names.push_back(r.name);
  if (!lookUp("recipe", "recipes", o.recipe, names))
    return false;
  recipe = *m.findRecipe(o.recipe);
  return true;
}

/// Loads and cleans up the model; unnamed nodes get names (`Conv_3`) so the
/// two copies and the plan agree on them.
static std::unique_ptr<graph::Model> prepare(const std::string &path, DiagnosticEngine &diags,
                                             transforms::CleanupReport &report, bool warn = true) {
  std::unique_ptr<graph::Model> m = graph::loadModel(path, diags);
  if (!m || diags.hasErrors())
    return nullptr;
  // Per-axis DequantizeLinear (per-channel weights) needs opset 13.
  int64_t opset = m->opsetVersion("").value_or(1);
  if (opset < 13) {
    if (warn)
      diags.emitAt(path, diag::warn_quant_opset, opset, 13);
    m = graph::convertOpset(*m, 13, diags);
    if (!m || diags.hasErrors())
      return nullptr;
  }
  if (!transforms::cleanupModel(*m, diags, report))
    return nullptr;
  graph::Graph &g = m->graph;
  std::set<std::string> used;
  for (const auto &n : g.nodes())
    used.insert(n->name);
  for (const auto &n : g.nodes()) {
    if (!n->name.empty())
      continue;
    std::string name = n->opType + "_" + std::to_string(n->id);
    for (int k = 1; used.count(name); ++k)
      name = n->opType + "_" + std::to_string(n->id) + "_" + std::to_string(k);
    n->name = name;
    used.insert(name);
  }
  return m;
}

static std::string dB(double v) {
  return std::isinf(v) ? "inf" : fmt::format("{:.1f}", v);
}

static void printSummary(const quant::QuantizeResult &r, const std::string &model,
                         const std::string &out, const std::vector<std::string> &corrections,
                         llvm::raw_ostream &os) {
  unsigned acts = 0, weights = 0;
  for (const quant::TensorReport &t : r.tensors)
    if (t.quantized)
      (t.weight ? weights : acts)++;
  os << fmt::format("quantize: {} -> {} ({} calibration samples)\n", model, out, r.samples);
  os << fmt::format("  {} activation tensors and {} weights quantized\n", acts, weights);
  for (const std::string &c : corrections)
    os << "  correction: " << c << "\n";
  os << fmt::format("  {:<34} {:<14} {:>4} {:<13} {:<11} {:>10} {:>8}\n", "tensor", "opset",
                    "bits", "method", "threshold", "scale", "SQNR dB");
  for (const quant::TensorReport &t : r.tensors) {
    std::string name = t.tensor.size() > 34 ? "..." + t.tensor.substr(t.tensor.size() - 31)
                                            : t.tensor;
    std::string sqnr = t.measured ? dB(t.sqnr) : std::string("-");
    if (!t.quantized) {
      os << fmt::format("  {:<34} {:<14} {:>4} {:<13} {:<11} {:>10} {:>8}\n", name, "(output)",
                        "-", "float", "-", "-", sqnr);
      continue;
    }
    std::string method = std::string(ir::toString(t.method)) +
                         (t.weight ? (t.channels > 1 ? "/ch" : "") : (t.isSigned ? " s" : " u"));
    os << fmt::format("  {:<34} {:<14} {:>4} {:<13} {:<11} {:>10.4g} {:>8}\n", name, t.opset,
                      t.bits, method, t.threshold, t.scale, sqnr);
  }
  os << fmt::format("  time: calibration {:.2f} s, thresholds {:.2f} s, weights and "
                    "corrections {:.2f} s, measuring {:.2f} s\n",
                    r.seconds[0], r.seconds[1], r.seconds[2], r.seconds[3]);
}

static void writeReport(const quant::QuantizeResult &r, const Options &o,
                        const ir::Platform &p, const ir::Recipe &recipe,
                        const std::vector<std::string> &corrections, llvm::raw_ostream &os) {
  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attribute("report_version", 1);
    j.attribute("platform", p.name);
    j.attribute("recipe", recipe.name.empty() ? "(defaults)" : recipe.name);
    j.attribute("model", o.model);
    j.attribute("output", o.output);
    j.attribute("calibration_samples", r.samples);
    j.attributeArray("corrections", [&] {
      for (const std::string &c : corrections)
        j.value(c);
    });
    j.attributeObject("seconds", [&] {
      j.attribute("calibration", r.seconds[0]);
      j.attribute("thresholds", r.seconds[1]);
      j.attribute("weights_and_corrections", r.seconds[2]);
      j.attribute("measuring", r.seconds[3]);
    });
    j.attributeArray("tensors", [&] {
      for (const quant::TensorReport &t : r.tensors)
        j.object([&] {
          j.attribute("name", t.tensor);
          j.attribute("kind", t.weight ? "weight" : t.quantized ? "activation" : "float output");
          if (!t.quantized) {
            if (t.measured)
              j.attribute("sqnr_db", std::isinf(t.sqnr) ? llvm::json::Value(nullptr)
                                                        : llvm::json::Value(t.sqnr));
            return;
          }
          j.attribute("node", t.node);
          j.attribute("op_type", t.opType);
          j.attribute("opset", t.opset);
          j.attribute("config", t.config);
          j.attribute("method", ir::toString(t.method));
          j.attribute("bits", t.bits);
          j.attribute("signed", t.isSigned);
          j.attribute("threshold_method", t.threshold);
          j.attribute("scale", t.scale);
          j.attribute("zero_point", t.zeroPoint);
          j.attribute("channels", t.channels);
          j.attributeArray("range", [&] {
            j.value(t.lo);
            j.value(t.hi);
          });
          if (t.measured)
            j.attribute("sqnr_db", std::isinf(t.sqnr) ? llvm::json::Value(nullptr)
                                                      : llvm::json::Value(t.sqnr));
        });
    });
  });
  os << "\n";
}

/// Writes what the quantizer chose into the plan (for --plan-out).
static void fillPlan(plan::Plan &p, const quant::QuantizeResult &r) {
  std::map<std::string, const quant::QuantGrid *> grids;
  for (const quant::ActivationQDQ &a : r.spec.activations)
    grids[a.value] = &a.grid;
  std::map<std::string, std::string> how;
  for (const quant::TensorReport &t : r.tensors)
    if (!t.weight && t.quantized)
      how[t.tensor] = t.threshold;
  for (plan::PlanTensor &t : p.tensors) {
    auto g = grids.find(t.value->name);
    if (!t.quantize || g == grids.end())
      continue;
    t.scale = g->second->scale;
    t.zeroPoint = g->second->zeroPoint;
    t.range = std::make_pair(g->second->lo, g->second->hi);
    t.statistic = how.count(t.value->name) ? how[t.value->name] : "its input's grid";
  }
  for (plan::PlanNode &n : p.nodes) {
    for (plan::PlanWeight &w : n.weights)
      for (const quant::WeightQDQ &q : r.spec.weights)
        if (q.node == n.node->name && q.inputIndex == w.inputIndex)
          for (const quant::QuantGrid &g : q.grids) {
            w.scales.push_back(g.scale);
            w.zeroPoints.push_back(g.zeroPoint);
            if (!g.lut.empty())
              w.luts.push_back(g.lut);
          }
    for (const auto &[node, values] : r.biases)
      if (node == n.node->name)
        n.correctedBias = values;
  }
}

int driver::runQuantize(Compilation &c, const ir::Module &m, const Options &o, bool color) {
  const ir::Platform *platform = pickPlatform(c, m, o);
  if (!platform)
    return ExitUsage;
  const ir::Capabilities *caps = pickCapabilities(m, *platform, o);
  if (!caps)
    return ExitUsage;
  const ir::Framework *fw = m.findFramework(caps->framework);
  if (caps->framework != "onnx") {
    c.diags.emitAt(o.model, diag::err_quant_no_onnx_capabilities, caps->name, platform->name,
                   caps->framework);
    c.diags.print(llvm::errs(), color);
    return ExitInputErrors;
  }
  ir::Recipe recipe;
  if (!pickRecipe(c, m, o, recipe))
    return ExitUsage;

  PhaseTimer timer(o.time);
  auto fail = [&]() {
    bool io = false;
    for (const Diagnostic &d : c.diags.getDiagnostics())
      io |= d.kind == diag::err_cannot_open_file;
    c.diags.print(llvm::errs(), color);
    return io ? ExitUsage : ExitInputErrors;
  };
  transforms::CleanupReport cleanup, cleanup2;
  std::unique_ptr<graph::Model> floatModel = prepare(o.model, c.diags, cleanup);
  if (!floatModel)
    return fail();
  std::unique_ptr<graph::Model> quantModel = prepare(o.model, c.diags, cleanup2, false);
  if (!quantModel)
    return fail();
  timer.done("load");

  plan::Plan p = plan::buildPlan(m, *platform, *caps, fw, *floatModel, c.diags, o.choose);
  if (c.diags.hasErrors())
    return fail();
  timer.done("plan");

  std::unique_ptr<rt::Executor> floatEx = rt::Executor::create(*floatModel, c.diags);
  if (!floatEx)
    return fail();
  std::unique_ptr<quant::CalibrationData> data =
      quant::CalibrationData::open(o.calib, *floatEx, o.batch, c.diags);
  if (!data)
    return fail();
  std::vector<std::string> corrections;
  if (recipe.reluUnboundCorrection || recipe.activationChannelEqualization) {
    // Weight edits that keep the float model's outputs: both copies, then a
    // new plan (the Clip bounds changed) and executor.
    quant::PreCorrections pre;
    if (!quant::findPreStatisticsCorrections(p, recipe, *floatEx, *data, pre, c.diags))
      return fail();
    if (!pre.empty()) {
      floatEx.reset();
      if (!quant::applyPreStatisticsCorrections(*floatModel, pre, c.diags) ||
          !quant::applyPreStatisticsCorrections(*quantModel, pre, c.diags))
        return fail();
      DiagnosticEngine again(c.sources); // the first plan reported everything
      p = plan::buildPlan(m, *platform, *caps, fw, *floatModel, again, o.choose);
      floatEx = rt::Executor::create(*floatModel, c.diags);
      if (!floatEx)
        return fail();
      corrections = pre.describe();
    }
  }

  bool bar = o.progress == "always" ||
             (o.progress == "auto" && llvm::sys::Process::StandardErrIsDisplayed());
  std::unique_ptr<Progress> progress;
  std::string phase;
  quant::QuantizeOptions qo;
  qo.recipe = recipe;
  qo.progress = [&](const char *name, int64_t done, int64_t total) {
    if (phase != name) {
      if (progress)
        progress->finish();
      phase = name;
      progress = std::make_unique<Progress>(bar, total, std::string("samples (") + name + ")");
    }
    progress->update(done);
  };
  quant::QuantizeResult result;
  bool ok = quant::quantizePlan(p, *floatEx, *data, qo, result, c.diags);
  if (progress)
    progress->finish();
  if (!ok)
    return fail();
  timer.done("calibrate");

  for (const quant::GraphEdit &e : result.edits)
    corrections.push_back(e.describe());
  if (!quant::applyCorrections(*quantModel, result, c.diags) ||
      !quant::rewriteToQDQ(*quantModel, result.spec, c.diags) ||
      failed(graph::verifyGraph(quantModel->graph, o.output, c.diags)))
    return fail();
  timer.done("rewrite");
  std::unique_ptr<rt::Executor> quantEx = rt::Executor::create(*quantModel, c.diags);
  if (!quantEx || !quant::measureLayers(*floatEx, *quantEx, *data, 1024, result, c.diags))
    return fail();
  timer.done("measure");
  c.diags.print(llvm::errs(), color); // warnings

  std::string error;
  if (!graph::writeModel(*quantModel, o.output, error)) {
    llvm::errs() << "tpcc: error: cannot write `" << o.output << "`: " << error << "\n";
    return ExitUsage;
  }
  if (!o.planOut.empty()) {
    fillPlan(p, result);
    p.corrections = corrections;
    std::vector<Diagnostic> none;
    auto write = [&](llvm::raw_ostream &os) { plan::emitPlanJSON(p, none, c.sources, os); };
    if (!writeFileAtomically(o.planOut, write, error)) {
      llvm::errs() << "tpcc: error: cannot write `" << o.planOut << "`: " << error << "\n";
      return ExitUsage;
    }
  }
  if (!o.report.empty()) {
    auto write = [&](llvm::raw_ostream &os) {
      writeReport(result, o, *platform, recipe, corrections, os);
    };
    if (!writeFileAtomically(o.report, write, error)) {
      llvm::errs() << "tpcc: error: cannot write `" << o.report << "`: " << error << "\n";
      return ExitUsage;
    }
  }
  timer.done("write");
  printSummary(result, o.model, o.output, corrections, llvm::outs());
  noteSaturatingGroups(quantModel->graph, llvm::outs());
  return ExitOK;
}

static const char *applyUsage = R"(usage:
  tpcc apply --plan PLAN.json MODEL.onnx -o OUT.onnx
      rewrites MODEL into QDQ form as PLAN (written by `tpcc quantize
      --plan-out`, possibly edited) says; no calibration data is needed
options: --color=auto|always|never
)";

int driver::runApplyCommand(const std::vector<std::string> &args) {
  std::string planPath, model, output, color = "auto";
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto next = [&](std::string &out) {
      if (i + 1 >= args.size())
        return false;
      out = args[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      llvm::outs() << applyUsage;
      return ExitOK;
    } else if (a == "--plan") {
      if (!next(planPath))
        return usageError("--plan needs a file");
    } else if (a.rfind("--plan=", 0) == 0) {
      planPath = a.substr(7);
    } else if (a == "-o") {
      if (!next(output))
        return usageError("-o needs a file name");
    } else if (a.rfind("--color=", 0) == 0) {
      color = a.substr(8);
    } else if (!a.empty() && a[0] == '-') {
      return usageError("unknown option `" + a + "` for apply");
    } else if (model.empty()) {
      model = a;
    } else {
      return usageError("apply takes one model; found `" + model + "` and `" + a + "`");
    }
  }
  if (planPath.empty() || model.empty() || output.empty() || output == "-")
    return usageError("apply needs --plan PLAN.json, a model and -o OUT.onnx");
  bool useColor = color == "always" ||
                  (color == "auto" && llvm::sys::Process::StandardErrHasColors());
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto fail = [&](int code) {
    diags.print(llvm::errs(), useColor);
    return code;
  };
  auto text = llvm::MemoryBuffer::getFile(planPath);
  if (!text) {
    llvm::errs() << "tpcc: error: cannot read `" << planPath << "`: "
                 << text.getError().message() << "\n";
    return ExitUsage;
  }
  transforms::CleanupReport cleanup;
  std::unique_ptr<graph::Model> m = prepare(model, diags, cleanup);
  if (!m) {
    bool io = false;
    for (const Diagnostic &d : diags.getDiagnostics())
      io |= d.kind == diag::err_cannot_open_file;
    return fail(io ? ExitUsage : ExitInputErrors);
  }
  quant::QuantizeResult result;
  if (!quant::specFromPlan((*text)->getBuffer(), planPath, *m, result, diags))
    return fail(ExitInputErrors);
  quant::applyBiases(*m, result);
  if (!quant::rewriteToQDQ(*m, result.spec, diags) ||
      failed(graph::verifyGraph(m->graph, output, diags)))
    return fail(ExitInputErrors);
  std::string error;
  if (!graph::writeModel(*m, output, error)) {
    llvm::errs() << "tpcc: error: cannot write `" << output << "`: " << error << "\n";
    return ExitUsage;
  }
  diags.print(llvm::errs(), useColor);
  llvm::outs() << fmt::format("apply: {} -> {}: {} activation tensors and {} weights quantized "
                              "as `{}` says\n",
                              model, output, result.spec.activations.size(),
                              result.spec.weights.size(), planPath);
  noteSaturatingGroups(m->graph, llvm::outs());
  return ExitOK;
}
