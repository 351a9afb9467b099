//===- Fusion.cpp - Nodes a convolution computes as oneDNN post-ops ---------===//
#include "runtime/Fusion.h"

#include <cmath>
#include <limits>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// A float scalar constant input `i` of `n` (absent: `dflt`), or none.
std::optional<float> scalarInput(const graph::Node &n, size_t i, float dflt,
                                 const std::vector<Tensor> &constants) {
  const graph::Value *v = n.input(i);
  if (!v)
    return dflt;
  if (!v->constant || v->isGraphInput)
    return std::nullopt;
  const Tensor &t = constants[v->id];
  if (t.elem() != ElemType::Float || t.numel() != 1)
    return std::nullopt;
  return t.data<float>()[0];
}

/// The post-op of a one-input activation node reading `x`, or none.
std::optional<std::vector<PostOp>> activationOf(const graph::Node &n, int64_t opset,
                                                const std::vector<Tensor> &constants) {
  using K = PostOp::Kind;
  constexpr float inf = std::numeric_limits<float>::infinity();
  std::unique_ptr<NodeState> none;
  KernelContext ctx(n, opset, none);
  const std::string &op = n.opType;
  if (op == "Relu")
    return std::vector<PostOp>{{K::Clip, 0.f, inf}};
  if (op == "LeakyRelu")
    return std::vector<PostOp>{{K::LeakyRelu, ctx.attrFloat("alpha", 0.01f), 0.f}};
  if (op == "Sigmoid")
    return std::vector<PostOp>{{K::Logistic, 0.f, 0.f}};
  if (op == "Tanh")
    return std::vector<PostOp>{{K::Tanh, 0.f, 0.f}};
  if (op == "HardSwish")
    return std::vector<PostOp>{{K::HardSwish, 0.f, 0.f}};
  if (op == "HardSigmoid")
    return std::vector<PostOp>{
        {K::Linear, ctx.attrFloat("alpha", 0.2f), ctx.attrFloat("beta", 0.5f)},
        {K::Clip, 0.f, 1.f}};
  if (op != "Clip")
    return std::nullopt;
  float lo = -inf, hi = inf;
  if (opset < 11) {
    lo = ctx.attrFloat("min", -std::numeric_limits<float>::max());
    hi = ctx.attrFloat("max", std::numeric_limits<float>::max());
  } else {
    std::optional<float> l = scalarInput(n, 1, -inf, constants),
                         h = scalarInput(n, 2, inf, constants);
    if (!l || !h)
      return std::nullopt;
    lo = *l, hi = *h;
  }
  if (!(lo <= hi))
    return std::nullopt;
  return std::vector<PostOp>{{K::Clip, lo, hi}};
}

/// Whether the shapes of `a` and `b` are provably equal.
bool sameShape(const graph::Value &a, const graph::Value &b) {
  if (!a.type.shape || !b.type.shape || a.type.shape->size() != b.type.shape->size())
    return false;
  for (size_t i = 0; i < a.type.shape->size(); ++i) {
    const graph::Dim &x = (*a.type.shape)[i], &y = (*b.type.shape)[i];
    if (!(x.known() ? x.value == y.value : !x.param.empty() && x.param == y.param))
      return false;
  }
  return true;
}

/// The oneDNN algorithm a post-op runs as (Conv.cpp maps them).
int algorithmOf(const PostOp &p) {
  if (p.kind == PostOp::Kind::Clip && p.a == 0.f && std::isinf(p.b))
    return int(PostOp::Kind::LeakyRelu); // eltwise_relu with alpha 0
  return int(p.kind);
}

/// Appends `ops` to `post`; false when oneDNN 2.6 would compute the chain
/// wrongly. Its JIT kernels give every post-op of one algorithm the
/// parameters of the first (Conv -> Clip -> Clip clips once), so a clip
/// after a clip becomes one clip, and another repeat of an algorithm with
/// other parameters ends the chain.
bool appendOps(std::vector<PostOp> &post, const std::vector<PostOp> &ops) {
  for (PostOp p : ops) {
    if (!post.empty() && post.back().kind == PostOp::Kind::Clip && p.kind == PostOp::Kind::Clip) {
      PostOp &last = post.back();
      float lo = std::max(last.a, p.a), hi = std::min(last.b, p.b);
      if (!(lo <= hi))
        return false;
      last.a = lo, last.b = hi;
      continue;
    }
    for (const PostOp &q : post)
      if (p.kind != PostOp::Kind::Add && algorithmOf(q) == algorithmOf(p) && !(q == p))
        return false;
    post.push_back(p);
  }
  return true;
}

