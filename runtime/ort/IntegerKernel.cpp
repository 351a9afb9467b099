//===- IntegerKernel.cpp - QDQ groups on oneDNN's int8 primitives ---------===//
#include "runtime/ort/IntegerKernel.h"
#include "runtime/KernelUtil.h"
#include "runtime/Simd.h"
#include "runtime/ops/ConvGeometry.h"
#include "runtime/ops/Dnnl.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

/// 255 * kPartBound <= 2^24: a part's sum is exactly a float.
constexpr int64_t kPartBound = 65793;
/// 255 * kPairBound < 2^15: two products never leave int16.
constexpr int64_t kPairBound = 128;
/// Pixels (and channels) moved at a time between NCHW and NHWC.
constexpr int64_t kBlock = 16;
/// The int32 sums of one run of a convolution primitive (a chunk of the
/// batch) stay within this: they stay in the cores' L2 caches between the
/// primitive writing them and our loop requantizing them, and a chunk is
/// still large enough that both parallel loops start few times.
constexpr int64_t kChunkBytes = 512 << 10;

/// A 64-byte aligned buffer, allocated once.
class Buffer {
public:
  void allocate(size_t bytes) {
    p.reset(static_cast<uint8_t *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64)));
    size = bytes;
  }
  uint8_t *data() const { return p.get(); }
  size_t bytes() const { return size; }

private:
  struct Free {
    void operator()(uint8_t *q) const { std::free(q); }
  };
  std::unique_ptr<uint8_t, Free> p;
  size_t size = 0;
};

std::string isaName(dnnl::cpu_isa isa) {
  switch (isa) {
  case dnnl::cpu_isa::sse41:
    return "sse41";
  case dnnl::cpu_isa::avx:
    return "avx";
  case dnnl::cpu_isa::avx2:
    return "avx2";
  case dnnl::cpu_isa::avx2_vnni:
    return "avx2_vnni";
  case dnnl::cpu_isa::avx512_core:
    return "avx512_core";
  case dnnl::cpu_isa::avx512_core_vnni:
    return "avx512_core_vnni";
  case dnnl::cpu_isa::avx512_core_bf16:
    return "avx512_core_bf16";
  case dnnl::cpu_isa::avx512_core_amx:
    return "avx512_core_amx";
  default:
    return "isa " + std::to_string(int(isa));
  }
}

/// Whether the CPU (as oneDNN may use it) multiplies u8 x s8 with VNNI.
bool isaHasVnni() {
  int isa = int(dnnl::get_effective_cpu_isa());
  return (isa & int(dnnl::cpu_isa::avx512_core_vnni) & ~int(dnnl::cpu_isa::avx512_core)) ||
         (isa & int(dnnl::cpu_isa::avx2_vnni) & ~int(dnnl::cpu_isa::avx2));
}

/// Whether oneDNN's implementation `impl` adds every u8 x s8 product exactly
/// (oneDNN 2.6): VNNI and AMX kernels, the reference, and, for convolutions
/// with one input channel per group (`oneChannel`: depthwise, or a first
/// layer on one channel), its int8 JIT convolutions: their depthwise path
/// widens the source to int32 (VPMADDWD), the others pair only adjacent
/// input channels (4 to a dword, zero-padded), so no pair holds two weights.
bool addsExactly(const std::string &impl, bool oneChannel) {
  auto starts = [&](const char *p) { return impl.rfind(p, 0) == 0; };
  return impl.find("vnni") != std::string::npos || impl.find("amx") != std::string::npos ||
         starts("ref") || (oneChannel && (starts("jit_uni_int8") || starts("jit_int8")));
}

/// The 16 x 16 bytes `in` (rows) transposed into `out` (out[j]: byte j of
/// every row): four rounds of interleaving rows 2i and 2i + 1, which
/// transposes with both indices bit-reversed.
inline void transpose16x16(const __m128i in[16], __m128i out[16]) {
  static constexpr int rev[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
  __m128i r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = in[rev[i]];
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 8; ++i) {
      t[i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
      t[i + 8] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 16; ++i)
      r[i] = t[i];
  }
  for (int j = 0; j < 16; ++j)
    out[j] = r[rev[j]];
}

/// Requantizes four int32 sums (as computeIntegerGroup: float(int32) times
/// the float multiplier, rounded to nearest even by MXCSR's default mode,
/// plus the zero point): int32 results, saturated to 8 bits when packed.
inline __m128i requant4(__m128i acc, __m128 mult, __m128i zero) {
  const __m128 lo = _mm_set1_ps(-1073741824.f), hi = _mm_set1_ps(1073741824.f);
  __m128 v = _mm_mul_ps(_mm_cvtepi32_ps(acc), mult);
  v = _mm_min_ps(_mm_max_ps(v, lo), hi); // NaN -> lo, as the reference's int64 cast
  return _mm_add_epi32(_mm_cvtps_epi32(v), zero);
}

/// Sixteen requantized values packed into bytes (u8 or s8 saturation).
inline __m128i pack16(const __m128i q[4], bool isSigned) {
  __m128i a = _mm_packs_epi32(q[0], q[1]), b = _mm_packs_epi32(q[2], q[3]);
  return isSigned ? _mm_packs_epi16(a, b) : _mm_packus_epi16(a, b);
}

/// Rows (output pixels of a convolution, rows of a matrix product) of int32
/// sums to requantize: row r's part i starts at base + r * stride +
/// partOff[i]; its M bytes go to out + r * outStride.
struct RowBlock {
  const int32_t *base;
  int64_t stride;
  const int64_t *partOff;
  size_t parts;
  int64_t rows;
  uint8_t *out;
  int64_t outStride;
};

