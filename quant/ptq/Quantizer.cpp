//===- Quantizer.cpp - Calibration, thresholds, corrections -----------------===//
//
// The order follows MCT (docs/quantize.md, "Corrections"): statistics on the
// float model, then activation thresholds, input scaling and shift-negative
// correction (corrections/PostThreshold.cpp), weight thresholds, bias
// correction. Tensors whose producer only moves values (MaxPool, Reshape,
// Flatten, Transpose...) and whose input is quantized get their input's grid
// again: numerically the identity (the op's outputs are already grid values),
// and what lets ONNX Runtime keep such chains in integers.
//
//===----------------------------------------------------------------------===//
#include "quant/ptq/Quantizer.h"
#include "quant/ptq/qdq/Mx.h"

#include "quant/core/Timing.h"

#include "quant/core/stats/HessianTrace.h"

#include "ir/graph/LinearKernel.h"
#include "ir/graph/OpTraits.h"
#include "quant/core/GraphHelpers.h"
#include "quant/core/format/TwoLevel.h"
#include "quant/core/grids/Lut.h"
#include "quant/core/grids/Threshold.h"
#include "quant/ptq/corrections/PostThreshold.h"
#include "quant/ptq/qdq/Finish.h"
#include "runtime/KernelUtil.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <set>

using namespace tpcc;
using namespace tpcc::quant;
using graph::Node;
using graph::Value;

namespace {

struct Activation {
  ir::QuantMethod method;
  int bits;
  ir::Signedness signedness;
};

/// A weight the plan quantizes that gets grids here: a float constant, not
/// a bias (biases follow their kernel's scales).
bool floatKernel(const plan::PlanWeight &pw) {
  return pw.slot != "bias" && pw.quantize && pw.input && pw.input->constant &&
         pw.input->constant->elem == graph::ElemType::Float;
}

/// Images whose Hessians weigh `hmse` (docs/algorithms.md §4).
constexpr int64_t kHmseImages = 16;

/// quantizePlan's state: one plan, one recipe, one result.
class PlanQuantizer {
public:
  PlanQuantizer(const plan::Plan &plan, const QuantizeOptions &o, QuantizeResult &r,
                DiagnosticEngine &diags)
      : plan(plan), recipe(o.recipe), o(o), result(r), diags(diags),
        grids(plan.model->graph.values().size()) {}

  bool run(rt::Executor &ex, CalibrationData &data);

private:
  Activation effective(const plan::PlanTensor &t) const {
    Activation a{t.method, t.bits, t.signedness};
    if (recipe.activationBits)
      a.bits = *recipe.activationBits;
    if (recipe.activationMethod && !ir::isLut(*recipe.activationMethod))
      a.method = *recipe.activationMethod;
    return a;
  }
  bool activationGrid(const plan::PlanTensor &t, TensorStats *s);
  bool mxActivation(const plan::PlanTensor &t, TensorStats *s);
  bool weights(const plan::PlanNode &pn);
  void tableGrid(const plan::PlanTensor &t, const Value &table);
  void correctBias(const plan::PlanNode &pn, const WeightQDQ &w, const rt::Tensor &kernel,
                   TensorStats *inputStats, const edits::LinearAdjust *adjust);
  bool biasCorrected(const plan::PlanNode &pn, const WeightQDQ &w, const rt::Tensor &kernel,
                     TensorStats *inputStats, const edits::LinearAdjust *adjust);
  void report(const plan::PlanTensor &t, const QuantGrid &g, const std::string &how);

