//===- RecipeResolver.cpp - Recipe declarations to IR ---------------------===//
//
// Fields (defaults in ir::Recipe):
//   activation_threshold, weights_threshold   no_clipping | mse | mae | kl | lp
//   lp                                        a positive number
//   bias_correction, relu_unbound_correction,
//   activation_channel_equalization, input_scaling          booleans
//   shift_negative.{enabled, ratio, recompute_threshold}    ratio in [0, 1]
//   smooth_quant.{enabled, alpha}, awq.{enabled, alpha}
//                                             alpha in [0, 1] (absent: searched)
//   z_threshold                               a positive number or `inf`
//   min_threshold                             a positive number (`2^-16`)
//   mixed_precision.{enabled, weights_memory, activation_memory, total_memory,
//     bops, images, distance, refine, time_limit, verify}  budgets are quantities
//     (FieldBlock readBudget); any budget enables the search, `enabled: false`
//     turns it off and drops the budgets (with a warning for those it sets)
//   finetune.{epochs (1..100000), batch (1..65536), lr (positive),
//     weight_decay (0..1), quantizer (ste | lsq), seed (0..2^32-1)}
//   gptq.{method (soft_rounding, ste, second_order), dampening (positive, at
//   most 10), act_order, epochs (1..100000), lr (positive), bias_lr (0..1),
//   hessian_weights, regularization (0..1e6), per_sample_loss,
//   gradual_activation}
// and the overrides of the platform's choices, each with a warning:
//   activation_bits (1..16), weights_bits (1..32), activation_method (not a
//   LUT method), weights_method, per_channel, quantize_activations,
//   quantize_weights.
//
//===----------------------------------------------------------------------===//
#include "passes/RecipeResolver.h"

#include "passes/FieldBlock.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace tpcc;
using namespace tpcc::passes;

namespace {

const char *const recipeFields[] = {"activation_threshold",
                                    "weights_threshold",
                                    "lp",
                                    "bias_correction",
                                    "shift_negative",
                                    "relu_unbound_correction",
                                    "activation_channel_equalization",
                                    "smooth_quant",
                                    "awq",
                                    "input_scaling",
                                    "z_threshold",
                                    "min_threshold",
                                    "activation_bits",
                                    "weights_bits",
                                    "activation_method",
                                    "weights_method",
                                    "per_channel",
                                    "quantize_activations",
                                    "quantize_weights",
                                    "mixed_precision",
                                    "finetune",
                                    "gptq"};
const char *const shiftNegativeFields[] = {"enabled", "ratio", "recompute_threshold"};
const char *const scalingFields[] = {"enabled", "alpha"};
const char *const mixedPrecisionFields[] = {
    "enabled",  "weights_memory", "activation_memory", "total_memory", "bops", "images",
    "distance", "refine",         "time_limit",        "verify"};
const char *const finetuneFields[] = {"epochs", "batch", "lr", "weight_decay", "quantizer", "seed"};
const char *const gptqFields[] = {
    "method",  "dampening",       "act_order",      "epochs",          "lr",
    "bias_lr", "hessian_weights", "regularization", "per_sample_loss", "gradual_activation"};
const ir::GptqMethod allGptqMethods[] = {ir::GptqMethod::SoftRounding, ir::GptqMethod::Ste,
                                         ir::GptqMethod::SecondOrder};
const ir::FinetuneQuantizer allFinetuneQuantizers[] = {ir::FinetuneQuantizer::Ste,
                                                       ir::FinetuneQuantizer::Lsq};
const ir::MixedDistance allDistances[] = {ir::MixedDistance::Avg, ir::MixedDistance::LastLayer,
                                          ir::MixedDistance::Hessian};
/// The largest `mixed_precision.images`.
constexpr int64_t kMaxImages = 100000;
/// The most ILP solutions `mixed_precision.verify` runs as whole models.
constexpr int64_t kMaxVerify = 1000;
const ir::ThresholdMethod allThresholds[] = {
    ir::ThresholdMethod::NoClipping, ir::ThresholdMethod::MSE, ir::ThresholdMethod::MAE,
    ir::ThresholdMethod::KL,         ir::ThresholdMethod::LP,  ir::ThresholdMethod::HMSE};
const ir::QuantMethod allMethods[] = {ir::QuantMethod::PowerOfTwo, ir::QuantMethod::Symmetric,
                                      ir::QuantMethod::Uniform, ir::QuantMethod::LutPot,
                                      ir::QuantMethod::LutSym};

/// The platform choice each override field forces, for the warning.
const char *overriddenChoice(llvm::StringRef field) {
  return llvm::StringSwitch<const char *>(field)
      .Case("activation_bits", "activation bit width")
      .Case("weights_bits", "weight bit width")
      .Case("activation_method", "activation quantization method")
      .Case("weights_method", "weight quantization method")
      .Case("per_channel", "per-channel weight quantization")
      .Case("quantize_activations", "which activations are quantized")
      .Case("quantize_weights", "which weights are quantized")
      .Default(nullptr);
}

class RecipeBuilder {
public:
  RecipeBuilder(Compilation &c, ir::Recipe &r) : c(c), r(r) {}

