//===- PlanJSON.cpp - The plan as JSON (plan_version 1) ---------------------===//
//
// Keys sorted, arrays in plan order (nodes in file order, tensors as planned,
// groups top-down), numbers as the canonical JSON spells them: the same
// model and platform give the same bytes. docs/plan.md describes every key.
//
//===----------------------------------------------------------------------===//

#include "ir/JSONWriter.h"
#include "plan/Plan.h"
#include "plan/Resources.h"

using namespace tpcc;
using namespace tpcc::plan;

namespace {

class PlanWriter : public JSONWriter {
public:
  PlanWriter(llvm::raw_ostream &os, const Plan &plan, const std::vector<Diagnostic> &diags,
             const SourceManager &sm, unsigned indent = 2)
      : JSONWriter(os, indent), plan(plan), diags(diags), sm(sm) {}

  void write();

private:
  /// An array with one compact element per line: plans of large models stay
  /// small and greppable (`grep '"name": "conv1"'`).
  template <typename Range, typename Fn> void linePerElement(const Range &r, Fn each) {
    std::string buf;
    j.arrayBegin();
    for (const auto &e : r) {
      buf.clear();
      {
        llvm::raw_string_ostream s(buf);
        s.SetBufferSize(4096);
        PlanWriter w(s, plan, diags, sm, /*indent=*/0);
        each(w, e);
        s.flush();
      }
      j.rawValue([&](llvm::raw_ostream &os) { os << buf; });
    }
    j.arrayEnd();
  }

  void model();
  void configs();
  void node(const PlanNode &n);
  void weights(const PlanNode &n);
  void weightGrids(const PlanNode &n);
  void tensor(const PlanTensor &t);
  void group(const FusingGroup &g);
  void chain(const CompositeMatch &c);
  void resources();
  void mixedPrecision(const MixedPrecisionRecord &mp);
  void figures(const ResourceFigures &f);
  void diagnostic(const Diagnostic &d);
  /// {name: value, ...} in the given order (`dims`, `fixed_inputs`).
  template <typename T> void namedValues(const std::vector<std::pair<std::string, T>> &nv) {
    j.objectBegin();
    for (const auto &[name, value] : nv)
      j.attribute(name, value);
    j.objectEnd();
  }
  void values(const std::vector<graph::Value *> &vs) {
    array(vs, [&](const graph::Value *v) { v ? string(v->name) : null(); });
  }
  void method(ir::QuantMethod m) { string(ir::toString(m)); }
  void data(const llvm::json::Object &o);
  void data(const llvm::json::Value &v);

  const Plan &plan;
  const std::vector<Diagnostic> &diags;
  const SourceManager &sm;
};

} // namespace

void PlanWriter::model() {
  const graph::Model &m = *plan.model;
  const graph::Graph &g = m.graph;
  object({{"path", [&] { string(plan.modelName); }},
          {"ir_version", [&] { integer(m.irVersion); }},
          {"producer", [&] { string(m.producerName); }},
          {"graph", [&] { string(g.name); }},
          {"opsets",
           [&] {
             array(m.opsets, [&](const graph::OpsetImport &o) {
               object({{"domain", [&] { string(o.domain); }},
                       {"version", [&] { integer(o.version); }}});
             });
           }},
          {"inputs", [&] { values(g.inputs()); }},
          {"outputs", [&] { values(g.outputs()); }},
          {"num_nodes", [&] { integer(int64_t(g.nodes().size())); }}});
}

void PlanWriter::configs() {
  j.objectBegin();
  // Owners in name order ("default" among them), each config by index.
  std::vector<const OptionsRef *> owners;
  for (const OptionsRef &o : plan.usedOptions)
    owners.push_back(&o);
  std::sort(owners.begin(), owners.end(),
            [](const OptionsRef *a, const OptionsRef *b) { return a->owner < b->owner; });
  for (const OptionsRef *o : owners)
    for (unsigned i = 0; i < o->options->configs.size(); ++i) {
      j.attributeBegin(o->configId(i));
      opConfig(o->options->configs[i]);
      j.attributeEnd();
    }
  j.objectEnd();
}