/// Requantizes the M sums of each row of `b` (plus cst), 16 at a time (SSE2).
void requantRowsSse2(const RowBlock &b, const uint32_t *cst, const float *mult, int64_t m,
                     int32_t yZero, bool ySigned) {
  const __m128i zero = _mm_set1_epi32(yZero);
  for (int64_t r = 0; r < b.rows; ++r) {
    const int32_t *row = b.base + r * b.stride;
    uint8_t *out = b.out + r * b.outStride;
    for (int64_t c = 0; c < m; c += 16) {
      __m128i q[4];
      for (int v = 0; v < 4; ++v) {
        int64_t cv = c + 4 * v;
        __m128i acc = _mm_loadu_si128(reinterpret_cast<const __m128i *>(cst + cv));
        for (size_t i = 0; i < b.parts; ++i)
          acc = _mm_add_epi32(
              acc, _mm_loadu_si128(reinterpret_cast<const __m128i *>(row + b.partOff[i] + cv)));
        q[v] = requant4(acc, _mm_loadu_ps(mult + cv), zero);
      }
      __m128i bytes = pack16(q, ySigned);
      if (c + 16 <= m) {
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + c), bytes);
      } else {
        alignas(16) uint8_t tail[16];
        _mm_store_si128(reinterpret_cast<__m128i *>(tail), bytes);
        std::memcpy(out + c, tail, size_t(m - c));
      }
    }
  }
}

/// requantRowsSse2 32 at a time with AVX2: the same IEEE operations lane by
/// lane (convert, multiply, clamp, convert with MXCSR's rounding), so the
/// same bytes. `OnePart`: the sums whole (no weight parts to add).
template <bool OnePart>
__attribute__((target("avx2"))) void requantRowsAvx2(const RowBlock &b, const uint32_t *cst,
                                                     const float *mult, int64_t m, int32_t yZero,
                                                     bool ySigned) {
  const __m256i zero = _mm256_set1_epi32(yZero), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256 lo = _mm256_set1_ps(-1073741824.f), hi = _mm256_set1_ps(1073741824.f);
  for (int64_t r = 0; r < b.rows; ++r) {
    const int32_t *row = b.base + r * b.stride + (OnePart ? b.partOff[0] : 0);
    uint8_t *out = b.out + r * b.outStride;
    for (int64_t c = 0; c < m; c += 32) {
      __m256i q[4];
      for (int v = 0; v < 4; ++v) {
        int64_t cv = c + 8 * v;
        __m256i acc = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(cst + cv));
        if (OnePart)
          acc = _mm256_add_epi32(acc,
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row + cv)));
        else
          for (size_t i = 0; i < b.parts; ++i)
            acc = _mm256_add_epi32(acc, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(
                                            row + b.partOff[i] + cv)));
        __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_loadu_ps(mult + cv));
        f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
        q[v] = _mm256_add_epi32(_mm256_cvtps_epi32(f), zero);
      }
      // Packs work within 128-bit lanes: bytes come out as dwords
      // 0 4 1 5 2 6 3 7 of the wanted order.
      __m256i lo16 = _mm256_packs_epi32(q[0], q[1]), hi16 = _mm256_packs_epi32(q[2], q[3]);
      __m256i bytes = ySigned ? _mm256_packs_epi16(lo16, hi16) : _mm256_packus_epi16(lo16, hi16);
      bytes = _mm256_permutevar8x32_epi32(bytes, order);
      if (c + 32 <= m) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + c), bytes);
      } else {
        alignas(32) uint8_t tail[32];
        _mm256_store_si256(reinterpret_cast<__m256i *>(tail), bytes);
        std::memcpy(out + c, tail, size_t(m - c));
      }
    }
  }
}

/// The M sums of each row of `b` (plus cst) as floats: float(int32) times
/// the multiplier (MatMulIntegerToFloat's output), to `floatOut` + r * M.
/// Channels [from, m) of each row.
[[gnu::always_inline]] inline void floatRowsTail(const RowBlock &b, const uint32_t *cst,
                                                 const float *mult, int64_t from, int64_t m,
                                                 float *floatOut) {
  for (int64_t r = 0; r < b.rows; ++r) {
    const int32_t *row = b.base + r * b.stride;
    for (int64_t c = from; c < m; ++c) {
      uint32_t acc = cst[c];
      for (size_t i = 0; i < b.parts; ++i)
        acc += uint32_t(row[b.partOff[i] + c]);
      floatOut[r * m + c] = float(int32_t(acc)) * mult[c];
    }
  }
}

void floatRows(const RowBlock &b, const uint32_t *cst, const float *mult, int64_t m, float *out) {
  floatRowsTail(b, cst, mult, 0, m, out);
}

/// floatRows eight channels at a time with AVX2: the same IEEE operations.
__attribute__((target("avx2"))) void floatRowsAvx2(const RowBlock &b, const uint32_t *cst,
                                                   const float *mult, int64_t m, float *out) {
  int64_t whole = m / 8 * 8;
  for (int64_t r = 0; r < b.rows; ++r) {
    const int32_t *row = b.base + r * b.stride;
    for (int64_t c = 0; c < whole; c += 8) {
      __m256i acc = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(cst + c));
      for (size_t i = 0; i < b.parts; ++i)
        acc = _mm256_add_epi32(
            acc, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row + b.partOff[i] + c)));
      _mm256_storeu_ps(out + r * m + c,
                       _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_loadu_ps(mult + c)));
    }
  }
  floatRowsTail(b, cst, mult, whole, m, out);
}

} // namespace

