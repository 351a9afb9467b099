//===- Resources.cpp - What a plan's choices cost the hardware -------------===//
//
// Every figure is first written as a function of the candidates of at most
// two variable nodes (a Table): a tensor's bits depend on its producer's
// candidate and, through preserving producers, on the node that decides its
// quantizer; a kernel's BOPs on its own candidate and its input's bits. A
// table becomes an expression as its smallest value (a constant) plus, per
// choice or pair of choices, what it adds to that.
//
// Activation: the live interval of each countable tensor (one that some
// assignment quantizes and whose rank is known) is [its producer's step, the
// last step that reads it] in the topological order; graph inputs start at
// step 0, graph outputs live to the last step. Sweeping the steps, a step's
// live set is skipped when nothing dies there (it is a subset of the next
// one's) or when nothing is born there and something died just before (a
// subset of the previous one's); identical sets keep the first step. Of the
// cuts that do not depend on any choice only the largest is kept. Building
// is linear in the sum of the kept live sets.
//
// Three variables in one figure (a preserving node whose candidates differ in
// whether they preserve, behind another such node) would need a product of
// three choices: the nodes between the figure's own node and the deciding
// one are then taken at their chosen configs.
//
//===----------------------------------------------------------------------===//

#include "plan/Resources.h"

#include "ir/graph/LinearKernel.h"

#include <fmt/format.h>

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <array>
#include <cmath>

using namespace tpcc;
using namespace tpcc::plan;

double ResourceExpr::evaluate(const Assignment &a) const {
  double v = constant;
  for (const auto &[c, coef] : linear)
    if (a[c.node] == c.candidate)
      v += coef;
  for (const Product &p : products)
    if (a[p.a.node] == p.a.candidate && a[p.b.node] == p.b.candidate)
      v += p.coef;
  return v;
}

ResourceFigures ResourceModel::evaluate(const Assignment &a) const {
  ResourceFigures f;
  f.weightsBits = weights.evaluate(a);
  f.bops = bops.evaluate(a);
  for (size_t k = 0; k < cuts.size(); ++k) {
    double v = cuts[k].evaluate(a);
    if (v > f.activationBits) {
      f.activationBits = v;
      f.peakStep = cutSteps[k];
    }
  }
  return f;
}

namespace {

/// A value as a function of the candidates of up to two variable nodes:
/// `at[c0 * size[1] + c1]`.
template <typename T> struct Table {
  unsigned nvars = 0;
  std::array<unsigned, 2> var{{0, 0}};
  std::array<unsigned, 2> size{{1, 1}};
  llvm::SmallVector<T, 4> at;

  static Table constant(T v) {
    Table t;
    t.at.push_back(v);
    return t;
  }
  /// The value when node n takes candidate `cand(n)`.
  template <typename F> T eval(F cand) const {
    unsigned i = nvars > 0 ? cand(var[0]) : 0, j = nvars > 1 ? cand(var[1]) : 0;
    return at[i * size[1] + j];
  }
  /// Whether the value changes with variable k.
  bool dependsOn(unsigned k) const {
    for (unsigned i = 0; i < size[0]; ++i)
      for (unsigned j = 0; j < size[1]; ++j)
        if (at[i * size[1] + j] != at[(k == 0 ? 0 : i) * size[1] + (k == 1 ? 0 : j)])
          return true;
    return false;
  }
  /// Drops the variables the value does not depend on.
  void simplify() {
    if (nvars == 2 && !dependsOn(1)) {
      llvm::SmallVector<T, 4> kept;
      for (unsigned i = 0; i < size[0]; ++i)
        kept.push_back(at[i * size[1]]);
      at = std::move(kept);
      size[1] = 1;
      nvars = 1;
    }
    if (nvars >= 1 && !dependsOn(0)) {
      at.resize(size[1]); // at[0 * size[1] + j]
      var[0] = var[1];
      size[0] = size[1];
      size[1] = 1;
      --nvars;
    }
  }
};

class Builder {
public:
  Builder(const Plan &plan, const std::vector<bool> &fixed) : plan(plan) {
    const graph::Graph &g = plan.model->graph;
    order = &g.topologicalOrder();
    step.assign(g.nodes().size(), 0);
    for (size_t s = 0; s < order->size(); ++s)
      step[(*order)[s]->id] = int(s);
    isVar.assign(plan.nodes.size(), false);
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      const PlanNode &pn = plan.nodes[i];
      isVar[i] = !pn.innerOfChain && pn.options.options->configs.size() > 1 &&
                 !(i < fixed.size() && fixed[i]);
      if (isVar[i])
        m.variables.push_back(unsigned(i));
    }
    if (plan.framework)
      for (const std::string &op : plan.framework->noQuantizeOps)
        noQuantize.insert(op);
  }

