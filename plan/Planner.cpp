//===- Planner.cpp - Matching, weights, tensors and plan-time checks -------===//

#include "ir/graph/NodeAttrs.h"
#include "ir/graph/OnnxIO.h"
#include "plan/ConstantOperands.h"
#include "plan/Plan.h"
#include "plan/PredicateEval.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::plan;
using graph::Node;
using graph::Value;

std::string plan::shortLocation(const SourceManager &sm, SourceRange r) {
  if (!r.isValid())
    return "";
  LineCol lc = sm.getLineCol(r.begin);
  return fmt::format("{}:{}:{}", llvm::sys::path::filename(sm.getName(r.begin.file)).str(), lc.line,
                     lc.col);
}

const PlanTensor *Plan::tensorOf(const Value *v) const {
  if (!v || v->id >= tensorIndex.size() || tensorIndex[v->id] < 0)
    return nullptr;
  return &tensors[tensorIndex[v->id]];
}

std::vector<const Value *> Plan::elementInputs(const PlanNode &n) const {
  if (n.chain >= 0)
    return chains[n.chain].inputs;
  return {n.node->inputs.begin(), n.node->inputs.end()};
}

bool Plan::valueReaders(const Value &v, std::vector<const PlanNode *> &readers, int depth) const {
  if (v.uses.empty())
    return false;
  for (const graph::Use &u : v.uses) {
    if (framework && llvm::is_contained(framework->noQuantizeOps, u.node->opType))
      continue; // the framework never quantizes it
    const PlanNode &reader = elementOf(nodes[u.node->id]);
    if (!reader.options.options || !reader.config().preserving) {
      readers.push_back(&reader);
      continue;
    }
    std::vector<const Value *> ins = elementInputs(reader);
    if (depth >= 16 || ins.empty() || ins[0] != &v || u.node->outputs.empty())
      return false;
    for (const Value *out : u.node->outputs)
      if (!out || !valueReaders(*out, readers, depth + 1))
        return false;
  }
  return true;
}

/// Why a model input read only by nodes that compute in float is not quantized.
static const char *const kReadInFloat = "every node that reads it computes in float";

static std::string configName(const PlanNode &n, unsigned i) {
  const ir::OpConfig &c = n.options.options->configs[i];
  return c.name.empty() ? n.options.configId(i) : c.name;
}

/// The config id of an output inside fusing group `g` that its pattern's
/// `with` config quantizes (the plan's `fusing_groups[id].config`).
static std::string fusedConfigId(const FusingGroup &g) {
  return "fusing_group." + std::to_string(g.id);
}

static std::string bindingText(const ir::OpBinding &b) {
  return b.opset + " <- " + b.op + (b.where ? " where " + b.where->str() : "");
}

namespace {

class Planner {
public:
  Planner(const ir::Platform &p, const ir::Capabilities &caps, const ir::Framework *fw,
          graph::Model &model, DiagnosticEngine &diags)
      : p(p), caps(caps), fw(fw), model(model), diags(diags) {
    plan.platform = &p;
    plan.capabilities = &caps;
    plan.framework = fw;
    plan.model = &model;
    plan.modelName = model.path;
    for (const ir::OpBinding &b : caps.bindings)
      if (!b.composite)
        bindingsByOp[b.op].push_back(&b);
    if (fw) {
      for (const ir::WeightSlot &w : fw->weights)
        slotsByOp[w.op].push_back(&w);
      for (const std::string &op : fw->noQuantizeOps)
        noQuantize.insert(op);
    }
  }

