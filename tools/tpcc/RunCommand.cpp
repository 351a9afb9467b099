//===- RunCommand.cpp - `tpcc run` and `tpcc eval` ---------------------------===//
//
// `tpcc run` runs a model once on the tensors it is given and writes or
// summarizes its outputs. `tpcc eval` runs a model over a data set in
// batches and reports accuracy (with labels), top-1 agreement and per-output
// SQNR against a reference model, and throughput. Both check the model (every
// operator has a kernel) and the data (names, types, shapes, finite values)
// before running anything.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"
#include "runtime/DataIO.h"
#include "runtime/Executor.h"
#include "tools/tpcc/Driver.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>

using namespace tpcc;
using namespace tpcc::driver;

static const char *runUsage = R"(usage:
  tpcc run MODEL.onnx [--input [NAME=]FILE]... [--output [NAME=]FILE]...
      runs MODEL once; FILEs are .npy or ONNX TensorProto .pb (told by their
      bytes); without --output, prints each output's shape and statistics
  tpcc eval MODEL.onnx --data FILE [--labels FILE] [--reference OTHER.onnx]
            [--batch N]
      runs MODEL over the samples of FILE (its first dimension) in batches of
      N (default 64) and reports accuracy against integer class LABELS,
      top-1 agreement and SQNR (dB) of each output against OTHER, and
      throughput
options: --time, --progress=auto|always|never, --color=auto|always|never,
  --ort-cpu=vnni|no-vnni  compute the QDQ groups ONNX Runtime runs as integer
                          kernels as it does on x86-64 CPUs with VNNI (exact int32
                          sums) or without (u8 x s8 pairs added in int16, saturating);
                          without it, the float model the QDQ graph defines
)";

namespace {
struct RunOptions {
  std::string command, model, data, labels, reference;
  std::vector<std::pair<std::string, std::string>> inputs, outputs; // NAME (may be ""), FILE
  int64_t batch = 0;
  bool time = false;
  std::string progress = "auto", color = "auto";
  rt::IntegerArithmetic arithmetic = rt::IntegerArithmetic::Float; ///< --ort-cpu
};

/// Diagnostics of one command, printed as they come.
struct Reporter {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  bool color = false;
  /// Prints what was collected; true when there were errors.
  bool flush() {
    bool errors = diags.hasErrors();
    diags.print(llvm::errs(), color);
    return errors;
  }
};
} // namespace

static int parseRunArgs(const std::vector<std::string> &args, RunOptions &o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto value = [&](const char *flag, std::string &out) -> int {
      std::string f = flag;
      if (a.compare(0, f.size() + 1, f + "=") == 0) {
        out = a.substr(f.size() + 1);
        return 1;
      }
      if (a != f)
        return 0;
      if (i + 1 >= args.size())
        return -1;
      out = args[++i];
      return 1;
    };
    auto named = [](const std::string &v) {
      size_t eq = v.find('=');
      return eq == std::string::npos ? std::make_pair(std::string(), v)
                                     : std::make_pair(v.substr(0, eq), v.substr(eq + 1));
    };
    std::string v;
    int r;
    if (a == "--help" || a == "-h") {
      llvm::outs() << runUsage;
      return ExitOK;
    } else if (a == "--time") {
      o.time = true;
    } else if ((r = value("--input", v)) || (r = value("-i", v))) {
      if (r < 0 || v.empty())
        return usageError("--input needs a file: --input [NAME=]FILE");
      o.inputs.push_back(named(v));
    } else if ((r = value("--output", v)) || (r = value("-o", v))) {
      if (r < 0 || v.empty())
        return usageError("--output needs a file: --output [NAME=]FILE");
      o.outputs.push_back(named(v));
    } else if ((r = value("--data", v))) {
      if (r < 0 || v.empty())
        return usageError("--data needs a file");
      o.data = v;
    } else if ((r = value("--labels", v))) {
      if (r < 0 || v.empty())
        return usageError("--labels needs a file");
      o.labels = v;
    } else if ((r = value("--reference", v))) {
      if (r < 0 || v.empty())
        return usageError("--reference needs a model");
      o.reference = v;
    } else if ((r = value("--batch", v))) {
      if (r < 0 || v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos ||
          std::stoll(v) == 0)
        return usageError("--batch takes a positive number");
      o.batch = std::stoll(v);
    } else if ((r = value("--ort-cpu", v))) {
      if (r < 0 || (v != "vnni" && v != "no-vnni"))
        return usageError("--ort-cpu takes vnni or no-vnni");
      o.arithmetic = v == "vnni" ? rt::IntegerArithmetic::Exact
                                 : rt::IntegerArithmetic::SaturatingPairs;
    } else if ((r = value("--progress", v))) {
      if (r < 0 || (v != "auto" && v != "always" && v != "never"))
        return usageError("--progress takes auto, always or never");
      o.progress = v;
    } else if ((r = value("--color", v))) {
      if (r < 0 || (v != "auto" && v != "always" && v != "never"))
        return usageError("--color takes auto, always or never");
      o.color = v;
    } else if (a.size() > 1 && a[0] == '-') {
      return usageError("unknown option `" + a + "` for " + o.command);
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      return usageError(o.command + " takes one model; found `" + o.model + "` and `" + a + "`");
    }
  }
  if (o.model.empty())
    return usageError(o.command + " needs a model: `tpcc " + o.command + " MODEL.onnx ...`");
  if (o.command == "run" && (!o.data.empty() || !o.labels.empty() || !o.reference.empty() || o.batch))
    return usageError("--data, --labels, --reference and --batch work with `tpcc eval`");
  if (o.command == "eval") {
    if (o.data.empty())
      return usageError("eval needs data: --data FILE");
    if (!o.inputs.empty() || !o.outputs.empty())
      return usageError("eval reads --data; --input and --output work with `tpcc run`");
  }
  return -1;
}

