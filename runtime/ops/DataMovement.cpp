//===- DataMovement.cpp - Concat, Split, Slice, Gather, Pad and friends -----===//
//
// Data-movement operators that copy parts of tensors: Concat, Split, Slice,
// Gather, GatherElements, Pad (constant, reflect, edge; negative pads crop),
// Expand, Tile and Range.
//
// Every kernel except Range works on any element type by moving element-sized
// chunks of bytes (strings are copied as strings). Slice, Expand and Tile are
// one strided gather (`rt::stridedCopy`, also used by Transpose): the output
// is walked row by row and each element read at `base + sum(idx * stride)` of
// the input, with strides 0 for broadcast axes and negative for negative
// steps. Everything taken from data (indices, pads, starts/ends, repeats,
// shapes) is checked before use, and output sizes are bounded.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/Simd.h"
#include "runtime/ops/Dnnl.h"

#include <algorithm>
#include <cmath>
#include <immintrin.h>
#include <limits>

using namespace tpcc;
using namespace tpcc::rt;

/// The largest tensor (in bytes) a kernel allocates from sizes found in data.
static constexpr int64_t kMaxOutputBytes = int64_t(1) << 34;

/// The element count of `s` when its dims are non-negative and the tensor
/// fits in kMaxOutputBytes.
bool rt::checkedNumel(const Shape &s, ElemType elem, int64_t &n) {
  n = 1;
  for (int64_t d : s)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return false;
  int64_t bytes;
  int64_t es = int64_t(std::max<size_t>(graph::elemSize(elem), 8));
  return !__builtin_mul_overflow(n, es, &bytes) && bytes <= kMaxOutputBytes;
}

namespace {

/// Copies `n` elements of S bytes from `src` (every `stride` elements) to `dst`.
template <size_t S> void copyRowT(uint8_t *dst, const uint8_t *src, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(dst + i * int64_t(S), src + i * stride * int64_t(S), S);
}

/// Writes the 8 x 8 block of 4-byte elements at `src` (rows `srcStride`
/// elements apart) transposed to `dst` (rows `dstStride` apart).
__attribute__((target("avx2"))) void transpose8x8(const uint8_t *src, int64_t srcStride,
                                                  uint8_t *dst, int64_t dstStride) {
  auto *s = reinterpret_cast<const float *>(src);
  auto *d = reinterpret_cast<float *>(dst);
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i)
    r[i] = _mm256_loadu_ps(s + i * srcStride);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4)
    for (int j = 0; j < 2; ++j) {
      r[i + j] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], _MM_SHUFFLE(1, 0, 1, 0));
      r[i + j + 2] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], _MM_SHUFFLE(3, 2, 3, 2));
    }
  // r[0], r[2], r[1], r[3] now hold columns 0, 1, 2, 3 of rows 0-3 (their
  // high halves columns 4-7), r[4..7] the same of rows 4-7.
  static constexpr int order[4] = {0, 2, 1, 3};
  for (int c = 0; c < 4; ++c) {
    __m256 lo = r[order[c]], hi = r[4 + order[c]];
    _mm256_storeu_ps(d + c * dstStride, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(d + (c + 4) * dstStride, _mm256_permute2f128_ps(lo, hi, 0x31));
  }
}

/// stridedCopy's transposes: axis k (input stride 1) and the last axis
/// (input stride st.back()) copied in tiles of 8 x 8, which read along the
/// input's rows and write along the output's, where a strided gather per
/// output row would touch a new cache line for every element.
template <size_t S>
void tiledCopy(const uint8_t *src, uint8_t *dst, int64_t base, const Shape &dims,
               const std::vector<int64_t> &st, size_t k) {
  constexpr int64_t kTile = 8;
  size_t r = dims.size();
  int64_t rowsA = dims[k], cols = dims[r - 1], colStride = st[r - 1];
  std::vector<int64_t> ost(r, 1); // the output's strides
  for (size_t j = r - 1; j-- > 0;)
    ost[j] = ost[j + 1] * dims[j + 1];
  std::vector<size_t> outerAxes;
  int64_t outer = 1;
  for (size_t j = 0; j + 1 < r; ++j)
    if (j != k) {
      outerAxes.push_back(j);
      outer *= dims[j];
    }
  int64_t rowOut = ost[k];
  bool avx = simdLevel() >= SimdLevel::Avx2;
  parallelFor(outer, rowsA * cols * int64_t(S) + 64, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      int64_t from = base, to = 0, rem = o;
      for (size_t q = outerAxes.size(); q-- > 0;) {
        size_t j = outerAxes[q];
        int64_t i = rem % dims[j];
        rem /= dims[j];
        from += i * st[j];
        to += i * ost[j];
      }
      for (int64_t a0 = 0; a0 < rowsA; a0 += kTile)
        for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
          int64_t a1 = std::min(rowsA, a0 + kTile), c1 = std::min(cols, c0 + kTile);
          if (S == 4 && avx && a1 - a0 == kTile && c1 - c0 == kTile) {
            transpose8x8(src + size_t(from + a0 + c0 * colStride) * S, colStride,
                         dst + size_t(to + a0 * rowOut + c0) * S, rowOut);
            continue;
          }
          for (int64_t a = a0; a < a1; ++a)
            for (int64_t c = c0; c < c1; ++c)
              std::memcpy(dst + size_t(to + a * rowOut + c) * S,
                          src + size_t(from + a + c * colStride) * S, S);
        }
    }
  });
}

