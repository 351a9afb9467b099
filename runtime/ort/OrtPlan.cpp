//===- OrtPlan.cpp - Finding the steps ONNX Runtime computes its own way ---===//
#include "runtime/ort/OrtPlan.h"

#include "runtime/ort/OrtBinary.h"

using namespace tpcc;
using namespace tpcc::rt;

/// The QuantizeLinear the kernel of the group at step `s` can write directly:
/// the only reader of the node's output (or of its bias Add's), or of the
/// only Relu/Clip reading it.
void OrtPlan::findQuantizedOutput(size_t s) {
  Step &step = steps[s];
  const graph::Node &n = ex.nodeAt(s);
  const graph::Value *v = n.outputs.empty() ? nullptr : n.outputs[0];
  std::vector<size_t> chain;
  std::vector<const graph::Value *> skipped;
  if (const graph::Node *add = step.integer->biasAdd) {
    chain.push_back(ex.stepOf(*add));
    skipped.push_back(v);
    v = add->outputs[0];
  }
  const size_t activations = chain.size() + 1;
  while (v && !v->isGraphOutput && v->uses.size() == 1 && v->uses[0].index == 0) {
    const graph::Node &r = *v->uses[0].node;
    if (!r.inDefaultDomain() || r.outputs.empty() || !r.outputs[0])
      return;
    chain.push_back(ex.stepOf(r));
    skipped.push_back(v);
    if (r.opType == "QuantizeLinear") {
      step.integerAbsorbed = std::move(chain);
      step.integerSkipped = std::move(skipped);
      step.quantizedOutput = r.outputs[0];
      return;
    }
    if ((r.opType != "Relu" && r.opType != "Clip") || chain.size() > activations)
      return;
    v = r.outputs[0];
  }
}

/// Finds the DequantizeLinear steps whose output only group kernels and
/// tables read.
void OrtPlan::findKernelOnlyInputs() {
  for (size_t s = 0; s < steps.size(); ++s) {
    Step &step = steps[s];
    const graph::Node &n = ex.nodeAt(s);
    const graph::Value *out = n.outputs.empty() ? nullptr : n.outputs[0];
    if (n.opType != "DequantizeLinear" || !n.inDefaultDomain() || !out || out->isGraphOutput ||
        out->uses.empty() || ex.precomputed(s))
      continue;
    std::vector<size_t> readers;
    for (const graph::Use &u : out->uses) {
      const Step &reader = steps[ex.stepOf(*u.node)];
      bool reads = (u.index == 0 && reader.quantizedInput == n.input(0)) ||
                   (u.index == 1 && reader.quantizedInputB == n.input(0));
      if (!(reader.integerKernel || reader.lookup || reader.codeMatMul) || !reads)
        break;
      readers.push_back(ex.stepOf(*u.node));
    }
    if (readers.size() == out->uses.size())
      step.kernelReaders = std::move(readers);
  }
}

/// The convolution kernels whose quantized output every reader takes
/// channels-last: through DequantizeLinear steps only convolution kernels,
/// tables and max poolings on the codes (readsBlocked) read.
void OrtPlan::findChannelsLastOutputs() {
  for (size_t s = 0; s < steps.size(); ++s) {
    Step &step = steps[s];
    const graph::Value *v = step.quantizedOutput;
    if (!v || !step.integerKernel || ex.nodeAt(s).opType != "Conv" || v->isGraphOutput ||
        v->uses.empty())
      continue;
    bool all = true;
    for (const graph::Use &u : v->uses) {
      const Step &dq = steps[ex.stepOf(*u.node)];
      all &= !dq.kernelReaders.empty();
      for (size_t r : dq.kernelReaders)
        all &= (steps[r].lookup && (!steps[r].lookup->onCodes || readsBlocked(ex.nodeAt(r), 0))) ||
               (steps[r].integerKernel && ex.nodeAt(r).opType == "Conv");
    }
    step.channelsLastOut = all;
  }
}

