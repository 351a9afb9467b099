//===- OrtPlanRun.cpp - Running the steps ONNX Runtime computes its own way -===//
//
// A step of the plan runs from 8-bit tensor to 8-bit tensor as ONNX Runtime
// does: a group's kernel writes its QuantizeLinear's output directly (the
// Relu/Clip ORT drops included, neither runs), a table or the node on the
// codes replaces a DequantizeLinear -> node -> QuantizeLinear chain, and a
// DequantizeLinear whose readers all do so is left out. A run that watches,
// keeps or substitutes a value these leave out computes it as the model
// says: the step then runs its float kernel, and a group's output is
// overwritten with what ORT's integer kernel gives (after()).
//
//===----------------------------------------------------------------------===//
#include "runtime/ort/OrtPlan.h"

#include "runtime/ops/Dnnl.h"
#include "runtime/ort/OrtMode.h"
#include "runtime/ort/OrtSoftmax.h"

#include <algorithm>

using namespace tpcc;
using namespace tpcc::rt;

namespace {
IntegerArithmetic arithmeticOf(const StepRun &r) {
  return static_cast<const OrtMode &>(r.mode()).arithmetic();
}
} // namespace

bool OrtPlan::direct(const Step &step, const StepRun &r) const {
  return step.quantizedOutput &&
         std::all_of(step.integerSkipped.begin(), step.integerSkipped.end(),
                     [&](const graph::Value *v) { return r.mayLeaveOut(*v); });
}

StepPlan::Action OrtPlan::before(StepRun &r) {
  const size_t s = r.step();
  const Step &step = steps[s];
  const graph::Node &n = r.node();
  const IntegerArithmetic arith = arithmeticOf(r);
  if (arith == IntegerArithmetic::Exact && !step.kernelReaders.empty() &&
      r.mayLeaveOut(*n.outputs[0]) &&
      std::all_of(step.kernelReaders.begin(), step.kernelReaders.end(), [&](size_t k) {
        return (steps[k].integerKernel && !steps[k].integer->biasAdd) ||
               (steps[k].codeMatMul && !steps[k].codeMatMul->q) || direct(steps[k], r);
      }))
    return Action::Done; // every reader reads its input instead
  // The 8-bit tensors a group kernel or a table reads.
  const Tensor *xq = step.quantizedInput ? r.read(*step.quantizedInput) : nullptr,
               *xq2 = step.quantizedInputB ? r.read(*step.quantizedInputB) : nullptr;
  if (xq && !xq->defined()) {
    r.missing(*step.quantizedInput);
    return Action::Failed;
  }
  if (xq2 && !xq2->defined()) {
    r.missing(*step.quantizedInputB);
    return Action::Failed;
  }
  if (const std::optional<CodeMatMul> &c = step.codeMatMul; c && (!c->q || direct(step, r))) {
    // On the codes, exact on every CPU: to the QuantizeLinear's codes, or to
    // the float output of a MatMul no quantizer reads.
    const graph::Value &out = c->q ? *step.quantizedOutput : *n.outputs[0];
    std::string error;
    if (!runCodeMatMul(*c, r.plain(*xq), r.plain(*xq2), r.slot(out), error)) {
      r.fail(error);
      return Action::Failed;
    }
    r.computed(out);
    for (size_t a : step.integerAbsorbed)
      r.absorb(a);
    return Action::Done;
  }
  bool kernel = step.integer && arith == IntegerArithmetic::Exact && step.integerKernel;
  bool table = step.lookup && (!xq2 || xq2->shape() == xq->shape());
  if (step.lookup && !table) // a DequantizeLinear left out for it: computed now
    for (int i = 0; i < step.lookup->arity; ++i)
      if (const graph::Value *d = n.inputs[size_t(i)];
          !r.slot(*d).defined() &&
          !r.executor().runAlone(*step.lookup->dq[i], {&r.plain(i == 0 ? *xq : *xq2)},
                                 r.slot(*d))) {
        r.fail("its DequantizeLinear input cannot be computed");
        return Action::Failed;
      }
  if ((kernel || table) && direct(step, r)) {
    // From quantized input to quantized output, as ORT's QLinearConv,
    // QGemm and QLinear element-wise ops: the QuantizeLinear (and a
    // Relu/Clip before it) never runs.
    if (!runQuantized(r, xq, xq2))
      return Action::Failed;
    r.computed(*step.quantizedOutput);
    for (size_t a : step.integerAbsorbed)
      r.absorb(a);
    return Action::Done;
  }
  if (kernel && !step.integer->biasAdd) {
    // The group on integers, from the tensor its DequantizeLinear reads, to
    // the float output of its node (MatMulIntegerToFloat's for a MatMul
    // without a quantizer). (A MatMul's output is its own, without the bias
    // ORT fuses: the Add's step then overwrites its output.)
    const graph::Value &out = *n.outputs[0];
    std::string error;
    if (!step.integerKernel->runDequantized(*xq, r.slot(out), error)) {
      r.fail(error);
      return Action::Failed;
    }
    r.computed(out);
    return Action::Done;
  }
  return Action::Kernel;
}