void copyRow(uint8_t *dst, const uint8_t *src, int64_t n, int64_t stride, size_t es) {
  if (stride == 1) {
    std::memcpy(dst, src, size_t(n) * es);
    return;
  }
  switch (es) {
  case 1:
    return copyRowT<1>(dst, src, n, stride);
  case 2:
    return copyRowT<2>(dst, src, n, stride);
  case 4:
    return copyRowT<4>(dst, src, n, stride);
  case 8:
    return copyRowT<8>(dst, src, n, stride);
  case 16:
    return copyRowT<16>(dst, src, n, stride);
  default:
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dst + i * int64_t(es), src + i * stride * int64_t(es), es);
  }
}

/// Stores `v` converted to `t` at `dst`.
void storeValue(ElemType t, double v, uint8_t *dst) {
  auto put = [&](auto x) { std::memcpy(dst, &x, sizeof(x)); };
  switch (t) {
  case ElemType::Float:
    return put(float(v));
  case ElemType::Double:
    return put(v);
  case ElemType::Float16:
    return put(floatToHalf(float(v)));
  case ElemType::BFloat16:
    return put(floatToBfloat16(float(v)));
  case ElemType::Bool:
    return put(uint8_t(v != 0));
  case ElemType::Int8:
    return put(int8_t(std::clamp(v, -128.0, 127.0)));
  case ElemType::UInt8:
    return put(uint8_t(std::clamp(v, 0.0, 255.0)));
  case ElemType::Int16:
    return put(int16_t(std::clamp(v, -32768.0, 32767.0)));
  case ElemType::UInt16:
    return put(uint16_t(std::clamp(v, 0.0, 65535.0)));
  case ElemType::Int32:
    return put(int32_t(std::clamp(v, -2147483648.0, 2147483647.0)));
  case ElemType::UInt32:
    return put(uint32_t(std::clamp(v, 0.0, 4294967295.0)));
  case ElemType::Int64:
    return put(int64_t(std::clamp(v, -9.2233720368547748e18, 9.2233720368547748e18 - 2048)));
  case ElemType::UInt64:
    return put(uint64_t(std::clamp(v, 0.0, 1.8446744073709552e19 - 4096)));
  default:
    return;
  }
}

/// The integers of a 1-D (or scalar) int32/int64 tensor.
bool intList(KernelContext &ctx, const Tensor *t, const char *what, std::vector<int64_t> &out) {
  if (t->elem() != ElemType::Int64 && t->elem() != ElemType::Int32)
    return ctx.fail(std::string(what) + " must be int32 or int64, not " + typeName(t->elem()));
  if (t->rank() > 1)
    return ctx.fail(std::string(what) + " must be 1-D, not " + shapeStr(t->shape()));
  out.resize(size_t(t->numel()));
  for (int64_t i = 0; i < t->numel(); ++i)
    out[size_t(i)] = t->intAt(i);
  return true;
}

bool allocate(KernelContext &ctx, size_t i, ElemType elem, const Shape &shape) {
  int64_t n;
  if (!checkedNumel(shape, elem, n))
    return ctx.fail("output shape " + shapeStr(shape) + " is invalid or too large");
  ctx.outputs[i] = Tensor(elem, shape);
  return true;
}

} // namespace