  ResourceModel run() {
    tensorStates();
    weights();
    bops();
    activation();
    return std::move(m);
  }

private:
  const std::vector<ir::OpConfig> &configs(unsigned node) const {
    return plan.nodes[node].options.options->configs;
  }
  unsigned chosen(unsigned node) const {
    const PlanNode &pn = plan.nodes[node];
    return pn.innerOfChain ? plan.nodes[plan.chains[pn.chain].root->id].chosen : pn.chosen;
  }

  /// The table over `vars` (at most two kept: the first and the last) of
  /// `value(cand)`, every other node at its chosen config.
  template <typename T, typename F>
  Table<T> tabulate(llvm::SmallVector<unsigned, 3> vars, F value) const {
    if (vars.size() > 2)
      vars = {vars.front(), vars.back()};
    Table<T> t;
    t.nvars = unsigned(vars.size());
    for (unsigned k = 0; k < t.nvars; ++k) {
      t.var[k] = vars[k];
      t.size[k] = unsigned(configs(vars[k]).size());
    }
    for (unsigned i = 0; i < t.size[0]; ++i)
      for (unsigned j = 0; j < t.size[1]; ++j)
        t.at.push_back(value([&](unsigned n) {
          return t.nvars > 0 && n == t.var[0] ? i : t.nvars > 1 && n == t.var[1] ? j : chosen(n);
        }));
    t.simplify();
    return t;
  }
  template <typename T>
  static void addVars(llvm::SmallVector<unsigned, 3> &vars, const Table<T> &t) {
    for (unsigned k = 0; k < t.nvars; ++k)
      if (std::find(vars.begin(), vars.end(), t.var[k]) == vars.end())
        vars.push_back(t.var[k]);
  }

  /// Adds `scale` x table `t` to `e`: its smallest value as a constant, the
  /// rest per choice (or pair of choices).
  template <typename T> static void add(ResourceExpr &e, const Table<T> &t, double scale) {
    double lo = double(*std::min_element(t.at.begin(), t.at.end()));
    e.constant += scale * lo;
    for (unsigned i = 0; i < t.size[0]; ++i)
      for (unsigned j = 0; j < t.size[1]; ++j) {
        double d = scale * (double(t.at[i * t.size[1] + j]) - lo);
        if (d == 0)
          continue;
        if (t.nvars == 1)
          e.linear.push_back({NodeChoice{t.var[0], i}, d});
        else
          e.products.push_back({NodeChoice{t.var[0], i}, NodeChoice{t.var[1], j}, d});
      }
  }

  bool alwaysFloat(const PlanNode &pn, const graph::Value *v) const;
  void tensorStates();
  void weights();
  void bops();
  void activation();

  const Plan &plan;
  ResourceModel m;
  const std::vector<graph::Node *> *order = nullptr;
  std::vector<int> step; ///< by node id
  std::vector<bool> isVar;
  llvm::StringSet<> noQuantize;
  /// By plan tensor: its bits (0: not quantized) as a function of choices.
  std::vector<Table<int>> bits;
};

/// The planner's reasons to leave an output float that no config changes.
bool Builder::alwaysFloat(const PlanNode &pn, const graph::Value *v) const {
  if (pn.innerOfChain)
    return true;
  if (v->type.elem != graph::ElemType::Undefined && !graph::isFloatingPoint(v->type.elem))
    return true;
  if (noQuantize.contains(pn.node->opType))
    return true;
  return plan.innerGroupOf(pn) != nullptr;
}

