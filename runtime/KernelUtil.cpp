//===- KernelUtil.cpp - Helpers shared by the kernels -----------------------===//
#include "runtime/KernelUtil.h"

#include <omp.h>

using namespace tpcc;
using namespace tpcc::rt;

int rt::ompThreads() { return omp_get_num_threads(); }
int rt::ompThread() { return omp_get_thread_num(); }

int rt::threadsFor(int64_t work) { return work < kParallelWork ? 1 : omp_get_max_threads(); }

rt::ThreadScope::ThreadScope(int threads) : saved(omp_get_max_threads()) {
  if (threads != saved)
    omp_set_num_threads(threads);
}
rt::ThreadScope::~ThreadScope() {
  if (omp_get_max_threads() != saved)
    omp_set_num_threads(saved);
}

std::optional<Shape> rt::broadcastShapes(const Shape &a, const Shape &b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      return std::nullopt;
  }
  return out;
}

BroadcastIndexer::BroadcastIndexer(const Shape &in, const Shape &out) : outDims(out) {
  identity = in == out;
  scalar = numElements(in) == 1;
  strides.assign(out.size(), 0);
  int64_t s = 1;
  size_t off = out.size() - in.size();
  for (size_t i = in.size(); i-- > 0;) {
    strides[i + off] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
}

int64_t BroadcastIndexer::offset(int64_t i) const {
  if (identity)
    return i;
  if (scalar)
    return 0;
  int64_t o = 0;
  for (size_t d = outDims.size(); d-- > 0;) {
    int64_t q = i / outDims[d];
    o += (i - q * outDims[d]) * strides[d];
    i = q;
  }
  return o;
}

std::optional<int64_t> rt::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

bool rt::isHalf(ElemType e) { return e == ElemType::Float16 || e == ElemType::BFloat16; }

Tensor rt::widenToFloat(const Tensor &t) {
  Tensor r(ElemType::Float, t.shape());
  const uint16_t *s = t.data<uint16_t>();
  float *d = r.data<float>();
  bool bf = t.elem() == ElemType::BFloat16;
  for (int64_t i = 0; i < t.numel(); ++i)
    d[i] = bf ? bfloat16ToFloat(s[i]) : halfToFloat(s[i]);
  return r;
}

static Tensor narrow(const Tensor &t, ElemType e) {
  Tensor r(e, t.shape());
  const float *s = t.data<float>();
  uint16_t *d = r.data<uint16_t>();
  bool bf = e == ElemType::BFloat16;
  for (int64_t i = 0; i < t.numel(); ++i)
    d[i] = bf ? floatToBfloat16(s[i]) : floatToHalf(s[i]);
  return r;
}

bool rt::viaFloat(KernelContext &ctx, KernelFn fn, size_t typeInput) {
  KernelContext sub(ctx.node, ctx.opset, ctx.state);
  std::vector<Tensor> wide(ctx.inputs.size());
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor *t = ctx.input(i);
    if (t && isHalf(t->elem())) {
      wide[i] = widenToFloat(*t);
      t = &wide[i];
    }
    sub.inputs.push_back(t);
  }
  sub.outputs.resize(ctx.outputs.size());
  if (!fn(sub))
    return ctx.fail(sub.error);
  const Tensor *ti = ctx.input(typeInput);
  for (size_t i = 0; i < sub.outputs.size(); ++i) {
    Tensor &o = sub.outputs[i];
    bool back = ti && isHalf(ti->elem()) && o.elem() == ElemType::Float;
    ctx.outputs[i] = back ? narrow(o, ti->elem()) : std::move(o);
  }
  return true;
}