  void apply(const FlatField &f) {
    llvm::StringRef name = f.name(0);
    if (name == "shift_negative")
      return applyShiftNegative(f);
    if (name == "smooth_quant")
      return applyScaling(f, r.smoothQuant);
    if (name == "awq")
      return applyScaling(f, r.awq);
    if (name == "mixed_precision")
      return applyMixedPrecision(f);
    if (name == "finetune")
      return applyFinetune(f);
    if (name == "gptq")
      return applyGptq(f);
    if (!llvm::is_contained(recipeFields, name))
      return reportUnknownField(c, f, 0, "a recipe", recipeFields);
    if (f.path.size() > 1)
      return reportUnknownField(c, f, 1, "a recipe", {});
    if (applyField(f, name))
      if (const char *choice = overriddenChoice(name))
        c.diags.emit(f.keyRange, diag::warn_recipe_overrides, r.name, choice);
  }

private:
  /// `activation_threshold: [mse, no_clipping, kl]`: each method is tried and
  /// the one whose outputs keep the most signal is kept (docs/quantize.md).
  bool thresholdChoices(const FlatField &f, const ast::ListValue &list) {
    std::vector<ir::ThresholdMethod> methods;
    for (ast::Value *e : list.elements) {
      FlatField one = f;
      one.value = e;
      auto t = readEnum<ir::ThresholdMethod>(c, one, "threshold method", allThresholds,
                                             ir::parseThresholdMethod);
      if (!t)
        return false;
      if (*t == ir::ThresholdMethod::HMSE) {
        c.diags.emit(e->getRange(), diag::err_recipe_hmse_activations);
        return false;
      }
      if (llvm::is_contained(methods, *t)) {
        c.diags.emit(e->getRange(), diag::err_recipe_threshold_twice, ir::toString(*t));
        return false;
      }
      methods.push_back(*t);
    }
    if (methods.empty()) {
      reportFieldType(c, f, "a threshold method or a list of them");
      return false;
    }
    r.activationThreshold = methods.front();
    r.activationThresholdChoices =
        methods.size() > 1 ? methods : std::vector<ir::ThresholdMethod>{};
    return true;
  }

  /// Applies a top-level field; true when its value was valid.
  bool applyField(const FlatField &f, llvm::StringRef name) {
    if (name == "activation_threshold")
      if (auto *list = llvm::dyn_cast<ast::ListValue>(f.value))
        return thresholdChoices(f, *list);
    if (name == "activation_threshold" || name == "weights_threshold") {
      auto t = readEnum<ir::ThresholdMethod>(c, f, "threshold method", allThresholds,
                                             ir::parseThresholdMethod);
      if (t == ir::ThresholdMethod::HMSE && name == "activation_threshold") {
        c.diags.emit(f.value->getRange(), diag::err_recipe_hmse_activations);
        return false;
      }
      if (t)
        (name == "activation_threshold" ? r.activationThreshold : r.weightsThreshold) = *t;
      if (t && name == "activation_threshold")
        r.activationThresholdChoices.clear();
      return t.has_value();
    }
    if (name == "lp")
      return readPositive(f, /*allowInf=*/false, r.lp);
    if (name == "z_threshold")
      return readPositive(f, /*allowInf=*/true, r.zThreshold);
    if (name == "min_threshold")
      return readPositive(f, /*allowInf=*/false, r.minThreshold);
    if (name == "activation_bits")
      return readBits(f, "activation", 16, r.activationBits);
    if (name == "weights_bits")
      return readBits(f, "weight", 32, r.weightsBits);
    if (name == "activation_method" || name == "weights_method") {
      auto m =
          readEnum<ir::QuantMethod>(c, f, "quantization method", allMethods, ir::parseQuantMethod);
      if (!m)
        return false;
      if (name == "activation_method" && ir::isLut(*m)) {
        c.diags.emit(f.value->getRange(), diag::err_lut_on_activation, ir::toString(*m));
        return false;
      }
      (name == "activation_method" ? r.activationMethod : r.weightsMethod) = *m;
      return true;
    }
    std::optional<bool> b = readBool(c, f);
    if (!b)
      return false;
    if (name == "bias_correction")
      r.biasCorrection = *b;
    else if (name == "relu_unbound_correction")
      r.reluUnboundCorrection = *b;
    else if (name == "activation_channel_equalization")
      r.activationChannelEqualization = *b;
    else if (name == "input_scaling")
      r.inputScaling = *b;
    else if (name == "per_channel")
      r.perChannel = *b;
    else if (name == "quantize_activations")
      r.quantizeActivations = *b;
    else if (name == "quantize_weights")
      r.quantizeWeights = *b;
    return true;
  }