/// One input shape's primitive, weights, memory objects and buffers.
struct Plan {
  std::string impl;
  int parts = 1, pieces = 1;
  Shape outShape;
  dnnl::primitive prim;
  dnnl::memory src, scratch;
  std::vector<dnnl::memory> wei, dst;
  std::vector<std::unordered_map<int, dnnl::memory>> args; ///< one per execution
  Buffer srcBuf, dstBuf;
  /// dst: the int32 sums of part r for output row/pixel P and channel m are at
  /// P * pixStride + partOff[r] + m.
  int64_t pixStride = 0;
  std::vector<int64_t> partOff;
  // Conv: the primitive computes `batch` images at a time (a chunk), `images`
  // in all; `pixels` output pixels per image. The input is copied to N, D, H,
  // W, C with the padding written as the zero point (once): input pixel i of
  // an image (of `plane`) goes to padded pixel pixelOff[i] (of `paddedPlane`).
  int64_t batch = 0, images = 0, channels = 0, pixels = 0, plane = 0, paddedPlane = 0;
  std::vector<int64_t> pixelOff;
  // MatMul / Gemm.
  int64_t rows = 0;
  bool ownSrc = false;            ///< s8 activations are copied + 128
  std::vector<uint8_t> quantized; ///< runDequantized's bytes
};

struct IntegerKernel::Impl {
  const graph::Node *node = nullptr;
  Mode mode = Mode::Auto;
  bool conv = false;
  ElemType xElem = ElemType::UInt8;
  bool ySigned = false;
  int64_t m = 0, k = 0, mPad = 0; ///< channels; reduction per channel; m rounded to 32
  Shape wDims;                    ///< Conv: the ONNX weights' shape
  int64_t group = 1;
  /// Per channel m, its k weights: Conv [M, C/G, kernel...] (ONNX's layout),
  /// Gemm/MatMul [M, K].
  std::vector<int8_t> w;
  std::vector<uint32_t> cst; ///< bias - zero point * sum(w), modulo 2^32
  std::vector<float> mult;
  uint8_t flip = 0, zeroRaw = 0; ///< the u8 activation: x ^ flip; its zero point
  int32_t yZero = 0;
  bool floatOut = false; ///< IntegerGroup::floatOutput: sums times mult, in float
  bool pairSafe = false; ///< no two weights of a channel can overflow a pair
  bool vnni = false;
  /// The float each output byte stands for: float(q - y_zero) * y_scale.
  float dequantized[256];
  std::map<Shape, std::unique_ptr<Plan>> plans;
  Plan empty; ///< the plan of empty inputs
  Plan *last = nullptr;

  /// Checks `xq` and finds or builds its plan (&empty for an empty input);
  /// null + `err` when `xq` does not fit.
  Plan *prepare(const Tensor &xq, Shape &outShape, std::string &err);
  /// Computes `xq` (plain, or channels-last for a convolution) with plan `p`
  /// into `ys` (the output's bytes: channels-last when `lastOut`, else
  /// row-major).
  /// A MatMul of `floatOut` writes floats to `ys` instead.
  bool execute(Plan &p, const Tensor &xq, void *ys, bool lastOut, std::string &err);

  /// The weights as `pieces` (1, or 2 halves within +-64) times as many
  /// reduction chunks as keep every channel's sum within kPartBound: each
  /// array in the layout of `w`, adding up to `w`.
  std::vector<std::vector<int8_t>> split(int pieces) const;
  bool buildConv(Plan &p, const Shape &x, std::string &err);
  bool buildMatmul(Plan &p, const Shape &x, std::string &err);
  /// Builds the primitive of `p` for weight parts `parts` (pd: a oneDNN
  /// primitive_desc) and reorders the weights into it.
  template <typename PD>
  void finish(Plan &p, PD &pd, dnnl::primitive prim, const std::vector<std::vector<int8_t>> &parts,
              int pieces, const dnnl::memory::dims &weiDims, bool fold,
              const dnnl::memory::desc &srcMd, const dnnl::memory::desc &dstMd, int64_t dstElems);
  /// Copies image `n`'s input pixels [p0, p1) into the padded NHWC buffer
  /// from NCHW `x` (or from NHWC when `lastIn`).
  void pack(const Plan &p, const uint8_t *x, bool lastIn, int64_t n, int64_t p0, int64_t p1) const;
  /// Requantizes output rows (pixels) [row, row + rows) of the sums into
  /// `out` (M bytes each, `outStride` apart).
  void requantRows(const Plan &p, int64_t row, int64_t rows, uint8_t *out, int64_t outStride) const;
  /// Requantizes image `n`'s output pixels [p0, p0 + cnt), cnt <= 16, into
  /// the NCHW output `y`.
  void requantPixels(const Plan &p, int64_t n, int64_t p0, int64_t cnt, uint8_t *y) const;
};

