//===- RunCommand.cpp - `tpcc run` and `tpcc eval` ---------------------------===//
//
// Hands the model and the files to runtime/eval/Evaluate.h and prints what came
// back: each output's statistics (run), or accuracy, agreement, SQNR and
// throughput (eval).
//
//===----------------------------------------------------------------------===//
#include "runtime/eval/Evaluate.h"
#include "tools/tpcc/Driver.h"

#include <fmt/format.h>

#include <cmath>

using namespace tpcc;
using namespace tpcc::driver;

LogicalResult driver::checkModelArgs(Options &o) {
  if (o.model.empty())
    return usageError(o.commandName + " needs a model: `tpcc " + o.commandName +
                      " MODEL.onnx ...`");
  if (o.command == Eval && o.data.empty())
    return usageError("eval needs data: --data FILE");
  return success();
}

static int runOnce(const Options &o, DiagnosticEngine &diags) {
  PhaseTimer timer(o.time);
  rt::RunRequest r{o.model, o.runInputs, o.runOutputs, o.arithmetic,
                   [&](const char *phase) { timer.done(phase); }};
  r.ortFloat = o.ortCpu;
  r.dims = o.dims;
  rt::RunOutcome out;
  if (failed(rt::runOnFiles(r, out, diags)))
    return finish(diags, o);
  finish(diags, o); // warnings
  const auto &outs = out.model->graph.outputs();
  if (!out.wroteFiles)
    for (size_t k = 0; k < outs.size(); ++k)
      llvm::outs() << outs[k]->name << ": " << rt::describeTensor(out.results[k]) << "\n";
  timer.done("write");
  return ExitOK;
}

static int evaluate(const Options &o, DiagnosticEngine &diags) {
  PhaseTimer timer(o.time);
  std::unique_ptr<Progress> shown;
  rt::EvalRequest r{o.model,
                    o.evalData,
                    o.labels,
                    o.reference,
                    o.batch,
                    o.arithmetic,
                    [&](int64_t done, int64_t total) {
                      if (!shown)
                        shown = std::make_unique<Progress>(o.showProgress(), total);
                      shown->update(done);
                    },
                    [&](const char *phase) { timer.done(phase); }};
  r.ortFloat = o.ortCpu;
  r.dims = o.dims;
  rt::EvalOutcome out;
  if (failed(rt::evaluateModel(r, out, diags)))
    return finish(diags, o);
  finish(diags, o); // warnings
  auto &os = llvm::outs();
  std::string files;
  for (const auto &[name, file] : o.evalData)
    files += (files.empty() ? "`" : ", `") + file + "`";
  os << fmt::format("eval: {} on {} samples of {} (batch {})\n", o.model, out.samples, files,
                    out.batch);
  if (out.labeled)
    os << fmt::format("  accuracy        {:.2f} % ({} of {})\n", out.top1.accuracy(),
                      out.top1.correct, out.samples);
  if (out.referenced) {
    os << fmt::format("  top-1 agreement {:.2f} % with {}\n", out.top1.agreement(), o.reference);
    for (size_t k = 0; k < out.sqnr.size(); ++k) {
      double db = out.sqnr[k].dB();
      os << fmt::format("  SQNR `{}`  {}\n", out.model->graph.outputs()[k]->name,
                        std::isinf(db) ? std::string("inf dB (identical outputs)")
                                       : fmt::format("{:.2f} dB (largest error {:.4g})", db,
                                                     out.sqnr[k].largestError()));
    }
  }
  os << fmt::format("  throughput      {:.1f} samples/s ({:.3f} s in the executor{})\n",
                    double(out.samples) / out.runSeconds, out.runSeconds,
                    out.microBatch < out.batch
                        ? fmt::format(", micro-batches of {}", out.microBatch)
                        : std::string());
  os << fmt::format(
      "  memory          {:.1f} MiB of tensors at the peak{}\n",
      double(out.peakTensorBytes) / (1 << 20),
      out.steadyAllocations < 0
          ? std::string()
          : fmt::format(", {} allocations after the first two batches", out.steadyAllocations));
  if (unsigned groups = out.integerGroups)
    os << fmt::format("  integer groups computed as ONNX Runtime's kernels on x86-64 {} VNNI ({} "
                      "group{})\n",
                      o.arithmetic == rt::IntegerArithmetic::Exact ? "with" : "without", groups,
                      groups == 1 ? "" : "s");
  if (o.arithmetic != rt::IntegerArithmetic::SaturatingPairs)
    os << rt::saturationNote(*out.model);
  return ExitOK;
}

int driver::runModel(const Options &o) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  return o.command == Run ? runOnce(o, diags) : evaluate(o, diags);
}
