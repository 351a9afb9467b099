//===- PlanText.cpp - The plan summary and `--explain NODE` ---------------===//

#include "plan/Plan.h"
#include "plan/PredicateEval.h"
#include "plan/Resources.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <iterator>
#include <map>
#include <set>

using namespace tpcc;
using namespace tpcc::plan;

static std::string bytes(double b) {
  if (b < 1024)
    return fmt::format("{:.0f} B", b);
  if (b < 1024 * 1024)
    return fmt::format("{:.1f} KiB", b / 1024);
  return fmt::format("{:.1f} MiB", b / (1024 * 1024));
}

/// "57.3 M": a count with a k/M/G/T/P scale (powers of 1000), 3 significant digits.

/// The resource figures at the chosen, all-max and all-min candidates, and
/// the platform's memory when it declares some.
static void printResources(const Plan &plan, llvm::raw_ostream &os) {
  ResourceReport r = resourceReport(plan);
  const ResourceFigures *cols[] = {&r.chosen, &r.max, &r.min};
  auto row = [&](const char *name, auto value) {
    os << fmt::format("    {:<26}", name);
    for (const ResourceFigures *f : cols)
      os << fmt::format(" {:>12}", value(*f));
    os << "\n";
  };
  os << fmt::format("  {:<28} {:>12} {:>12} {:>12}\n", "resources (per sample):", "chosen",
                    "all-max", "all-min");
  row("weights memory", [](const ResourceFigures &f) { return ir::formatBytes(f.weightsBytes()); });
  row("activation memory (peak)",
      [](const ResourceFigures &f) { return ir::formatBytes(f.activationBytes()); });
  row("total memory", [](const ResourceFigures &f) { return ir::formatBytes(f.totalBytes()); });
  row("BOPs", [](const ResourceFigures &f) { return formatCount(f.bops); });
  if (r.chosen.peakStep >= 0)
    os << fmt::format("    activation peak at `{}` (chosen configs)\n",
                      stepNodeName(plan, r.chosen.peakStep));
  if (r.unknownSizeTensors)
    os << fmt::format("    {} quantized tensor{} of unknown size not counted\n",
                      r.unknownSizeTensors, r.unknownSizeTensors == 1 ? "" : "s");
  if (r.unknownMacs)
    os << fmt::format("    {} kernel layer{} of unknown shape without BOPs\n", r.unknownMacs,
                      r.unknownMacs == 1 ? "" : "s");
  for (const DeclaredMemory &d : declaredMemory(plan)) {
    double chosen = memoryBytes(r.chosen, d.resource), min = memoryBytes(r.min, d.resource);
    double limit = d.budget->value;
    std::string head = fmt::format("    {} of {} ({}): ", resourceName(d.resource),
                                   plan.platform->name, d.budget->text);
    if (chosen <= limit)
      os << head
         << fmt::format("fits: {} ({:.1f} %)\n", ir::formatBytes(chosen), 100 * chosen / limit);
    else if (min <= limit)
      os << head
         << fmt::format("does not fit at the chosen configs ({} > {}); all-min needs {} "
                        "({:.1f} %): mixed precision can make it fit\n",
                        ir::formatBytes(chosen), ir::formatBytes(limit), ir::formatBytes(min),
                        100 * min / limit);
    else
      os << head
         << fmt::format("does not fit: even all-min needs {} (> {})\n", ir::formatBytes(min),
                        ir::formatBytes(limit));
  }
}

static std::string configLabel(const PlanNode &n, unsigned i) {
  const ir::OpConfig &c = n.options.options->configs[i];
  return n.options.configId(i) + (c.name.empty() ? "" : " `" + c.name + "`");
}