/// `v`'s only reader, when it has one and is no graph output.
const graph::Node *onlyReader(const graph::Value *v) {
  if (v->isGraphOutput || v->uses.size() != 1)
    return nullptr;
  return v->uses[0].node;
}

bool singleOutput(const graph::Node &n) {
  return n.inDefaultDomain() && n.outputs.size() == 1 && n.outputs[0];
}

/// A scalar float constant input of binary `n` and the other input, or none.
std::optional<std::pair<float, const graph::Value *>>
withScalar(const graph::Node &n, const std::vector<Tensor> &constants) {
  if (!singleOutput(n) || n.inputs.size() != 2 || !n.inputs[0] || !n.inputs[1])
    return std::nullopt;
  for (size_t i = 0; i < 2; ++i)
    if (std::optional<float> c = scalarInput(n, i, 0.f, constants))
      if (!n.inputs[1 - i]->constant)
        return std::make_pair(*c, n.inputs[1 - i]);
  return std::nullopt;
}

/// The exact GELU chain whose first node in `order` is `head`, as PyTorch
/// and Hugging Face export it: t = x / a (or x * a), Erf, + 1, then
/// (x * that) * b or (x * b) * that.
std::optional<Fusion> geluAt(const std::vector<graph::Node *> &order, size_t head,
                             const std::vector<size_t> &stepOf,
                             const std::vector<Tensor> &constants) {
  const graph::Node &h = *order[head];
  if (h.opType != "Div" && h.opType != "Mul")
    return std::nullopt;
  auto first = withScalar(h, constants);
  if (!first || first->second->type.elem != ElemType::Float)
    return std::nullopt;
  const graph::Value *x = first->second;
  if (x->uses.size() != 2)
    return std::nullopt;
  // x's two readers: the scaling into Erf and the product (or the scale b).
  const graph::Node *into = nullptr, *other = nullptr;
  for (const graph::Use &u : x->uses) {
    const graph::Node *r = singleOutput(*u.node) ? onlyReader(u.node->outputs[0]) : nullptr;
    if (r && r->opType == "Erf" && !into)
      into = u.node;
    else
      other = u.node;
  }
  if (!into || !other || (into != &h && other != &h))
    return std::nullopt;
  auto scaled = withScalar(*into, constants);
  if (!scaled || scaled->second != x || (into->opType != "Div" && into->opType != "Mul"))
    return std::nullopt;
  const graph::Node *erf = onlyReader(into->outputs[0]);
  const graph::Node *plus = singleOutput(*erf) ? onlyReader(erf->outputs[0]) : nullptr;
  auto one = plus && plus->opType == "Add" ? withScalar(*plus, constants) : std::nullopt;
  if (!one || one->first != 1.f || one->second != erf->outputs[0])
    return std::nullopt;
  const graph::Node *product = onlyReader(plus->outputs[0]);
  if (!product || product->opType != "Mul" || !singleOutput(*product) ||
      product->inputs.size() != 2)
    return std::nullopt;
  Fusion f;
  f.kernel = fusedGeluKernel;
  float divides = into->opType == "Div" ? 1.f : 0.f;
  std::vector<const graph::Node *> chain;
  if (other == product) { // (x * (erf + 1)) * b
    const graph::Node *last = onlyReader(product->outputs[0]);
    auto b = last && last->opType == "Mul" ? withScalar(*last, constants) : std::nullopt;
    if (!b || b->second != product->outputs[0])
      return std::nullopt;
    f.params = {scaled->first, divides, b->first, 0.f};
    chain = {into, erf, plus, product, last};
  } else { // (x * b) * (erf + 1)
    auto b = other->opType == "Mul" ? withScalar(*other, constants) : std::nullopt;
    if (!b || b->second != x || onlyReader(other->outputs[0]) != product)
      return std::nullopt;
    f.params = {scaled->first, divides, b->first, 1.f};
    chain = {into, erf, plus, other, product};
  }
  for (const graph::Node *n : chain) {
    if (stepOf[n->id] < head || (n != chain.back() && n->outputs[0]->isGraphOutput))
      return std::nullopt;
    if (n != &h)
      f.absorbed.push_back(stepOf[n->id]);
    if (n != chain.back())
      f.skipped.push_back(n->outputs[0]);
  }
  f.result = chain.back()->outputs[0];
  return f;
}

/// The only reader of MatMul `mm`'s product (step `head`) when it is an `op`
/// node of two inputs and one output that runs after it.
const graph::Node *productReader(const graph::Node &mm, const char *op,
                                 const std::vector<size_t> &stepOf, size_t head) {
  if (!singleOutput(mm) || mm.inputs.size() != 2 || !mm.inputs[0] || !mm.inputs[1])
    return nullptr;
  const graph::Node *r = onlyReader(mm.outputs[0]);
  if (!r || r->opType != op || !singleOutput(*r) || r->inputs.size() != 2 || stepOf[r->id] < head)
    return nullptr;
  return r;
}