IntegerKernel::IntegerKernel(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
IntegerKernel::~IntegerKernel() = default;

std::unique_ptr<IntegerKernel> IntegerKernel::create(const IntegerGroup &grp, std::string &err,
                                                     Mode mode) {
  if (!grp.node) {
    err = "the integer group has no node";
    return nullptr;
  }
  const graph::Node &n = *grp.node;
  auto im = std::make_unique<Impl>();
  im->node = &n;
  im->mode = mode;
  im->conv = n.opType == "Conv";
  if (!im->conv && n.opType != "Gemm" && n.opType != "MatMul") {
    err = "integer kernels compute Conv, Gemm and MatMul, not " + n.opType;
    return nullptr;
  }
  im->m = grp.m;
  im->k = grp.k;
  im->mPad = (grp.m + 31) / 32 * 32;
  if (grp.m < 1 || grp.k < 1 || int64_t(grp.w.size()) != grp.m * grp.k ||
      int64_t(grp.bias.size()) != grp.m || int64_t(grp.multiplier.size()) != grp.m) {
    err = "the integer group's weights, bias and multipliers do not agree";
    return nullptr;
  }
  if (im->conv) {
    const graph::Value *wv = n.input(1);
    const graph::Node *dq = wv ? wv->producer : nullptr;
    const graph::Value *wq = dq ? dq->input(0) : nullptr;
    const graph::Tensor *t = wq ? wq->constant : nullptr;
    if (!t || t->elem != ElemType::Int8 || t->dims.size() < 3 || t->dims.size() > 5 ||
        int64_t(t->raw.size()) != t->numElements() || t->dims[0] != grp.m ||
        t->numElements() != grp.m * grp.k) {
      err = "the Conv's weights are not an int8 constant of rank 3 to 5 matching the group";
      return nullptr;
    }
    im->wDims = t->dims;
    std::unique_ptr<NodeState> none;
    KernelContext ctx(n, 13, none);
    im->group = ctx.attrInt("group", 1);
    if (im->group < 1 || grp.m % im->group) {
      err = "Conv group " + std::to_string(im->group) + " does not divide its " +
            std::to_string(grp.m) + " output channels";
      return nullptr;
    }
    const int8_t *raw = reinterpret_cast<const int8_t *>(t->raw.data());
    im->w.assign(raw, raw + t->numElements());
  } else {
    im->w = grp.w;
  }
  im->xElem = grp.signedX ? ElemType::Int8 : ElemType::UInt8;
  im->ySigned = grp.yMin < 0;
  if (grp.yMin != (im->ySigned ? -128 : 0) || grp.yMax != (im->ySigned ? 127 : 255)) {
    err = "the group's output range is not that of an 8-bit type";
    return nullptr;
  }
  int64_t zeroRaw = grp.xZero + (grp.signedX ? 128 : 0);
  if (zeroRaw < 0 || zeroRaw > 255) {
    err = "the input zero point " + std::to_string(grp.xZero) + " is off the 8-bit grid";
    return nullptr;
  }
  im->flip = grp.signedX ? 0x80 : 0;
  im->zeroRaw = uint8_t(zeroRaw);
  im->yZero = int32_t(grp.yZero);
  im->floatOut = grp.floatOutput;
  im->cst.assign(size_t(im->mPad), 0);
  im->mult.assign(size_t(im->mPad), 0.f);
  im->pairSafe = true;
  for (int64_t c = 0; c < grp.m; ++c) {
    const int8_t *row = im->w.data() + c * grp.k;
    int64_t sum = 0, top1 = 0, top2 = 0;
    for (int64_t i = 0; i < grp.k; ++i) {
      int64_t a = std::abs(int64_t(row[i]));
      sum += row[i];
      if (a > top1)
        top2 = top1, top1 = a;
      else if (a > top2)
        top2 = a;
    }
    im->pairSafe &= top1 + top2 <= kPairBound;
    im->cst[size_t(c)] = uint32_t(uint64_t(grp.bias[size_t(c)] - zeroRaw * sum));
    im->mult[size_t(c)] = grp.multiplier[size_t(c)];
  }
  for (int b = 0; b < 256; ++b)
    im->dequantized[b] =
        float((im->ySigned ? int64_t(int8_t(b)) : int64_t(b)) - grp.yZero) * grp.yScale;
  im->vnni = isaHasVnni();
  return std::unique_ptr<IntegerKernel>(new IntegerKernel(std::move(im)));
}

std::vector<std::vector<int8_t>> IntegerKernel::Impl::split(int pieces) const {
  size_t n = w.size();
  std::vector<std::vector<int8_t>> piece(static_cast<size_t>(pieces), std::vector<int8_t>(n));
  for (size_t i = 0; i < n; ++i) {
    int a = pieces == 1 ? w[i] : w[i] / 2; // halves: 127 = 63 + 64, -128 = -64 - 64
    piece[0][i] = int8_t(a);
    if (pieces == 2)
      piece[1][i] = int8_t(w[i] - a);
  }
  // Chunks along each channel's reduction, greedily, each within the bound.
  std::vector<std::vector<int32_t>> chunk(static_cast<size_t>(pieces), std::vector<int32_t>(n));
  int32_t chunks = 1;
  for (int pc = 0; pc < pieces; ++pc)
    for (int64_t c = 0; c < m; ++c) {
      int64_t sum = 0;
      int32_t q = 0;
      for (int64_t i = c * k; i < (c + 1) * k; ++i) {
        int64_t a = std::abs(int64_t(piece[size_t(pc)][size_t(i)]));
        if (sum + a > kPartBound)
          ++q, sum = 0;
        sum += a;
        chunk[size_t(pc)][size_t(i)] = q;
      }
      chunks = std::max(chunks, q + 1);
    }
  std::vector<std::vector<int8_t>> parts(static_cast<size_t>(pieces * chunks),
                                         std::vector<int8_t>(n, 0));
  for (int pc = 0; pc < pieces; ++pc)
    for (size_t i = 0; i < n; ++i)
      parts[size_t(pc * chunks + chunk[size_t(pc)][i])][i] = piece[size_t(pc)][i];
  return parts;
}

template <typename PD>
void IntegerKernel::Impl::finish(Plan &p, PD &pd, dnnl::primitive prim,
                                 const std::vector<std::vector<int8_t>> &parts, int pieces,
                                 const dnnl::memory::dims &weiDims, bool fold,
                                 const dnnl::memory::desc &srcMd, const dnnl::memory::desc &dstMd,
                                 int64_t dstElems) {
  const dnnl::engine &eng = dnnl_util::engine();
  dnnl::stream &s = dnnl_util::stream();
  int nparts = int(parts.size()), reps = fold ? 1 : nparts;
  p.impl = pd.impl_info_str();
  p.parts = nparts;
  p.pieces = pieces;
  p.prim = prim;
  // Conv and s8 activations: our copy; u8 Gemm/MatMul: the input itself.
  p.src = dnnl::memory(srcMd, eng, p.ownSrc || conv ? p.srcBuf.data() : nullptr);
  if (pd.scratchpad_desc().get_size())
    p.scratch = dnnl::memory(pd.scratchpad_desc(), eng);
  // The weights as oneDNN wants them; folded parts are channels r * M + m
  // (Gemm/MatMul: columns).
  dnnl::memory::desc user(weiDims, dt::s8,
                          dnnl_util::rowMajorStrides(Shape(weiDims.begin(), weiDims.end())));
  std::vector<int8_t> host;
  int64_t repStride = dstElems / reps;
  // Slack: the requantizing loop reads up to 31 channels past a row's end.
  p.dstBuf.allocate(size_t(dstElems + 32) * sizeof(int32_t));
  for (int r = 0; r < reps; ++r) {
    if (fold && conv) {
      for (const auto &part : parts)
        host.insert(host.end(), part.begin(), part.end());
    } else if (fold) { // [K, parts * M]
      host.assign(size_t(nparts * m * k), 0);
      for (int q = 0; q < nparts; ++q)
        for (int64_t c = 0; c < m; ++c)
          for (int64_t i = 0; i < k; ++i)
            host[size_t(i * nparts * m + q * m + c)] = parts[size_t(q)][size_t(c * k + i)];
    } else {
      host = parts[size_t(r)];
    }
    dnnl::memory from(user, eng, host.data()), to(pd.weights_desc(), eng);
    dnnl::reorder(from, to).execute(s, from, to);
    s.wait();
    p.wei.push_back(to);
    p.dst.push_back(dnnl::memory(dstMd, eng, p.dstBuf.data() + size_t(r * repStride) * 4));
    std::unordered_map<int, dnnl::memory> a = {
        {DNNL_ARG_SRC, p.src}, {DNNL_ARG_WEIGHTS, p.wei.back()}, {DNNL_ARG_DST, p.dst.back()}};
    if (p.scratch)
      a[DNNL_ARG_SCRATCHPAD] = p.scratch;
    p.args.push_back(std::move(a));
  }
  p.pixStride = fold ? nparts * m : m;
  for (int r = 0; r < nparts; ++r)
    p.partOff.push_back(fold ? r * m : r * repStride);
}

bool IntegerKernel::Impl::buildConv(Plan &p, const Shape &x, std::string &err) {
  std::unique_ptr<NodeState> none;
  KernelContext ctx(*node, 13, none);
  ConvGeometry geo;
  if (!convGeometry(ctx, x, wDims, geo)) {
    err = ctx.error;
    return false;
  }
  size_t sp = x.size() - 2;
  p.outShape = geo.outShape;
  p.images = x[0];
  p.channels = x[1];
  p.pixels = 1;
  p.plane = 1;
  p.paddedPlane = 1;
  dnnl::memory::dims srcDims = {0, x[1]}, dstDims, strides, dil, zero(sp, 0);
  Shape padded;
  for (size_t d = 0; d < sp; ++d) {
    padded.push_back(x[d + 2] + geo.padBegin[d] + geo.padEnd[d]);
    p.plane *= x[d + 2];
    p.paddedPlane *= padded.back();
    p.pixels *= geo.outShape[d + 2];
    srcDims.push_back(padded.back());
    strides.push_back(geo.strides[d]);
    dil.push_back(geo.dilations[d] - 1);
  }
  p.pixelOff.resize(size_t(p.plane));
  for (int64_t i = 0; i < p.plane; ++i) {
    int64_t rest = i, off = 0, scale = 1;
    for (size_t d = sp; d-- > 0;) {
      off += (rest % x[d + 2] + geo.padBegin[d]) * scale;
      rest /= x[d + 2];
      scale *= padded[d];
    }
    p.pixelOff[size_t(i)] = off;
  }
  int64_t g = group, cg = wDims[1], mg = m / g;
  // Grouped convolutions repeat the primitive per part (a depthwise one stays
  // depthwise); the others fold the parts into output channels.
  bool fold = g == 1, oneChannel = cg == 1;
  const dnnl::engine &eng = dnnl_util::engine();
  // Images per run of the primitive: the largest divisor of the batch whose
  // int32 sums fit kChunkBytes.
  auto chunkOf = [&](int64_t nparts) {
    int64_t perImage = std::max<int64_t>(1, p.pixels * m * nparts * 4), best = 1;
    for (int64_t c = 1; c <= p.images; ++c)
      if (p.images % c == 0 && c * perImage <= kChunkBytes)
        best = c;
    return best;
  };
  auto build = [&](const std::vector<std::vector<int8_t>> &parts) {
    int64_t np = int64_t(parts.size()), mv = fold ? np * m : m;
    p.batch = chunkOf(np);
    srcDims[0] = p.batch;
    dstDims = {p.batch, mv};
    for (size_t d = 0; d < sp; ++d)
      dstDims.push_back(geo.outShape[d + 2]);
    dnnl::memory::dims weiDims = g > 1 ? dnnl::memory::dims{g, mg, cg} : dnnl::memory::dims{mv, cg};
    weiDims.insert(weiDims.end(), wDims.begin() + 2, wDims.end());
    dnnl::memory::desc srcMd(srcDims, dt::u8, dnnl_util::channelsLastTag(x.size()));
    dnnl::memory::desc dstMd(dstDims, dt::s32, dnnl_util::channelsLastTag(x.size()));
    dnnl::memory::desc weiMd(weiDims, dt::s8, tag::any);
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::convolution_direct, srcMd, weiMd, dstMd,
                                      strides, dil, zero, zero);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    auto pd = dnnl::convolution_forward::primitive_desc(d, attr, eng);
    return std::make_pair(pd, weiDims);
  };
  auto use = [&](const std::vector<std::vector<int8_t>> &parts, int pieces) {
    auto [pd, weiDims] = build(parts);
    p.srcBuf.allocate(size_t(p.batch * p.paddedPlane * p.channels));
    std::memset(p.srcBuf.data(), zeroRaw, p.srcBuf.bytes());
    int64_t dstElems = p.batch * p.pixels * m * int64_t(parts.size());
    finish(p, pd, dnnl::convolution_forward(pd), parts, pieces, weiDims, fold,
           dnnl::memory::desc(srcDims, dt::u8, dnnl_util::channelsLastTag(x.size())),
           dnnl::memory::desc(dstDims, dt::s32, dnnl_util::channelsLastTag(x.size())), dstElems);
  };
  bool tryDirect = mode == Mode::Direct || (mode == Mode::Auto && (pairSafe || vnni || oneChannel));
  if (tryDirect) {
    std::vector<std::vector<int8_t>> parts = split(1);
    if (mode == Mode::Direct || pairSafe ||
        addsExactly(build(parts).first.impl_info_str(), oneChannel)) {
      use(parts, 1);
      return true;
    }
  }
  use(split(2), 2);
  return true;
}

