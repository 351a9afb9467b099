//===- Reduce.cpp - Reduction kernels ---------------------------------------===//
//
// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp over the axes
// given by the `axes` attribute (or, for ReduceSum from opset 13 and every
// reduction from opset 18, the optional second input with
// `noop_with_empty_axes`); empty axes reduce everything; `keepdims`.
//
// Float sums accumulate in double; integer sums and products wrap (uint64_t);
// float16/bfloat16 inputs are computed in float.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"

#include <cmath>
#include <limits>
#include <type_traits>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

//===----------------------------------------------------------------------===//
// Reducers: an accumulator type A, init(), step(a, v), finish(a, count)
//===----------------------------------------------------------------------===//

template <typename T> using Wide = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

/// `v` truncated toward zero and saturated to T (NaN gives 0) for integers.
template <typename T> T fromDouble(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v))
      return 0;
    if (v <= double(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= double(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
  }
  return T(v);
}

/// |v| as the wide type (wrapping for the most negative integer).
template <typename T> Wide<T> wideAbs(T v) {
  if constexpr (std::is_integral_v<T>)
    return v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  else
    return std::fabs(double(v));
}

template <typename T> struct SumR {
  using A = Wide<T>;
  static A init() { return 0; }
  static A step(A a, T v) { return a + A(v); }
  static T finish(A a, int64_t) { return T(a); }
};
template <typename T> struct MeanR : SumR<T> {
  using A = Wide<T>;
  static T finish(A a, int64_t n) {
    if constexpr (std::is_integral_v<T>) {
      if (n == 0)
        return 0;
      if constexpr (std::is_signed_v<T>)
        return T(int64_t(a) / n); // n >= 1: cannot overflow
      else
        return T(a / uint64_t(n));
    } else {
      return T(a / double(n));
    }
  }
};
template <typename T> struct SumSquareR : SumR<T> {
  using A = Wide<T>;
  static A step(A a, T v) { return a + A(v) * A(v); }
};
template <typename T> struct L1R : SumR<T> {
  using A = Wide<T>;
  static A step(A a, T v) { return a + wideAbs(v); }
};
template <typename T> struct L2R {
  using A = double;
  static A init() { return 0; }
  static A step(A a, T v) { return a + double(v) * double(v); }
  static T finish(A a, int64_t) { return fromDouble<T>(std::sqrt(a)); }
};
template <typename T> struct LogSumR : L2R<T> {
  static double step(double a, T v) { return a + double(v); }
  static T finish(double a, int64_t) { return fromDouble<T>(std::log(a)); }
};
template <typename T> struct LogSumExpR : L2R<T> {
  static double step(double a, T v) { return a + std::exp(double(v)); }
  static T finish(double a, int64_t) { return fromDouble<T>(std::log(a)); }
};
template <typename T> struct ProdR {
  using A = Wide<T>;
  static A init() { return 1; }
  static A step(A a, T v) { return a * A(v); }
  static T finish(A a, int64_t) { return T(a); }
};
template <typename T> struct MaxR {
  using A = T;
  static A init() {
    if constexpr (std::is_integral_v<T>)
      return std::numeric_limits<T>::lowest();
    else
      return -std::numeric_limits<T>::infinity();
  }
  static A step(A a, T v) {
    if constexpr (!std::is_integral_v<T>)
      if (std::isnan(v))
        return v;
    return v > a ? v : a;
  }
  static T finish(A a, int64_t) { return a; }
};
template <typename T> struct MinR {
  using A = T;
  static A init() {
    if constexpr (std::is_integral_v<T>)
      return std::numeric_limits<T>::max();
    else
      return std::numeric_limits<T>::infinity();
  }
  static A step(A a, T v) {
    if constexpr (!std::is_integral_v<T>)
      if (std::isnan(v))
        return v;
    return v < a ? v : a;
  }
  static T finish(A a, int64_t) { return a; }
};

//===----------------------------------------------------------------------===//
// The walk
//===----------------------------------------------------------------------===//

/// The input seen as groups of adjacent kept or reduced dimensions.
struct Plan {
  Shape keptDims; ///< outer kept groups
  std::vector<int64_t> keptStrides;
  int64_t inner = 1; ///< a trailing contiguous kept group
  Shape redDims;     ///< reduced groups
  std::vector<int64_t> redStrides;
  int64_t count = 1; ///< reduced elements per output
};

Plan makePlan(const Shape &dims, const std::vector<bool> &reduced) {
  Plan p;
  int64_t stride = 1;
  std::vector<int64_t> strides(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= dims[i];
  }
  int lastKind = -1; // 0 kept, 1 reduced
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1)
      continue;
    int kind = reduced[i] ? 1 : 0;
    Shape &gd = kind ? p.redDims : p.keptDims;
    std::vector<int64_t> &gs = kind ? p.redStrides : p.keptStrides;
    if (kind == lastKind) {
      gd.back() *= dims[i];
      gs.back() = strides[i];
    } else {
      gd.push_back(dims[i]);
      gs.push_back(strides[i]);
    }
    lastKind = kind;
    if (kind)
      p.count *= dims[i];
  }
  if (lastKind == 0) {
    p.inner = p.keptDims.back();
    p.keptDims.pop_back();
    p.keptStrides.pop_back();
  }
  return p;
}