bool rt::stridedCopy(const Tensor &in, Tensor &out, int64_t base, std::vector<int64_t> strides) {
  if (out.numel() == 0)
    return true;
  // Drop unit axes and merge axes that are contiguous in the input.
  Shape dims;
  std::vector<int64_t> st;
  for (size_t k = 0; k < out.shape().size(); ++k) {
    int64_t d = out.shape()[k];
    if (d == 1)
      continue;
    if (!dims.empty() && st.back() == strides[k] * d) {
      dims.back() *= d;
      st.back() = strides[k];
    } else {
      dims.push_back(d);
      st.push_back(strides[k]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    st.push_back(1);
  }
  size_t r = dims.size();
  int64_t inner = dims[r - 1], innerStride = st[r - 1], rows = out.numel() / inner;
  bool strings = in.elem() == ElemType::String;
  size_t es = graph::elemSize(in.elem());
  const uint8_t *src = static_cast<const uint8_t *>(in.raw());
  uint8_t *dst = static_cast<uint8_t *>(out.raw());
  if (!strings && innerStride != 1) {
    // An axis the input holds contiguously, other than the last: a transpose.
    for (size_t k = 0; k + 1 < r; ++k)
      if (st[k] == 1) {
        switch (es) {
        case 1:
          return tiledCopy<1>(src, dst, base, dims, st, k), true;
        case 2:
          return tiledCopy<2>(src, dst, base, dims, st, k), true;
        case 4:
          return tiledCopy<4>(src, dst, base, dims, st, k), true;
        case 8:
          return tiledCopy<8>(src, dst, base, dims, st, k), true;
        default:
          break;
        }
      }
  }
  auto work = [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(r, 0);
    int64_t off = base, rem = b;
    for (size_t k = r - 1; k-- > 0;) {
      idx[k] = rem % dims[k];
      rem /= dims[k];
      off += idx[k] * st[k];
    }
    for (int64_t row = b; row < e; ++row) {
      if (strings) {
        for (int64_t i = 0; i < inner; ++i)
          out.strings()[size_t(row * inner + i)] = in.strings()[size_t(off + i * innerStride)];
      } else {
        copyRow(dst + size_t(row * inner) * es, src + size_t(off) * es, inner, innerStride, es);
      }
      for (size_t k = r - 1; k-- > 0;) {
        off += st[k];
        if (++idx[k] < dims[k])
          break;
        off -= st[k] * dims[k];
        idx[k] = 0;
      }
    }
  };
  if (strings)
    work(0, rows);
  else
    parallelFor(rows, inner * int64_t(es) + 16, work);
  return true;
}

std::vector<int64_t> rt::contiguousStrides(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t k = s.size(); k-- > 1;)
    st[k - 1] = st[k] * s[k];
  return st;
}

//===----------------------------------------------------------------------===//
// Concat, Split
//===----------------------------------------------------------------------===//

/// Joins 4-D float tensors along the channels into a channels-last (NHWC)
/// output `y` of `out`: each pixel's channels from each input in turn. The
/// inputs arrive channels-last (a convolution's output) or are made so
/// (one oneDNN reorder, what the next convolution would do to the output).
static void concatChannelsLast(const std::vector<const Tensor *> &ins, const Shape &out,
                               Tensor &y) {
  y = dnnl_util::allocate(out, dnnl_util::channelsLastDesc(out));
  int64_t pixels = out[0] * out[2] * out[3], total = out[1];
  std::vector<Tensor> made;
  std::vector<const float *> src;
  for (const Tensor *t : ins) {
    Shape s = t->shape();
    dnnl::memory::desc want = dnnl_util::channelsLastDesc(s);
    if (dnnl_util::descOf(*t) == want) {
      src.push_back(t->data<float>());
      continue;
    }
    made.push_back(dnnl_util::allocate(s, want));
    dnnl::memory from = dnnl_util::wrap(dnnl_util::descOf(*t), t->raw()),
                 to = dnnl_util::wrap(want, made.back().raw());
    dnnl::reorder(from, to).execute(dnnl_util::stream(), from, to);
    dnnl_util::stream().wait();
    src.push_back(made.back().data<float>());
  }
  float *dst = y.data<float>();
  parallelFor(pixels, total + 16, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      float *d = dst + p * total;
      for (size_t i = 0; i < ins.size(); ++i) {
        int64_t c = ins[i]->dim(1);
        std::memcpy(d, src[i] + p * c, size_t(c) * sizeof(float));
        d += c;
      }
    }
  });
}

