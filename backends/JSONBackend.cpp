//===- JSONBackend.cpp - The canonical JSON of the typed IR ---------------===//
//
// `tpcc emit --emit=json`: the fully resolved IR as one JSON document,
// `"tpcc_ir_version": 1`. Every config is inlined and every field is present
// (null where the IR has nothing), so consumers never apply defaults. The one
// exception is a platform's `resources`, present only when the platform (or
// a parent) declares memory, so that the JSON of other platforms is unchanged.
//
// Conventions (the JSON is canonical: the same IR always gives the same bytes,
// identical to Python's `json.dumps(v, indent=2, sort_keys=True,
// ensure_ascii=False)` followed by a newline):
//   - object keys sorted (byte order), 2-space indentation, trailing newline;
//   - JSON has no infinity: +inf / -inf are written as the strings "inf" and
//     "-inf" (a NaN, which the passes never produce, as "nan");
//   - numbers with an integral value are written as integers (`2`), other
//     doubles as the shortest decimal that reads back as the same double, in
//     the layout of Python's repr() (`0.25`, `1e-05`);
//   - strings are UTF-8 (invalid sequences replaced), with `"`, `\` and
//     control characters escaped as Python's json does (`\n`, `\b`, `\u001b`);
//   - `where` is the predicate's canonical spelling (ir::Predicate::str()),
//     or null.
//
// The document is streamed through llvm::json::OStream (indentation, commas);
// no json::Value tree is built, so output time and memory stay linear in the
// IR (a tree of nested json::Objects is copied at every level). Each object is
// written by `object()`, which sorts its fields by key before writing them, so
// the writers below can list fields in any order. Strings and doubles are
// spelled here because LLVM's printer spells doubles with 17 digits and `\b`
// `\f` as `\u0008` `\u000c`, unlike Python.
//
//===----------------------------------------------------------------------===//
#include "backends/Backends.h"
#include "ir/JSONWriter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <cstdio>
#include <limits>

using namespace tpcc;
namespace json = llvm::json;

namespace {

class Writer : public JSONWriter {
public:
  using JSONWriter::JSONWriter;

  void module(const ir::Module &m);

private:
  void methodOrNull(const std::optional<ir::QuantMethod> &m) {
    m ? string(ir::toString(*m)) : null();
  }
  void where(const std::optional<ir::Predicate> &p) { p ? string(p->str()) : null(); }
  /// A platform's memory: bytes (always absolute), or null.
  void budgetBytes(const std::optional<ir::Budget> &b) { b ? number(b->value) : null(); }
  /// `{"relative": false, "value": 41984}` (bytes, BOPs) or
  /// `{"relative": true, "value": 0.75}`; null when absent.
  void budget(const std::optional<ir::Budget> &b) {
    if (!b)
      return null();
    object({{"relative", [&] { boolean(b->relative); }}, {"value", [&] { number(b->value); }}});
  }