  Plan run(const Choices &choices) {
    findChains();
    for (const auto &n : model.graph.nodes())
      match(*n);
    // Before anything reads a node's config: weights, tensors and the
    // input-bit checks all follow the chosen one.
    applyChoices(choices);
    for (PlanNode &pn : plan.nodes)
      planWeights(pn);
    findFusingGroups(plan);
    planTensors();
    checkInputBits();
    findLookalikes(plan);
    return std::move(plan);
  }

private:
  std::string where(const Node &n) const { return graph::describeNode(plan.modelName, n); }
  void findChains();
  void match(Node &n);
  void applyChoices(const Choices &choices);
  void planWeights(PlanNode &pn);
  void planBlocks(const PlanNode &pn, PlanWeight &w, std::optional<int64_t> axis);
  void planTensors();
  void planOutput(const PlanNode &pn, const Value *v, PlanTensor &t);
  void planActivationBlocks(PlanTensor &t);
  void planTable(const PlanNode &pn, const Value *table, PlanTensor &t) const;
  void checkInputBits();
  bool isWeightInput(const PlanNode &pn, const Value *v) const {
    for (const PlanWeight &w : pn.weights)
      if (w.input == v && v->constant)
        return true;
    return false;
  }

  const ir::Platform &p;
  const ir::Capabilities &caps;
  const ir::Framework *fw;
  graph::Model &model;
  DiagnosticEngine &diags;
  Plan plan;
  llvm::StringMap<std::vector<const ir::OpBinding *>> bindingsByOp;
  /// The binding each chain of plan.chains matched with.
  std::vector<const ir::OpBinding *> chainBindings;
  std::vector<int> chainIndex; ///< by node id: index into plan.chains, or -1
  llvm::StringMap<std::vector<const ir::WeightSlot *>> slotsByOp;
  llvm::StringSet<> noQuantize;
  llvm::StringSet<> usedOwners;
};

} // namespace

/// Composite bindings are tried at every node, downstream first, so a chain
/// is claimed before its inner nodes could start a smaller one; at one root
/// the composite with the most nodes wins (ties: the binding written first).
/// A node belongs to at most one chain.
void Planner::findChains() {
  if (!fw)
    return;
  std::vector<std::pair<const ir::Composite *, const ir::OpBinding *>> composites;
  for (const ir::OpBinding &b : caps.bindings)
    if (b.composite)
      if (const ir::Composite *c = fw->findComposite(b.op))
        composites.emplace_back(c, &b);
  // A composite that says which operator it is (`is OP`) and that the
  // capabilities do not bind is planned as that operator: its binding without
  // a predicate (a predicate reads attributes the chain does not have), or,
  // when there is none, the default options (a null binding).
  for (const ir::Composite &c : fw->composites) {
    bool bound = std::any_of(composites.begin(), composites.end(),
                             [&](const auto &cb) { return cb.first == &c; });
    if (c.is.empty() || bound)
      continue;
    const ir::OpBinding *asOp = nullptr;
    auto it = bindingsByOp.find(c.is);
    if (it != bindingsByOp.end())
      for (const ir::OpBinding *b : it->second)
        if (!b->where && !asOp)
          asOp = b;
    composites.emplace_back(&c, asOp);
  }
  if (composites.empty())
    return;
  std::stable_sort(composites.begin(), composites.end(), [](const auto &a, const auto &b) {
    return patternSize(a.first->root) > patternSize(b.first->root);
  });
  llvm::StringMap<std::vector<size_t>> byRootOp;
  for (size_t i = 0; i < composites.size(); ++i)
    byRootOp[composites[i].first->root.op].push_back(i);
  std::vector<bool> claimed(model.graph.nodes().size(), false);
  std::vector<std::pair<CompositeMatch, const ir::OpBinding *>> found;
  const auto &order = model.graph.topologicalOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node &n = **it;
    auto ops = byRootOp.find(n.opType);
    if (claimed[n.id] || ops == byRootOp.end() || !(n.domain.empty() || n.domain == "ai.onnx"))
      continue;
    for (size_t i : ops->second) {
      std::optional<CompositeMatch> m = matchComposite(*composites[i].first, model, n);
      if (!m || std::any_of(m->nodes.begin(), m->nodes.end(),
                            [&](const Node *k) { return claimed[k->id]; }))
        continue;
      for (const Node *k : m->nodes)
        claimed[k->id] = true;
      found.emplace_back(std::move(*m), composites[i].second);
      break;
    }
  }
  // Chains in topological order of their roots.
  std::reverse(found.begin(), found.end());
  for (auto &[m, b] : found) {
    plan.chains.push_back(std::move(m));
    chainBindings.push_back(b);
  }
  chainIndex.assign(model.graph.nodes().size(), -1);
  for (size_t c = 0; c < plan.chains.size(); ++c)
    for (const Node *k : plan.chains[c].nodes)
      chainIndex[k->id] = int(c);
}

