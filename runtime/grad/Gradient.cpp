//===- Gradient.cpp - Reverse-mode gradients over the model IR ------------===//
#include "runtime/grad/Gradient.h"

#include "ir/graph/OnnxIO.h"
#include "runtime/KernelUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::grad;

std::vector<std::pair<std::string, std::vector<const graph::Node *>>>
grad::missingBackward(const std::vector<const graph::Node *> &nodes) {
  std::map<std::string, std::vector<const graph::Node *>> byOp;
  const BackwardRegistry &r = BackwardRegistry::get();
  for (const graph::Node *n : nodes)
    if (!r.find(n->domain, n->opType))
      byOp[n->domain.empty() ? n->opType : n->domain + "." + n->opType].push_back(n);
  return {byOp.begin(), byOp.end()};
}

std::unique_ptr<Backprop> Backprop::create(Executor &ex, std::vector<const graph::Value *> wrt,
                                           DiagnosticEngine &diags) {
  const graph::Model &m = ex.model();
  const graph::Graph &g = m.graph;
  std::string where = m.path.empty() ? std::string("<model>") : m.path;
  std::unique_ptr<Backprop> bp(new Backprop(ex));
  bp->wrt = std::move(wrt);
  size_t nv = g.values().size();
  // Forward: values that depend on a source; backward: values an output
  // depends on.
  std::vector<bool> fromSource(nv, false), toOutput(nv, false);
  for (const graph::Value *v : bp->wrt) {
    if (v->type.elem != ElemType::Float) {
      diags.emitAt(where, diag::err_run_node,
                   fmt::format("gradients are taken of float values; `{}` is {}", v->name,
                               graph::toString(v->type.elem)));
      return nullptr;
    }
    fromSource[v->id] = true;
  }
  const std::vector<graph::Node *> &order = g.topologicalOrder();
  for (const graph::Node *n : order) {
    bool any = false;
    for (const graph::Value *in : n->inputs)
      any |= in && fromSource[in->id];
    // Only float values carry a gradient: a Shape's or an ArgMax's integer
    // output is constant under small changes of its input. QuantizeLinear's
    // codes are the exception: the straight-through estimator passes them.
    bool straightThrough = n->opType == "QuantizeLinear";
    bool integerOut = n->inDefaultDomain() &&
                      (n->opType == "Shape" || n->opType == "Size" || n->opType == "ArgMax" ||
                       n->opType == "ArgMin" || n->opType == "NonZero");
    if (any && !integerOut)
      for (const graph::Value *out : n->outputs)
        if (out && (straightThrough || out->type.elem == graph::ElemType::Undefined ||
                    graph::isFloatingPoint(out->type.elem)))
          fromSource[out->id] = true;
  }
  for (const graph::Value *v : g.outputs())
    toOutput[v->id] = true;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    bool any = false;
    for (const graph::Value *out : (*it)->outputs)
      any |= out && toOutput[out->id];
    if (any)
      for (const graph::Value *in : (*it)->inputs)
        if (in)
          toOutput[in->id] = true;
  }
  bp->carries.assign(nv, false);
  for (size_t i = 0; i < nv; ++i)
    bp->carries[i] = fromSource[i] && toOutput[i];
  for (const graph::Value *v : bp->wrt)
    if (!toOutput[v->id]) {
      diags.emitAt(where, diag::err_run_node,
                   fmt::format("no output of the model depends on `{}`", v->name));
      return nullptr;
    }
  for (const graph::Node *n : order) {
    bool in = false, out = false;
    for (const graph::Value *v : n->inputs)
      in |= v && bp->carries[v->id];
    for (const graph::Value *v : n->outputs)
      out |= v && bp->carries[v->id];
    if (in && out)
      bp->active.push_back(n);
  }
  bool ok = true;
  for (const auto &[op, nodes] : missingBackward(bp->active)) {
    std::string names;
    for (size_t i = 0; i < nodes.size() && i < 5; ++i)
      names += (i ? ", `" : "`") + nodes[i]->displayName() + "`";
    if (nodes.size() > 5)
      names += fmt::format(" and {} more", nodes.size() - 5);
    diags.emitAt(graph::describeNode(where, *nodes.front()), diag::err_run_node,
                 fmt::format("operator `{}` has no backward kernel: gradients cannot pass {} "
                             "node{} ({})",
                             op, nodes.size(), nodes.size() == 1 ? "" : "s", names));
    ok = false;
  }
  if (!ok)
    return nullptr;
  bp->states.resize(g.nodes().size());
  return bp;
}

LogicalResult Backprop::forward(const std::map<std::string, Tensor> &inputs,
                                std::vector<Tensor> &outputs, DiagnosticEngine &diags,
                                RunOptions options) {
  tape.clear();
  substituted.clear();
  options.keep = &tape;
  auto user = options.substitute;
  auto record = [&](const graph::Value &v) -> const Tensor * {
    const Tensor *t = user ? user(v) : nullptr;
    if (t)
      substituted[v.id] = *t;
    return t;
  };
  if (user)
    options.substitute = record;
  return ex.run(inputs, outputs, diags, options);
}