void PlanWriter::weights(const PlanNode &n) {
  std::vector<Field> fields;
  for (const PlanWeight &w : n.weights)
    fields.emplace_back(w.slot, [&] {
      std::vector<Field> f = {{"input", [&] { w.input ? string(w.input->name) : null(); }},
                              {"input_index", [&] { integer(w.inputIndex); }},
                              {"constant", [&] { boolean(w.input && w.input->constant); }},
                              {"method", [&] { method(w.config.method); }},
                              {"bits", [&] { integer(w.config.bits); }},
                              {"lut_bits", [&] { integerOrNull(w.config.lutBits); }},
                              {"per_channel", [&] { boolean(w.config.perChannel); }},
                              {"axis", [&] { integerOrNull(w.axis); }},
                              {"quantize", [&] { boolean(w.quantize); }}};
      if (!w.config.format.plain())
        f.push_back({"format", [&] { formatConfig(w.config.format, /*withAxis=*/true); }});
      // The dimension the blocks run along, for blocked formats.
      if (w.blockAxis)
        f.push_back({"block_dim", [&] { integer(*w.blockAxis); }});
      object(f);
    });
  object(fields);
}

/// What `tpcc quantize` chose for a weight (only in calibrated plans).
void PlanWriter::weightGrids(const PlanNode &n) {
  std::vector<Field> fields;
  for (const PlanWeight &w : n.weights)
    if (!w.scales.empty())
      fields.emplace_back(w.slot, [&] {
        std::vector<Field> f = {
            {"scales", [&] { array(w.scales, [&](double v) { number(v); }); }},
            {"zero_points", [&] { array(w.zeroPoints, [&](int64_t v) { integer(v); }); }}};
        if (!w.luts.empty())
          f.emplace_back("luts", [&] {
            array(w.luts,
                  [&](const std::vector<int64_t> &t) { array(t, [&](int64_t v) { integer(v); }); });
          });
        if (!w.factors.empty()) {
          f.emplace_back("factors", [&] { array(w.factors, [&](double v) { number(v); }); });
          f.emplace_back("group_scales",
                         [&] { array(w.groupScales, [&](double v) { number(v); }); });
          f.emplace_back("group_axis", [&] { integer(w.groupAxis); });
        }
        if (!w.trained.empty())
          f.emplace_back("trained", [&] { array(w.trained, [&](float v) { number(double(v)); }); });
        object(f);
      });
  object(fields);
}

void PlanWriter::node(const PlanNode &n) {
  const graph::Node &g = *n.node;
  const ir::Options &opts = *n.options.options;
  std::vector<Field> fields = {
      {"name", [&] { string(g.displayName()); }},
      {"index", [&] { integer(g.id); }},
      {"op_type", [&] { string(g.opType); }},
      {"domain", [&] { string(g.domain); }},
      {"opset", [&] { n.opset ? string(n.opset->name) : null(); }},
      {"binding",
       [&] {
         if (!n.binding)
           return null();
         const ir::OpBinding &b = *n.binding;
         object({{"opset", [&] { string(b.opset); }},
                 {"op", [&] { string(b.op); }},
                 {"where", [&] { b.where ? string(b.where->str()) : null(); }},
                 {"location", [&] { string(shortLocation(sm, b.loc)); }}});
       }},
      {"candidates",
       [&] {
         j.arrayBegin();
         for (unsigned i = 0; i < opts.configs.size(); ++i)
           string(n.options.configId(i));
         j.arrayEnd();
       }},
      {"chosen", [&] { string(n.options.configId(n.chosen)); }},
      {"fusing_group", [&] { n.fusingGroup >= 0 ? integer(n.fusingGroup) : null(); }},
      {"composite", [&] { n.chain >= 0 ? chain(plan.chains[n.chain]) : null(); }},
      {"weights", [&] { weights(n); }},
      {"inputs", [&] { values(g.inputs); }},
      {"outputs", [&] { values(g.outputs); }},
      {"subgraphs", [&] { boolean(g.hasSubgraphs()); }}};
  // What `tpcc quantize` chose (calibrated plans only).
  bool grids = false;
  for (const PlanWeight &w : n.weights)
    grids |= !w.scales.empty();
  if (grids)
    fields.emplace_back("weight_grids", [&] { weightGrids(n); });
  if (!n.correctedBias.empty())
    fields.emplace_back("corrected_bias",
                        [&] { array(n.correctedBias, [&](float v) { number(double(v)); }); });
  object(fields);
}

