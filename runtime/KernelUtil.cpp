//===- KernelUtil.cpp - Helpers shared by the kernels -----------------------===//
#include "runtime/KernelUtil.h"

#include <omp.h>

using namespace tpcc;
using namespace tpcc::rt;

int rt::ompThreads() { return omp_get_num_threads(); }
int rt::ompThread() { return omp_get_thread_num(); }
int rt::maxThreads() { return omp_get_max_threads(); }

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
