//===- IntegerGemm.cpp - MatMulInteger and ConvInteger: exact int32 sums ----===//
//
// MatMulInteger (MatMul's numpy semantics; zero points per tensor, per row
// of A or per column of B) and ConvInteger (zero points per tensor, or per
// output channel for the weights) on u8 and s8 operands, as the ONNX
// Runtime-dynamic-quantized models on npm use them: the exact int32 sums the
// operators define, on every CPU.
//
// They run as oneDNN f32 matrix products over slices of at most 256 along
// the reduction. An operand minus its zero point lies within +-255, so
// every product is below 2^16 and every partial sum of a slice below 2^24,
// where float holds integers exactly whatever order oneDNN adds them in; the
// slices add up in int32. ConvInteger lays its input out as columns
// (kernel_dim = C/group x kernel positions, in ONNX's weight order; padding
// holds the zero point, so it adds nothing) and multiplies the weights by them
// group by group. (ONNX Runtime adds the same products exactly on CPUs with
// VNNI; without, its u8 x s8 kernels saturate int16 pairs: runtime/ort's
// `--ort-cpu no-vnni` computes that.)
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"
#include "runtime/ops/ConvGeometry.h"
#include "runtime/ops/Dnnl.h"
#include "runtime/ops/MatmulShape.h"

#include <map>

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::dnnl_util;

namespace {

/// The longest reduction slice whose sums float holds exactly:
/// 256 * 255 * 255 < 2^24.
constexpr int64_t kExactSlice = 256;

/// One cached f32 product (m x kc, row stride lda) * (kc x n, row stride ldb).
struct SlicePlan {
  dnnl::matmul prim;
  dnnl::memory a, b, c;
};

struct IntegerGemmState : NodeState {
  std::map<Shape, SlicePlan> plans;
  std::vector<float> sums; ///< one slice's products
  /// The second operand minus its zero point, kept while it is a constant.
  std::vector<float> constOperand;
  const void *constSource = nullptr;
};

SlicePlan &slicePlan(IntegerGemmState &st, int64_t m, int64_t kc, int64_t n, int64_t lda,
                     int64_t ldb, int threads) {
  Shape key = {m, kc, n, lda, ldb, threads};
  auto it = st.plans.find(key);
  if (it != st.plans.end())
    return it->second;
  if (st.plans.size() >= 16)
    st.plans.clear();
  const dnnl::engine &eng = engine();
  dnnl::memory::desc a({m, kc}, dt::f32, {lda, 1}), b({kc, n}, dt::f32, {ldb, 1}),
      c({m, n}, dt::f32, {n, 1});
  SlicePlan p;
  p.prim = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), eng));
  p.a = dnnl::memory(a, eng, nullptr);
  p.b = dnnl::memory(b, eng, nullptr);
  p.c = dnnl::memory(c, eng, nullptr);
  return st.plans.emplace(key, std::move(p)).first->second;
}

/// y[m x n] (int32, dense) = a[m x k] * b[k x n], both holding integers
/// within +-255 as float (row strides lda and ldb). Throws dnnl::error.
void exactGemm(IntegerGemmState &st, const float *a, int64_t lda, const float *b, int64_t ldb,
               int32_t *y, int64_t m, int64_t k, int64_t n) {
  int threads = threadsFor(m * k * n);
  ThreadScope scope(threads);
  st.sums.resize(size_t(m * n));
  for (int64_t k0 = 0; k0 < k; k0 += kExactSlice) {
    int64_t kc = std::min(kExactSlice, k - k0);
    SlicePlan &p = slicePlan(st, m, kc, n, lda, ldb, threads);
    p.a.set_data_handle(const_cast<float *>(a + k0));
    p.b.set_data_handle(const_cast<float *>(b + k0 * ldb));
    p.c.set_data_handle(st.sums.data());
    p.prim.execute(stream(), {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}});
    stream().wait();
    const float *s = st.sums.data();
    bool first = k0 == 0;
    parallelFor(m, n, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0 * n; i < r1 * n; ++i)
        y[i] = first ? int32_t(s[i]) : y[i] + int32_t(s[i]);
    });
  }
  if (k == 0)
    std::fill(y, y + m * n, 0);
}

bool isByte(ElemType e) { return e == ElemType::UInt8 || e == ElemType::Int8; }

double byteAt(const Tensor &t, int64_t i) {
  return t.elem() == ElemType::UInt8 ? double(t.data<uint8_t>()[i]) : double(t.data<int8_t>()[i]);
}