/// "8-bit power_of_two activations, 8-bit per-channel weights"
static std::string configSummary(const ir::OpConfig &c) {
  // A number format other than plain integers follows in parentheses.
  auto format = [](const ir::FormatConfig &f, int bits) {
    return f.plain() ? std::string() : " (" + ir::formatText(f, bits) + ")";
  };
  std::string s = c.activation.quantize
                      ? fmt::format("{}-bit {} activations{}", c.activation.bits,
                                    ir::toString(c.activation.method),
                                    format(c.activation.format, c.activation.bits))
                      : "float activations";
  if (c.preserving)
    s = "preserving";
  const ir::AttrConfig &k = c.weightConfig("kernel");
  if (k.quantize)
    s += fmt::format(", {}-bit {}{} weights{}", k.bits, k.perChannel ? "per-channel " : "",
                     ir::toString(k.method), format(k.format, k.bits));
  return s;
}

void plan::printSummary(const Plan &plan, llvm::raw_ostream &os) {
  const graph::Graph &g = plan.model->graph;
  unsigned matched = 0, entered = 0, constants = 0, inner = 0;
  std::map<std::string, unsigned> unmatched;
  // Opsets in platform order, then the default.
  std::map<std::string, unsigned> perOpset;
  std::map<std::string, const PlanNode *> example;
  for (const PlanNode &n : plan.nodes) {
    if (n.innerOfChain) {
      ++inner; // planned as part of its chain's root
    } else if (n.opset) {
      ++matched;
      ++perOpset[n.opset->name];
      example.emplace(n.opset->name, &n);
    } else if (n.node->opType == "Constant" && n.node->domain.empty()) {
      ++constants; // a constant, not an operator to quantize
    } else {
      ++unmatched[n.node->opType];
    }
    entered += n.node->hasSubgraphs();
  }
  os << "plan: " << plan.modelName << " on " << plan.platform->name << " (capabilities "
     << plan.capabilities->name
     << (plan.capabilities->platform != plan.platform->name
             ? ", of parent " + plan.capabilities->platform
             : std::string())
     << ")\n";
  std::vector<std::string> um;
  for (const auto &[op, k] : unmatched)
    um.push_back(fmt::format("{} x{}", op, k));
  unsigned planned = unsigned(g.nodes().size()) - inner;
  os << fmt::format("  {} nodes: {} matched an opset, {} took the default options{}{}{}\n",
                    g.nodes().size(), matched, planned - matched - constants,
                    um.empty() ? "" : " (" + llvm::join(um, ", ") + ")",
                    constants ? fmt::format(", {} Constant", constants) : "",
                    inner ? fmt::format(", {} inside composites", inner) : "");
  if (!plan.chains.empty()) {
    // Per composite, in the framework's order.
    std::map<const ir::Composite *, std::pair<unsigned, const PlanNode *>> perComposite;
    for (const CompositeMatch &c : plan.chains) {
      auto &[k, root] = perComposite[c.composite];
      ++k;
      root = &plan.nodes[c.root->id];
    }
    os << fmt::format("  composites: {} chain{} planned as one node each\n", plan.chains.size(),
                      plan.chains.size() == 1 ? "" : "s");
    for (const ir::Composite &c : plan.framework->composites)
      if (auto it = perComposite.find(&c); it != perComposite.end())
        os << fmt::format("    {:<24} {:>5}  -> {}  {}\n", c.name, it->second.first,
                          it->second.second->opset ? it->second.second->opset->name : "(default)",
                          c.str());
  }
  if (entered)
    os << fmt::format("  {} nodes hold subgraphs that the plan does not enter\n", entered);
  os << fmt::format("  {:<22} {:>7}  {}\n", "opset", "nodes", "base config");
  for (const ir::Opset &o : plan.platform->opsets) {
    auto it = perOpset.find(o.name);
    if (it == perOpset.end())
      continue;
    // The base, not the example's config, which --choose may have changed.
    const PlanNode &n = *example[o.name];
    unsigned base = n.options.options->base;
    os << fmt::format("  {:<22} {:>7}  {}: {}\n", o.name, it->second, configLabel(n, base),
                      configSummary(n.options.options->configs[base]));
  }
  if (matched + constants != planned)
    os << fmt::format("  {:<22} {:>7}  {}\n", "(default)", planned - matched - constants,
                      configSummary(plan.platform->defaultOptions.baseConfig()));
  std::vector<const PlanNode *> chosen;
  for (const PlanNode &n : plan.nodes)
    if (n.chosen != n.options.options->base)
      chosen.push_back(&n);
  if (!chosen.empty())
    os << fmt::format("  other than the base (--choose): {} node{}\n", chosen.size(),
                      chosen.size() == 1 ? "" : "s");
  for (const PlanNode *n : chosen)
    os << fmt::format("    {} -> {}: {}\n", n->node->displayName(), configLabel(*n, n->chosen),
                      configSummary(n->config()));

  std::map<const ir::Fusing *, unsigned> perPattern;
  for (const FusingGroup &fg : plan.groups)
    ++perPattern[fg.pattern];
  os << "  fusing groups: " << plan.groups.size() << "\n";
  for (const ir::Fusing &f : plan.platform->fusings)
    if (unsigned k = perPattern[&f]) {
      std::vector<std::string> elems;
      for (const auto &e : f.pattern)
        elems.push_back(e.size() == 1 ? e[0] : "(" + llvm::join(e, " | ") + ")");
      // A pattern's `with` config quantizes the outputs inside its groups.
      std::string inside = f.config ? "  inside: " + configSummary(*f.config) : "";
      os << fmt::format("    {:<36} {:>5}{}\n", llvm::join(elems, " -> "), k, inside);
    }

  unsigned quantized = 0, fused = 0, preserving = 0, composite = 0;
  for (const PlanTensor &t : plan.tensors) {
    quantized += t.quantize;
    preserving += t.quantize && t.preserving;
    fused += !t.quantize && t.reason.rfind("inside fusing group", 0) == 0;
    composite += !t.quantize && t.producer && t.producer->innerOfChain;
  }
  os << fmt::format("  activations: {} of {} tensors quantized ({} preserving); "
                    "{} left float inside fusing groups{}\n",
                    quantized, plan.tensors.size(), preserving, fused,
                    composite ? fmt::format(", {} inside composites", composite) : "");

  if (!plan.lookalikes.empty()) {
    const size_t shown = 10;
    os << fmt::format("  activation-like products planned op by op: {}\n", plan.lookalikes.size());
    for (size_t k = 0; k < plan.lookalikes.size() && k < shown; ++k) {
      const ActivationLookalike &l = plan.lookalikes[k];
      os << fmt::format("    {} = {}: {}\n", l.node->displayName(), l.form, l.reason);
    }
    if (plan.lookalikes.size() > shown)
      os << fmt::format("    ... and {} more (the plan's `activation_lookalikes` lists all)\n",
                        plan.lookalikes.size() - shown);
  }

  double floatBytes = 0, quantBytes = 0;
  int64_t params = 0;
  unsigned count = 0, quantCount = 0;
  std::set<const graph::Value *> seen;
  for (const PlanNode &n : plan.nodes)
    for (const PlanWeight &w : n.weights) {
      if (!w.input || !w.input->constant || !seen.insert(w.input).second)
        continue;
      const graph::Tensor &t = *w.input->constant;
      int64_t elems = t.numElements();
      ++count;
      params += elems;
      floatBytes += double(t.raw.size());
      if (!w.quantize) {
        quantBytes += double(t.raw.size());
        continue;
      }
      ++quantCount;
      quantBytes += std::ceil(double(elems) * w.config.bits / 8);
      if (ir::isLut(w.config.method) && w.config.lutBits)
        quantBytes += std::ldexp(1.0, w.config.bits) * *w.config.lutBits / 8;
    }
  os << fmt::format("  weights: {} tensors ({} quantized), {} parameters: {} as "
                    "stored -> {} planned{}\n",
                    count, quantCount, params, bytes(floatBytes), bytes(quantBytes),
                    quantBytes > 0 ? fmt::format(" ({:.2f}x smaller)", floatBytes / quantBytes)
                                   : "");
  printResources(plan, os);
}