  // IR entities.
  void options(const ir::Options &o);
  void platform(const ir::Platform &p);
  void framework(const ir::Framework &f);
  void patternTerm(const ir::PatternTerm &t, const std::vector<std::string> &params);
  void capabilities(const ir::Capabilities &c);
  void recipe(const ir::Recipe &r);
  /// smooth_quant and awq: {"enabled", "alpha"} (alpha null: searched).
  void scaling(const ir::Recipe::Scaling &s) {
    object({{"enabled", [&] { boolean(s.enabled); }},
            {"alpha", [&] { s.alpha ? number(*s.alpha) : null(); }}});
  }
};

//===----------------------------------------------------------------------===//
// IR entities
//===----------------------------------------------------------------------===//

void Writer::options(const ir::Options &o) {
  object({{"configs", [&] { array(o.configs, [&](const ir::OpConfig &c) { opConfig(c); }); }},
          {"base", [&] { integer(o.base); }}});
}

void Writer::platform(const ir::Platform &p) {
  std::vector<Field> fields = {
      {"name", [&] { string(p.name); }},
      {"version",
       [&] {
         if (!p.version)
           return null();
         string(std::to_string(p.version->minor) + "." + std::to_string(p.version->patch));
       }},
      {"type", [&] { string(p.type); }},
      {"parent", [&] { stringOrNull(p.parent); }},
      {"simd_padding", [&] { boolean(p.simdPadding); }},
      {"metadata", [&] { boolean(p.metadata); }},
      {"insert_preserving_quantizers", [&] { boolean(p.insertPreservingQuantizers); }},
      {"recipe", [&] { stringOrNull(p.recipe); }},
      {"default", [&] { options(p.defaultOptions); }},
      {"opsets",
       [&] {
         array(p.opsets, [&](const ir::Opset &o) {
           object({{"name", [&] { string(o.name); }},
                   {"options", [&] { o.options ? options(*o.options) : null(); }}});
         });
       }},
      {"fusings", [&] {
         array(p.fusings, [&](const ir::Fusing &f) {
           std::vector<Field> fs = {
               {"name", [&] { nameOrNull(f.name); }},
               {"pattern",
                [&] { array(f.pattern, [&](const std::vector<std::string> &e) { strings(e); }); }}};
           // The `with` config, only when given.
           if (f.config)
             fs.push_back({"config", [&] { opConfig(*f.config); }});
           object(std::move(fs));
         });
       }}};
  // Only when declared, so that platforms without one keep their JSON.
  if (p.resources) {
    const ir::PlatformResources &r = *p.resources;
    fields.push_back({"resources", [&] {
                        object({{"weights_memory", [&] { budgetBytes(r.weightsMemory); }},
                                {"activation_memory", [&] { budgetBytes(r.activationMemory); }},
                                {"total_memory", [&] { budgetBytes(r.totalMemory); }}});
                      }});
  }
  object(fields);
}

void Writer::framework(const ir::Framework &f) {
  object({{"name", [&] { string(f.name); }},
          {"weights",
           [&] {
             array(f.weights, [&](const ir::WeightSlot &w) {
               object({{"slot", [&] { string(w.slot); }},
                       {"op", [&] { string(w.op); }},
                       {"input", [&] { integer(w.input); }},
                       {"where", [&] { where(w.where); }},
                       {"axes", [&] {
                          if (!w.outAxis && !w.inAxis)
                            return null();
                          object({{"out", [&] { integerOrNull(w.outAxis); }},
                                  {"in", [&] { integerOrNull(w.inAxis); }}});
                        }}});
             });
           }},
          {"activation", [&] { strings(f.activationOps); }},
          {"no_quantize", [&] { strings(f.noQuantizeOps); }},
          {"ranges",
           [&] {
             array(f.ranges, [&](const ir::OpRange &r) {
               object({{"op", [&] { string(r.op); }},
                       {"min", [&] { number(r.lo); }},
                       {"max", [&] { number(r.hi); }}});
             });
           }},
          {"composites", [&] {
             array(f.composites, [&](const ir::Composite &c) {
               object({{"name", [&] { string(c.name); }},
                       {"params", [&] { strings(c.params); }},
                       {"pattern", [&] { patternTerm(c.root, c.params); }},
                       {"is", [&] { c.is.empty() ? null() : string(c.is); }}});
             });
           }}});
}

/// `{"op": OP, "args": [...], "where": P}`, `{"param": NAME}` or
/// `{"constant": VALUE}`.
void Writer::patternTerm(const ir::PatternTerm &t, const std::vector<std::string> &params) {
  switch (t.kind) {
  case ir::PatternTerm::Kind::Param:
    return object({{"param", [&] { string(params.at(t.param)); }}});
  case ir::PatternTerm::Kind::Constant:
    return object({{"constant", [&] { number(t.value); }}});
  case ir::PatternTerm::Kind::Op:
    return object(
        {{"op", [&] { string(t.op); }},
         {"args",
          [&] { array(t.args, [&](const ir::PatternTerm &a) { patternTerm(a, params); }); }},
         {"where", [&] { where(t.where); }}});
  }
}

void Writer::capabilities(const ir::Capabilities &c) {
  object({{"name", [&] { string(c.name); }},
          {"platform", [&] { string(c.platform); }},
          {"framework", [&] { string(c.framework); }},
          {"bindings",
           [&] {
             array(c.bindings, [&](const ir::OpBinding &b) {
               object({{"opset", [&] { string(b.opset); }},
                       {"op", [&] { string(b.op); }},
                       {"composite", [&] { boolean(b.composite); }},
                       {"where", [&] { where(b.where); }}});
             });
           }},
          {"unbound", [&] { array(c.unbound, [&](const std::string &s) { string(s); }); }}});
}

void Writer::recipe(const ir::Recipe &r) {
  object(
      {{"name", [&] { string(r.name); }},
       {"parent", [&] { stringOrNull(r.parent); }},
       {"activation_threshold",
        [&] {
          if (r.activationThresholdChoices.empty())
            return string(ir::toString(r.activationThreshold));
          array(r.activationThresholdChoices,
                [&](ir::ThresholdMethod m) { string(ir::toString(m)); });
        }},
       {"weights_threshold", [&] { string(ir::toString(r.weightsThreshold)); }},
       {"lp", [&] { number(r.lp); }},
       {"bias_correction", [&] { boolean(r.biasCorrection); }},
       {"shift_negative",
        [&] {
          object({{"enabled", [&] { boolean(r.shiftNegative.enabled); }},
                  {"ratio", [&] { number(r.shiftNegative.ratio); }},
                  {"recompute_threshold", [&] { boolean(r.shiftNegative.recomputeThreshold); }}});
        }},
       {"relu_unbound_correction", [&] { boolean(r.reluUnboundCorrection); }},
       {"activation_channel_equalization", [&] { boolean(r.activationChannelEqualization); }},
       {"smooth_quant", [&] { scaling(r.smoothQuant); }},
       {"awq", [&] { scaling(r.awq); }},
       {"input_scaling", [&] { boolean(r.inputScaling); }},
       {"z_threshold", [&] { number(r.zThreshold); }},
       {"min_threshold", [&] { number(r.minThreshold); }},
       {"mixed_precision",
        [&] {
          const ir::MixedPrecision &mp = r.mixedPrecision;
          object({{"enabled", [&] { boolean(mp.enabled); }},
                  {"weights_memory", [&] { budget(mp.weightsMemory); }},
                  {"activation_memory", [&] { budget(mp.activationMemory); }},
                  {"total_memory", [&] { budget(mp.totalMemory); }},
                  {"bops", [&] { budget(mp.bops); }},
                  {"images", [&] { integer(mp.images); }},
                  {"distance", [&] { string(ir::toString(mp.distance)); }},
                  {"refine", [&] { boolean(mp.refine); }},
                  {"time_limit", [&] { number(mp.timeLimit); }},
                  {"verify", [&] { integer(mp.verify); }}});
        }},
       {"finetune",
        [&] {
          const ir::Finetune &ft = r.finetune;
          object({{"epochs", [&] { integer(ft.epochs); }},
                  {"batch", [&] { integer(ft.batch); }},
                  {"lr", [&] { number(ft.lr); }},
                  {"weight_decay", [&] { number(ft.weightDecay); }},
                  {"quantizer", [&] { string(ir::toString(ft.quantizer)); }},
                  {"seed", [&] { integer(ft.seed); }}});
        }},
       {"gptq",
        [&] {
          const ir::Gptq &gq = r.gptq;
          object(
              {{"method", [&] { gq.method ? string(ir::toString(*gq.method)) : null(); }},
               {"dampening", [&] { number(gq.dampening); }},
               {"act_order", [&] { boolean(gq.actOrder); }},
               {"epochs", [&] { gq.epochs ? integer(*gq.epochs) : null(); }},
               {"lr", [&] { number(gq.lr); }},
               {"bias_lr", [&] { number(gq.biasLr); }},
               {"hessian_weights", [&] { boolean(gq.hessianWeights); }},
               {"regularization", [&] { gq.regularization ? number(*gq.regularization) : null(); }},
               {"per_sample_loss", [&] { boolean(gq.perSampleLoss); }},
               {"gradual_activation", [&] { boolean(gq.gradualActivation); }}});
        }},
       {"overrides", [&] {
          object({{"activation_bits", [&] { integerOrNull(r.activationBits); }},
                  {"weights_bits", [&] { integerOrNull(r.weightsBits); }},
                  {"activation_method", [&] { methodOrNull(r.activationMethod); }},
                  {"weights_method", [&] { methodOrNull(r.weightsMethod); }},
                  {"per_channel", [&] { booleanOrNull(r.perChannel); }},
                  {"quantize_activations", [&] { booleanOrNull(r.quantizeActivations); }},
                  {"quantize_weights", [&] { booleanOrNull(r.quantizeWeights); }}});
        }}});
}

void Writer::module(const ir::Module &m) {
  object(
      {{"tpcc_ir_version", [&] { integer(1); }},
       {"platforms", [&] { array(m.platforms, [&](const ir::Platform &p) { platform(p); }); }},
       {"frameworks", [&] { array(m.frameworks, [&](const ir::Framework &f) { framework(f); }); }},
       {"capabilities",
        [&] { array(m.capabilities, [&](const ir::Capabilities &c) { capabilities(c); }); }},
       {"recipes", [&] { array(m.recipes, [&](const ir::Recipe &r) { recipe(r); }); }}});
}

} // namespace

void tpcc::emitJSON(const ir::Module &m, llvm::raw_ostream &os) {
  {
    Writer w(os);
    w.module(m);
  } // the OStream flushes its state when destroyed
  os << '\n';
}
