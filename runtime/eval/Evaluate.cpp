//===- Evaluate.cpp - `tpcc run` and `tpcc eval` as library calls -----------===//
#include "runtime/eval/Evaluate.h"

#include "runtime/ort/OrtMode.h"
#include "runtime/ort/OrtPropagation.h"

#include "ir/graph/OnnxIO.h"
#include "runtime/DataIO.h"
#include "runtime/KernelUtil.h"
#include "runtime/MicroBatch.h"

#include "llvm/Support/FileSystem.h"

#include <fmt/format.h>

#include <chrono>

#include <map>
#include <omp.h>
#include <optional>

using namespace tpcc;
using namespace tpcc::rt;

namespace {
void phase(const std::function<void(const char *)> &f, const char *name) {
  if (f)
    f(name);
}

/// Reads a tensor file (a missing file is err_cannot_open_file); a float16
/// file is widened to float when `model` was (a float16 model computed in
/// float32).
LogicalResult readData(const std::string &path, Tensor &t, DiagnosticEngine &diags,
                       const graph::Model *model = nullptr) {
  if (!llvm::sys::fs::exists(path) || llvm::sys::fs::is_directory(path))
    return diags.emitAt("", diag::err_cannot_open_file, path,
                        llvm::sys::fs::exists(path) ? "is a directory"
                                                    : "No such file or directory");
  std::string error;
  if (readTensorFile(path, t, error)) {
    if (model && model->widenedFloat16 && t.elem() == graph::ElemType::Float16)
      t = widenToFloat(t);
    return success();
  }
  return diags.emitAt(path, diag::err_data_file, error);
}

/// Loads the model and prepares its executor; null after errors. `asOrt`
/// (`--ort-cpu`): first the rewrites ORT makes before it runs a QDQ model
/// (PadFusion, QDQPropagationTransformer, WeightBiasQuantization). `dims`:
/// sizes of symbolic input dimensions (graph::bindDims).
std::unique_ptr<Executor> load(const std::string &path, std::unique_ptr<graph::Model> &model,
                               DiagnosticEngine &diags, bool asOrt,
                               const graph::DimValues &dims = {}) {
  graph::LoadOptions options;
  options.widenFloat16 = true;
  options.dims = dims;
  model = graph::loadModel(path, diags, options);
  if (!model || diags.hasErrors())
    return nullptr;
  if (asOrt && ortLevel1Rewrites(*model) && failed(graph::verifyGraph(model->graph, path, diags)))
    return nullptr;
  return Executor::create(*model, diags);
}

/// Whether a request computes the model as ORT's CPU kernels do (`--ort-cpu`).
bool asOrt(bool ortFloat, IntegerArithmetic a) { return ortFloat && a != IntegerArithmetic::Float; }
} // namespace

LogicalResult rt::runOnFiles(const RunRequest &r, RunOutcome &out, DiagnosticEngine &diags) {
  std::unique_ptr<Executor> ex =
      load(r.model, out.model, diags, asOrt(r.ortFloat, r.arithmetic), r.dims);
  if (!ex)
    return failure();
  phase(r.phaseDone, "load");
  const auto &required = ex->requiredInputs();
  std::map<std::string, Tensor> inputs;
  bool ok = true;
  for (const auto &[name, file] : r.inputs) {
    std::string n = name;
    if (n.empty()) {
      if (r.inputs.size() != 1 || required.size() != 1)
        return diags.emitAt("", diag::err_usage,
                            fmt::format("the model has {} inputs; name each: --input NAME=FILE",
                                        out.model->graph.inputs().size()));
      n = required.front()->name;
    }
    Tensor t;
    if (succeeded(readData(file, t, diags, out.model.get())))
      inputs[n] = std::move(t);
    else
      ok = false;
  }
  if (!ok)
    return failure();
  // Output files, by output index.
  const auto &outs = out.model->graph.outputs();
  std::vector<std::pair<size_t, std::string>> files;
  for (const auto &[name, file] : r.outputs) {
    size_t k = 0;
    if (name.empty() && (r.outputs.size() != 1 || outs.size() != 1))
      return diags.emitAt(
          "", diag::err_usage,
          fmt::format("the model has {} outputs; name each: --output NAME=FILE", outs.size()));
    while (!name.empty() && k < outs.size() && outs[k]->name != name)
      ++k;
    if (k == outs.size())
      return diags.emitAt("", diag::err_usage, "the model has no output `" + name + "`");
    files.emplace_back(k, file);
  }
  phase(r.phaseDone, "read");
  RunOptions options;
  options.mode = ortMode(r.arithmetic, r.ortFloat);
  if (failed(ex->run(inputs, out.results, diags, options)))
    return failure();
  phase(r.phaseDone, "run");
  for (const auto &[k, file] : files) {
    std::string error;
    if (!writeTensorFile(file, out.results[k], error))
      return diags.emitAt("", diag::err_cannot_write_file, file, error);
  }
  out.wroteFiles = !files.empty();
  return success();
}