static bool concatKernel(KernelContext &ctx) {
  std::vector<const Tensor *> ins;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    if (const Tensor *t = ctx.input(i))
      ins.push_back(t);
  if (ins.empty())
    return ctx.fail("Concat needs at least one input");
  // Inputs in oneDNN's layouts (the executor passes a convolution's output
  // as it is): joined channels-last when the output may stay so, else made
  // plain first.
  std::vector<Tensor> plain;
  bool anyBlocked = false;
  for (const Tensor *t : ins)
    anyBlocked |= t->blocked() != nullptr;
  bool channelsLast = anyBlocked && ctx.blockedOutput && ins.size() > 1 &&
                      ins[0]->elem() == ElemType::Float && ins[0]->rank() == 4 &&
                      normalizeAxis(ctx.attrInt("axis", 0), 4) == std::optional<int64_t>(1);
  if (anyBlocked && !channelsLast) {
    plain.reserve(ins.size());
    for (const Tensor *&t : ins)
      if (t->blocked()) {
        plain.push_back(dnnl_util::toPlain(*t));
        t = &plain.back();
      }
  }
  const Tensor &first = *ins[0];
  auto axis = normalizeAxis(ctx.attrInt("axis", 0), first.rank());
  if (!axis)
    return ctx.fail("axis " + std::to_string(ctx.attrInt("axis", 0)) +
                    " is out of range for rank " + std::to_string(first.rank()));
  Shape out = first.shape();
  out[size_t(*axis)] = 0;
  for (const Tensor *t : ins) {
    if (t->elem() != first.elem())
      return ctx.fail("inputs have different element types");
    if (t->rank() != first.rank())
      return ctx.fail("inputs have different ranks: " + shapeStr(first.shape()) + " and " +
                      shapeStr(t->shape()));
    for (int64_t k = 0; k < t->rank(); ++k)
      if (k != *axis && t->dim(k) != first.dim(k))
        return ctx.fail("input shapes " + shapeStr(first.shape()) + " and " + shapeStr(t->shape()) +
                        " differ outside axis " + std::to_string(*axis));
    out[size_t(*axis)] += t->dim(*axis);
  }
  if (ins.size() == 1) {
    ctx.outputs[0] = first;
    return true;
  }
  if (channelsLast) {
    int64_t n;
    if (!checkedNumel(out, first.elem(), n))
      return ctx.fail("output shape " + shapeStr(out) + " is invalid or too large");
    concatChannelsLast(ins, out, ctx.outputs[0]);
    return true;
  }
  if (!allocate(ctx, 0, first.elem(), out))
    return false;
  Tensor &y = ctx.outputs[0];
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < *axis; ++k)
    outer *= out[size_t(k)];
  for (int64_t k = *axis + 1; k < first.rank(); ++k)
    inner *= out[size_t(k)];
  int64_t outRow = out[size_t(*axis)] * inner;
  if (first.elem() == ElemType::String) {
    for (int64_t o = 0; o < outer; ++o) {
      int64_t pos = o * outRow;
      for (const Tensor *t : ins) {
        int64_t n = t->dim(*axis) * inner;
        for (int64_t i = 0; i < n; ++i)
          y.strings()[size_t(pos + i)] = t->strings()[size_t(o * n + i)];
        pos += n;
      }
    }
    return true;
  }
  size_t es = graph::elemSize(first.elem());
  uint8_t *dst = static_cast<uint8_t *>(y.raw());
  parallelFor(outer, outRow * int64_t(es), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      uint8_t *d = dst + size_t(o * outRow) * es;
      for (const Tensor *t : ins) {
        size_t n = size_t(t->dim(*axis) * inner) * es;
        if (n)
          std::memcpy(d, static_cast<const uint8_t *>(t->raw()) + size_t(o) * n, n);
        d += n;
      }
    }
  });
  return true;
}

static bool splitKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("Split needs an input");
  auto axis = normalizeAxis(ctx.attrInt("axis", 0), x->rank());
  if (!axis)
    return ctx.fail("axis " + std::to_string(ctx.attrInt("axis", 0)) +
                    " is out of range for rank " + std::to_string(x->rank()));
  size_t n = ctx.node.outputs.size();
  if (n == 0)
    return ctx.fail("Split has no outputs");
  int64_t dim = x->dim(*axis);
  std::vector<int64_t> split;
  if (ctx.opset >= 13) {
    if (const Tensor *s = ctx.input(1))
      if (!intList(ctx, s, "split", split))
        return false;
  } else {
    split = ctx.attrInts("split");
  }
  if (split.empty()) {
    int64_t parts = int64_t(n);
    if (dim % parts == 0 || ctx.opset < 18) {
      if (dim % parts)
        return ctx.fail("axis " + std::to_string(*axis) + " of " + shapeStr(x->shape()) +
                        " does not split into " + std::to_string(parts) + " equal parts");
      split.assign(n, dim / parts);
    } else {
      int64_t chunk = (dim + parts - 1) / parts;
      for (int64_t i = 0; i < parts; ++i)
        split.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
    }
  }
  if (split.size() != n)
    return ctx.fail("split has " + std::to_string(split.size()) + " entries for " +
                    std::to_string(n) + " outputs");
  int64_t total = 0;
  for (int64_t s : split) {
    if (s < 0 || s > dim)
      return ctx.fail("split sizes must be in [0, " + std::to_string(dim) + "]");
    total += s;
  }
  if (total != dim)
    return ctx.fail("split sizes add up to " + std::to_string(total) + ", not " +
                    std::to_string(dim));
  std::vector<int64_t> strides = contiguousStrides(x->shape());
  int64_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    Shape s = x->shape();
    s[size_t(*axis)] = split[i];
    if (ctx.wantsOutput(i)) {
      ctx.outputs[i] = Tensor(x->elem(), s);
      stridedCopy(*x, ctx.outputs[i], start * strides[size_t(*axis)], strides);
    }
    start += split[i];
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

