//===- SecondOrder.cpp - Layer-wise second-order rounding -----------------===//
#include "quant/learn/gptq/SecondOrder.h"

#include "ir/graph/NodeAttrs.h"
#include "ir/graph/OnnxIO.h"
#include "quant/core/GraphHelpers.h"
#include "quant/core/Timing.h"
#include "quant/learn/finetune/Quantizers.h"
#include "quant/learn/gptq/Lapack.h"
#include "quant/learn/gptq/LutRefit.h"
#include "quant/learn/gptq/Patches.h"
#include "quant/ptq/qdq/Mx.h"
#include "runtime/KernelUtil.h"
#include "runtime/ops/ConvGeometry.h"

#include <fmt/format.h>

#include <limits>

using namespace tpcc;
using namespace tpcc::quant;
using graph::ElemType;
using rt::Tensor;

namespace {

/// Patches per block (GramAccumulator::sumBlock).
constexpr int64_t kChunk = 4096;

/// A quantized kernel the rounding handles: W as rows (output channels) x
/// columns (the inputs one output reads), in `groups` independent groups.
struct Layer {
  const graph::Node *node = nullptr;
  size_t spec = 0; ///< its WeightQDQ
  size_t step = 0; ///< the executor's step that runs it
  graph::LinearKernel kernel;
  rt::ConvGeometry geo;
};

/// Why the kernel `w` of `n` (quantized as `wq` says) is left as rounded to
/// nearest, or "" when the rounding takes it; fills `l`.
std::string classify(const graph::Model &m, const graph::Node &n, const WeightQDQ &wq,
                     const Tensor &w, Layer &l) {
  if (wq.grids.empty())
    return "no grid";
  for (const QuantGrid &g : wq.grids)
    if (ir::isLut(g.method) && g.lut.empty())
      return "a look-up-table grid without a table";
  if (wq.inputIndex != 1 || w.elem() != ElemType::Float)
    return "not a float kernel";
  graph::NodeAttrs a = graph::attrsOf(m, n);
  bool perChannel = wq.grids.size() > 1 && !wq.blocked();
  if (n.opType == "Conv" || n.opType == "ConvTranspose") {
    bool t = n.opType == "ConvTranspose";
    // Per-channel grids go along the output channels: axis 0 of a Conv's
    // kernel, axis 1 (the group's outputs) of a ConvTranspose's.
    if (w.rank() < 3 || w.rank() > 4 || (perChannel && wq.axis != (t ? 1 : 0)))
      return "a " + n.opType + " other than 1-D or 2-D with per-output-channel grids";
    std::optional<graph::LinearKernel> k =
        graph::LinearKernel::convolution(w.shape(), a.getInt("group", 1), t);
    if (!k)
      return "its groups do not divide its channels";
    l.kernel = *k;
    return "";
  }
  if (w.rank() != 2)
    return "a " + n.opType + " kernel that is not a matrix";
  int64_t rowAxis = 0; // Gemm with transB: W is [N, K]
  if (n.opType == "Gemm") {
    if (a.getInt("transA", 0) != 0 || a.getFloat("alpha", 1.0) != 1.0)
      return "a Gemm with transA or alpha";
    rowAxis = a.getInt("transB", 0) == 0 ? 1 : 0;
  } else if (n.opType == "MatMul") {
    rowAxis = 1;
  } else {
    return "a " + n.opType + " (only Conv, ConvTranspose, Gemm and MatMul kernels)";
  }
  if (perChannel && wq.axis != rowAxis)
    return "grids along an axis other than the output";
  l.kernel = *graph::LinearKernel::matrix(w.shape(), rowAxis);
  return "";
}

/// The grid of row `r` of layer `l` among `grids` (one, or one per output
/// channel of a group: a grouped ConvTranspose's groups share them).
const QuantGrid &gridOfRow(const Layer &l, const std::vector<QuantGrid> &grids, int64_t r) {
  if (grids.size() == 1)
    return grids.front();
  return grids[size_t(l.kernel.conv && l.kernel.transposed ? r % l.kernel.rowsPerGroup : r)];
}

/// Adds the patches layer `l` reads from input `x` to the groups' sums:
/// blocks of kChunk patches (im2col for convolutions, per group), laid out
/// column by column, summed in parallel and added in block order.
bool addPatches(const Layer &l, const Tensor &x, std::vector<GramAccumulator> &grams,
                std::string &error) {
  const float *xs = x.data<float>();
  if (!l.kernel.conv) {
    if (x.rank() < 1 || x.dim(x.rank() - 1) != l.kernel.cols) {
      error = "its input's last dimension is not the kernel's " + std::to_string(l.kernel.cols);
      return false;
    }
    int64_t rows = x.numel() / l.kernel.cols, blocks = (rows + kChunk - 1) / kChunk;
    std::vector<GramAccumulator::Block> sums(static_cast<size_t>(blocks));
    rt::parallelFor(blocks, kChunk * l.kernel.cols * l.kernel.cols, [&](int64_t b0, int64_t b1) {
      std::vector<float> t(static_cast<size_t>(kChunk * l.kernel.cols));
      for (int64_t k = b0; k < b1; ++k) {
        const float *p = xs + k * kChunk * l.kernel.cols;
        int64_t m = std::min(kChunk, rows - k * kChunk);
        for (int64_t r = 0; r < m; ++r)
          for (int64_t c = 0; c < l.kernel.cols; ++c)
            t[size_t(c * kChunk + r)] = p[r * l.kernel.cols + c];
        GramAccumulator::sumBlock(t.data(), m, l.kernel.cols, kChunk, sums[size_t(k)]);
      }
    });
    for (const GramAccumulator::Block &b : sums)
      grams.front().add(b);
    return true;
  }
  // Convolutions: the patches of each group's output positions.
  if (x.rank() != int64_t(l.geo.kernel.size()) + 2 ||
      x.dim(1) != l.kernel.channelsPerGroup * l.kernel.groups) {
    error = "its input does not have the kernel's " +
            std::to_string(l.kernel.channelsPerGroup * l.kernel.groups) + " channels";
    return false;
  }
  int64_t positions = convPositions(l.geo, x.dim(0)), cols = l.kernel.cols;
  int64_t perGroup = (positions + kChunk - 1) / kChunk, blocks = l.kernel.groups * perGroup;
  std::vector<GramAccumulator::Block> sums(static_cast<size_t>(blocks));
  rt::parallelFor(blocks, kChunk * cols * cols, [&](int64_t b0, int64_t b1) {
    std::vector<float> buf(static_cast<size_t>(kChunk * cols));
    for (int64_t k = b0; k < b1; ++k) {
      int64_t grp = k / perGroup, p0 = (k % perGroup) * kChunk,
              p1 = std::min(positions, p0 + kChunk);
      convPatches(l.kernel, l.geo, x, grp, p0, p1, buf.data(), kChunk);
      GramAccumulator::sumBlock(buf.data(), p1 - p0, cols, kChunk, sums[size_t(k)]);
    }
  });
  for (int64_t k = 0; k < blocks; ++k)
    grams[size_t(k / perGroup)].add(sums[size_t(k)]);
  return true;
}

} // namespace