  const plan::Plan &plan;
  const ir::Recipe &recipe;
  const QuantizeOptions &o;
  QuantizeResult &result;
  DiagnosticEngine &diags;
  std::vector<std::optional<QuantGrid>> grids; ///< activation grids by value id
  std::map<unsigned, MxActivation> mx;         ///< MX activations by value id
  std::vector<std::unique_ptr<TensorStats>> stats;
  std::map<std::string, edits::LinearAdjust> adjust; ///< by linear node name
  std::set<std::string> biasWritten;
  /// `hmse`: the Hessian diagonal of each quantized kernel, by value id.
  std::map<unsigned, std::vector<float>> hessians;
  /// Constant tables whose grid a preserving op's output keeps (an
  /// embedding's Gather), by value id: the weights pass stores them so.
  std::map<unsigned, WeightQDQ> tables;
  bool weightHessians(rt::Executor &ex, CalibrationData &data);
};

/// `hmse` (MCT's HMSE): the Hessian diagonals of every weight the plan
/// quantizes with a threshold search, from 16 calibration images.
bool PlanQuantizer::weightHessians(rt::Executor &ex, CalibrationData &data) {
  std::vector<const Value *> weights;
  for (const plan::PlanNode &pn : plan.nodes)
    for (const plan::PlanWeight &pw : pn.weights) {
      if (!floatKernel(pw) || ir::isLut(withRecipeOverrides(pw.config, recipe).method) ||
          std::find(weights.begin(), weights.end(), pw.input) != weights.end())
        continue;
      weights.push_back(pw.input);
    }
  if (weights.empty())
    return true;
  std::vector<std::map<std::string, rt::Tensor>> feeds;
  if (failed(data.firstSamples(kHmseImages, feeds, diags)))
    return false;
  std::vector<std::vector<float>> diagonals;
  int64_t probes = 0;
  if (failed(weightHessianDiagonals(ex, feeds, weights, HutchinsonOptions(), diagonals, probes,
                                    diags)))
    return false;
  for (size_t k = 0; k < weights.size(); ++k)
    hessians[weights[k]->id] = std::move(diagonals[k]);
  return true;
}

void PlanQuantizer::report(const plan::PlanTensor &t, const QuantGrid &g, const std::string &how) {
  TensorReport r;
  r.tensor = t.value->name;
  if (t.producer) {
    r.node = t.producer->node->displayName();
    r.opType = t.producer->node->opType;
    r.opset = t.producer->opset ? t.producer->opset->name : "(default)";
  } else {
    r.node = "(input)";
    r.opset = "(default)";
  }
  r.config = t.configId;
  r.method = g.method;
  r.element = g.element;
  r.bits = g.bits;
  r.isSigned = g.qmin < 0;
  r.threshold = how;
  r.scale = g.scale;
  r.zeroPoint = g.zeroPoint;
  r.lo = g.lo;
  r.hi = g.hi;
  result.tensors.push_back(std::move(r));
}

/// An MX activation: no grid to calibrate (the model computes each block's
/// scale); its report row names the element with threshold `mx`.
bool PlanQuantizer::mxActivation(const plan::PlanTensor &t, TensorStats *s) {
  Activation eff = effective(t);
  MxActivation a;
  a.element = t.format.element;
  a.bits = a.element == ir::ElementFormat::Int ? eff.bits : ir::elementBits(a.element);
  a.block = *t.format.block;
  // The plan's axis on the shape the tensor has as the model runs.
  a.rank = t.rank ? t.rank : s ? int64_t(s->shape().size()) : 0;
  a.axis = *t.blockAxis < 0 ? *t.blockAxis + a.rank : *t.blockAxis;
  std::string why = a.rank == 0 ? "it was never computed on the calibration data" : checkMx(a);
  if (why.empty() && s && s->shape().size() == size_t(a.rank))
    a.length = s->shape()[size_t(a.axis)];
  else if (why.empty() && s && !s->shape().empty())
    why = fmt::format("the plan gives it rank {}, the calibration data {}", a.rank,
                      s->shape().size());
  if (!why.empty()) {
    diags.emitAt(plan.modelName, diag::warn_plan_activation_block, t.value->name, t.configId,
                 a.block, why);
    return false;
  }
  mx[t.value->id] = a;
  QuantGrid g = a.element == ir::ElementFormat::Int ? symmetricGrid(1, a.bits, true)
                                                    : floatGridOfScale(a.element, 1);
  g.method = ir::QuantMethod::PowerOfTwo;
  g.scale = 0; // per block, as the model runs
  report(t, g, "mx");
  result.tensors.back().block = a.block;
  return true;
}

bool PlanQuantizer::activationGrid(const plan::PlanTensor &t, TensorStats *s) {
  Activation a = effective(t);
  QuantGrid g;
  std::string how;
  if (failed(quant::selectTensorGrid(t, a.method, a.bits, a.signedness, s, recipe, plan.modelName,
                                     g, how, diags)))
    return false;
  grids[t.value->id] = g;
  report(t, g, how);
  return true;
}

/// The output of a preserving op that reads a constant table (a Gather of
/// an embedding) keeps the grid the table is stored on, as ONNX Runtime's
/// quantizer stores embeddings: the runtime then gathers the codes. Only a
/// table quantized on one grid gives its output one.
void PlanQuantizer::tableGrid(const plan::PlanTensor &t, const Value &table) {
  const plan::PlanNode &pn = *t.producer;
  for (const plan::PlanWeight &pw : pn.weights) {
    if (pw.input != &table || !floatKernel(pw) || recipe.quantizeWeights == false)
      continue;
    ir::AttrConfig c = withRecipeOverrides(pw.config, recipe);
    if (ir::isLut(c.method) || c.bits > 16)
      return;
    rt::Tensor x = rt::Tensor::fromGraph(*table.constant);
    for (int64_t i = 0; i < x.numel(); ++i)
      if (isMaskValue(x.data<float>()[i]))
        return; // the weights pass reports it
    WeightQDQ w = selectWeightGrids(x, c, pw.axis, recipe, nullptr, plan::blockDim(pw, c.format));
    if (w.grids.size() != 1 || w.blocked())
      return;
    grids[t.value->id] = w.grids[0];
    report(t, w.grids[0], "table");
    tables.emplace(table.id, std::move(w));
    return;
  }
}

bool PlanQuantizer::weights(const plan::PlanNode &pn) {
  const Node &n = *pn.node;
  for (const plan::PlanWeight &pw : pn.weights) {
    if (!floatKernel(pw) || recipe.quantizeWeights == false)
      continue;
    ir::AttrConfig c = withRecipeOverrides(pw.config, recipe);
    rt::Tensor t = rt::Tensor::fromGraph(*pw.input->constant);
    auto adj = adjust.find(n.name);
    const edits::LinearAdjust *a = adj == adjust.end() ? nullptr : &adj->second;
    if (a && a->kernel && pw.inputIndex == 1 && int64_t(a->kernel->size()) == t.numel())
      std::copy(a->kernel->begin(), a->kernel->end(), t.data<float>()); // input_scaling
    int64_t bad = 0;
    MaskCount masks;
    for (int64_t i = 0; i < t.numel(); ++i) {
      bad += !std::isfinite(t.data<float>()[i]);
      masks.add(t.data<float>()[i]);
    }
    if (masks.n && !pw.decl) {
      // A constant operand (not a kernel) that is an attention mask.
      result.keptFloat.emplace_back(
          pw.input->name,
          fmt::format("a constant operand of `{}`, holds {}", n.displayName(), masks.describe()));
      continue;
    }
    if (bad) {
      diags.emitAt(plan.modelName, diag::err_quant_constant_nonfinite, pw.input->name, bad);
      return false;
    }
    int width = ir::isLut(c.method) ? c.lutBits.value_or(8) : c.bits;
    if (width > 16) {
      diags.emitAt(plan.modelName, diag::err_quant_unsupported,
                   fmt::format("weight `{}` of `{}`: {}-bit weights do not fit the 16-bit "
                               "integers of QDQ models",
                               pw.input->name, n.displayName(), width));
      return false;
    }
    auto h = hessians.find(pw.input->id);
    auto table = tables.find(pw.input->id);
    WeightQDQ w =
        table != tables.end()
            ? table->second
            : selectWeightGrids(t, c, pw.axis, recipe, h == hessians.end() ? nullptr : &h->second,
                                plan::blockDim(pw, c.format));
    w.node = n.name;
    w.inputIndex = unsigned(pw.inputIndex);
    w.operand = !pw.decl;
    int64_t channels = int64_t(w.grids.size());
    TensorReport r;
    r.tensor = pw.input->name;
    r.node = n.displayName();
    r.opType = n.opType;
    r.opset = pn.opset ? pn.opset->name : "(default)";
    r.config = pn.options.configId(pn.chosen);
    r.weight = true;
    r.method = c.method;
    r.bits = c.bits;
    r.isSigned = true;
    r.threshold = ir::isLut(c.method) ? "k-means"
                  : c.format.scale == ir::ScaleFormat::E8M0 && c.method != ir::QuantMethod::Uniform
                      ? "mx"
                      : ir::toString(recipe.weightsThreshold);
    r.scale = w.grids[0].scale;
    r.channels = channels;
    r.block = w.blocked() ? w.block : 0;
    if (w.twoLevel)
      r.blockFactor = w.twoLevel->factor;
    r.element = w.grids[0].element;
    r.lo = w.grids[0].lo;
    r.hi = w.grids[0].hi;
    result.tensors.push_back(std::move(r));
    if ((recipe.biasCorrection || (a && a->bias)) &&
        (graph::opTraits(n).linear || edits::isMatMulLayer(&n)) && pw.inputIndex == 1)
      correctBias(pn, w, t, n.input(0) ? stats[n.input(0)->id].get() : nullptr, a);
    result.spec.weights.push_back(std::move(w));
  }
  return true;
}

/// MCT's bias correction (docs/quantize.md, "Corrections"): c_o = sum_i
/// E[o,i] mu_i with E the kernel's quantization error summed over its spatial
/// taps and mu the mean of input channel i on the calibration data; b <- b - c.
///
/// With shift_negative the input's mean moves by delta and the bias starts
/// from the compensated one; with input_scaling the mean is scaled by t/m.
void PlanQuantizer::correctBias(const plan::PlanNode &pn, const WeightQDQ &w,
                                const rt::Tensor &kernel, TensorStats *inputStats,
                                const edits::LinearAdjust *adjust) {
  const Node &n = *pn.node;
  if (edits::biasQuantized(plan, n))
    return; // its grid was chosen from the values as they are
  if (adjust && adjust->bias) {
    biasWritten.insert(n.name);
    if (!recipe.biasCorrection || !inputStats || !biasCorrected(pn, w, kernel, inputStats, adjust))
      result.biases.emplace_back(n.name, *adjust->bias);
    return;
  }
  if (inputStats)
    biasCorrected(pn, w, kernel, inputStats, adjust);
}

/// Writes the corrected bias of `pn`; false when it cannot (shapes).
bool PlanQuantizer::biasCorrected(const plan::PlanNode &pn, const WeightQDQ &w,
                                  const rt::Tensor &kernel, TensorStats *inputStats,
                                  const edits::LinearAdjust *adjust) {
  std::optional<std::vector<float>> bias =
      correctedBias(*plan.model, pn, w, kernel, inputStats->channelMean(), adjust);
  if (!bias)
    return false;
  result.biases.emplace_back(pn.node->name, std::move(*bias));
  return true;
}

bool PlanQuantizer::run(rt::Executor &ex, CalibrationData &data) {
  auto t0 = Clock::now();
  auto progress = [&](int64_t done) {
    if (o.progress)
      o.progress("calibration", done, data.total());
  };
  std::vector<StatsRequest> wanted = statisticsRequests(plan, recipe);
  bool reuse = o.stats != nullptr;
  for (const StatsRequest &r : wanted) {
    const TensorStats *have =
        reuse && r.value->id < o.stats->size() ? (*o.stats)[r.value->id].get() : nullptr;
    reuse = have && have->batches() > 0 && have->channelAxis() == r.channelAxis;
  }
  if (reuse)
    stats = std::move(*o.stats);
  else if (failed(collectStatistics(ex, data, wanted, stats, progress, diags)))
    return false;
  result.samples = data.total();
  result.seconds[0] = since(t0);

  t0 = Clock::now();
  const graph::Graph &g = plan.model->graph;
  bool ok = true;
  // Activations, inputs first, then in topological order (plan order).
  for (const plan::PlanTensor &t : plan.tensors) {
    if (!t.quantize || recipe.quantizeActivations == false)
      continue;
    if (t.preserving) {
      // The output keeps its input's grid; it gets a quantizer of its own only
      // when the platform asks for one (MCT's insert_preserving_quantizers).
      if (!plan.platform->insertPreservingQuantizers) {
        result.withoutQuantizer.insert(t.value->name);
        continue;
      }
      const Value *in = t.producer ? t.producer->node->input(0) : nullptr;
      if (in && in->constant)
        tableGrid(t, *in);
      else if (in && grids[in->id])
        grids[t.value->id] = grids[in->id];
      continue;
    }
    TensorStats *s = stats[t.value->id].get();
    if (s && s->masks().n > 0 && !(t.scale && t.zeroPoint)) {
      result.keptFloat.emplace_back(t.value->name, "holds " + s->masks().describe());
      continue;
    }
    if (t.format.block && t.blockAxis && mxActivation(t, s))
      continue;
    ok &= activationGrid(t, s);
  }
  if (!ok)
    return false;
  // Post-threshold corrections: new tensors in the QDQ copy, grids moved.
  edits::PostThreshold post{plan, recipe, grids, stats, result, {}, {}, {}};
  if (recipe.inputScaling && recipe.quantizeActivations != false)
    edits::decideInputScaling(post);
  if (recipe.shiftNegative.enabled && recipe.quantizeActivations != false)
    edits::decideShiftNegative(post);
  adjust = std::move(post.linear);
  for (const auto &v : g.values())
    if (grids[v->id])
      result.spec.activations.push_back({v->name, *grids[v->id]});
  for (ActivationQDQ &a : post.added)
    result.spec.activations.push_back(std::move(a));
  for (const auto &[id, a] : mx)
    result.spec.mxActivations.push_back({g.values()[id]->name, a});
  result.seconds[1] = since(t0);

  t0 = Clock::now();
  if (recipe.weightsThreshold == ir::ThresholdMethod::HMSE && recipe.quantizeWeights != false &&
      !weightHessians(ex, data))
    return false;
  for (const plan::PlanNode &pn : plan.nodes)
    if (!weights(pn))
      return false;
  for (const auto &[node, a] : adjust) {
    if (a.bias && !biasWritten.count(node)) // its kernel is not quantized
      result.biases.emplace_back(node, *a.bias);
    if (a.kernel)
      result.kernels.push_back({node, 1, *a.kernel});
  }
  if (result.edits.empty())
    completeSpec(*plan.model, result); // else applyCorrections completes it
  result.seconds[2] = since(t0);
  return true;
}

} // namespace