static bool sliceKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("Slice needs an input");
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.attrInts("starts");
    ends = ctx.attrInts("ends");
    axes = ctx.attrInts("axes");
  } else {
    const Tensor *s = ctx.input(1), *e = ctx.input(2);
    if (!s || !e)
      return ctx.fail("Slice needs starts and ends");
    if (!intList(ctx, s, "starts", starts) || !intList(ctx, e, "ends", ends))
      return false;
    if (const Tensor *a = ctx.input(3))
      if (!intList(ctx, a, "axes", axes))
        return false;
    if (const Tensor *st = ctx.input(4))
      if (!intList(ctx, st, "steps", steps))
        return false;
  }
  int64_t r = x->rank();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return ctx.fail("starts, ends, axes and steps must have the same length");
  Shape out = x->shape();
  std::vector<int64_t> inStrides = contiguousStrides(x->shape());
  std::vector<int64_t> strides = inStrides;
  std::vector<bool> seen(size_t(r), false);
  int64_t base = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    auto ax = normalizeAxis(axes[i], r);
    if (!ax)
      return ctx.fail("axis " + std::to_string(axes[i]) + " is out of range for rank " +
                      std::to_string(r));
    if (seen[size_t(*ax)])
      return ctx.fail("axis " + std::to_string(*ax) + " is sliced twice");
    seen[size_t(*ax)] = true;
    int64_t dim = x->dim(*ax), step = steps[i], start = starts[i], end = ends[i];
    if (step == 0)
      return ctx.fail("steps must not be 0");
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      // -step may overflow for INT64_MIN; such a step takes one element.
      count =
          start > end
              ? (step == std::numeric_limits<int64_t>::min() ? 1 : (start - end - 1) / -step + 1)
              : 0;
    }
    out[size_t(*ax)] = count;
    if (count > 0)
      base += start * inStrides[size_t(*ax)];
    strides[size_t(*ax)] = count > 1 ? step * inStrides[size_t(*ax)] : 0;
  }
  ctx.outputs[0] = Tensor(x->elem(), out);
  return stridedCopy(*x, ctx.outputs[0], base, strides);
}

//===----------------------------------------------------------------------===//
// Gather, GatherElements
//===----------------------------------------------------------------------===//

/// The indices of `t` (int32/int64) checked against [-dim, dim) and made
/// non-negative.
static bool readIndices(KernelContext &ctx, const Tensor *t, int64_t dim,
                        std::vector<int64_t> &idx) {
  if (t->elem() != ElemType::Int64 && t->elem() != ElemType::Int32)
    return ctx.fail("indices must be int32 or int64, not " + typeName(t->elem()));
  idx.resize(size_t(t->numel()));
  for (int64_t i = 0; i < t->numel(); ++i) {
    int64_t v = t->intAt(i);
    if (v < -dim || v >= dim)
      return ctx.fail("index " + std::to_string(v) + " is out of range for a dimension of " +
                      std::to_string(dim));
    idx[size_t(i)] = v < 0 ? v + dim : v;
  }
  return true;
}