/// The integer groups and their kernels. A group's kernel reads the tensor
/// its DequantizeLinear reads: that value lives until the group's step.
OrtPlan::OrtPlan(Executor &ex) : ex(ex), steps(ex.numSteps()) {
  auto constant = [&](const graph::Value &v) -> const Tensor * {
    return v.isGraphInput ? nullptr : ex.constant(v);
  };
  for (size_t s = 0; s < steps.size(); ++s) {
    Step &step = steps[s];
    const graph::Node &n = ex.nodeAt(s);
    if (ex.precomputed(s) || step.groupHead)
      continue;
    step.integer = integerGroupOf(n);
    if (step.integer && !ortFuses(*step.integer))
      step.integer.reset(); // ORT runs it in float
    if (step.integer && step.integer->biasAdd) {
      size_t t = ex.stepOf(*step.integer->biasAdd);
      steps[t].groupHead = s;
      ex.keepUntil(t, *n.input(0)); // the Add's output is computed from it
    }
    if (!step.integer && (step.codeMatMul = codeMatMulOf(n))) {
      step.quantizedInput = step.codeMatMul->a;
      step.quantizedInputB = step.codeMatMul->b;
      ex.keepUntil(s, *step.quantizedInput);
      ex.keepUntil(s, *step.quantizedInputB);
      if (const graph::Node *q = step.codeMatMul->q) {
        step.integerAbsorbed = {ex.stepOf(*q)};
        step.integerSkipped = {n.outputs[0]};
        step.quantizedOutput = q->outputs[0];
      }
      continue;
    }
    if (!step.integer) {
      step.lookup = lookupChainOf(n, constant);
      if (step.lookup && !buildTable(step))
        step.lookup.reset();
      if (!step.lookup)
        step.lookup = codeChainOf(n, constant);
      if (!step.lookup)
        step.lookup = softmaxChainOf(n, constant);
      if (step.lookup) {
        step.integerAbsorbed = {ex.stepOf(*step.lookup->q)};
        step.integerSkipped = {n.outputs[0]};
        if (const graph::Node *act = step.lookup->dropped) { // ORT drops it
          step.integerAbsorbed.insert(step.integerAbsorbed.begin(), ex.stepOf(*act));
          step.integerSkipped.push_back(act->outputs[0]);
        }
        step.quantizedOutput = step.lookup->output;
        step.quantizedInput = step.lookup->input[0];
        step.quantizedInputB = step.lookup->input[1]; // null for one input
        ex.keepUntil(s, *step.quantizedInput);
        if (step.quantizedInputB)
          ex.keepUntil(s, *step.quantizedInputB);
      }
      continue;
    }
    const graph::Value *dq = n.input(0);
    const graph::Value *xq = dq && dq->producer ? dq->producer->input(0) : nullptr;
    std::string error;
    if (!xq || !(step.integerKernel = IntegerKernel::create(*step.integer, error)))
      continue;
    step.quantizedInput = xq;
    if (!step.integer->floatOutput)
      findQuantizedOutput(s);
    ex.keepUntil(s, *xq);
  }
  findKernelOnlyInputs();
  findChannelsLastOutputs();
}

/// The pair table of an Add or Mul that ONNX Runtime fuses into QLinearAdd
/// or QLinearMul (its inputs and output of one code type in ORT's terms),
/// computed as ORT's kernels do (OrtBinary.h); false when ORT runs it in
/// float.
bool OrtPlan::ortBinaryTable(Step &step) {
  const LookupChain &c = *step.lookup;
  if (c.arity != 2 || (c.op->opType != "Add" && c.op->opType != "Mul"))
    return false;
  const graph::Node *nodes[3] = {c.dq[0], c.dq[1], c.q};
  const graph::Value *codes[3] = {c.input[0], c.input[1], c.output};
  OrtGrid grid[3];
  bool native[3];
  for (int k = 0; k < 3; ++k) {
    const Tensor *scale = ex.constant(*nodes[k]->input(1));
    const graph::Value *zv = nodes[k]->input(2);
    const Tensor *zero = zv ? ex.constant(*zv) : nullptr;
    graph::ElemType elem = zero ? zero->elem() : codes[k]->type.elem;
    if (!scale || scale->elem() != graph::ElemType::Float || scale->numel() != 1)
      return false;
    native[k] = elem == graph::ElemType::Int8;
    grid[k].scale = scale->data<float>()[0];
    grid[k].isSigned = native[k] && !ortUnsignedCodes(*codes[k]);
    grid[k].zero = int32_t(zero ? zero->intAt(0) : 0) + (native[k] && !grid[k].isSigned ? 128 : 0);
  }
  if (grid[0].isSigned != grid[1].isSigned || grid[1].isSigned != grid[2].isSigned)
    return false;
  step.table = rt::ortBinaryTable(c.op->opType, grid[0], grid[1], grid[2], native);
  step.table.resize(step.table.size() + kPairTablePadding, 0);
  step.tableType = native[2] ? graph::ElemType::Int8 : graph::ElemType::UInt8;
  return true;
}

/// The table of a lookup chain: ORT's arithmetic for the Add and Mul it
/// fuses, else its kernels run on every code (pair).
bool OrtPlan::buildTable(Step &step) {
  if (ortBinaryTable(step))
    return true;
  const LookupChain &c = *step.lookup;
  const int64_t n = c.arity == 2 ? 65536 : 256;
  BufferPool::Scope system(nullptr);
  Tensor codes[2], f[2], g, y;
  for (int i = 0; i < c.arity; ++i) {
    codes[i] = Tensor(c.input[i]->type.elem, {n});
    uint8_t *p = static_cast<uint8_t *>(codes[i].raw());
    for (int64_t k = 0; k < n; ++k)
      p[k] = uint8_t(i == 0 ? k & 255 : k >> 8);
    if (!ex.runAlone(*c.dq[i], {&codes[i]}, f[i]))
      return false;
  }
  if (!ex.runAlone(*c.op,
                   c.arity == 2 ? std::vector<const Tensor *>{&f[0], &f[1]}
                                : std::vector<const Tensor *>{&f[0]},
                   g) ||
      !ex.runAlone(*c.q, {&g}, y) || y.numel() != n ||
      (y.elem() != graph::ElemType::UInt8 && y.elem() != graph::ElemType::Int8))
    return false;
  const uint8_t *p = static_cast<const uint8_t *>(y.raw());
  step.table.assign(p, p + n);
  if (c.arity == 2)
    step.table.resize(size_t(n) + kPairTablePadding, 0);
  step.tableType = y.elem();
  return true;
}