void PlanWriter::tensor(const PlanTensor &t) {
  std::vector<Field> fields = {
      {"name", [&] { string(t.value->name); }},
      {"producer", [&] { t.producer ? string(t.producer->node->displayName()) : null(); }},
      {"type", [&] { string(t.value->type.str()); }},
      {"quantize", [&] { boolean(t.quantize); }},
      {"reason", [&] { t.quantize ? null() : string(t.reason); }},
      {"preserving", [&] { boolean(t.preserving); }},
      {"config", [&] { string(t.configId); }},
      {"method", [&] { method(t.method); }},
      {"bits", [&] { integer(t.bits); }},
      {"signedness", [&] { string(ir::toString(t.signedness)); }},
      {"range",
       [&] {
         if (!t.range)
           return null();
         j.arrayBegin();
         number(t.range->first);
         number(t.range->second);
         j.arrayEnd();
       }},
      {"scale", [&] { t.scale ? number(*t.scale) : null(); }},
      {"zero_point", [&] { integerOrNull(t.zeroPoint); }},
      {"statistic", [&] { t.statistic.empty() ? null() : string(t.statistic); }}};
  if (!t.format.plain())
    fields.push_back({"format", [&] { formatConfig(t.format, /*withAxis=*/false); }});
  // MX blocks: the dimension they run along, and the tensor's rank.
  if (t.blockAxis) {
    fields.push_back({"block_dim", [&] { integer(*t.blockAxis); }});
    fields.push_back({"rank", [&] { integer(t.rank); }});
    if (t.blockLength)
      fields.push_back({"block_length", [&] { integer(t.blockLength); }});
  }
  // A preserving op's output on the grid of the constant table it reads.
  if (t.table)
    fields.push_back({"table", [&] { string(t.table->name); }});
  object(std::move(fields));
}

void PlanWriter::group(const FusingGroup &g) {
  std::vector<Field> fields = {
      {"id", [&] { integer(g.id); }},
      {"pattern",
       [&] { array(g.pattern->pattern, [&](const std::vector<std::string> &e) { strings(e); }); }},
      {"pattern_name", [&] { nameOrNull(g.pattern->name); }},
      {"nodes",
       [&] { array(g.nodes, [&](unsigned i) { string(plan.nodes[i].node->displayName()); }); }}};
  // The pattern's `with` config (the id `fusing_group.ID` of the tensors it
  // quantizes), only when it has one.
  if (g.pattern->config)
    fields.push_back({"config", [&] { opConfig(*g.pattern->config); }});
  object(std::move(fields));
}

void PlanWriter::chain(const CompositeMatch &c) {
  object(
      {{"name", [&] { string(c.composite->name); }},
       {"location", [&] { string(shortLocation(sm, c.composite->loc)); }},
       {"root", [&] { string(c.root->displayName()); }},
       {"nodes", [&] { array(c.nodes, [&](const graph::Node *n) { string(n->displayName()); }); }},
       {"inputs",
        [&] { array(c.inputs, [&](const graph::Value *v) { v ? string(v->name) : null(); }); }}});
}

void PlanWriter::figures(const ResourceFigures &f) {
  object(
      {{"weights_bytes", [&] { number(f.weightsBytes()); }},
       {"activation_bytes", [&] { number(f.activationBytes()); }},
       {"total_bytes", [&] { number(f.totalBytes()); }},
       {"bops", [&] { number(f.bops); }},
       {"peak_node", [&] { f.peakStep >= 0 ? string(stepNodeName(plan, f.peakStep)) : null(); }}});
}

void PlanWriter::mixedPrecision(const MixedPrecisionRecord &mp) {
  object({{"budgets",
           [&] {
             array(mp.budgets, [&](const MixedPrecisionRecord::Budget &b) {
               object({{"resource", [&] { string(b.resource); }},
                       {"given", [&] { string(b.text); }},
                       {"source", [&] { string(b.source); }},
                       {"allowed", [&] { number(b.allowed); }},
                       {"used", [&] { number(b.used); }},
                       {"minimum", [&] { number(b.minimum); }},
                       {"base", [&] { number(b.base); }}});
             });
           }},
          {"choices",
           [&] {
             array(mp.choices, [&](const std::pair<std::string, std::string> &c) {
               object({{"node", [&] { string(c.first); }}, {"config", [&] { string(c.second); }}});
             });
           }},
          {"distance", [&] { string(mp.distance); }},
          {"status", [&] { string(mp.status); }},
          {"images", [&] { integer(mp.images); }},
          {"refinements", [&] { integer(mp.refinements); }}});
}

void PlanWriter::resources() {
  ResourceReport r = resourceReport(plan);
  std::vector<DeclaredMemory> declared = declaredMemory(plan);
  std::vector<Field> fields = {{"chosen", [&] { figures(r.chosen); }},
                               {"base", [&] { figures(r.base); }},
                               {"max", [&] { figures(r.max); }},
                               {"min", [&] { figures(r.min); }},
                               {"unknown_size_tensors", [&] { integer(r.unknownSizeTensors); }},
                               {"unknown_shape_kernels", [&] { integer(r.unknownMacs); }}};
  if (!declared.empty())
    fields.emplace_back("platform", [&] {
      std::vector<Field> amounts;
      for (const DeclaredMemory &d : declared)
        amounts.emplace_back(ir::toString(d.resource), [&] { number(d.budget->value); });
      object(amounts);
    });
  object(fields);
}

