//===- Indexing.cpp - Search, scatter/gather by index, and generators -----===//
//
// The ops real exporters put around a network's body: ArgMax/ArgMin, TopK,
// NonZero and CumSum (search and scan); GatherND, ScatterND, ScatterElements
// (and opset 9's Scatter) with their reductions; OneHot, ConstantOfShape,
// Trilu and Size; DepthToSpace and SpaceToDepth. Data is moved element by
// element whatever its type (bytes of elemSize), so every fixed-size type
// works; comparisons and sums dispatch on numeric types. Index inputs may be
// negative (counted from the end) where ONNX allows it; an index out of
// range is an error naming it. Checked by ONNX's node tests (conformance).
//
//===----------------------------------------------------------------------===//
#include "runtime/Kernel.h"
#include "runtime/KernelUtil.h"

#include <algorithm>
#include <cstring>
#include <numeric>

using namespace tpcc;
using namespace tpcc::rt;
using graph::ElemType;

namespace {

/// The integers of an index tensor (int32 or int64), or false.
bool indicesOf(const Tensor &t, std::vector<int64_t> &out) {
  out.resize(size_t(t.numel()));
  if (t.elem() == ElemType::Int64)
    std::copy(t.data<int64_t>(), t.data<int64_t>() + t.numel(), out.begin());
  else if (t.elem() == ElemType::Int32)
    std::copy(t.data<int32_t>(), t.data<int32_t>() + t.numel(), out.begin());
  else
    return false;
  return true;
}

/// A fixed-size element type (not strings, not undefined).
bool fixedSize(const Tensor &t) { return graph::elemSize(t.elem()) > 0; }

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

bool constantOfShapeKernel(KernelContext &ctx) {
  const Tensor *s = ctx.input(0);
  std::vector<int64_t> dims;
  if (!s || s->elem() != ElemType::Int64 || s->rank() > 1 || !indicesOf(*s, dims))
    return ctx.fail("ConstantOfShape's input must be a 1-D int64 shape");
  Tensor value(ElemType::Float, {1}, true);
  if (const graph::Tensor *v = ctx.attrTensor("value")) {
    value = Tensor::fromGraph(*v);
    if (value.numel() != 1 || !fixedSize(value))
      return ctx.fail("ConstantOfShape's value must be a one-element tensor");
  }
  int64_t n;
  if (!checkedNumel(dims, value.elem(), n))
    return ctx.fail("ConstantOfShape: the shape " + shapeStr(dims) + " is invalid or too large");
  Tensor out(value.elem(), dims);
  size_t es = graph::elemSize(value.elem());
  auto *o = static_cast<uint8_t *>(out.raw());
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(o + size_t(i) * es, value.raw(), es);
  ctx.outputs[0] = std::move(out);
  return true;
}

bool sizeKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("Size expects an input");
  ctx.outputs[0] = Tensor(ElemType::Int64, {});
  ctx.outputs[0].data<int64_t>()[0] = x->numel();
  return true;
}

template <typename T> double asDouble(const Tensor &t, int64_t i) { return double(t.data<T>()[i]); }

bool oneHotKernel(KernelContext &ctx) {
  const Tensor *ind = ctx.input(0), *depthT = ctx.input(1), *values = ctx.input(2);
  if (!ind || !depthT || !values || values->numel() != 2 || !fixedSize(*values) ||
      depthT->numel() != 1)
    return ctx.fail("OneHot needs indices, a scalar depth and two values");
  auto scalarOf = [&](const Tensor &t, int64_t i, double &v) {
    return TPCC_DISPATCH_NUMERIC(t.elem(), false, (v = asDouble<T>(t, i), true));
  };
  double depthD;
  if (!scalarOf(*depthT, 0, depthD))
    return ctx.fail("OneHot's depth must be numeric");
  int64_t depth = int64_t(depthD);
  if (depth < 1)
    return ctx.fail("OneHot's depth must be positive");
  int64_t rank = ind->rank() + 1;
  std::optional<int64_t> axis = normalizeAxis(ctx.attrInt("axis", -1), rank);
  if (!axis)
    return ctx.fail("OneHot's axis is out of range");
  Shape os = ind->shape();
  os.insert(os.begin() + *axis, depth);
  int64_t n;
  if (!checkedNumel(os, values->elem(), n))
    return ctx.fail("OneHot's output is too large");
  Tensor out(values->elem(), os);
  size_t es = graph::elemSize(values->elem());
  const auto *vs = static_cast<const uint8_t *>(values->raw());
  auto *o = static_cast<uint8_t *>(out.raw());
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(o + size_t(i) * es, vs, es); // off everywhere
  int64_t inner = 1;
  for (int64_t d = *axis + 1; d < rank; ++d)
    inner *= os[size_t(d)];
  for (int64_t i = 0; i < ind->numel(); ++i) {
    double v;
    if (!scalarOf(*ind, i, v))
      return ctx.fail("OneHot's indices must be numeric");
    int64_t k = int64_t(v);
    if (k < 0)
      k += depth;
    if (k < 0 || k >= depth)
      continue; // out of range: all off
    int64_t a = i / inner, b = i % inner;
    std::memcpy(o + size_t((a * depth + k) * inner + b) * es, vs + es, es);
  }
  ctx.outputs[0] = std::move(out);
  return true;
}