/// Planner::planOutput for every candidate: a config that does not quantize
/// activations leaves the output float, a preserving one gives it its
/// source's bits (float when the source is), any other its activation bits.
void Builder::tensorStates() {
  bits.reserve(plan.tensors.size());
  for (const PlanTensor &t : plan.tensors) {
    if (!t.producer) { // a graph input, at the default config
      bits.push_back(Table<int>::constant(t.quantize ? t.bits : 0));
      continue;
    }
    const PlanNode &pn = *t.producer;
    unsigned p = pn.node->id;
    if (alwaysFloat(pn, t.value)) {
      // As Planner::planOutput: a pattern's config quantizes inside a group,
      // whatever the candidates.
      const ir::OpConfig *fused = plan.fusedConfigOf(pn);
      bits.push_back(Table<int>::constant(t.quantize && fused ? fused->activation.bits : 0));
      continue;
    }
    const std::vector<ir::OpConfig> &cs = configs(p);
    bool preserves = isVar[p] ? std::any_of(cs.begin(), cs.end(),
                                            [](const ir::OpConfig &c) { return c.preserving; })
                              : cs[chosen(p)].preserving;
    // What the element's first input is (Plan::elementInputs, without a copy).
    const graph::Value *in = nullptr;
    if (preserves && pn.chain >= 0 && !plan.chains[pn.chain].inputs.empty())
      in = plan.chains[pn.chain].inputs[0];
    else if (preserves && pn.chain < 0)
      in = pn.node->input(0);
    const Table<int> *src = nullptr;
    if (in && !in->constant)
      if (const PlanTensor *s = plan.tensorOf(in))
        src = &bits[size_t(s - plan.tensors.data())];
    llvm::SmallVector<unsigned, 3> vars;
    if (isVar[p])
      vars.push_back(p);
    if (src)
      addVars(vars, *src);
    bits.push_back(tabulate<int>(vars, [&](auto cand) {
      const ir::OpConfig &c = configs(p)[cand(p)];
      if (!c.activation.quantize)
        return 0;
      if (c.preserving)
        return src ? src->eval(cand) : 0;
      return c.activation.bits;
    }));
  }
}

/// The scales of a blocked format: one per block (ceil(length / block) along
/// the blocks' axis, for every position of the other axes) of the block
/// scale's width; a two-level format adds one scale per group (channel, or
/// the tensor when unblocked channels are not asked for or are the blocks'
/// axis) of the `scale` format. 0 when the framework declares no axis for
/// the blocks (the planner then drops them).
static double blockScaleBits(const PlanWeight &w, const ir::AttrConfig &a) {
  const ir::FormatConfig &f = a.format;
  const graph::Tensor &t = *w.input->constant;
  std::optional<int64_t> axis = blockDim(w, f);
  if (!axis)
    return 0;
  double length = double(t.dims[size_t(*axis)]);
  if (length == 0)
    return 0;
  double blocks = double(t.numElements()) / length * std::ceil(length / *f.block);
  if (!f.blockScale)
    return blocks * ir::scaleBits(f.scale);
  double groups = a.perChannel && w.channelAxis && *w.channelAxis != *axis
                      ? double(t.dims[size_t(*w.channelAxis)])
                      : 1;
  return blocks * ir::scaleBits(*f.blockScale) + groups * ir::scaleBits(f.scale);
}

/// The bits of a float weight element.
constexpr double kFloatWeightBits = 32;

/// Quantized weights other than biases: elements x bits, for LUT methods a
/// table of 2^bits entries of `lut_bits` (8 unless given) per channel, and
/// for blocked formats the blocks' scales (blockScaleBits); a weight config
/// `c` leaves float while another of the node's `candidates` quantizes it
/// counts 32 bits an element.
static double weightBits(const PlanNode &pn, const ir::OpConfig &c,
                         const std::vector<ir::OpConfig> &candidates) {
  double total = 0;
  for (const PlanWeight &w : pn.weights) {
    if (w.slot == "bias" || !w.input || !w.input->constant)
      continue;
    const graph::Tensor &t = *w.input->constant;
    const ir::AttrConfig &a = c.weightConfig(w.slot);
    if (!a.quantize) {
      // A weight another candidate quantizes stays float here: 32 bits an
      // element (MCT's float bit width), so leaving it float never saves memory.
      if (llvm::any_of(candidates,
                       [&](const ir::OpConfig &k) { return k.weightConfig(w.slot).quantize; }))
        total += double(t.numElements()) * kFloatWeightBits;
      continue;
    }
    total += double(t.numElements()) * a.bits;
    if (a.format.block)
      total += blockScaleBits(w, a);
    if (!ir::isLut(a.method))
      continue;
    double channels = 1;
    if (a.perChannel && w.channelAxis)
      channels = double(t.dims[size_t(*w.channelAxis)]);
    total += channels * std::ldexp(1.0, a.bits) * a.lutBits.value_or(8);
  }
  return total;
}