bool OrtPlan::runQuantized(StepRun &r, const Tensor *xq, const Tensor *xq2) {
  const Step &step = steps[r.step()];
  const graph::Node &n = r.node();
  Tensor &yq = r.slot(*step.quantizedOutput);
  // 8-bit tensors pass channels-last between kernels and tables, never to a
  // caller or a hook.
  bool plainOut =
      r.plainOnly() || r.watches(*step.quantizedOutput) || step.quantizedOutput->isGraphOutput;
  std::string error;
  if (step.lookup && step.lookup->onCodes) {
    // The node's own kernel on the codes: a max pooling reads channels-last
    // codes where they are (oneDNN) and writes them so unless a plain
    // output is needed; the others read them plain.
    bool pool = readsBlocked(n, 0) && dnnl_util::isChannelsLast(*xq);
    std::vector<const Tensor *> in = {pool ? xq : &r.plain(*xq)};
    for (size_t i = 1; i < n.inputs.size(); ++i) { // a shape, indices: as the run has them
      in.push_back(n.inputs[i] ? r.read(*n.inputs[i]) : nullptr);
      if (in.back() && !in.back()->defined()) {
        r.missing(*n.inputs[i]);
        return false;
      }
    }
    if (r.executor().runAlone(n, in, yq, &error, &r.state(), pool && !plainOut))
      return true;
    r.fail(error.empty() ? "it did not run on its input's 8-bit codes" : error);
    return false;
  }
  if (step.lookup && step.lookup->softmax) {
    const LookupChain &c = *step.lookup;
    const Tensor *zero = c.q->input(2) ? r.executor().constant(*c.q->input(2)) : nullptr;
    const graph::Attribute *axis = n.attr("axis");
    // ORT runs the chain on uint8 codes (softmaxChainOf asks for codes ORT
    // sees so): int8 output codes are 128 up there, saturating at 255.
    bool s8 = zero && zero->elem() == graph::ElemType::Int8;
    Tensor yu;
    if (!ortSoftmax(r.plain(*xq), r.executor().constant(*c.dq[0]->input(1))->data<float>()[0],
                    r.executor().constant(*c.q->input(1))->data<float>()[0], graph::ElemType::UInt8,
                    (zero ? int(zero->intAt(0)) : 0) + (s8 ? 128 : 0),
                    axis             ? axis->i
                    : r.opset() < 13 ? 1
                                     : -1,
                    r.opset(), s8 ? yu : yq)) {
      r.fail("axis out of range");
      return false;
    }
    if (s8) {
      yq = Tensor(graph::ElemType::Int8, yu.shape());
      for (int64_t i = 0; i < yu.numel(); ++i)
        yq.data<int8_t>()[i] = int8_t(int(yu.data<uint8_t>()[i]) - 128);
    }
    return true;
  }
  if (step.lookup) {
    // Element-wise: the output in the inputs' layout, made plain unless both
    // are channels-last (and the output may be).
    bool last =
        !plainOut && dnnl_util::isChannelsLast(*xq) && (!xq2 || dnnl_util::isChannelsLast(*xq2));
    if (!last) {
      xq = &r.plain(*xq);
      xq2 = xq2 ? &r.plain(*xq2) : nullptr;
    }
    applyTable(*xq, xq2, step.table, step.tableType, yq);
    return true;
  }
  if (!step.integerKernel->run(*xq, yq, error, step.channelsLastOut && !plainOut)) {
    r.fail(error);
    return false;
  }
  return true;
}

bool OrtPlan::after(StepRun &r, KernelContext &ctx) {
  const Step &step = steps[r.step()];
  if (step.groupHead) { // the bias Add of a MatMul's group: the group's output
    const IntegerGroup &grp = *steps[*step.groupHead].integer;
    const Tensor *x = r.read(*grp.node->input(0));
    if (!x || !x->defined())
      return ctx.fail("the input of its MatMul's integer group has no value");
    return computeIntegerGroup(grp, arithmeticOf(r), r.plain(*x), ctx);
  }
  if (const std::optional<CodeMatMul> &c = step.codeMatMul) {
    // The float product the run watches: ORT's, from the codes, on the
    // output grid.
    Tensor yq;
    std::string error;
    if (!runCodeMatMul(*c, r.plain(*r.read(*step.quantizedInput)),
                       r.plain(*r.read(*step.quantizedInputB)), yq, error))
      return ctx.fail(error);
    Tensor &y = ctx.outputs[0];
    if (y.shape() != yq.shape() || y.elem() != graph::ElemType::Float)
      return ctx.fail("the codes' product has another shape than the MatMul's");
    for (int64_t i = 0; i < y.numel(); ++i)
      y.data<float>()[i] =
          float((c->ySigned ? int32_t(yq.data<int8_t>()[i]) : int32_t(yq.data<uint8_t>()[i])) -
                c->yZero) *
          c->yScale;
    return true;
  }
  return !step.integer || step.integer->biasAdd ||
         computeIntegerGroup(*step.integer, arithmeticOf(r), ctx);
}