bool triluKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x || x->rank() < 2 || !fixedSize(*x))
    return ctx.fail("Trilu needs a tensor of rank 2 or more");
  int64_t k = 0;
  if (const Tensor *kt = ctx.input(1)) {
    std::vector<int64_t> kv;
    if (!indicesOf(*kt, kv) || kv.size() != 1)
      return ctx.fail("Trilu's k must be an int64 scalar");
    k = kv[0];
  }
  bool upper = ctx.attrInt("upper", 1) != 0;
  int64_t rows = x->dim(x->rank() - 2), cols = x->dim(x->rank() - 1);
  Tensor out(x->elem(), x->shape(), true);
  size_t es = graph::elemSize(x->elem());
  const auto *s = static_cast<const uint8_t *>(x->raw());
  auto *o = static_cast<uint8_t *>(out.raw());
  for (int64_t m = 0; m < x->numel() / std::max<int64_t>(1, rows * cols); ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        if (upper ? j - i >= k : j - i <= k) {
          size_t at = size_t((m * rows + i) * cols + j) * es;
          std::memcpy(o + at, s + at, es);
        }
  ctx.outputs[0] = std::move(out);
  return true;
}

//===----------------------------------------------------------------------===//
// Search and scan
//===----------------------------------------------------------------------===//

/// The (outer, n, inner) view of `s` around `axis`.
void around(const Shape &s, int64_t axis, int64_t &outer, int64_t &n, int64_t &inner) {
  outer = inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= s[size_t(d)];
  n = s[size_t(axis)];
  for (size_t d = size_t(axis) + 1; d < s.size(); ++d)
    inner *= s[d];
}

template <bool Max> bool argKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("expects an input");
  std::optional<int64_t> axis = normalizeAxis(ctx.attrInt("axis", 0), x->rank());
  if (!axis || x->rank() == 0)
    return ctx.fail("axis " + std::to_string(ctx.attrInt("axis", 0)) + " is out of range");
  bool keep = ctx.attrInt("keepdims", 1) != 0, last = ctx.attrInt("select_last_index", 0) != 0;
  int64_t outer, n, inner;
  around(x->shape(), *axis, outer, n, inner);
  if (n == 0)
    return ctx.fail("cannot take the index of an extreme along an empty axis");
  Shape os = x->shape();
  if (keep)
    os[size_t(*axis)] = 1;
  else
    os.erase(os.begin() + *axis);
  Tensor out(ElemType::Int64, os);
  int64_t *o = out.data<int64_t>();
  bool ok = TPCC_DISPATCH_NUMERIC(x->elem(), false, ([&] {
                                    const T *s = x->data<T>();
                                    for (int64_t a = 0; a < outer; ++a)
                                      for (int64_t b = 0; b < inner; ++b) {
                                        const T *p = s + a * n * inner + b;
                                        int64_t best = 0;
                                        for (int64_t i = 1; i < n; ++i) {
                                          T v = p[i * inner], w = p[best * inner];
                                          bool better = Max ? (last ? v >= w : v > w)
                                                            : (last ? v <= w : v < w);
                                          if (better)
                                            best = i;
                                        }
                                        o[a * inner + b] = best;
                                      }
                                    return true;
                                  }()));
  if (!ok)
    return ctx.fail("unsupported element type " + typeName(x->elem()));
  ctx.outputs[0] = std::move(out);
  return true;
}

