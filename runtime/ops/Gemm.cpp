//===- Gemm.cpp - Gemm and MatMul through oneDNN ----------------------------===//
//
// Gemm (transA, transB, alpha, beta, C broadcast to M x N) and MatMul (numpy
// semantics: 1-D operands promoted, leading batch dimensions broadcast).
// Float products run as oneDNN matmul primitives, cached per node and shape:
// they are the fully connected layers and attention products of a model, and
// oneDNN's JIT GEMM is much faster than a loop. Transposed operands are
// described by strides, so nothing is copied. A constant B (a layer's
// weights) is reordered once into the layout the primitive asks for, as
// ONNX Runtime prepacks its weights: a primitive given plain weights packs
// them again on every run, which at a few rows costs more than the product
// (the turn detector's 49,155-way output layer). Other element types
// (double, integers) take a plain loop: no model spends its time there.
//
//===----------------------------------------------------------------------===//
#include "runtime/Fusion.h"
#include "runtime/KernelUtil.h"
#include "runtime/ops/Dnnl.h"
#include "runtime/ops/MatmulShape.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::dnnl_util;

namespace {

/// A cached matmul: `batch` x (M x K) * (K x N), operands described by
/// `src`, `wei`, `bias` and `dst`.
struct MatmulPlan {
  dnnl::matmul prim;
  dnnl::memory src, wei, bias, dst; ///< handles reset before each run
  /// With packed weights: the primitive's weights layout and a reorder
  /// into it from the plain (`wei`) one.
  std::optional<dnnl::reorder> pack;
  dnnl::memory::desc packedDesc;
};

/// Constant weights in a primitive's layout, and the buffer they came from.
struct PackedWeights {
  dnnl::memory::desc desc;
  const void *from = nullptr;
  dnnl::memory mem;
};

struct MatmulState : NodeState {
  std::map<Shape, MatmulPlan> plans;
  std::vector<PackedWeights> packed;
  /// matmulDerivedWeights: the float weights, and the buffer they came from.
  Tensor derived;
  const void *derivedFrom = nullptr;
};

/// 2-D (batch == 0) or 3-D matmul descriptor strides for a row-major (or,
/// when `trans`, column-major) rows x cols matrix.
dnnl::memory::desc matrixDesc(int64_t batch, int64_t rows, int64_t cols, bool trans) {
  dnnl::memory::dims rc = trans ? dnnl::memory::dims{1, rows} : dnnl::memory::dims{cols, 1};
  if (batch == 0)
    return dnnl::memory::desc({rows, cols}, dt::f32, rc);
  return dnnl::memory::desc({batch, rows, cols}, dt::f32, {rows * cols, rc[0], rc[1]});
}

/// Builds a matmul plan. `biasDims` empty for none; `sum` adds the
/// product to what the destination holds; `packB`: B is constant, so the
/// primitive may ask for its own weights layout.
MatmulPlan buildMatmul(int64_t batch, int64_t m, int64_t k, int64_t n, bool transA, bool transB,
                       float alpha, const dnnl::memory::dims &biasDims, bool sum = false,
                       bool packB = false) {
  const dnnl::engine &eng = engine();
  dnnl::memory::desc a = matrixDesc(batch, m, k, transA), b = matrixDesc(batch, k, n, transB);
  dnnl::memory::desc c = matrixDesc(batch, m, n, false);
  dnnl::memory::desc plainB = b;
  if (packB)
    b = dnnl::memory::desc(b.dims(), dt::f32, dnnl::memory::format_tag::any);
  dnnl::primitive_attr attr;
  if (alpha != 1.f)
    attr.set_output_scales(0, {alpha});
  if (sum) {
    dnnl::post_ops ops;
    ops.append_sum(1.f);
    attr.set_post_ops(ops);
  }
  MatmulPlan p;
  dnnl::matmul::primitive_desc pd;
  if (!biasDims.empty()) {
    dnnl::memory::desc bias(biasDims, dt::f32,
                            rowMajorStrides(Shape(biasDims.begin(), biasDims.end())));
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, bias, c), attr, eng);
    p.bias = dnnl::memory(bias, eng, nullptr);
  } else {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, eng);
  }
  p.prim = dnnl::matmul(pd);
  p.src = dnnl::memory(a, eng, nullptr);
  p.wei = dnnl::memory(plainB, eng, nullptr);
  p.dst = dnnl::memory(c, eng, nullptr);
  if (packB && pd.weights_desc() != plainB) {
    p.packedDesc = pd.weights_desc();
    p.pack = dnnl::reorder(dnnl::reorder::primitive_desc(eng, plainB, eng, p.packedDesc));
  }
  return p;
}