bool IntegerKernel::Impl::buildMatmul(Plan &p, const Shape &x, std::string &err) {
  p.rows = numElements(x) / k;
  p.outShape = x;
  p.outShape.back() = m;
  p.ownSrc = xElem == ElemType::Int8;
  if (p.ownSrc)
    p.srcBuf.allocate(size_t(p.rows * k));
  const dnnl::engine &eng = dnnl_util::engine();
  dnnl::memory::desc srcMd({p.rows, k}, dt::u8, tag::ab);
  auto build = [&](const std::vector<std::vector<int8_t>> &parts) {
    int64_t cols = int64_t(parts.size()) * m;
    dnnl::memory::desc weiMd({k, cols}, dt::s8, tag::any), dstMd({p.rows, cols}, dt::s32, tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(srcMd, weiMd, dstMd), attr, eng);
  };
  auto use = [&](const std::vector<std::vector<int8_t>> &parts, int pieces) {
    int64_t cols = int64_t(parts.size()) * m;
    auto pd = build(parts);
    finish(p, pd, dnnl::matmul(pd), parts, pieces, {k, cols}, true, srcMd,
           dnnl::memory::desc({p.rows, cols}, dt::s32, tag::ab), p.rows * cols);
  };
  if (mode == Mode::Direct || (mode == Mode::Auto && (pairSafe || vnni))) {
    std::vector<std::vector<int8_t>> parts = split(1);
    if (mode == Mode::Direct || pairSafe || addsExactly(build(parts).impl_info_str(), false)) {
      use(parts, 1);
      return true;
    }
  }
  use(split(2), 2);
  return true;
}

