//===- Evaluate.h - `tpcc run` and `tpcc eval` as library calls --*- C++ -*-===//
//
// runOnFiles runs a model once on tensors read from files and writes the
// outputs asked for; evaluateModel runs a model over a data set in batches
// and measures accuracy against labels, top-1 agreement and per-output SQNR
// against a reference model (Metrics.h), and throughput. Both check the
// model (every operator has a kernel) and the data (names, types, shapes,
// finite values) before running anything; errors go to the DiagnosticEngine
// (a file that cannot be read: err_cannot_open_file; a request that does not
// fit the model: err_usage). A request with integer arithmetic runs the
// model in ONNX Runtime's mode (runtime/ort/OrtMode.h).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_EVAL_EVALUATE_H
#define TPCC_RUNTIME_EVAL_EVALUATE_H

#include "ir/graph/OnnxIO.h"
#include "runtime/Executor.h"
#include "runtime/Metrics.h"
#include "runtime/ort/IntegerPairs.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tpcc::rt {

struct RunRequest {
  std::string model;
  /// (input name or "" for the only input, file); (output name or "", file).
  std::vector<std::pair<std::string, std::string>> inputs, outputs;
  IntegerArithmetic arithmetic = IntegerArithmetic::Float;
  /// Called when a phase ends ("load", "read", "run", "write").
  std::function<void(const char *)> phaseDone;
  bool ortFloat = false;      ///< with integer arithmetic: ORT's float kernels too (`--ort-cpu`)
  graph::DimValues dims = {}; ///< sizes of symbolic input dimensions (`--dim`)
};

struct RunOutcome {
  std::unique_ptr<graph::Model> model;
  std::vector<Tensor> results; ///< one per graph output
  bool wroteFiles = false;     ///< some --output was written
};

LogicalResult runOnFiles(const RunRequest &r, RunOutcome &out, DiagnosticEngine &diags);

/// `f32[2, 10]  min ...  max ...  mean ...` (and the argmax of each row of a
/// small 2-D tensor).
std::string describeTensor(const Tensor &t);

struct EvalRequest {
  std::string model;
  /// (input name, or "" for a model's only input; file): every input the
  /// model needs, each file's axis 0 the samples.
  std::vector<std::pair<std::string, std::string>> data;
  std::string labels, reference; ///< optional
  int64_t batch = 0;             ///< 0: 64; a batch the model fixes wins
  IntegerArithmetic arithmetic = IntegerArithmetic::Float;
  std::function<void(int64_t done, int64_t total)> progress;
  std::function<void(const char *)> phaseDone; ///< "load", "eval"
  bool ortFloat = false;      ///< with integer arithmetic: ORT's float kernels too (`--ort-cpu`)
  graph::DimValues dims = {}; ///< sizes of symbolic input dimensions (`--dim`)
};

struct EvalOutcome {
  std::unique_ptr<graph::Model> model;
  int64_t samples = 0, batch = 0;
  /// The samples per micro-batch of a full batch (MicroBatch.h; `batch`
  /// when batches run whole).
  int64_t microBatch = 0;
  bool labeled = false, referenced = false;
  Top1 top1;
  std::vector<Sqnr> sqnr; ///< per graph output, with a reference
  double runSeconds = 0;  ///< in the executor of `model`
  /// Tensor memory of the model's runs: the peak, and the buffers the
  /// full-size batches after the first two took from the system (0 when the
  /// executor's pool works; -1: too few batches to tell).
  size_t peakTensorBytes = 0;
  int64_t steadyAllocations = -1;
  /// The QDQ groups computed as ONNX Runtime's integer kernels.
  unsigned integerGroups = 0;
};

LogicalResult evaluateModel(const EvalRequest &r, EvalOutcome &out, DiagnosticEngine &diags);

/// A note (one line, or "" when there is nothing to say) for a QDQ model
/// whose u8 x s8 integer groups ONNX Runtime computes with int16 saturation
/// on x86-64 CPUs without VNNI (full-range int8 weights): such a CPU gives
/// other numbers, and what to do about it. Counts the groups ORT forms: `m`
/// is first rewritten as ORT's level-1 transformers do (OrtPropagation.h).
std::string saturationNote(graph::Model &m);

} // namespace tpcc::rt

#endif