bool topKKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *kt = ctx.input(1);
  std::vector<int64_t> kv;
  if (!kt && ctx.hasAttr("k")) // opset 1: K is an attribute
    kv = {ctx.attrInt("k", 0)};
  else if (!kt || !indicesOf(*kt, kv) || kv.size() != 1)
    return ctx.fail("TopK needs an input and a one-element int64 K");
  if (!x)
    return ctx.fail("TopK needs an input");
  std::optional<int64_t> axis = normalizeAxis(ctx.attrInt("axis", -1), x->rank());
  if (!axis || x->rank() == 0)
    return ctx.fail("TopK's axis is out of range");
  int64_t outer, n, inner, k = kv[0];
  around(x->shape(), *axis, outer, n, inner);
  if (k < 0 || k > n)
    return ctx.fail("TopK's K " + std::to_string(k) + " is not in [0, " + std::to_string(n) + "]");
  bool largest = ctx.attrInt("largest", 1) != 0;
  Shape os = x->shape();
  os[size_t(*axis)] = k;
  Tensor values(x->elem(), os), indices(ElemType::Int64, os);
  int64_t *io = indices.data<int64_t>();
  bool ok = TPCC_DISPATCH_NUMERIC(x->elem(), false, ([&] {
                                    const T *s = x->data<T>();
                                    T *vo = values.data<T>();
                                    std::vector<int64_t> idx(static_cast<size_t>(n));
                                    for (int64_t a = 0; a < outer; ++a)
                                      for (int64_t b = 0; b < inner; ++b) {
                                        const T *p = s + a * n * inner + b;
                                        std::iota(idx.begin(), idx.end(), 0);
                                        // Equal values: the lower index first.
                                        auto before = [&](int64_t i, int64_t j) {
                                          T u = p[i * inner], v = p[j * inner];
                                          if (u != v)
                                            return largest ? u > v : u < v;
                                          return i < j;
                                        };
                                        std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                                                          before);
                                        for (int64_t i = 0; i < k; ++i) {
                                          int64_t at = (a * k + i) * inner + b;
                                          io[at] = idx[size_t(i)];
                                          vo[at] = p[idx[size_t(i)] * inner];
                                        }
                                      }
                                    return true;
                                  }()));
  if (!ok)
    return ctx.fail("unsupported element type " + typeName(x->elem()));
  ctx.outputs[0] = std::move(values);
  if (ctx.outputs.size() > 1)
    ctx.outputs[1] = std::move(indices);
  return true;
}

bool nonZeroKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.fail("NonZero expects an input");
  std::vector<int64_t> hits;
  bool ok = true;
  if (x->elem() == ElemType::Bool) {
    for (int64_t i = 0; i < x->numel(); ++i)
      if (x->data<uint8_t>()[i])
        hits.push_back(i);
  } else {
    ok = TPCC_DISPATCH_NUMERIC(x->elem(), false, ([&] {
                                 const T *s = x->data<T>();
                                 for (int64_t i = 0; i < x->numel(); ++i)
                                   if (s[i] != T(0))
                                     hits.push_back(i);
                                 return true;
                               }()));
  }
  if (!ok)
    return ctx.fail("unsupported element type " + typeName(x->elem()));
  int64_t rank = x->rank(), count = int64_t(hits.size());
  Tensor out(ElemType::Int64, {rank, count});
  std::vector<int64_t> st = contiguousStrides(x->shape());
  for (int64_t j = 0; j < count; ++j)
    for (int64_t d = 0; d < rank; ++d)
      out.data<int64_t>()[d * count + j] = hits[size_t(j)] / st[size_t(d)] % x->dim(d);
  ctx.outputs[0] = std::move(out);
  return true;
}