std::string rt::describeTensor(const Tensor &t) {
  std::string s = fmt::format("{}{}", graph::toString(t.elem()), shapeStr(t.shape()));
  if (!t.numel() || t.elem() == graph::ElemType::String)
    return s;
  double lo = t.at(0), hi = lo, sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double x = t.at(i);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  s += fmt::format("  min {:.6g}  max {:.6g}  mean {:.6g}", lo, hi, sum / double(t.numel()));
  if (t.rank() == 2 && t.dim(0) <= 16 && t.dim(1) > 1) {
    std::vector<int64_t> arg;
    for (int64_t b = 0; b < t.dim(0); ++b)
      arg.push_back(argmaxRow(t, b, t.dim(1)));
    s += fmt::format("  argmax [{}]", fmt::join(arg, ", "));
  }
  return s;
}

LogicalResult rt::evaluateModel(const EvalRequest &r, EvalOutcome &out, DiagnosticEngine &diags) {
  std::unique_ptr<graph::Model> refModel;
  // The reference is run as its file says: --dim names the model's dimensions.
  std::unique_ptr<Executor> ex = load(r.model, out.model, diags, asOrt(r.ortFloat, r.arithmetic),
                                      r.dims),
                            ref;
  if (!ex || (!r.reference.empty() && !(ref = load(r.reference, refModel, diags, false))))
    return failure();
  // Each input the model needs gets a file: by name, or the only input the
  // only unnamed file.
  const std::vector<const graph::Value *> &needed = ex->requiredInputs();
  std::vector<std::pair<const graph::Value *, Tensor>> inputs;
  std::string firstFile;
  for (const auto &[name, file] : r.data) {
    const graph::Value *in = nullptr;
    for (const graph::Value *v : needed)
      if (name.empty() ? needed.size() == 1 : v->name == name)
        in = v;
    if (!in) {
      std::string names;
      for (const graph::Value *v : needed)
        names += (names.empty() ? "`" : ", `") + v->name + "`";
      return diags.emitAt(
          "", diag::err_usage,
          name.empty()
              ? fmt::format("`{}` has {} inputs ({}): name the input of each --data "
                            "file, --data NAME=FILE",
                            r.model, needed.size(), names)
              : fmt::format("`{}` has no input `{}` (its inputs: {})", r.model, name, names));
    }
    for (const auto &have : inputs)
      if (have.first == in)
        return diags.emitAt("", diag::err_usage,
                            fmt::format("input `{}` is given --data twice", in->name));
    Tensor t;
    if (failed(readData(file, t, diags, out.model.get())))
      return failure();
    if (t.rank() < 1 || t.dim(0) == 0)
      return diags.emitAt(file, diag::err_data_file,
                          "the data holds no samples (its first dimension counts them)");
    if (!inputs.empty() && t.dim(0) != inputs.front().second.dim(0))
      return diags.emitAt(file, diag::err_data_file,
                          fmt::format("it holds {} samples, `{}` {}: every --data file holds "
                                      "the same samples",
                                      t.dim(0), firstFile, inputs.front().second.dim(0)));
    if (inputs.empty())
      firstFile = file;
    inputs.emplace_back(in, std::move(t));
  }
  for (const graph::Value *v : needed) {
    bool fed = false;
    for (const auto &have : inputs)
      fed |= have.first == v;
    if (!fed)
      return diags.emitAt(
          "", diag::err_usage,
          fmt::format("input `{}` of `{}` has no data: --data {}=FILE", v->name, r.model, v->name));
  }
  if (ref) {
    std::vector<const graph::Value *> refNeeded = ref->requiredInputs();
    bool same = refNeeded.size() == needed.size();
    for (const auto &have : inputs) {
      bool found = false;
      for (const graph::Value *v : refNeeded)
        found |= v->name == have.first->name || needed.size() == 1;
      same &= found;
    }
    if (!same)
      return diags.emitAt(
          "", diag::err_usage,
          fmt::format("the reference `{}` must take the inputs `{}` takes", r.reference, r.model));
  }
  Tensor labels;
  if (!r.labels.empty() && failed(readData(r.labels, labels, diags)))
    return failure();
  int64_t n = inputs.front().second.dim(0);
  if (labels.defined() &&
      (labels.rank() != 1 || labels.dim(0) != n || graph::isFloatingPoint(labels.elem())))
    return diags.emitAt(r.labels, diag::err_data_labels, graph::toString(labels.elem()),
                        shapeStr(labels.shape()), n);
  // A batch dimension the model fixes wins over the request.
  const graph::Value *in = inputs.front().first;
  int64_t batch = r.batch ? r.batch : 64;
  if (in->type.shape && !in->type.shape->empty() && (*in->type.shape)[0].known())
    batch = (*in->type.shape)[0].value;
  out.batch = batch = std::max<int64_t>(1, batch);
  out.samples = n;
  out.labeled = labels.defined();
  out.referenced = ref != nullptr;
  phase(r.phaseDone, "load");

  const auto &outputs = out.model->graph.outputs();
  out.sqnr.assign(ref ? outputs.size() : 0, Sqnr());
  RunOptions options;
  options.mode = ortMode(r.arithmetic, r.ortFloat);
  auto progress = [&](int64_t done) {
    if (r.progress)
      r.progress(done, n);
  };
  MicroBatchRunner runner(*ex);
  std::optional<MicroBatchRunner> refRunner; // the reference runs split the same way
  if (ref)
    refRunner.emplace(*ref);
  uint64_t warm = 0; // system allocations after the first two batches
  for (int64_t b = 0; b < n; b += batch) {
    int64_t e = std::min(n, b + batch);
    if (b == 2 * batch)
      warm = runner.memoryStats().systemAllocations;
    std::map<std::string, Tensor> feed;
    for (const auto &[v, t] : inputs)
      feed[v->name] = t.rows(b, e);
    std::vector<Tensor> res, refRes;
    auto t0 = std::chrono::steady_clock::now();
    bool ok = succeeded(runner.run(feed, res, diags, options));
    out.runSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (b >= 2 * batch && e == b + batch)
      out.steadyAllocations = int64_t(runner.memoryStats().systemAllocations - warm);
    if (ok && ref) {
      // The reference's inputs by name (a model of one input: whatever its name).
      std::map<std::string, Tensor> refFeed =
          needed.size() == 1 ? std::map<std::string, Tensor>{{ref->requiredInputs().front()->name,
                                                              feed.begin()->second}}
                             : feed;
      ok = succeeded(refRunner->run(refFeed, refRes, diags));
      if (ok && refRes.size() != res.size()) {
        diags.emitAt(r.reference, diag::err_eval_reference_outputs, refRes.size(), res.size(),
                     "outputs");
        ok = false;
      }
    }
    for (size_t k = 0; ok && ref && k < outputs.size(); ++k) {
      if (res[k].shape() != refRes[k].shape()) {
        diags.emitAt(r.reference, diag::err_eval_reference_outputs, shapeStr(refRes[k].shape()),
                     shapeStr(res[k].shape()), "shape of output " + outputs[k]->name);
        ok = false;
      }
    }
    if (!ok) {
      progress(n);
      return failure();
    }
    out.top1.add(res.front(), e - b, labels.defined() ? &labels : nullptr, b,
                 ref ? &refRes.front() : nullptr);
    for (size_t k = 0; ref && k < outputs.size(); ++k)
      out.sqnr[k].add(refRes[k], res[k]);
    progress(e);
  }
  out.peakTensorBytes = runner.memoryStats().peakInUse;
  out.microBatch = runner.microBatchSize(batch, omp_get_max_threads());
  out.integerGroups = integerGroups(*ex);
  phase(r.phaseDone, "eval");
  return success();
}

std::string rt::saturationNote(graph::Model &m) {
  ortLevel1Rewrites(m);
  std::vector<IntegerGroup> groups = saturatingGroups(m.graph);
  if (groups.empty())
    return "";
  return fmt::format("  note: {} integer group{} (first: `{}`) {} full-range int8 weights: ONNX "
                     "Runtime on x86-64 CPUs without VNNI adds their u8 x s8 products in int16 "
                     "pairs that saturate, and gives other numbers (`tpcc eval --ort-cpu "
                     "no-vnni` shows them); for such CPUs quantize for `ort_cpu_no_vnni` "
                     "(7-bit weights)\n",
                     groups.size(), groups.size() == 1 ? "" : "s",
                     groups.front().node->displayName(), groups.size() == 1 ? "has" : "have");
}