/// The MatMul at `head` when its only reader gathers rows of its product
/// with constant indices.
std::optional<Fusion> matmulRowsAt(const std::vector<graph::Node *> &order, size_t head,
                                   const std::vector<size_t> &stepOf,
                                   llvm::function_ref<int64_t(const graph::Node &)> opsetOf,
                                   const std::vector<Tensor> &constants) {
  const graph::Node &mm = *order[head];
  const graph::Node *g = productReader(mm, "Gather", stepOf, head);
  const graph::Value *prod = mm.outputs[0];
  if (!g || g->inputs[0] != prod || !g->inputs[1])
    return std::nullopt;
  const auto &as = mm.inputs[0]->type.shape, &bs = mm.inputs[1]->type.shape, &ps = prod->type.shape;
  if (!as || !bs || !ps || as->size() < 2 || bs->size() < 2 || ps->size() < 2)
    return std::nullopt;
  std::unique_ptr<NodeState> none;
  KernelContext ctx(*g, opsetOf(*g), none);
  int64_t rank = int64_t(ps->size()), axis = ctx.attrInt("axis", 0);
  if (axis < 0)
    axis += rank;
  const graph::Value *iv = g->inputs[1];
  if (axis != rank - 2 || !iv->constant || iv->isGraphInput)
    return std::nullopt;
  const Tensor &idx = constants[iv->id];
  if (!idx.defined() || idx.rank() > 1 || idx.numel() > 4096 ||
      (idx.elem() != ElemType::Int64 && idx.elem() != ElemType::Int32))
    return std::nullopt;
  Fusion f;
  f.kernel = matmulRowsKernel;
  f.params.push_back(float(idx.rank()));
  for (int64_t i = 0; i < idx.numel(); ++i) {
    int64_t v = idx.intAt(i);
    if (v < -(1 << 24) || v > (1 << 24)) // exact as a float
      return std::nullopt;
    f.params.push_back(float(v));
  }
  f.absorbed.push_back(stepOf[g->id]);
  f.skipped.push_back(prod);
  f.result = g->outputs[0];
  return f;
}

/// The MatMul at `head` when its only reader adds a constant float row of
/// its product's width (a bias).
std::optional<Fusion> matmulBiasAt(const std::vector<graph::Node *> &order, size_t head,
                                   const std::vector<size_t> &stepOf,
                                   const std::vector<Tensor> &constants) {
  const graph::Node &mm = *order[head];
  const graph::Node *add = productReader(mm, "Add", stepOf, head);
  if (!add || !mm.inputs[1]->type.shape || mm.inputs[1]->type.shape->size() < 2)
    return std::nullopt;
  const graph::Value *prod = mm.outputs[0];
  // A row of B's width, of no higher rank than the product (B's rank is
  // at least 2, so a 1-D row always fits): the sum keeps the product's shape.
  const graph::Value *bias = add->inputs[0] == prod ? add->inputs[1] : add->inputs[0];
  const graph::Dim &n = mm.inputs[1]->type.shape->back();
  const auto &ps = prod->type.shape;
  if (!bias || bias == prod || !bias->constant || bias->isGraphInput || !n.known() ||
      prod->type.elem != ElemType::Float)
    return std::nullopt;
  const Tensor &t = constants[bias->id];
  int64_t rank = ps ? int64_t(ps->size()) : 1;
  if (!t.defined() || t.elem() != ElemType::Float || t.rank() > rank || t.numel() != n.value ||
      (t.rank() > 0 && t.shape().back() != t.numel()))
    return std::nullopt;
  Fusion f;
  f.kernel = matmulBiasKernel;
  f.operands.push_back(bias);
  f.absorbed.push_back(stepOf[add->id]);
  f.skipped.push_back(prod);
  f.result = add->outputs[0];
  return f;
}

} // namespace