  /// The field of a block field `f` (`shift_negative.ratio`: `ratio`), or ""
  /// after reporting a block written as another value, a field not among
  /// `fields`, or one nested deeper.
  llvm::StringRef blockField(const FlatField &f, llvm::ArrayRef<const char *> fields) {
    if (f.path.size() == 1) {
      if (!isEmptyBlock(f.value))
        reportFieldType(c, f, "a block");
      return "";
    }
    llvm::StringRef name = f.name(1);
    if (!llvm::is_contained(fields, name)) {
      reportUnknownField(c, f, 1, "", fields);
      return "";
    }
    if (f.path.size() > 2) {
      reportUnknownField(c, f, 2, "", {});
      return "";
    }
    return name;
  }

  void applyShiftNegative(const FlatField &f) {
    llvm::StringRef name = blockField(f, shiftNegativeFields);
    if (name.empty())
      return;
    if (name == "ratio") {
      readFraction(f, r.shiftNegative.ratio);
      return;
    }
    if (std::optional<bool> b = readBool(c, f))
      (name == "enabled" ? r.shiftNegative.enabled : r.shiftNegative.recomputeThreshold) = *b;
  }

  /// smooth_quant and awq: { enabled, alpha }.
  void applyScaling(const FlatField &f, ir::Recipe::Scaling &s) {
    llvm::StringRef name = blockField(f, scalingFields);
    if (name.empty())
      return;
    if (name == "alpha") {
      double alpha = -1;
      readFraction(f, alpha);
      if (alpha >= 0)
        s.alpha = alpha;
      return;
    }
    if (std::optional<bool> b = readBool(c, f))
      s.enabled = *b;
  }

  void applyMixedPrecision(const FlatField &f) {
    ir::MixedPrecision &mp = r.mixedPrecision;
    if (!mixedSeen) {
      mixedSeen = true;
      mp.loc = f.path[0]->range;
    }
    llvm::StringRef name = blockField(f, mixedPrecisionFields);
    if (name.empty())
      return;
    for (ir::Resource res : {ir::Resource::WeightsMemory, ir::Resource::ActivationMemory,
                             ir::Resource::TotalMemory, ir::Resource::Bops}) {
      if (name != ir::toString(res))
        continue;
      if (std::optional<ir::Budget> b = readBudget(c, f, res)) {
        mp.budget(res) = std::move(b);
        budgetsSet.push_back(name.str());
      }
      return;
    }
    if (name == "images" || name == "verify") {
      int64_t hi = name == "images" ? kMaxImages : kMaxVerify;
      std::optional<int64_t> n = readInt(c, f);
      if (n && (*n < 1 || *n > hi))
        c.diags.emit(f.value->getRange(), diag::err_value_range, f.key, 1, hi, *n);
      else if (n)
        (name == "images" ? mp.images : mp.verify) = *n;
    } else if (name == "distance") {
      if (auto d =
              readEnum<ir::MixedDistance>(c, f, "distance", allDistances, ir::parseMixedDistance))
        mp.distance = *d;
    } else if (name == "time_limit") {
      readPositive(f, /*allowInf=*/false, mp.timeLimit);
    } else if (std::optional<bool> b = readBool(c, f)) {
      if (name == "refine") {
        mp.refine = *b;
      } else {
        enabled = *b;
        enabledRange = f.value->getRange();
      }
    }
  }

  void applyFinetune(const FlatField &f) {
    llvm::StringRef name = blockField(f, finetuneFields);
    if (name.empty())
      return;
    ir::Finetune &ft = r.finetune;
    if (name == "lr") {
      readPositive(f, /*allowInf=*/false, ft.lr);
    } else if (name == "weight_decay") {
      readFraction(f, ft.weightDecay);
    } else if (name == "quantizer") {
      if (auto q = readEnum<ir::FinetuneQuantizer>(
              c, f, "trainable quantizer", allFinetuneQuantizers, ir::parseFinetuneQuantizer))
        ft.quantizer = *q;
    } else {
      int64_t lo = name == "seed" ? 0 : 1, hi = name == "epochs"  ? 100000
                                                : name == "batch" ? 65536
                                                                  : 4294967295;
      std::optional<int64_t> n = readInt(c, f);
      if (n && (*n < lo || *n > hi))
        c.diags.emit(f.value->getRange(), diag::err_value_range, f.key, lo, hi, *n);
      else if (n)
        (name == "epochs" ? ft.epochs : name == "batch" ? ft.batch : ft.seed) = *n;
    }
  }