void IntegerKernel::Impl::pack(const Plan &p, const uint8_t *x, bool lastIn, int64_t n, int64_t p0,
                               int64_t p1) const {
  int64_t c = p.channels, plane = p.plane, full = c / kBlock * kBlock;
  const uint8_t *src = x + n * c * plane;
  uint8_t *dst = p.srcBuf.data() + n * p.paddedPlane * c;
  const int64_t *off = p.pixelOff.data();
  if (lastIn) { // whole pixels, moved to their padded places
    for (int64_t i = p0; i < p1; ++i) {
      const uint8_t *from = src + i * c;
      uint8_t *to = dst + off[i] * c;
      if (!flip)
        std::memcpy(to, from, size_t(c));
      else
        for (int64_t ch = 0; ch < c; ++ch)
          to[ch] = from[ch] ^ flip;
    }
    return;
  }
  const __m128i flip16 = _mm_set1_epi8(char(flip));
  int64_t i = p0;
  // 16 channels x 16 pixels at a time.
  for (; i + kBlock <= p1; i += kBlock)
    for (int64_t ch = 0; ch < full; ch += kBlock) {
      __m128i rows[16], cols[16];
      for (int r = 0; r < 16; ++r)
        rows[r] = _mm_xor_si128(
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + (ch + r) * plane + i)), flip16);
      transpose16x16(rows, cols);
      for (int j = 0; j < 16; ++j)
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + off[i + j] * c + ch), cols[j]);
    }
  // The remaining channels of those pixels, then the remaining pixels.
  for (int64_t q = p0; q < i; ++q)
    for (int64_t ch = full; ch < c; ++ch)
      dst[off[q] * c + ch] = src[ch * plane + q] ^ flip;
  for (int64_t q = i; q < p1; ++q)
    for (int64_t ch = 0; ch < c; ++ch)
      dst[off[q] * c + ch] = src[ch * plane + q] ^ flip;
}