std::optional<std::vector<float>> quant::correctedBias(const graph::Model &model,
                                                       const plan::PlanNode &pn, const WeightQDQ &w,
                                                       const rt::Tensor &kernel,
                                                       std::vector<double> mu,
                                                       const edits::LinearAdjust *adjust) {
  const Node &n = *pn.node;
  for (double &x : mu)
    x = adjust ? x * adjust->inputScale + adjust->inputShift : x;
  std::vector<float> q = w.fakeQuantized(kernel);
  const float *x = kernel.data<float>();
  std::vector<double> corr;
  graph::NodeAttrs attrs = graph::attrsOf(model, n);
  std::optional<int64_t> outAxis = edits::kernelOutAxis(pn);
  double scale = 1;
  if (n.opType == "Conv") {
    std::optional<graph::LinearKernel> K =
        graph::LinearKernel::convolution(kernel.shape(), attrs.getInt("group", 1), false);
    if (!K || outAxis != 0 || int64_t(mu.size()) != K->channelsPerGroup * K->groups)
      return std::nullopt;
    corr.assign(size_t(K->rows), 0);
    for (int64_t oc = 0; oc < K->rows; ++oc)
      for (int64_t col = 0; col < K->cols; col += K->taps) {
        double e = 0; // one input channel's taps
        for (int64_t k = 0; k < K->taps; ++k) {
          size_t at = size_t(K->at(oc, col + k));
          e += double(q[at]) - double(x[at]);
        }
        corr[size_t(oc)] += e * mu[size_t(K->inputChannel(oc, col))];
      }
  } else { // Gemm (y = alpha A B + beta C) and MatMul (its bias the Add's)
    std::optional<graph::LinearKernel> K =
        outAxis && kernel.rank() == 2 ? graph::LinearKernel::matrix(kernel.shape(), *outAxis)
                                      : std::nullopt;
    double beta = attrs.getFloat("beta", 1.0);
    if (attrs.getInt("transA", 0) != 0 || !K || int64_t(mu.size()) != K->cols || beta == 0)
      return std::nullopt;
    scale = attrs.getFloat("alpha", 1.0) / beta;
    corr.assign(size_t(K->rows), 0);
    for (int64_t k = 0; k < K->cols; ++k)
      for (int64_t j = 0; j < K->rows; ++j) {
        size_t at = size_t(K->at(j, k));
        corr[size_t(j)] += (double(q[at]) - double(x[at])) * mu[size_t(k)];
      }
  }
  std::vector<float> bias(corr.size(), 0.f);
  if (adjust && adjust->bias) {
    if (adjust->bias->size() != corr.size())
      return std::nullopt;
    bias = *adjust->bias;
  } else if (const Value *b = edits::linearBias(n).value()) {
    if (!b->constant || b->constant->elem != graph::ElemType::Float ||
        b->constant->numElements() != int64_t(corr.size()) ||
        (!edits::isOp(&n, "MatMul") && b->constant->dims.size() != 1))
      return std::nullopt; // a bias of another shape (a scalar Gemm C): left as it is
    rt::Tensor bt = rt::Tensor::fromGraph(*b->constant);
    std::copy(bt.data<float>(), bt.data<float>() + bt.numel(), bias.begin());
  } else if (edits::isOp(&n, "MatMul")) {
    return std::nullopt; // no Add to hold the correction
  }
  for (size_t i = 0; i < bias.size(); ++i)
    bias[i] = float(double(bias[i]) - scale * corr[i]);
  return bias;
}