void Builder::weights() {
  for (unsigned i = 0; i < plan.nodes.size(); ++i) {
    const PlanNode &pn = plan.nodes[i];
    if (pn.weights.empty())
      continue;
    llvm::SmallVector<unsigned, 3> vars;
    if (isVar[i])
      vars.push_back(i);
    add(m.weights,
        tabulate<double>(
            vars, [&](auto cand) { return weightBits(pn, configs(i)[cand(i)], configs(i)); }),
        1.0);
  }
}

/// Per-sample elements of `v`: unknown and symbolic dimensions count 1;
/// none when the rank is unknown.
static std::optional<double> elementsPerSample(const graph::Value *v) {
  if (!v || !v->type.shape)
    return std::nullopt;
  double n = 1;
  for (const graph::Dim &d : *v->type.shape)
    n *= d.known() ? double(d.value) : 1;
  return n;
}

/// MACs per sample of a kernel node with weight `w`; none when a shape is
/// unknown. Each output element reads one row of the kernel read as a matrix
/// (graph::LinearKernel): Conv: output elements x its columns (C_in/group x
/// taps); ConvTranspose: input elements x the outputs one input feeds
/// (C_out/group x taps); Gemm, MatMul: output elements x K.
static std::optional<double> macs(const graph::Node &n, const graph::Tensor &w) {
  const std::vector<int64_t> &d = w.dims;
  if (d.empty() || w.numElements() == 0)
    return std::nullopt;
  const graph::Value *outValue = n.outputs.empty() ? nullptr : n.outputs[0];
  if (n.opType == "Conv" || n.opType == "ConvTranspose") {
    bool transposed = n.opType == "ConvTranspose";
    // The kernel's own shape decides (group 1: C_in/group is its axis 1).
    std::optional<graph::LinearKernel> k = graph::LinearKernel::convolution(d, 1, transposed);
    std::optional<double> in = elementsPerSample(transposed ? n.input(0) : outValue);
    if (!k)
      return std::nullopt;
    double perElement = transposed ? double(k->rowsPerGroup * k->taps) : double(k->cols);
    return in ? std::optional<double>(*in * perElement) : std::nullopt;
  }
  std::optional<double> out = elementsPerSample(outValue);
  if (!out)
    return std::nullopt;
  double k = double(d[0]);
  if (n.opType == "Gemm") {
    const graph::Attribute *t = n.attr("transB");
    if (d.size() != 2)
      return std::nullopt;
    k = double(graph::LinearKernel::matrix(d, t && t->i ? 0 : 1)->cols);
  } else if (d.size() >= 2) { // MatMul: B is [..., K, N]
    k = double(graph::LinearKernel::matrix(d, int64_t(d.size()) - 1)->cols);
  }
  return *out * k;
}