static bool gatherKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *ind = ctx.input(1);
  if (!x || !ind)
    return ctx.fail("Gather needs data and indices");
  auto axis = normalizeAxis(ctx.attrInt("axis", 0), x->rank());
  if (!axis)
    return ctx.fail("axis " + std::to_string(ctx.attrInt("axis", 0)) +
                    " is out of range for rank " + std::to_string(x->rank()));
  int64_t dim = x->dim(*axis);
  std::vector<int64_t> idx;
  if (!readIndices(ctx, ind, dim, idx))
    return false;
  Shape out(x->shape().begin(), x->shape().begin() + *axis);
  out.insert(out.end(), ind->shape().begin(), ind->shape().end());
  out.insert(out.end(), x->shape().begin() + *axis + 1, x->shape().end());
  if (!allocate(ctx, 0, x->elem(), out))
    return false;
  Tensor &y = ctx.outputs[0];
  int64_t outer = 1, inner = 1, n = int64_t(idx.size());
  for (int64_t k = 0; k < *axis; ++k)
    outer *= x->dim(k);
  for (int64_t k = *axis + 1; k < x->rank(); ++k)
    inner *= x->dim(k);
  if (x->elem() == ElemType::String) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i)
          y.strings()[size_t((o * n + j) * inner + i)] =
              x->strings()[size_t((o * dim + idx[size_t(j)]) * inner + i)];
    return true;
  }
  size_t row = size_t(inner) * graph::elemSize(x->elem());
  const uint8_t *src = static_cast<const uint8_t *>(x->raw());
  uint8_t *dst = static_cast<uint8_t *>(y.raw());
  parallelFor(outer * n, int64_t(row) + 16, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t o = k / std::max<int64_t>(n, 1), j = k - o * n;
      std::memcpy(dst + size_t(k) * row, src + size_t(o * dim + idx[size_t(j)]) * row, row);
    }
  });
  return true;
}

