//===- MatMulNBits.cpp - Weight-only 4-bit products as ORT's MatMulNBits ---===//
#include "quant/ptq/qdq/MatMulNBits.h"

#include "ir/graph/NodeAttrs.h"
#include "quant/core/GraphHelpers.h"

#include <cstring>
#include <set>

using namespace tpcc;
using namespace tpcc::quant;
using graph::ElemType;
using graph::Node;
using graph::Tensor;
using graph::Value;

namespace {

bool isDefault(const Node *n, const char *op) { return n && n->domain.empty() && n->opType == op; }

Value *addTensor(graph::Graph &g, const std::string &base, ElemType e, std::vector<int64_t> dims,
                 std::string raw) {
  std::set<std::string> taken; // the graph's values are the names to avoid
  auto t = std::make_unique<Tensor>();
  t->name = edits::freshName(g, base, taken);
  t->elem = e;
  t->dims = std::move(dims);
  t->raw = std::move(raw);
  return g.addConstant(std::move(t));
}

/// The blocked 4-bit DequantizeLinear that computes `b` for `n` alone, with
/// its codes' K axis (`kAxis` of a rank-2 tensor); null otherwise.
const Node *blockedB(const graph::Model &m, const Value *b, int64_t kAxis) {
  const Node *dq = b ? b->producer : nullptr;
  if (!isDefault(dq, "DequantizeLinear") || b->uses.size() != 1 || b->isGraphOutput)
    return nullptr;
  const Value *q = dq->input(0), *s = dq->input(1), *z = dq->input(2);
  if (!q || !q->constant || !s || !s->constant || (z && !z->constant))
    return nullptr;
  graph::NodeAttrs a = graph::attrsOf(m, *dq);
  int64_t block = a.getInt("block_size", 0);
  bool fourBit = q->constant->elem == ElemType::Int4 || q->constant->elem == ElemType::UInt4;
  if (!fourBit || q->constant->dims.size() != 2 || s->constant->elem != ElemType::Float ||
      block < 16 || (block & (block - 1)) || a.getInt("axis", 1) != kAxis)
    return nullptr;
  return dq;
}

} // namespace

int quant::writeMatMulNBits(graph::Model &m) {
  graph::Graph &g = m.graph;
  std::vector<bool> dead(g.nodes().size(), false);
  int rewritten = 0;
  for (const auto &owned : g.nodes()) {
    Node *n = owned.get();
    bool gemm = isDefault(n, "Gemm");
    if (!gemm && !isDefault(n, "MatMul"))
      continue;
    int64_t kAxis = 0;
    const Value *bias = nullptr;
    if (gemm) {
      graph::NodeAttrs a = graph::attrsOf(m, *n);
      if (a.getInt("transA", 0) != 0 || a.getFloat("alpha", 1) != 1 || a.getFloat("beta", 1) != 1)
        continue;
      kAxis = a.getInt("transB", 0) ? 1 : 0;
      bias = n->input(2);
    }
    const Node *dq = blockedB(m, n->input(1), kAxis);
    if (!dq)
      continue;
    const Tensor &codes = *dq->input(0)->constant, &scales = *dq->input(1)->constant;
    const Tensor *zps = dq->input(2) ? dq->input(2)->constant : nullptr;
    int64_t K = codes.dims[size_t(kAxis)], N = codes.dims[size_t(1 - kAxis)];
    if (bias && !(bias->constant && bias->constant->elem == ElemType::Float &&
                  bias->constant->numElements() == N))
      continue;
    int64_t block = graph::attrsOf(m, *dq).getInt("block_size", 0);
    int64_t blocks = (K + block - 1) / block;
    bool isSigned = codes.elem == ElemType::Int4;
    // Element (k, n) of B and block (j, n)'s scale and zero point, in the
    // blocked scale's layout ([blocks, N], or [N, blocks] for a B^T).
    auto at = [&](int64_t k, int64_t col) { return kAxis == 0 ? k * N + col : col * K + k; };
    auto blockAt = [&](int64_t j, int64_t col) {
      return kAxis == 0 ? j * N + col : col * blocks + j;
    };
    auto code = [&](const Tensor &t, int64_t i) {
      return isSigned ? int(int8_t(t.raw[size_t(i)])) : int(uint8_t(t.raw[size_t(i)]));
    };
    int offset = isSigned ? 8 : 0;
    std::string packed(size_t(N * blocks * block / 2), '\0'), scale(size_t(N * blocks) * 4, '\0');
    std::vector<int> zero(size_t(N * blocks));
    bool allEight = true;
    for (int64_t col = 0; col < N; ++col)
      for (int64_t j = 0; j < blocks; ++j) {
        int z = (zps ? code(*zps, blockAt(j, col)) : 0) + offset;
        zero[size_t(col * blocks + j)] = z;
        allEight &= z == 8;
        std::memcpy(&scale[size_t(col * blocks + j) * 4], scales.raw.data() + blockAt(j, col) * 4,
                    4);
        for (int64_t i = 0; i < block; ++i) {
          int64_t k = j * block + i;
          int q = k < K ? code(codes, at(k, col)) + offset : z; // padding: the value 0
          auto &byte = packed[size_t((col * blocks + j) * block / 2 + i / 2)];
          byte = char(uint8_t(byte) | uint8_t(q << (4 * (i % 2))));
        }
      }
    std::string base = dq->input(0)->name;
    Value *bv =
        addTensor(g, base + "_nbits", ElemType::UInt8, {N, blocks, block / 2}, std::move(packed));
    Value *sv =
        addTensor(g, base + "_nbits_scales", ElemType::Float, {N * blocks}, std::move(scale));
    Value *zv = nullptr;
    if (!allEight) {
      int64_t row = (blocks + 1) / 2;
      std::string z(size_t(N * row), '\0');
      for (int64_t col = 0; col < N; ++col)
        for (int64_t j = 0; j < blocks; ++j)
          z[size_t(col * row + j / 2)] =
              char(uint8_t(z[size_t(col * row + j / 2)]) |
                   uint8_t(zero[size_t(col * blocks + j)] << (4 * (j % 2))));
      zv = addTensor(g, base + "_nbits_zero_points", ElemType::UInt8, {N * row}, std::move(z));
    }
    std::vector<Value *> ins = {n->inputs[0], bv, sv};
    if (zv || bias)
      ins.push_back(zv);
    if (bias) {
      ins.push_back(nullptr); // g_idx
      ins.push_back(const_cast<Value *>(bias));
    }
    n->inputs = std::move(ins);
    n->opType = "MatMulNBits";
    n->domain = "com.microsoft";
    n->attributes = {edits::intAttribute("K", K), edits::intAttribute("N", N),
                     edits::intAttribute("bits", 4), edits::intAttribute("block_size", block),
                     edits::intAttribute("accuracy_level", 0)};
    dead[dq->id] = true;
    ++rewritten;
  }
  if (!rewritten)
    return 0;
  if (!m.opsetVersion("com.microsoft"))
    m.opsets.push_back({"com.microsoft", 1});
  g.eraseNodes(dead);
  g.relink();
  m.eraseUnusedInitializers();
  g.relink();
  return rewritten;
}