const Tensor *Backprop::valueOf(const graph::Value *v) const {
  if (!v)
    return nullptr;
  if (auto it = substituted.find(v->id); it != substituted.end())
    return &it->second;
  if (v->id < tape.size() && tape[v->id].defined())
    return &tape[v->id];
  return ex.constant(*v);
}

LogicalResult Backprop::backward(const std::vector<Tensor> &outputGrads, std::vector<Tensor> &grads,
                                 DiagnosticEngine &diags, GradientHook hook,
                                 llvm::ArrayRef<ValueGradient> seeds) {
  const graph::Model &m = ex.model();
  const graph::Graph &g = m.graph;
  std::string where = m.path.empty() ? std::string("<model>") : m.path;
  if (tape.empty())
    return diags.emitAt(where, diag::err_run_node, "backward before any forward run");
  if (outputGrads.size() != g.outputs().size())
    return diags.emitAt(
        where, diag::err_run_node,
        fmt::format("{} output gradients for {} outputs", outputGrads.size(), g.outputs().size()));
  std::vector<Tensor> acc(g.values().size());
  std::vector<bool> isSource(g.values().size(), false);
  for (const graph::Value *v : wrt)
    isSource[v->id] = true;
  // Adds `t` into the gradient of `v` (the first one is taken as it is).
  auto accumulate = [&](const graph::Value *v, Tensor t) {
    Tensor &a = acc[v->id];
    if (!a.defined()) {
      a = std::move(t);
      return;
    }
    // In place when nothing else holds the sum so far (a gradient this
    // pass made), else into a new tensor.
    Tensor sum = a.sole() ? a : Tensor(ElemType::Float, a.shape());
    const float *x = a.data<float>(), *y = t.data<float>();
    float *s = sum.data<float>();
    parallelFor(a.numel(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        s[i] = x[i] + y[i];
    });
    a = std::move(sum);
  };
  for (size_t k = 0; k < outputGrads.size(); ++k) {
    const graph::Value *v = g.outputs()[k];
    if (!outputGrads[k].defined() || !carries[v->id])
      continue;
    const Tensor *y = valueOf(v);
    if (!y || outputGrads[k].shape() != y->shape() || outputGrads[k].elem() != ElemType::Float)
      return diags.emitAt(where, diag::err_run_node,
                          fmt::format("the gradient of output `{}` must be float {}", v->name,
                                      y ? shapeStr(y->shape()) : std::string("(not computed)")));
    accumulate(v, outputGrads[k]);
  }
  for (const auto &[v, t] : seeds) {
    if (!carries[v->id])
      continue;
    const Tensor *y = valueOf(v);
    if (!y || t.shape() != y->shape() || t.elem() != ElemType::Float)
      return diags.emitAt(where, diag::err_run_node,
                          fmt::format("the gradient of `{}` must be float {}", v->name,
                                      y ? shapeStr(y->shape()) : std::string("(not computed)")));
    accumulate(v, t);
  }
  const BackwardRegistry &r = BackwardRegistry::get();
  for (auto it = active.rbegin(); it != active.rend(); ++it) {
    const graph::Node &n = **it;
    BackwardContext ctx(n, m.opsetVersion(n.domain).value_or(1), states[n.id]);
    bool anyGrad = false;
    for (const graph::Value *out : n.outputs)
      if (hook && out && acc[out->id].defined())
        acc[out->id] = hook(*out, std::move(acc[out->id]));
    for (const graph::Value *out : n.outputs) {
      ctx.outputs.push_back(valueOf(out));
      const Tensor *d = out && acc[out->id].defined() ? &acc[out->id] : nullptr;
      ctx.outputGrads.push_back(d);
      anyGrad |= d != nullptr;
    }
    if (!anyGrad)
      continue;
    for (const graph::Value *in : n.inputs) {
      ctx.inputs.push_back(valueOf(in));
      ctx.wanted.push_back(in && carries[in->id]);
    }
    ctx.inputGrads.resize(n.inputs.size());
    if (!r.find(n.domain, n.opType)(ctx))
      return diags.emitAt(graph::describeNode(where, n), diag::err_run_node,
                          "backward: " + ctx.error);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!ctx.wanted[i] || !ctx.inputGrads[i].defined())
        continue;
      if (!ctx.inputs[i] || ctx.inputGrads[i].shape() != ctx.inputs[i]->shape())
        return diags.emitAt(
            graph::describeNode(where, n), diag::err_run_node,
            fmt::format("backward: the gradient of input {} has the wrong shape", i));
      accumulate(n.inputs[i], std::move(ctx.inputGrads[i]));
    }
    // Gradients of values no remaining node reads can go (not the sources').
    for (const graph::Value *out : n.outputs)
      if (out && !out->isGraphOutput && !isSource[out->id])
        acc[out->id] = Tensor();
  }
  grads.clear();
  for (const graph::Value *v : wrt) {
    const Tensor *x = valueOf(v);
    // A node output's gradient went through the hook at its producer.
    bool produced = v->producer && carries[v->id] &&
                    std::find(active.begin(), active.end(), v->producer) != active.end();
    if (hook && acc[v->id].defined() && !produced)
      acc[v->id] = hook(*v, std::move(acc[v->id]));
    grads.push_back(acc[v->id].defined() ? acc[v->id] : zeros(x ? x->shape() : Shape{}));
  }
  return success();
}