LogicalResult quant::secondOrderRounding(graph::Model &model, QuantizeResult &result,
                                         CalibrationData &data, const SecondOrderSettings &settings,
                                         SecondOrderReport &report, DiagnosticEngine &diags,
                                         const std::function<void(int64_t, int64_t)> &progress) {
  auto t0 = Clock::now();
  report = SecondOrderReport();
  report.settings = settings;
  std::string where = model.path.empty() ? std::string("<model>") : model.path;
  graph::Graph &g = model.graph;
  if (!lapack::loadError().empty())
    return diags.emitAt(where, diag::err_run_node, "second-order rounding: " + lapack::loadError());
  std::unique_ptr<rt::Executor> ex = rt::Executor::create(model, diags);
  if (!ex)
    return failure();

  // The activations as the QDQ model computes them.
  std::vector<std::unique_ptr<TrainableQuantizer>> fake(g.values().size());
  for (const ActivationQDQ &a : result.spec.activations)
    if (const graph::Value *v = g.findValue(a.value)) {
      TrainableQuantizerConfig c;
      c.method = a.grid.method;
      c.bits = a.grid.bits;
      c.isSigned = a.grid.isSigned;
      c.grids = {a.grid};
      fake[v->id] = fixedQuantizer(c);
    }
  std::vector<const MxActivation *> mx(g.values().size(), nullptr);
  for (const MxActivationQDQ &a : result.spec.mxActivations)
    if (const graph::Value *v = g.findValue(a.value))
      mx[v->id] = &a.format;

  // The layers, in the order the model runs them.
  std::vector<Layer> layers;
  std::vector<bool> taken(g.values().size(), false);
  for (size_t k = 0; k < result.spec.weights.size(); ++k) {
    const WeightQDQ &wq = result.spec.weights[k];
    const graph::Node *n = edits::nodeNamed(g, wq.node);
    const graph::Value *wv = n ? n->input(wq.inputIndex) : nullptr;
    if (!n || !wv || !wv->constant || taken[wv->id] || wq.operand)
      continue;
    Layer l;
    l.node = n;
    l.spec = k;
    l.step = ex->stepOf(*n);
    std::string why = classify(model, *n, wq, *ex->constant(*wv), l);
    if (!why.empty()) {
      report.skipped.emplace_back(wq.node, why);
      continue;
    }
    taken[wv->id] = true;
    layers.push_back(std::move(l));
  }
  std::stable_sort(layers.begin(), layers.end(),
                   [](const Layer &a, const Layer &b) { return a.step < b.step; });
  if (layers.empty()) {
    noteNothingToRound(diags, where, "second-order rounding", report.skipped);
    return success();
  }

  // The calibration batches, and the last step that reads each value.
  std::vector<std::map<std::string, Tensor>> feeds;
  if (failed(data.firstSamples(std::numeric_limits<int64_t>::max(), feeds, diags)))
    return failure();
  report.samples = data.total();
  std::vector<int64_t> lastRead(g.values().size(), -1);
  for (const auto &n : g.nodes())
    for (const graph::Value *in : n->inputs)
      if (in)
        lastRead[in->id] = std::max<int64_t>(lastRead[in->id], int64_t(ex->stepOf(*n)));

  std::vector<Tensor> substitutes(g.values().size());
  auto substitute = [&](const graph::Value &v) -> const Tensor * {
    return substitutes[v.id].defined() ? &substitutes[v.id] : nullptr;
  };
  auto transform = [&](const graph::Value &v, Tensor &t) {
    if (fake[v.id] && t.elem() == ElemType::Float)
      t = fake[v.id]->forward(t);
    else if (mx[v.id] && t.elem() == ElemType::Float) {
      t = t.clone(); // the data may be shared
      applyMx(t, *mx[v.id]);
    }
  };
  std::vector<std::vector<Tensor>> state(feeds.size());
  size_t from = 0;
  for (size_t li = 0; li < layers.size(); ++li) {
    Layer &l = layers[li];
    const WeightQDQ &wq = result.spec.weights[l.spec];
    const graph::Value *wv = l.node->input(wq.inputIndex), *xv = l.node->input(0);
    const Tensor &w = *ex->constant(*wv);
    std::vector<GramAccumulator> grams;
    for (int64_t k = 0; k < l.kernel.groups; ++k)
      grams.emplace_back(l.kernel.cols);
    // Every batch runs up to the layer; its input's patches are summed.
    for (size_t b = 0; b < feeds.size(); ++b) {
      rt::RunOptions ro;
      ro.substitute = substitute;
      ro.transform = transform;
      ro.keep = &state[b];
      ro.stopBefore = l.step;
      std::vector<Tensor> outs;
      LogicalResult ok = from == 0 ? ex->run(feeds[b], outs, diags, ro)
                                   : ex->runFrom(from, std::move(state[b]), outs, diags, ro);
      if (failed(ok))
        return failure();
      const Tensor &x = state[b][xv->id];
      if (!x.defined() || x.elem() != ElemType::Float)
        return diags.emitAt(graph::describeNode(where, *l.node), diag::err_run_node,
                            "second-order rounding: its input has no float value");
      std::string error;
      if (l.kernel.conv && b == 0) {
        std::unique_ptr<rt::NodeState> none;
        rt::KernelContext kc(*l.node, model.opsetVersion("").value_or(1), none);
        if (!(l.kernel.transposed ? rt::deconvGeometry(kc, x.shape(), w.shape(), l.geo)
                                  : rt::convGeometry(kc, x.shape(), w.shape(), l.geo)))
          return diags.emitAt(graph::describeNode(where, *l.node), diag::err_run_node,
                              "second-order rounding: " + kc.error);
      }
      if (!addPatches(l, x, grams, error))
        return diags.emitAt(graph::describeNode(where, *l.node), diag::err_run_node,
                            "second-order rounding: " + error);
      // Keep what the steps from this layer on read.
      for (size_t id = 0; id < state[b].size(); ++id)
        if (state[b][id].defined() && lastRead[id] < int64_t(l.step))
          state[b][id] = Tensor();
    }
    from = l.step;

    // Round each group's rows.
    GptqLayerReport lr;
    lr.node = l.node->displayName();
    lr.rows = l.kernel.rows;
    lr.cols = l.kernel.cols;
    lr.groups = l.kernel.groups;
    int64_t rowsPer = l.kernel.rows / l.kernel.groups;
    // The kernel as rows x columns: as it was, and rounded.
    std::vector<double> original(size_t(l.kernel.rows * l.kernel.cols)), quantized(original.size());
    // A blocked kernel's elements each have the grid of their block (GPTQ's
    // groups, fixed before rounding: its static groups).
    GroupLayout blocks = wq.layout(w.shape());
    auto gridOf = [&](int64_t row, int64_t c) -> const QuantGrid & {
      return wq.blocked() ? wq.grids[blocks.groupOf(l.kernel.at(row, c))]
                          : gridOfRow(l, wq.grids, row);
    };
    for (int64_t grp = 0; grp < l.kernel.groups; ++grp) {
      std::vector<double> wg(size_t(rowsPer * l.kernel.cols));
      std::vector<QuantGrid> grids;
      std::vector<uint32_t> index;
      for (int64_t r = 0; r < rowsPer; ++r) {
        int64_t row = grp * rowsPer + r;
        if (!wq.blocked())
          grids.push_back(gridOf(row, 0));
        for (int64_t c = 0; c < l.kernel.cols; ++c) {
          wg[size_t(r * l.kernel.cols + c)] = double(w.data<float>()[l.kernel.at(row, c)]);
          if (wq.blocked())
            index.push_back(uint32_t(blocks.groupOf(l.kernel.at(row, c))));
        }
      }
      std::copy(wg.begin(), wg.end(), original.begin() + grp * rowsPer * l.kernel.cols);
      const GramAccumulator &gram = grams[size_t(grp)];
      SecondOrderResult res;
      lr.singular |=
          !roundSecondOrder(wg, rowsPer, l.kernel.cols, wq.blocked() ? wq.grids : grids, gram.xxt(),
                            gram.count(), settings, res, wq.blocked() ? &index : nullptr);
      lr.result.lossNearest += res.lossNearest * double(rowsPer) / double(l.kernel.rows);
      lr.result.lossRounded += res.lossRounded * double(rowsPer) / double(l.kernel.rows);
      lr.result.dampening = std::max(lr.result.dampening, res.dampening);
      lr.result.deadInputs += res.deadInputs;
      std::copy(wg.begin(), wg.end(), quantized.begin() + grp * rowsPer * l.kernel.cols);
    }
    // LUT kernels: each table refitted to the rounded weights that use it.
    std::vector<QuantGrid> refitted = wq.grids;
    if (ir::isLut(wq.grids.front().method)) {
      std::vector<std::vector<double>> hs(static_cast<size_t>(l.kernel.groups));
      for (int64_t grp = 0; grp < l.kernel.groups; ++grp) {
        const GramAccumulator &gram = grams[size_t(grp)];
        for (double v : gram.xxt())
          hs[size_t(grp)].push_back(2 * v / double(std::max<int64_t>(1, gram.count())));
      }
      auto rowOf = [&](int64_t row) {
        return LutRow{&original[size_t(row * l.kernel.cols)],
                      &quantized[size_t(row * l.kernel.cols)], hs[size_t(row / rowsPer)].data()};
      };
      // The rows each table serves (a shared grid: all of them).
      std::vector<std::vector<LutRow>> served(refitted.size());
      for (int64_t row = 0; row < l.kernel.rows; ++row)
        served[size_t(&gridOfRow(l, refitted, row) - refitted.data())].push_back(rowOf(row));
      std::vector<LutRefit> fits(refitted.size());
      rt::parallelFor(int64_t(fits.size()),
                      l.kernel.cols * l.kernel.cols * l.kernel.rows / int64_t(fits.size()),
                      [&](int64_t t0, int64_t t1) {
                        for (int64_t t = t0; t < t1; ++t)
                          fits[size_t(t)] =
                              refitLutTable(refitted[size_t(t)], served[size_t(t)], l.kernel.cols);
                      });
      for (const LutRefit &f : fits) {
        lr.result.lossRounded -= (f.lossBefore - f.lossAfter) / double(l.kernel.rows);
        lr.lutRefitted += f.refitted;
      }
      lr.lutTables = int64_t(fits.size());
    }
    // The kernel in the model's layout; a corrected bias's shift, below.
    std::vector<float> rounded(size_t(w.numel()));
    std::vector<double> meanShift(size_t(l.kernel.rows), 0.0); // (nearest − rounded) · E[x]
    for (int64_t row = 0; row < l.kernel.rows; ++row) {
      const GramAccumulator &gram = grams[size_t(row / rowsPer)];
      for (int64_t c = 0; c < l.kernel.cols; ++c) {
        double q = quantized[size_t(row * l.kernel.cols + c)];
        rounded[size_t(l.kernel.at(row, c))] = float(q);
        double nearest = gridOf(row, c).quantize(original[size_t(row * l.kernel.cols + c)]);
        meanShift[size_t(row)] +=
            (nearest - q) * gram.total()[size_t(c)] / double(std::max<int64_t>(1, gram.count()));
      }
    }
    result.spec.weights[l.spec].grids = std::move(refitted);
    if (grams.front().count() < l.kernel.cols)
      diags.emitAt(graph::describeNode(where, *l.node), diag::note_gptq_singular,
                   grams.front().count(), l.kernel.cols, lr.result.dampening);
    // The kernel, rounded, from here on (and in the model).
    substitutes[wv->id] = Tensor(ElemType::Float, w.shape());
    std::memcpy(substitutes[wv->id].raw(), rounded.data(), rounded.size() * sizeof(float));
    edits::overwriteInitializer(g, *wv, rounded);
    result.trainedWeights.push_back({l.node->name, wq.inputIndex, rounded});
    // A bias that bias correction moved for the nearest rounding's error
    // moves by the difference: b + (Q_nearest − Q) E[x].
    auto corrected = std::find_if(result.biases.begin(), result.biases.end(),
                                  [&](const auto &b) { return b.first == l.node->name; });
    // (A MatMul layer's bias is the constant of the Add after it.)
    const graph::Value *bv = edits::linearBias(*l.node).value();
    if (corrected != result.biases.end() && bv && bv->constant &&
        bv->constant->numElements() == l.kernel.rows &&
        int64_t(corrected->second.size()) == l.kernel.rows) {
      for (int64_t r = 0; r < l.kernel.rows; ++r)
        corrected->second[size_t(r)] += float(meanShift[size_t(r)]);
      const std::vector<float> &b = corrected->second;
      substitutes[bv->id] = Tensor(ElemType::Float, bv->constant->dims);
      std::memcpy(substitutes[bv->id].raw(), b.data(), b.size() * sizeof(float));
      edits::overwriteInitializer(g, *bv, b);
    }
    report.layers.push_back(std::move(lr));
    if (progress)
      progress(int64_t(li + 1), int64_t(layers.size()));
  }
  report.seconds = since(t0);
  return success();
}

