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
  bool binary = op.opType == "Add" || op.opType == "Sub" || op.opType == "Mul";
  if (!op.inDefaultDomain() || !(binary || elementwiseUnary(op)) || op.outputs.size() != 1 ||
      !op.outputs[0] || (binary && op.inputs.size() != 2))
    return std::nullopt;
  const graph::Value *mid = op.outputs[0];
  if (mid->isGraphOutput || mid->uses.size() != 1 || mid->uses[0].index != 0)
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
  LookupChain c;
  c.arity = binary ? 2 : 1;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const graph::Value *x = op.inputs[i];
    if (i >= size_t(c.arity)) { // a Clip's bounds
      if (x && !constant(*x))
        return std::nullopt;
      continue;
    }
    const graph::Node *dq = x && !constant(*x) ? x->producer : nullptr;
    if (!dq || dq->opType != "DequantizeLinear" || !perTensor(*dq) || !dq->input(0) ||
        !eightBit(dq->input(0)->type.elem))
      return std::nullopt;
    c.dq[i] = dq;
    c.input[i] = dq->input(0);
  }
  const graph::Node *q = mid->uses[0].node;
  if (q->opType != "QuantizeLinear" || !perTensor(*q) || q->outputs.empty() || !q->outputs[0])
    return std::nullopt;
  c.op = &op;
  c.q = q;
  c.output = q->outputs[0];
  return c;
}

void rt::applyTable(const Tensor &x, const Tensor *x2, const std::vector<uint8_t> &table,
                    graph::ElemType out, Tensor &y) {
  y = Tensor(out, x.shape());
  const uint8_t *src = static_cast<const uint8_t *>(x.raw()),
                *src2 = x2 ? static_cast<const uint8_t *>(x2->raw()) : nullptr;
  uint8_t *dst = static_cast<uint8_t *>(y.raw());
  const uint8_t *lut = table.data();
  parallelFor(x.numel(), x2 ? 2 : 1, [src, src2, dst, lut](int64_t b, int64_t e) {
    // Restrict: a byte store may alias anything, the pointers included.
    const uint8_t *__restrict in = src, *__restrict in2 = src2, *__restrict t = lut;
    uint8_t *__restrict o = dst;
    if (in2)
      for (int64_t i = b; i < e; ++i)
        o[i] = t[size_t(in[i]) | size_t(in2[i]) << 8];
    else
      for (int64_t i = b; i < e; ++i)
        o[i] = t[in[i]];
  });
}