ir::AttrConfig quant::withRecipeOverrides(ir::AttrConfig c, const ir::Recipe &recipe) {
  if (recipe.weightsBits)
    c.bits = *recipe.weightsBits;
  if (recipe.weightsMethod)
    c.method = *recipe.weightsMethod;
  if (recipe.perChannel)
    c.perChannel = *recipe.perChannel;
  return c;
}

std::vector<StatsRequest> quant::statisticsRequests(const plan::Plan &plan,
                                                    const ir::Recipe &recipe) {
  std::vector<std::optional<int>> axis(plan.model->graph.values().size());
  for (const plan::PlanTensor &t : plan.tensors)
    if (t.quantize && !t.preserving && !(t.scale && t.zeroPoint))
      axis[t.value->id] = -1;
  if (recipe.biasCorrection)
    for (const plan::PlanNode &pn : plan.nodes) {
      // A Conv's or Gemm's input channels run along axis 1, a MatMul's along
      // its last.
      const Node &n = *pn.node;
      bool matmul = edits::isMatMulLayer(&n);
      if ((graph::opTraits(n).linear || matmul) && n.input(0) && !n.input(0)->constant)
        axis[n.input(0)->id] = matmul ? TensorStats::kLastAxis : 1;
    }
  std::vector<StatsRequest> out;
  for (const auto &v : plan.model->graph.values())
    if (axis[v->id])
      out.push_back({v.get(), *axis[v->id]});
  return out;
}