std::optional<Fusion> rt::fusionAfter(const std::vector<graph::Node *> &order, size_t head,
                                      const std::vector<size_t> &stepOf,
                                      llvm::function_ref<int64_t(const graph::Node &)> opsetOf,
                                      const std::vector<Tensor> &constants) {
  const graph::Node &conv = *order[head];
  if (!conv.inDefaultDomain())
    return std::nullopt;
  if (conv.opType == "Div" || conv.opType == "Mul")
    return geluAt(order, head, stepOf, constants);
  if (conv.opType == "MatMul") {
    if (auto rows = matmulRowsAt(order, head, stepOf, opsetOf, constants))
      return rows;
    return matmulBiasAt(order, head, stepOf, constants);
  }
  if ((conv.opType != "Conv" && conv.opType != "ConvTranspose") || !singleOutput(conv))
    return std::nullopt;
  Fusion f;
  const graph::Value *cur = conv.outputs[0];
  auto absorb = [&](const graph::Node &n) {
    f.absorbed.push_back(stepOf[n.id]);
    f.skipped.push_back(cur);
    cur = n.outputs[0];
  };
  while (!cur->isGraphOutput) {
    if (const graph::Node *u = onlyReader(cur); u && singleOutput(*u)) {
      if (u->inputs.size() >= 1 && u->inputs[0] == cur) {
        if (auto ops = activationOf(*u, opsetOf(*u), constants)) {
          std::vector<PostOp> post = f.post;
          if (!appendOps(post, *ops))
            break;
          f.post = std::move(post);
          absorb(*u);
          continue;
        }
      }
      if (u->opType == "Add" && u->inputs.size() == 2) {
        const graph::Value *other = u->inputs[0] == cur ? u->inputs[1] : u->inputs[0];
        bool ready =
            other && other != cur && (!other->producer || stepOf[other->producer->id] < head);
        if (ready && sameShape(*other, *cur) && sameShape(*u->outputs[0], *cur) &&
            other->type.elem == ElemType::Float) {
          f.post.push_back({PostOp::Kind::Add, 0.f, 0.f});
          f.operands.push_back(other);
          absorb(*u);
          continue;
        }
      }
      break;
    }
    // x * Sigmoid(x), x * HardSigmoid(x): two readers, the gate and the Mul.
    if (cur->uses.size() != 2)
      break;
    const graph::Node *gate = nullptr, *mul = nullptr;
    for (const graph::Use &use : cur->uses) {
      const graph::Node &n = *use.node;
      if (n.opType == "Mul" && n.inputs.size() == 2)
        mul = &n;
      else if ((n.opType == "Sigmoid" || n.opType == "HardSigmoid") && use.index == 0)
        gate = &n;
    }
    if (!gate || !mul || !singleOutput(*gate) || !singleOutput(*mul) ||
        onlyReader(gate->outputs[0]) != mul ||
        !((mul->inputs[0] == cur && mul->inputs[1] == gate->outputs[0]) ||
          (mul->inputs[1] == cur && mul->inputs[0] == gate->outputs[0])))
      break;
    PostOp op{PostOp::Kind::Swish, 1.f, 0.f};
    if (gate->opType == "HardSigmoid") {
      std::unique_ptr<NodeState> none;
      KernelContext ctx(*gate, opsetOf(*gate), none);
      if (std::fabs(ctx.attrFloat("alpha", 0.2f) - 1.f / 6.f) > 1e-7f ||
          ctx.attrFloat("beta", 0.5f) != 0.5f)
        break;
      op = {PostOp::Kind::HardSwish, 0.f, 0.f};
    }
    if (!appendOps(f.post, {op}))
      break;
    f.absorbed.push_back(stepOf[gate->id]);
    f.skipped.push_back(gate->outputs[0]);
    absorb(*mul);
  }
  if (f.post.empty())
    return std::nullopt;
  f.result = cur;
  return f;
}

void rt::applyPostOps(Tensor &t, llvm::ArrayRef<PostOp> post,
                      llvm::ArrayRef<const Tensor *> operands) {
  float *d = t.data<float>();
  int64_t n = t.numel();
  size_t next = 0;
  for (const PostOp &p : post) {
    const float *o = p.kind == PostOp::Kind::Add ? operands[next++]->data<float>() : nullptr;
    for (int64_t i = 0; i < n; ++i) {
      float x = d[i];
      switch (p.kind) {
      case PostOp::Kind::Clip:
        x = std::min(std::max(x, p.a), p.b);
        break;
      case PostOp::Kind::LeakyRelu:
        x = x >= 0 ? x : p.a * x;
        break;
      case PostOp::Kind::Logistic:
        x = 1.f / (1.f + std::exp(-x));
        break;
      case PostOp::Kind::Tanh:
        x = std::tanh(x);
        break;
      case PostOp::Kind::Swish:
        x = x / (1.f + std::exp(-p.a * x));
        break;
      case PostOp::Kind::HardSwish:
        x = x * std::min(std::max(x / 6.f + 0.5f, 0.f), 1.f);
        break;
      case PostOp::Kind::Linear:
        x = p.a * x + p.b;
        break;
      case PostOp::Kind::Add:
        x += o[i];
        break;
      }
      d[i] = x;
    }
  }
}