/// Runs `p` on A `a`, B `b` (or, for a plan with packed weights, the copy of
/// `b` in the primitive's layout, made once in `st`), the bias and C `c`.
void runMatmul(MatmulPlan &p, const void *a, const void *b, const void *bias, void *c,
               MatmulState *st = nullptr) {
  p.src.set_data_handle(const_cast<void *>(a));
  p.wei.set_data_handle(const_cast<void *>(b));
  dnnl::memory wei = p.wei;
  if (p.pack && st) {
    auto it = std::find_if(st->packed.begin(), st->packed.end(), [&](const PackedWeights &w) {
      return w.from == b && w.desc == p.packedDesc;
    });
    if (it == st->packed.end()) {
      if (st->packed.size() >= 4)
        st->packed.erase(st->packed.begin());
      PackedWeights w{p.packedDesc, b, dnnl::memory(p.packedDesc, engine())};
      p.pack->execute(stream(), p.wei, w.mem);
      st->packed.push_back(std::move(w));
      it = st->packed.end() - 1;
    }
    wei = it->mem;
  }
  p.dst.set_data_handle(c);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, p.src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, p.dst}};
  if (bias) {
    p.bias.set_data_handle(const_cast<void *>(bias));
    args[DNNL_ARG_BIAS] = p.bias;
  }
  p.prim.execute(stream(), args);
}

MatmulState &stateOf(KernelContext &ctx) {
  if (!ctx.state)
    ctx.state = std::make_unique<MatmulState>();
  return static_cast<MatmulState &>(*ctx.state);
}

MatmulPlan &findPlan(KernelContext &ctx, const Shape &key,
                     const std::function<MatmulPlan()> &build) {
  auto &plans = stateOf(ctx).plans;
  auto it = plans.find(key);
  if (it != plans.end())
    return it->second;
  if (plans.size() >= 16)
    plans.clear();
  return plans.emplace(key, build()).first->second;
}

//===----------------------------------------------------------------------===//
// Gemm
//===----------------------------------------------------------------------===//

/// Y = alpha * A' * B' + beta * C for non-float types.
template <typename T>
void refGemm(const Tensor &a, const Tensor &b, const Tensor *c, Tensor &y, bool ta, bool tb,
             double alpha, double beta, int64_t m, int64_t k, int64_t n) {
  const T *pa = a.data<T>(), *pb = b.data<T>();
  T *py = y.data<T>();
  std::optional<BroadcastIndexer> ci;
  if (c)
    ci.emplace(c->shape(), Shape{m, n});
  parallelFor(m, k * n, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (int64_t l = 0; l < k; ++l)
          acc += pa[ta ? l * m + i : i * k + l] * pb[tb ? j * k + l : l * n + j];
        double v = alpha * double(acc);
        if (c)
          v += beta * double(c->data<T>()[ci->offset(i * n + j)]);
        py[i * n + j] = T(v);
      }
  });
}