/// Reads a tensor file; reports a missing file as an I/O error (`io`).
static bool readData(const std::string &path, rt::Tensor &t, Reporter &r, bool &io) {
  if (!llvm::sys::fs::exists(path) || llvm::sys::fs::is_directory(path)) {
    r.diags.emitAt("", diag::err_cannot_open_file, path,
                   llvm::sys::fs::exists(path) ? "is a directory" : "No such file or directory");
    io = true;
    return false;
  }
  std::string error;
  if (rt::readTensorFile(path, t, error))
    return true;
  r.diags.emitAt(path, diag::err_data_file, error);
  return false;
}

/// Loads the model and prepares its executor; null after errors (printed).
static std::unique_ptr<rt::Executor> prepare(const std::string &path,
                                             std::unique_ptr<graph::Model> &model, Reporter &r,
                                             int &status) {
  model = graph::loadModel(path, r.diags);
  std::unique_ptr<rt::Executor> ex;
  if (model && !r.diags.hasErrors())
    ex = rt::Executor::create(*model, r.diags);
  if (!ex) {
    bool io = !r.diags.getDiagnostics().empty() &&
              r.diags.getDiagnostics().back().kind == diag::err_cannot_open_file;
    r.flush();
    status = io ? ExitUsage : ExitInputErrors;
  }
  return ex;
}

static std::string stats(const rt::Tensor &t) {
  std::string s = fmt::format("{}{}", graph::toString(t.elem()), rt::shapeStr(t.shape()));
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
    for (int64_t b = 0; b < t.dim(0); ++b) {
      int64_t best = 0;
      for (int64_t k = 1; k < t.dim(1); ++k)
        if (t.at(b * t.dim(1) + k) > t.at(b * t.dim(1) + best))
          best = k;
      arg.push_back(best);
    }
    s += fmt::format("  argmax [{}]", fmt::join(arg, ", "));
  }
  return s;
}