LogicalResult SecondOrderStage::run(StageContext &ctx, std::unique_ptr<StageReport> &report,
                                    DiagnosticEngine &diags) const {
  auto r = std::make_unique<SecondOrderReport>();
  auto progress = [&](int64_t done, int64_t total) {
    if (ctx.progress)
      ctx.progress(name(), done, total);
  };
  if (failed(secondOrderRounding(ctx.model, ctx.result, ctx.data, settings, *r, diags, progress)))
    return failure();
  report = std::move(r);
  return success();
}

void SecondOrderReport::print(llvm::raw_ostream &os) const {
  const SecondOrderReport &report = *this;
  if (report.layers.empty())
    return;
  double nearest = 0, rounded = 0;
  for (const GptqLayerReport &l : report.layers) {
    nearest += l.result.lossNearest;
    rounded += l.result.lossRounded;
  }
  os << fmt::format("  gptq: second_order over {} samples, {:.2f} s: {} layers, output error "
                    "{:.4g} -> {:.4g} (summed over the layers){}\n",
                    report.samples, report.seconds, report.layers.size(), nearest, rounded,
                    report.skipped.empty() ? std::string()
                                           : fmt::format("; {} kernels left as rounded to nearest",
                                                         report.skipped.size()));
}

void SecondOrderReport::writeJSON(llvm::json::OStream &j) const {
  const SecondOrderReport &report = *this;
  j.attributeObject("gptq", [&] {
    j.attribute("method", "second_order");
    j.attribute("dampening", settings.dampening);
    j.attribute("act_order", settings.actOrder);
    j.attribute("samples", report.samples);
    j.attribute("seconds", report.seconds);
    j.attribute("lapack", lapack::describe());
    j.attributeArray("layers", [&] {
      for (const GptqLayerReport &l : report.layers)
        j.object([&] {
          j.attribute("node", l.node);
          j.attribute("rows", l.rows);
          j.attribute("columns", l.cols);
          j.attribute("groups", l.groups);
          j.attribute("loss_nearest", l.result.lossNearest);
          j.attribute("loss_rounded", l.result.lossRounded);
          j.attribute("dampening", l.result.dampening);
          j.attribute("dead_inputs", l.result.deadInputs);
          j.attribute("singular", l.singular);
          if (l.lutTables > 0)
            j.attributeObject("lut", [&] {
              j.attribute("tables", l.lutTables);
              j.attribute("refitted", l.lutRefitted);
            });
        });
    });
    writeSkippedJSON(report.skipped, j);
  });
}
