//===- LookupTable.cpp - 8-bit element-wise chains as one lookup ------------===//
#include "runtime/ort/LookupTable.h"

#include "runtime/KernelUtil.h"
#include "runtime/Simd.h"
#include "runtime/ops/Dnnl.h"
#include "runtime/ort/IntegerPairs.h"

#include "llvm/ADT/StringSwitch.h"

#include <cstring>
#include <immintrin.h>

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

using ConstantFn = llvm::function_ref<const Tensor *(const graph::Value &)>;

/// A scalar constant (a per-tensor scale or zero point).
const Tensor *scalar(const graph::Value *v, ConstantFn constant) {
  const Tensor *t = v ? constant(*v) : nullptr;
  return t && t->numel() == 1 ? t : nullptr;
}

/// A QuantizeLinear or DequantizeLinear with one float scale and an 8-bit
/// zero point (or none) for the whole tensor.
bool perTensor(const graph::Node &n, ConstantFn constant) {
  const Tensor *s = scalar(n.input(1), constant), *z = scalar(n.input(2), constant);
  return n.inDefaultDomain() && s && s->elem() == graph::ElemType::Float &&
         (!n.input(2) || (z && eightBit(z->elem())));
}

/// Operators whose output holds some of their input's values, unchanged (a
/// max or data movement): on the codes of an increasing grid they give the
/// codes of their float result.
bool keepsValues(const graph::Node &n) {
  return llvm::StringSwitch<bool>(n.opType)
      .Cases("MaxPool", "GlobalMaxPool", "Reshape", "Flatten", "Squeeze", "Unsqueeze", true)
      .Cases("Transpose", "Identity", "SpaceToDepth", "DepthToSpace", true)
      .Cases("Slice", "Gather", "Expand", "Tile", true)
      .Default(false);
}

/// DequantizeLinear `dq` -> `op` -> QuantizeLinear `q`.
LookupChain unaryChain(const graph::Node &dq, const graph::Node &op, const graph::Node &q) {
  LookupChain c;
  c.dq[0] = &dq;
  c.input[0] = dq.input(0);
  c.op = &op;
  c.q = &q;
  c.output = q.outputs[0];
  return c;
}

} // namespace

std::optional<LookupChain> rt::codeChainOf(const graph::Node &op, ConstantFn constant) {
  if (!op.inDefaultDomain() || !keepsValues(op) || op.inputs.empty() || !op.inputs[0] ||
      op.outputs.empty() || !op.outputs[0])
    return std::nullopt;
  for (size_t i = 1; i < op.outputs.size(); ++i) // MaxPool's indices
    if (op.outputs[i] && !op.outputs[i]->uses.empty())
      return std::nullopt;
  const graph::Value *mid = op.outputs[0], *x = op.inputs[0];
  if (mid->isGraphOutput || mid->uses.size() != 1 || mid->uses[0].index != 0 || constant(*x))
    return std::nullopt;
  const graph::Node *dq = x->producer, *q = mid->uses[0].node;
  if (!dq || dq->opType != "DequantizeLinear" || !perTensor(*dq, constant) || !dq->input(0) ||
      !eightBit(dq->input(0)->type.elem) || q->opType != "QuantizeLinear" ||
      !perTensor(*q, constant) || q->outputs.empty() || !q->outputs[0])
    return std::nullopt;
  // One grid on both ends, increasing: the same positive scale (bit for
  // bit) and the same zero point of the same type (absent: 0 as uint8).
  const Tensor *s1 = scalar(dq->input(1), constant), *s2 = scalar(q->input(1), constant);
  float a = s1->data<float>()[0], b = s2->data<float>()[0];
  if (!(a > 0) || std::memcmp(&a, &b, sizeof a) != 0)
    return std::nullopt;
  auto zero = [&](const graph::Node &n) {
    const Tensor *z = scalar(n.input(2), constant);
    return std::make_pair(z ? z->elem() : graph::ElemType::UInt8, z ? z->intAt(0) : 0);
  };
  if (zero(*dq) != zero(*q) || zero(*dq).first != dq->input(0)->type.elem)
    return std::nullopt;
  LookupChain c = unaryChain(*dq, op, *q);
  c.onCodes = true;
  return c;
}