/// Kernel layers: MACs x kernel bits x the bits of input 0 (32 when float).
void Builder::bops() {
  for (unsigned i = 0; i < plan.nodes.size(); ++i) {
    const PlanNode &pn = plan.nodes[i];
    const graph::Node &n = *pn.node;
    if (!(n.domain.empty() || n.domain == "ai.onnx") ||
        !(n.opType == "Conv" || n.opType == "ConvTranspose" || n.opType == "Gemm" ||
          n.opType == "MatMul"))
      continue;
    auto kernel = std::find_if(pn.weights.begin(), pn.weights.end(), [](const PlanWeight &w) {
      return w.slot == "kernel" && w.input && w.input->constant;
    });
    if (kernel == pn.weights.end())
      continue;
    std::optional<double> mac = macs(n, *kernel->input->constant);
    if (!mac) {
      ++m.unknownMacs;
      continue;
    }
    const graph::Value *in = n.input(0);
    const PlanTensor *t = in && !in->constant ? plan.tensorOf(in) : nullptr;
    const Table<int> *inBits = t ? &bits[size_t(t - plan.tensors.data())] : nullptr;
    llvm::SmallVector<unsigned, 3> vars;
    if (isVar[i])
      vars.push_back(i);
    if (inBits)
      addVars(vars, *inBits);
    add(m.bops,
        tabulate<double>(vars,
                         [&](auto cand) {
                           const ir::AttrConfig &k = configs(i)[cand(i)].weightConfig("kernel");
                           if (!k.quantize)
                             return 0.0;
                           int a = inBits ? inBits->eval(cand) : 0;
                           return double(k.bits) * (a ? a : 32);
                         }),
        *mac);
  }
}

/// Sorts and merges the terms of `e` that name the same choices.
static void canonicalize(ResourceExpr &e) {
  auto key = [](const NodeChoice &c) { return std::make_pair(c.node, c.candidate); };
  std::sort(e.linear.begin(), e.linear.end(),
            [&](const auto &a, const auto &b) { return key(a.first) < key(b.first); });
  size_t out = 0;
  for (size_t k = 0; k < e.linear.size(); ++k) {
    if (out && key(e.linear[out - 1].first) == key(e.linear[k].first))
      e.linear[out - 1].second += e.linear[k].second;
    else
      e.linear[out++] = e.linear[k];
  }
  e.linear.resize(out);
  auto pkey = [&](const ResourceExpr::Product &p) { return std::make_pair(key(p.a), key(p.b)); };
  std::sort(e.products.begin(), e.products.end(),
            [&](const auto &a, const auto &b) { return pkey(a) < pkey(b); });
  out = 0;
  for (size_t k = 0; k < e.products.size(); ++k) {
    if (out && pkey(e.products[out - 1]) == pkey(e.products[k]))
      e.products[out - 1].coef += e.products[k].coef;
    else
      e.products[out++] = e.products[k];
  }
  e.products.resize(out);
}

