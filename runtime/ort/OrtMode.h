//===- OrtMode.h - Running a QDQ model as ONNX Runtime's CPU kernels do -*- C++ -*-===//
//
// The execution modes (ExecutionMode.h) of `tpcc run|eval --qdq=integer`
// and `--ort-cpu vnni|no-vnni`: the QDQ groups ONNX Runtime runs as integer
// kernels computed as ORT does (IntegerPairs.h), with oneDNN's int8
// primitives where exact (IntegerKernel.h), 8-bit chains as lookups
// (LookupTable.h); with `floatAsOrt` (`--ort-cpu`) also ORT's float
// kernels (OrtKernels.h) and no fused convolutions. The executor keeps the
// plan (OrtPlan.h) of its first run in any of these modes.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_ORTMODE_H
#define TPCC_RUNTIME_ORT_ORTMODE_H

#include "runtime/Executor.h"
#include "runtime/ort/IntegerPairs.h"

namespace tpcc::rt {

class OrtMode : public ExecutionMode {
public:
  OrtMode(IntegerArithmetic arithmetic, bool floatAsOrt)
      : arith(arithmetic), floatAsOrt(floatAsOrt) {}
  IntegerArithmetic arithmetic() const { return arith; }

  const KernelRegistry *kernels() const override;
  /// A run that computes as ORT does sums a float Conv in MLAS's order,
  /// alone (the activations ORT applies after it give the same values).
  bool fuses() const override { return !floatAsOrt; }
  const void *planKey() const override;
  std::unique_ptr<StepPlan> makePlan(Executor &ex) const override;

private:
  IntegerArithmetic arith;
  bool floatAsOrt;
};

/// The mode of a run whose QDQ groups compute with `arithmetic`, its float
/// nodes as ORT computes them with `floatAsOrt` (`--ort-cpu`); null for
/// IntegerArithmetic::Float (the model as the graph defines it).
const ExecutionMode *ortMode(IntegerArithmetic arithmetic, bool floatAsOrt = false);

/// The QDQ groups the runs of `ex` in an ORT mode computed as ONNX Runtime
/// does (0 before the first such run).
unsigned integerGroups(const Executor &ex);

/// What the runs of `ex` in an ORT mode compute without the float graph:
/// QuantizeLinear nodes computed inside a group's kernel or a lookup,
/// lookup tables, convolution kernels that hand their output on
/// channels-last, nodes run on 8-bit codes.
struct QuantizedShortcuts {
  unsigned quantizeSkipped = 0, tables = 0, pairTables = 0; ///< pairTables: of two inputs
  unsigned channelsLast = 0;
  unsigned onCodes = 0; ///< max / data movement run on the 8-bit codes (codeChainOf)
};
QuantizedShortcuts quantizedShortcuts(const Executor &ex);

} // namespace tpcc::rt

#endif
