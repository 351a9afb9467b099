//===- Shape.cpp - Reshape, Transpose, Squeeze and other shape operators ----===//
//
// Operators that change how a tensor is seen rather than what it holds:
// Reshape, Flatten, Squeeze, Unsqueeze, Identity and inference-mode Dropout
// return views that share the input's buffer; Shape and Constant make small
// new tensors; Transpose copies through the strided gather of Tensor.cpp
// after merging the axes the permutation keeps together (so NCHW <-> NHWC is
// a batched 2-D transpose with contiguous runs where there are any).
//
// Shapes and axes that come from data (Reshape's shape input, Squeeze and
// Unsqueeze axes inputs) are checked before use.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelUtil.h"

#include <algorithm>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

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

/// `axes` normalized against `rank`, sorted, without duplicates.
bool normalizeAxes(KernelContext &ctx, std::vector<int64_t> &axes, int64_t rank) {
  for (int64_t &a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n)
      return ctx.fail("axis " + std::to_string(a) + " is out of range for rank " +
                      std::to_string(rank));
    a = *n;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return ctx.fail("axes " + shapeStr(axes) + " repeat an axis");
  return true;
}

bool needInput(KernelContext &ctx, const Tensor *&x) {
  x = ctx.input(0);
  return x ? true : ctx.fail(ctx.node.opType + " needs an input");
}

bool reshapeKernel(KernelContext &ctx) {
  const Tensor *x;
  if (!needInput(ctx, x))
    return false;
  std::vector<int64_t> shape;
  if (ctx.opset < 5) {
    shape = ctx.attrInts("shape");
  } else {
    const Tensor *s = ctx.input(1);
    if (!s)
      return ctx.fail("Reshape needs a shape input");
    if (!intList(ctx, s, "shape", shape))
      return false;
  }
  bool allowZero = ctx.opset >= 14 && ctx.attrInt("allowzero", 0) != 0;
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t &d = shape[i];
    if (d == 0 && !allowZero) {
      if (int64_t(i) >= x->rank())
        return ctx.fail("shape " + shapeStr(shape) + " copies dimension " + std::to_string(i) +
                        " that input " + shapeStr(x->shape()) + " lacks");
      d = x->dim(int64_t(i));
    }
    if (d == -1) {
      if (inferred >= 0)
        return ctx.fail("shape " + shapeStr(shape) + " has more than one -1");
      inferred = int64_t(i);
    } else if (d < 0 || __builtin_mul_overflow(known, d, &known)) {
      return ctx.fail("shape " + shapeStr(shape) + " is invalid");
    }
  }
  if (inferred >= 0) {
    if (known == 0 || x->numel() % known)
      return ctx.fail("cannot infer the -1 of shape " + shapeStr(shape) + " for input " +
                      shapeStr(x->shape()));
    shape[size_t(inferred)] = x->numel() / known;
  } else if (known != x->numel()) {
    return ctx.fail("shape " + shapeStr(shape) + " does not have the " +
                    std::to_string(x->numel()) + " elements of input " + shapeStr(x->shape()));
  }
  ctx.outputs[0] = x->reshaped(shape);
  return true;
}

bool flattenKernel(KernelContext &ctx) {
  const Tensor *x;
  if (!needInput(ctx, x))
    return false;
  int64_t axis = ctx.attrInt("axis", 1), r = x->rank();
  if (axis < 0)
    axis += r;
  if (axis < 0 || axis > r)
    return ctx.fail("axis " + std::to_string(ctx.attrInt("axis", 1)) +
                    " is out of range for rank " + std::to_string(r));
  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k)
    outer *= x->dim(k);
  int64_t inner = 1;
  for (int64_t k = axis; k < r; ++k)
    inner *= x->dim(k);
  ctx.outputs[0] = x->reshaped({outer, inner});
  return true;
}