void Planner::match(Node &n) {
  PlanNode pn;
  pn.node = &n;
  if (!chainIndex.empty() && chainIndex[n.id] >= 0) {
    pn.chain = chainIndex[n.id];
    pn.innerOfChain = plan.chains[pn.chain].root != &n;
    pn.binding = chainBindings[pn.chain];
  } else if (n.domain.empty() || n.domain == "ai.onnx") {
    auto it = bindingsByOp.find(n.opType);
    if (it != bindingsByOp.end())
      for (const ir::OpBinding *b : it->second) {
        if (b->where && !evaluate(*b->where, model, n))
          continue;
        if (!pn.binding) {
          pn.binding = b;
        } else if (b->opset != pn.binding->opset) {
          // Rule 13: reported once per node, naming the first two bindings.
          diags
              .emitAt(where(n), diag::err_plan_two_opsets, pn.binding->opset,
                      bindingText(*pn.binding), b->opset, bindingText(*b))
              .note(pn.binding->loc, diag::note_binding_here, bindingText(*pn.binding))
              .note(b->loc, diag::note_binding_here, bindingText(*b));
          break;
        }
      }
  }
  if (pn.binding)
    pn.opset = p.findOpset(pn.binding->opset);
  if (pn.opset && pn.opset->options)
    pn.options = OptionsRef{&*pn.opset->options, pn.opset->name};
  else
    pn.options = OptionsRef{&p.defaultOptions, "default"};
  pn.chosen = pn.options.options->base;
  if (usedOwners.insert(pn.options.owner).second)
    plan.usedOptions.push_back(pn.options);
  plan.nodes.push_back(std::move(pn));
}

void Planner::applyChoices(const Choices &choices) {
  if (choices.empty())
    return;
  llvm::StringMap<unsigned> byName; // the first node of each name, as --explain
  std::vector<std::string> names;
  for (const PlanNode &pn : plan.nodes) {
    byName.try_emplace(pn.node->displayName(), pn.node->id);
    names.push_back(pn.node->displayName());
  }
  // The config each node was first chosen with: a second choice is an error
  // even when it agrees, since one of the two is likely a typo.
  std::vector<const std::string *> chosenAs(plan.nodes.size(), nullptr);
  for (const auto &[name, config] : choices) {
    auto it = byName.find(name);
    if (it == byName.end()) {
      diags.emitAt(plan.modelName, diag::err_plan_choose_no_node, name, config,
                   didYouMean(name, names));
      continue;
    }
    PlanNode &pn = plan.nodes[it->second];
    if (pn.innerOfChain) {
      const CompositeMatch &c = plan.chains[pn.chain];
      diags.emitAt(where(*pn.node), diag::err_plan_choose_inner, name, config, c.composite->name,
                   c.root->displayName());
      continue;
    }
    if (const std::string *first = chosenAs[it->second]) {
      diags.emitAt(where(*pn.node), diag::err_plan_choose_twice, name, *first, config);
      continue;
    }
    chosenAs[it->second] = &config;
    std::optional<unsigned> index;
    std::vector<std::string> candidates;
    for (unsigned i = 0; i < pn.options.options->configs.size(); ++i) {
      if (pn.options.configId(i) == config)
        index = i;
      const std::string &cname = pn.options.options->configs[i].name;
      candidates.push_back("`" + pn.options.configId(i) + "`" +
                           (cname.empty() ? "" : " (`" + cname + "`)"));
    }
    if (!index) {
      diags.emitAt(where(*pn.node), diag::err_plan_choose_not_candidate, name, config,
                   llvm::join(candidates, ", "));
      continue;
    }
    pn.chosen = *index;
  }
  for (PlanNode &pn : plan.nodes)
    if (pn.innerOfChain)
      pn.chosen = plan.nodes[plan.chains[pn.chain].root->id].chosen;
}