LogicalResult quant::selectTensorGrid(const plan::PlanTensor &t, ir::QuantMethod method, int bits,
                                      ir::Signedness signedness, TensorStats *s,
                                      const ir::Recipe &recipe, const std::string &modelName,
                                      QuantGrid &g, std::string &how, DiagnosticEngine &diags) {
  const std::string &name = t.value->name;
  if (bits > 16) {
    return diags.emitAt(
        modelName, diag::err_quant_unsupported,
        fmt::format("tensor `{}`: {}-bit activations do not fit the 16-bit integers "
                    "of QDQ models",
                    name, bits));
  }
  ir::ElementFormat element = t.format.element;
  if (t.scale && element != ir::ElementFormat::Int) { // fixed, floating-point
    g = floatGridOfScale(element, *t.scale, method);
    how = "fixed";
  } else if (t.scale && t.zeroPoint) { // fixed by the platform
    bool isSigned = *t.zeroPoint < 0 || signedness == ir::Signedness::Signed;
    g.method = method;
    g.bits = bits;
    g.isSigned = isSigned;
    g.scale = *t.scale;
    g.zeroPoint = *t.zeroPoint;
    g.qmin = isSigned ? -(int64_t(1) << (bits - 1)) : 0;
    g.qmax = isSigned ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
    g.lo = g.scale * double(g.qmin - g.zeroPoint);
    g.hi = g.scale * double(g.qmax - g.zeroPoint);
    g.threshold = std::max(-g.lo, g.hi);
    how = "fixed";
  } else if (t.range && std::isfinite(t.range->first) && std::isfinite(t.range->second)) {
    // A bounded op (Sigmoid, Softmax...): no clipping on its known range.
    g = element != ir::ElementFormat::Int
            ? floatGrid(element, std::max(-t.range->first, t.range->second),
                        method == ir::QuantMethod::PowerOfTwo, recipe.minThreshold)
            : rangeGrid(method, t.range->first, t.range->second, bits, recipe.minThreshold);
    how = "known range";
  } else {
    if (!s || s->batches() == 0) {
      return diags.emitAt(modelName, diag::err_quant_unsupported,
                          fmt::format("tensor `{}` has no statistics (it is not a float tensor "
                                      "the model computes)",
                                      name));
    }
    Histogram h = s->histogram();
    h.removeOutliers(recipe.zThreshold);
    bool isSigned;
    if (signedness == ir::Signedness::Signed)
      isSigned = true;
    else if (signedness == ir::Signedness::Unsigned)
      isSigned = false;
    else if (t.range)
      isSigned = t.range->first < 0;
    else
      isSigned = h.minNonEmpty() < 0;
    SelectionOptions so;
    so.error = recipe.activationThreshold;
    so.p = recipe.lp;
    so.minThreshold = recipe.minThreshold;
    so.element = element;
    g = selectActivationGrid(h, method, bits, isSigned || so.element != ir::ElementFormat::Int, so);
    how = ir::toString(recipe.activationThreshold);
    // The uniform search may reach past the bounds of the Clip that computes
    // the tensor (MSE: up to 1.2 times its largest value). There the grid
    // only wastes steps, and ONNX Runtime keeps such a Clip, so the Conv
    // before it runs in float: the grid ends at the bound.
    const graph::Node *clip = t.value->producer;
    double clipLo, clipHi;
    if (method == ir::QuantMethod::Uniform && clip && clip->domain.empty() &&
        clip->opType == "Clip" &&
        edits::clipBounds(graph::NodeAttrs(*clip, nullptr), *clip, clipLo, clipHi) &&
        (g.hi > clipHi || g.lo < clipLo))
      g = uniformGrid(std::max(g.lo, clipLo), std::min(g.hi, clipHi), bits);
  }
  return success();
}