std::optional<LookupChain>
rt::softmaxChainOf(const graph::Node &op,
                   llvm::function_ref<const Tensor *(const graph::Value &)> constant) {
  if (!op.inDefaultDomain() || op.opType != "Softmax" || op.inputs.size() != 1 || !op.inputs[0] ||
      op.outputs.size() != 1 || !op.outputs[0])
    return std::nullopt;
  const graph::Value *mid = op.outputs[0], *x = op.inputs[0];
  if (mid->isGraphOutput || mid->uses.size() != 1 || constant(*x))
    return std::nullopt;
  const graph::Node *dq = x->producer, *q = mid->uses[0].node;
  // (ORT moves int8 codes to uint8 first where the types differ.)
  if (!dq || dq->opType != "DequantizeLinear" || !perTensor(*dq, constant) || !dq->input(0) ||
      q->opType != "QuantizeLinear" || !perTensor(*q, constant) || q->outputs.empty() ||
      !q->outputs[0] || !ortUnsignedCodes(*dq->input(0)) || !ortUnsignedCodes(*q->outputs[0]))
    return std::nullopt;
  LookupChain c = unaryChain(*dq, op, *q);
  c.softmax = true;
  return c;
}

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
    if (!dq || dq->opType != "DequantizeLinear" || !perTensor(*dq, constant) || !dq->input(0) ||
        !eightBit(dq->input(0)->type.elem))
      return std::nullopt;
    c.dq[i] = dq;
    c.input[i] = dq->input(0);
  }
  const graph::Node *q = mid->uses[0].node;
  if ((q->opType == "Relu" || q->opType == "Clip") && q->inDefaultDomain() &&
      q->outputs.size() == 1 && q->outputs[0] && !q->outputs[0]->isGraphOutput &&
      q->outputs[0]->uses.size() == 1 && q->outputs[0]->uses[0].index == 0) {
    const graph::Node *act = q;
    q = act->outputs[0]->uses[0].node;
    if (q->opType != "QuantizeLinear" || !perTensor(*q, constant) || !ortDropsBefore(*act, *q))
      return std::nullopt;
    c.dropped = act;
  }
  if (q->opType != "QuantizeLinear" || !perTensor(*q, constant) || q->outputs.empty() ||
      !q->outputs[0])
    return std::nullopt;
  c.op = &op;
  c.q = q;
  c.output = q->outputs[0];
  return c;
}

namespace {

/// The bytes [b, e) of `in` looked up in a 256-entry table, or pairs of `in`
/// and `in2` in a 65,536-entry one. Eight bytes at a time, read and written
/// as one word each: byte loads interleaved with byte stores to the output
/// stall on the CPU's store checks when the buffers' addresses agree modulo
/// 4 KiB.
void lookupWords(const uint8_t *__restrict in, const uint8_t *__restrict in2,
                 const uint8_t *__restrict t, uint8_t *__restrict o, int64_t b, int64_t e) {
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    uint64_t v, v2 = 0, r = 0;
    std::memcpy(&v, in + i, 8);
    if (in2)
      std::memcpy(&v2, in2 + i, 8);
    for (int j = 0; j < 64; j += 8)
      r |= uint64_t(t[size_t(v >> j & 255) | size_t(v2 >> j & 255) << 8]) << j;
    std::memcpy(o + i, &r, 8);
  }
  for (; i < e; ++i)
    o[i] = t[size_t(in[i]) | (in2 ? size_t(in2[i]) << 8 : 0)];
}

/// lookupWords of a 256-entry table, 32 bytes at a time with AVX2: the table
/// as sixteen rows of 16, each row's entries picked by the low nibble
/// (VPSHUFB) where the high nibble names the row. Exact, so the result does
/// not depend on which path ran.
__attribute__((target("avx2"))) void lookupAvx2(const uint8_t *in, const uint8_t *t, uint8_t *o,
                                                int64_t b, int64_t e) {
  __m256i rows[16];
  for (int k = 0; k < 16; ++k)
    rows[k] =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(t + 16 * k)));
  const __m256i bias = _mm256_set1_epi8(0x70);
  int64_t i = b;
  for (; i + 32 <= e; i += 32) {
    __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(in + i)),
            r = _mm256_setzero_si256();
    for (int k = 0; k < 16; ++k) {
      // Row k's bytes become 0x70..0x7f (VPSHUFB reads the low nibble), the
      // others 0x80 or more (VPSHUFB writes zero).
      __m256i idx = _mm256_adds_epu8(_mm256_xor_si256(x, _mm256_set1_epi8(char(k << 4))), bias);
      r = _mm256_or_si256(r, _mm256_shuffle_epi8(rows[k], idx));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(o + i), r);
  }
  lookupWords(in, nullptr, t, o, i, e);
}

