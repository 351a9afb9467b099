//===- OrtPlan.h - An executor's steps as ONNX Runtime runs them -*- C++ -*-===//
//
// The plan of the ORT modes (OrtMode.h) for one executor: which steps ORT
// computes other than as their float kernels, found on the executor's first
// run in such a mode (groups need the executor's constants) and kept:
//  - a QDQ group's node (IntegerPairs.h): its kernel writes the group's
//    QuantizeLinear output from the 8-bit tensor its DequantizeLinear reads
//    (IntegerKernel.h), or its float output is overwritten with ORT's;
//  - a MatMul of two activations, computed on their codes (CodeMatMul.h);
//  - an element-wise chain between 8-bit grids: one lookup (LookupTable.h),
//    ORT's QLinearAdd/Mul arithmetic (OrtBinary.h) or QLinearSoftmax
//    (OrtSoftmax.h), or the node run on the codes;
//  - a DequantizeLinear only such steps read: left out.
// What a run watches, keeps or substitutes is computed as the model defines
// it: a step then falls back to the float graph (OrtPlanRun.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_ORTPLAN_H
#define TPCC_RUNTIME_ORT_ORTPLAN_H

#include "runtime/Executor.h"
#include "runtime/ort/CodeMatMul.h"
#include "runtime/ort/IntegerKernel.h"
#include "runtime/ort/IntegerPairs.h"
#include "runtime/ort/LookupTable.h"

#include <memory>
#include <optional>
#include <vector>

namespace tpcc::rt {

class OrtPlan : public StepPlan {
public:
  /// Finds the groups and chains of `ex`'s steps and builds their kernels
  /// and tables.
  explicit OrtPlan(Executor &ex);

  Action before(StepRun &r) override;
  bool after(StepRun &r, KernelContext &ctx) override;
  bool alone(size_t s) const override {
    return steps[s].integer.has_value() || steps[s].groupHead.has_value() ||
           steps[s].codeMatMul.has_value();
  }

  /// One step as ORT computes it.
  struct Step {
    /// The QDQ group this node heads, as ORT runs it in integers.
    std::optional<IntegerGroup> integer;
    /// The bias Add ORT fuses into the group of step `*groupHead` (a MatMul,
    /// IntegerGroup::biasAdd): where a run computes the group's steps as the
    /// model says, the Add's output is overwritten with the group's.
    std::optional<size_t> groupHead;
    /// A MatMul of two activations ORT computes on their codes
    /// (CodeMatMul.h): quantizedInput and quantizedInputB are the codes.
    std::optional<CodeMatMul> codeMatMul;
    /// Its oneDNN int8 kernel (IntegerArithmetic::Exact), when the group's
    /// form has one, and the quantized value the kernel reads.
    std::unique_ptr<IntegerKernel> integerKernel;
    const graph::Value *quantizedInput = nullptr;
    const graph::Value *quantizedInputB = nullptr; ///< a binary table's second
    /// An element-wise node between 8-bit DequantizeLinear and
    /// QuantizeLinear, computed as a lookup in `table` (LookupTable.h).
    std::optional<LookupChain> lookup;
    std::vector<uint8_t> table;
    graph::ElemType tableType = graph::ElemType::UInt8;
    /// With the kernel or the table: the QuantizeLinear after the node (and
    /// the Relu/Clip ORT drops before it), computed with the node as its
    /// quantized output; the values that leaves out.
    std::vector<size_t> integerAbsorbed;
    std::vector<const graph::Value *> integerSkipped;
    const graph::Value *quantizedOutput = nullptr;
    /// A DequantizeLinear only group kernels and tables read (they read its
    /// input): the steps that read it.
    std::vector<size_t> kernelReaders;
    /// A convolution's kernel whose quantized output only convolution
    /// kernels, tables and max poolings on the codes read: it hands it over
    /// channels-last (no transposes; a run that needs it plain converts it).
    bool channelsLastOut = false;
  };
  const std::vector<Step> &planned() const { return steps; }

private:
  void findQuantizedOutput(size_t s);
  void findKernelOnlyInputs();
  void findChannelsLastOutputs();
  bool buildTable(Step &step);
  bool ortBinaryTable(Step &step);
  /// Whether `step` computes its quantized output directly in this run.
  bool direct(const Step &step, const StepRun &r) const;
  /// The step's quantized output from its quantized inputs (kernel, table,
  /// softmax, or the node on the codes).
  bool runQuantized(StepRun &r, const Tensor *xq, const Tensor *xq2);

  Executor &ex;
  std::vector<Step> steps;
};

} // namespace tpcc::rt

#endif
