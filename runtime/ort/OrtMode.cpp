//===- OrtMode.cpp - Running a QDQ model as ONNX Runtime's CPU kernels do --===//
#include "runtime/ort/OrtMode.h"

#include "runtime/ort/OrtKernels.h"
#include "runtime/ort/OrtPlan.h"

using namespace tpcc;
using namespace tpcc::rt;

namespace {
/// The key of the one plan every ORT mode shares.
const char kOrtPlanKey = 0;

const OrtPlan *planOf(const Executor &ex) {
  return static_cast<const OrtPlan *>(ex.planOf(&kOrtPlanKey));
}
} // namespace

const KernelRegistry *OrtMode::kernels() const {
  return ortKernels(floatAsOrt, arith == IntegerArithmetic::SaturatingPairs);
}

const void *OrtMode::planKey() const { return &kOrtPlanKey; }

std::unique_ptr<StepPlan> OrtMode::makePlan(Executor &ex) const {
  return std::make_unique<OrtPlan>(ex);
}

const ExecutionMode *rt::ortMode(IntegerArithmetic arithmetic, bool floatAsOrt) {
  static const OrtMode modes[2][2] = {
      {OrtMode(IntegerArithmetic::Exact, false), OrtMode(IntegerArithmetic::Exact, true)},
      {OrtMode(IntegerArithmetic::SaturatingPairs, false),
       OrtMode(IntegerArithmetic::SaturatingPairs, true)}};
  if (arithmetic == IntegerArithmetic::Float)
    return nullptr;
  return &modes[arithmetic == IntegerArithmetic::SaturatingPairs][floatAsOrt];
}

unsigned rt::integerGroups(const Executor &ex) {
  unsigned n = 0;
  if (const OrtPlan *p = planOf(ex))
    for (const OrtPlan::Step &s : p->planned())
      n += s.integer.has_value();
  return n;
}

QuantizedShortcuts rt::quantizedShortcuts(const Executor &ex) {
  QuantizedShortcuts s;
  if (const OrtPlan *p = planOf(ex))
    for (const OrtPlan::Step &step : p->planned()) {
      s.channelsLast += step.channelsLastOut;
      s.quantizeSkipped += step.quantizedOutput != nullptr;
      s.tables += step.lookup && !step.lookup->onCodes && !step.lookup->softmax;
      s.onCodes += step.lookup && step.lookup->onCodes;
      s.pairTables += step.lookup && step.lookup->arity == 2;
    }
  return s;
}