bool cumSumKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *at = ctx.input(1);
  std::vector<int64_t> av;
  if (!x || !at || !indicesOf(*at, av) || av.size() != 1)
    return ctx.fail("CumSum needs an input and a scalar axis");
  std::optional<int64_t> axis = normalizeAxis(av[0], x->rank());
  if (!axis || x->rank() == 0)
    return ctx.fail("CumSum's axis is out of range");
  bool exclusive = ctx.attrInt("exclusive", 0) != 0, reverse = ctx.attrInt("reverse", 0) != 0;
  int64_t outer, n, inner;
  around(x->shape(), *axis, outer, n, inner);
  Tensor out(x->elem(), x->shape());
  bool ok = TPCC_DISPATCH_NUMERIC(x->elem(), false, ([&] {
                                    const T *s = x->data<T>();
                                    T *o = out.data<T>();
                                    for (int64_t a = 0; a < outer; ++a)
                                      for (int64_t b = 0; b < inner; ++b) {
                                        T sum = T(0);
                                        for (int64_t j = 0; j < n; ++j) {
                                          int64_t i = reverse ? n - 1 - j : j;
                                          int64_t e = (a * n + i) * inner + b;
                                          if (exclusive) {
                                            o[e] = sum;
                                            sum = T(sum + s[e]);
                                          } else {
                                            sum = T(sum + s[e]);
                                            o[e] = sum;
                                          }
                                        }
                                      }
                                    return true;
                                  }()));
  if (!ok)
    return ctx.fail("unsupported element type " + typeName(x->elem()));
  ctx.outputs[0] = std::move(out);
  return true;
}

//===----------------------------------------------------------------------===//
// Gather and scatter by index
//===----------------------------------------------------------------------===//

enum class Reduction { None, Add, Mul, Max, Min };

bool reductionOf(KernelContext &ctx, Reduction &r) {
  std::string s = ctx.attrString("reduction", "none");
  if (s == "none")
    r = Reduction::None;
  else if (s == "add")
    r = Reduction::Add;
  else if (s == "mul")
    r = Reduction::Mul;
  else if (s == "max")
    r = Reduction::Max;
  else if (s == "min")
    r = Reduction::Min;
  else
    return ctx.fail("unknown reduction `" + s + "`");
  return true;
}

/// Writes element `u` of `updates` onto element `d` of `out` (as `r` says).
struct Scatterer {
  Tensor &out;
  const Tensor &updates;
  Reduction r;
  size_t es;
  bool apply(int64_t d, int64_t u) {
    if (r == Reduction::None) {
      std::memcpy(static_cast<uint8_t *>(out.raw()) + size_t(d) * es,
                  static_cast<const uint8_t *>(updates.raw()) + size_t(u) * es, es);
      return true;
    }
    return TPCC_DISPATCH_NUMERIC(out.elem(), false, ([&] {
                                   T &o = out.data<T>()[d];
                                   T v = updates.data<T>()[u];
                                   switch (r) {
                                   case Reduction::Add:
                                     o = T(o + v);
                                     break;
                                   case Reduction::Mul:
                                     o = T(o * v);
                                     break;
                                   case Reduction::Max:
                                     o = std::max(o, v);
                                     break;
                                   default:
                                     o = std::min(o, v);
                                     break;
                                   }
                                   return true;
                                 }()));
  }
};

/// The element offset in `data` of index tuple `t` (`last` indices from
/// `idx`, for the dimensions from `first` on; `st`: data's strides), added to
/// `off`; false (with `ctx.fail` naming `op`) when an index is out of range.
bool tupleOffset(KernelContext &ctx, const char *op, const Tensor &data,
                 const std::vector<int64_t> &idx, int64_t t, int64_t last, int64_t first,
                 const std::vector<int64_t> &st, int64_t &off) {
  for (int64_t k = 0; k < last; ++k) {
    int64_t dim = data.dim(first + k), i = idx[size_t(t * last + k)];
    if (i < -dim || i >= dim)
      return ctx.fail(std::string(op) + ": index " + std::to_string(i) +
                      " is out of range for a dimension of " + std::to_string(dim));
    off += (i < 0 ? i + dim : i) * st[size_t(first + k)];
  }
  return true;
}