static bool gatherElementsKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *ind = ctx.input(1);
  if (!x || !ind)
    return ctx.fail("GatherElements needs data and indices");
  auto axis = normalizeAxis(ctx.attrInt("axis", 0), x->rank());
  if (!axis)
    return ctx.fail("axis " + std::to_string(ctx.attrInt("axis", 0)) +
                    " is out of range for rank " + std::to_string(x->rank()));
  if (ind->rank() != x->rank())
    return ctx.fail("indices " + shapeStr(ind->shape()) + " and data " + shapeStr(x->shape()) +
                    " must have the same rank");
  for (int64_t k = 0; k < x->rank(); ++k)
    if (k != *axis && ind->dim(k) > x->dim(k))
      return ctx.fail("indices " + shapeStr(ind->shape()) + " exceed data " + shapeStr(x->shape()) +
                      " outside the axis");
  std::vector<int64_t> idx;
  if (!readIndices(ctx, ind, x->dim(*axis), idx))
    return false;
  ctx.outputs[0] = Tensor(x->elem(), ind->shape());
  Tensor &y = ctx.outputs[0];
  std::vector<int64_t> st = contiguousStrides(x->shape());
  size_t r = size_t(x->rank()), es = graph::elemSize(x->elem());
  std::vector<int64_t> pos(r, 0);
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < r; ++k)
      off += (k == size_t(*axis) ? idx[size_t(i)] : pos[k]) * st[k];
    if (x->elem() == ElemType::String)
      y.strings()[size_t(i)] = x->strings()[size_t(off)];
    else
      std::memcpy(static_cast<uint8_t *>(y.raw()) + size_t(i) * es,
                  static_cast<const uint8_t *>(x->raw()) + size_t(off) * es, es);
    for (size_t k = r; k-- > 0;) {
      if (++pos[k] < ind->dim(int64_t(k)))
        break;
      pos[k] = 0;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

static bool padKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("Pad needs an input");
  if (x->elem() == ElemType::String)
    return ctx.fail("Pad does not support string tensors");
  std::string mode = ctx.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return ctx.fail("unknown Pad mode `" + mode + "`");
  int64_t r = x->rank();
  size_t es = graph::elemSize(x->elem());
  std::vector<int64_t> pads;
  std::vector<uint8_t> fill(es, 0);
  if (ctx.opset < 11) {
    pads = ctx.attrInts(ctx.opset < 2 ? "paddings" : "pads");
    storeValue(x->elem(), ctx.attrFloat("value", 0), fill.data());
  } else {
    const Tensor *p = ctx.input(1);
    if (!p)
      return ctx.fail("Pad needs pads");
    if (!intList(ctx, p, "pads", pads))
      return false;
    if (const Tensor *v = ctx.input(2)) {
      if (v->elem() != x->elem())
        return ctx.fail("constant_value must have the element type of the input");
      if (v->numel() < 1)
        return ctx.fail("constant_value is empty");
      std::memcpy(fill.data(), v->raw(), es);
    }
  }
  if (int64_t(pads.size()) != 2 * r)
    return ctx.fail("pads has " + std::to_string(pads.size()) + " entries for an input of rank " +
                    std::to_string(r));
  Shape out(static_cast<size_t>(r));
  const int64_t kMaxPad = int64_t(1) << 40;
  for (int64_t k = 0; k < r; ++k) {
    int64_t b = pads[size_t(k)], e = pads[size_t(k + r)], d = x->dim(k);
    if (b > kMaxPad || e > kMaxPad || b < -d || e < -d || b + e + d < 0)
      return ctx.fail("pads " + shapeStr(pads) + " are invalid for input " + shapeStr(x->shape()));
    out[size_t(k)] = d + b + e;
    int64_t cropped = d + std::min<int64_t>(0, b) + std::min<int64_t>(0, e);
    if (cropped <= 0 && out[size_t(k)] > 0 && mode != "constant")
      return ctx.fail("Pad mode " + mode + " needs a non-empty input along axis " +
                      std::to_string(k));
  }
  if (!allocate(ctx, 0, x->elem(), out))
    return false;
  Tensor &y = ctx.outputs[0];
  if (y.numel() == 0)
    return true;
  // Per axis: the input coordinate of each output coordinate, -1 for the fill.
  // Negative pads crop first; the rest pads the cropped input.
  std::vector<std::vector<int64_t>> src(static_cast<size_t>(r));
  for (int64_t k = 0; k < r; ++k) {
    int64_t b = pads[size_t(k)], e = pads[size_t(k + r)], d = x->dim(k);
    int64_t lo = std::max<int64_t>(0, -b), n = d - lo - std::max<int64_t>(0, -e);
    int64_t pb = std::max<int64_t>(0, b);
    std::vector<int64_t> &m = src[size_t(k)];
    m.resize(size_t(out[size_t(k)]));
    for (int64_t o = 0; o < out[size_t(k)]; ++o) {
      int64_t i = o - pb;
      if (i < 0 || i >= n) {
        if (mode == "constant") {
          i = -1;
        } else if (mode == "edge") {
          i = std::clamp<int64_t>(i, 0, n - 1);
        } else if (n == 1) {
          i = 0;
        } else {
          int64_t period = 2 * (n - 1);
          i %= period;
          if (i < 0)
            i += period;
          if (i >= n)
            i = period - i;
        }
      }
      m[size_t(o)] = i < 0 ? -1 : i + lo;
    }
  }
  if (r == 0) {
    std::memcpy(y.raw(), x->raw(), es);
    return true;
  }
  std::vector<int64_t> st = contiguousStrides(x->shape());
  int64_t inner = out[size_t(r - 1)], rows = y.numel() / inner;
  const std::vector<int64_t> &last = src[size_t(r - 1)];
  // The interior of the last axis maps to consecutive input elements.
  int64_t lastB = pads[size_t(r - 1)], lastE = pads[size_t(2 * r - 1)];
  int64_t runB = std::max<int64_t>(0, lastB);
  int64_t runE = runB + x->dim(r - 1) + std::min<int64_t>(0, lastB) + std::min<int64_t>(0, lastE);
  const uint8_t *xs = static_cast<const uint8_t *>(x->raw());
  uint8_t *dst = static_cast<uint8_t *>(y.raw());
  parallelFor(rows, inner * int64_t(es) + 16, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      uint8_t *d = dst + size_t(row * inner) * es;
      int64_t off = 0, rem = row;
      bool filled = false;
      for (int64_t k = r - 1; k-- > 0;) {
        int64_t o = rem % out[size_t(k)];
        rem /= out[size_t(k)];
        int64_t i = src[size_t(k)][size_t(o)];
        if (i < 0) {
          filled = true;
          break;
        }
        off += i * st[size_t(k)];
      }
      for (int64_t o = 0; o < inner; ++o) {
        if (!filled && o == runB && runE > runB) {
          std::memcpy(d + size_t(o) * es, xs + size_t(off + last[size_t(o)]) * es,
                      size_t(runE - runB) * es);
          o = runE - 1;
          continue;
        }
        int64_t i = filled ? -1 : last[size_t(o)];
        std::memcpy(d + size_t(o) * es, i < 0 ? fill.data() : xs + size_t(off + i) * es, es);
      }
    }
  });
  return true;
}

//===----------------------------------------------------------------------===//
// Expand, Tile, Range
//===----------------------------------------------------------------------===//

