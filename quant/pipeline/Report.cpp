//===- Report.cpp - What a quantization chose, as text, JSON and plan ------===//
#include "quant/pipeline/Report.h"

#include "llvm/Support/JSON.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

using namespace tpcc;
using namespace tpcc::quant;

void quant::printSummary(const QuantizeResult &r, const std::string &model, const std::string &out,
                         const std::string &recipe, const std::string &cleanup,
                         const std::vector<std::string> &corrections, llvm::raw_ostream &os) {
  unsigned acts = 0, weights = 0;
  for (const TensorReport &t : r.tensors)
    if (t.quantized)
      (t.weight ? weights : acts)++;
  os << fmt::format("quantize: {} -> {} ({} calibration samples, SQNR on {})\n", model, out,
                    r.samples, r.sqnrSamples);
  os << fmt::format("  {} activation tensors and {} weights quantized\n", acts, weights);
  os << "  recipe: " << recipe << "\n";
  if (!cleanup.empty())
    os << "  clean-up: " << cleanup << "\n";
  for (const std::string &c : corrections)
    os << "  correction: " << c << "\n";
  os << fmt::format("  {:<34} {:<14} {:>4} {:<13} {:<11} {:>10} {:>8}\n", "tensor", "opset", "bits",
                    "method", "threshold", "scale", "SQNR dB");
  for (const TensorReport &t : r.tensors) {
    std::string name = t.readAsSigmoid ? "sigmoid(" + t.tensor + ")" : t.tensor;
    if (name.size() > 34)
      name = "..." + name.substr(name.size() - 31);
    std::string sqnr = t.measured ? formatDb(t.sqnr) : std::string("-");
    if (!t.quantized) {
      os << fmt::format("  {:<34} {:<14} {:>4} {:<13} {:<11} {:>10} {:>8}\n", name, "(output)", "-",
                        "float", "-", "-", sqnr);
      continue;
    }
    // A weight's blocks, and the format of their factors under a group
    // scale: "/b16", "/b16:u4", "/b16:e4m3".
    auto blockText = [](const TensorReport &t) {
      if (!t.blockFactor)
        return fmt::format("/b{}", t.block);
      ir::ScaleFormat f = *t.blockFactor;
      return fmt::format("/b{}:{}", t.block,
                         f == ir::ScaleFormat::UInt4   ? "u4"
                         : f == ir::ScaleFormat::UInt8 ? "u8"
                                                       : "e4m3");
    };
    // A floating-point element names itself (it is signed, its method symmetric
    // or power of two).
    bool fp = t.element != ir::ElementFormat::Int;
    // An MX activation: its element and blocks; its scales are the model's.
    bool mx = !t.weight && t.block;
    std::string method = mx ? fmt::format("{}/b{}", fp ? ir::toString(t.element) : "int", t.block)
                            : std::string(fp ? ir::toString(t.element) : ir::toString(t.method)) +
                                  (t.weight ? (t.block          ? blockText(t)
                                               : t.channels > 1 ? "/ch"
                                                                : "")
                                   : fp     ? ""
                                            : (t.isSigned ? " s" : " u"));
    std::string scale = mx ? std::string("-") : fmt::format("{:.4g}", t.scale);
    os << fmt::format("  {:<34} {:<14} {:>4} {:<13} {:<11} {:>10} {:>8}\n", name, t.opset, t.bits,
                      method, t.threshold, scale, sqnr);
  }
  for (const auto &[tensor, why] : r.keptFloat)
    os << fmt::format("  kept float: `{}`: {}\n", tensor, why);
  os << fmt::format("  time: calibration {:.2f} s, thresholds {:.2f} s, weights and "
                    "corrections {:.2f} s, measuring {:.2f} s\n",
                    r.seconds[0], r.seconds[1], r.seconds[2], r.seconds[3]);
}