/// Checks zero point `zp` of operand `x` (`what`: "a_zero_point") and gives
/// the shape it broadcasts with against x's shape: `rowAxis` >= 0 names the
/// dimension a 1-D zero point of several elements runs along (`along`: "row
/// of A", "output channel"); otherwise it broadcasts as it is.
bool zeroPointShape(KernelContext &ctx, const Tensor &x, const Tensor *zp, llvm::StringRef what,
                    int64_t rowAxis, llvm::StringRef along, Shape &zs) {
  zs = {};
  if (!zp)
    return true;
  if (zp->elem() != x.elem())
    return ctx.fail(what.str() + " is " + typeName(zp->elem()) + " but its operand is " +
                    typeName(x.elem()));
  if (zp->numel() == 1)
    return true;
  zs = zp->shape();
  if (zp->rank() == 1 && rowAxis >= 0) {
    if (x.dim(rowAxis) != zp->numel())
      return ctx.fail(what.str() + " has " + std::to_string(zp->numel()) +
                      " elements, not one per " + along.str() + " (" +
                      std::to_string(x.dim(rowAxis)) + ")");
    zs = Shape(size_t(x.rank()), 1);
    zs[size_t(rowAxis)] = zp->numel();
  }
  std::optional<Shape> both = broadcastShapes(zs, x.shape());
  if (!both || *both != x.shape())
    return ctx.fail(what.str() + " " + shapeStr(zp->shape()) + " does not broadcast to " +
                    shapeStr(x.shape()));
  return true;
}

/// x minus its zero point (shape `zs` from zeroPointShape), as float.
void offsetOperand(const Tensor &x, const Tensor *zp, const Shape &zs, float *out) {
  int64_t total = x.numel();
  if (!zp || zp->numel() == 1) {
    double z = zp ? byteAt(*zp, 0) : 0.0;
    parallelFor(total, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        out[i] = float(byteAt(x, i) - z);
    });
    return;
  }
  BroadcastIndexer zi(zs, x.shape());
  parallelFor(total, 4, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      out[i] = float(byteAt(x, i) - byteAt(*zp, zi.offset(i)));
  });
}

IntegerGemmState &stateOf(KernelContext &ctx) {
  if (!ctx.state)
    ctx.state = std::make_unique<IntegerGemmState>();
  return static_cast<IntegerGemmState &>(*ctx.state);
}

/// Operand `i` of ctx minus its zero point: kept in the node state while it
/// is a constant, else in `scratch`.
const float *offsetConstant(KernelContext &ctx, size_t i, const Tensor *zp, const Shape &zs,
                            std::vector<float> &scratch) {
  const Tensor &x = *ctx.input(i);
  IntegerGemmState &st = stateOf(ctx);
  bool constant = ctx.constantInput(i) && (!zp || ctx.constantInput(i + 2));
  if (constant && st.constSource == x.raw() && st.constOperand.size() == size_t(x.numel()))
    return st.constOperand.data();
  std::vector<float> &dst = constant ? st.constOperand : scratch;
  dst.resize(size_t(x.numel()));
  offsetOperand(x, zp, zs, dst.data());
  st.constSource = constant ? x.raw() : nullptr;
  return dst.data();
}

bool matmulIntegerKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1), *az = ctx.input(2), *bz = ctx.input(3);
  if (!a || !b)
    return ctx.fail("MatMulInteger needs inputs A and B");
  if (!isByte(a->elem()) || !isByte(b->elem()))
    return ctx.fail("MatMulInteger takes uint8 or int8 operands, not " + typeName(a->elem()) +
                    " and " + typeName(b->elem()));
  MatmulShape s;
  if (!matmulShape(ctx, "MatMulInteger", a->shape(), b->shape(), s))
    return false;
  Shape azs, bzs;
  if (!zeroPointShape(ctx, *a, az, "a_zero_point", a->rank() >= 2 ? a->rank() - 2 : -1, "row of A",
                      azs) ||
      !zeroPointShape(ctx, *b, bz, "b_zero_point", -1, "", bzs))
    return false;
  ctx.outputs[0] = Tensor(ElemType::Int32, s.out);
  Tensor &y = ctx.outputs[0];
  if (y.numel() == 0)
    return true;
  std::vector<float> as(size_t(a->numel())), bScratch;
  offsetOperand(*a, az, azs, as.data());
  const float *bs = offsetConstant(ctx, 1, bz, bzs, bScratch);
  IntegerGemmState &st = stateOf(ctx);
  int64_t nb = numElements(s.batch), nbA = numElements(s.aBatch), nbB = numElements(s.bBatch);
  int32_t *py = y.data<int32_t>();
  try {
    if (nbB == 1) {
      // B is one matrix: A's batches are rows of one product.
      exactGemm(st, as.data(), s.k, bs, s.n, py, nbA * s.m, s.k, s.n);
    } else {
      BroadcastIndexer ai(s.aBatch, s.batch), bi(s.bBatch, s.batch);
      for (int64_t i = 0; i < nb; ++i)
        exactGemm(st, as.data() + ai.offset(i) * s.m * s.k, s.k, bs + bi.offset(i) * s.k * s.n, s.n,
                  py + i * s.m * s.n, s.m, s.k, s.n);
    }
  } catch (const dnnl::error &e) {
    ctx.state.reset();
    return ctx.fail(std::string("MatMulInteger: oneDNN failed: ") + e.what());
  }
  return true;
}