void IntegerKernel::Impl::requantRows(const Plan &p, int64_t row, int64_t rows, uint8_t *out,
                                      int64_t outStride) const {
  RowBlock b{reinterpret_cast<const int32_t *>(p.dstBuf.data()) + row * p.pixStride,
             p.pixStride,
             p.partOff.data(),
             p.partOff.size(),
             rows,
             out,
             outStride};
  if (simdLevel() < SimdLevel::Avx2) // both loops give the same bytes
    requantRowsSse2(b, cst.data(), mult.data(), m, yZero, ySigned);
  else if (b.parts == 1)
    requantRowsAvx2<true>(b, cst.data(), mult.data(), m, yZero, ySigned);
  else
    requantRowsAvx2<false>(b, cst.data(), mult.data(), m, yZero, ySigned);
}

void IntegerKernel::Impl::requantPixels(const Plan &p, int64_t n, int64_t p0, int64_t cnt,
                                        uint8_t *y) const {
  // The pixels requantized as rows of channels (NHWC), then transposed 16
  // x 16 bytes at a time into the channel planes.
  thread_local std::vector<uint8_t> rowsBuf;
  if (rowsBuf.size() < size_t(kBlock * mPad))
    rowsBuf.assign(size_t(kBlock * mPad), 0);
  uint8_t *rows = rowsBuf.data();
  requantRows(p, n * p.pixels + p0, cnt, rows, mPad);
  int64_t full = m / kBlock * kBlock;
  for (int64_t c = 0; c < full; c += kBlock) {
    __m128i in[16], out[16];
    for (int i = 0; i < 16; ++i)
      in[i] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(rows + i * mPad + c));
    transpose16x16(in, out);
    for (int j = 0; j < 16; ++j) {
      uint8_t *dst = y + (n * m + c + j) * p.pixels + p0;
      if (cnt == kBlock) {
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst), out[j]);
      } else {
        alignas(16) uint8_t tail[16];
        _mm_store_si128(reinterpret_cast<__m128i *>(tail), out[j]);
        std::memcpy(dst, tail, size_t(cnt));
      }
    }
  }
  for (int64_t c = full; c < m; ++c)
    for (int64_t i = 0; i < cnt; ++i)
      y[(n * m + c) * p.pixels + p0 + i] = rows[i * mPad + c];
}

Plan *IntegerKernel::Impl::prepare(const Tensor &xq, Shape &outShape, std::string &err) {
  const Shape &x = xq.shape();
  auto typeName = [](ElemType e) {
    return e == ElemType::UInt8  ? std::string("uint8")
           : e == ElemType::Int8 ? std::string("int8")
                                 : "element type " + std::to_string(int(e));
  };
  std::string what = node->opType + " `" + node->name + "`";
  if (xq.elem() != xElem) {
    err = "the integer kernel of " + what + " reads " + typeName(xElem) + " activations, not " +
          typeName(xq.elem());
    return nullptr;
  }
  if (conv) {
    if (x.size() != wDims.size() || x[1] != wDims[1] * group) {
      err = "input " + shapeStr(x) + " does not fit " + what + " with weights " + shapeStr(wDims) +
            " and group " + std::to_string(group);
      return nullptr;
    }
  } else if (x.empty() || x.back() != k || (node->opType == "Gemm" && x.size() != 2)) {
    err = "input " + shapeStr(x) + " does not fit " + what + ": it reduces " +
          (node->opType == "Gemm" ? "a 2-D input" : "the last dimension") + " of size " +
          std::to_string(k);
    return nullptr;
  }
  if (xq.numel() == 0) { // nothing to compute: the output shape alone
    outShape = x;
    if (conv) {
      std::unique_ptr<NodeState> none;
      KernelContext ctx(*node, 13, none);
      ConvGeometry geo;
      if (!convGeometry(ctx, x, wDims, geo)) {
        err = what + ": " + ctx.error;
        return nullptr;
      }
      outShape = geo.outShape;
    } else {
      outShape.back() = m;
    }
    return &empty;
  }
  try {
    auto it = plans.find(x);
    if (it == plans.end()) {
      if (plans.size() >= 16)
        plans.clear();
      auto plan = std::make_unique<Plan>();
      if (!(conv ? buildConv(*plan, x, err) : buildMatmul(*plan, x, err))) {
        err = what + ": " + err;
        return nullptr;
      }
      it = plans.emplace(x, std::move(plan)).first;
    }
    last = it->second.get();
    outShape = last->outShape;
    return last;
  } catch (const dnnl::error &e) {
    err = what + ": oneDNN failed: " + e.what();
  } catch (const std::exception &e) {
    err = what + ": " + e.what();
  }
  plans.erase(x);
  last = nullptr;
  return nullptr;
}