/// The grid of one group of `n` weights (a tensor, a channel or a block) in
/// format `c`: the threshold search of `o`, or k-means for LUT methods; an
/// e8m0 scale is OCP MX's shared scale (mxGrid), other scale formats round
/// the searched scale (withScaleFormat).
static QuantGrid groupGrid(const float *v, int64_t n, const ir::AttrConfig &c, bool perChannel,
                           const SelectionOptions &o) {
  if (ir::isLut(c.method))
    return selectLutGrid(v, n, c.method, c.bits, c.lutBits.value_or(8));
  if (c.format.scale == ir::ScaleFormat::E8M0 && c.method != ir::QuantMethod::Uniform) {
    auto [lo, hi] = valueRange(v, n);
    return mxGrid(std::max(-lo, hi), c.bits, o.minThreshold, c.format.element);
  }
  return withScaleFormat(selectWeightGrid(v, n, c.method, c.bits, perChannel, o), c.format.scale);
}

/// One grid per block of `c.format.block` indices along `blockAxis`, in
/// the order of the blocked scale's elements (NumberFormat::blockShape);
/// with a `block_scale`, their scales as factors under a scale per channel
/// along `axis` (when it is not the block axis) or per tensor
/// (format/TwoLevel.h).
static WeightQDQ selectBlockGrids(const rt::Tensor &t, const ir::AttrConfig &c, int64_t blockAxis,
                                  std::optional<int64_t> axis, const SelectionOptions &so,
                                  const float *hx) {
  WeightQDQ w;
  w.block = *c.format.block;
  w.blockAxis = blockAxis;
  GroupLayout l = blockLayout(w.block, blockAxis, t.shape());
  w.grids.resize(l.grids);
  const float *x = t.data<float>();
  // Block g's values (and Hessian weights) into v (and h).
  auto values = [&](size_t g, float *v, float *h) {
    int64_t r = int64_t(g) % l.inner, jb = int64_t(g) / l.inner % l.blocks,
            o = int64_t(g) / l.inner / l.blocks;
    int64_t n = 0;
    for (int64_t j = jb * w.block; j < std::min(l.channels, (jb + 1) * w.block); ++j, ++n) {
      int64_t at = (o * l.channels + j) * l.inner + r;
      v[n] = x[at];
      if (h)
        h[n] = hx[at];
    }
    return n;
  };
  // Two-level: each block's own scale first, unrounded.
  ir::AttrConfig own = c;
  if (c.format.blockScale)
    own.format.scale = ir::ScaleFormat::Float32;
  rt::parallelFor(int64_t(l.grids), w.block * 256, [&](int64_t b, int64_t e) {
    std::vector<float> v(size_t(w.block)), h(hx ? v.size() : 0);
    SelectionOptions mine = so;
    mine.hessian = hx ? h.data() : nullptr;
    for (int64_t g = b; g < e; ++g) {
      int64_t n = values(size_t(g), v.data(), hx ? h.data() : nullptr);
      w.grids[size_t(g)] = groupGrid(v.data(), n, own, true, mine);
    }
  });
  if (c.format.blockScale) {
    int64_t groupAxis = c.perChannel && axis && *axis != blockAxis ? *axis : -1;
    w.twoLevel = factorScales(w.grids, w.blockShape(t.shape()), groupAxis, c.format.scale,
                              *c.format.blockScale, w.block, so, hx != nullptr, values);
  }
  return w;
}