template <template <typename> class R, typename T>
void reduceTyped(const Tensor &x, Tensor &out, const Plan &p) {
  using A = typename R<T>::A;
  const T *src = x.data<T>();
  T *dst = out.data<T>();
  int64_t blocks = 1, inner = p.inner;
  for (int64_t d : p.keptDims)
    blocks *= d;
  if (inner == 0 || blocks == 0)
    return;
  size_t nk = p.keptDims.size(), nr = p.redDims.size();
  // The last reduced group is walked by a tight loop; the others by an odometer.
  int64_t lastLen = nr ? p.redDims.back() : 1, lastStride = nr ? p.redStrides.back() : 0;
  size_t outerRed = nr ? nr - 1 : 0;
  int64_t outerCount = 1;
  for (size_t d = 0; d < outerRed; ++d)
    outerCount *= p.redDims[d];
  parallelFor(blocks, p.count * inner + 1, [&](int64_t b0, int64_t b1) {
    std::vector<A> acc((size_t(inner)));
    std::vector<int64_t> idx(outerRed);
    for (int64_t b = b0; b < b1; ++b) {
      int64_t base = 0;
      for (size_t d = nk, q = size_t(b); d-- > 0;) {
        base += int64_t(q % size_t(p.keptDims[d])) * p.keptStrides[d];
        q /= size_t(p.keptDims[d]);
      }
      std::fill(acc.begin(), acc.end(), R<T>::init());
      std::fill(idx.begin(), idx.end(), 0);
      int64_t ro = 0;
      for (int64_t o = 0; o < outerCount && lastLen > 0; ++o) {
        for (int64_t k = 0; k < lastLen; ++k) {
          const T *s = src + base + ro + k * lastStride;
          for (int64_t j = 0; j < inner; ++j)
            acc[size_t(j)] = R<T>::step(acc[size_t(j)], s[j]);
        }
        for (size_t d = outerRed; d-- > 0;) {
          ro += p.redStrides[d];
          if (++idx[d] < p.redDims[d])
            break;
          ro -= p.redStrides[d] * p.redDims[d];
          idx[d] = 0;
        }
      }
      for (int64_t j = 0; j < inner; ++j)
        dst[b * inner + j] = R<T>::finish(acc[size_t(j)], p.count);
    }
  });
}

} // namespace

bool rt::reducedAxes(KernelContext &ctx, const Tensor &x, std::vector<bool> &reduced, bool &noop) {
  int64_t rank = x.rank();
  bool axesInput = ctx.opset >= 18 || (ctx.opset >= 13 && ctx.node.opType == "ReduceSum");
  std::vector<int64_t> axes;
  noop = false;
  if (axesInput) {
    if (const Tensor *a = ctx.input(1)) {
      if (a->elem() != ElemType::Int64 || a->rank() > 1)
        return ctx.fail("axes must be a 1-D int64 tensor");
      axes.assign(a->data<int64_t>(), a->data<int64_t>() + a->numel());
    }
    if (axes.empty() && ctx.attrInt("noop_with_empty_axes", 0)) {
      noop = true;
      return true;
    }
  } else {
    axes = ctx.attrInts("axes");
  }
  reduced.assign(size_t(rank), axes.empty());
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n)
      return ctx.fail("axis " + std::to_string(a) + " is out of range for rank " +
                      std::to_string(rank));
    reduced[size_t(*n)] = true;
  }
  return true;
}

namespace {

template <template <typename> class R> bool reduceKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("expects an input");
  if (isHalf(x->elem()))
    return viaFloat(ctx, reduceKernel<R>);
  int64_t rank = x->rank();
  std::vector<bool> reduced;
  bool noop;
  if (!reducedAxes(ctx, *x, reduced, noop))
    return false;
  if (noop) {
    ctx.outputs[0] = *x;
    return true;
  }
  bool keep = ctx.attrInt("keepdims", 1) != 0;
  Shape outShape;
  for (int64_t i = 0; i < rank; ++i)
    if (!reduced[size_t(i)])
      outShape.push_back(x->dim(i));
    else if (keep)
      outShape.push_back(1);
  ctx.outputs[0] = Tensor(x->elem(), outShape);
  Plan p = makePlan(x->shape(), reduced);
  return TPCC_DISPATCH_NUMERIC(x->elem(),
                               ctx.fail("unsupported element type " + typeName(x->elem())),
                               (reduceTyped<R, T>(*x, ctx.outputs[0], p), true));
}

} // namespace

void rt::registerReduceKernels(KernelRegistry &r) {
  r.add("ReduceSum", reduceKernel<SumR>);
  r.add("ReduceMean", reduceKernel<MeanR>);
  r.add("ReduceMax", reduceKernel<MaxR>);
  r.add("ReduceMin", reduceKernel<MinR>);
  r.add("ReduceProd", reduceKernel<ProdR>);
  r.add("ReduceL1", reduceKernel<L1R>);
  r.add("ReduceL2", reduceKernel<L2R>);
  r.add("ReduceSumSquare", reduceKernel<SumSquareR>);
  r.add("ReduceLogSum", reduceKernel<LogSumR>);
  r.add("ReduceLogSumExp", reduceKernel<LogSumExpR>);
}