bool gatherNDKernel(KernelContext &ctx) {
  const Tensor *data = ctx.input(0), *it = ctx.input(1);
  std::vector<int64_t> idx;
  if (!data || !it || !indicesOf(*it, idx) || it->rank() < 1 || !fixedSize(*data))
    return ctx.fail("GatherND needs data and int64 indices of rank 1 or more");
  int64_t b = ctx.attrInt("batch_dims", 0), r = data->rank(), q = it->rank();
  int64_t last = it->dim(q - 1);
  if (b < 0 || b >= std::min(r, q) || last < 1 || last > r - b)
    return ctx.fail("GatherND: batch_dims or the indices' last dimension is out of range");
  for (int64_t d = 0; d < b; ++d)
    if (data->dim(d) != it->dim(d))
      return ctx.fail("GatherND: the batch dimensions of data and indices differ");
  Shape os(it->shape().begin(), it->shape().end() - 1);
  for (int64_t d = b + last; d < r; ++d)
    os.push_back(data->dim(d));
  int64_t batches = 1, slice = 1;
  for (int64_t d = 0; d < b; ++d)
    batches *= data->dim(d);
  for (int64_t d = b + last; d < r; ++d)
    slice *= data->dim(d);
  std::vector<int64_t> st = contiguousStrides(data->shape());
  int64_t perBatchData = b > 0 ? st[size_t(b - 1)] : data->numel();
  int64_t tuples = it->numel() / last, perBatch = tuples / std::max<int64_t>(1, batches);
  Tensor out(data->elem(), os);
  size_t es = graph::elemSize(data->elem());
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (t / perBatch) * perBatchData;
    if (!tupleOffset(ctx, "GatherND", *data, idx, t, last, b, st, off))
      return false;
    std::memcpy(static_cast<uint8_t *>(out.raw()) + size_t(t * slice) * es,
                static_cast<const uint8_t *>(data->raw()) + size_t(off) * es, size_t(slice) * es);
  }
  ctx.outputs[0] = std::move(out);
  return true;
}

bool scatterNDKernel(KernelContext &ctx) {
  const Tensor *data = ctx.input(0), *it = ctx.input(1), *upd = ctx.input(2);
  std::vector<int64_t> idx;
  Reduction red;
  if (!reductionOf(ctx, red))
    return false;
  if (!data || !it || !upd || !indicesOf(*it, idx) || it->rank() < 1 ||
      upd->elem() != data->elem() || !fixedSize(*data))
    return ctx.fail("ScatterND needs data, int64 indices and updates of the data's type");
  int64_t r = data->rank(), q = it->rank(), last = it->dim(q - 1);
  if (last < 1 || last > r)
    return ctx.fail("ScatterND: the indices' last dimension is out of range");
  int64_t slice = 1;
  for (int64_t d = last; d < r; ++d)
    slice *= data->dim(d);
  int64_t tuples = it->numel() / last;
  if (upd->numel() != tuples * slice)
    return ctx.fail("ScatterND: updates do not have the shape the indices ask for");
  std::vector<int64_t> st = contiguousStrides(data->shape());
  Tensor out(data->elem(), data->shape());
  std::memcpy(out.raw(), data->raw(), data->bytes());
  Scatterer s{out, *upd, red, graph::elemSize(data->elem())};
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    if (!tupleOffset(ctx, "ScatterND", *data, idx, t, last, 0, st, off))
      return false;
    for (int64_t e = 0; e < slice; ++e)
      if (!s.apply(off + e, t * slice + e))
        return ctx.fail("ScatterND: unsupported element type " + typeName(data->elem()));
  }
  ctx.outputs[0] = std::move(out);
  return true;
}

bool scatterElementsKernel(KernelContext &ctx) {
  const Tensor *data = ctx.input(0), *it = ctx.input(1), *upd = ctx.input(2);
  std::vector<int64_t> idx;
  Reduction red;
  if (!reductionOf(ctx, red))
    return false;
  if (!data || !it || !upd || !indicesOf(*it, idx) || upd->shape() != it->shape() ||
      upd->elem() != data->elem() || it->rank() != data->rank() || !fixedSize(*data))
    return ctx.fail("ScatterElements needs data, indices of its rank, and updates shaped as the "
                    "indices");
  std::optional<int64_t> axis = normalizeAxis(ctx.attrInt("axis", 0), data->rank());
  if (!axis || data->rank() == 0)
    return ctx.fail("ScatterElements' axis is out of range");
  std::vector<int64_t> st = contiguousStrides(data->shape()), ist = contiguousStrides(it->shape());
  Tensor out(data->elem(), data->shape());
  std::memcpy(out.raw(), data->raw(), data->bytes());
  Scatterer s{out, *upd, red, graph::elemSize(data->elem())};
  int64_t dim = data->dim(*axis);
  for (int64_t e = 0; e < it->numel(); ++e) {
    int64_t off = 0;
    for (int64_t d = 0; d < it->rank(); ++d) {
      int64_t c = e / ist[size_t(d)] % it->dim(d);
      if (d == *axis) {
        int64_t i = idx[size_t(e)];
        if (i < -dim || i >= dim)
          return ctx.fail("ScatterElements: index " + std::to_string(i) +
                          " is out of range for a dimension of " + std::to_string(dim));
        c = i < 0 ? i + dim : i;
      } else if (c >= data->dim(d)) {
        return ctx.fail("ScatterElements: the indices are larger than the data");
      }
      off += c * st[size_t(d)];
    }
    if (!s.apply(off, e))
      return ctx.fail("ScatterElements: unsupported element type " + typeName(data->elem()));
  }
  ctx.outputs[0] = std::move(out);
  return true;
}