void quant::writeReport(const QuantizeResult &r, const ReportHeader &h,
                        const std::vector<std::string> &corrections, llvm::raw_ostream &os,
                        const mixed::SearchResult *search, const plan::Plan *plan) {
  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attribute("report_version", 1);
    j.attribute("platform", h.platform);
    j.attribute("recipe", h.recipe);
    j.attribute("recipe_origin", h.recipeOrigin);
    j.attribute("model", h.model);
    j.attribute("output", h.output);
    j.attribute("calibration_samples", r.samples);
    j.attribute("sqnr_samples", r.sqnrSamples);
    j.attributeArray("corrections", [&] {
      for (const std::string &c : corrections)
        j.value(c);
    });
    j.attributeArray("kept_float", [&] {
      for (const auto &[tensor, why] : r.keptFloat)
        j.object([&] {
          j.attribute("name", tensor);
          j.attribute("reason", why);
        });
    });
    j.attributeObject("seconds", [&] {
      j.attribute("calibration", r.seconds[0]);
      j.attribute("thresholds", r.seconds[1]);
      j.attribute("weights_and_corrections", r.seconds[2]);
      j.attribute("measuring", r.seconds[3]);
      if (search) {
        j.attribute("sensitivity", search->sensitivity.seconds);
        j.attribute("solver", search->solverSeconds);
      }
    });
    if (search && plan)
      mixed::writeSearchJSON(*search, *plan, j);
    for (const StageReport *s : h.stages)
      s->writeJSON(j);
    j.attributeArray("tensors", [&] {
      for (const TensorReport &t : r.tensors)
        j.object([&] {
          auto db = [](double v) { // null: identical
            return std::isinf(v) ? llvm::json::Value(nullptr) : llvm::json::Value(v);
          };
          auto sqnr = [&] {
            if (!t.measured)
              return;
            j.attribute("sqnr_db", db(t.sqnr));
            // The float values and what the tensor's own grid does to them.
            j.attribute("rms", t.rms);
            j.attribute("max_abs", t.maxAbs);
            j.attribute("worst_sample_sqnr_db", db(t.worstSampleSqnr));
            if (t.quantized) {
              j.attribute("own_sqnr_db", db(t.ownSqnr));
              j.attribute("worst_sample_own_sqnr_db", db(t.worstSampleOwnSqnr));
              j.attribute("clipped", t.clipped);
            }
          };
          j.attribute("name", t.tensor);
          if (t.readAsSigmoid)
            j.attribute("read_as", "sigmoid");
          j.attribute("kind", t.weight                  ? "weight"
                              : t.quantized             ? "activation"
                              : t.opset == "(measured)" ? "float, measured"
                                                        : "float output");
          if (!t.quantized)
            return sqnr();
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
          if (t.block)
            j.attribute("block", t.block);
          if (t.blockFactor)
            j.attribute("block_scale", ir::toString(*t.blockFactor));
          if (t.element != ir::ElementFormat::Int)
            j.attribute("element", ir::toString(t.element));
          j.attributeArray("range", [&] {
            j.value(t.lo);
            j.value(t.hi);
          });
          sqnr();
        });
    });
  });
  os << "\n";
}

void quant::fillPlan(plan::Plan &p, const QuantizeResult &r, const ir::Recipe &recipe) {
  std::map<std::string, const QuantGrid *> grids;
  for (const ActivationQDQ &a : r.spec.activations)
    grids[a.value] = &a.grid;
  std::map<std::string, const MxActivation *> mx;
  for (const MxActivationQDQ &a : r.spec.mxActivations)
    mx[a.value] = &a.format;
  std::map<std::string, std::string> how;
  for (const TensorReport &t : r.tensors)
    if (!t.weight && t.quantized)
      how[t.tensor] = t.threshold;
  std::map<std::string, std::string> kept(r.keptFloat.begin(), r.keptFloat.end());
  for (plan::PlanTensor &t : p.tensors) {
    if (!t.quantize)
      continue;
    if (auto k = kept.find(t.value->name); k != kept.end()) {
      t.quantize = false;
      t.reason = k->second;
      continue;
    }
    if (auto m = mx.find(t.value->name); m != mx.end()) {
      // MX: the blocks as placed on the tensor's shape; no grid.
      t.bits = m->second->bits;
      t.blockAxis = m->second->axis;
      t.rank = m->second->rank;
      t.blockLength = m->second->length;
      t.statistic = "mx";
      continue;
    }
    auto g = grids.find(t.value->name);
    if (g != grids.end() && t.format.block) {
      // Blocks with no place on the tensor (quantize warned): one grid.
      t.format.block.reset();
      t.blockAxis.reset();
      t.rank = 0;
    }
    if (g == grids.end()) {
      if (recipe.quantizeActivations == false) {
        t.quantize = false;
        t.reason = "the recipe does not quantize activations";
      } else if (t.preserving && !r.withoutQuantizer.count(t.value->name) && t.producer &&
                 t.producer->node->input(0)) {
        // Its input was kept float (mask values): so is it.
        t.quantize = false;
        t.reason =
            fmt::format("preserves its unquantized input `{}`", t.producer->node->input(0)->name);
      }
      continue;
    }
    // The grid as chosen: the recipe may have changed the config's width or
    // method.
    t.bits = g->second->bits;
    t.method = g->second->method;
    t.scale = g->second->scale;
    t.zeroPoint = g->second->zeroPoint;
    t.range = std::make_pair(g->second->lo, g->second->hi);
    t.statistic = how.count(t.value->name) ? how[t.value->name] : "its input's grid";
  }
  for (plan::PlanNode &n : p.nodes) {
    for (plan::PlanWeight &w : n.weights) {
      const WeightQDQ *q = nullptr;
      for (const WeightQDQ &s : r.spec.weights)
        if (s.node == n.node->name && s.inputIndex == w.inputIndex)
          q = &s;
      if (!q) {
        if (w.quantize && (recipe.quantizeWeights == false || kept.count(w.input->name)))
          w.quantize = false;
        continue;
      }
      w.config = withRecipeOverrides(w.config, recipe);
      for (const QuantGrid &g : q->grids) {
        w.scales.push_back(g.scale);
        w.zeroPoints.push_back(g.zeroPoint);
        if (!g.lut.empty())
          w.luts.push_back(g.lut);
      }
      if (q->twoLevel) {
        w.factors = q->twoLevel->factors;
        w.groupScales = q->twoLevel->groupScales;
        w.groupAxis = q->twoLevel->axis;
      }
    }
    for (plan::PlanWeight &w : n.weights)
      for (const QuantizeResult::TrainedWeight &t : r.trainedWeights)
        if (t.node == n.node->name && t.inputIndex == w.inputIndex)
          w.trained = t.values;
    for (const auto &[node, values] : r.biases)
      if (node == n.node->name)
        n.correctedBias = values;
  }
}