/// `axis` (negative: counted from the end) as a dimension of a rank-`rank`
/// tensor, if it is one.
static std::optional<int64_t> dimOf(std::optional<int64_t> axis, size_t rank) {
  int64_t r = int64_t(rank);
  int64_t a = axis && *axis < 0 ? *axis + r : axis.value_or(-1);
  return a >= 0 && a < r ? std::optional<int64_t>(a) : std::nullopt;
}

std::optional<int64_t> plan::blockDim(const PlanWeight &w, const ir::FormatConfig &f) {
  if (!w.decl || !w.input || !w.input->constant)
    return std::nullopt;
  return dimOf(f.blockAxis == ir::BlockAxis::Output ? w.decl->outAxis : w.decl->inAxis,
               w.input->constant->dims.size());
}

/// Places a blocked format's blocks on `axis` of weight `w`: a warning when
/// the block size does not divide it (the last block is shorter), and when
/// there is no such axis the weight is planned without blocks.
void Planner::planBlocks(const PlanNode &pn, PlanWeight &w, std::optional<int64_t> axis) {
  ir::FormatConfig &f = w.config.format;
  int block = *f.block;
  if (!axis) {
    diags.emitAt(where(*pn.node), diag::warn_plan_block_no_axis, w.input->name, w.slot,
                 ir::toString(f.blockAxis), configName(pn, pn.chosen), block,
                 w.axis ? "channel" : "tensor");
    f.block.reset();
    f.blockScale.reset();
    f.blockAxis = ir::BlockAxis::Reduction;
    return;
  }
  w.blockAxis = axis;
  int64_t length = w.input->constant->dims[size_t(*axis)];
  if (length % block)
    diags.emitAt(where(*pn.node), diag::warn_plan_block_partial, w.input->name, w.slot, block,
                 ir::toString(f.blockAxis), *axis, length, length % block);
}

void Planner::planWeights(PlanNode &pn) {
  const Node &n = *pn.node;
  // A chain's constants are part of its pattern, not weights; but a node of a
  // chain that has a weight slot of its own (the MatMul of MatMul + bias Add)
  // takes it, with the chain's config.
  static const std::vector<const ir::WeightSlot *> kNoSlots;
  auto it = slotsByOp.find(n.opType);
  for (const ir::WeightSlot *ws : it == slotsByOp.end() ? kNoSlots : it->second) {
    bool seen = std::any_of(pn.weights.begin(), pn.weights.end(),
                            [&](const PlanWeight &w) { return w.slot == ws->slot; });
    if (seen || (ws->where && !evaluate(*ws->where, model, n)))
      continue;
    PlanWeight w;
    w.slot = ws->slot;
    w.decl = ws;
    w.inputIndex = ws->input;
    w.input = n.input(size_t(ws->input));
    w.config = pn.config().weightConfig(ws->slot);
    if (!w.input) {
      if (w.config.quantize)
        diags.emitAt(where(n), diag::warn_plan_missing_weight, configName(pn, pn.chosen), ws->slot,
                     n.opType, ws->input);
    } else if (!w.input->constant) {
      if (w.config.quantize)
        diags.emitAt(where(n), diag::warn_plan_weight_not_constant, ws->slot, ws->input,
                     w.input->name);
    } else {
      w.quantize = w.config.quantize;
      w.channelAxis = dimOf(ws->outAxis, w.input->constant->dims.size());
      if (w.config.perChannel)
        w.axis = w.channelAxis;
      if (w.quantize && w.config.format.block)
        planBlocks(pn, w, blockDim(w, w.config.format));
    }
    pn.weights.push_back(std::move(w));
  }
  if (pn.chain < 0)
    addConstantOperands(pn, model);
}