bool gemmKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1), *c = ctx.input(2);
  if (!a || !b)
    return ctx.fail("Gemm needs inputs A and B");
  if (a->rank() != 2 || b->rank() != 2)
    return ctx.fail("Gemm needs 2-D A and B, not " + shapeStr(a->shape()) + " and " +
                    shapeStr(b->shape()));
  if (a->elem() != b->elem() || (c && c->elem() != a->elem()))
    return ctx.fail("Gemm operands differ in type");
  bool ta = ctx.attrInt("transA", 0) != 0, tb = ctx.attrInt("transB", 0) != 0;
  float alpha = ctx.attrFloat("alpha", 1.f), beta = ctx.attrFloat("beta", 1.f);
  int64_t m = ta ? a->dim(1) : a->dim(0), k = ta ? a->dim(0) : a->dim(1);
  int64_t kb = tb ? b->dim(1) : b->dim(0), n = tb ? b->dim(0) : b->dim(1);
  if (k != kb)
    return ctx.fail("Gemm inner dimensions differ: A " + shapeStr(a->shape()) + ", B " +
                    shapeStr(b->shape()));
  if (c && (c->rank() > 2 || broadcastShapes(c->shape(), {m, n}) != Shape{m, n}))
    return ctx.fail("Gemm C " + shapeStr(c->shape()) + " does not broadcast to " +
                    shapeStr({m, n}));
  if (c && beta == 0.f)
    c = nullptr;
  ElemType et = a->elem();
  ctx.outputs[0] = Tensor(et, {m, n});
  Tensor &y = ctx.outputs[0];
  if (y.numel() == 0)
    return true;
  if (et != ElemType::Float || k == 0 || alpha == 0.f) {
    bool ok = TPCC_DISPATCH_NUMERIC(et, false,
                                    (refGemm<T>(*a, *b, c, y, ta, tb, alpha, beta, m, k, n), true));
    return ok ? true : ctx.fail("Gemm does not support " + typeName(et));
  }

  // A row vector C becomes the matmul's bias. oneDNN scales the bias by
  // the output scale too (alpha * (A * B + bias)), so a copy scaled by
  // beta / alpha stands in when that is not 1. Any other C (oneDNN has only
  // a reference kernel for other bias broadcasts) is written to Y as
  // beta * C first and accumulated into by a sum post-op.
  Shape cs = c ? c->shape() : Shape{};
  while (cs.size() < 2)
    cs.insert(cs.begin(), 1);
  bool rowBias = c && cs[0] == 1 && cs[1] == n && n > 1;
  bool sum = c && !rowBias;
  Tensor scaled;
  const void *bias = nullptr;
  if (rowBias) {
    bias = c->raw();
    float scale = beta / alpha;
    if (scale != 1.f) {
      scaled = Tensor(ElemType::Float, cs);
      const float *src = c->data<float>();
      float *dst = scaled.data<float>();
      for (int64_t i = 0; i < scaled.numel(); ++i)
        dst[i] = scale * src[i];
      bias = scaled.raw();
    }
  } else if (sum) {
    BroadcastIndexer ci(c->shape(), {m, n});
    const float *src = c->data<float>();
    float *dst = y.data<float>();
    parallelFor(m, n, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0 * n; i < r1 * n; ++i)
        dst[i] = beta * src[ci.offset(i)];
    });
  }
  int threads = threadsFor(m * k * n);
  ThreadScope scope(threads);
  bool packB = ctx.constantInput(1);
  Shape key = {m, k, n, ta, tb, rowBias, sum, threads, packB};
  try {
    MatmulPlan &p = findPlan(ctx, key, [&] {
      return buildMatmul(0, m, k, n, ta, tb, alpha,
                         rowBias ? dnnl::memory::dims{1, n} : dnnl::memory::dims{}, sum, packB);
    });
    runMatmul(p, a->raw(), b->raw(), bias, y.raw(), &stateOf(ctx));
    stream().wait();
  } catch (const dnnl::error &) {
    // No oneDNN implementation for this bias broadcast: the plain loop.
    ctx.state.reset();
    refGemm<float>(*a, *b, c, y, ta, tb, alpha, beta, m, k, n);
  } catch (const std::exception &e) {
    ctx.state.reset();
    return ctx.fail(std::string("Gemm: ") + e.what());
  }
  return true;
}

//===----------------------------------------------------------------------===//
// MatMul
//===----------------------------------------------------------------------===//

template <typename T>
void refMatmul(const Tensor &a, const Tensor &b, Tensor &y, const MatmulShape &s) {
  BroadcastIndexer ai(s.aBatch, s.batch), bi(s.bBatch, s.batch);
  int64_t m = s.m, k = s.k, n = s.n;
  parallelFor(numElements(s.batch) * m, k * n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t bt = r / m, i = r % m;
      const T *pa = a.data<T>() + ai.offset(bt) * m * k + i * k;
      const T *pb = b.data<T>() + bi.offset(bt) * k * n;
      T *py = y.data<T>() + r * n;
      for (int64_t j = 0; j < n; ++j)
        py[j] = 0;
      for (int64_t l = 0; l < k; ++l)
        for (int64_t j = 0; j < n; ++j)
          py[j] += pa[l] * pb[l * n + j];
    }
  });
}