static int runOnce(const RunOptions &o, Reporter &r) {
  PhaseTimer timer(o.time);
  std::unique_ptr<graph::Model> model;
  int status = ExitOK;
  std::unique_ptr<rt::Executor> ex = prepare(o.model, model, r, status);
  if (!ex)
    return status;
  timer.done("load");
  const auto &required = ex->requiredInputs();
  std::map<std::string, rt::Tensor> inputs;
  bool io = false, ok = true;
  for (const auto &[name, file] : o.inputs) {
    std::string n = name;
    if (n.empty()) {
      if (o.inputs.size() != 1 || required.size() != 1)
        return usageError(fmt::format("the model has {} inputs; name each: --input NAME=FILE",
                                      model->graph.inputs().size()));
      n = required.front()->name;
    }
    rt::Tensor t;
    if (readData(file, t, r, io))
      inputs[n] = std::move(t);
    else
      ok = false;
  }
  if (!ok) {
    r.flush();
    return io ? ExitUsage : ExitInputErrors;
  }
  // Output files, by output index.
  const auto &outs = model->graph.outputs();
  std::vector<std::pair<size_t, std::string>> files;
  for (const auto &[name, file] : o.outputs) {
    if (name.empty()) {
      if (o.outputs.size() != 1 || outs.size() != 1)
        return usageError(fmt::format("the model has {} outputs; name each: --output NAME=FILE",
                                      outs.size()));
      files.emplace_back(0, file);
      continue;
    }
    size_t k = 0;
    while (k < outs.size() && outs[k]->name != name)
      ++k;
    if (k == outs.size())
      return usageError("the model has no output `" + name + "`");
    files.emplace_back(k, file);
  }
  timer.done("read");
  std::vector<rt::Tensor> results;
  rt::RunOptions runOptions;
  runOptions.arithmetic = o.arithmetic;
  if (!ex->run(inputs, results, r.diags, runOptions)) {
    r.flush();
    return ExitInputErrors;
  }
  timer.done("run");
  r.flush(); // warnings
  for (const auto &[k, file] : files) {
    std::string error;
    if (!rt::writeTensorFile(file, results[k], error)) {
      llvm::errs() << "tpcc: error: cannot write `" << file << "`: " << error << "\n";
      return ExitUsage;
    }
  }
  if (files.empty())
    for (size_t k = 0; k < outs.size(); ++k)
      llvm::outs() << outs[k]->name << ": " << stats(results[k]) << "\n";
  timer.done("write");
  return ExitOK;
}

static int64_t argmaxRow(const rt::Tensor &t, int64_t row, int64_t width) {
  int64_t best = 0;
  for (int64_t k = 1; k < width; ++k)
    if (t.at(row * width + k) > t.at(row * width + best))
      best = k;
  return best;
}