/// The activation quantizer of output `v` of node `pn`.
void Planner::planOutput(const PlanNode &pn, const Value *v, PlanTensor &t) {
  // Inside a fusing group (not its last node) the pattern's `with` config
  // decides, when it quantizes activations; else nothing is quantized there.
  const FusingGroup *inner = plan.innerGroupOf(pn);
  const ir::OpConfig *fused = plan.fusedConfigOf(pn);
  const ir::OpConfig &c = fused ? *fused : pn.config();
  const Node &n = *pn.node;
  t.producer = &pn;
  t.configId = fused ? fusedConfigId(*inner) : pn.options.configId(pn.chosen);
  t.method = c.activation.method;
  t.bits = c.activation.bits;
  t.signedness = c.activation.signedness;
  t.format = c.activation.format;
  if (pn.innerOfChain) {
    const CompositeMatch &m = plan.chains[pn.chain];
    t.reason =
        fmt::format("inside composite `{}` (root `{}`)", m.composite->name, m.root->displayName());
    return;
  }
  if (v->type.elem != graph::ElemType::Undefined && !graph::isFloatingPoint(v->type.elem)) {
    t.reason = fmt::format("{} values are not quantized", graph::toString(v->type.elem));
    return;
  }
  if (noQuantize.contains(n.opType)) {
    t.reason = fmt::format("the framework lists `{}` as no_quantize", n.opType);
    return;
  }
  if (inner && !fused) {
    t.reason = fmt::format("inside fusing group {}", inner->id);
    return;
  }
  if (!c.activation.quantize) {
    t.reason = fmt::format("config `{}` does not quantize activations", configName(pn, pn.chosen));
    return;
  }
  if (c.preserving && !fused) {
    t.preserving = true;
    std::vector<const Value *> ins = plan.elementInputs(pn);
    const Value *in = ins.empty() ? nullptr : ins[0];
    const PlanTensor *src = plan.tensorOf(in);
    if (in && in->constant) {
      planTable(pn, in, t);
      return;
    }
    if (!in || !src) {
      t.reason = "preserving op on a constant input";
      return;
    }
    if (!src->quantize) {
      t.reason = fmt::format("preserves its unquantized input `{}`", in->name);
      if (src->reason == kReadInFloat)
        return; // a model input moved to nodes that compute in float
      diags.emitAt(where(n), diag::warn_plan_preserving_unquantized, n.displayName(), in->name,
                   src->reason);
      return;
    }
    t.quantize = true;
    t.method = src->method;
    t.bits = src->bits;
    t.signedness = src->signedness;
    t.format = src->format;
    t.range = src->range;
    t.scale = src->scale;
    t.zeroPoint = src->zeroPoint;
    t.configId = src->configId;
    return;
  }
  t.quantize = true;
  if (c.fixedScale && c.fixedZeroPoint) {
    t.scale = c.fixedScale;
    t.zeroPoint = c.fixedZeroPoint;
    t.range = ir::fixedRange(c);
    t.signedness = ir::fixedSignedness(c);
  } else if (fw) {
    for (const ir::OpRange &r : fw->ranges)
      if (r.op == n.opType)
        t.range = std::make_pair(r.lo, r.hi);
  }
  // A known range settles `auto` signedness.
  if (t.range && t.signedness == ir::Signedness::Auto)
    t.signedness = t.range->first >= 0 ? ir::Signedness::Unsigned : ir::Signedness::Signed;
}

/// A preserving op that reads a constant table (an embedding's Gather): its
/// output keeps the grid the table is stored on, when the node's config
/// stores the table on one grid and the platform inserts preserving
/// quantizers (ONNX Runtime gathers the codes).
void Planner::planTable(const PlanNode &pn, const Value *table, PlanTensor &t) const {
  t.reason = "preserving op on a constant input";
  if (!p.insertPreservingQuantizers)
    return;
  for (const PlanWeight &w : pn.weights) {
    if (w.input != table || !w.quantize || w.axis || ir::isLut(w.config.method))
      continue;
    t.reason.clear();
    t.quantize = true;
    t.method = w.config.method;
    t.bits = w.config.bits;
    t.format = w.config.format;
    t.signedness = w.config.method == ir::QuantMethod::Uniform ? ir::Signedness::Unsigned
                                                               : ir::Signedness::Signed;
    t.range.reset();
    t.table = table;
    return;
  }
}