/// The columns of image `img`, group `gi` of x (minus its zero point, in
/// `xs`): cols[(c * kernel positions + kpos) * P + p] for output position
/// p, 0 where the kernel reads padding.
void im2col(const float *xs, const Shape &xd, const ConvGeometry &g, int64_t img, int64_t gi,
            float *cols) {
  size_t sp = xd.size() - 2;
  int64_t cg = xd[1] / g.group, ksize = numElements(g.kernel), inner = 1, outP = 1;
  for (size_t d = 0; d < sp; ++d) {
    inner *= xd[d + 2];
    outP *= g.outShape[d + 2];
  }
  parallelFor(cg * ksize, outP, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> kpos(sp), opos(sp);
    for (int64_t r = r0; r < r1; ++r) {
      int64_t c = r / ksize;
      for (int64_t d = int64_t(sp), rest = r % ksize; d-- > 0;) {
        kpos[size_t(d)] = rest % g.kernel[size_t(d)];
        rest /= g.kernel[size_t(d)];
      }
      const float *plane = xs + ((img * xd[1]) + gi * cg + c) * inner;
      float *row = cols + r * outP;
      std::fill(opos.begin(), opos.end(), 0);
      for (int64_t p = 0; p < outP; ++p) {
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < sp && inside; ++d) {
          int64_t at = opos[d] * g.strides[d] - g.padBegin[d] + kpos[d] * g.dilations[d];
          inside = at >= 0 && at < xd[d + 2];
          off = off * xd[d + 2] + at;
        }
        row[p] = inside ? plane[off] : 0.f;
        for (size_t d = sp; d-- > 0;) { // next output position, row-major
          if (++opos[d] < g.outShape[d + 2])
            break;
          opos[d] = 0;
        }
      }
    }
  });
}

bool convIntegerKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *w = ctx.input(1), *xz = ctx.input(2), *wz = ctx.input(3);
  if (!x || !w)
    return ctx.fail("ConvInteger needs inputs x and w");
  if (!isByte(x->elem()) || !isByte(w->elem()))
    return ctx.fail("ConvInteger takes uint8 or int8 operands, not " + typeName(x->elem()) +
                    " and " + typeName(w->elem()));
  if (x->rank() < 3 || w->rank() != x->rank())
    return ctx.fail("ConvInteger needs an input of rank 3 or more and weights of the same rank, "
                    "not " +
                    shapeStr(x->shape()) + " and " + shapeStr(w->shape()));
  if (xz && xz->numel() != 1)
    return ctx.fail("x_zero_point must have one element, not " + shapeStr(xz->shape()));
  ConvGeometry g;
  if (!convGeometry(ctx, x->shape(), w->shape(), g))
    return false;
  Shape xzs, wzs;
  if (!zeroPointShape(ctx, *x, xz, "x_zero_point", -1, "", xzs) ||
      !zeroPointShape(ctx, *w, wz, "w_zero_point", 0, "output channel", wzs))
    return false;
  ctx.outputs[0] = Tensor(ElemType::Int32, g.outShape);
  Tensor &y = ctx.outputs[0];
  if (y.numel() == 0)
    return true;
  const Shape &xd = x->shape();
  int64_t m = w->dim(0), mg = m / g.group, kdim = w->numel() / std::max<int64_t>(m, 1);
  int64_t outP = y.numel() / (xd[0] * m);
  std::vector<float> xs(size_t(x->numel())), wScratch, cols(size_t(kdim * outP));
  offsetOperand(*x, xz, xzs, xs.data());
  const float *ws = offsetConstant(ctx, 1, wz, wzs, wScratch);
  IntegerGemmState &st = stateOf(ctx);
  int32_t *py = y.data<int32_t>();
  try {
    for (int64_t img = 0; img < xd[0]; ++img)
      for (int64_t gi = 0; gi < g.group; ++gi) {
        im2col(xs.data(), xd, g, img, gi, cols.data());
        exactGemm(st, ws + gi * mg * kdim, kdim, cols.data(), outP, py + (img * m + gi * mg) * outP,
                  mg, kdim, outP);
      }
  } catch (const dnnl::error &e) {
    ctx.state.reset();
    return ctx.fail(std::string("ConvInteger: oneDNN failed: ") + e.what());
  }
  return true;
}

} // namespace

void rt::registerIntegerGemmKernels(KernelRegistry &r) {
  r.add("MatMulInteger", matmulIntegerKernel);
  r.add("ConvInteger", convIntegerKernel);
}