//===----------------------------------------------------------------------===//
// --explain
//===----------------------------------------------------------------------===//

static std::string valueText(const graph::Value *v) {
  if (!v)
    return "(absent)";
  std::string s = "`" + v->name + "` " + v->type.str();
  if (v->isInitializer)
    s += " (initializer)";
  else if (v->constant)
    s += " (Constant)";
  else if (v->producer)
    s += " from `" + v->producer->displayName() + "`";
  else if (v->isGraphInput)
    s += " (graph input)";
  return s;
}

static std::string chainNodes(const CompositeMatch &c) {
  std::vector<std::string> names;
  for (const graph::Node *k : c.nodes)
    names.push_back("`" + k->displayName() + "`");
  return llvm::join(names, ", ");
}

static std::string chainInputs(const CompositeMatch &c) {
  std::vector<std::string> inputs;
  for (size_t k = 0; k < c.inputs.size(); ++k)
    inputs.push_back(fmt::format("{} = {}", c.composite->params[k],
                                 c.inputs[k] ? "`" + c.inputs[k]->name + "`" : "(absent)"));
  return llvm::join(inputs, ", ");
}

/// The composite bindings whose pattern is rooted in `pn`'s operator, each
/// with whether it matched here; returns how many there were.
static unsigned explainComposites(const Plan &plan, const PlanNode &pn, const SourceManager &sm,
                                  llvm::raw_ostream &os) {
  const graph::Node &n = *pn.node;
  unsigned tried = 0;
  if (!plan.framework)
    return 0;
  // The bound composites, then those that say which operator they are and
  // that no binding names (planned as that operator).
  std::vector<std::pair<const ir::Composite *, std::string>> heads;
  llvm::StringSet<> bound;
  for (const ir::OpBinding &b : plan.capabilities->bindings)
    if (const ir::Composite *c = b.composite ? plan.framework->findComposite(b.op) : nullptr) {
      bound.insert(c->name);
      heads.emplace_back(c, fmt::format("  {} <- {} ({}), composite {}:\n", b.opset, b.op,
                                        shortLocation(sm, b.loc), c->str()));
    }
  for (const ir::Composite &c : plan.framework->composites)
    if (!c.is.empty() && !bound.contains(c.name))
      heads.emplace_back(&c,
                         fmt::format("  composite {} ({}), bound by no opset, planned as `{}`:\n",
                                     c.str(), shortLocation(sm, c.loc), c.is));
  for (const auto &[c, head] : heads) {
    if (c->root.op != n.opType)
      continue;
    ++tried;
    os << head;
    std::string why;
    if (pn.chain >= 0 && plan.chains[pn.chain].composite == c)
      os << "    matches, and the chain is planned as this node\n";
    else if (matchComposite(*c, *plan.model, n, &why))
      os << "    matches, but another chain took some of its nodes\n";
    else
      os << "    does not match: " << why << "\n";
  }
  return tried;
}