void Planner::planTensors() {
  const graph::Graph &g = model.graph;
  plan.tensorIndex.assign(g.values().size(), -1);
  auto add = [&](const Value *v) -> PlanTensor & {
    plan.tensorIndex[v->id] = int(plan.tensors.size());
    plan.tensors.emplace_back();
    plan.tensors.back().value = v;
    return plan.tensors.back();
  };
  // Graph inputs take the platform's default config, unless every node that
  // reads the values was chosen to compute in float (a candidate that does
  // not quantize, of options that have one that does), directly or through
  // data movement (a preserving reader whose outputs are all read so): a grid
  // nothing reads quantized only adds error (an audio input whose STFT is
  // left float). A reader whose options never quantize (a NoQuantization set)
  // still reads the input's grid, as in MCT.
  auto readInFloat = [&](const Value *v) {
    std::vector<const PlanNode *> readers;
    return plan.valueReaders(*v, readers) &&
           std::all_of(readers.begin(), readers.end(), [](const PlanNode *r) {
             const ir::Options *o = r->options.options;
             return o && !r->config().activation.quantize &&
                    std::any_of(o->configs.begin(), o->configs.end(),
                                [](const ir::OpConfig &c) { return c.activation.quantize; });
           });
  };
  const ir::Options &def = p.defaultOptions;
  for (const Value *v : g.inputs()) {
    if (v->isInitializer)
      continue;
    PlanTensor &t = add(v);
    const ir::OpConfig &c = def.baseConfig();
    t.configId = "default." + std::to_string(def.base);
    t.method = c.activation.method;
    t.bits = c.activation.bits;
    t.signedness = c.activation.signedness;
    t.format = c.activation.format;
    if (v->type.elem != graph::ElemType::Undefined && !graph::isFloatingPoint(v->type.elem))
      t.reason = fmt::format("{} values are not quantized", graph::toString(v->type.elem));
    else if (!c.activation.quantize)
      t.reason = "the default config does not quantize activations";
    else if (readInFloat(v))
      t.reason = kReadInFloat;
    else
      t.quantize = true;
  }
  if (!usedOwners.contains("default") && !g.inputs().empty()) {
    usedOwners.insert("default");
    plan.usedOptions.push_back(OptionsRef{&p.defaultOptions, "default"});
  }
  plan.tensors.reserve(plan.tensors.size() + g.values().size());
  for (const Node *n : g.topologicalOrder())
    for (const Value *v : n->outputs)
      if (v && !v->constant)
        planOutput(plan.nodes[n->id], v, add(v));
  for (PlanTensor &t : plan.tensors)
    if (t.quantize && t.format.block && !t.preserving)
      planActivationBlocks(t);
}

/// The axis node `n` reduces input `index` over, when it is a linear op's
/// data input: a MatMul's or Gemm's A its last (a Gemm with transA: its
/// first), a MatMul's B its second-to-last, a Conv's or ConvTranspose's X
/// its channels. Negative: counted from the end.
static std::optional<int64_t> reducedAxis(const graph::Model &m, const Node &n, unsigned index) {
  graph::NodeAttrs a = graph::attrsOf(m, n);
  if (n.opType == "MatMul")
    return index == 0 ? -1 : index == 1 ? std::optional<int64_t>(-2) : std::nullopt;
  if (n.opType == "Gemm" && index <= 1) {
    bool trans = a.getInt(index == 0 ? "transA" : "transB", 0) != 0;
    return index == 0 ? (trans ? 0 : 1) : (trans ? 1 : 0);
  }
  if ((n.opType == "Conv" || n.opType == "ConvTranspose") && index == 0)
    return 1;
  return std::nullopt;
}