void PlanWriter::diagnostic(const Diagnostic &d) {
  object({{"severity",
           [&] {
             string(d.severity == Severity::Error     ? "error"
                    : d.severity == Severity::Warning ? "warning"
                                                      : "note");
           }},
          {"kind", [&] { string(getKindName(d.kind)); }},
          {"where", [&] { string(d.range.isValid() ? shortLocation(sm, d.range) : d.where); }},
          {"message", [&] { string(d.message); }},
          {"notes", [&] { array(d.notes, [&](const Diagnostic &n) { diagnostic(n); }); }}});
}

/// Data the quantizer built (a correction's parameters), written as the
/// rest of the plan is: keys sorted, numbers spelled canonically.
void PlanWriter::data(const llvm::json::Object &o) {
  std::vector<Field> fields;
  for (const auto &kv : o)
    fields.emplace_back(kv.first, [&] { data(kv.second); });
  object(fields);
}

void PlanWriter::data(const llvm::json::Value &v) {
  if (const llvm::json::Object *o = v.getAsObject())
    return data(*o);
  if (const llvm::json::Array *a = v.getAsArray())
    return array(*a, [&](const llvm::json::Value &e) { data(e); });
  if (llvm::Optional<llvm::StringRef> s = v.getAsString())
    return string(*s);
  if (llvm::Optional<bool> b = v.getAsBoolean())
    return boolean(*b);
  if (llvm::Optional<int64_t> i = v.getAsInteger())
    return integer(*i);
  if (llvm::Optional<double> d = v.getAsNumber())
    return number(*d);
  null();
}

void PlanWriter::write() {
  std::vector<Field> fields = {
      {"plan_version", [&] { integer(1); }},
      {"platform", [&] { string(plan.platform->name); }},
      {"capabilities", [&] { string(plan.capabilities->name); }},
      {"framework", [&] { string(plan.capabilities->framework); }},
      {"model", [&] { model(); }},
      {"configs", [&] { configs(); }},
      {"nodes",
       [&] { linePerElement(plan.nodes, [](PlanWriter &w, const PlanNode &n) { w.node(n); }); }},
      {"fusing_groups",
       [&] {
         linePerElement(plan.groups, [](PlanWriter &w, const FusingGroup &g) { w.group(g); });
       }},
      {"tensors",
       [&] {
         linePerElement(plan.tensors, [](PlanWriter &w, const PlanTensor &t) { w.tensor(t); });
       }},
      {"activation_lookalikes",
       [&] {
         array(plan.lookalikes, [&](const ActivationLookalike &l) {
           object({{"node", [&] { string(l.node->displayName()); }},
                   {"form", [&] { string(l.form); }},
                   {"reason", [&] { string(l.reason); }}});
         });
       }},
      {"not_entered",
       [&] {
         j.arrayBegin();
         for (const PlanNode &n : plan.nodes)
           if (n.node->hasSubgraphs())
             string(n.node->displayName());
         j.arrayEnd();
       }},
      {"resources", [&] { resources(); }},
      {"diagnostics", [&] { array(diags, [&](const Diagnostic &d) { diagnostic(d); }); }}};
  // Written when a mixed-precision search chose the configs.
  if (const std::optional<MixedPrecisionRecord> &mp = plan.mixedPrecision)
    fields.push_back({"mixed_precision", [&] { mixedPrecision(*mp); }});
  // Written only when the user gave dimensions their sizes (--dim).
  if (!plan.dims.empty())
    fields.push_back({"dims", [&] { namedValues(plan.dims); }});
  // Written by `tpcc quantize` only when the user fixed inputs.
  if (!plan.fixedInputs.empty())
    fields.push_back({"fixed_inputs", [&] { namedValues(plan.fixedInputs); }});
  // Written by `tpcc quantize` only when a correction changed the model.
  if (!plan.corrections.empty())
    fields.push_back({"corrections", [&] {
                        linePerElement(
                            plan.corrections,
                            [](PlanWriter &w, const llvm::json::Object &c) { w.data(c); });
                      }});
  object(fields);
}

void plan::emitPlanJSON(const Plan &plan, const std::vector<Diagnostic> &diags,
                        const SourceManager &sm, llvm::raw_ostream &os) {
  PlanWriter(os, plan, diags, sm).write();
  os << "\n";
}