bool IntegerKernel::Impl::execute(Plan &pl, const Tensor &xq, void *out, bool lastOut,
                                  std::string &err) {
  if (&pl == &empty)
    return true;
  Plan *p = &pl;
  Impl &im = *this;
  try {
    const uint8_t *xs = static_cast<const uint8_t *>(xq.raw());
    uint8_t *ys = static_cast<uint8_t *>(out);
    dnnl::stream &s = dnnl_util::stream();
    if (im.conv) {
      // Per chunk of images: the input copied to NDHWC with the padding
      // (interior only: the border holds the zero point since the plan was
      // built) -- or read where it is when it is channels-last already and
      // needs neither padding nor the s8 flip --, the primitive, the int32
      // sums requantized into the output (channels-last, or NCHW through
      // 16 x 16 byte transposes).
      bool lastIn = dnnl_util::isChannelsLast(xq);
      bool inPlace = lastIn && !flip && p->paddedPlane == p->plane;
      int64_t packBlocks = (p->plane + 255) / 256, blocks = (p->pixels + kBlock - 1) / kBlock;
      for (int64_t first = 0; first < p->images; first += p->batch) {
        const uint8_t *x0 = xs + first * p->channels * p->plane;
        p->src.set_data_handle(inPlace ? const_cast<uint8_t *>(x0) : p->srcBuf.data());
        if (!inPlace)
          parallelFor(p->batch * packBlocks, 256 * p->channels, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
              int64_t n = i / packBlocks, p0 = i % packBlocks * 256;
              im.pack(*p, x0, lastIn, n, p0, std::min(p->plane, p0 + 256));
            }
          });
        for (const auto &a : p->args)
          p->prim.execute(s, a);
        s.wait();
        uint8_t *y0 = ys + first * im.m * p->pixels;
        if (lastOut)
          parallelFor(p->batch * p->pixels, im.m * p->parts, [&](int64_t b, int64_t e) {
            im.requantRows(*p, b, e - b, y0 + b * im.m, im.m);
          });
        else
          parallelFor(p->batch * blocks, kBlock * im.m * p->parts, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
              int64_t n = i / blocks, p0 = i % blocks * kBlock;
              im.requantPixels(*p, n, p0, std::min(kBlock, p->pixels - p0), y0);
            }
          });
      }
      return true;
    }
    if (p->ownSrc) {
      uint8_t *dst = p->srcBuf.data(), flip8 = flip;
      parallelFor(p->rows, im.k, [&](int64_t b, int64_t e) {
        for (int64_t i = b * im.k; i < e * im.k; ++i)
          dst[i] = xs[i] ^ flip8;
      });
    } else {
      p->src.set_data_handle(const_cast<void *>(xq.raw()));
    }
    for (const auto &a : p->args)
      p->prim.execute(s, a);
    s.wait();
    if (im.floatOut) {
      float *yf = static_cast<float *>(out);
      parallelFor(p->rows, im.m * int64_t(p->parts), [&](int64_t b, int64_t e) {
        RowBlock rb{reinterpret_cast<const int32_t *>(p->dstBuf.data()) + b * p->pixStride,
                    p->pixStride,
                    p->partOff.data(),
                    p->partOff.size(),
                    e - b,
                    nullptr,
                    0};
        if (simdLevel() >= SimdLevel::Avx2) // both loops give the same bits
          floatRowsAvx2(rb, im.cst.data(), im.mult.data(), im.m, yf + b * im.m);
        else
          floatRows(rb, im.cst.data(), im.mult.data(), im.m, yf + b * im.m);
      });
      return true;
    }
    parallelFor(p->rows, im.m * int64_t(p->parts),
                [&](int64_t b, int64_t e) { im.requantRows(*p, b, e - b, ys + b * im.m, im.m); });
    return true;
  } catch (const dnnl::error &e) {
    err = node->opType + " `" + node->name + "`: oneDNN failed: " + e.what();
  } catch (const std::exception &e) {
    err = node->opType + " `" + node->name + "`: " + e.what();
  }
  return false;
}

namespace {

/// The input as a kernel reads it: convolutions read channels-last ones
/// where they are; anything else in a oneDNN layout is made plain.
const Tensor &readable(const Tensor &xq, bool conv, Tensor &copy) {
  if (!xq.blocked() || (conv && dnnl_util::isChannelsLast(xq)))
    return xq;
  copy = dnnl_util::toPlain(xq);
  return copy;
}

} // namespace

bool IntegerKernel::run(const Tensor &xq, Tensor &yq, std::string &err, bool channelsLast) {
  Tensor copy;
  const Tensor &x = readable(xq, impl->conv, copy);
  Shape out;
  Plan *p = impl->prepare(x, out, err);
  if (!p)
    return false;
  ElemType type = impl->ySigned ? ElemType::Int8 : ElemType::UInt8;
  bool last = channelsLast && impl->conv && numElements(out) > 0;
  if (impl->floatOut) {
    err = "the integer kernel of " + impl->node->opType + " `" + impl->node->name +
          "` gives floats, not 8-bit codes";
    return false;
  }
  yq = last ? dnnl_util::allocateChannelsLast(type, out) : Tensor(type, out);
  return impl->execute(*p, x, yq.data<uint8_t>(), last, err);
}

bool IntegerKernel::runDequantized(const Tensor &xq, Tensor &y, std::string &err) {
  Tensor copy;
  const Tensor &x = readable(xq, impl->conv, copy);
  Shape out;
  Plan *p = impl->prepare(x, out, err);
  if (!p)
    return false;
  y = Tensor(ElemType::Float, out);
  int64_t n = y.numel();
  if (p->quantized.size() < size_t(n))
    p->quantized.resize(size_t(n));
  if (impl->floatOut)
    return impl->execute(*p, x, y.raw(), false, err);
  uint8_t *q = p->quantized.data();
  if (!impl->execute(*p, x, q, false, err))
    return false;
  const float *lut = impl->dequantized;
  float *ys = y.data<float>();
  parallelFor(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      ys[i] = lut[q[i]];
  });
  return true;
}

std::string IntegerKernel::describe() const {
  const Plan *p = impl->last;
  if (!p)
    return "not run";
  std::string s = p->impl + " (" + isaName(dnnl::get_effective_cpu_isa()) + "), " +
                  std::to_string(p->parts) + (p->parts == 1 ? " part" : " parts");
  if (p->pieces == 2)
    s += " (halves within +-64)";
  return s;
}

int IntegerKernel::parts() const { return impl->last ? impl->last->parts : 0; }