/// y = a * b (MatMul's semantics), plus `bias` (float, one value per column)
/// when given; `ctx` holds the node's plans.
bool matmulOf(KernelContext &ctx, const Tensor *a, const Tensor *b, Tensor &y,
              const Tensor *bias = nullptr) {
  if (a->elem() != b->elem())
    return ctx.fail("MatMul operands differ in type");
  MatmulShape s;
  if (!matmulShape(ctx, "MatMul", a->shape(), b->shape(), s))
    return false;
  ElemType et = a->elem();
  y = Tensor(et, s.out, /*zero=*/s.k == 0);
  // The bias as an Add after the product computes it: y + bias, rounded.
  auto addBias = [&] {
    float *py = y.data<float>();
    const float *pb = bias->data<float>();
    for (int64_t i = 0; i < y.numel(); ++i)
      py[i] = py[i] + pb[i % s.n];
  };
  if (y.numel() == 0)
    return true;
  if (s.k == 0 || et != ElemType::Float) {
    bool ok = s.k == 0 || TPCC_DISPATCH_NUMERIC(et, false, (refMatmul<T>(*a, *b, y, s), true));
    if (ok && bias)
      addBias();
    return ok ? true : ctx.fail("MatMul does not support " + typeName(et));
  }

  int64_t nb = numElements(s.batch), nbA = numElements(s.aBatch), nbB = numElements(s.bBatch);
  Shape key = a->shape();
  key.push_back(-1);
  key.insert(key.end(), b->shape().begin(), b->shape().end());
  int threads = threadsFor(nb * s.m * s.k * s.n);
  ThreadScope scope(threads);
  key.push_back(threads);
  bool packB = nbB == 1 && ctx.constantInput(1);
  key.push_back(packB);
  key.push_back(bias != nullptr);
  try {
    if (nbB == 1) {
      // B is one matrix: fold A's batch into its rows; the bias is the
      // primitive's (added to each finished sum).
      MatmulPlan &p = findPlan(ctx, key, [&] {
        return buildMatmul(0, nbA * s.m, s.k, s.n, false, false, 1.f,
                           bias ? dnnl::memory::dims{1, s.n} : dnnl::memory::dims{}, false, packB);
      });
      runMatmul(p, a->raw(), b->raw(), bias ? bias->raw() : nullptr, y.raw(), &stateOf(ctx));
      bias = nullptr;
    } else if (nbA == nb && nbB == nb && BroadcastIndexer(s.aBatch, s.batch).identity &&
               BroadcastIndexer(s.bBatch, s.batch).identity) {
      MatmulPlan &p =
          findPlan(ctx, key, [&] { return buildMatmul(nb, s.m, s.k, s.n, false, false, 1.f, {}); });
      runMatmul(p, a->raw(), b->raw(), nullptr, y.raw());
    } else {
      // General broadcasting: one 2-D product per output batch.
      MatmulPlan &p =
          findPlan(ctx, key, [&] { return buildMatmul(0, s.m, s.k, s.n, false, false, 1.f, {}); });
      BroadcastIndexer ai(s.aBatch, s.batch), bi(s.bBatch, s.batch);
      for (int64_t i = 0; i < nb; ++i)
        runMatmul(p, a->data<float>() + ai.offset(i) * s.m * s.k,
                  b->data<float>() + bi.offset(i) * s.k * s.n, nullptr,
                  y.data<float>() + i * s.m * s.n);
    }
    stream().wait();
    if (bias)
      addBias();
  } catch (const dnnl::error &e) {
    ctx.state.reset();
    return ctx.fail(std::string("MatMul: oneDNN failed: ") + e.what());
  } catch (const std::exception &e) {
    ctx.state.reset();
    return ctx.fail(std::string("MatMul: ") + e.what());
  }
  return true;
}

bool matmulKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1);
  if (!a || !b)
    return ctx.fail("MatMul needs two inputs");
  return matmulOf(ctx, a, b, ctx.outputs[0]);
}

} // namespace