//===----------------------------------------------------------------------===//
// DepthToSpace, SpaceToDepth
//===----------------------------------------------------------------------===//

/// Moves blocks between depth and space: `toSpace` is DepthToSpace (`crd`:
/// its CRD mode), else SpaceToDepth. Both are a reshape to 6-D, a
/// transpose and a reshape back: one strided copy.
bool blockMove(KernelContext &ctx, bool toSpace) {
  const Tensor *x = ctx.input(0);
  int64_t bs = ctx.attrInt("blocksize", 0);
  if (!x || x->rank() != 4 || bs < 1 || !fixedSize(*x))
    return ctx.fail("expects a 4-D input and a positive blocksize");
  int64_t n = x->dim(0), c = x->dim(1), h = x->dim(2), w = x->dim(3);
  bool crd = ctx.attrString("mode", "DCR") == "CRD";
  Shape os;
  std::vector<int64_t> strides; // of the input, per dimension of the 6-D output view
  if (toSpace) {
    if (c % (bs * bs))
      return ctx.fail("DepthToSpace: the channels are not a multiple of blocksize²");
    int64_t oc = c / (bs * bs);
    os = {n, oc, h * bs, w * bs};
    // Output (n, oc, h, b1, w, b2) reads channel (DCR) b1·bs·oc + b2·oc + oc_i,
    // (CRD) oc_i·bs² + b1·bs + b2, at (h, w).
    int64_t cs = h * w;
    strides = {c * cs, crd ? bs * bs * cs : cs, w, crd ? bs * cs : bs * oc * cs,
               1,      crd ? cs : oc * cs};
  } else {
    if (h % bs || w % bs)
      return ctx.fail("SpaceToDepth: the height and width are not multiples of blocksize");
    os = {n, c * bs * bs, h / bs, w / bs};
    // Output (n, b1, b2, c, oh, ow) reads (c, oh·bs + b1, ow·bs + b2).
    strides = {c * h * w, w, 1, h * w, bs * w, bs};
  }
  Shape view = toSpace ? Shape{n, os[1], h, bs, w, bs} : Shape{n, bs, bs, c, h / bs, w / bs};
  Tensor out(x->elem(), view);
  if (!stridedCopy(*x, out, 0, strides))
    return ctx.fail("cannot move the blocks");
  ctx.outputs[0] = out.reshaped(os);
  return true;
}

bool depthToSpaceKernel(KernelContext &ctx) { return blockMove(ctx, true); }
bool spaceToDepthKernel(KernelContext &ctx) { return blockMove(ctx, false); }

} // namespace

void rt::registerIndexingKernels(KernelRegistry &r) {
  r.add("ConstantOfShape", constantOfShapeKernel);
  r.add("Size", sizeKernel);
  r.add("OneHot", oneHotKernel);
  r.add("Trilu", triluKernel);
  r.add("ArgMax", argKernel<true>);
  r.add("ArgMin", argKernel<false>);
  r.add("TopK", topKKernel);
  r.add("NonZero", nonZeroKernel);
  r.add("CumSum", cumSumKernel);
  r.add("GatherND", gatherNDKernel);
  r.add("ScatterND", scatterNDKernel);
  r.add("ScatterElements", scatterElementsKernel);
  r.add("Scatter", scatterElementsKernel);
  r.add("DepthToSpace", depthToSpaceKernel);
  r.add("SpaceToDepth", spaceToDepthKernel);
}