void Builder::activation() {
  int steps = int(order->size());
  if (steps == 0)
    return;
  // The countable tensors, each with its interval and per-sample size.
  struct Live {
    unsigned tensor;
    int begin, end;
    double elements;
  };
  std::vector<Live> live;
  for (size_t k = 0; k < plan.tensors.size(); ++k) {
    const Table<int> &b = bits[k];
    if (*std::max_element(b.at.begin(), b.at.end()) == 0)
      continue;
    const graph::Value *v = plan.tensors[k].value;
    std::optional<double> elements = elementsPerSample(v);
    if (!elements) {
      ++m.unknownSizeTensors;
      continue;
    }
    int begin = v->producer ? step[v->producer->id] : 0, end = begin;
    for (const graph::Use &u : v->uses)
      end = std::max(end, step[u.node->id]);
    if (v->isGraphOutput)
      end = steps - 1;
    live.push_back({unsigned(k), begin, end, *elements});
  }
  // The tensors born and dying at each step: [first[s], first[s + 1]).
  std::vector<unsigned> bornFirst(size_t(steps) + 1, 0), diesFirst(size_t(steps) + 1, 0);
  for (const Live &l : live) {
    ++bornFirst[size_t(l.begin) + 1];
    ++diesFirst[size_t(l.end) + 1];
  }
  for (size_t s = 1; s <= size_t(steps); ++s) {
    bornFirst[s] += bornFirst[s - 1];
    diesFirst[s] += diesFirst[s - 1];
  }
  std::vector<unsigned> byBirth(live.size()), byDeath(live.size());
  {
    std::vector<unsigned> b(bornFirst), d(diesFirst);
    for (unsigned k = 0; k < live.size(); ++k) {
      byBirth[b[size_t(live[k].begin)]++] = k;
      byDeath[d[size_t(live[k].end)]++] = k;
    }
  }
  auto born = [&](int s) { return bornFirst[size_t(s) + 1] - bornFirst[size_t(s)]; };
  auto dies = [&](int s) { return diesFirst[size_t(s) + 1] - diesFirst[size_t(s)]; };
  std::vector<unsigned> set;                   // indices into `live`
  std::vector<unsigned> where(live.size(), 0); // position in `set`
  bool haveConstant = false;
  ResourceExpr bestConstant;
  int bestConstantStep = 0;
  std::vector<std::pair<int, ResourceExpr>> cuts;
  int runStart = 0;
  for (int s = 0; s < steps; ++s) {
    for (unsigned k = bornFirst[size_t(s)]; k < bornFirst[size_t(s) + 1]; ++k) {
      where[byBirth[k]] = unsigned(set.size());
      set.push_back(byBirth[k]);
    }
    // set(s) == set(s-1) when nothing died at s-1 and nothing is born at s.
    if (!(s > 0 && dies(s - 1) == 0 && born(s) == 0))
      runStart = s;
    bool subsetOfNext = s + 1 < steps && dies(s) == 0;
    bool subsetOfPrevious = s > 0 && born(s) == 0 && dies(s - 1) > 0;
    if (!subsetOfNext && !subsetOfPrevious && !set.empty()) {
      ResourceExpr e;
      for (unsigned k : set)
        add(e, bits[live[k].tensor], live[k].elements);
      if (e.linear.empty() && e.products.empty()) {
        if (!haveConstant || e.constant > bestConstant.constant) {
          haveConstant = true;
          bestConstant = std::move(e);
          bestConstantStep = runStart;
        }
      } else {
        canonicalize(e);
        cuts.emplace_back(runStart, std::move(e));
      }
    }
    for (unsigned k = diesFirst[size_t(s)]; k < diesFirst[size_t(s) + 1]; ++k) {
      unsigned dead = byDeath[k], pos = where[dead];
      set[pos] = set.back();
      where[set[pos]] = pos;
      set.pop_back();
    }
  }
  if (haveConstant) {
    auto it = std::lower_bound(cuts.begin(), cuts.end(), bestConstantStep,
                               [](const auto &c, int s) { return c.first < s; });
    cuts.emplace(it, bestConstantStep, std::move(bestConstant));
  }
  m.cuts.reserve(cuts.size());
  m.cutSteps.reserve(cuts.size());
  for (auto &[s, e] : cuts) {
    m.cutSteps.push_back(s);
    m.cuts.push_back(std::move(e));
  }
}

} // namespace

ResourceModel plan::buildResourceModel(const Plan &plan, const std::vector<bool> &fixed) {
  return Builder(plan, fixed).run();
}

/// Every node at `pick(node)`, inner nodes of a chain at their root's.
template <typename F> static Assignment assign(const Plan &plan, F pick) {
  Assignment a(plan.nodes.size(), 0);
  for (size_t i = 0; i < plan.nodes.size(); ++i)
    if (!plan.nodes[i].innerOfChain)
      a[i] = pick(plan.nodes[i]);
  for (size_t i = 0; i < plan.nodes.size(); ++i)
    if (plan.nodes[i].innerOfChain)
      a[i] = a[plan.chains[plan.nodes[i].chain].root->id];
  return a;
}

Assignment plan::chosenAssignment(const Plan &plan) {
  return assign(plan, [](const PlanNode &n) { return n.chosen; });
}

Assignment plan::baseAssignment(const Plan &plan) {
  return assign(plan, [](const PlanNode &n) { return n.options.options->base; });
}

/// The candidate whose (kernel bits, activation bits) is largest (`sign`
/// 1) or smallest (-1); the first of equals.
static unsigned extreme(const PlanNode &n, int sign) {
  const std::vector<ir::OpConfig> &cs = n.options.options->configs;
  auto key = [&](unsigned i) {
    return std::make_pair(sign * cs[i].weightConfig("kernel").bits, sign * cs[i].activation.bits);
  };
  unsigned best = 0;
  for (unsigned i = 1; i < cs.size(); ++i)
    if (key(i) > key(best))
      best = i;
  return best;
}

Assignment plan::maxAssignment(const Plan &plan) {
  return assign(plan, [](const PlanNode &n) { return extreme(n, 1); });
}