static int evaluate(const RunOptions &o, Reporter &r) {
  PhaseTimer timer(o.time);
  std::unique_ptr<graph::Model> model, refModel;
  int status = ExitOK;
  std::unique_ptr<rt::Executor> ex = prepare(o.model, model, r, status), ref;
  if (!ex)
    return status;
  if (!o.reference.empty() && !(ref = prepare(o.reference, refModel, r, status)))
    return status;
  if (ex->requiredInputs().size() != 1)
    return usageError(fmt::format("eval feeds --data to a model with one input; `{}` has {}",
                                  o.model, ex->requiredInputs().size()));
  if (ref && ref->requiredInputs().size() != 1)
    return usageError(fmt::format("the reference `{}` must have one input", o.reference));
  rt::Tensor data, labels;
  bool io = false;
  if (!readData(o.data, data, r, io) || (!o.labels.empty() && !readData(o.labels, labels, r, io))) {
    r.flush();
    return io ? ExitUsage : ExitInputErrors;
  }
  if (data.rank() < 1 || data.dim(0) == 0) {
    r.diags.emitAt(o.data, diag::err_data_file, "the data holds no samples (its first dimension counts them)");
    r.flush();
    return ExitInputErrors;
  }
  int64_t n = data.dim(0);
  if (labels.defined() && (labels.rank() != 1 || labels.dim(0) != n ||
                           graph::isFloatingPoint(labels.elem()))) {
    r.diags.emitAt(o.labels, diag::err_data_labels, graph::toString(labels.elem()),
                   rt::shapeStr(labels.shape()), n);
    r.flush();
    return ExitInputErrors;
  }
  // A batch dimension the model fixes wins over --batch.
  const graph::Value *in = ex->requiredInputs().front();
  int64_t batch = o.batch ? o.batch : 64;
  if (in->type.shape && !in->type.shape->empty() && (*in->type.shape)[0].known())
    batch = (*in->type.shape)[0].value;
  batch = std::max<int64_t>(1, batch);
  timer.done("load");

  size_t numOut = model->graph.outputs().size();
  std::vector<double> signal(numOut, 0), noise(numOut, 0);
  int64_t correct = 0, agree = 0;
  double runSeconds = 0;
  bool colorProgress = o.progress == "always" ||
                       (o.progress == "auto" && llvm::sys::Process::StandardErrIsDisplayed());
  Progress bar(colorProgress, n);
  rt::RunOptions runOptions;
  runOptions.arithmetic = o.arithmetic;
  for (int64_t b = 0; b < n; b += batch) {
    int64_t e = std::min(n, b + batch);
    std::map<std::string, rt::Tensor> feed{{in->name, data.rows(b, e)}};
    std::vector<rt::Tensor> out, refOut;
    auto t0 = std::chrono::steady_clock::now();
    bool ok = ex->run(feed, out, r.diags, runOptions);
    runSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (ok && ref) {
      std::map<std::string, rt::Tensor> refFeed{{ref->requiredInputs().front()->name, feed.begin()->second}};
      ok = ref->run(refFeed, refOut, r.diags);
      if (ok && refOut.size() != out.size()) {
        r.diags.emitAt(o.reference, diag::err_eval_reference_outputs, refOut.size(), out.size(), "outputs");
        ok = false;
      }
    }
    if (!ok) {
      bar.update(n);
      r.flush();
      return ExitInputErrors;
    }
    const rt::Tensor &logits = out.front();
    int64_t rows = e - b, width = logits.numel() / std::max<int64_t>(rows, 1);
    for (int64_t i = 0; i < rows; ++i) {
      int64_t cls = argmaxRow(logits, i, width);
      if (labels.defined())
        correct += cls == labels.intAt(b + i);
      if (ref)
        agree += cls == argmaxRow(refOut.front(), i, refOut.front().numel() / rows);
    }
    for (size_t k = 0; ref && k < numOut; ++k) {
      if (out[k].shape() != refOut[k].shape()) {
        r.diags.emitAt(o.reference, diag::err_eval_reference_outputs,
                       rt::shapeStr(refOut[k].shape()), rt::shapeStr(out[k].shape()),
                       "shape of output " + model->graph.outputs()[k]->name);
        bar.update(n);
        r.flush();
        return ExitInputErrors;
      }
      for (int64_t i = 0; i < out[k].numel(); ++i) {
        double x = refOut[k].at(i), d = out[k].at(i) - x;
        signal[k] += x * x;
        noise[k] += d * d;
      }
    }
    bar.update(e);
  }
  timer.done("eval");
  r.flush();
  llvm::outs() << fmt::format("eval: {} on {} samples of `{}` (batch {})\n", o.model, n, o.data, batch);
  if (labels.defined())
    llvm::outs() << fmt::format("  accuracy        {:.2f} % ({} of {})\n", 100.0 * double(correct) / double(n), correct, n);
  if (ref) {
    llvm::outs() << fmt::format("  top-1 agreement {:.2f} % with {}\n", 100.0 * double(agree) / double(n), o.reference);
    for (size_t k = 0; k < numOut; ++k) {
      double db = noise[k] == 0 ? INFINITY : 10 * std::log10(signal[k] / noise[k]);
      llvm::outs() << fmt::format("  SQNR `{}`  {}\n", model->graph.outputs()[k]->name,
                                  std::isinf(db) ? std::string("inf dB (identical outputs)")
                                                 : fmt::format("{:.2f} dB", db));
    }
  }
  llvm::outs() << fmt::format("  throughput      {:.1f} samples/s ({:.3f} s in the executor)\n",
                              double(n) / runSeconds, runSeconds);
  if (o.arithmetic != rt::IntegerArithmetic::Float)
    llvm::outs() << fmt::format("  integer groups computed as ONNX Runtime's kernels on x86-64 "
                                "{} VNNI\n",
                                o.arithmetic == rt::IntegerArithmetic::Exact ? "with" : "without");
  else
    noteSaturatingGroups(model->graph, llvm::outs());
  return ExitOK;
}

int driver::runModelCommand(const std::vector<std::string> &args) {
  RunOptions o;
  o.command = args.front();
  if (int s = parseRunArgs(std::vector<std::string>(args.begin() + 1, args.end()), o); s >= 0)
    return s;
  Reporter r;
  r.color = o.color == "always" ||
            (o.color == "auto" && llvm::sys::Process::StandardErrHasColors());
  return o.command == "run" ? runOnce(o, r) : evaluate(o, r);
}

void driver::noteSaturatingGroups(const graph::Graph &g, llvm::raw_ostream &os) {
  std::vector<rt::IntegerGroup> groups = rt::saturatingGroups(g);
  if (groups.empty())
    return;
  os << fmt::format("  note: {} integer group{} (first: `{}`) {} full-range int8 weights: ONNX "
                    "Runtime on x86-64 CPUs without VNNI adds their u8 x s8 products in int16 "
                    "pairs that saturate, and gives other numbers (`tpcc eval --ort-cpu "
                    "no-vnni` shows them); for such CPUs quantize for `ort_cpu_no_vnni` "
                    "(7-bit weights)\n",
                    groups.size(), groups.size() == 1 ? "" : "s",
                    groups.front().node->displayName(), groups.size() == 1 ? "has" : "have");
}