void plan::printExplanation(const Plan &plan, const PlanNode &pn, const SourceManager &sm,
                            llvm::raw_ostream &os) {
  const graph::Node &n = *pn.node;
  os << fmt::format("node `{}`: {} (node {} of {})\n", n.displayName(), n.opType, n.id,
                    plan.modelName);
  for (size_t k = 0; k < n.inputs.size(); ++k)
    os << fmt::format("  input {}: {}\n", k, valueText(n.inputs[k]));
  for (size_t k = 0; k < n.outputs.size(); ++k)
    os << fmt::format("  output {}: {}\n", k, valueText(n.outputs[k]));
  if (n.hasSubgraphs())
    os << "  holds subgraphs, which the plan does not enter\n";
  if (pn.innerOfChain) {
    const CompositeMatch &c = plan.chains[pn.chain];
    os << fmt::format("inside composite `{}` ({}), planned as one node with its root `{}`:\n",
                      c.composite->name, shortLocation(sm, c.composite->loc),
                      c.root->displayName());
    printExplanation(plan, plan.nodes[c.root->id], sm, os);
    return;
  }

  os << "bindings of `" << n.opType << "` in capabilities " << plan.capabilities->name << ":\n";
  unsigned tried = explainComposites(plan, pn, sm, os);
  for (const ir::OpBinding &b : plan.capabilities->bindings) {
    if (b.op != n.opType)
      continue;
    ++tried;
    std::string head = fmt::format("  {} <- {} ({})", b.opset, b.op, shortLocation(sm, b.loc));
    const char *taken = pn.chain >= 0 ? ", but the composite's chain takes the node" : "";
    if (!b.where) {
      os << head << ": matches (no predicate)" << taken << "\n";
      continue;
    }
    std::vector<std::string> trace;
    bool r = evaluate(*b.where, *plan.model, n, &trace, 2);
    os << head << " where " << b.where->str() << ":\n";
    for (const std::string &line : trace)
      os << line << "\n";
    os << "    " << (r ? "matches" : "does not match") << (r ? taken : "") << "\n";
  }
  if (!tried)
    os << "  none: no binding names `" << n.opType << "`\n";
  if (pn.chain >= 0)
    os << fmt::format("composite: {} matched `{}` (nodes {}; {})\n",
                      plan.chains[pn.chain].composite->name, n.displayName(),
                      chainNodes(plan.chains[pn.chain]), chainInputs(plan.chains[pn.chain]));
  if (pn.opset)
    os << fmt::format("opset: {} (binding at {})\n", pn.opset->name,
                      shortLocation(sm, pn.binding->loc));
  else
    os << "opset: none; the node takes the platform's default options\n";

  const ir::Options &opts = *pn.options.options;
  os << fmt::format("options {}: {} candidate(s), chosen {} ({})\n", pn.options.owner,
                    opts.configs.size(), configLabel(pn, pn.chosen),
                    pn.chosen == opts.base ? "the base" : "by --choose");
  for (unsigned i = 0; i < opts.configs.size(); ++i) {
    const ir::OpConfig &c = opts.configs[i];
    std::vector<std::string> bits;
    for (int b : c.inputBits)
      bits.push_back(std::to_string(b));
    os << fmt::format("  {}{}: {}; input bits {}\n", configLabel(pn, i),
                      i == pn.chosen ? " (chosen)" : "", configSummary(c), llvm::join(bits, "/"));
  }
  if (!pn.weights.empty()) {
    os << "weights:\n";
    for (const PlanWeight &w : pn.weights)
      os << fmt::format(
          "  {}input[{}] {}: {} {}-bit{}{} -> {}\n", w.decl ? w.slot + " = " : "constant operand ",
          w.inputIndex, w.input ? "`" + w.input->name + "`" : "(absent)",
          ir::toString(w.config.method), w.config.bits, w.config.perChannel ? " per-channel" : "",
          w.axis                ? fmt::format(" (axis {})", *w.axis)
          : w.config.perChannel ? " (one grid: no channel axis)"
                                : "",
          w.quantize           ? "quantized"
          : !w.input           ? "absent"
          : !w.input->constant ? "not a constant, not quantized"
                               : "not quantized");
  }
  os << "activations:\n";
  for (const graph::Value *v : n.outputs) {
    const PlanTensor *t = plan.tensorOf(v);
    if (!t)
      continue;
    if (t->quantize)
      os << fmt::format(
          "  `{}`: {}-bit {} {}{}{}\n", v->name, t->bits, ir::toString(t->method),
          ir::toString(t->signedness),
          t->table        ? fmt::format(", the grid of its table `{}`", t->table->name)
          : t->preserving ? ", preserving its input's quantization"
                          : "",
          t->range ? fmt::format(", range [{}, {}]", t->range->first, t->range->second) : "");
    else
      os << fmt::format("  `{}`: not quantized ({})\n", v->name, t->reason);
  }
  os << "fusing:\n";
  for (const std::string &line : explainFusing(plan, pn))
    os << "  " << line << "\n";
}