Assignment plan::minAssignment(const Plan &plan) {
  return assign(plan, [](const PlanNode &n) { return extreme(n, -1); });
}

ResourceReport plan::resourceReport(const Plan &plan) {
  ResourceModel m = buildResourceModel(plan);
  ResourceReport r;
  r.chosen = m.evaluate(chosenAssignment(plan));
  r.base = m.evaluate(baseAssignment(plan));
  r.max = m.evaluate(maxAssignment(plan));
  r.min = m.evaluate(minAssignment(plan));
  r.unknownSizeTensors = m.unknownSizeTensors;
  r.unknownMacs = m.unknownMacs;
  return r;
}

std::string plan::stepNodeName(const Plan &plan, int step) {
  const auto &order = plan.model->graph.topologicalOrder();
  return step >= 0 && size_t(step) < order.size() ? order[size_t(step)]->displayName() : "";
}

std::vector<DeclaredMemory> plan::declaredMemory(const Plan &plan) {
  std::vector<DeclaredMemory> out;
  if (!plan.platform || !plan.platform->resources)
    return out;
  const ir::PlatformResources &r = *plan.platform->resources;
  auto add = [&](const std::optional<ir::Budget> &b, ir::Resource res) {
    if (b && !b->relative)
      out.push_back({res, &*b});
  };
  add(r.weightsMemory, ir::Resource::WeightsMemory);
  add(r.activationMemory, ir::Resource::ActivationMemory);
  add(r.totalMemory, ir::Resource::TotalMemory);
  return out;
}

double plan::memoryBytes(const ResourceFigures &f, ir::Resource r) {
  switch (r) {
  case ir::Resource::WeightsMemory:
    return f.weightsBytes();
  case ir::Resource::ActivationMemory:
    return f.activationBytes();
  case ir::Resource::TotalMemory:
    return f.totalBytes();
  case ir::Resource::Bops:
    break;
  }
  return f.bops;
}

std::string plan::resourceName(ir::Resource r) {
  std::string s = ir::toString(r);
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

LogicalResult plan::checkPlatformMemory(const Plan &plan, DiagnosticEngine &diags) {
  std::vector<DeclaredMemory> declared = declaredMemory(plan);
  if (declared.empty())
    return success();
  ResourceReport r = resourceReport(plan);
  bool fits = true;
  for (const DeclaredMemory &d : declared) {
    double chosen = memoryBytes(r.chosen, d.resource), min = memoryBytes(r.min, d.resource);
    std::string name = resourceName(d.resource);
    if (min > d.budget->value) {
      fits = false;
      auto diag = diags.emitAt(plan.modelName, diag::err_plan_does_not_fit, plan.platform->name,
                               name, d.budget->text, ir::formatBytes(min));
      if (d.budget->loc.isValid())
        diag.note(d.budget->loc, diag::note_declared_here, ir::toString(d.resource));
    } else if (chosen > d.budget->value) {
      auto diag = diags.emitAt(plan.modelName, diag::warn_plan_does_not_fit_chosen,
                               ir::formatBytes(chosen), plan.platform->name, name, d.budget->text,
                               ir::formatBytes(min), ir::flagOf(d.resource));
      if (d.budget->loc.isValid())
        diag.note(d.budget->loc, diag::note_declared_here, ir::toString(d.resource));
    }
  }
  return fits ? success() : failure();
}

std::string plan::formatCount(double v) {
  static const char *const scales[] = {"", " k", " M", " G", " T", " P"};
  size_t k = 0;
  while (k + 1 < std::size(scales) && std::fabs(v) >= 999.5) {
    v /= 1000;
    ++k;
  }
  if (k == 0)
    return fmt::format("{:.0f}", v);
  return fmt::format(std::fabs(v) < 9.995   ? "{:.2f}{}"
                     : std::fabs(v) < 99.95 ? "{:.1f}{}"
                                            : "{:.0f}{}",
                     v, scales[k]);
}

std::string plan::formatAmount(ir::Resource r, double v) {
  return r == ir::Resource::Bops ? formatCount(v) + " BOPs" : ir::formatBytes(v);
}