static bool expandKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *s = ctx.input(1);
  if (!x || !s)
    return ctx.fail("Expand needs an input and a shape");
  std::vector<int64_t> shape;
  if (!intList(ctx, s, "shape", shape))
    return false;
  for (int64_t d : shape)
    if (d < 0)
      return ctx.fail("shape " + shapeStr(shape) + " has a negative dimension");
  auto out = broadcastShapes(x->shape(), shape);
  if (!out)
    return ctx.fail("input " + shapeStr(x->shape()) + " does not broadcast to " + shapeStr(shape));
  if (*out == x->shape()) {
    ctx.outputs[0] = *x;
    return true;
  }
  if (!allocate(ctx, 0, x->elem(), *out))
    return false;
  std::vector<int64_t> inSt = contiguousStrides(x->shape()), st(out->size(), 0);
  size_t off = out->size() - x->shape().size();
  for (size_t k = 0; k < x->shape().size(); ++k)
    st[k + off] = x->shape()[k] == 1 ? 0 : inSt[k];
  return stridedCopy(*x, ctx.outputs[0], 0, st);
}

static bool tileKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *rp = ctx.input(1);
  if (!x || !rp)
    return ctx.fail("Tile needs an input and repeats");
  std::vector<int64_t> repeats;
  if (!intList(ctx, rp, "repeats", repeats))
    return false;
  if (int64_t(repeats.size()) != x->rank())
    return ctx.fail("repeats has " + std::to_string(repeats.size()) +
                    " entries for an input of rank " + std::to_string(x->rank()));
  // Tile is Expand to [r0, d0, r1, d1, ...] seen as [r0 * d0, r1 * d1, ...].
  Shape wide, out;
  std::vector<int64_t> inSt = contiguousStrides(x->shape()), st;
  for (int64_t k = 0; k < x->rank(); ++k) {
    if (repeats[size_t(k)] < 0)
      return ctx.fail("repeats must not be negative");
    wide.push_back(repeats[size_t(k)]);
    wide.push_back(x->dim(k));
    st.push_back(0);
    st.push_back(inSt[size_t(k)]);
  }
  int64_t n;
  if (!checkedNumel(wide, x->elem(), n))
    return ctx.fail("the output of Tile is too large");
  for (int64_t k = 0; k < x->rank(); ++k)
    out.push_back(repeats[size_t(k)] * x->dim(k));
  Tensor y(x->elem(), wide);
  stridedCopy(*x, y, 0, st);
  ctx.outputs[0] = y.reshaped(out);
  return true;
}

template <typename T>
static bool rangeT(KernelContext &ctx, const Tensor &s, const Tensor &l, const Tensor &d) {
  T start, limit, delta;
  std::memcpy(&start, s.raw(), sizeof(T));
  std::memcpy(&limit, l.raw(), sizeof(T));
  std::memcpy(&delta, d.raw(), sizeof(T));
  if (delta == T(0))
    return ctx.fail("Range's delta must not be 0");
  long double count = std::ceil((static_cast<long double>(limit) - start) / delta);
  if (!(count < (long double)(kMaxOutputBytes / 8)))
    return ctx.fail("Range produces too many elements");
  int64_t n = count > 0 ? int64_t(count) : 0;
  ctx.outputs[0] = Tensor(s.elem(), {n});
  T *y = ctx.outputs[0].data<T>();
  for (int64_t i = 0; i < n; ++i)
    y[i] = T(start + static_cast<long double>(i) * delta);
  return true;
}

static bool rangeKernel(KernelContext &ctx) {
  const Tensor *s = ctx.input(0), *l = ctx.input(1), *d = ctx.input(2);
  if (!s || !l || !d)
    return ctx.fail("Range needs start, limit and delta");
  if (s->elem() != l->elem() || s->elem() != d->elem())
    return ctx.fail("start, limit and delta must have the same type");
  if (s->numel() != 1 || l->numel() != 1 || d->numel() != 1)
    return ctx.fail("start, limit and delta must be scalars");
  switch (s->elem()) {
  case ElemType::Float:
    return rangeT<float>(ctx, *s, *l, *d);
  case ElemType::Double:
    return rangeT<double>(ctx, *s, *l, *d);
  case ElemType::Int16:
    return rangeT<int16_t>(ctx, *s, *l, *d);
  case ElemType::Int32:
    return rangeT<int32_t>(ctx, *s, *l, *d);
  case ElemType::Int64:
    return rangeT<int64_t>(ctx, *s, *l, *d);
  default:
    return ctx.fail("Range does not support " + typeName(s->elem()));
  }
}

void rt::registerDataMovementKernels(KernelRegistry &r) {
  r.add("Concat", concatKernel);
  r.add("Split", splitKernel);
  r.add("Slice", sliceKernel);
  r.add("Gather", gatherKernel);
  r.add("GatherElements", gatherElementsKernel);
  r.add("Pad", padKernel);
  r.add("Expand", expandKernel);
  r.add("Tile", tileKernel);
  r.add("Range", rangeKernel);
}