bool transposeKernel(KernelContext &ctx) {
  const Tensor *x;
  if (!needInput(ctx, x))
    return false;
  int64_t r = x->rank();
  std::vector<int64_t> perm = ctx.attrInts("perm");
  if (perm.empty())
    for (int64_t k = r; k-- > 0;)
      perm.push_back(k);
  if (int64_t(perm.size()) != r)
    return ctx.fail("perm " + shapeStr(perm) + " does not match rank " + std::to_string(r));
  std::vector<bool> seen(size_t(r), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= r || seen[size_t(p)])
      return ctx.fail("perm " + shapeStr(perm) + " is not a permutation");
    seen[size_t(p)] = true;
  }
  std::vector<int64_t> inSt = contiguousStrides(x->shape()), st(static_cast<size_t>(r));
  Shape out(static_cast<size_t>(r));
  // Whether the axes that are not 1 keep their order: then it is a reshape.
  bool view = true;
  int64_t last = -1;
  for (int64_t k = 0; k < r; ++k) {
    int64_t p = perm[size_t(k)];
    out[size_t(k)] = x->dim(p);
    st[size_t(k)] = inSt[size_t(p)];
    if (x->dim(p) != 1) {
      view = view && p > last;
      last = p;
    }
  }
  if (view) {
    ctx.outputs[0] = x->reshaped(out);
    return true;
  }
  ctx.outputs[0] = Tensor(x->elem(), out);
  return stridedCopy(*x, ctx.outputs[0], 0, st);
}

bool squeezeKernel(KernelContext &ctx) {
  const Tensor *x;
  if (!needInput(ctx, x))
    return false;
  std::vector<int64_t> axes;
  if (ctx.opset < 13) {
    axes = ctx.attrInts("axes");
  } else if (const Tensor *a = ctx.input(1)) {
    if (!intList(ctx, a, "axes", axes))
      return false;
  }
  if (!normalizeAxes(ctx, axes, x->rank()))
    return false;
  Shape out;
  for (int64_t k = 0; k < x->rank(); ++k) {
    bool listed = std::binary_search(axes.begin(), axes.end(), k);
    if (listed && x->dim(k) != 1)
      return ctx.fail("cannot squeeze axis " + std::to_string(k) + " of " + shapeStr(x->shape()) +
                      ": it is not 1");
    if (axes.empty() ? x->dim(k) != 1 : !listed)
      out.push_back(x->dim(k));
  }
  ctx.outputs[0] = x->reshaped(out);
  return true;
}

bool unsqueezeKernel(KernelContext &ctx) {
  const Tensor *x;
  if (!needInput(ctx, x))
    return false;
  std::vector<int64_t> axes;
  if (ctx.opset < 13) {
    axes = ctx.attrInts("axes");
  } else {
    const Tensor *a = ctx.input(1);
    if (!a)
      return ctx.fail("Unsqueeze needs axes");
    if (!intList(ctx, a, "axes", axes))
      return false;
  }
  int64_t r = x->rank() + int64_t(axes.size());
  if (!normalizeAxes(ctx, axes, r))
    return false;
  Shape out;
  size_t j = 0;
  for (int64_t k = 0; k < r; ++k)
    out.push_back(std::binary_search(axes.begin(), axes.end(), k) ? 1 : x->dim(int64_t(j++)));
  ctx.outputs[0] = x->reshaped(out);
  return true;
}

bool shapeKernel(KernelContext &ctx) {
  const Tensor *x;
  if (!needInput(ctx, x))
    return false;
  int64_t r = x->rank(), start = 0, end = r;
  if (ctx.opset >= 15) {
    start = ctx.attrInt("start", 0);
    end = ctx.attrInt("end", r);
    if (start < 0)
      start += r;
    if (end < 0)
      end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, 0, r);
  }
  int64_t n = std::max<int64_t>(0, end - start);
  ctx.outputs[0] = Tensor(ElemType::Int64, {n});
  for (int64_t i = 0; i < n; ++i)
    ctx.outputs[0].data<int64_t>()[i] = x->dim(start + i);
  return true;
}

bool identityKernel(KernelContext &ctx) {
  const Tensor *x;
  if (!needInput(ctx, x))
    return false;
  ctx.outputs[0] = *x;
  return true;
}