WeightQDQ quant::selectWeightGrids(const rt::Tensor &t, const ir::AttrConfig &c,
                                   std::optional<int64_t> axis, const ir::Recipe &recipe,
                                   const std::vector<float> *hessian,
                                   std::optional<int64_t> blockAxis) {
  SelectionOptions so;
  so.error = recipe.weightsThreshold;
  so.p = recipe.lp;
  so.minThreshold = recipe.minThreshold;
  so.element = c.format.element;
  const float *x = t.data<float>();
  const float *hx = hessian && int64_t(hessian->size()) == t.numel() ? hessian->data() : nullptr;
  if (c.format.block && blockAxis && *blockAxis >= 0 && *blockAxis < t.rank())
    return selectBlockGrids(t, c, *blockAxis, axis, so, hx);
  WeightQDQ w;
  int64_t outer = 1, channels = 1, inner = t.numel();
  if (c.perChannel && axis && t.rank() > 0) {
    w.axis = *axis;
    channels = t.dim(w.axis);
    inner = 1;
    for (int64_t d = w.axis + 1; d < t.rank(); ++d)
      inner *= t.dim(d);
    outer = t.numel() / std::max<int64_t>(1, channels * inner);
  }
  w.grids.resize(size_t(channels));
  rt::parallelFor(channels, 1 << 16, [&](int64_t b, int64_t e) {
    std::vector<float> v(size_t(outer * inner)), h(hx ? v.size() : 0);
    SelectionOptions mine = so;
    mine.hessian = hx ? h.data() : nullptr;
    for (int64_t ch = b; ch < e; ++ch) {
      for (int64_t o = 0; o < outer; ++o) {
        int64_t from = (o * channels + ch) * inner;
        std::copy(x + from, x + from + inner, v.begin() + o * inner);
        if (hx)
          std::copy(hx + from, hx + from + inner, h.begin() + o * inner);
      }
      w.grids[size_t(ch)] = groupGrid(v.data(), int64_t(v.size()), c, w.axis >= 0, mine);
    }
  });
  return w;
}

LogicalResult quant::quantizePlan(const plan::Plan &plan, rt::Executor &floatEx,
                                  CalibrationData &data, const QuantizeOptions &options,
                                  QuantizeResult &result, DiagnosticEngine &diags) {
  PlanQuantizer q(plan, options, result, diags);
  return success(q.run(floatEx, data));
}