/// An activation's blocks run along the axis its readers reduce over
/// (language.md, "Number formats"): the readers that reduce must agree, and
/// with none that does they run along the last axis (a last block is
/// shorter when the length is not a multiple). When they disagree, the
/// tensor is planned without blocks, with a warning.
void Planner::planActivationBlocks(PlanTensor &t) {
  const Value &v = *t.value;
  int block = *t.format.block;
  auto drop = [&](const std::string &why) {
    diags.emitAt(where(t.producer ? *t.producer->node : *v.uses.front().node),
                 diag::warn_plan_activation_block, v.name, t.configId, block, why);
    t.format.block.reset();
    t.format.blockAxis = ir::BlockAxis::Reduction;
  };
  if (v.uses.empty() && !t.producer)
    return;
  // Without a shape in the model, axes stay as the readers count them
  // (negative: from the end) and the quantizer places them on the shape the
  // tensor has as the model runs.
  bool known = v.hasTypeInfo && v.type.shape;
  int64_t rank = known ? int64_t(v.type.shape->size()) : 0;
  if (known && rank == 0) {
    drop("it is a scalar");
    return;
  }
  std::optional<int64_t> axis;
  for (const graph::Use &u : v.uses) {
    std::optional<int64_t> r = reducedAxis(model, *u.node, u.index);
    if (!r)
      continue;
    int64_t d = known && *r < 0 ? *r + rank : *r;
    if (axis && *axis != d) {
      drop(fmt::format("its readers reduce over different axes ({} and {})", *axis, d));
      return;
    }
    axis = d;
  }
  if (!axis)
    axis = known ? rank - 1 : -1;
  if (known && (*axis < 0 || *axis >= rank)) {
    drop(fmt::format("a reader reduces over an axis beyond its rank {}", rank));
    return;
  }
  t.blockAxis = axis;
  t.rank = rank;
}

void Planner::checkInputBits() {
  for (const Node *n : model.graph.topologicalOrder()) {
    const PlanNode &pn = plan.nodes[n->id];
    const ir::OpConfig &c = pn.config();
    // An If, Loop or Scan reads its inputs in float subgraphs (the plan does
    // not enter them): any width does.
    if (noQuantize.contains(n->opType) || c.preserving || !c.activation.quantize ||
        pn.innerOfChain || n->hasSubgraphs())
      continue;
    for (const Value *v : plan.elementInputs(pn)) {
      if (!v || v->constant || isWeightInput(pn, v))
        continue;
      const PlanTensor *t = plan.tensorOf(v);
      if (!t || !t->quantize ||
          std::find(c.inputBits.begin(), c.inputBits.end(), t->bits) != c.inputBits.end())
        continue;
      // What would fix it: another candidate of either node.
      std::vector<std::string> fixes;
      for (unsigned i = 0; i < pn.options.options->configs.size(); ++i) {
        const auto &bits = pn.options.options->configs[i].inputBits;
        if (std::find(bits.begin(), bits.end(), t->bits) != bits.end())
          fixes.push_back(fmt::format("config `{}` of `{}` accepts {} bits", configName(pn, i),
                                      n->displayName(), t->bits));
      }
      if (const PlanNode *prod = t->producer)
        for (unsigned i = 0; i < prod->options.options->configs.size(); ++i) {
          int b = prod->options.options->configs[i].activation.bits;
          if (std::find(c.inputBits.begin(), c.inputBits.end(), b) != c.inputBits.end())
            fixes.push_back(fmt::format("config `{}` makes `{}` produce {} bits",
                                        configName(*prod, i), prod->node->displayName(), b));
        }
      std::string bits;
      for (size_t k = 0; k < c.inputBits.size(); ++k)
        bits += (k ? "/" : "") + std::to_string(c.inputBits[k]);
      diags.emitAt(
          where(*n), diag::warn_plan_input_bits, n->displayName(), bits, configName(pn, pn.chosen),
          t->producer ? fmt::format("`{}` from `{}`", v->name, t->producer->node->displayName())
                      : fmt::format("graph input `{}`", v->name),
          t->bits,
          fixes.empty() ? std::string("no candidate config of either node fixes it")
                        : "fix: " + llvm::join(fixes, ", or "));
    }
  }
}

Plan plan::buildPlan(const ir::Module &, const ir::Platform &p, const ir::Capabilities &caps,
                     const ir::Framework *fw, graph::Model &model, DiagnosticEngine &diags,
                     const Choices &choices) {
  return Planner(p, caps, fw, model, diags).run(choices);
}