bool dropoutKernel(KernelContext &ctx) {
  const Tensor *x;
  if (!needInput(ctx, x))
    return false;
  bool training = false;
  double ratio = 0.5;
  if (ctx.opset >= 12) {
    if (const Tensor *r = ctx.input(1)) {
      if (r->numel() != 1 || !graph::isFloatingPoint(r->elem()))
        return ctx.fail("ratio must be a floating-point scalar");
      ratio = r->at(0);
    }
    if (const Tensor *t = ctx.input(2)) {
      if (t->numel() != 1 || t->elem() != ElemType::Bool)
        return ctx.fail("training_mode must be a bool scalar");
      training = t->at(0) != 0;
    }
  } else {
    ratio = ctx.attrFloat("ratio", 0.5f);
    // Before opset 7, is_test = 0 asked for training-mode dropout.
    training = ctx.opset < 7 && ctx.attrInt("is_test", 0) == 0;
  }
  if (training && ratio != 0)
    return ctx.fail("Dropout in training mode is not supported");
  ctx.outputs[0] = *x;
  if (ctx.wantsOutput(1)) {
    // The mask is bool from opset 10, the input's type (all ones) before.
    if (ctx.opset >= 10) {
      ctx.outputs[1] = Tensor(ElemType::Bool, x->shape());
      std::memset(ctx.outputs[1].raw(), 1, ctx.outputs[1].bytes());
    } else {
      Tensor m(x->elem(), x->shape());
      size_t es = graph::elemSize(x->elem());
      if (!graph::isFloatingPoint(x->elem()) || es == 0)
        return ctx.fail("Dropout's mask needs a floating-point input");
      uint8_t v[8] = {};
      switch (x->elem()) {
      case ElemType::Float: {
        float f = 1;
        std::memcpy(v, &f, 4);
        break;
      }
      case ElemType::Double: {
        double d = 1;
        std::memcpy(v, &d, 8);
        break;
      }
      case ElemType::Float16: {
        uint16_t h = floatToHalf(1);
        std::memcpy(v, &h, 2);
        break;
      }
      default: {
        uint16_t h = floatToBfloat16(1);
        std::memcpy(v, &h, 2);
        break;
      }
      }
      for (int64_t i = 0; i < m.numel(); ++i)
        std::memcpy(static_cast<uint8_t *>(m.raw()) + size_t(i) * es, v, es);
      ctx.outputs[1] = m;
    }
  }
  return true;
}

/// One scalar or 1-D tensor of `T` from an attribute's numbers.
template <typename T, typename V>
Tensor listTensor(ElemType elem, const std::vector<V> &vals, bool scalar) {
  Tensor t(elem, scalar ? Shape{} : Shape{int64_t(vals.size())});
  for (size_t i = 0; i < vals.size(); ++i)
    t.data<T>()[i] = T(vals[i]);
  return t;
}

bool constantKernel(KernelContext &ctx) {
  const graph::Attribute *a = nullptr;
  for (const char *name : {"value", "value_float", "value_floats", "value_int", "value_ints",
                           "value_string", "value_strings", "sparse_value"})
    if ((a = ctx.node.attr(name)))
      break;
  if (!a)
    return ctx.fail("Constant has no value attribute");
  if (a->name == "value") {
    if (const graph::Tensor *t = ctx.attrTensor("value")) {
      ctx.outputs[0] = Tensor::fromGraph(*t);
      return true;
    }
    return ctx.fail("Constant's value is not a tensor");
  }
  if (a->name == "value_float")
    ctx.outputs[0] = listTensor<float>(ElemType::Float, std::vector<double>{a->f}, true);
  else if (a->name == "value_floats")
    ctx.outputs[0] = listTensor<float>(ElemType::Float, a->floats, false);
  else if (a->name == "value_int")
    ctx.outputs[0] = listTensor<int64_t>(ElemType::Int64, std::vector<int64_t>{a->i}, true);
  else if (a->name == "value_ints")
    ctx.outputs[0] = listTensor<int64_t>(ElemType::Int64, a->ints, false);
  else if (a->name == "value_string") {
    ctx.outputs[0] = Tensor(ElemType::String, {});
    ctx.outputs[0].strings()[0] = a->s;
  } else if (a->name == "value_strings") {
    ctx.outputs[0] = Tensor(ElemType::String, {int64_t(a->strings.size())});
    ctx.outputs[0].strings() = a->strings;
  } else {
    return ctx.fail("Constant with a sparse_value is not supported");
  }
  return true;
}

} // namespace

void rt::registerShapeKernels(KernelRegistry &r) {
  r.add("Reshape", reshapeKernel);
  r.add("Flatten", flattenKernel);
  r.add("Transpose", transposeKernel);
  r.add("Squeeze", squeezeKernel);
  r.add("Unsqueeze", unsqueezeKernel);
  r.add("Shape", shapeKernel);
  r.add("Identity", identityKernel);
  r.add("Dropout", dropoutKernel);
  r.add("Constant", constantKernel);
}