bool rt::matmulDerivedWeights(KernelContext &ctx, const Tensor *a, const void *from,
                              const std::function<bool(Tensor &)> &make, Tensor &y,
                              const Tensor *bias) {
  MatmulState &st = stateOf(ctx);
  if (!ctx.constantInput(1) || st.derivedFrom != from || st.derived.numel() == 0) {
    Tensor w;
    if (!make(w))
      return false;
    st.derived = std::move(w);
    st.derivedFrom = from;
  }
  // (A copy of the handle: matmulOf may reset the state on a failure.)
  Tensor w = st.derived;
  return matmulOf(ctx, a, &w, y, bias);
}

bool rt::matmulBiasKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1);
  if (!a || !b)
    return ctx.fail("MatMul needs two inputs");
  const Tensor *bias = ctx.operands.empty() ? nullptr : ctx.operands[0];
  if (!bias || bias->elem() != ElemType::Float || a->elem() != ElemType::Float || b->rank() < 1 ||
      bias->numel() != b->shape().back())
    return ctx.fail("the bias after this MatMul does not match its columns");
  return matmulOf(ctx, a, b, ctx.outputs[0], bias);
}

bool rt::matmulRowsKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1);
  if (!a || !b)
    return ctx.fail("MatMul needs two inputs");
  if (a->rank() < 2 || b->rank() < 2)
    return ctx.fail("MatMul before a Gather of its rows needs matrices, not " +
                    shapeStr(a->shape()) + " and " + shapeStr(b->shape()));
  // The rows of A the Gather keeps, in its order.
  int64_t r = a->rank(), m = a->dim(r - 2), k = a->dim(r - 1);
  llvm::ArrayRef<float> idx = ctx.fusedParams.drop_front();
  std::vector<int64_t> rows;
  for (float f : idx) {
    auto i = int64_t(f);
    if (i < -m || i >= m)
      return ctx.fail("the Gather after this MatMul reads row " + std::to_string(i) +
                      ", out of range for " + std::to_string(m) + " rows");
    rows.push_back(i < 0 ? i + m : i);
  }
  Shape as = a->shape();
  as[size_t(r - 2)] = int64_t(rows.size());
  Tensor sel(a->elem(), as);
  size_t row = size_t(k) * graph::elemSize(a->elem());
  int64_t outer = m == 0 ? 0 : a->numel() / (m * k);
  const auto *src = static_cast<const uint8_t *>(a->raw());
  auto *dst = static_cast<uint8_t *>(sel.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < rows.size(); ++j)
      std::memcpy(dst + (size_t(o) * rows.size() + j) * row, src + (size_t(o * m + rows[j])) * row,
                  row);
  Tensor y;
  if (!matmulOf(ctx, &sel, b, y))
    return false;
  if (ctx.fusedParams[0] == 0.f) { // a scalar index drops the axis
    Shape ys = y.shape();
    ys.erase(ys.end() - 2);
    y = y.reshaped(ys);
  }
  ctx.outputs[0] = std::move(y);
  return true;
}

bool rt::matmulShape(KernelContext &ctx, llvm::StringRef op, const Shape &a, const Shape &b,
                     MatmulShape &s) {
  if (a.empty() || b.empty())
    return ctx.fail(op.str() + " operands must not be scalars");
  Shape as = a, bs = b;
  bool dropM = as.size() == 1, dropN = bs.size() == 1;
  if (dropM)
    as.insert(as.begin(), 1);
  if (dropN)
    bs.push_back(1);
  s.m = as[as.size() - 2];
  s.k = as.back();
  s.n = bs.back();
  if (bs[bs.size() - 2] != s.k)
    return ctx.fail(op.str() + " inner dimensions differ: " + shapeStr(a) + " and " + shapeStr(b));
  s.aBatch.assign(as.begin(), as.end() - 2);
  s.bBatch.assign(bs.begin(), bs.end() - 2);
  std::optional<Shape> batch = broadcastShapes(s.aBatch, s.bBatch);
  if (!batch)
    return ctx.fail(op.str() + " batch dimensions do not broadcast: " + shapeStr(a) + " and " +
                    shapeStr(b));
  s.batch = *batch;
  s.out = s.batch;
  if (!dropM)
    s.out.push_back(s.m);
  if (!dropN)
    s.out.push_back(s.n);
  return true;
}

void rt::registerGemmKernels(KernelRegistry &r) {
  r.add("Gemm", gemmKernel);
  r.add("MatMul", matmulKernel);
}