/// lookupWords of a 256-entry table, 64 bytes at a time with AVX-512 VBMI:
/// two 128-entry permutes (VPERMI2B reads the low seven bits), picked by the
/// top bit.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void
lookupVbmi(const uint8_t *in, const uint8_t *t, uint8_t *o, int64_t b, int64_t e) {
  __m512i t0 = _mm512_loadu_si512(t), t1 = _mm512_loadu_si512(t + 64),
          t2 = _mm512_loadu_si512(t + 128), t3 = _mm512_loadu_si512(t + 192);
  int64_t i = b;
  for (; i + 64 <= e; i += 64) {
    __m512i x = _mm512_loadu_si512(in + i);
    __m512i lo = _mm512_permutex2var_epi8(t0, x, t1), hi = _mm512_permutex2var_epi8(t2, x, t3);
    _mm512_storeu_si512(o + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
  }
  lookupWords(in, nullptr, t, o, i, e);
}

/// lookupWords of a pair table, 32 pairs at a time with AVX2 gathers: each
/// lane reads the four bytes at its index (hence kPairTablePadding) and keeps
/// the first.
__attribute__((target("avx2"))) void lookupPairAvx2(const uint8_t *in, const uint8_t *in2,
                                                    const uint8_t *t, uint8_t *o, int64_t b,
                                                    int64_t e) {
  const int *base = reinterpret_cast<const int *>(t);
  const __m256i low = _mm256_set1_epi32(255), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int64_t i = b;
  for (; i + 32 <= e; i += 32) {
    __m256i q[4];
    for (int v = 0; v < 4; ++v) {
      __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(in + i + 8 * v)),
              c = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(in2 + i + 8 * v));
      __m256i idx =
          _mm256_or_si256(_mm256_cvtepu8_epi32(a), _mm256_slli_epi32(_mm256_cvtepu8_epi32(c), 8));
      q[v] = _mm256_and_si256(_mm256_i32gather_epi32(base, idx, 1), low);
    }
    __m256i lo = _mm256_packus_epi32(q[0], q[1]), hi = _mm256_packus_epi32(q[2], q[3]);
    __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(lo, hi), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(o + i), bytes);
  }
  lookupWords(in, in2, t, o, i, e);
}

} // namespace

void rt::applyTable(const Tensor &x, const Tensor *x2, const std::vector<uint8_t> &table,
                    graph::ElemType out, Tensor &y) {
  y = dnnl_util::isChannelsLast(x) ? dnnl_util::allocateChannelsLast(out, x.shape())
                                   : Tensor(out, x.shape());
  const uint8_t *src = static_cast<const uint8_t *>(x.raw()),
                *src2 = x2 ? static_cast<const uint8_t *>(x2->raw()) : nullptr;
  uint8_t *dst = static_cast<uint8_t *>(y.raw());
  const uint8_t *lut = table.data();
  SimdLevel level = simdLevel();
  bool avx2 = level >= SimdLevel::Avx2, vbmi = level >= SimdLevel::Avx512Vbmi;
  bool gather = avx2 && table.size() >= 65536 + kPairTablePadding;
  parallelFor(x.numel(), x2 ? 2 : 1,
              [src, src2, dst, lut, avx2, vbmi, gather](int64_t b, int64_t e) {
                if (!src2 && vbmi)
                  lookupVbmi(src, lut, dst, b, e);
                else if (!src2 && avx2)
                  lookupAvx2(src, lut, dst, b, e);
                else if (src2 && gather)
                  lookupPairAvx2(src, src2, lut, dst, b, e);
                else
                  lookupWords(src, src2, lut, dst, b, e);
              });
}
