//===- ConstantOperands.cpp - Constant operands as weights ----------------===//
#include "plan/ConstantOperands.h"

#include "ir/OnnxSchema.h"

#include <algorithm>

using namespace tpcc;
using namespace tpcc::plan;

std::optional<int64_t> plan::constantChannelAxis(const std::vector<int64_t> &dims,
                                                 std::optional<size_t> outRank) {
  std::vector<int64_t> long_;
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] > 1)
      long_.push_back(int64_t(k));
  if (long_.size() == 1)
    return long_[0];
  if (!outRank || *outRank < 2 || *outRank < dims.size())
    return std::nullopt;
  int64_t k = 1 - int64_t(*outRank - dims.size());
  if (k >= 0 && dims[size_t(k)] > 1)
    return k;
  return std::nullopt;
}

void plan::addConstantOperands(PlanNode &pn, const graph::Model &model) {
  const graph::Node &n = *pn.node;
  if (!pn.options.options || !n.inDefaultDomain())
    return;
  bool anyQuantizes =
      std::any_of(pn.options.options->configs.begin(), pn.options.options->configs.end(),
                  [](const ir::OpConfig &c) { return c.weights.quantize; });
  if (!anyQuantizes)
    return;
  const ir::OnnxOp *op = ir::OnnxSchemaIndex::get().find(n.opType);
  const ir::OnnxOpVersion *schema =
      op ? op->atOpset(int(model.opsetVersion("").value_or(1))) : nullptr;
  if (!schema)
    return;
  std::optional<size_t> outRank;
  if (!n.outputs.empty() && n.outputs[0] && n.outputs[0]->type.shape)
    outRank = n.outputs[0]->type.shape->size();
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const graph::Value *v = n.inputs[i];
    const ir::OnnxInput *formal = schema->inputAt(int64_t(i));
    if (!v || !v->constant || v->constant->elem != graph::ElemType::Float || !formal ||
        !formal->differentiable)
      continue;
    bool declared = std::any_of(pn.weights.begin(), pn.weights.end(), [&](const PlanWeight &w) {
      return w.decl && w.inputIndex == int64_t(i);
    });
    if (declared)
      continue;
    PlanWeight w;
    w.slot = operandSlot(int64_t(i));
    w.inputIndex = int64_t(i);
    w.input = v;
    w.config = pn.config().weightConfig(w.slot);
    w.quantize = w.config.quantize;
    w.channelAxis = constantChannelAxis(v->constant->dims, outRank);
    if (w.config.perChannel)
      w.axis = w.channelAxis;
    pn.weights.push_back(std::move(w));
  }
}