  void applyGptq(const FlatField &f) {
    llvm::StringRef name = blockField(f, gptqFields);
    if (name.empty())
      return;
    ir::Gptq &gq = r.gptq;
    if (name == "method") {
      if (auto m =
              readEnum<ir::GptqMethod>(c, f, "GPTQ method", allGptqMethods, ir::parseGptqMethod))
        gq.method = *m;
    } else if (name == "dampening") {
      std::optional<double> d = readNumber(c, f, /*allowInf=*/false);
      if (d && *d <= 0)
        c.diags.emit(f.value->getRange(), diag::err_not_positive, f.key, formatNumber(*d));
      else if (d && *d > 10)
        c.diags.emit(f.value->getRange(), diag::err_value_range, f.key, 0, 10, formatNumber(*d));
      else if (d)
        gq.dampening = *d;
    } else if (name == "epochs") {
      std::optional<int64_t> n = readInt(c, f);
      if (n && (*n < 1 || *n > 100000))
        c.diags.emit(f.value->getRange(), diag::err_value_range, f.key, 1, 100000, *n);
      else if (n)
        gq.epochs = *n;
    } else if (name == "lr") {
      readPositive(f, /*allowInf=*/false, gq.lr);
    } else if (name == "bias_lr") {
      readFraction(f, gq.biasLr);
    } else if (name == "regularization") {
      std::optional<double> d = readNumber(c, f, /*allowInf=*/false);
      if (d && (*d < 0 || *d > 1e6))
        c.diags.emit(f.value->getRange(), diag::err_value_range, f.key, 0, 1000000,
                     formatNumber(*d));
      else if (d)
        gq.regularization = *d;
    } else if (std::optional<bool> b = readBool(c, f)) {
      (name == "act_order"         ? gq.actOrder
       : name == "hessian_weights" ? gq.hessianWeights
       : name == "per_sample_loss" ? gq.perSampleLoss
                                   : gq.gradualActivation) = *b;
    }
  }

public:
  /// After every field: `enabled: false` turns the search off and drops the
  /// budgets (inherited ones too); a budget set here, or `enabled: true`,
  /// turns it on.
  void finishMixedPrecision() {
    ir::MixedPrecision &mp = r.mixedPrecision;
    if (enabled == false) {
      if (!budgetsSet.empty())
        c.diags.emit(enabledRange, diag::warn_mixed_precision_disabled, r.name,
                     joinQuoted(budgetsSet));
      mp.enabled = false;
      mp.weightsMemory = mp.activationMemory = mp.totalMemory = mp.bops = std::nullopt;
    } else if (enabled == true || !budgetsSet.empty()) {
      mp.enabled = true;
    }
  }

private:
  bool readPositive(const FlatField &f, bool allowInf, double &out) {
    std::optional<double> d =
        readNumber(c, f, allowInf, allowInf ? "a number or `inf`" : "a number");
    if (!d)
      return false;
    if (*d <= 0) {
      c.diags.emit(f.value->getRange(), diag::err_not_positive, f.key, formatNumber(*d));
      return false;
    }
    out = *d;
    return true;
  }

  /// A number from 0 to 1 (a ratio, a weight decay).
  void readFraction(const FlatField &f, double &out) {
    std::optional<double> d = readNumber(c, f, /*allowInf=*/false);
    if (d && (*d < 0 || *d > 1))
      c.diags.emit(f.value->getRange(), diag::err_value_range, f.key, 0, 1, formatNumber(*d));
    else if (d)
      out = *d;
  }

  bool readBits(const FlatField &f, const char *what, int64_t hi, std::optional<int> &out) {
    std::optional<int64_t> b = readInt(c, f);
    if (!b)
      return false;
    if (*b < 1 || *b > hi) {
      c.diags.emit(f.value->getRange(), diag::err_bits_range, what, 1, hi, *b);
      return false;
    }
    out = static_cast<int>(*b);
    return true;
  }

  Compilation &c;
  ir::Recipe &r;
  // What this recipe's own block says of mixed precision.
  bool mixedSeen = false;
  std::optional<bool> enabled;
  SourceRange enabledRange;
  std::vector<std::string> budgetsSet;
};

} // namespace

ir::Recipe passes::resolveRecipe(Compilation &c, const ast::RecipeDecl &decl,
                                 const ir::Recipe *parent) {
  ir::Recipe r = parent ? *parent : ir::Recipe();
  r.name = decl.name.name;
  r.loc = decl.name.range;
  r.parent = parent ? std::optional<std::string>(parent->name) : std::nullopt;
  if (!decl.body)
    return r;
  std::vector<FlatField> fields = flattenBlock(c, *decl.body);
  RecipeBuilder builder(c, r);
  for (const FlatField &f : fields)
    builder.apply(f);
  builder.finishMixedPrecision();
  return r;
}
