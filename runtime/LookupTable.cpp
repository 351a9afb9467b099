//===- LookupTable.cpp - 8-bit element-wise chains as one lookup ------------===//
#include "runtime/LookupTable.h"

#include "runtime/KernelUtil.h"

#include "llvm/ADT/StringSwitch.h"

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// Element-wise operators of one tensor input (other inputs constant).
bool elementwiseUnary(const graph::Node &n) {
  return llvm::StringSwitch<bool>(n.opType)
      .Cases("Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", true)
      .Cases("Celu", "Selu", "Softplus", "Softsign", "ThresholdedRelu", "Shrink", "Clip", true)
      .Cases("Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Erf", true)
      .Default(false);
}

bool eightBit(graph::ElemType t) {
  return t == graph::ElemType::UInt8 || t == graph::ElemType::Int8;
}

} // namespace

std::optional<LookupChain>
rt::lookupChainOf(const graph::Node &op,
                  llvm::function_ref<const Tensor *(const graph::Value &)> constant) {
  if (!op.inDefaultDomain() || !elementwiseUnary(op) || op.outputs.size() != 1 || !op.outputs[0])
    return std::nullopt;
  const graph::Value *mid = op.outputs[0], *x = op.input(0);
  if (!x || constant(*x) || mid->isGraphOutput || mid->uses.size() != 1 || mid->uses[0].index != 0)
    return std::nullopt;
  for (size_t i = 1; i < op.inputs.size(); ++i)
    if (op.inputs[i] && !constant(*op.inputs[i]))
      return std::nullopt;
  // Scale and zero point scalar constants: one grid for the whole tensor.
  auto scalar = [&](const graph::Value *v) -> const Tensor * {
    const Tensor *t = v ? constant(*v) : nullptr;
    return t && t->numel() == 1 ? t : nullptr;
  };
  auto perTensor = [&](const graph::Node &n) {
    const Tensor *s = scalar(n.input(1)), *z = scalar(n.input(2));
    return n.inDefaultDomain() && s && s->elem() == graph::ElemType::Float &&
           (!n.input(2) || (z && eightBit(z->elem())));
  };
  const graph::Node *dq = x->producer, *q = mid->uses[0].node;
  if (!dq || dq->opType != "DequantizeLinear" || !perTensor(*dq) || !dq->input(0) ||
      !eightBit(dq->input(0)->type.elem) || q->opType != "QuantizeLinear" || !perTensor(*q) ||
      q->outputs.empty() || !q->outputs[0])
    return std::nullopt;
  return LookupChain{dq, &op, q, dq->input(0), q->outputs[0]};
}

void rt::applyTable(const Tensor &x, const std::array<uint8_t, 256> &table, graph::ElemType out,
                    Tensor &y) {
  y = Tensor(out, x.shape());
  const uint8_t *src = static_cast<const uint8_t *>(x.raw());
  uint8_t *dst = static_cast<uint8_t *>(y.raw());
  const uint8_t *lut = table.data();
  parallelFor(x.numel(), 1, [src, dst, lut](int64_t b, int64_t e) {
    // Restrict: a byte store may alias anything, the pointers included.
    const uint8_t *__restrict in = src, *__restrict t = lut;
    uint8_t *__restrict out = dst;
    for (int64_t i = b; i < e; ++i)
      out[i] = t[in[i]];
  });
}
